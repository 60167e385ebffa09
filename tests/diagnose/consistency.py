"""Cross-checks of one report against itself and against the snapshot it came from.

A report whose findings contradict each other or the cluster's current state misleads whoever
reads it: "went NotReady and came back" for a node still NotReady, "can never be scheduled" for
pods that run, a pod's name in `nodes`, a latent setting at P0, a culprit that is also ruled out.
`contradictions` lists every such problem; tests assert it is empty for every planted cluster.
"""

from __future__ import annotations

import re

from hyperpod_nccl.analyze.k8s_nodes import is_ready
from hyperpod_nccl.models import Finding, Priority, Report, Status
from hyperpod_nccl.rankset import expand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import pod_key

_INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,17}$")
_CANNOT_SCHEDULE = re.compile(r"(cannot|can never) be (scheduled|placed)")
_SILENT = re.compile(r"\b(silent|stall|stalled|never logged|missing)\b", re.IGNORECASE)


class _Cluster:
    def __init__(self, snapshot: Snapshot) -> None:
        kubernetes = snapshot.kubernetes
        self.k8s_nodes = {node["metadata"]["name"]: node for node in kubernetes.nodes} if kubernetes else {}
        self.pods = {pod_key(pod): pod for pod in kubernetes.pods} if kubernetes else {}
        self.pod_names = {key.split("/", 1)[1] for key in self.pods}
        self.slurm_nodes = {node.name for node in snapshot.slurm.nodes} if snapshot.slurm else set()
        named = {
            (node.get("spec") or {}).get("providerID", "").rsplit("/", 1)[-1]
            for node in self.k8s_nodes.values()
        }
        listed = {node.instance_id for node in (snapshot.aws.nodes if snapshot.aws else None) or []}
        # HyperPod's instance id names a node only where the cluster gives it no other name.
        self.unnamed_instances = listed - named

    def is_node(self, name: str) -> bool:
        if name in self.pod_names or "/" in name:
            return False
        known = self.k8s_nodes or self.slurm_nodes
        if not known:
            return True  # nothing to compare with (a logs-only run): host names as the logs give them
        return name in self.k8s_nodes or name in self.slurm_nodes or name in self.unnamed_instances


def _node_names(finding: Finding, cluster: _Cluster) -> list[str]:
    bad = [
        f"{finding.id}: `nodes` holds {name!r}, not a node"
        for name in finding.nodes
        if not cluster.is_node(name)
    ]
    bad += [
        f"{finding.id}: evidence from {item.source!r} names node {item.node!r}, not a node"
        for item in finding.evidence
        if item.node and not cluster.is_node(item.node)
    ]
    return bad


def _state_words(finding: Finding, cluster: _Cluster) -> list[str]:
    bad = []
    text = f"{finding.title} {finding.detail}"
    if "came back" in text or "Ready again" in finding.title:
        bad += [
            f"{finding.id}: says {name} came back, but it is not Ready"
            for name in finding.nodes
            if name in cluster.k8s_nodes and not is_ready(cluster.k8s_nodes[name])
        ]
    if finding.id == "k8s.node.not_ready":
        bad += [
            f"{finding.id}: lists {name} as NotReady, but it is Ready"
            for name in finding.nodes
            if name in cluster.k8s_nodes and is_ready(cluster.k8s_nodes[name])
        ]
    if _CANNOT_SCHEDULE.search(text) and "were scheduled" not in text:
        phases = {
            pod: cluster.pods[pod]["status"].get("phase") for pod in finding.pods if pod in cluster.pods
        }
        bad += [
            f"{finding.id}: says {pod} cannot be scheduled, but it is {phase}"
            for pod, phase in phases.items()
            if phase != "Pending"
        ]
    return bad


def _priorities(finding: Finding) -> list[str]:
    if finding.title.startswith("Latent: ") and (finding.status, finding.priority) != (
        Status.WARN,
        Priority.P2,
    ):
        return [f"{finding.id}: latent configuration at {finding.status} {finding.priority}"]
    if finding.title.startswith("Earlier, not this failure: ") and finding.status == Status.FAIL:
        return [f"{finding.id}: set aside as earlier, yet FAIL"]
    return []


def _uncovered(report: Report) -> set[int]:
    coverage = [f for f in report.findings if f.id == "pod_logs.coverage" and f.is_issue]
    return {rank for finding in coverage for rank in finding.ranks}


def _root_cause(report: Report, cluster: _Cluster) -> list[str]:
    cause = report.root_cause
    if cause is None:
        return []
    bad = [
        f"root cause: culprit node {name!r} is not a node"
        for name in cause.culprit_nodes
        if not cluster.is_node(name)
    ]
    bad += [
        f"root cause: {name} is both the culprit and ruled out ({line[:80]}…)"
        for name in cause.culprit_nodes
        for line in cause.ruled_out
        if f"node {name}" in line and "explained by the trigger" not in line
    ]
    latent = {f.id for f in report.findings if f.title.startswith("Latent: ")}
    if (
        cause.category == "config"
        and latent
        and not any(f.status == Status.FAIL for f in report.findings if f.id not in latent)
    ):
        bad.append("root cause: config, yet every configuration blocker is latent")
    return bad


def contradictions(report: Report, snapshot: Snapshot) -> list[str]:
    cluster = _Cluster(snapshot)
    uncovered = _uncovered(report)
    problems = []
    for finding in report.findings:
        problems += _node_names(finding, cluster) + _state_words(finding, cluster) + _priorities(finding)
        if (
            finding.id != "pod_logs.coverage"
            and _SILENT.search(finding.title)
            and set(finding.ranks) & uncovered
        ):
            problems.append(f"{finding.id}: calls ranks no log covers silent or missing: {finding.title}")
    for group in report.rank_states:
        if set(expand(group.ranks)) & uncovered and _SILENT.search(group.state):
            problems.append(f"rank states: {group.ranks} called {group.state!r} though no log covers them")
    return problems + _root_cause(report, cluster)
