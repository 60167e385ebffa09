"""Which ranks the pod logs actually cover at the moment the job failed.

Kubernetes keeps two logs per container: the running instance's and the one before it
(`--previous`). A container that restarted after the failure has a current log that starts
after it; one that restarted twice has lost the instance that saw it. A pod on a node that was
lost has no readable log at all: the API server reaches logs through the node's kubelet. Logs
that do not cover the failure are left out of the triage (a restarted rank's fresh log would
read as a rank that never reached the collective), and the report says which ranks no log
covers and why: lost with their node, restarted since, or unreadable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.k8s_common import name_of
from hyperpod_nccl.analyze.k8s_nodes import is_ready
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.kubernetes import PodLog, container_statuses, pod_key
from hyperpod_nccl.utc import parse_utc

Coverage = Literal["covered", "lost", "restarted", "unreadable", "not_read"]
_WHY = {
    "lost": "lost with their node",
    "restarted": "container restarted since (Kubernetes keeps only the last two instances' logs)",
    "unreadable": "log could not be read",
    "not_read": "no log was read",
}
_REFERENCE = "operations.md § 4.1"


@dataclass(frozen=True)
class Span:
    """When one container instance ran; an end of None means it was still running."""

    start: datetime | None
    end: datetime | None

    def covers(self, moment: datetime) -> bool | None:
        """None when the instance's start is unknown."""
        if self.start is None:
            return None
        return self.start <= moment and (self.end is None or moment <= self.end)


def instance_span(pod: dict[str, Any], log: PodLog) -> Span:
    status = next((s for s in container_statuses(pod) if s.get("name") == log.container), {})
    if log.previous:
        last = (status.get("lastState") or {}).get("terminated") or {}
        return Span(parse_utc(last.get("startedAt")), parse_utc(last.get("finishedAt")))
    state = status.get("state") or {}
    current = state.get("running") or state.get("terminated") or {}
    return Span(parse_utc(current.get("startedAt")), parse_utc(current.get("finishedAt")))


def covering_logs(logs: list[PodLog], pods: dict[str, dict[str, Any]], moment: datetime) -> list[PodLog]:
    """The container instances that were running at `moment` (or whose span is unknown)."""
    return [
        log
        for log in logs
        if (pod := pods.get(f"{log.namespace}/{log.pod}")) is None
        or instance_span(pod, log).covers(moment) is not False
    ]


def lost_nodes(snapshot: Snapshot) -> set[str]:
    """Nodes whose kubelet is gone: not Ready, or named by pods but no longer listed."""
    kubernetes = snapshot.kubernetes
    if kubernetes is None or not kubernetes.nodes:
        return set()
    listed = {name_of(node) for node in kubernetes.nodes}
    gone = {
        node
        for pod in kubernetes.pods
        if (node := (pod.get("spec") or {}).get("nodeName")) and node not in listed
    }
    return {name_of(node) for node in kubernetes.nodes if not is_ready(node)} | gone


@dataclass(frozen=True)
class PodCoverage:
    pod: str
    node: str | None
    ranks: tuple[int, ...]
    state: Coverage
    evidence: tuple[Evidence, ...] = ()


@dataclass
class LogCoverage:
    job: str
    moment: datetime
    pods: list[PodCoverage] = field(default_factory=list)

    def ranks(self, state: Coverage) -> set[int]:
        return {rank for pod in self.pods if pod.state == state for rank in pod.ranks}

    def pods_in(self, state: Coverage) -> list[PodCoverage]:
        return [pod for pod in self.pods if pod.state == state]

    @property
    def complete(self) -> bool:
        return all(pod.state == "covered" for pod in self.pods)


def _issue_evidence(pod: str, issues: list[CollectionIssue]) -> tuple[Evidence, ...]:
    return tuple(
        Evidence(source=issue.source, text=f"{issue.kind}: {issue.message}")
        for issue in issues
        if f"pods/log {pod} (" in issue.source
    )


def _pod_state(
    pod: dict[str, Any],
    read: list[PodLog],
    covering: list[PodLog],
    failed: tuple[Evidence, ...],
    lost: set[str],
) -> tuple[Coverage, tuple[Evidence, ...]]:
    node = (pod.get("spec") or {}).get("nodeName")
    if covering:
        return "covered", ()
    if node in lost:
        return "lost", failed
    if failed:
        return "unreadable", failed
    if read:
        starts = [
            f"{log.container}{' (previous)' if log.previous else ''} started {span.start:%Y-%m-%dT%H:%M:%SZ}"
            for log in read
            if (span := instance_span(pod, log)).start
        ]
        source = f"pod {pod_key(pod)} status.containerStatuses"
        return "restarted", (Evidence(source=source, text="; ".join(starts)),) if starts else ()
    return "not_read", ()


def log_coverage(
    job: str,
    job_pods: list[dict[str, Any]],
    read: list[PodLog],
    covering: list[PodLog],
    moment: datetime,
    snapshot: Snapshot,
    topology: Topology,
) -> LogCoverage:
    lost = lost_nodes(snapshot)
    coverage = LogCoverage(job, moment)
    for pod in job_pods:
        key = pod_key(pod)
        mine = [log for log in read if f"{log.namespace}/{log.pod}" == key]
        covered = [log for log in covering if f"{log.namespace}/{log.pod}" == key]
        failed = _issue_evidence(key, snapshot.collection_issues)
        state, evidence = _pod_state(pod, mine, covered, failed, lost)
        place = topology.pods.get(key)
        ranks = place.ranks if place else ()
        coverage.pods.append(
            PodCoverage(key, (pod.get("spec") or {}).get("nodeName"), ranks, state, evidence)
        )
    return coverage


def _pod_list(pods: list[PodCoverage]) -> str:
    shown = [f"{pod.pod}" + (f" on {pod.node}" if pod.node else "") for pod in pods[:4]]
    return ", ".join(shown) + (f" (+{len(pods) - 4} more)" if len(pods) > 4 else "")


def _uncovered_text(coverage: LogCoverage, state: Coverage) -> str:
    pods = coverage.pods_in(state)
    ranks = compress(coverage.ranks(state))
    who = f"ranks {ranks}" if ranks else f"{len(pods)} pod(s)"
    return f"{who} {_WHY[state]} ({_pod_list(pods)})"


def uncovered_ranks(coverage: LogCoverage) -> set[int]:
    return {rank for pod in coverage.pods if pod.state != "covered" for rank in pod.ranks}


def coverage_finding(coverage: LogCoverage, waiting: str = "") -> Finding:
    """`waiting`: what the covered ranks were doing (the triage's stuck collective), to say beside
    the ranks no log covers."""
    moment = f"{coverage.moment:%Y-%m-%dT%H:%M:%SZ}"
    covered = compress(coverage.ranks("covered"))
    if coverage.complete:
        return Finding(
            id="pod_logs.coverage",
            status=Status.INFO,
            title=f"Pod logs of {coverage.job} cover every pod at the failure ({moment})"
            + (f": ranks {covered}" if covered else ""),
        )
    gaps = [
        _uncovered_text(coverage, state)
        for state in ("lost", "restarted", "unreadable", "not_read")
        if coverage.pods_in(state)
    ]
    uncovered = [pod for pod in coverage.pods if pod.state != "covered"]
    return Finding(
        id="pod_logs.coverage",
        status=Status.WARN,
        priority=Priority.P2,
        title=f"No pod log covers the failure ({moment}) for " + "; ".join(gaps),
        reference=_REFERENCE,
        detail=(f"The logs read cover ranks {covered}. " if covered else "")
        + (f"{waiting} " if waiting else "")
        + "Ranks without a covering log are not silent or stuck: their logs are simply not here. "
        "The triage read only the logs of the container instances that ran at the failure.",
        ranks=sorted(rank for pod in uncovered for rank in pod.ranks),
        nodes=sorted({pod.node for pod in uncovered if pod.node}),
        pods=[pod.pod for pod in uncovered],
        evidence=[item for pod in uncovered for item in pod.evidence][:10],
    )
