"""Everything one diagnostic saw, as plain serialisable data.

Collectors fill a Snapshot; analyzers read it; written to disk it is the offline bundle that
`diagnose --bundle DIR` replays with no network. Each part lives in its own module and is
optional: a part that could not be collected is None, and `collection_issues` says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_nccl.snapshot.aws import AwsSnapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot
from hyperpod_nccl.snapshot.metrics import MetricsSnapshot
from hyperpod_nccl.snapshot.probes import ProbeSnapshot
from hyperpod_nccl.snapshot.slurm import SlurmSnapshot

SNAPSHOT_FILE = "snapshot.json"


class CollectionIssue(BaseModel):
    """Something a collector could not do, kept so "no data" is never mistaken for "healthy"."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="What was being collected, e.g. `sagemaker:ListClusterEvents`.")
    kind: Literal["access_denied", "throttled", "not_found", "unreachable", "timeout", "error", "skipped"]
    message: str
    permission: str | None = Field(default=None, description="The IAM action or RBAC verb that was missing.")


class Snapshot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    collected_at: str = Field(description="ISO 8601 UTC time the collection started.")
    region: str | None = None
    orchestrator: Literal["eks", "slurm"] | None = None
    namespace: str | None = None
    job: str | None = None
    aws: AwsSnapshot | None = None
    kubernetes: KubernetesSnapshot | None = None
    probes: ProbeSnapshot | None = None
    slurm: SlurmSnapshot | None = None
    metrics: MetricsSnapshot | None = None
    collection_issues: list[CollectionIssue] = Field(default_factory=list)

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / SNAPSHOT_FILE
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, directory: Path) -> Snapshot:
        return cls.model_validate_json((directory / SNAPSHOT_FILE).read_text(encoding="utf-8"))
