"""Validated identifier types for every tool input, CLI argument and suggested-command value.

Each type rejects anything that is not the identifier it claims to be, with a one-line message
that says what a valid value looks like and quotes at most a short prefix of what it got. The
same types check tool arguments and the values `guard/commands.py` puts into suggested
commands, so a value read from a bundle is held to the rule a caller's argument is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, TypeAdapter, ValidationError

# Errors quote the input, but never more than this much of it: a 200 KB argument must not
# come back as a 200 KB error.
ECHO_LIMIT = 60


def preview(value: object, limit: int = ECHO_LIMIT) -> str:
    """`repr` of at most `limit` characters of `value`, saying how long it really was."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


@dataclass(frozen=True)
class Placeholder:
    """What a suggested command shows instead of a value that is unknown or failed its check."""

    name: str

    @property
    def text(self) -> str:
        return f"<{self.name}>"


def _matching(pattern: str, what: str, example: str):
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{preview(value)} is not a valid {what} (example: {example})")
        return value

    return check


def _identifier(pattern: str, what: str, example: str, placeholder: str, description: str) -> Any:
    return Annotated[
        str,
        AfterValidator(_matching(pattern, what, example)),
        Placeholder(placeholder),
        Field(description=description),
    ]


_CLUSTER_NAME = r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
_CLUSTER_ARN = r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:cluster/[a-z0-9]{1,64}"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_DNS_SUBDOMAIN = r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_INSTANCE_ID = r"i-[0-9a-f]{8}([0-9a-f]{9})?"
_SLURM_NODE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"

ClusterName = _identifier(
    f"{_CLUSTER_NAME}|{_CLUSTER_ARN}",
    "HyperPod cluster name or ARN",
    "ml-cluster-1",
    "cluster",
    "HyperPod cluster name or ARN, e.g. ml-cluster-1.",
)
Region = _identifier(
    r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d",
    "AWS region",
    "us-west-2",
    "region",
    "AWS region, e.g. us-west-2.",
)
Namespace = _identifier(
    _DNS_LABEL, "Kubernetes namespace", "training", "namespace", "Kubernetes namespace, e.g. training."
)
JobName = _identifier(
    f"{_DNS_SUBDOMAIN}|\\d+(_\\d+)?",
    "job name or Slurm job id",
    "llama-pretrain",
    "job",
    "Kubernetes job name (PyTorchJob, Job) or Slurm job id.",
)
SlurmJobId = _identifier(
    r"\d{1,12}(_\d{1,9})?",
    "Slurm job id",
    "1234 or 1234_5",
    "job-id",
    "Slurm job id, or array job id `JOBID_TASK`, e.g. 1234.",
)
PodName = _identifier(
    _DNS_SUBDOMAIN, "Kubernetes pod name", "llama-pretrain-worker-0", "pod", "Kubernetes pod name."
)
KubeObjectName = _identifier(
    _DNS_SUBDOMAIN, "Kubernetes object name", "llama-pretrain", "name", "Kubernetes object name."
)
KubeKind = _identifier(
    r"[a-z][a-z0-9]{0,62}", "Kubernetes resource kind", "pytorchjob", "kind", "Kubernetes kind, lowercase."
)
KubeNodeName = _identifier(
    _DNS_SUBDOMAIN, "Kubernetes node name", "hyperpod-i-0abc123def4567890", "node", "Kubernetes node name."
)
ContainerName = _identifier(_DNS_LABEL, "container name", "pytorch", "container", "Container name.")
MAX_TAIL_LINES = 2000  # the most lines of a pod's log a tool reads back
# 4,096 GPUs is 512 eight-GPU nodes: larger than most single jobs, and each DCGM range query then
# stays within a few tens of MB. Beyond it, name the nodes of interest with --node.
MAX_GPUS = 4096
TailLines = Annotated[
    int, Field(ge=1, le=MAX_TAIL_LINES, description=f"Lines from the end of the log (≤ {MAX_TAIL_LINES}).")
]
EksClusterName = _identifier(
    r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}",
    "EKS cluster name",
    "ml-eks",
    "eks-cluster",
    "EKS cluster name (not the HyperPod name).",
)
InstanceId = _identifier(
    _INSTANCE_ID,
    "EC2 instance id",
    "i-0abc123def4567890",
    "instance-id",
    "EC2 instance id of a cluster node, e.g. i-0abc123def4567890.",
)
SecurityGroupId = _identifier(
    r"sg-[0-9a-f]{8}([0-9a-f]{9})?",
    "security group id",
    "sg-0abc123def4567890",
    "sg-id",
    "Security group id.",
)
SsmTarget = _identifier(
    rf"sagemaker-cluster:[a-z0-9]{{1,64}}_{_CLUSTER_NAME}-{_INSTANCE_ID}|m?{_INSTANCE_ID}",
    "Session Manager target",
    "sagemaker-cluster:abc123_workers-i-0abc123def4567890",
    "ssm-target",
    "Session Manager target of a node.",
)
SlurmNodeName = _identifier(_SLURM_NODE, "Slurm node name", "ip-10-1-0-10", "node", "Slurm node name.")
SlurmNodeList = _identifier(
    rf"{_SLURM_NODE}(,{_SLURM_NODE}){{0,1023}}",
    "comma-separated list of Slurm node names",
    "ip-10-1-0-10,ip-10-1-0-11",
    "nodes",
    "Slurm node names, comma-separated.",
)
NetworkInterface = _identifier(
    r"[A-Za-z0-9_.-]{1,15}", "network interface name", "eth0", "interface", "Network interface name."
)
ProcessName = _identifier(
    r"[A-Za-z0-9_.-]{1,15}", "process name", "slurmd", "process", "Process name as `pgrep -x` matches it."
)
Mtu = _identifier(r"[1-9]\d{2,4}", "MTU", "9001", "mtu", "Interface MTU in bytes.")
HostPath = _identifier(
    r"/[^\x00-\x1f\x7f]{0,4095}", "absolute file path", "/etc/slurm/slurm.conf", "path", "A file on a host."
)
# A PromQL query or URL-encoded parameters: any printable text, one quoted word in a command.
QueryText = _identifier(
    r"[^\x00-\x1f\x7f]{1,4000}", "query text", "up", "query", "A PromQL query or URL query string."
)
GpuIndex = _identifier(r"\d{1,3}", "GPU index", "0", "gpu", "GPU index as nvidia-smi numbers it.")
ProcessId = _identifier(r"[1-9]\d{0,9}", "process id", "41213", "pid", "A process id on a node.")
TcpPort = _identifier(r"[1-9]\d{0,4}", "TCP port", "29500", "port", "TCP port number, e.g. MASTER_PORT.")
HostAddress = _identifier(
    r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?",
    "host name or IPv4 address",
    "ip-10-1-0-10",
    "host",
    "A host name or IPv4 address, e.g. MASTER_ADDR.",
)
# A log file as the triage names it: relative to the folder the user gave, never an option or a
# way out of that folder, so the user runs the command from there.
LogFileName = _identifier(
    r"(?!-)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_.+@%=,:/-]{1,512}",
    "log file name",
    "slurm-1234.out",
    "log-file",
    "A log file, relative to the folder the triage read.",
)
JournalTime = _identifier(
    r"\d{4}-\d\d-\d\d \d\d:\d\d", "journal time", "2026-03-02 10:15", "time", "A time journalctl reads."
)
LineNumber = _identifier(r"[1-9]\d{0,9}", "line number", "4521", "line", "A 1-based line number.")
BundleFileName = _identifier(
    r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.(tar\.gz|tgz)",
    "bundle file name",
    "hyperpod-nccl-escalation.tar.gz",
    "bundle.tar.gz",
    "Escalation bundle file name.",
)


def _existing_path(value: str) -> str:
    if not value.strip():
        raise ValueError("the path is empty: name a file or directory")
    if "\x00" in value:
        raise ValueError("a path cannot contain a NUL byte")
    try:
        path = Path(value).expanduser()
        exists = path.exists()
    except (OSError, ValueError, RuntimeError) as error:  # ENAMETOOLONG, a lone `~user`...
        raise ValueError(f"{preview(value)} cannot be used as a path: {error}") from None
    if not exists:
        raise ValueError(f"{preview(value)} does not exist on the machine running hyperpod-nccl")
    return str(path.resolve())


ExistingPath = Annotated[
    str,
    AfterValidator(_existing_path),
    Placeholder("path"),
    Field(description="A file or directory on the machine running hyperpod-nccl."),
]

_ADAPTERS: dict[int, tuple[object, TypeAdapter[Any]]] = {}


def _adapter(kind: object) -> TypeAdapter[Any]:
    # Building a TypeAdapter costs far more than using one, and suggested commands check many values.
    cached = _ADAPTERS.get(id(kind))
    if cached is None or cached[0] is not kind:
        cached = _ADAPTERS[id(kind)] = (kind, TypeAdapter(kind))
    return cached[1]


def validated(kind: object, value: str) -> str:
    """`value` checked against one of the types above; the ValueError says why in one line."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as error:
        message = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ValueError(message.splitlines()[0] if message else "invalid value") from None


def placeholder_of(kind: object) -> Placeholder:
    """The placeholder a suggested command shows for a value of `kind` it cannot use."""
    for item in getattr(kind, "__metadata__", ()):
        if isinstance(item, Placeholder):
            return item
    return Placeholder("value")
