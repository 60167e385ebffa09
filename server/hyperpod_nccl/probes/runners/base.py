"""What every runner (SSM, local, replay) promises: run one shipped probe script on one node."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, Field

from hyperpod_nccl.probes.catalog import ProbeScript


class NodeTarget(BaseModel):
    """A node as the runner reaches it; any field may be unknown."""

    instance_id: str | None = None
    hostname: str | None = None
    instance_group: str | None = None
    instance_type: str | None = None
    status: str | None = Field(
        default=None, description="Instance status as the cluster reports it, e.g. Running."
    )
    ssm_target: str | None = Field(
        default=None, description="`sagemaker-cluster:<cluster-id>_<group>-<instance-id>` on HyperPod."
    )

    @property
    def label(self) -> str:
        return self.instance_id or self.hostname or "this host"


def hyperpod_ssm_target(cluster_id: str, instance_group: str, instance_id: str) -> str:
    """The Session Manager target of a HyperPod node (references/operations.md § 3)."""
    return f"sagemaker-cluster:{cluster_id}_{instance_group}-{instance_id}"


class ProbeResult(BaseModel):
    target: NodeTarget
    script: str
    status: Literal["ok", "partial", "unreachable", "timeout", "access_denied", "error"]
    output: str = Field(default="", description="Whatever the script printed, even when it did not finish.")
    error: str | None = None
    duration_s: float = 0.0
    retryable: bool = Field(
        default=False,
        description="A transient failure (throttling, a dropped connection) worth one more try.",
    )
    attempts: int = 1


class Runner(Protocol):
    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult: ...
