"""The HyperPod cluster itself: its status, NodeRecovery, and every node by status and group.

A node HyperPod reports as Failure is lost to the job that ran on it; one still Pending or in
deep health checks is not yet usable. The counts cover every listed node, so a 2,000-node cluster
with two bad nodes names exactly those two.
"""

from __future__ import annotations

from collections import Counter

from hyperpod_nccl.guard.commands import Word, hyperpod_flags, suggest, value
from hyperpod_nccl.guard.validate import InstanceId
from hyperpod_nccl.models import BlastRadius, Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import ClusterNode, HyperPodCluster

_DESCRIBE = "sagemaker:DescribeCluster"
_LIST_NODES = "sagemaker:ListClusterNodes"
_TRANSITIONAL = {"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"}
_LOST = ("Failure", "NotFound")
_NOT_YET_USABLE = ("Pending", "ShuttingDown", "SystemUpdating", "DeepHealthCheckInProgress")
_MAX_EVIDENCE = 20


def _cluster_flag(snapshot: Snapshot) -> tuple[Word, ...]:
    cluster = snapshot.aws.hyperpod if snapshot.aws else None
    return hyperpod_flags(cluster.name if cluster else None, snapshot.region)


def _status(cluster: HyperPodCluster) -> Finding:
    evidence = [Evidence(source=_DESCRIBE, text=f"ClusterStatus={cluster.status} ({cluster.arn})")]
    if cluster.failure_message:
        evidence.append(Evidence(source=_DESCRIBE, text=f"FailureMessage={cluster.failure_message}"))
    if cluster.status == "InService":
        return Finding(
            id="hyperpod.cluster.status",
            status=Status.PASS,
            title=f"Cluster {cluster.name} is InService ({cluster.orchestrator})",
            evidence=evidence,
        )
    failed = cluster.status == "Failed" or cluster.status not in _TRANSITIONAL
    return Finding(
        id="hyperpod.cluster.status",
        status=Status.FAIL if failed else Status.WARN,
        priority=Priority.P0 if failed else Priority.P1,
        title=f"Cluster {cluster.name} is {cluster.status}, not InService",
        reference="operations.md § 6",
        detail="Nodes may be added, replaced or removed while the cluster is not InService.",
        evidence=evidence,
    )


def _node_recovery(cluster: HyperPodCluster, flags: tuple[Word, ...]) -> Finding:
    evidence = [Evidence(source=_DESCRIBE, text=f"NodeRecovery={cluster.node_recovery or '(not set)'}")]
    if cluster.node_recovery == "Automatic":
        return Finding(
            id="hyperpod.cluster.node_recovery",
            status=Status.PASS,
            title="NodeRecovery is Automatic: HyperPod replaces nodes that fail health checks",
            evidence=evidence,
        )
    fix = suggest(
        "aws sagemaker update-cluster",
        *flags,
        "--node-recovery Automatic",
        why="Lets HyperPod reboot or replace nodes its health checks find faulty.",
        blast_radius=BlastRadius.CHANGES_CONFIG,
        permission="sagemaker:UpdateCluster",
    )
    return Finding(
        id="hyperpod.cluster.node_recovery",
        status=Status.WARN,
        priority=Priority.P2,
        title="NodeRecovery is not Automatic: faulty nodes stay in the cluster until someone acts",
        reference="operations.md § 6",
        evidence=evidence,
        suggested_commands=[fix],
    )


def _node_counts(nodes: list[ClusterNode], complete: bool) -> Finding:
    by_status = Counter(node.status for node in nodes)
    by_group: dict[str, Counter[str]] = {}
    for node in nodes:
        by_group.setdefault(node.instance_group, Counter())[node.status] += 1
    groups = "; ".join(
        f"{group}: " + ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
        for group, counts in sorted(by_group.items())
    )
    statuses = ", ".join(f"{status} {count}" for status, count in sorted(by_status.items()))
    scope = "every page" if complete else "PARTIAL: the listing stopped early"
    return Finding(
        id="hyperpod.nodes.summary",
        status=Status.INFO,
        title=f"{len(nodes)} nodes listed ({scope}): {statuses or 'none'}",
        detail=f"By instance group: {groups}" if groups else "",
        evidence=[Evidence(source=_LIST_NODES, text=f"{len(nodes)} ClusterNodeSummaries")],
    )


def _node_evidence(nodes: list[ClusterNode]) -> list[Evidence]:
    return [
        Evidence(
            source=_LIST_NODES,
            text=f"{node.instance_id} ({node.instance_group}) InstanceStatus={node.status}"
            + (f": {node.message}" if node.message else ""),
            instance_id=node.instance_id,
        )
        for node in nodes[:_MAX_EVIDENCE]
    ]


def _lost_nodes(nodes: list[ClusterNode], flags: tuple[Word, ...]) -> Finding | None:
    lost = [node for node in nodes if node.status in _LOST]
    if not lost:
        return None
    ids = [node.instance_id for node in lost]
    first = ids[0]
    return Finding(
        id="hyperpod.nodes.failed",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"{len(lost)} node(s) in Failure: a job scheduled on them has lost ranks",
        reference="operations.md § 6",
        detail="Investigate first, then reboot before replacing (operations.md § 9): replacement destroys "
        "the node's volumes.",
        instance_ids=ids,
        evidence=_node_evidence(lost),
        suggested_commands=[
            suggest(
                "aws sagemaker describe-cluster-node",
                *flags,
                "--node-id",
                value(InstanceId, first),
                why="Shows why HyperPod marked the node failed.",
                permission="sagemaker:DescribeClusterNode",
            ),
            suggest(
                "aws sagemaker batch-reboot-cluster-nodes",
                *flags,
                "--node-ids",
                *(value(InstanceId, instance) for instance in ids),
                why="Rung 3: reboot the failed nodes once their logs are saved.",
                blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
                permission="sagemaker:BatchRebootClusterNodes",
            ),
        ],
    )


def _unavailable_nodes(nodes: list[ClusterNode]) -> Finding | None:
    waiting = [node for node in nodes if node.status in _NOT_YET_USABLE]
    if not waiting:
        return None
    return Finding(
        id="hyperpod.nodes.not_ready",
        status=Status.WARN,
        priority=Priority.P2,
        title=f"{len(waiting)} node(s) not yet usable for training "
        f"({', '.join(sorted({node.status for node in waiting}))})",
        reference="operations.md § 6",
        instance_ids=[node.instance_id for node in waiting],
        evidence=_node_evidence(waiting),
    )


def analyze_cluster_status(snapshot: Snapshot) -> list[Finding]:
    aws = snapshot.aws
    if aws is None:
        return []
    flags = _cluster_flag(snapshot)
    findings: list[Finding] = []
    if aws.hyperpod is not None:
        findings += [_status(aws.hyperpod), _node_recovery(aws.hyperpod, flags)]
    if aws.nodes is not None:
        findings.append(_node_counts(aws.nodes, aws.nodes_complete))
        findings += [f for f in (_lost_nodes(aws.nodes, flags), _unavailable_nodes(aws.nodes)) if f]
    return findings
