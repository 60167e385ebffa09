"""The straggler GPU and the lemon node: one GPU of the job whose utilisation or memory
bandwidth sits far from the rest while the job runs.

In a synchronous job every GPU should look alike. The comparison uses only the steps when most
GPUs are busy (the job running, not starting or checkpointing), each GPU's median over those
steps, and the median and MAD across GPUs of the same model, so that the outlier cannot hide by
pulling the average. GPUs that went silent or hung are reported by their own checks and left
out here.
"""

from __future__ import annotations

import statistics

from hyperpod_nccl.analyze.metrics_common import (
    BUSY_UTIL,
    MIN_PEERS,
    MetricsView,
    capped,
    confirm_command,
    crowds,
    evidence,
    gpu_selector,
    grouped_by_node,
    median_of,
    metrics_view,
    on_node_commands,
    scope_of,
)
from hyperpod_nccl.analyze.metrics_hang import find_hangs
from hyperpod_nccl.analyze.metrics_silent import silent_gpus
from hyperpod_nccl.metrics.fields import BY_KEY
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot

STRAGGLER = "gpu-metrics.md § 8"
# 15 % is about what a lemon node costs a job (and what MegaScale-style reports call a slow
# node); smaller differences are within the spread of healthy GPUs on real clusters.
RELATIVE_GAP = 0.15


def _running_steps(view: MetricsView) -> list[int]:
    series = [u for gpu in view.gpus if (u := gpu.utilisation()) is not None]
    if not series:
        return []
    steps = []
    for index in range(len(series[0])):
        values = [s[index] for s in series if s[index] is not None]
        if values and statistics.median(values) >= BUSY_UTIL:
            steps.append(index)
    return steps


def _profiles(view: MetricsView, steps: list[int], excluded: set[int]) -> dict[str, dict[int, float]]:
    """Metric → GPU (by id) → median over the running steps."""
    profiles: dict[str, dict[int, float]] = {"utilisation": {}, "memory bandwidth": {}}
    for gpu in view.gpus:
        if id(gpu) in excluded:
            continue
        util = gpu.utilisation()
        dram = gpu.fine("dram_active")
        if dram is None and (copy := gpu.fine("mem_copy_util")) is not None:
            dram = [None if v is None else v / 100 for v in copy]
        for name, series in (("utilisation", util), ("memory bandwidth", dram)):
            if series is not None and (value := median_of(series[i] for i in steps)) is not None:
                profiles[name][id(gpu)] = value
    return profiles


def _outliers(view: MetricsView) -> dict[int, list[tuple[str, float, float]]]:
    steps = _running_steps(view)
    excluded = {id(s.gpu) for s in silent_gpus(view)} | {id(h.gpu) for h in find_hangs(view)}
    by_id = {id(gpu): gpu for gpu in view.gpus}
    found: dict[int, list[tuple[str, float, float]]] = {}
    for name, values in _profiles(view, steps, excluded).items():
        groups = crowds((by_id[gpu_id], value) for gpu_id, value in values.items())
        for gpu_id, value in values.items():
            crowd = groups.get(by_id[gpu_id].data.model)
            if crowd is not None and crowd.judge(value, RELATIVE_GAP)[0]:
                found.setdefault(gpu_id, []).append((name, value, crowd.centre))
    return found


def _fmt(name: str, value: float) -> str:
    return f"{value:.0f} %" if name == "utilisation" else f"{value:.2f}"


def analyze_metrics_straggler(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None or len(view.gpus) <= MIN_PEERS:
        return []
    outliers = _outliers(view)
    flagged = [gpu for gpu in view.gpus if id(gpu) in outliers]
    findings = []
    for node, gpus in grouped_by_node(flagged).items():
        words = [
            f"GPU {gpu.data.gpu} {name} {_fmt(name, value)} vs peers' {_fmt(name, centre)}"
            for gpu in gpus
            for name, value, centre in outliers[id(gpu)]
        ]
        first = gpus[0]
        key = "dram_active" if any(n == "memory bandwidth" for n, _, _ in outliers[id(first)]) else "util"
        findings.append(
            Finding(
                id="metrics.job.straggler",
                status=Status.FAIL,
                priority=Priority.P1,
                title=f"Straggler on {node}: {'; '.join(words[:3])}",
                reference=STRAGGLER,
                detail="While the job ran, this node's GPU(s) behaved unlike the rest; in a synchronous job "
                "every rank waits for the slowest. Check its throttling, PCIe and error findings; if none "
                "explains it, drain it and compare with nccl-tests.",
                evidence=capped(
                    [
                        evidence(
                            gpu,
                            key,
                            "; ".join(
                                f"{n} {_fmt(n, v)} (peers {_fmt(n, c)})" for n, v, c in outliers[id(gpu)]
                            ),
                        )
                        for gpu in gpus
                    ]
                ),
                suggested_commands=[
                    confirm_command(
                        view,
                        gpu_selector(key, gpus),
                        f"Shows these GPUs; compare with quantile(0.5, {BY_KEY[key].name}) over all GPUs.",
                    ),
                    *on_node_commands(first, "PERFORMANCE"),
                ],
                **scope_of(gpus),
            )
        )
    if not findings and view.gpus:
        findings.append(
            Finding(
                id="metrics.job.no_straggler",
                status=Status.PASS,
                title=f"No straggler: {len(view.gpus)} GPUs' utilisation and memory bandwidth agree",
            )
        )
    return findings
