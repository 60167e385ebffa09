"""Choose which nodes to probe, and probe them in parallel with bounded concurrency.

Each node gets one time budget (180 s by default) that covers its retries; only transient
failures are retried (throttling, dropped connections), never AccessDenied or TargetNotConnected.
A node that does not finish is reported with whatever output arrived.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio

from hyperpod_nccl.probes.catalog import ProbeScript
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult, Runner

DEFAULT_SAMPLE = 3
MAX_SAMPLE = 50
DEFAULT_CONCURRENCY = 16
NODE_TIMEOUT_S = 180.0
MAX_ATTEMPTS = 3
_SKIPPED_GROUP = re.compile(r"controller|login|head", re.IGNORECASE)
_GPU_TYPE = re.compile(r"^(ml\.)?(p\d|g\d)", re.IGNORECASE)


@dataclass(frozen=True)
class ProbeProgress:
    done: int
    total: int
    node: str
    status: str


ProgressCallback = Callable[[ProbeProgress], None]


@dataclass(frozen=True)
class Selection:
    targets: list[NodeTarget]
    note: str


class UnknownNode(LookupError):
    pass


def _spread(nodes: list[NodeTarget], count: int) -> list[NodeTarget]:
    """`count` nodes spread evenly over a sorted list, so a sample crosses racks and groups."""
    if count >= len(nodes):
        return list(nodes)
    step = len(nodes) / count
    return [nodes[int(i * step)] for i in range(count)]


def select_targets(
    nodes: Sequence[NodeTarget], sample: int = DEFAULT_SAMPLE, node: str | None = None
) -> Selection:
    """The nodes to probe: `node` alone if given; else up to `sample` (cap 50) running workers,
    GPU instance groups first, controller and login groups never."""
    if node is not None:
        chosen = [n for n in nodes if node in (n.instance_id, n.hostname)]
        if not chosen:
            raise UnknownNode(f"{node} is not a node of this cluster")
        return Selection(chosen[:1], f"--node {node}: only that node was probed")
    sample = max(1, min(sample, MAX_SAMPLE))
    skipped = [n for n in nodes if n.instance_group and _SKIPPED_GROUP.search(n.instance_group)]
    workers = [n for n in nodes if n not in skipped and n.status in (None, "Running")]
    ordered = sorted(workers, key=lambda n: (n.instance_group or "", n.instance_id or n.hostname or ""))
    gpu = [n for n in ordered if n.instance_type and _GPU_TYPE.match(n.instance_type)]
    other = [n for n in ordered if n not in gpu]
    chosen = _spread(gpu, sample)
    chosen += _spread(other, sample - len(chosen)) if len(chosen) < sample and other else []
    not_running = len(nodes) - len(workers) - len(skipped)
    note = (
        f"sampled {len(chosen)} of {len(nodes)} nodes ({len(gpu)} running GPU workers, preferred; "
        f"{len(skipped)} controller/login node(s) skipped; {not_running} not Running)"
    )
    return Selection(chosen, note)


async def _probe_one(
    runner: Runner, script: ProbeScript, target: NodeTarget, timeout_s: float
) -> ProbeResult:
    started = time.monotonic()
    result: ProbeResult | None = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        remaining = timeout_s - (time.monotonic() - started)
        if remaining <= 0:
            break
        # The runner keeps its own deadline; this one only guards against a runner that overruns.
        with anyio.move_on_after(remaining + 5):
            try:
                result = await runner.run(script, target, remaining)
            except Exception as error:  # one broken node must not sink the others
                result = ProbeResult(target=target, script=script.name, status="error", error=repr(error))
        if result is None:
            result = ProbeResult(target=target, script=script.name, status="timeout", error="runner overran")
        result = result.model_copy(update={"attempts": attempt})
        if not result.retryable:
            break
        await anyio.sleep(min(0.5 * 2 ** (attempt - 1), max(remaining - 1, 0)))
    result = result or ProbeResult(target=target, script=script.name, status="timeout", error="no time left")
    return result.model_copy(update={"duration_s": round(time.monotonic() - started, 3)})


async def probe_targets(
    runner: Runner,
    script: ProbeScript,
    targets: Sequence[NodeTarget],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float = NODE_TIMEOUT_S,
    progress: ProgressCallback | None = None,
) -> list[ProbeResult]:
    """Probe every target, at most `concurrency` at a time; results in the targets' order."""
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    results: list[ProbeResult | None] = [None] * len(targets)
    done = 0

    async def probe(index: int, target: NodeTarget) -> None:
        nonlocal done
        async with limiter:
            result = await _probe_one(runner, script, target, timeout_s)
        results[index] = result
        done += 1
        if progress is not None:
            progress(ProbeProgress(done, len(targets), target.label, result.status))

    async with anyio.create_task_group() as group:
        for index, target in enumerate(targets):
            group.start_soon(probe, index, target)
    return [result for result in results if result is not None]
