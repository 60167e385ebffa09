"""The control plane against the data plane: where HyperPod and Kubernetes disagree.

HyperPod's view of a node (ListClusterNodes status, its health labels, automatic node recovery)
and Kubernetes' view (the node's Ready condition, the kubelet's lease) should tell one story. When
they do not, the user cannot fix it: a node Kubernetes lost an hour ago that HyperPod still lists
Running, recovery set to Automatic that never acts, a node marked for replacement whose deep
health check passed, API servers answering with server errors. These are the findings to take to
AWS Support, and the escalation bundle says so.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from hyperpod_nccl.analyze.cluster_events import is_problem
from hyperpod_nccl.analyze.k8s_common import describe_node, instance_id_of, name_of
from hyperpod_nccl.analyze.k8s_nodes import is_ready, label_disagrees, ready_condition
from hyperpod_nccl.guard.commands import hyperpod_flags, suggest, value
from hyperpod_nccl.guard.validate import InstanceId
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.aws import ClusterNode
from hyperpod_nccl.snapshot.kubernetes import DEEP_HEALTH_LABEL, NODE_HEALTH_LABEL
from hyperpod_nccl.utc import human_span, parse_utc

# HyperPod's automatic recovery reboots or replaces a faulty node; a replacement takes minutes to
# a quarter of an hour. A node NotReady for longer with no reboot or replacement under way is one
# recovery is not acting on.
RECOVERY_WINDOW = timedelta(minutes=30)
_WINDOW_TEXT = human_span(RECOVERY_WINDOW.total_seconds())
_REFERENCE = "operations.md § 6.1"
_LOST = ("Failure", "NotFound")
_SERVER_ERROR = re.compile(
    r"\bHTTP 5\d\d\b|\b(InternalFailure|InternalServerError|ServiceUnavailable|ServiceUnavailableException)\b"
)


def _cluster_words(snapshot: Snapshot) -> tuple[str | None, str | None]:
    cluster = snapshot.aws.hyperpod if snapshot.aws else None
    return (cluster.name if cluster else None), snapshot.region


def _describe_node_command(snapshot: Snapshot, instance_id: str) -> SuggestedCommand:
    return suggest(
        "aws sagemaker describe-cluster-node",
        *hyperpod_flags(*_cluster_words(snapshot)),
        "--node-id",
        value(InstanceId, instance_id),
        why="HyperPod's own view of the instance: status, message and last health-check result.",
        permission="sagemaker:DescribeClusterNode",
    )


def _not_ready_since(node: dict[str, Any], leases: dict[str, datetime]) -> tuple[datetime | None, str]:
    """When the node went silent: its last lease renewal, else the Ready condition's transition."""
    renewed = leases.get(name_of(node))
    if renewed is not None:
        return renewed, "last kubelet lease renewal"
    return parse_utc(ready_condition(node).get("lastTransitionTime")), "Ready condition changed"


def _leases(snapshot: Snapshot) -> dict[str, datetime]:
    kubernetes = snapshot.kubernetes
    found = {}
    for lease in kubernetes.leases if kubernetes else []:
        renewed = parse_utc((lease.get("spec") or {}).get("renewTime"))
        if renewed:
            found[name_of(lease)] = renewed
    return found


def _pairs(snapshot: Snapshot) -> list[tuple[dict[str, Any], ClusterNode]]:
    """Each Kubernetes node with the HyperPod node behind it."""
    listed = {node.instance_id: node for node in (snapshot.aws.nodes if snapshot.aws else None) or []}
    kubernetes = snapshot.kubernetes
    return [
        (node, listed[instance])
        for node in (kubernetes.nodes if kubernetes else [])
        if (instance := instance_id_of(node)) in listed
    ]


def _status_disagreements(snapshot: Snapshot, collected: datetime | None) -> list[Finding]:
    leases = _leases(snapshot)
    running_lost, lost_ready = [], []
    for node, listed in _pairs(snapshot):
        if listed.status == "Running" and not is_ready(node):
            since, how = _not_ready_since(node, leases)
            running_lost.append((node, listed, since, how))
        elif listed.status in _LOST and is_ready(node):
            lost_ready.append((node, listed))
    findings = []
    if running_lost:
        findings.append(_running_but_lost(snapshot, running_lost, collected))
    if lost_ready:
        findings.append(_failed_but_ready(snapshot, lost_ready))
    return findings


def _for(since: datetime | None, collected: datetime | None) -> str:
    return f" for {human_span((collected - since).total_seconds())}" if since and collected else ""


def _running_but_lost(
    snapshot: Snapshot,
    rows: list[tuple[dict[str, Any], ClusterNode, datetime | None, str]],
    collected: datetime | None,
) -> Finding:
    node, listed, since, _ = rows[0]
    evidence = []
    for node_row, listed_row, since_row, how in rows:
        ready = ready_condition(node_row)
        evidence += [
            Evidence(
                source="sagemaker:ListClusterNodes",
                text=f"{listed_row.instance_id} ({listed_row.instance_group}) "
                f"InstanceStatus={listed_row.status}",
                instance_id=listed_row.instance_id,
            ),
            Evidence(
                source=f"node {name_of(node_row)} status.conditions[Ready]",
                text=f"Ready={ready.get('status')} {ready.get('reason', '')}: {ready.get('message', '')}; "
                f"{how} {since_row:%Y-%m-%dT%H:%M:%SZ}"
                if since_row
                else f"Ready={ready.get('status')}",
                node=name_of(node_row),
                instance_id=listed_row.instance_id,
            ),
        ]
    return Finding(
        id="control_plane.node_status_disagrees",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"HyperPod lists {listed.instance_id} Running while Kubernetes has had {name_of(node)} "
        f"NotReady{_for(since, collected)}" + (f" (+{len(rows) - 1} more node(s))" if len(rows) > 1 else ""),
        reference=_REFERENCE,
        detail="The control plane and the node disagree: HyperPod's health checks have not noticed a "
        "node whose kubelet stopped reporting. Take this to AWS Support with the instance id.",
        nodes=[name_of(row[0]) for row in rows],
        instance_ids=[row[1].instance_id for row in rows],
        evidence=evidence,
        suggested_commands=[
            _describe_node_command(snapshot, listed.instance_id),
            describe_node(name_of(node)),
        ],
    )


def _failed_but_ready(snapshot: Snapshot, rows: list[tuple[dict[str, Any], ClusterNode]]) -> Finding:
    node, listed = rows[0]
    return Finding(
        id="control_plane.failed_node_ready",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"HyperPod lists {listed.instance_id} as {listed.status} while Kubernetes reports "
        f"{name_of(node)} Ready" + (f" (+{len(rows) - 1} more node(s))" if len(rows) > 1 else ""),
        reference=_REFERENCE,
        detail="Pods may still be scheduled on a node HyperPod considers failed.",
        nodes=[name_of(n) for n, _ in rows],
        instance_ids=[listed_row.instance_id for _, listed_row in rows],
        evidence=[
            Evidence(
                source="sagemaker:ListClusterNodes",
                text=f"{row.instance_id} InstanceStatus={row.status}: {row.message or ''}".rstrip(": "),
                instance_id=row.instance_id,
            )
            for _, row in rows
        ],
        suggested_commands=[_describe_node_command(snapshot, listed.instance_id)],
    )


def _recovery_under_way(snapshot: Snapshot, instance_id: str, since: datetime) -> bool:
    for event in (snapshot.aws.events if snapshot.aws else None) or []:
        when = parse_utc(event.event_time)
        if event.instance_id == instance_id and when and when >= since and is_problem(event):
            return True
    return False


def _recovery_not_acting(snapshot: Snapshot, collected: datetime | None) -> list[Finding]:
    cluster = snapshot.aws.hyperpod if snapshot.aws else None
    if cluster is None or cluster.node_recovery != "Automatic" or collected is None:
        return []
    leases = _leases(snapshot)
    stuck = []
    for node, listed in _pairs(snapshot):
        since, how = _not_ready_since(node, leases)
        if is_ready(node) or since is None or collected - since < RECOVERY_WINDOW:
            continue
        if listed.status not in _LOST and not _recovery_under_way(snapshot, listed.instance_id, since):
            stuck.append((node, listed, since, how))
    if not stuck:
        return []
    node, listed, since, how = stuck[0]
    return [
        Finding(
            id="control_plane.recovery_not_acting",
            status=Status.FAIL,
            priority=Priority.P1,
            title=f"NodeRecovery is Automatic, yet {name_of(node)} ({listed.instance_id}) has been NotReady"
            f"{_for(since, collected)} with no reboot or replacement under way",
            reference=_REFERENCE,
            detail=f"Automatic recovery is expected to act within {_WINDOW_TEXT}; "
            "no HyperPod event shows a reboot or replacement of this instance since it went silent. "
            "Escalate to AWS Support before replacing the node yourself (replacement destroys its volumes).",
            nodes=[name_of(row[0]) for row in stuck],
            instance_ids=[row[1].instance_id for row in stuck],
            evidence=[
                Evidence(source="sagemaker:DescribeCluster", text="NodeRecovery=Automatic"),
                *(
                    Evidence(
                        source=f"node {name_of(row[0])}",
                        text=f"NotReady since {row[2]:%Y-%m-%dT%H:%M:%SZ} ({row[3]}); "
                        f"HyperPod status {row[1].status}",
                        node=name_of(row[0]),
                        instance_id=row[1].instance_id,
                    )
                    for row in stuck
                ),
            ],
            suggested_commands=[_describe_node_command(snapshot, listed.instance_id)],
        )
    ]


def _label_disagreements(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    nodes = [node for node in (kubernetes.nodes if kubernetes else []) if label_disagrees(node)]
    if not nodes:
        return []
    labels = [node["metadata"].get("labels") or {} for node in nodes]
    return [
        Finding(
            id="control_plane.health_label_disagrees",
            status=Status.WARN,
            priority=Priority.P1,
            title=f"{name_of(nodes[0])} is marked {labels[0][NODE_HEALTH_LABEL]} although its deep health "
            "check passed and no fault is recorded"
            + (f" (+{len(nodes) - 1} more)" if len(nodes) > 1 else ""),
            reference=_REFERENCE,
            detail="The label carries no time and no fault type, so it cannot be placed on the timeline or "
            "tied to this failure. Ask AWS Support which check set it.",
            nodes=[name_of(node) for node in nodes],
            instance_ids=[i for node in nodes if (i := instance_id_of(node))],
            evidence=[
                Evidence(
                    source=f"node {name_of(node)} metadata.labels",
                    text=" ".join(f"{key}={label[key]}" for key in (NODE_HEALTH_LABEL, DEEP_HEALTH_LABEL)),
                    node=name_of(node),
                )
                for node, label in zip(nodes, labels, strict=True)
            ],
            suggested_commands=[describe_node(name_of(nodes[0]))],
        )
    ]


def server_error(issue: CollectionIssue) -> bool:
    return bool(_SERVER_ERROR.search(issue.message))


def _api_errors(snapshot: Snapshot) -> list[Finding]:
    # A pod's log is read through its node's kubelet: a lost node's logs fail with a server error
    # that says the node is gone, not that the control plane is unwell (log_coverage.py).
    errors = [i for i in snapshot.collection_issues if server_error(i) and "pods/log " not in i.source]
    if not errors:
        return []
    return [
        Finding(
            id="control_plane.api_errors",
            status=Status.WARN,
            priority=Priority.P1,
            title=f"The control plane answered {len(errors)} read(s) with a server error",
            reference=_REFERENCE,
            detail="A server error (5xx) on a read is the service's fault, not a permission or a bad "
            "request: the data it held is missing from this report. Rerun; if it persists, escalate.",
            evidence=[Evidence(source=i.source, text=f"{i.kind}: {i.message}") for i in errors[:10]],
        )
    ]


def analyze_control_plane(snapshot: Snapshot) -> list[Finding]:
    collected = parse_utc(snapshot.collected_at)
    return [
        *_status_disagreements(snapshot, collected),
        *_recovery_not_acting(snapshot, collected),
        *_label_disagreements(snapshot),
        *_api_errors(snapshot),
    ]
