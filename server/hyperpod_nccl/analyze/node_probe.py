"""Probe coverage: which nodes were sampled, and every node the probe could not (fully) read,
so a node that did not answer is never mistaken for a healthy one."""

from __future__ import annotations

from hyperpod_nccl.analyze.node_common import merge_alike
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import ClusterName, InstanceId, Region
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.probes.runners.base import ProbeResult
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.probes import ProbeSnapshot

SSM = "operations.md § 3"


def _rerun(probes: ProbeSnapshot, result: ProbeResult) -> list[SuggestedCommand]:
    if probes.local or result.target.instance_id is None:
        return []
    return [
        suggest(
            "hyperpod-nccl probe --cluster",
            value(ClusterName, probes.cluster_name),
            "--region",
            value(Region, probes.region),
            "--node",
            value(InstanceId, result.target.instance_id),
            why="Probe just this node again once its SSM agent answers.",
            permission="ssm:StartSession",
        )
    ]


_VERDICT = {
    "timeout": ("node.probe.timeout", Priority.P1, "probe timed out (partial output kept)", SSM),
    "unreachable": ("node.probe.unreachable", Priority.P1, "node unreachable over SSM", SSM),
    "access_denied": (
        "node.probe.access_denied",
        Priority.P1,
        "ssm:StartSession denied",
        "operations.md § 2",
    ),
    "partial": ("node.probe.partial", Priority.P2, "probe script did not finish cleanly", SSM),
    "error": ("node.probe.error", Priority.P2, "probe could not run", SSM),
}


def _failed(probes: ProbeSnapshot, result: ProbeResult) -> Finding:
    finding_id, priority, what, reference = _VERDICT[result.status]
    target = result.target
    return Finding(
        id=finding_id,
        status=Status.WARN,
        priority=priority,
        title=f"On-node checks incomplete: {what}",
        reference=reference,
        detail=result.error or "",
        instance_ids=[target.instance_id] if target.instance_id else [],
        nodes=[target.hostname] if target.hostname else [],
        evidence=[Evidence(source=f"probe:{result.script}", text=result.error or result.status,
                           instance_id=target.instance_id, node=target.hostname)],
        suggested_commands=_rerun(probes, result),
    )  # fmt: skip


def _sampling(probes: ProbeSnapshot) -> Finding:
    probed = [r.target.label for r in probes.results]
    total = f" of {probes.nodes_total}" if probes.nodes_total is not None else ""
    return Finding(
        id="node.probe.sampling",
        status=Status.INFO,
        title=f"Probed {len(probed)}{total} node(s): {', '.join(probed[:12])}",
        detail=probes.sampling,
        instance_ids=[r.target.instance_id for r in probes.results if r.target.instance_id],
    )


def analyze_node_probe(snapshot: Snapshot) -> list[Finding]:
    probes = snapshot.probes
    if probes is None:
        return []
    failed = [_failed(probes, r) for r in probes.results if r.status != "ok"]
    return [_sampling(probes), *merge_alike(failed)]
