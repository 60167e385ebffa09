"""MCP tool `query_gpu_metrics`: the GPU metric checks for an assistant, sized for its context."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError

from hyperpod_nccl.guard.prometheus import AmpWorkspaceId, PrometheusUrl
from hyperpod_nccl.guard.validate import ExistingPath, Region
from hyperpod_nccl.metrics.service import (
    NODE_PATTERN,
    MetricsOptions,
    MetricsSource,
    choose_window,
    metrics_report,
    metrics_snapshot,
)
from hyperpod_nccl.metrics.window import iso_seconds
from hyperpod_nccl.models import Finding, RootCause, SkippedInput, Summary

_EVIDENCE_PER_FINDING = 3
Since = Annotated[
    str, Field(pattern=r"^(\d+[smhd])+$", description="How far back from now, e.g. 30m, 2h (default 2h).")
]
Time = Annotated[str, Field(max_length=40, description="ISO 8601 (2026-03-02T11:04:05Z) or Unix seconds.")]
NodeName = Annotated[
    str, Field(pattern=NODE_PATTERN, description="One node: its DCGM Hostname or instance id.")
]


class GpuMetricsResult(BaseModel):
    source: str
    window: str = Field(description="The window read, and how it was chosen.")
    gpus: int = Field(description="GPUs read.")
    nodes: int
    summary: Summary
    root_cause: RootCause | None = None
    findings: list[Finding] = Field(description="FAIL, WARN and INFO findings; PASS omitted.")
    passed: list[str] = Field(description="Titles of the checks that passed.")
    skipped: list[SkippedInput] = Field(description="What could not be read, and why.")


async def query_gpu_metrics(
    prometheus: PrometheusUrl | None = None,
    amp_workspace: AmpWorkspaceId | None = None,
    region: Region | None = None,
    since: Since | None = None,
    start: Time | None = None,
    end: Time | None = None,
    around_report: ExistingPath | None = None,
    node: NodeName | None = None,
) -> GpuMetricsResult:
    """Read the DCGM GPU metrics history from Prometheus and find hardware and hang signatures.

    Use this when a job hung, slowed down or lost a GPU and dcgm-exporter is scraped by a
    Prometheus (`prometheus` URL) or Amazon Managed Service for Prometheus (`amp_workspace` +
    `region`, SigV4 with the server's AWS credentials). Window: `since` (default 2h), or
    `start`/`end`, or `around_report` (a `triage --json` report: its timeline with margins).
    Returns findings per node and GPU with instance ids: the hang signature (utilisation pinned,
    SMs idle) and its onset per GPU (the first abnormal worker), GPUs that stopped reporting and
    their Xid, throttling and slow clocks, PCIe downgrades, ECC / row-remap / NVLink errors and
    the straggler GPU; each with the PromQL to confirm it. Fields not exported are listed as not
    checked, never as healthy.
    """
    try:
        source = MetricsSource(prometheus=prometheus, amp_workspace=amp_workspace, region=region)
        window = choose_window(
            since=since, start=start, end=end, around=None if around_report is None else Path(around_report)
        )
        options = MetricsOptions(source=source, node=node)
    except (ValueError, ValidationError) as error:
        raise ToolError(str(error).splitlines()[-1].strip()) from None
    snapshot = await anyio.to_thread.run_sync(lambda: metrics_snapshot(options, window))
    report = metrics_report(snapshot)
    metrics = snapshot.metrics
    assert metrics is not None
    return GpuMetricsResult(
        source=metrics.source,
        window=f"{iso_seconds(metrics.start)} to {iso_seconds(metrics.end)} ({metrics.window_note})",
        gpus=len(metrics.gpus),
        nodes=len({gpu.node for gpu in metrics.gpus}),
        summary=report.summary,
        root_cause=report.root_cause,
        findings=[
            f.model_copy(update={"evidence": f.evidence[:_EVIDENCE_PER_FINDING]})
            for f in report.findings
            if f.status != "PASS"
        ],
        passed=[f.title for f in report.findings if f.status == "PASS"],
        skipped=report.skipped,
    )
