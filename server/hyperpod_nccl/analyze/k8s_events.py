"""Kubernetes events that explain lost or stuck ranks: Evicted, NodeNotReady, TaintManagerEviction
and FailedMount.

Events keep what object state no longer shows: an evicted pod that was deleted, a node that went
NotReady and is Ready again (or was replaced; the title says which, from the nodes' current
state). An eviction already visible on a pod object is left to the pods analyzer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hyperpod_nccl.analyze.k8s_common import describe_node, event_evidence, name_of, pod_events
from hyperpod_nccl.analyze.k8s_nodes import is_ready
from hyperpod_nccl.models import Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, pod_key


@dataclass(frozen=True)
class EventKind:
    reason: str
    id: str
    title: str  # formatted with {n}, the number of objects
    reference: str
    detail: str
    status: Status = Status.FAIL
    priority: Priority = Priority.P1


EVENT_KINDS = (
    EventKind(
        "Evicted",
        "k8s.event.evicted",
        "{n} pod(s) evicted by the kubelet",
        "debugging-guide.md § 9",
        "The node ran short of memory or disk and the kubelet killed the pod; its rank left the job.",
    ),
    EventKind(
        "TaintManagerEviction",
        "k8s.event.taint_eviction",
        "{n} pod(s) marked for deletion because their node became unreachable",
        "debugging-guide.md § 16",
        "The taint manager deletes pods from a NotReady node once their toleration runs out.",
    ),
    EventKind(
        "NodeNotReady",
        "k8s.event.node_not_ready",
        "{n} node(s) went NotReady earlier",
        "debugging-guide.md § 16",
        "The node stopped reporting for a while: ranks on it may have vanished mid-collective.",
        status=Status.WARN,
    ),
    EventKind(
        "FailedMount",
        "k8s.event.failed_mount",
        "{n} pod(s) cannot mount a volume",
        "debugging-guide.md § 9",
        "The pod stays in ContainerCreating until the volume mounts (FSx, EBS, a Secret or ConfigMap).",
        priority=Priority.P0,
    ),
)


def _target(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject") or {}
    if involved.get("kind") == "Node":
        return involved.get("name", "")
    return f"{involved.get('namespace', '')}/{involved.get('name', '')}"


def _already_reported(kubernetes: KubernetesSnapshot) -> set[str]:
    """Evicted pods still present as objects, and nodes still NotReady: the pods and nodes
    analyzers report those from their current state, with these events as evidence."""
    evicted = {pod_key(pod) for pod in kubernetes.pods if pod["status"].get("reason") == "Evicted"}
    return evicted | {name_of(node) for node in kubernetes.nodes if not is_ready(node)}


def _commands(kind: EventKind, event: dict[str, Any]) -> list[SuggestedCommand]:
    involved = event.get("involvedObject") or {}
    if involved.get("kind") == "Node":
        return [describe_node(involved.get("name", ""))]
    return [pod_events(involved.get("namespace", "default"), involved.get("name", ""))]


def _node_states(targets: list[str], kubernetes: KubernetesSnapshot) -> str:
    """What became of nodes that went NotReady (those still NotReady are reported as such by the
    nodes analyzer): Ready again, no longer listed, or not known when nodes were not read."""
    listed = {name_of(node) for node in kubernetes.nodes}
    counts = {
        "Ready again": sum(1 for t in targets if t in listed),
        "no longer listed (replaced or removed)": sum(
            1 for t in targets if kubernetes.nodes and t not in listed
        ),
        "current state not read": len(targets) if not kubernetes.nodes else 0,
    }
    states = [f"{count} {state}" for state, count in counts.items() if count]
    if len(states) == 1:
        return f": {states[0].split(' ', 1)[1]}"
    return ": " + ", ".join(states)


def _finding(kind: EventKind, events: list[dict[str, Any]], kubernetes: KubernetesSnapshot) -> Finding:
    targets = list(dict.fromkeys(_target(event) for event in events))
    is_node = kind.reason == "NodeNotReady"
    hosts = {(event.get("source") or {}).get("host") for event in events} - {None, ""}
    states = _node_states(targets, kubernetes) if is_node else ""
    # A flap the node recovered from is history: it matters only if it lines up with a failure.
    recovered = is_node and states == ": Ready again"
    return Finding(
        id=kind.id,
        status=kind.status,
        priority=Priority.P2 if recovered else kind.priority,
        title=kind.title.format(n=len(targets)) + states,
        reference=kind.reference,
        detail=kind.detail,
        pods=[] if is_node else targets,
        nodes=targets if is_node else sorted(str(host) for host in hosts),
        evidence=[event_evidence(event) for event in events],
        suggested_commands=_commands(kind, events[0]),
    )


def analyze_k8s_events(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    skip = _already_reported(kubernetes)
    findings = []
    for kind in EVENT_KINDS:
        events = [
            event
            for event in kubernetes.events
            if event.get("reason") == kind.reason
            and not (kind.reason in ("Evicted", "NodeNotReady") and _target(event) in skip)
            # the node controller also posts NodeNotReady on each pod of the node: the node's own
            # event says it once
            and not (
                kind.reason == "NodeNotReady" and (event.get("involvedObject") or {}).get("kind") != "Node"
            )
        ]
        if events:
            events.sort(key=lambda event: event.get("lastTimestamp") or event.get("eventTime") or "")
            findings.append(_finding(kind, events, kubernetes))
    return findings
