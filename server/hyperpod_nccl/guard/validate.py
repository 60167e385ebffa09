"""Validated identifier types for every tool and CLI input.

Each type rejects anything that is not the identifier it claims to be, with a message that says
what a valid value looks like. Nothing here ever becomes part of a shell command.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, TypeAdapter, ValidationError


def _matching(pattern: str, what: str, example: str):
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid {what} (example: {example})")
        return value

    return check


_CLUSTER_NAME = r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
_CLUSTER_ARN = r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:cluster/[a-z0-9]{1,64}"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_DNS_SUBDOMAIN = r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"

ClusterName = Annotated[
    str,
    AfterValidator(
        _matching(f"{_CLUSTER_NAME}|{_CLUSTER_ARN}", "HyperPod cluster name or ARN", "ml-cluster-1")
    ),
    Field(description="HyperPod cluster name or ARN, e.g. ml-cluster-1."),
]
Region = Annotated[
    str,
    AfterValidator(_matching(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d", "AWS region", "us-west-2")),
    Field(description="AWS region, e.g. us-west-2."),
]
Namespace = Annotated[
    str,
    AfterValidator(_matching(_DNS_LABEL, "Kubernetes namespace", "training")),
    Field(description="Kubernetes namespace, e.g. training."),
]
JobName = Annotated[
    str,
    AfterValidator(_matching(f"{_DNS_SUBDOMAIN}|\\d+(_\\d+)?", "job name or Slurm job id", "llama-pretrain")),
    Field(description="Kubernetes job name (PyTorchJob, Job) or Slurm job id."),
]
SlurmJobId = Annotated[
    str,
    AfterValidator(_matching(r"\d{1,12}(_\d{1,9})?", "Slurm job id", "1234 or 1234_5")),
    Field(description="Slurm job id, or array job id `JOBID_TASK`, e.g. 1234."),
]
PodName = Annotated[
    str,
    AfterValidator(_matching(_DNS_SUBDOMAIN, "Kubernetes pod name", "llama-pretrain-worker-0")),
    Field(description="Kubernetes pod name."),
]
InstanceId = Annotated[
    str,
    AfterValidator(_matching(r"i-[0-9a-f]{8}([0-9a-f]{9})?", "EC2 instance id", "i-0abc123def4567890")),
    Field(description="EC2 instance id of a cluster node, e.g. i-0abc123def4567890."),
]


def _existing_path(value: str) -> str:
    if "\x00" in value:
        raise ValueError("a path cannot contain a NUL byte")
    path = Path(value).expanduser()
    if not path.exists():
        raise ValueError(f"{value!r} does not exist on the machine running hyperpod-nccl")
    return str(path.resolve())


ExistingPath = Annotated[
    str,
    AfterValidator(_existing_path),
    Field(description="A file or directory on the machine running hyperpod-nccl."),
]


def validated(kind: object, value: str) -> str:
    """`value` checked against one of the types above; the ValueError says why in one line."""
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as error:
        raise ValueError(error.errors()[0]["msg"].removeprefix("Value error, ")) from None
