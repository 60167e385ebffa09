"""The facts a cluster diagnostic's commands are built from: the cluster, region and orchestrator
the snapshot holds, and each finding's own nodes, instances and pods."""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_nccl.models import Finding
from hyperpod_nccl.next_steps.facts import Facts, Quoted
from hyperpod_nccl.snapshot import Snapshot


def cluster_facts(snapshot: Snapshot) -> Callable[[Finding], Facts]:
    hyperpod = snapshot.aws.hyperpod if snapshot.aws else None
    orchestrator = snapshot.orchestrator or (hyperpod.orchestrator if hyperpod else None)

    def facts_of(finding: Finding) -> Facts:
        instances = dict(zip(finding.nodes, finding.instance_ids, strict=False))
        if not finding.nodes and len(finding.instance_ids) == 1:
            instances = {"": finding.instance_ids[0]}
        return Facts(
            slurm=orchestrator == "slurm",
            kubernetes=orchestrator == "eks",
            job_id=snapshot.job if orchestrator == "slurm" else None,
            cluster=hyperpod.name if hyperpod else None,
            region=snapshot.region,
            nodes=tuple(finding.nodes),
            ranks=tuple(finding.ranks),
            instance_ids=instances,
            pods=tuple(tuple(pod.split("/", 1)) for pod in finding.pods if "/" in pod),  # type: ignore[misc]
            quoted=tuple(Quoted(e.source, e.line) for e in finding.evidence if e.line is not None),
        )

    return facts_of
