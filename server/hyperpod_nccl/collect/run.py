"""The state of one live collection, shared by the steps that run concurrently: the options,
the guarded clients, the snapshot being filled, and the bound on threads in flight."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from hyperpod_nccl.guard.validate import preview
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.aws import AwsSnapshot

# boto3 loads with the first collection, not with `parse_window` (the metrics tools and the CLI's
# argument check use it).
if TYPE_CHECKING:
    import boto3

    from hyperpod_nccl.collect.aws import AwsClients, Progress

DEFAULT_WINDOW = "2h"
DEFAULT_CONCURRENCY = 4
_DURATION = re.compile(r"(\d+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


MAX_WINDOW = timedelta(days=366)


def parse_window(text: str) -> timedelta:
    """`90m`, `2h`, `1d`, `1h30m` → timedelta, at most a year; anything else is a ValueError that
    says the form."""
    parts = _DURATION.findall(text[:64])
    if not parts or "".join(f"{n}{u}" for n, u in parts) != text.strip():
        raise ValueError(f"{preview(text)} is not a duration like 30m, 2h or 1d")
    seconds = sum(int(number[:12]) * _UNIT_SECONDS[unit] for number, unit in parts)
    if any(len(number) > 12 for number, _ in parts) or seconds > MAX_WINDOW.total_seconds():
        raise ValueError(
            f"{preview(text)} reaches back more than {MAX_WINDOW.days} days; give a shorter window"
        )
    return timedelta(seconds=seconds)


class DiagnoseOptions(BaseModel):
    """What to diagnose; the CLI flags and the MCP tool parameters map onto these fields."""

    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(description="HyperPod cluster name or ARN.")
    region: str
    namespace: str | None = None
    job: str | None = None
    orchestrator: Literal["eks", "slurm"] | None = Field(
        default=None, description="None: from DescribeCluster."
    )
    node: str | None = Field(default=None, description="Probe only this instance id.")
    sample_nodes: int = Field(default=3, ge=0, le=50, description="Nodes to probe over SSM; 0 skips probes.")
    since: str = DEFAULT_WINDOW
    kubeconfig: str | None = None
    context: str | None = None
    concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1, le=32)
    prometheus: str | None = Field(default=None, description="Prometheus URL with DCGM series.")
    amp_workspace: str | None = Field(default=None, description="AMP workspace with DCGM series.")


@dataclass
class CollectionRun:
    """One collection in progress: the shared snapshot, the clients and the bound on threads."""

    options: DiagnoseOptions
    clients: AwsClients
    session: boto3.session.Session
    snapshot: Snapshot
    aws: AwsSnapshot
    limiter: anyio.CapacityLimiter
    progress: Progress
    start: datetime
    end: datetime
    probe_runner: Any | None = None
    kubernetes_client: Any | None = None

    @property
    def cluster_ref(self) -> str:
        """What to pass as ClusterName: the described name, else what the user gave (name or ARN)."""
        return self.aws.hyperpod.name if self.aws.hyperpod else self.options.cluster

    async def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking AWS call in a worker thread, at most `concurrency` at once."""
        return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs), limiter=self.limiter)

    def record(self, *issues: CollectionIssue | None) -> None:
        self.snapshot.collection_issues.extend(issue for issue in issues if issue)


def skipped(source: str, why: str) -> CollectionIssue:
    return CollectionIssue(source=source, kind="skipped", message=why)
