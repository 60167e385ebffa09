"""The probe service the CLI, the MCP tool and the diagnose orchestrator share: pick nodes, run
`node_health` on them, and turn what came back into a Snapshot part and a Report."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

import anyio

from hyperpod_nccl.analyze import PROBE_ANALYZERS, run_each
from hyperpod_nccl.models import Report, SkippedInput
from hyperpod_nccl.probes.catalog import probe_script
from hyperpod_nccl.probes.fanout import (
    DEFAULT_CONCURRENCY,
    DEFAULT_SAMPLE,
    NODE_TIMEOUT_S,
    ProgressCallback,
    probe_targets,
    select_targets,
)
from hyperpod_nccl.probes.runners.base import NodeTarget, Runner
from hyperpod_nccl.probes.runners.local import LocalRunner
from hyperpod_nccl.probes.runners.replay import ReplayRunner
from hyperpod_nccl.probes.runners.ssm import SsmRunner
from hyperpod_nccl.probes.targets import ClusterNodes, list_cluster_nodes
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.probes import ProbeSnapshot

NODE_HEALTH = "node_health"


async def probe_nodes_for_snapshot(
    cluster: str,
    region: str,
    *,
    node: str | None = None,
    sample_nodes: int = DEFAULT_SAMPLE,
    cluster_nodes: ClusterNodes | None = None,
    runner: Runner | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float = NODE_TIMEOUT_S,
    progress: ProgressCallback | None = None,
) -> ProbeSnapshot:
    """Probe a sample of the cluster's nodes (or `node` alone) for `Snapshot.probes`.

    Pass `cluster_nodes` when the nodes were already listed; the runner defaults to SSM.
    Raises `ClusterLookupError` when the cluster cannot be read, `UnknownNode` for a bad --node.
    """
    if cluster_nodes is None:
        cluster_nodes = await anyio.to_thread.run_sync(lambda: list_cluster_nodes(cluster, region))
    selection = select_targets(cluster_nodes.nodes, sample_nodes, node)
    results = await probe_targets(
        runner or SsmRunner(region),
        probe_script(NODE_HEALTH),
        selection.targets,
        concurrency=concurrency,
        timeout_s=timeout_s,
        progress=progress,
    )
    return ProbeSnapshot(
        script=NODE_HEALTH,
        cluster_name=cluster_nodes.cluster_name,
        cluster_id=cluster_nodes.cluster_id,
        region=region,
        orchestrator=cluster_nodes.orchestrator,
        nodes_total=len(cluster_nodes.nodes),
        sampling=selection.note,
        results=results,
    )


async def probe_local(*, timeout_s: float = NODE_TIMEOUT_S, runner: Runner | None = None) -> ProbeSnapshot:
    """Run `node_health` on the host this process runs on."""
    target = NodeTarget(hostname=socket.gethostname())
    results = await probe_targets(
        runner or LocalRunner(), probe_script(NODE_HEALTH), [target], timeout_s=timeout_s
    )
    return ProbeSnapshot(script=NODE_HEALTH, local=True, nodes_total=1, sampling="this host", results=results)


async def probe_recorded(directory: Path, *, timeout_s: float = NODE_TIMEOUT_S) -> ProbeSnapshot:
    """Replay recorded node_health outputs (`<instance-id>.txt` each) through the same path."""
    runner = ReplayRunner.from_directory(directory)
    targets = [NodeTarget(instance_id=path.stem) for path in sorted(directory.glob("*.txt"))]
    results = await probe_targets(runner, probe_script(NODE_HEALTH), targets, timeout_s=timeout_s)
    note = f"recorded outputs from {directory}"
    return ProbeSnapshot(script=NODE_HEALTH, nodes_total=len(targets), sampling=note, results=results)


def probe_report(probes: ProbeSnapshot) -> Report:
    """The probe checks alone, as a Report (what `hyperpod-nccl probe` prints)."""
    snapshot = Snapshot(
        collected_at=datetime.now(UTC).isoformat(timespec="seconds"),
        region=probes.region,
        orchestrator=probes.orchestrator,
        probes=probes,
    )
    findings, unreadable = run_each(PROBE_ANALYZERS, snapshot)
    skipped = unreadable + [
        SkippedInput(source=f"probe {result.target.label}", reason=result.error or result.status)
        for result in probes.results
        if result.status != "ok"
    ]
    return Report.build("diagnose", findings, skipped=skipped)
