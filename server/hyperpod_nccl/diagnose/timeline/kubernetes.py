"""Timeline entries from Kubernetes: events, node Ready transitions, kubelet lease renewals and
container starts and terminations.

A node lost mid-run shows first in its lease: the kubelet renews it every 10 s, so the last
renewal is the moment it went silent, to within seconds. The NodeNotReady event and the Ready
condition's transition follow 40-50 s later (the node controller's grace period).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.k8s_common import name_of
from hyperpod_nccl.analyze.k8s_nodes import is_ready, ready_condition
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.models import Category
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, container_statuses, pod_key
from hyperpod_nccl.utc import human_span, parse_utc

# A lease not renewed for this long belongs to a kubelet that stopped: it renews every 10 s and
# the node controller gives up after 40 s (node-monitor-grace-period).
LEASE_SILENCE = timedelta(seconds=40)


@dataclass(frozen=True)
class _EventKind:
    kind: str
    abnormal: bool = True
    cause: Category | None = None


_EVENT_KINDS = {
    "NodeNotReady": _EventKind("node.not_ready", cause=Category.INFRASTRUCTURE),
    "NodeReady": _EventKind("node.ready", abnormal=False),
    "Rebooted": _EventKind("node.rebooted", cause=Category.INFRASTRUCTURE),
    "OOMKilling": _EventKind("node.oom", cause=Category.HOST_OOM),
    "SystemOOM": _EventKind("node.oom", cause=Category.HOST_OOM),
    "Evicted": _EventKind("pod.evicted", cause=Category.INFRASTRUCTURE),
    "TaintManagerEviction": _EventKind("pod.taint_eviction"),
    "FailedScheduling": _EventKind("pod.unschedulable"),
    "BackOff": _EventKind("pod.back_off"),
    "FailedMount": _EventKind("pod.failed_mount"),
}


def _event_entry(
    event: dict[str, Any], pods: dict[str, dict[str, Any]], topology: Topology
) -> TimedEvent | None:
    reason = event.get("reason") or ""
    known = _EVENT_KINDS.get(reason)
    if known is None and event.get("type") != "Warning":
        return None  # Scheduled, Pulled, Started...: routine
    known = known or _EventKind("k8s.warning")
    involved = event.get("involvedObject") or {}
    first = (
        parse_utc(event.get("firstTimestamp"))
        or parse_utc(event.get("eventTime"))
        or parse_utc(event.get("lastTimestamp"))
    )
    count = event.get("count") or 1
    again = f" (x{count}, last {event.get('lastTimestamp')})" if count > 1 else ""
    pod = node = None
    if involved.get("kind") == "Node":
        node = involved.get("name")
    elif involved.get("kind") == "Pod":
        pod = f"{involved.get('namespace')}/{involved.get('name')}"
        node = ((pods.get(pod) or {}).get("spec") or {}).get("nodeName") or (event.get("source") or {}).get(
            "host"
        )
    place = topology.pods.get(pod or "")
    return TimedEvent(
        time=first,
        source=f"event {reason}",
        event=f"{reason}: {event.get('message', '')}{again}".strip(),
        kind=known.kind,
        abnormal=known.abnormal,
        node=node,
        instance_id=topology.instance_of(node),
        pod=pod,
        ranks=frozenset(place.ranks) if place else frozenset(),
        cause=known.cause,
    )


def events(kubernetes: KubernetesSnapshot, topology: Topology) -> list[TimedEvent]:
    pods = {pod_key(pod): pod for pod in kubernetes.pods}
    return [entry for event in kubernetes.events if (entry := _event_entry(event, pods, topology))]


def _lease_renewals(kubernetes: KubernetesSnapshot) -> dict[str, datetime]:
    renewals = {}
    for lease in kubernetes.leases:
        renewed = parse_utc((lease.get("spec") or {}).get("renewTime"))
        if renewed:
            renewals[name_of(lease)] = renewed
    return renewals


def _silent_since(
    node: dict[str, Any], renewals: dict[str, datetime], collected: datetime | None, where: dict[str, Any]
) -> TimedEvent | None:
    """When the kubelet of a node that is not Ready went silent: its last lease renewal, else its
    last posted status."""
    name = name_of(node)
    renewed = renewals.get(name)
    if renewed is not None:
        if collected is None or collected - renewed <= LEASE_SILENCE:
            return None
        silent = human_span((collected - renewed).total_seconds())
        text = f"kubelet renewed its node lease for the last time (silent for {silent} at collection)"
        return TimedEvent(
            renewed,
            f"lease kube-node-lease/{name}",
            text,
            "node.silent",
            True,
            **where,
            cause=Category.INFRASTRUCTURE,
        )
    heartbeat = parse_utc(ready_condition(node).get("lastHeartbeatTime"))
    if heartbeat is None:
        return None
    text = "kubelet posted node status for the last time (lastHeartbeatTime; no lease was read)"
    return TimedEvent(
        heartbeat,
        f"node {name} status.conditions[Ready]",
        text,
        "node.silent",
        True,
        **where,
        cause=Category.INFRASTRUCTURE,
    )


def _node_entries(
    node: dict[str, Any],
    renewals: dict[str, datetime],
    collected: datetime | None,
    flapped: set[str],
    topology: Topology,
) -> list[TimedEvent]:
    name = name_of(node)
    ready = ready_condition(node)
    since = parse_utc(ready.get("lastTransitionTime"))
    where: dict[str, Any] = {"node": name, "instance_id": topology.instance_of(name)}
    source = f"node {name} status.conditions[Ready]"
    if is_ready(node):
        flap = since is not None and name in flapped
        return [TimedEvent(since, source, "Ready=True again", "node.ready", **where)] if flap else []
    found = []
    if since is not None:
        why = ": ".join(filter(None, (ready.get("reason"), ready.get("message"))))
        text = f"Ready={ready.get('status')}" + (f" ({why})" if why else "")
        found.append(
            TimedEvent(since, source, text, "node.not_ready", True, **where, cause=Category.INFRASTRUCTURE)
        )
    silent = _silent_since(node, renewals, collected, where)
    return found + ([silent] if silent else [])


def nodes(kubernetes: KubernetesSnapshot, collected_at: str, topology: Topology) -> list[TimedEvent]:
    renewals = _lease_renewals(kubernetes)
    collected = parse_utc(collected_at)
    flapped = {
        (event.get("involvedObject") or {}).get("name", "")
        for event in kubernetes.events
        if event.get("reason") in ("NodeNotReady", "NodeReady", "Rebooted")
    }
    return [
        entry
        for node in kubernetes.nodes
        for entry in _node_entries(node, renewals, collected, flapped, topology)
    ]


def _termination(
    pod: dict[str, Any], status: dict[str, Any], terminated: dict[str, Any], topology: Topology
) -> TimedEvent:
    key, place = pod_key(pod), topology.pods.get(pod_key(pod))
    reason, code = terminated.get("reason") or "", terminated.get("exitCode")
    evicted = pod["status"].get("reason") == "Evicted"
    oom = not evicted and (reason == "OOMKilled" or code == 137)
    ran = f" (started {terminated['startedAt']})" if terminated.get("startedAt") else ""
    return TimedEvent(
        time=parse_utc(terminated.get("finishedAt")),
        source=f"pod {key} status.containerStatuses[{status.get('name')}]",
        event=f"container {status.get('name')} terminated: reason={reason} exitCode={code}{ran}",
        kind="pod.oom_killed" if oom else "container.terminated",
        abnormal=code not in (0, None) or oom,
        node=(pod.get("spec") or {}).get("nodeName"),
        instance_id=place.instance_id
        if place
        else topology.instance_of((pod.get("spec") or {}).get("nodeName")),
        pod=key,
        ranks=frozenset(place.ranks) if place else frozenset(),
        cause=Category.HOST_OOM if oom else None,
    )


def _container_entries(pod: dict[str, Any], status: dict[str, Any], topology: Topology) -> list[TimedEvent]:
    found = []
    for state in ("lastState", "state"):
        terminated = (status.get(state) or {}).get("terminated")
        if terminated and terminated.get("finishedAt"):
            found.append(_termination(pod, status, terminated, topology))
    running = (status.get("state") or {}).get("running") or {}
    restarts = status.get("restartCount", 0)
    place = topology.pods.get(pod_key(pod))
    if running.get("startedAt") and (restarts or place):
        text = f"container {status.get('name')} " + (
            f"restarted (restart {restarts})" if restarts else "started"
        )
        found.append(
            TimedEvent(
                parse_utc(running["startedAt"]),
                f"pod {pod_key(pod)} status.containerStatuses[{status.get('name')}]",
                text,
                "container.restarted" if restarts else "container.started",
                abnormal=bool(restarts),
                node=(pod.get("spec") or {}).get("nodeName"),
                instance_id=place.instance_id if place else None,
                pod=pod_key(pod),
                ranks=frozenset(place.ranks) if place else frozenset(),
            )
        )
    return found


def pods(kubernetes: KubernetesSnapshot, topology: Topology) -> list[TimedEvent]:
    return [
        entry
        for pod in kubernetes.pods
        for status in container_statuses(pod)
        for entry in _container_entries(pod, status, topology)
    ]


def kubernetes_entries(snapshot: Snapshot, topology: Topology) -> list[TimedEvent]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    return [
        *events(kubernetes, topology),
        *nodes(kubernetes, snapshot.collected_at, topology),
        *pods(kubernetes, topology),
    ]
