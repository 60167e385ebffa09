"""Active or latent: a configuration blocker on a job that demonstrably ran.

A missing security-group self-reference, a NetworkPolicy that drops the job's traffic, a
MASTER_ADDR that names nothing: each would stop a job from ever forming its process group. Found
on a job that completed collectives or ran for hours, it did not cause this failure. Security
groups are stateful and connections already open survive a rule change; a pod's spec never
changes after it starts. So the blocker is latent: it will stop the next start (a restart after
this failure, a new job), and it is reported as such, P2, with when it was created or changed
where the snapshot knows, and the read-only command that finds out where it does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hyperpod_nccl.analyze.pod_logs import JobLogs
from hyperpod_nccl.guard.commands import joined, suggest, value
from hyperpod_nccl.guard.validate import KubeKind, KubeObjectName, Namespace, Region, SecurityGroupId
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import container_statuses, pod_key
from hyperpod_nccl.utc import human_span, parse_utc

# A job whose containers ran this long got past process-group formation and its first
# collectives: NCCL's own timeouts would have ended it well before.
LATENT_RUN = timedelta(hours=1)

# Findings that mean "this job could never form its process group or exchange NCCL traffic".
STARTUP_BLOCKERS = (
    "aws.security_group.self_reference_missing",
    "k8s.network_policy.blocks_job",
    "k8s.master_addr.",
    "k8s.shm.",
    "k8s.efa.",
    "nccl.env.",
)


@dataclass(frozen=True)
class JobActivity:
    """What shows that a job ran: NCCL work completed, how long its containers ran, restarts."""

    job: str
    collectives_completed: int = 0
    longest_run: timedelta = timedelta(0)
    restarts: int = 0
    started: datetime | None = None

    @property
    def ran(self) -> bool:
        return self.collectives_completed > 0 or self.longest_run >= LATENT_RUN

    def describe(self) -> str:
        parts = []
        if self.collectives_completed:
            parts.append(f"completed {self.collectives_completed:,} NCCL collectives")
        if self.longest_run:
            parts.append(f"its containers ran up to {human_span(self.longest_run.total_seconds())}")
        if self.restarts:
            parts.append(f"{self.restarts} container restart(s)")
        return ", ".join(parts)


def _runs(pod: dict[str, Any], collected: datetime | None) -> list[tuple[datetime, timedelta]]:
    runs = []
    for status in container_statuses(pod):
        state, last = status.get("state") or {}, (status.get("lastState") or {}).get("terminated") or {}
        for instance in (state.get("running"), state.get("terminated"), last):
            start = parse_utc((instance or {}).get("startedAt"))
            end = parse_utc((instance or {}).get("finishedAt")) or (
                collected if instance is state.get("running") else None
            )
            if start and end:
                runs.append((start, end - start))
    return runs


def job_activity(snapshot: Snapshot, triaged: list[JobLogs]) -> dict[str, JobActivity]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return {}
    collected = parse_utc(snapshot.collected_at)
    completed = {
        job_logs.job: max((g.last_completed or 0 for g in job_logs.report.rank_states), default=0)
        for job_logs in triaged
    }
    activity = {}
    for job, pods in kubernetes.training_jobs().items():
        runs = [run for pod in pods for run in _runs(pod, collected)]
        activity[job] = JobActivity(
            job=job,
            collectives_completed=completed.get(job, 0),
            longest_run=max((length for _, length in runs), default=timedelta(0)),
            restarts=sum(s.get("restartCount", 0) for pod in pods for s in container_statuses(pod)),
            started=min((start for start, _ in runs), default=None),
        )
    return activity


def _jobs_of(finding: Finding, snapshot: Snapshot) -> set[str]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return set()
    return {
        job
        for job, pods in kubernetes.training_jobs().items()
        if {pod_key(p) for p in pods} & set(finding.pods)
    }


def _history(finding: Finding, snapshot: Snapshot) -> tuple[list[Evidence], list[SuggestedCommand]]:
    """When the configuration was created or changed, as far as the snapshot knows, and the
    read-only command that tells the rest."""
    if finding.id.startswith("aws.security_group."):
        group = next((word for word in finding.title.split() if word.startswith("sg-")), None)
        command = suggest(
            "aws cloudtrail lookup-events --region",
            value(Region, snapshot.region),
            "--lookup-attributes",
            joined("AttributeKey=ResourceName,AttributeValue=", value(SecurityGroupId, group)),
            "--query",
            "Events[].[EventTime,EventName,Username]",
            "--output table",
            why="Lists who changed the security group's rules and when (CloudTrail keeps 90 days).",
            permission="cloudtrail:LookupEvents",
        )
        return [], [command]
    namespace = finding.pods[0].split("/", 1)[0] if finding.pods else None
    kubernetes = snapshot.kubernetes
    if finding.id == "k8s.network_policy.blocks_job" and kubernetes is not None:
        evidence = [
            Evidence(
                source=f"networkpolicy {namespace}/{p['metadata']['name']} metadata.creationTimestamp",
                text=f"created {p['metadata'].get('creationTimestamp', '(unknown)')}",
            )
            for p in kubernetes.network_policies
            if p["metadata"].get("namespace") == namespace
        ]
        command = suggest(
            "kubectl get networkpolicy -n",
            value(Namespace, namespace),
            "--show-managed-fields -o",
            "custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp,"
            "CHANGED:.metadata.managedFields[*].time",
            why="Each policy's creation time and the times it was last changed (managedFields).",
            permission="networkpolicies: list",
        )
        return evidence, [command]
    return _owner_history(finding, snapshot)


def _owner_history(finding: Finding, snapshot: Snapshot) -> tuple[list[Evidence], list[SuggestedCommand]]:
    kubernetes = snapshot.kubernetes
    pods = {pod_key(p): p for p in kubernetes.pods} if kubernetes else {}
    pod = next((pods[key] for key in finding.pods if key in pods), None)
    if pod is None:
        return [], []
    created = pod["metadata"].get("creationTimestamp")
    evidence = (
        [
            Evidence(
                source=f"pod {pod_key(pod)} metadata.creationTimestamp",
                text=f"created {created}: a pod's spec never changes after it is created",
            )
        ]
        if created
        else []
    )
    owner = next(iter(pod["metadata"].get("ownerReferences") or []), None)
    if owner is None:
        return evidence, []
    command = suggest(
        "kubectl get",
        value(KubeKind, str(owner.get("kind", "")).lower()),
        value(KubeObjectName, owner.get("name")),
        "-n",
        value(Namespace, pod["metadata"].get("namespace")),
        "--show-managed-fields -o",
        "custom-columns=CREATED:.metadata.creationTimestamp,BY:.metadata.managedFields[*].manager,"
        "CHANGED:.metadata.managedFields[*].time",
        why="When the job's spec was created and last changed: an edit only reaches pods created after it.",
        permission=f"{str(owner.get('kind', '')).lower()}s: get",
    )
    return evidence, [command]


def _latent(finding: Finding, activity: JobActivity, snapshot: Snapshot) -> Finding:
    evidence, commands = _history(finding, snapshot)
    ran = Evidence(source=f"job {activity.job} (pod statuses and pod-log triage)", text=activity.describe())
    return finding.model_copy(
        update={
            "status": Status.WARN,
            "priority": Priority.P2,
            "title": f"Latent: {finding.title}",
            "detail": f"It did not stop this run: {activity.job} {activity.describe()} with it in place. "
            "It will stop the next start (a restart after this failure, or a new job); fix it before "
            f"restarting. {finding.detail}".strip(),
            "evidence": [ran, *evidence, *finding.evidence],
            "suggested_commands": [*commands, *finding.suggested_commands],
        }
    )


def _blocker(finding: Finding) -> bool:
    return finding.status == Status.FAIL and any(finding.id.startswith(prefix) for prefix in STARTUP_BLOCKERS)


def mark_latent(
    findings: list[Finding], snapshot: Snapshot, activity: dict[str, JobActivity]
) -> tuple[list[Finding], list[Finding]]:
    """The findings with latent blockers rewritten, and the latent ones on their own."""
    ran = sorted((a for a in activity.values() if a.ran), key=lambda a: (-a.collectives_completed, a.job))
    result, latent = [], []
    for finding in findings:
        jobs = _jobs_of(finding, snapshot)
        evidence = next(
            (activity[job] for job in sorted(jobs) if job in activity and activity[job].ran), None
        )
        if evidence is None and not finding.pods and ran:  # cluster-wide: any job that ran proves it
            evidence = ran[0]
        if _blocker(finding) and evidence is not None:
            finding = _latent(finding, evidence, snapshot)
            latent.append(finding)
        result.append(finding)
    return result, latent
