"""The job's pod logs through the log triage engine (the same one `hyperpod-nccl triage` runs),
not a substring grep: rank states, the NCCL watchdog, EFA and version lines, root cause.

The triage engine reads files, so each job's logs are written to a private temporary directory
for the length of the run; the findings it returns are re-labelled with the pods they came from.
Once the logs date the failure, only the container instances that ran at that moment are
triaged (log_coverage.py says why), and the ranks no log covers are reported as such.

`triage_pod_logs` runs once per diagnostic: its result feeds these findings, the cluster
timeline and the choice of the trigger.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from hyperpod_nccl.analyze.job_topology import Topology, build_topology
from hyperpod_nccl.analyze.log_coverage import (
    LogCoverage,
    coverage_finding,
    covering_logs,
    log_coverage,
    uncovered_ranks,
)
from hyperpod_nccl.analyze.triage_reading import absent_ranks, failure_moment, waiting_sentence
from hyperpod_nccl.models import Evidence, Finding, Report, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, PodLog, pod_key
from hyperpod_nccl.triage.engine import run_triage


def log_file_name(log: PodLog) -> str:
    return f"{log.pod}.{log.container}{'.previous' if log.previous else ''}.log"


def log_source(log: PodLog) -> str:
    """How evidence names a pod log: the API object it was read from."""
    previous = ", previous" if log.previous else ""
    return f"pod {log.namespace}/{log.pod} log ({log.container}{previous})"


def triage_logs(logs: list[PodLog]) -> tuple[Report, dict[str, PodLog]]:
    """Run the triage engine over the logs; also return which file name is which pod log."""
    by_file = {log_file_name(log): log for log in logs if log.text.strip()}
    with tempfile.TemporaryDirectory(prefix="hyperpod-nccl-pod-logs-") as directory:
        root = Path(directory)
        for name, log in by_file.items():
            (root / name).write_text(log.text, encoding="utf-8")
        report = run_triage([root])
    return report, by_file


def _relabel(evidence: Evidence, by_file: dict[str, PodLog], topology: Topology | None) -> Evidence:
    log = by_file.get(evidence.source)
    if log is None:
        return evidence
    # In a pod the host name a log line carries is the pod's name: the node is the pod's node.
    node = log.node or (topology.resolve_host(evidence.node)[0] if topology else None) or evidence.node
    instance = evidence.instance_id or (topology.instance_of(node) if topology else None)
    return evidence.model_copy(update={"source": log_source(log), "node": node, "instance_id": instance})


def _hosts_as_nodes(hosts: list[str], topology: Topology | None) -> tuple[list[str], list[str]]:
    """Host names from log lines as (nodes, pods): a pod's name becomes the pod and its node."""
    nodes, pods = [], []
    for host in hosts:
        node, pod = topology.resolve_host(host) if topology else (host, None)
        if pod:
            pods.append(pod)
        if node:
            nodes.append(node)
        elif not pod:
            nodes.append(host)
    return list(dict.fromkeys(nodes)), pods


def relabel(finding: Finding, by_file: dict[str, PodLog], topology: Topology | None = None) -> Finding:
    """A triage finding as a diagnose finding: evidence and pods name the pod logs they came from,
    and `nodes` holds nodes, never the pod names the log lines carry as host names."""
    evidence = [_relabel(item, by_file, topology) for item in finding.evidence]
    pods = [f"{log.namespace}/{log.pod}" for item in finding.evidence if (log := by_file.get(item.source))]
    nodes, host_pods = _hosts_as_nodes(finding.nodes, topology)
    return finding.model_copy(
        update={
            "id": f"pod_logs.{finding.id}",
            "evidence": evidence,
            "nodes": nodes,
            "pods": list(dict.fromkeys(finding.pods + pods + host_pods)),
        }
    )


# version_skew compares the versions per pod, with or without host prefixes in the lines.
_REPORTED_ELSEWHERE = "_version_skew"
_MISSING_RANKS = "triage.input.missing_ranks"


@dataclass
class JobLogs:
    """One training job's pod logs as the triage read them."""

    job: str
    report: Report
    by_file: dict[str, PodLog]
    coverage: LogCoverage | None


def _root_cause_finding(job_logs: JobLogs, topology: Topology) -> list[Finding]:
    cause = job_logs.report.root_cause
    if cause is None:
        return []
    chain = " ".join(cause.chain)
    for name, log in job_logs.by_file.items():
        chain = chain.replace(name, log_source(log))
    nodes, pods = _hosts_as_nodes(cause.culprit_nodes, topology)
    return [
        Finding(
            id="pod_logs.root_cause",
            status=Status.INFO,
            title=f"Pod log triage of {job_logs.job}: {cause.category} ({cause.confidence} confidence)",
            detail=f"{cause.summary} {chain}".strip(),
            ranks=cause.culprit_ranks,
            nodes=nodes,
            pods=pods,
        )
    ]


def _jobs_logs(kubernetes: KubernetesSnapshot) -> dict[str, list[PodLog]]:
    logs_by_pod: dict[tuple[str, str], list[PodLog]] = {}
    for log in kubernetes.pod_logs:
        logs_by_pod.setdefault((log.namespace, log.pod), []).append(log)
    return {
        job: [
            log
            for pod in pods
            for log in logs_by_pod.get((pod["metadata"]["namespace"], pod["metadata"]["name"]), [])
            if log.text.strip()
        ]
        for job, pods in kubernetes.training_jobs().items()
    }


def _triage_job(job: str, logs: list[PodLog], snapshot: Snapshot, topology: Topology) -> JobLogs:
    kubernetes = snapshot.kubernetes
    assert kubernetes is not None
    report, by_file = triage_logs(logs)
    moment = failure_moment(report)
    if moment is None:
        return JobLogs(job, report, by_file, None)
    pods = {pod_key(pod): pod for pod in kubernetes.pods}
    covering = covering_logs(logs, pods, moment)
    if covering and len(covering) < len(logs):
        report, by_file = triage_logs(covering)
    job_pods = kubernetes.training_jobs()[job]
    return JobLogs(
        job, report, by_file, log_coverage(job, job_pods, logs, covering, moment, snapshot, topology)
    )


def triage_pod_logs(snapshot: Snapshot, topology: Topology | None = None) -> list[JobLogs]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    topology = topology or build_topology(snapshot)
    return [
        _triage_job(job, logs, snapshot, topology) for job, logs in _jobs_logs(kubernetes).items() if logs
    ]


def _said_by_coverage(finding: Finding, job_logs: JobLogs) -> bool:
    """The triage's "logs of N ranks are missing" when the coverage finding names those ranks and
    why (lost with their node, restarted since): the triage could not know, the coverage does."""
    coverage = job_logs.coverage
    if coverage is None or not finding.id.endswith(_MISSING_RANKS):
        return False
    absent = absent_ranks(job_logs.report)
    return bool(absent) and absent <= uncovered_ranks(coverage)


def pod_log_findings(triaged: list[JobLogs], topology: Topology) -> list[Finding]:
    findings = []
    for job_logs in triaged:
        relabelled = [
            relabel(f, job_logs.by_file, topology)
            for f in job_logs.report.findings
            if not f.id.endswith(_REPORTED_ELSEWHERE)
        ]
        said = [f for f in relabelled if _said_by_coverage(f, job_logs)]
        findings += [f for f in relabelled if f not in said]
        findings += _root_cause_finding(job_logs, topology)
        if job_logs.coverage is not None:
            coverage = coverage_finding(job_logs.coverage, waiting_sentence(job_logs.report))
            # the waiting ranks' watchdog lines the triage gave as evidence stay with the report
            witnesses = [item for f in said for item in f.evidence]
            findings.append(coverage.model_copy(update={"evidence": [*coverage.evidence, *witnesses]}))
    return findings


def analyze_pod_logs(snapshot: Snapshot) -> list[Finding]:
    topology = build_topology(snapshot)
    return pod_log_findings(triage_pod_logs(snapshot, topology), topology)
