"""The DCGM collection plan: which queries run, how they are bounded, and how their answers
become one MetricsSnapshot of per-GPU series on a common grid.

1. An inventory (one instant query) lists every GPU series seen in the window. It applies
   `--node` and the series bound: past `max_gpus`, whole nodes are kept in name order up to the
   bound and the rest are left out, and the snapshot says so.
2. The heartbeat (latest sample time per GPU) and every catalogue field run as range queries,
   a few at a time. A field with no series is `absent`, not an error: many clusters do not
   export the profiling or ECC fields, and the analyzers then say which check could not run.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hyperpod_nccl.collect.prometheus import PrometheusError, PrometheusReader
from hyperpod_nccl.guard.validate import MAX_GPUS
from hyperpod_nccl.metrics.fields import (
    FIELDS,
    HEARTBEAT_NAMES,
    LAST_SEEN,
    DcgmField,
    field_query,
    heartbeat_query,
    inventory_query,
    promql_string,
)
from hyperpod_nccl.metrics.window import Window
from hyperpod_nccl.snapshot import CollectionIssue
from hyperpod_nccl.snapshot.metrics import GpuMetrics, MetricQuery, MetricsSnapshot

# The fine grid: 30 s matches the usual dcgm-exporter scrape interval (15-30 s), so a 2-hour
# window is 241 points and the hang onset is placed within 30 s. Longer windows widen the step
# so that no series exceeds MAX_POINTS (Prometheus itself refuses more than 11,000).
MIN_STEP_S = 30
MAX_POINTS = 1500
# Counters and states need their climb, not every sample: ~48 points over the window.
COARSE_POINTS = 48
QUERIES_IN_FLIGHT = 4

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_MAX_LABEL = 253
_INSTANCE_ID = re.compile(r"(?<![0-9a-z])i-(?:[0-9a-f]{17}|[0-9a-f]{8})(?![0-9a-z])")
# dcgm-exporter without NODE_NAME reports its own pod name as Hostname.
_EXPORTER_POD = re.compile(r"^(nvidia-)?dcgm-exporter-[a-z0-9]+$")
_NODE_LABELS = ("kubernetes_node", "node")


def steps_for(window: Window) -> tuple[int, int]:
    span = window.end - window.start
    step = max(MIN_STEP_S, math.ceil(span / MAX_POINTS))
    coarse = max(step, math.ceil(span / COARSE_POINTS / step) * step)
    return step, coarse


def label_value(value: object) -> str:
    """A label value as data: no control characters (no terminal escapes), bounded length."""
    return _CONTROL.sub("", str(value))[:_MAX_LABEL]


def node_label(labels: dict[str, str]) -> tuple[str, str]:
    """(label, node name): the DCGM `Hostname`, unless it is the exporter's own pod name; then a
    Kubernetes node label; else the scrape target as is (matchers must use the exact value)."""
    hostname = labels.get("Hostname", "")
    if hostname and not _EXPORTER_POD.match(hostname):
        return "Hostname", hostname
    for name in _NODE_LABELS:
        if labels.get(name):
            return name, labels[name]
    if hostname:
        return "Hostname", hostname
    return "instance", labels.get("instance") or "unknown"


def gpu_key(labels: dict[str, str]) -> tuple[str, str]:
    return node_label(labels)[1], labels.get("gpu") or labels.get("UUID") or "?"


def instance_id_in(labels: dict[str, str]) -> str | None:
    for name in ("Hostname", *_NODE_LABELS):
        if found := _INSTANCE_ID.search(labels.get(name, "")):
            return found.group(0)
    return None


def _regex_literal(value: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else f"\\{ch}" for ch in value)


def node_matcher(label: str, nodes: list[str]) -> str:
    """`label=~"a|b"`, each name matched literally."""
    return f"{label}=~{promql_string('|'.join(_regex_literal(node) for node in nodes))}"


@dataclass
class _Plan:
    reader: PrometheusReader
    window: Window
    step: int
    coarse: int
    snapshot: MetricsSnapshot
    issues: list[CollectionIssue] = field(default_factory=list)
    matchers: str = ""
    gpus: dict[tuple[str, str], GpuMetrics] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, key: str, promql: str, error: PrometheusError) -> None:
        self.snapshot.queries.append(
            MetricQuery(field=key, promql=promql, status="failed", message=str(error))
        )
        self.issues.append(
            CollectionIssue(
                source=f"prometheus:{key}", kind=error.kind, message=str(error), permission=error.permission
            )
        )


def _inventory(plan: _Plan, node: str | None, max_gpus: int) -> bool:
    """Lists the GPU series and sets the matchers; False when nothing can be read."""
    promql = inventory_query("", plan.window.end - plan.window.start)
    try:
        rows = plan.reader.instant(promql, plan.window.end)
    except PrometheusError as error:
        plan.fail("inventory", promql, error)
        return False
    labels = [{k: label_value(v) for k, v in row["metric"].items()} for row in rows]
    if node:
        labels = [item for item in labels if node in (gpu_key(item)[0], instance_id_in(item))]
    per_node: dict[str, set[str]] = {}
    label_of: dict[str, str] = {}
    for item in labels:
        name, gpu = gpu_key(item)
        per_node.setdefault(name, set()).add(gpu)
        label_of[name] = node_label(item)[0]
    plan.snapshot.gpus_seen = sum(len(gpus) for gpus in per_node.values())
    status = "ok" if per_node else "absent"
    plan.snapshot.queries.append(
        MetricQuery(field="inventory", promql=promql, status=status, series=len(rows))
    )
    for item in labels:
        gpu = _gpu(plan, item)
        if item.get("pod"):
            gpu.pods = sorted({*gpu.pods, f"{item.get('namespace', '')}/{item['pod']}"})
    if not per_node:
        return False
    kept = _keep_within(sorted(per_node), per_node, max_gpus)
    if len(kept) < len(per_node) or node:
        by_label: dict[str, list[str]] = {}
        for name in kept:
            by_label.setdefault(label_of[name], []).append(name)
        # One label names every kept node in practice; if not, the most common one is used.
        label, names = max(by_label.items(), key=lambda pair: len(pair[1]))
        plan.matchers = node_matcher(label, names)
        for key in [key for key in plan.gpus if key[0] not in names]:
            del plan.gpus[key]
    if len(kept) < len(per_node):
        kept_gpus = sum(len(per_node[name]) for name in kept)
        plan.snapshot.cut = (
            f"{plan.snapshot.gpus_seen} GPU series on {len(per_node)} nodes exceed the bound of {max_gpus}: "
            f"kept {kept_gpus} GPUs on the first {len(kept)} nodes by name ({kept[0]} to {kept[-1]}); "
            "name the nodes of interest with --node to read others"
        )
        plan.snapshot.queries[-1].status = "cut"
        plan.snapshot.queries[-1].message = plan.snapshot.cut
    return True


def _keep_within(names: list[str], per_node: dict[str, set[str]], bound: int) -> list[str]:
    kept, total = [], 0
    for name in names:
        if total + len(per_node[name]) > bound:
            break
        kept.append(name)
        total += len(per_node[name])
    return kept or names[:1]


def _gpu(plan: _Plan, labels: dict[str, str]) -> GpuMetrics:
    key = gpu_key(labels)
    with plan.lock:
        gpu = plan.gpus.get(key)
        if gpu is None:
            gpu = plan.gpus[key] = GpuMetrics(node=key[0], node_label=node_label(labels)[0], gpu=key[1])
    gpu.uuid = gpu.uuid or labels.get("UUID") or None
    gpu.model = gpu.model or labels.get("modelName") or None
    gpu.pci_bus_id = gpu.pci_bus_id or labels.get("pci_bus_id") or None
    gpu.target = gpu.target or labels.get("instance") or None
    gpu.instance_id = gpu.instance_id or instance_id_in(labels)
    return gpu


def _points(values: list[Any], start: int, step: int, length: int) -> list[float | None]:
    points: list[float | None] = [None] * length
    for pair in values:
        try:
            at, raw = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            continue
        index = round((at - start) / step)
        if 0 <= index < length and math.isfinite(raw):
            points[index] = round(raw, 3)
    return points


def _merge(old: list[float | None], new: list[float | None]) -> list[float | None]:
    """Two series of one GPU (an exporter restarted under a new target): the larger sample wins."""
    return [b if a is None else a if b is None else max(a, b) for a, b in zip(old, new, strict=True)]


def _run(plan: _Plan, key: str, promql: str, coarse: bool, max_gpus: int) -> Callable[[], None]:
    step = plan.coarse if coarse else plan.step
    length = (plan.window.end - plan.window.start) // step + 1

    def apply() -> None:
        try:
            rows = plan.reader.range(promql, plan.window.start, plan.window.end, step)
        except PrometheusError as error:
            plan.fail(key, promql, error)
            return
        query = MetricQuery(field=key, promql=promql, status="ok" if rows else "absent", series=len(rows))
        if len(rows) > max_gpus:
            query.status, query.message = (
                "cut",
                f"{len(rows)} series, kept the first {max_gpus} by node and GPU",
            )
            rows = sorted(rows, key=lambda row: gpu_key(row["metric"]))[:max_gpus]
        plan.snapshot.queries.append(query)
        for row in rows:
            labels = {k: label_value(v) for k, v in row["metric"].items()}
            if plan.matchers and gpu_key(labels) not in plan.gpus:
                continue
            gpu = _gpu(plan, labels)
            series = gpu.coarse if coarse else gpu.fine
            points = _points(row["values"], plan.window.start, step, length)
            series[key] = _merge(series[key], points) if key in series else points

    return apply


def collect_dcgm(
    reader: PrometheusReader,
    window: Window,
    *,
    source: str,
    query_url: str | None,
    node: str | None = None,
    max_gpus: int = MAX_GPUS,
) -> tuple[MetricsSnapshot, list[CollectionIssue]]:
    """Read the window's DCGM series (blocking; queries run a few at a time in threads)."""
    step, coarse = steps_for(window)
    snapshot = MetricsSnapshot(
        source=source,
        query_url=query_url,
        start=window.start,
        end=window.end,
        step_s=step,
        coarse_step_s=coarse,
        window_note=window.note,
        node_filter=node,
    )
    plan = _Plan(reader=reader, window=window, step=step, coarse=coarse, snapshot=snapshot)
    if _inventory(plan, node, max_gpus):
        jobs = [_run(plan, LAST_SEEN, heartbeat_query(plan.matchers), False, max_gpus)]
        jobs += [_field_job(plan, item, max_gpus) for item in FIELDS]
        # Each job owns one field key; GPUs are created under the plan's lock.
        with ThreadPoolExecutor(max_workers=QUERIES_IN_FLIGHT) as pool:
            list(pool.map(lambda job: job(), jobs))
    elif not plan.issues:
        plan.issues.append(
            CollectionIssue(
                source="prometheus:inventory",
                kind="not_found",
                message=f"no DCGM series ({', '.join(HEARTBEAT_NAMES)}) "
                f"{'for node ' + node + ' ' if node else ''}in {window.note}: is dcgm-exporter scraped?",
            )
        )
    snapshot.queries.sort(key=lambda query: query.field)
    snapshot.gpus = sorted(plan.gpus.values(), key=lambda gpu: (gpu.node, _index(gpu.gpu)))
    return snapshot, plan.issues


def _field_job(plan: _Plan, item: DcgmField, max_gpus: int) -> Callable[[], None]:
    promql = field_query(item, plan.matchers, plan.coarse)
    return _run(plan, item.key, promql, item.resolution == "coarse", max_gpus)


def _index(gpu: str) -> tuple[int, str]:
    return (int(gpu), "") if gpu.isdigit() else (1 << 30, gpu)
