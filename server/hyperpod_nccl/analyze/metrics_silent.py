"""GPUs whose samples stopped inside the window, and the Xid codes dcgm-exporter reported.

A GPU that stops reporting while the other GPUs of its node carry on has usually fallen off the
bus or been lost by the driver; a node whose GPUs all stop at once lost its exporter or the node
itself. Silence is measured against the freshest GPU, not the wall clock, so ingestion lag or a
window that ends in the future is not mistaken for a fault. The last `DCGM_FI_DEV_XID_ERRORS`
value is read through the Xid catalogue the on-node probe uses.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass

from hyperpod_nccl.analyze.metrics_common import (
    GpuView,
    MetricsView,
    capped,
    confirm_command,
    evidence,
    gpu_selector,
    grouped_by_node,
    metrics_view,
    on_node_commands,
    present,
    scope_of,
)
from hyperpod_nccl.analyze.node_common import ladder, merge_alike
from hyperpod_nccl.metrics.window import iso_seconds
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.probes.xid import xid_info
from hyperpod_nccl.snapshot import Snapshot

SILENT_GPU = "gpu-metrics.md § 3"
XID = "gpu-metrics.md § 3"
# Three missed scrapes (or steps, on a coarse window): one late scrape is not silence. The scrape
# interval is read from the samples, so a 60 s or 120 s scrape config does not raise false alarms.
MIN_SILENCE_S = 90
SILENCE_STEPS = 3
_INTERVAL_SAMPLE = 64


@dataclass(frozen=True)
class Silence:
    gpu: GpuView
    last_sample: int
    xid: int | None


def last_sample(gpu: GpuView) -> int | None:
    seen = present(gpu.fine("last_seen") or [])
    return int(max(seen)) if seen else None


def _scrape_interval(view: MetricsView) -> float:
    """The usual gap between a GPU's distinct sample times, from a sample of GPUs."""
    gaps: list[float] = []
    for gpu in view.gpus[:_INTERVAL_SAMPLE]:
        times = sorted(set(present(gpu.fine("last_seen") or [])))
        gaps += [later - earlier for earlier, later in itertools.pairwise(times)]
    return statistics.median(gaps) if gaps else 0.0


def _last_xid(gpu: GpuView) -> int | None:
    codes = [int(v) for v in present(gpu.fine("xid") or []) if v > 0]
    return codes[-1] if codes else None


def silent_gpus(view: MetricsView) -> list[Silence]:
    """GPUs whose last sample is well behind the freshest GPU's, earliest first."""
    last = {gpu: seen for gpu in view.gpus if (seen := last_sample(gpu)) is not None}
    if len(last) < 2:
        return []
    freshest = max(last.values())
    threshold = max(MIN_SILENCE_S, SILENCE_STEPS * max(view.snapshot.step_s, _scrape_interval(view)))
    silent = [
        Silence(gpu, seen, _last_xid(gpu)) for gpu, seen in last.items() if freshest - seen >= threshold
    ]
    return sorted(silent, key=lambda s: (s.last_sample, s.gpu.data.node, s.gpu.data.gpu))


def _xid_words(code: int | None) -> str:
    if code is None:
        return "no Xid reported"
    info = xid_info(code)
    return f"last Xid {code} ({info.name}: {info.meaning})"


def _gpu_silent(view: MetricsView, silence: Silence) -> Finding:
    gpu = silence.gpu
    rung = xid_info(silence.xid).rung if silence.xid else "reboot"
    return Finding(
        id="metrics.gpu.stopped_reporting",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"{gpu.label} stopped reporting at {iso_seconds(silence.last_sample)} "
        f"while its node's other GPUs carried on ({_xid_words(silence.xid)})",
        reference=SILENT_GPU,
        detail="A single GPU going silent is the GPU falling off the bus or the driver losing it; the "
        "job's ranks on it are gone and every other rank waits for them. Confirm on the node, then "
        "reboot; replace if it returns.",
        evidence=[
            evidence(gpu, "last_seen", f"last sample {iso_seconds(silence.last_sample)} ({view.window()})"),
            *([evidence(gpu, "xid", f"DCGM_FI_DEV_XID_ERRORS = {silence.xid}")] if silence.xid else []),
        ],
        suggested_commands=[
            confirm_command(view, f"timestamp({gpu_selector('util', [gpu])})", "Shows when its samples end."),
            *on_node_commands(gpu, "PAGE_RETIREMENT,ROW_REMAPPER"),
            *ladder(gpu, rung),  # type: ignore[arg-type]
        ],
        **gpu.scope(),
    )


def _node_silent(view: MetricsView, node: str, silences: list[Silence]) -> Finding:
    first = silences[0]
    gpu = first.gpu
    xids = sorted({s.xid for s in silences if s.xid})
    return Finding(
        id="metrics.node.stopped_reporting",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"All {len(silences)} GPUs of {node} stopped reporting at {iso_seconds(first.last_sample)}",
        reference=SILENT_GPU,
        detail="Every GPU of the node went quiet at once: the exporter or the node itself stopped "
        "(node down, rebooted, replaced, or dcgm-exporter crashed). "
        f"{_xid_words(xids[-1] if xids else None)}.",
        evidence=capped(
            [evidence(s.gpu, "last_seen", f"last sample {iso_seconds(s.last_sample)}") for s in silences]
        ),
        suggested_commands=[
            confirm_command(
                view,
                f"timestamp({gpu_selector('util', [s.gpu for s in silences])})",
                "Shows when each GPU's samples end.",
            ),
            *ladder(gpu, "investigate"),  # type: ignore[arg-type]
        ],
        **scope_of([s.gpu for s in silences]),
    )


def _xid_finding(view: MetricsView, gpu: GpuView, code: int) -> Finding:
    info = xid_info(code)
    values = gpu.fine("xid") or []
    first = next(i for i, v in enumerate(values) if v == code)
    return Finding(
        id=f"metrics.gpu.xid_{code}",
        status=info.status,
        priority=info.priority,
        title=f"Xid {code} reported by {gpu.label}: {info.meaning}",
        reference=XID,
        detail=f"{info.name}, {info.cause}-caused. First move: {info.action}.",
        evidence=[evidence(gpu, "xid", f"DCGM_FI_DEV_XID_ERRORS = {code} from {view.at(first)}")],
        suggested_commands=[
            confirm_command(view, gpu_selector("xid", [gpu]), "Shows the Xid values over the window."),
            *on_node_commands(gpu, "PAGE_RETIREMENT,ROW_REMAPPER"),
            *ladder(gpu, info.rung),  # type: ignore[arg-type]
        ],
        **gpu.scope(),
    )


def silence_findings(view: MetricsView) -> list[Finding]:
    silences = silent_gpus(view)
    findings: list[Finding] = []
    silent_ids = {id(s.gpu) for s in silences}
    for node, gpus in grouped_by_node(view.gpus).items():
        on_node = [s for s in silences if s.gpu.data.node == node]
        if on_node and len(on_node) == len(gpus) and len(gpus) > 1:
            findings.append(_node_silent(view, node, on_node))
        else:
            findings += [_gpu_silent(view, s) for s in on_node]
    for gpu in view.gpus:
        if id(gpu) not in silent_ids and (code := _last_xid(gpu)) is not None:
            findings.append(_xid_finding(view, gpu, code))
    return findings


def analyze_metrics_silent(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None or not view.exported("last_seen"):
        return []
    findings = silence_findings(view)
    if not findings:
        findings.append(
            Finding(
                id="metrics.gpu.all_reporting",
                status=Status.PASS,
                title=f"All {len(view.gpus)} GPUs reported until the end of the window, no Xid",
            )
        )
    return merge_alike(findings)
