"""Node readiness and HyperPod health labels.

A NotReady node or one HyperPod has marked for reboot or replacement explains Pending pods,
evictions and ranks that vanish mid-run. It blocks training (P0) when the job's pods are on it.
"""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.analyze.k8s_common import describe_node, event_evidence, instance_id_of, name_of
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import KubeNodeName
from hyperpod_nccl.models import BlastRadius, Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import (
    DEEP_HEALTH_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    NODE_HEALTH_LABEL,
)
from hyperpod_nccl.utc import human_span, parse_utc

_FAULT_LABELS = ("sagemaker.amazonaws.com/fault-type", "sagemaker.amazonaws.com/fault-reason")
# `Unschedulable` means deep health checks are still running: expected on a fresh node.
_FAILED_HEALTH = ("UnschedulablePendingReboot", "UnschedulablePendingReplacement")
GPU_INSTANCE_FAMILIES = ("p3", "p4", "p5", "p6", "g4dn", "g5", "g6")


def ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), {"status": "Unknown"})


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return node["metadata"].get("labels") or {}


def _list_labels_command() -> SuggestedCommand:
    labels = ",".join((NODE_HEALTH_LABEL, DEEP_HEALTH_LABEL, *_FAULT_LABELS))
    return suggest(
        "kubectl get nodes -L",
        labels,
        why="Shows every node's HyperPod health status and the fault HyperPod recorded.",
        permission="nodes: list",
    )


def is_ready(node: dict[str, Any]) -> bool:
    return ready_condition(node).get("status") == "True"


def _not_ready_evidence(node: dict[str, Any], events: list[dict[str, Any]]) -> list[Evidence]:
    """The Ready condition, and the NodeNotReady event that dates when it went."""
    ready = ready_condition(node)
    text = f"Ready={ready.get('status')} reason={ready.get('reason', '')}: {ready.get('message', '')}"
    evidence = [
        Evidence(source=f"node {name_of(node)} status.conditions[Ready]", text=text, node=name_of(node))
    ]
    return evidence + [
        event_evidence(event)
        for event in events
        if event.get("reason") == "NodeNotReady"
        and (event.get("involvedObject") or {}).get("name") == name_of(node)
    ]


def _since(node: dict[str, Any], collected_at: str) -> str:
    """` (since 10:04:45Z, 62 min)`: when the Ready condition last changed, and how long ago."""
    since = parse_utc(ready_condition(node).get("lastTransitionTime"))
    collected = parse_utc(collected_at)
    if since is None:
        return ""
    ago = f", {human_span((collected - since).total_seconds())}" if collected else ""
    return f" ({name_of(node)} since {since:%Y-%m-%dT%H:%M:%SZ}{ago})"


def _not_ready(
    nodes: list[dict[str, Any]], events: list[dict[str, Any]], job_nodes: set[str], collected_at: str
) -> list[Finding]:
    bad = [node for node in nodes if not is_ready(node)]
    if not bad:
        return []
    names = [name_of(node) for node in bad]
    hit = sorted(job_nodes & set(names))
    evidence = [item for node in bad for item in _not_ready_evidence(node, events)]
    return [
        Finding(
            id="k8s.node.not_ready",
            status=Status.FAIL if hit else Status.WARN,
            priority=Priority.P0 if hit else Priority.P1,
            title=f"{len(bad)} node(s) NotReady"
            + (f", {len(hit)} running the job's pods" if hit else "")
            + _since(bad[0], collected_at),
            reference="debugging-guide.md § 16",
            detail="The kubelet stopped reporting: pods on these nodes are lost or will be evicted.",
            nodes=names,
            instance_ids=[i for i in map(instance_id_of, bad) if i],
            evidence=evidence,
            suggested_commands=[describe_node(names[0]), _list_labels_command(), _reboot_command(names[0])],
        )
    ]


def _reboot_command(node: str) -> SuggestedCommand:
    return suggest(
        "kubectl label node",
        value(KubeNodeName, node),
        f"{NODE_HEALTH_LABEL}=UnschedulablePendingReboot --overwrite",
        why="Asks HyperPod to reboot the node (operations.md § 9); its pods are evicted first.",
        blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
        permission="nodes: patch",
    )


def label_disagrees(node: dict[str, Any]) -> bool:
    """Marked for reboot or replacement although its deep health check passed and no fault is recorded."""
    labels = node["metadata"].get("labels") or {}
    return (
        labels.get(NODE_HEALTH_LABEL) in _FAILED_HEALTH
        and labels.get(DEEP_HEALTH_LABEL) == "Passed"
        and not any(key.startswith("sagemaker.amazonaws.com/fault-") for key in labels)
    )


def _health_evidence(node: dict[str, Any]) -> Evidence:
    labels = _labels(node)
    shown = [
        f"{key}={labels[key]}"
        for key in (NODE_HEALTH_LABEL, DEEP_HEALTH_LABEL, *_FAULT_LABELS)
        if key in labels
    ]
    return Evidence(source=f"node {name_of(node)} metadata.labels", text=" ".join(shown), node=name_of(node))


def _health_labels(nodes: list[dict[str, Any]], job_nodes: set[str]) -> list[Finding]:
    # A pending label whose deep health check passed, with no fault recorded, is a disagreement
    # between HyperPod's signals (control_plane.py), not evidence that the node failed a check.
    bad = [
        node
        for node in nodes
        if (_labels(node).get(NODE_HEALTH_LABEL) in _FAILED_HEALTH and not label_disagrees(node))
        or _labels(node).get(DEEP_HEALTH_LABEL) == "Failed"
    ]
    if not bad:
        return []
    names = [name_of(node) for node in bad]
    hit = job_nodes & set(names)
    return [
        Finding(
            id="k8s.node.health_check_failed",
            status=Status.FAIL,
            priority=Priority.P0 if hit else Priority.P1,
            title=f"HyperPod marked {len(bad)} node(s) unhealthy (pending reboot or replacement)",
            reference="operations.md § 6",
            detail="HyperPod's health checks failed on these nodes; pods cannot be scheduled on them.",
            nodes=names,
            instance_ids=[i for i in map(instance_id_of, bad) if i],
            evidence=[_health_evidence(node) for node in bad],
            suggested_commands=[_list_labels_command(), describe_node(names[0])],
        )
    ]


def _gpu_count(node: dict[str, Any], field: str) -> int:
    value = ((node.get("status") or {}).get(field) or {}).get(GPU_RESOURCE, "0")
    return int(value) if str(value).isdigit() else 0


def _gpu_problem(node: dict[str, Any]) -> Evidence | None:
    """GPUs the kubelet holds back (the device plugin marked them unhealthy), or a GPU instance
    type advertising none at all (the NVIDIA device plugin is not running there)."""
    capacity, allocatable = _gpu_count(node, "capacity"), _gpu_count(node, "allocatable")
    instance_type = _labels(node).get(INSTANCE_TYPE_LABEL, "")
    source = f"node {name_of(node)} status"
    if capacity > allocatable:
        text = f"{GPU_RESOURCE}: capacity {capacity}, allocatable {allocatable}"
        return Evidence(source=source, text=text, node=name_of(node))
    if capacity == 0 and instance_type.removeprefix("ml.").startswith(GPU_INSTANCE_FAMILIES):
        text = f"{instance_type} advertises no {GPU_RESOURCE}"
        return Evidence(source=source, text=text, node=name_of(node))
    return None


def _gpus_missing(nodes: list[dict[str, Any]]) -> list[Finding]:
    problems = [(node, evidence) for node in nodes if (evidence := _gpu_problem(node))]
    if not problems:
        return []
    names = [name_of(node) for node, _ in problems]
    return [
        Finding(
            id="k8s.node.gpus_unavailable",
            status=Status.WARN,
            priority=Priority.P1,
            title=f"{len(problems)} node(s) offer fewer GPUs than they have",
            reference="debugging-guide.md § 5",
            detail="The NVIDIA device plugin withholds GPUs it found unhealthy (often after an Xid), "
            "or is not running: pods asking for 8 GPUs stay Pending or land elsewhere.",
            nodes=names,
            instance_ids=[i for node, _ in problems if (i := instance_id_of(node))],
            evidence=[evidence for _, evidence in problems],
            suggested_commands=[describe_node(names[0])],
        )
    ]


def analyze_k8s_nodes(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None or not kubernetes.nodes:
        return []
    job_nodes = {pod["spec"].get("nodeName") for pod in kubernetes.job_pods()} - {None}
    findings = _not_ready(kubernetes.nodes, kubernetes.events, job_nodes, snapshot.collected_at)
    findings += _health_labels(kubernetes.nodes, job_nodes) + _gpus_missing(kubernetes.nodes)
    if findings:
        return findings
    return [
        Finding(
            id="k8s.node.healthy",
            status=Status.PASS,
            title=f"All {len(kubernetes.nodes)} nodes Ready, none marked unhealthy by HyperPod",
        )
    ]
