"""GPU metrics as one service the CLI, the MCP tool and the cluster diagnostic share: choose the
window, reach Prometheus (or Amazon Managed Service for Prometheus), collect the DCGM snapshot,
and run the metric checks over it.

Only arguments can stop a run (`ValueError` with the reason); every failure to read becomes a
CollectionIssue in the snapshot, and the report says what could not be checked.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hyperpod_nccl.guard.prometheus import AmpWorkspaceId, PrometheusUrl, amp_base_url
from hyperpod_nccl.guard.validate import MAX_GPUS, Region
from hyperpod_nccl.metrics.window import Window, resolve_window, window_from_report
from hyperpod_nccl.models import Report, SkippedInput
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.metrics import MetricsSnapshot

if TYPE_CHECKING:
    from hyperpod_nccl.collect.prometheus import PrometheusReader, ReaderLimits

# A node as the metric labels name it (host name, Kubernetes node name) or an instance id.
NODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$"


class MetricsSource(BaseModel):
    """Where the DCGM history lives: a Prometheus URL, or an AMP workspace and its region."""

    model_config = ConfigDict(extra="forbid")

    prometheus: PrometheusUrl | None = None
    amp_workspace: AmpWorkspaceId | None = None
    region: Region | None = None

    @model_validator(mode="after")
    def _one_source(self) -> MetricsSource:
        if bool(self.prometheus) == bool(self.amp_workspace):
            raise ValueError(
                "give a Prometheus URL or an Amazon Managed Prometheus workspace (one of the two)"
            )
        if self.amp_workspace and not self.region:
            raise ValueError("an Amazon Managed Prometheus workspace needs its region")
        return self

    def reader(self, session: Any = None, limits: ReaderLimits | None = None) -> PrometheusReader:
        # The HTTP client loads with the first metrics call, not with the server.
        from hyperpod_nccl.collect.prometheus import PrometheusReader, amp_reader

        if self.prometheus:
            return PrometheusReader(self.prometheus, limits=limits)
        from hyperpod_nccl.collect.aws import default_session

        assert self.amp_workspace and self.region
        return amp_reader(self.amp_workspace, self.region, session or default_session(), limits)

    @property
    def label(self) -> str:
        return (
            f"prometheus {self.prometheus}"
            if self.prometheus
            else f"amp {self.amp_workspace} ({self.region})"
        )

    @property
    def query_url(self) -> str:
        if self.prometheus:
            return self.prometheus
        assert self.amp_workspace and self.region
        return amp_base_url(self.amp_workspace, self.region)


class MetricsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: MetricsSource
    node: str | None = Field(default=None, pattern=NODE_PATTERN)
    max_gpus: int = Field(default=MAX_GPUS, ge=1, le=MAX_GPUS)


def choose_window(
    *,
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    around: Path | None = None,
    now: datetime | None = None,
) -> Window:
    """A triage report's timeline when given, else --start/--end, else --since (default 2h)."""
    if around is not None:
        if since or start or end:
            raise ValueError("give a triage report or a window (--since, --start/--end), not both")
        return window_from_report(around)
    return resolve_window(since=since, start=start, end=end, now=now)


def collect_metrics(
    options: MetricsOptions, window: Window, *, session: Any = None, limits: ReaderLimits | None = None
) -> tuple[MetricsSnapshot, list[CollectionIssue]]:
    """Read the DCGM history (blocking). Never raises for what Prometheus does."""
    from hyperpod_nccl.collect.dcgm import collect_dcgm

    with options.source.reader(session, limits) as reader:
        return collect_dcgm(
            reader,
            window,
            source=options.source.label,
            query_url=options.source.query_url,
            node=options.node,
            max_gpus=options.max_gpus,
        )


def metrics_snapshot(options: MetricsOptions, window: Window, **kwargs: Any) -> Snapshot:
    metrics, issues = collect_metrics(options, window, **kwargs)
    return Snapshot(
        collected_at=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        region=options.source.region,
        metrics=metrics,
        collection_issues=issues,
    )


def metrics_report(snapshot: Snapshot) -> Report:
    """The GPU metric checks alone, with what could not be collected."""
    from hyperpod_nccl.analyze import METRICS_ANALYZERS
    from hyperpod_nccl.analyze.collection import analyze_collection
    from hyperpod_nccl.diagnose.cause import diagnose_root_cause
    from hyperpod_nccl.next_steps import attach
    from hyperpod_nccl.next_steps.cluster import cluster_facts

    findings = [f for analyzer in (*METRICS_ANALYZERS, analyze_collection) for f in analyzer(snapshot)]
    attach(findings, cluster_facts(snapshot))
    skipped = [
        SkippedInput(source=i.source, reason=f"{i.kind}: {i.message}") for i in snapshot.collection_issues
    ]
    return Report.build("diagnose", findings, root_cause=diagnose_root_cause(findings), skipped=skipped)


def unusable_reason(snapshot: Snapshot) -> str | None:
    """Why nothing at all could be checked (exit 2 for the CLI), or None."""
    metrics = snapshot.metrics
    if metrics is None or metrics.gpus:
        return None
    failed = [i for i in snapshot.collection_issues if i.source == "prometheus:inventory"]
    if failed and failed[0].kind != "not_found":
        return f"could not read GPU metrics: {failed[0].message}"
    return f"no DCGM series in {metrics.window_note}: is dcgm-exporter scraped by this Prometheus?"
