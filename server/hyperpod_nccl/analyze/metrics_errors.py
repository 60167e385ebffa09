"""GPU memory and NVLink error counters from DCGM: ECC (volatile and aggregate, single and double
bit), row remapping (failed, pending), NVLink CRC, replay and recovery errors.

Counters are judged by how much they grew inside the window, so a lifetime of a few corrected
errors on an old GPU is history, not news; a state (remap pending, remap failed) by its value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hyperpod_nccl.analyze.metrics_common import (
    GpuView,
    MetricsView,
    confirm_command,
    evidence,
    gpu_selector,
    metrics_view,
    on_node_commands,
    present,
)
from hyperpod_nccl.analyze.node_common import ladder
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot

MEMORY = "gpu-metrics.md § 6"
NVLINK = "gpu-metrics.md § 7"
# Corrected single-bit errors are routine in small numbers; hundreds in two hours is a memory
# region going bad, which usually ends in a double-bit error and a remap.
SBE_CLIMB = 100
# A handful of CRC errors and replays is the link doing its job; past this many in the window
# the link is marginal. Any recovery means the link went down and came back.
NVLINK_ERROR_CLIMB = 100


@dataclass(frozen=True)
class Rule:
    id: str
    status: Status
    priority: Priority
    reference: str
    rung: str
    fields: tuple[str, ...]
    test: Callable[[dict[str, tuple[float, float, int | None]]], bool]
    what: str
    detail: str


def _growth(view: MetricsView, gpu: GpuView, key: str) -> tuple[float, float, int | None] | None:
    """(growth in the window, last value, index of the first rise) of a coarse counter or state."""
    values = gpu.coarse(key)
    seen = present(values or [])
    if not seen or values is None:
        return None
    first_value = seen[0]
    rise = next((i for i, v in enumerate(values) if v is not None and v > first_value), None)
    return max(seen) - first_value, seen[-1], rise


_RULES = (
    Rule("metrics.gpu.ecc_uncorrectable", Status.FAIL, Priority.P0, MEMORY, "reboot",
         ("ecc_dbe_vol", "ecc_dbe_agg"), lambda g: any(v[0] > 0 for v in g.values()),
         "uncorrectable (double-bit) ECC errors in the window",
         "The GPU's memory lost data: the job on it cannot trust its results. Reboot to reset the GPU and "
         "let the remap apply; replace if errors return."),
    Rule("metrics.gpu.ecc_history", Status.WARN, Priority.P2, MEMORY, "investigate",
         ("ecc_dbe_agg",), lambda g: all(v[0] == 0 and v[1] > 0 for v in g.values()),
         "uncorrectable ECC errors in its lifetime, none in the window",
         "Past uncorrectable errors: watch for new ones and for remap failures."),
    Rule("metrics.gpu.ecc_correctable_climbing", Status.WARN, Priority.P2, MEMORY, "investigate",
         ("ecc_sbe_vol",), lambda g: any(v[0] >= SBE_CLIMB for v in g.values()),
         f"at least {SBE_CLIMB} corrected single-bit ECC errors in the window",
         "A memory region is degrading; an uncorrectable error often follows. Plan to drain the node."),
    Rule("metrics.gpu.row_remap_failed", Status.FAIL, Priority.P0, MEMORY, "replace",
         ("remap_failure",), lambda g: any(v[1] >= 1 for v in g.values()),
         "row remapping failed: no spare rows left",
         "The GPU cannot retire more bad memory: replace the node."),
    Rule("metrics.gpu.row_remap_pending", Status.FAIL, Priority.P1, MEMORY, "reboot",
         ("remap_pending",), lambda g: any(v[1] >= 1 for v in g.values()),
         "a row remap is pending a GPU reset",
         "The bad row stays in use until the GPU is reset: reboot the node when the job is off it."),
    Rule("metrics.gpu.nvlink_errors", Status.FAIL, Priority.P1, NVLINK, "reboot",
         ("nvlink_recovery", "nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay"),
         lambda g: g.get("nvlink_recovery", (0, 0, None))[0] > 0
         or sum(v[0] for k, v in g.items() if k != "nvlink_recovery") >= NVLINK_ERROR_CLIMB,
         "NVLink errors climbing",
         "A marginal NVLink slows or breaks intra-node collectives (and NVLS). Reboot; replace if the "
         "errors return."),
)  # fmt: skip


def _finding(
    view: MetricsView, gpu: GpuView, rule: Rule, growth: dict[str, tuple[float, float, int | None]]
) -> Finding:
    rises = [v[2] for v in growth.values() if v[2] is not None]
    since = f" from {view.at(min(rises), coarse=True)}" if rises else ""
    values = ", ".join(f"{key} +{g:g} (now {last:g})" for key, (g, last, _) in growth.items())
    first_field = next(iter(growth))
    return Finding(
        id=rule.id,
        status=rule.status,
        priority=rule.priority,
        title=f"{gpu.label}: {rule.what}{since}",
        reference=rule.reference,
        detail=rule.detail,
        evidence=[evidence(gpu, first_field, values)],
        suggested_commands=[
            confirm_command(view, gpu_selector(first_field, [gpu]), "Shows the counter over the window."),
            *on_node_commands(gpu, "ECC,ROW_REMAPPER" if rule.reference == MEMORY else "NVLINK"),
            *ladder(gpu, rule.rung),  # type: ignore[arg-type]
        ],
        **gpu.scope(),
    )


def analyze_metrics_errors(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None:
        return []
    ran = [rule for rule in _RULES if any(view.exported(key) for key in rule.fields)]
    findings = []
    for gpu in view.gpus:
        for rule in ran:
            growth = {key: g for key in rule.fields if (g := _growth(view, gpu, key)) is not None}
            if growth and rule.test(growth):
                findings.append(_finding(view, gpu, rule, growth))
    if not findings and ran:
        findings.append(
            Finding(
                id="metrics.gpu.error_counters_ok",
                status=Status.PASS,
                title=f"No new ECC, row-remap or NVLink errors on {len(view.gpus)} GPUs",
            )
        )
    return findings
