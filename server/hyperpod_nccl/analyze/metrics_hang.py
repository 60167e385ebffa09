"""The hang signature in DCGM numbers: utilisation pinned high while the SMs do nothing.

A GPU spinning in an NCCL kernel that cannot progress counts as "utilised" (a kernel is
resident) while `DCGM_FI_PROF_SM_ACTIVE` (or the tensor pipe) drops to ~0. Seen on a GPU for
minutes on end, it is the collective that never completes. Each GPU's onset is the first step of
that run; the GPU, and node, with the earliest onset is the first abnormal worker, unless a GPU
went silent before it, which is then named as the likelier trigger.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyperpod_nccl.analyze.metrics_common import (
    GpuView,
    MetricsView,
    capped,
    confirm_command,
    evidence,
    gpu_selector,
    median_of,
    metrics_view,
    on_node_commands,
    scope_of,
)
from hyperpod_nccl.analyze.metrics_silent import silent_gpus
from hyperpod_nccl.metrics.window import iso_seconds
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot

HANG = "gpu-metrics.md § 2"
# NCCL's spin keeps the utilisation counter at or near 100 %.
PINNED_UTIL = 90.0
# A working training step keeps SM activity well above 0.3; a stalled collective sits near 0.
IDLE_SM_ACTIVE = 0.05
IDLE_TENSOR_ACTIVE = 0.02
# Shorter stalls are checkpoints and evaluation pauses; NCCL's own timeout is 10-30 minutes.
MIN_HANG_S = 300


@dataclass(frozen=True)
class Hang:
    gpu: GpuView
    onset_index: int
    steps: int
    activity_key: str
    before: float | None
    during: float | None


def _activity(gpu: GpuView) -> tuple[str, list[float | None], float] | None:
    if (sm := gpu.fine("sm_active")) is not None:
        return "sm_active", sm, IDLE_SM_ACTIVE
    if (tensor := gpu.fine("tensor_active")) is not None:
        return "tensor_active", tensor, IDLE_TENSOR_ACTIVE
    return None


def _hang(gpu: GpuView, min_steps: int) -> Hang | None:
    util, activity = gpu.utilisation(), _activity(gpu)
    if util is None or activity is None:
        return None
    key, active, idle = activity
    run_start, run = None, 0
    for index, (u, a) in enumerate(zip(util, active, strict=True)):
        if u is not None and a is not None and u >= PINNED_UTIL and a <= idle:
            run_start = index if run == 0 else run_start
            run += 1
            continue
        if run >= min_steps:
            break
        run_start, run = None, 0
    if run_start is None or run < min_steps:
        return None
    before = median_of(active[max(0, run_start - min_steps) : run_start])
    during = median_of(active[run_start : run_start + run])
    return Hang(gpu, run_start, run, key, before, during)


def find_hangs(view: MetricsView) -> list[Hang]:
    min_steps = max(2, -(-MIN_HANG_S // view.snapshot.step_s))
    hangs = [hang for gpu in view.gpus if (hang := _hang(gpu, min_steps)) is not None]
    return sorted(hangs, key=lambda h: (h.onset_index, h.gpu.data.node, h.gpu.data.gpu))


def _line(view: MetricsView, hang: Hang) -> str:
    was = f"{hang.before:.2f}" if hang.before is not None else "?"
    now = f"{hang.during:.2f}" if hang.during is not None else "?"
    minutes = hang.steps * view.snapshot.step_s // 60
    return (
        f"from {view.at(hang.onset_index)} for {minutes} min: utilisation >= {PINNED_UTIL:g} %, "
        f"{hang.activity_key} {now} (was {was} before)"
    )


def _trigger(view: MetricsView, first: Hang) -> str:
    onset = view.time(first.onset_index)
    earlier = [s for s in silent_gpus(view) if s.last_sample <= onset]
    if not earlier:
        return f"The first abnormal worker is {first.gpu.label}."
    silent = earlier[0]
    return (
        f"{silent.gpu.label} stopped reporting at {iso_seconds(silent.last_sample)}, before the first "
        f"hang onset ({first.gpu.label}): start there, the other GPUs are waiting for it."
    )


def analyze_metrics_hang(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None or not view.gpus:
        return []
    checked = [gpu for gpu in view.gpus if gpu.utilisation() is not None and _activity(gpu) is not None]
    if not checked:
        return []
    hangs = find_hangs(view)
    if not hangs:
        return [
            Finding(
                id="metrics.hang.none",
                status=Status.PASS,
                title=f"No hang signature (utilisation pinned, SMs idle) on {len(checked)} GPUs",
            )
        ]
    first = hangs[0]
    gpus = [h.gpu for h in hangs]
    nodes = sorted({g.data.node for g in gpus})
    return [
        Finding(
            id="metrics.hang.signature",
            status=Status.FAIL,
            priority=Priority.P0,
            title=f"Hang signature on {len(hangs)} GPU(s) on {len(nodes)} node(s): utilisation pinned, "
            f"SMs idle, first on {first.gpu.label} at {view.at(first.onset_index)}",
            reference=HANG,
            detail=f"{_trigger(view, first)} A collective that cannot complete keeps the GPU 'busy' doing "
            "nothing until the NCCL watchdog fires. Onsets per GPU are in the evidence, earliest first.",
            evidence=capped([evidence(h.gpu, h.activity_key, _line(view, h)) for h in hangs]),
            suggested_commands=[
                confirm_command(
                    view,
                    f"{gpu_selector('util', [first.gpu])} and on(gpu) "
                    f"{gpu_selector(first.activity_key, [first.gpu])} "
                    f"< {IDLE_SM_ACTIVE if first.activity_key == 'sm_active' else IDLE_TENSOR_ACTIVE}",
                    "Shows the pinned utilisation while the SMs idle, on the first GPU.",
                ),
                *on_node_commands(first.gpu, "PERFORMANCE"),
            ],
            **scope_of(gpus),
        )
    ]
