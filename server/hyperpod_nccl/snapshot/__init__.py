"""Everything one diagnostic saw, as plain serialisable data.

Collectors fill a Snapshot; analyzers read it; written to disk it is the offline bundle that
`diagnose --bundle DIR` replays with no network. Each part lives in its own module and is
optional: a part that could not be collected is None, and `collection_issues` says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hyperpod_nccl.artifacts import SNAPSHOT_FILE
from hyperpod_nccl.bounded import ShortText, Text
from hyperpod_nccl.guard.boundary import make_new_directory, write_new_file
from hyperpod_nccl.snapshot.aws import AwsSnapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot
from hyperpod_nccl.snapshot.metrics import MetricsSnapshot
from hyperpod_nccl.snapshot.probes import ProbeSnapshot
from hyperpod_nccl.snapshot.slurm import SlurmSnapshot

MAX_SNAPSHOT_BYTES = 512 * 2**20


class UnusableSnapshot(ValueError):
    """A bundle that cannot be replayed; the message says why in one line."""


class CollectionIssue(BaseModel):
    """Something a collector could not do, kept so "no data" is never mistaken for "healthy"."""

    model_config = ConfigDict(extra="forbid")

    source: ShortText = Field(description="What was being collected, e.g. `sagemaker:ListClusterEvents`.")
    kind: Literal["access_denied", "throttled", "not_found", "unreachable", "timeout", "error", "skipped"]
    message: Text
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

    def save(self, directory: Path, *, within: Path | None = None) -> Path:
        """Write DIRECTORY/snapshot.json as a new file; an existing one is never replaced.

        With `within` (the MCP server's output folder) the folder is created one level deep and
        neither it nor anything on the way from `within` may be a symlink."""
        if within is None:
            directory.mkdir(parents=True, exist_ok=True)
        else:
            make_new_directory(directory, within=within)
        path = directory / SNAPSHOT_FILE
        data = json.dumps(self.model_dump(mode="json"), indent=1).encode("utf-8")
        write_new_file(path, data, within=within or directory, mode=0o600)
        return path

    @classmethod
    def load(cls, directory: Path) -> Snapshot:
        """A saved snapshot, or UnusableSnapshot with a one-line reason (never a traceback)."""
        path = directory / SNAPSHOT_FILE if directory.is_dir() else directory
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_SNAPSHOT_BYTES + 1)
        except OSError as error:
            if not directory.is_dir() or not path.exists():
                raise UnusableSnapshot(
                    f"{directory} is not a bundle: {SNAPSHOT_FILE} not found in it"
                ) from None
            raise UnusableSnapshot(f"cannot read {path}: {error.strerror or error}") from None
        if len(raw) > MAX_SNAPSHOT_BYTES:
            raise UnusableSnapshot(f"{path} is larger than {MAX_SNAPSHOT_BYTES // 2**20} MiB: not a snapshot")
        try:
            snapshot = cls.model_validate_json(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise UnusableSnapshot(f"{path} is not UTF-8 text (byte {error.start}): not a snapshot") from None
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "top level"
            raise UnusableSnapshot(f"{path} is not a valid snapshot: {where}: {first['msg'][:200]}") from None
        if snapshot.kubernetes is not None:
            for message in snapshot.kubernetes.drop_malformed()[:50]:
                snapshot.collection_issues.append(
                    CollectionIssue(source=SNAPSHOT_FILE, kind="skipped", message=message)
                )
        return snapshot
