"""The job's pod logs through the log triage engine (the same one `hyperpod-nccl triage` runs),
not a substring grep: rank states, the NCCL watchdog, EFA and version lines, root cause.

The triage engine reads files, so each job's logs are written to a private temporary directory
for the length of the run; the findings it returns are re-labelled with the pods they came from.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hyperpod_nccl.models import Evidence, Finding, Report, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, PodLog
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


def _relabel(evidence: Evidence, by_file: dict[str, PodLog]) -> Evidence:
    log = by_file.get(evidence.source)
    if log is None:
        return evidence
    return evidence.model_copy(update={"source": log_source(log), "node": evidence.node or log.node})


def relabel(finding: Finding, by_file: dict[str, PodLog]) -> Finding:
    """A triage finding as a diagnose finding: evidence and pods name the pod logs they came from."""
    evidence = [_relabel(item, by_file) for item in finding.evidence]
    pods = [f"{log.namespace}/{log.pod}" for item in finding.evidence if (log := by_file.get(item.source))]
    return finding.model_copy(
        update={
            "id": f"pod_logs.{finding.id}",
            "evidence": evidence,
            "pods": list(dict.fromkeys(finding.pods + pods)),
        }
    )


# version_skew compares the versions per pod, with or without host prefixes in the lines.
_REPORTED_ELSEWHERE = "_version_skew"


def _root_cause_finding(job: str, report: Report, by_file: dict[str, PodLog]) -> list[Finding]:
    cause = report.root_cause
    if cause is None:
        return []
    chain = " ".join(cause.chain)
    for name, log in by_file.items():
        chain = chain.replace(name, log_source(log))
    return [
        Finding(
            id="pod_logs.root_cause",
            status=Status.INFO,
            title=f"Pod log triage of {job}: {cause.category} ({cause.confidence} confidence)",
            detail=f"{cause.summary} {chain}".strip(),
            ranks=cause.culprit_ranks,
            nodes=cause.culprit_nodes,
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
        ]
        for job, pods in kubernetes.training_jobs().items()
    }


def analyze_pod_logs(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    findings = []
    for job, logs in _jobs_logs(kubernetes).items():
        if not any(log.text.strip() for log in logs):
            continue
        report, by_file = triage_logs(logs)
        kept = [f for f in report.findings if not f.id.endswith(_REPORTED_ELSEWHERE)]
        findings += [relabel(finding, by_file) for finding in kept]
        findings += _root_cause_finding(job, report, by_file)
    return findings
