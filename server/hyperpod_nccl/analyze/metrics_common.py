"""What the GPU-metrics analyzers share: one view per GPU with its instance id (from its labels
or the cluster map), robust statistics across peers, evidence lines, and the suggested commands
(the PromQL to confirm a finding, the on-node probe, the reboot/replace ladder).

Node names come from metric labels: they appear in evidence as data, and in commands only inside
a PromQL string literal within one shell-quoted argument, never as a shell word of their own.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from hyperpod_nccl.guard.commands import Word, joined, suggest
from hyperpod_nccl.guard.commands import value as checked
from hyperpod_nccl.guard.prometheus import READ_PATHS, PrometheusUrl
from hyperpod_nccl.guard.validate import ClusterName, GpuIndex, InstanceId, QueryText, Region
from hyperpod_nccl.metrics.fields import BY_KEY, metric_selector, promql_string
from hyperpod_nccl.metrics.window import iso_seconds
from hyperpod_nccl.models import Evidence, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.metrics import GpuMetrics, MetricsSnapshot

# A GPU counts as busy (the job is running on it) at or above this utilisation. Idle GPUs drop
# their clocks and PCIe link generation to save power, which is not a fault.
BUSY_UTIL = 50.0
# Peer comparisons need a crowd: below this many GPUs a "majority" is not meaningful.
MIN_PEERS = 4
# 1.4826 * MAD estimates the standard deviation of normal data; a robust z of 4 is far outside
# the run-to-run spread of identical GPUs, yet a single broken GPU cannot mask itself.
MAD_SCALE = 1.4826
ROBUST_Z = 4.0
_MAX_EVIDENCE = 8
_INSTANCE_ID = re.compile(r"i-[0-9a-f]{8}(?:[0-9a-f]{9})?")
_GPU_INDEX = re.compile(r"\d{1,3}")
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


@dataclass(frozen=True, eq=False)
class GpuView:
    data: GpuMetrics
    instance_id: str | None
    cluster: str | None
    region: str | None
    orchestrator: str | None

    # The attributes node_common.ladder reads, so the reboot/replace ladder is shared. The
    # ladder writes the host name into a `scontrol` command: only a plain host name qualifies.
    @property
    def hostname(self) -> str | None:
        return self.data.node if _HOST_NAME.fullmatch(self.data.node) else None

    @property
    def label(self) -> str:
        return f"{self.data.node} GPU {self.data.gpu}"

    def fine(self, key: str) -> list[float | None] | None:
        return self.data.fine.get(key)

    def coarse(self, key: str) -> list[float | None] | None:
        return self.data.coarse.get(key)

    def utilisation(self) -> list[float | None] | None:
        """GPU utilisation in %, from GPU_UTIL, else the graphics engine activity."""
        if (util := self.fine("util")) is not None:
            return util
        engine = self.fine("gr_engine")
        return None if engine is None else [None if v is None else v * 100 for v in engine]

    def scope(self) -> dict[str, list[str]]:
        return {
            "nodes": [self.data.node],
            "instance_ids": [self.instance_id] if self.instance_id else [],
            "pods": list(self.data.pods),
        }


@dataclass(frozen=True)
class MetricsView:
    snapshot: MetricsSnapshot
    gpus: list[GpuView]

    def time(self, index: int, *, coarse: bool = False) -> int:
        return self.snapshot.start + index * (self.snapshot.coarse_step_s if coarse else self.snapshot.step_s)

    def at(self, index: int, *, coarse: bool = False) -> str:
        return iso_seconds(self.time(index, coarse=coarse))

    def exported(self, key: str) -> bool:
        return any(q.field == key and q.status in ("ok", "cut") for q in self.snapshot.queries)

    def window(self) -> str:
        return f"{iso_seconds(self.snapshot.start)} to {iso_seconds(self.snapshot.end)}"


def _cluster_instance_ids(snapshot: Snapshot) -> dict[str, str]:
    """Host name → instance id, from whatever else the snapshot holds (Slurm, Kubernetes, probes)."""
    known: dict[str, str] = {}
    if snapshot.slurm:
        for node in snapshot.slurm.nodes:
            if node.instance_id:
                known[node.name] = node.instance_id
                if node.address:
                    known[node.address] = node.instance_id
    if snapshot.kubernetes:
        for node in snapshot.kubernetes.nodes:
            name = node.get("metadata", {}).get("name", "")
            if found := _INSTANCE_ID.search(node.get("spec", {}).get("providerID", "")):
                known[name] = found.group(0)
    if snapshot.probes:
        for result in snapshot.probes.results:
            if result.target.hostname and result.target.instance_id:
                known[result.target.hostname] = result.target.instance_id
    return known


def metrics_view(snapshot: Snapshot) -> MetricsView | None:
    metrics = snapshot.metrics
    if metrics is None:
        return None
    known = _cluster_instance_ids(snapshot)
    cluster = snapshot.aws.hyperpod if snapshot.aws else None
    gpus = [
        GpuView(
            data=gpu,
            instance_id=gpu.instance_id or known.get(gpu.node) or known.get(gpu.node.split(".")[0]),
            cluster=cluster.name if cluster else None,
            region=snapshot.region,
            orchestrator=snapshot.orchestrator,
        )
        for gpu in metrics.gpus
    ]
    return MetricsView(metrics, gpus)


def present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def median_of(values: Iterable[float | None]) -> float | None:
    kept = present(values)
    return statistics.median(kept) if kept else None


@dataclass(frozen=True)
class Crowd:
    """The median and scaled MAD of one value across the GPUs of one model, computed once: one
    outlier among them cannot drag either, so each GPU is judged against the whole crowd."""

    centre: float
    spread: float
    size: int

    def judge(self, value: float, relative: float) -> tuple[bool, float]:
        """(outlier, robust z): far in absolute terms (a fraction of the median) and robustly."""
        distance = abs(value - self.centre)
        z = distance / self.spread if self.spread > 0 else float("inf") if distance > 0 else 0.0
        return distance >= relative * abs(self.centre) and z >= ROBUST_Z, z


def crowds(values: Iterable[tuple[GpuView, float]]) -> dict[str | None, Crowd]:
    """One Crowd per GPU model with more than MIN_PEERS GPUs."""
    by_model: dict[str | None, list[float]] = {}
    for gpu, value in values:
        by_model.setdefault(gpu.data.model, []).append(value)
    found = {}
    for model, numbers in by_model.items():
        if len(numbers) > MIN_PEERS:
            centre = statistics.median(numbers)
            spread = MAD_SCALE * statistics.median(abs(n - centre) for n in numbers)
            found[model] = Crowd(centre, spread, len(numbers))
    return found


def evidence(gpu: GpuView, field_key: str, text: str) -> Evidence:
    name = BY_KEY[field_key].name if field_key in BY_KEY else "DCGM heartbeat"
    return Evidence(
        source=f"prometheus:{name}",
        text=f"{gpu.label}: {text}",
        node=gpu.data.node,
        instance_id=gpu.instance_id,
    )


def capped(items: list[Evidence]) -> list[Evidence]:
    return items[:_MAX_EVIDENCE]


def gpu_selector(field_key: str, gpus: Sequence[GpuView]) -> str:
    """The field's series for these GPUs (one node's, or a single GPU), as PromQL."""
    first = gpus[0].data
    matchers = f"{first.node_label}={promql_string(first.node)}"
    indices = sorted({g.data.gpu for g in gpus if g.data.node == first.node})
    if len(gpus) == 1 or len(indices) < 8:
        matchers += (
            f",gpu=~{promql_string('|'.join(indices))}"
            if len(indices) > 1
            else f",gpu={promql_string(indices[0])}"
        )
    return metric_selector(BY_KEY[field_key].names, matchers)


def http_read_command(view: MetricsView, path: str, params: dict[str, str], why: str) -> SuggestedCommand:
    """A read of the Prometheus API the user can run: curl for a Prometheus URL, awscurl (SigV4,
    service `aps`) for Amazon Managed Prometheus. Every value is checked and one quoted word."""
    snapshot = view.snapshot
    base = checked(PrometheusUrl, snapshot.query_url)
    if snapshot.source.startswith("amp "):
        region = snapshot.source.rsplit("(", 1)[-1].rstrip(")")
        url = joined(base, path, "?", checked(QueryText, urlencode(params)))  # type: ignore[arg-type]
        return suggest(
            "awscurl --service aps --region",
            checked(Region, region),
            url,
            why=why,
            permission=READ_PATHS[path],
        )
    words: list[Word] = [joined(base, path)]  # type: ignore[arg-type]
    for name, text in params.items():
        words += ["--data-urlencode", joined(name, "=", checked(QueryText, text))]  # type: ignore[arg-type]
    return suggest("curl -sG", *words, why=why)


def confirm_command(view: MetricsView, promql: str, why: str) -> SuggestedCommand:
    """The range query that shows the same samples, with the window and step filled in."""
    snapshot = view.snapshot
    params = {
        "query": promql,
        "start": str(snapshot.start),
        "end": str(snapshot.end),
        "step": f"{snapshot.step_s}s",
    }
    return http_read_command(view, "/api/v1/query_range", params, why)


def on_node_commands(gpu: GpuView, nvidia_smi_display: str) -> list[SuggestedCommand]:
    """The on-node read: the project's probe when the instance is known, and the nvidia-smi view."""
    commands = []
    if gpu.instance_id and _INSTANCE_ID.fullmatch(gpu.instance_id):
        commands.append(
            suggest(
                "hyperpod-nccl probe --cluster",
                checked(ClusterName, gpu.cluster),
                "--region",
                checked(Region, gpu.region),
                "--node",
                checked(InstanceId, gpu.instance_id),
                why="Runs the read-only node-health probe (nvidia-smi -q, kernel-log Xids) on this node.",
                permission="ssm:StartSession",
            )
        )
    if _GPU_INDEX.fullmatch(gpu.data.gpu):
        commands.append(
            suggest(
                "nvidia-smi -q -d",
                nvidia_smi_display,  # type: ignore[arg-type]  # one of our own display names
                "-i",
                checked(GpuIndex, gpu.data.gpu),
                why=f"In a shell on {gpu.data.node}: what the driver reports for this GPU now.",
                permission="a shell on the node",
            )
        )
    return commands


def grouped_by_node(gpus: Iterable[GpuView]) -> dict[str, list[GpuView]]:
    nodes: dict[str, list[GpuView]] = {}
    for gpu in gpus:
        nodes.setdefault(gpu.data.node, []).append(gpu)
    return nodes


def scope_of(gpus: Sequence[GpuView]) -> dict[str, list[str]]:
    nodes = list(dict.fromkeys(g.data.node for g in gpus))
    instances = list(dict.fromkeys(g.instance_id for g in gpus if g.instance_id))
    pods = list(dict.fromkeys(p for g in gpus for p in g.data.pods))
    return {"nodes": nodes, "instance_ids": instances, "pods": pods}
