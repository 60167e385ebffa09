"""The EFA device plugin against the pods that need it.

A pod gets EFA devices only by requesting `vpc.amazonaws.com/efa`, and nodes only advertise that
resource while the EFA device plugin daemonset runs on them. Requests without the plugin leave
pods Pending (`Insufficient vpc.amazonaws.com/efa`); GPU pods on EFA nodes that request none run,
but NCCL has no EFA device and falls back to TCP sockets.
"""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.analyze.k8s_common import name_of, object_evidence, pod_evidence
from hyperpod_nccl.guard.commands import suggest
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    KubernetesSnapshot,
    containers_of,
    pod_key,
    requested,
)

PLUGIN_IMAGE = "aws-efa-k8s-device-plugin"


def efa_plugins(kubernetes: KubernetesSnapshot) -> list[dict[str, Any]]:
    return [
        ds
        for ds in kubernetes.daemonsets
        if "efa" in name_of(ds)
        or any(
            PLUGIN_IMAGE in c.get("image", "") for c in ds["spec"]["template"]["spec"].get("containers") or []
        )
    ]


def efa_requests(pod: dict[str, Any]) -> int:
    return sum(requested(container, EFA_RESOURCE) for container in containers_of(pod))


def _efa_nodes(kubernetes: KubernetesSnapshot) -> list[str]:
    return [
        name_of(node)
        for node in kubernetes.nodes
        if int((node.get("status", {}).get("allocatable") or {}).get(EFA_RESOURCE, "0") or 0) > 0
    ]


def _list_daemonsets() -> SuggestedCommand:
    return suggest(
        "kubectl get daemonset -n kube-system -o wide",
        why="Shows whether the EFA device plugin runs, and on how many nodes it is ready.",
        permission="daemonsets: list",
    )


def _no_plugin_detail(pods: list[dict[str, Any]]) -> str:
    """What the missing plugin means for these pods, as their phases show it: a Pending pod cannot
    be placed; a running one was placed while nodes still advertised EFA devices."""
    pending = sum(1 for pod in pods if pod["status"].get("phase") == "Pending")
    placed = len(pods) - pending
    if not placed:
        return "Without the plugin no node advertises EFA devices, so these pods cannot be scheduled."
    said = f"{placed} of these pods were scheduled while nodes still advertised EFA devices"
    if pending:
        return f"{said}; the {pending} Pending one(s) cannot be placed until the plugin runs again."
    return f"{said}: a pod recreated now (a restart, a replacement) would stay Pending."


def _no_plugin(kubernetes: KubernetesSnapshot, pods: list[dict[str, Any]]) -> Finding:
    names = ", ".join(name_of(ds) for ds in kubernetes.daemonsets) or "none"
    evidence = [
        pod_evidence(pod, "spec.containers[].resources", f"{EFA_RESOURCE}: {efa_requests(pod)}")
        for pod in pods
    ]
    evidence.append(Evidence(source="daemonsets kube-system", text=f"running: {names}"))
    efa_nodes = _efa_nodes(kubernetes)
    evidence.append(
        Evidence(
            source="nodes status.allocatable",
            text=f"{EFA_RESOURCE} on {len(efa_nodes)} of {len(kubernetes.nodes)} nodes",
        )
    )
    return Finding(
        id="k8s.efa.no_device_plugin",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"{len(pods)} pod(s) request {EFA_RESOURCE} but no EFA device plugin runs",
        reference="debugging-guide.md § 6",
        detail=_no_plugin_detail(pods),
        pods=[pod_key(pod) for pod in pods],
        evidence=evidence,
        suggested_commands=[_list_daemonsets()],
    )


def _not_ready(plugins: list[dict[str, Any]]) -> list[Finding]:
    lagging = [
        ds
        for ds in plugins
        if (ds.get("status") or {}).get("numberReady", 0)
        < (ds.get("status") or {}).get("desiredNumberScheduled", 0)
    ]
    if not lagging:
        return []
    return [
        Finding(
            id="k8s.efa.device_plugin_not_ready",
            status=Status.WARN,
            priority=Priority.P1,
            title="The EFA device plugin is not ready on every node it should run on",
            reference="debugging-guide.md § 6",
            detail="Nodes where it is not ready advertise no EFA devices: EFA pods cannot land there.",
            evidence=[object_evidence("daemonset", ds, "status", ds.get("status") or {}) for ds in lagging],
            suggested_commands=[_list_daemonsets()],
        )
    ]


def _not_requested(kubernetes: KubernetesSnapshot) -> list[Finding]:
    efa_nodes = set(_efa_nodes(kubernetes))
    pods = [
        pod
        for pod in kubernetes.job_pods()
        if pod["spec"].get("nodeName") in efa_nodes
        and efa_requests(pod) == 0
        and any(requested(c, GPU_RESOURCE) > 0 for c in containers_of(pod))
    ]
    if not pods:
        return []
    return [
        Finding(
            id="k8s.efa.not_requested",
            status=Status.WARN,
            priority=Priority.P1,
            title=f"{len(pods)} GPU pod(s) on EFA nodes request no {EFA_RESOURCE}",
            reference="debugging-guide.md § 13",
            detail="The pod sees no EFA device, so NCCL sends inter-node traffic over TCP sockets.",
            pods=[pod_key(pod) for pod in pods],
            nodes=sorted({pod["spec"]["nodeName"] for pod in pods}),
            evidence=[pod_evidence(pod, "spec.containers[].resources", f"{EFA_RESOURCE}: 0") for pod in pods],
        )
    ]


def analyze_efa_plugin(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    requesting = [pod for pod in kubernetes.pods if efa_requests(pod) > 0]
    plugins = efa_plugins(kubernetes)
    daemonsets_read = not any(issue.source == "kubernetes daemonsets" for issue in snapshot.collection_issues)
    findings = []
    # Unreadable daemonsets prove nothing, unless no node advertises a single EFA device either.
    if requesting and not plugins and (daemonsets_read or not _efa_nodes(kubernetes)):
        findings.append(_no_plugin(kubernetes, requesting))
    findings += _not_ready(plugins) + _not_requested(kubernetes)
    if requesting and plugins and not findings:
        findings.append(
            Finding(
                id="k8s.efa.device_plugin_ready",
                status=Status.PASS,
                title=f"EFA device plugin ready for the {len(requesting)} pod(s) requesting {EFA_RESOURCE}",
            )
        )
    return findings
