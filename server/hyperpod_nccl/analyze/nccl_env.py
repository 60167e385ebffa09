"""The NCCL / libfabric / PyTorch distributed environment, audited across ALL of a job's pods.

One rank with a different NCCL_SOCKET_IFNAME or protocol is enough to hang init, so every pod's
value is compared, not a sample. Variables that do not exist (NCCL_TIMEOUT) are flagged as
no-ops, since people set them believing they raised the collective timeout.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from hyperpod_nccl.analyze.efa_plugin import efa_requests
from hyperpod_nccl.analyze.k8s_common import describe_pod, pod_evidence
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KubernetesSnapshot,
    containers_of,
    env_of,
    pod_key,
    requested,
)

AUDITED_PREFIXES = ("NCCL_", "FI_", "TORCH_NCCL_", "OFI_NCCL_", "TORCH_DISTRIBUTED_")

# Names people set that neither NCCL nor PyTorch reads.
NOT_VARIABLES = {
    "NCCL_TIMEOUT": "NCCL has no NCCL_TIMEOUT; the collective timeout is the timeout= argument of "
    "torch.distributed.init_process_group.",
    "NCCL_SOCKET_TIMEOUT": "NCCL has no NCCL_SOCKET_TIMEOUT; the collective timeout is the timeout= "
    "argument of torch.distributed.init_process_group.",
}
# Old names recent PyTorch still reads with a deprecation warning, and may stop reading.
RENAMED = {
    "NCCL_ASYNC_ERROR_HANDLING": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "NCCL_BLOCKING_WAIT": "TORCH_NCCL_BLOCKING_WAIT",
    "NCCL_DESYNC_DEBUG": "TORCH_NCCL_DESYNC_DEBUG",
}

PodEnv = tuple[dict[str, Any], str, dict[str, str]]  # (pod, container name, env)


def training_envs(pods: list[dict[str, Any]]) -> list[PodEnv]:
    """The env of each pod's training container: the one that requests GPUs, else the first."""
    envs = []
    for pod in pods:
        containers = containers_of(pod)
        if not containers:
            continue
        main = next((c for c in containers if requested(c, GPU_RESOURCE) > 0), containers[0])
        envs.append((pod, main["name"], env_of(main)))
    return envs


def _evidence(pod: dict[str, Any], container: str, name: str, value: str | None) -> Evidence:
    text = f"{name}={value}" if value is not None else f"{name} not set"
    return pod_evidence(pod, f"spec.containers[{container}].env", text)


def _finding(
    finding_id: str,
    status: Status,
    priority: Priority,
    title: str,
    detail: str,
    hits: list[tuple[dict[str, Any], str, str, str | None]],
    reference: str = "operations.md § 5",
) -> Finding:
    return Finding(
        id=finding_id,
        status=status,
        priority=priority,
        title=title,
        reference=reference,
        detail=detail,
        pods=list(dict.fromkeys(pod_key(pod) for pod, *_ in hits)),
        evidence=[_evidence(pod, container, name, value) for pod, container, name, value in hits],
        suggested_commands=[
            describe_pod(hits[0][0], "Shows the container's environment as the pod sees it.")
        ],
    )


def not_variables(job: str, envs: list[PodEnv]) -> list[Finding]:
    findings = []
    for name, why in NOT_VARIABLES.items():
        hits = [(pod, c, name, env[name]) for pod, c, env in envs if name in env]
        if hits:
            title = f"{name} is set on {len(hits)} pod(s) of {job} but is not an NCCL variable"
            findings.append(_finding("nccl.env.not_a_variable", Status.WARN, Priority.P1, title, why, hits))
    for old, new in RENAMED.items():
        hits = [(pod, c, old, env[old]) for pod, c, env in envs if old in env and new not in env]
        if hits:
            title = f"{old} is the deprecated name of {new} ({job})"
            detail = f"Recent PyTorch reads {new}; set it instead so the setting survives upgrades."
            findings.append(_finding("nccl.env.deprecated", Status.WARN, Priority.P2, title, detail, hits))
    return findings


def differing(job: str, envs: list[PodEnv]) -> list[Finding]:
    """Variables whose value (or presence) is not the same on every pod of the job."""
    names = sorted({n for _, _, env in envs for n in env if n.startswith(AUDITED_PREFIXES)})
    differing_names = [n for n in names if len({env.get(n) for _, _, env in envs}) > 1]
    if not differing_names:
        return []
    odd, usual, summary = [], [], []
    for name in differing_names:
        values: dict[str | None, list[tuple[dict[str, Any], str]]] = defaultdict(list)
        for pod, container, env in envs:
            values[env.get(name)].append((pod, container))
        # The value most pods share comes last: the odd ones out are usually the mistake.
        ranked = sorted(values.items(), key=lambda item: -len(item[1]))
        for rank, (value, users) in enumerate(ranked):
            (usual if rank == 0 else odd).extend((pod, container, name, value) for pod, container in users)
        summary.append(
            f"{name}: " + "; ".join(f"{value!s} on {len(users)} pod(s)" for value, users in ranked)
        )
    title = f"{', '.join(differing_names)} differ(s) across the pods of {job}"
    detail = "Every rank must run with the same NCCL environment; a rank that picks another interface, "
    detail += "protocol or provider can hang init or the first collective. " + " | ".join(summary)
    return [_finding("nccl.env.differs", Status.FAIL, Priority.P1, title, detail, odd + usual)]


@dataclass(frozen=True)
class SwitchedOff:
    """A PyTorch safety net that `0` turns off, and what the job loses without it."""

    id: str
    names: tuple[str, ...]
    what: str
    consequence: str


SWITCHED_OFF = (
    SwitchedOff(
        "nccl.env.async_error_handling_off",
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"),
        "Async NCCL error handling",
        "A failed or timed-out collective then leaves the job hanging instead of tearing it down.",
    ),
    SwitchedOff(
        "nccl.env.heartbeat_monitor_off",
        ("TORCH_NCCL_ENABLE_MONITORING",),
        "The NCCL heartbeat monitor",
        "A watchdog stuck inside NCCL is then never killed: the job hangs past every timeout.",
    ),
    SwitchedOff(
        "nccl.env.flight_recorder_off",
        ("TORCH_NCCL_TRACE_BUFFER_SIZE",),
        "The NCCL flight recorder",
        "A timeout then leaves no record of which collective each rank was in.",
    ),
)


def _includes_bad_interface(value: str) -> bool:
    """True when NCCL_SOCKET_IFNAME selects (rather than excludes) loopback or a docker bridge."""
    if value.startswith("^"):
        return False
    return any(token.lstrip("=").startswith(("lo", "docker")) for token in value.split(","))


def value_checks(job: str, envs: list[PodEnv]) -> list[Finding]:
    findings = []
    bad_ifname = [
        (pod, c, "NCCL_SOCKET_IFNAME", env["NCCL_SOCKET_IFNAME"])
        for pod, c, env in envs
        if _includes_bad_interface(env.get("NCCL_SOCKET_IFNAME", "^"))
    ]
    if bad_ifname:
        title = f"NCCL_SOCKET_IFNAME selects loopback or a docker bridge on pods of {job}"
        detail = "Those interfaces do not reach other nodes: bootstrap hangs or runs over the wrong path."
        findings.append(
            _finding("nccl.env.socket_ifname", Status.WARN, Priority.P1, title, detail, bad_ifname)
        )
    for rule in SWITCHED_OFF:
        hits = [
            (pod, c, name, env[name]) for pod, c, env in envs for name in rule.names if env.get(name) == "0"
        ]
        if hits:
            title = f"{rule.what} is off on pods of {job}"
            findings.append(_finding(rule.id, Status.WARN, Priority.P2, title, rule.consequence, hits))
    return findings + _efa_provider(job, envs)


def _efa_provider(job: str, envs: list[PodEnv]) -> list[Finding]:
    no_device = [
        (pod, c, "FI_PROVIDER", env["FI_PROVIDER"])
        for pod, c, env in envs
        if env.get("FI_PROVIDER") == "efa" and efa_requests(pod) == 0
    ]
    if not no_device:
        return []
    title = f"FI_PROVIDER=efa on pods of {job} that request no EFA devices"
    detail = "libfabric finds no EFA device in the container, so aws-ofi-nccl fails to initialise."
    return [
        _finding(
            "nccl.env.efa_provider_without_device",
            Status.WARN,
            Priority.P1,
            title,
            detail,
            no_device,
            reference="debugging-guide.md § 6",
        )
    ]


# GPUDirect RDMA over EFA has to be asked for on these; later instance types enable it by default.
RDMA_OPT_IN_TYPES = frozenset({"p4d.24xlarge", "p4de.24xlarge"})


def rdma_not_enabled(job: str, envs: list[PodEnv], kubernetes: KubernetesSnapshot) -> list[Finding]:
    types = {
        node["metadata"]["name"]: (node["metadata"].get("labels") or {}).get(INSTANCE_TYPE_LABEL, "")
        for node in kubernetes.nodes
    }
    hits = [
        (pod, c, "FI_EFA_USE_DEVICE_RDMA", env.get("FI_EFA_USE_DEVICE_RDMA"))
        for pod, c, env in envs
        if types.get(pod.get("spec", {}).get("nodeName") or "", "").removeprefix("ml.") in RDMA_OPT_IN_TYPES
        and efa_requests(pod) > 0
        and env.get("FI_EFA_USE_DEVICE_RDMA") != "1"
    ]
    if not hits:
        return []
    title = f"GPUDirect RDMA over EFA not enabled on p4d/p4de pods of {job}"
    detail = "Set FI_EFA_USE_DEVICE_RDMA=1 there: without it NCCL copies through host memory."
    return [
        _finding(
            "nccl.env.efa_rdma_off",
            Status.WARN,
            Priority.P2,
            title,
            detail,
            hits,
            reference="debugging-guide.md § 6",
        )
    ]


def debug_level(job: str, envs: list[PodEnv]) -> list[Finding]:
    quiet = [
        (pod, c, "NCCL_DEBUG", env.get("NCCL_DEBUG"))
        for pod, c, env in envs
        if env.get("NCCL_DEBUG") != "INFO"
    ]
    if not quiet:
        return []
    return [
        Finding(
            id="nccl.env.debug_level",
            status=Status.INFO,
            title=f"NCCL_DEBUG is not INFO on {len(quiet)} pod(s) of {job}",
            reference="operations.md § 5",
            detail="For a diagnostic run set NCCL_DEBUG=INFO: the version, transport and provider lines "
            "the log triage reads are printed only at INFO.",
            pods=[pod_key(pod) for pod, *_ in quiet],
            evidence=[_evidence(pod, c, name, value) for pod, c, name, value in quiet],
        )
    ]


def analyze_nccl_env(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    findings = []
    for job, pods in kubernetes.training_jobs().items():
        envs = training_envs(pods)
        found = not_variables(job, envs) + differing(job, envs) + value_checks(job, envs)
        found += rdma_not_enabled(job, envs, kubernetes)
        if not found and envs:
            found.append(
                Finding(
                    id="nccl.env.consistent",
                    status=Status.PASS,
                    title=f"NCCL environment identical and sound across the {len(envs)} pods of {job}",
                )
            )
        findings += found + debug_level(job, envs)
    return findings
