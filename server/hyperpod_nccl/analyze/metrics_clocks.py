"""Clocks, throttling, temperature and power limits from DCGM: the slow GPU that sets the pace.

The throttle-reason bitmask (`DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`, renamed
`DCGM_FI_DEV_CLOCKS_EVENT_REASONS` in newer DCGM) maps 1:1 to NVML's reasons. Idle, application
clocks, sync boost and display clocks are not faults, and the software power cap is what a GPU
under full load normally does; the hardware slowdowns and thermal reasons are. Independently,
a GPU whose SM clock while busy is far below its peers' is slow whatever the mask says.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyperpod_nccl.analyze.metrics_common import (
    BUSY_UTIL,
    Crowd,
    GpuView,
    MetricsView,
    confirm_command,
    crowds,
    evidence,
    gpu_selector,
    median_of,
    metrics_view,
    on_node_commands,
)
from hyperpod_nccl.analyze.node_common import ladder
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot

CLOCKS = "gpu-metrics.md § 4"
# Reasons that slow a working GPU down (NVML clock event reason bits).
FAULT_REASONS = {
    0x08: "HW slowdown",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
}
_ANY_FAULT = sum(FAULT_REASONS)
# Two consecutive 30 s samples is a minute of slowdown: enough to matter to a synchronous job.
MIN_THROTTLED_SAMPLES = 2
# H100/A100 slow down around 85-90 C; sustained readings at or above this are a cooling problem.
HOT_C = 85.0
# A busy GPU's SM clock 20 % under its peers' costs every rank of the job 20 % of its speed.
CLOCK_SHORTFALL = 0.20
# Enforced power limits differ by model, not by GPU: one 10 % lower was capped by someone.
POWER_LIMIT_SHORTFALL = 0.10


def _reasons(gpu: GpuView) -> tuple[list[str], int, int | None]:
    """(fault reasons seen, samples with any, first index)."""
    mask = gpu.fine("throttle") or []
    seen: set[str] = set()
    count, first = 0, None
    for index, value in enumerate(mask):
        if not value or not int(value) & _ANY_FAULT:
            continue
        bits = [name for bit, name in FAULT_REASONS.items() if int(value) & bit]
        if bits:
            seen.update(bits)
            count += 1
            first = index if first is None else first
    return sorted(seen), count, first


def _busy_clock(gpu: GpuView) -> float | None:
    util, clock = gpu.utilisation(), gpu.fine("sm_clock")
    if util is None or clock is None:
        return None
    return median_of(c for u, c in zip(util, clock, strict=True) if u is not None and u >= BUSY_UTIL)


@dataclass(frozen=True)
class Clocks:
    busy: dict[int, float]
    crowds: dict[str | None, Crowd]

    @classmethod
    def of(cls, view: MetricsView) -> Clocks:
        busy = {id(gpu): (gpu, clock) for gpu in view.gpus if (clock := _busy_clock(gpu)) is not None}
        return cls({key: clock for key, (_, clock) in busy.items()}, crowds(busy.values()))

    def compared(self, gpu: GpuView) -> tuple[float, Crowd] | None:
        own, crowd = self.busy.get(id(gpu)), self.crowds.get(gpu.data.model)
        return None if own is None or crowd is None else (own, crowd)


def _clock_words(gpu: GpuView, clocks: Clocks) -> str:
    if (compared := clocks.compared(gpu)) is None:
        return ""
    own, crowd = compared
    return f"; busy SM clock {own:.0f} MHz vs peers' {crowd.centre:.0f} MHz"


def _throttled(view: MetricsView, gpu: GpuView, clocks: Clocks) -> Finding | None:
    reasons, count, first = _reasons(gpu)
    if count < MIN_THROTTLED_SAMPLES or first is None:
        return None
    hottest = max((t for t in gpu.fine("temp") or [] if t is not None), default=None)
    heat = f"; up to {hottest:.0f} C" if hottest is not None else ""
    return Finding(
        id="metrics.gpu.clocks_throttled",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"{gpu.label} throttled: {', '.join(reasons)} from {view.at(first)}",
        reference=CLOCKS,
        detail="A throttled GPU runs every step slower and the whole synchronous job waits for it. "
        "Thermal reasons point at cooling (fans, airflow, a hot neighbour); HW slowdown and power brake "
        "at the power supply. Confirm on the node; reboot, replace if it persists.",
        evidence=[
            evidence(
                gpu, "throttle", f"{count} samples with {', '.join(reasons)}{heat}{_clock_words(gpu, clocks)}"
            )
        ],
        suggested_commands=[
            confirm_command(
                view, gpu_selector("throttle", [gpu]), "Shows the reason bitmask (0x08/0x20/0x40/0x80)."
            ),
            *on_node_commands(gpu, "PERFORMANCE"),
            *ladder(gpu, "reboot"),  # type: ignore[arg-type]
        ],
        **gpu.scope(),
    )


def _hot(view: MetricsView, gpu: GpuView) -> Finding | None:
    temps = gpu.fine("temp") or []
    hot = [i for i, t in enumerate(temps) if t is not None and t >= HOT_C]
    if len(hot) < MIN_THROTTLED_SAMPLES:
        return None
    return Finding(
        id="metrics.gpu.temperature_high",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{gpu.label} at or above {HOT_C:g} C for {len(hot)} samples from {view.at(hot[0])}",
        reference=CLOCKS,
        detail="Not (yet) throttling, but close to the slowdown threshold: check the node's cooling.",
        evidence=[evidence(gpu, "temp", f"max {max(temps[i] for i in hot):.0f} C")],
        suggested_commands=[
            confirm_command(view, gpu_selector("temp", [gpu]), "Shows the temperature over the window."),
            *on_node_commands(gpu, "TEMPERATURE"),
        ],
        **gpu.scope(),
    )


def _slow_clock(view: MetricsView, gpu: GpuView, clocks: Clocks) -> Finding | None:
    if (compared := clocks.compared(gpu)) is None:
        return None
    own, crowd = compared
    outlier, z = crowd.judge(own, CLOCK_SHORTFALL)
    centre = crowd.centre
    if not outlier or own > centre:
        return None
    return Finding(
        id="metrics.gpu.sm_clock_low",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"{gpu.label} runs its SMs at {own:.0f} MHz while busy, its peers at {centre:.0f} MHz",
        reference=CLOCKS,
        detail="No throttle reason explains it in the metrics: check application clocks and the power "
        "supply on the node. One slow GPU sets the pace of the whole job.",
        evidence=[
            evidence(
                gpu,
                "sm_clock",
                f"median busy SM clock {own:.0f} MHz, robust z {z:.1f} vs {crowd.size} GPUs",
            )
        ],
        suggested_commands=[
            confirm_command(view, gpu_selector("sm_clock", [gpu]), "Shows the SM clock over the window."),
            *on_node_commands(gpu, "PERFORMANCE,CLOCK"),
        ],
        **gpu.scope(),
    )


def _power_limit(view: MetricsView, gpu: GpuView, typical_limits: dict[str | None, Crowd]) -> Finding | None:
    own = max((v for v in gpu.coarse("power_limit") or [] if v is not None), default=None)
    crowd = typical_limits.get(gpu.data.model)
    if own is None or crowd is None or own >= crowd.centre * (1 - POWER_LIMIT_SHORTFALL):
        return None
    typical = crowd.centre
    return Finding(
        id="metrics.gpu.power_limit_low",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{gpu.label} is limited to {own:.0f} W, its peers to {typical:.0f} W",
        reference=CLOCKS,
        detail="Someone lowered this GPU's power limit (nvidia-smi -pl) or the node's power budget: it "
        "will throttle under load. Restore the default limit.",
        evidence=[evidence(gpu, "power_limit", f"enforced power limit {own:.0f} W")],
        suggested_commands=on_node_commands(gpu, "POWER"),
        **gpu.scope(),
    )


def analyze_metrics_clocks(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None or not view.gpus:
        return []
    clocks = Clocks.of(view)
    limits = crowds(
        (gpu, limit)
        for gpu in view.gpus
        if (limit := max((v for v in gpu.coarse("power_limit") or [] if v is not None), default=None))
    )
    findings: list[Finding] = []
    for gpu in view.gpus:
        throttled = _throttled(view, gpu, clocks)
        # A throttled GPU's low clock and heat are in its throttle finding already.
        extra = [] if throttled else [_hot(view, gpu), _slow_clock(view, gpu, clocks)]
        findings += [f for f in (throttled, *extra, _power_limit(view, gpu, limits)) if f is not None]
    checked = view.exported("throttle") or view.exported("sm_clock")
    if not findings and checked:
        findings.append(
            Finding(
                id="metrics.gpu.clocks_ok",
                status=Status.PASS,
                title=f"No throttling, heat or slow SM clock on {len(view.gpus)} GPUs",
            )
        )
    return findings
