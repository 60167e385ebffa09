"""Pod lifecycle: Pending with the scheduler's reason, image pulls, failing init containers,
CrashLoopBackOff, OOMKilled / exit 137, restarts, Failed, Evicted and Unknown pods.

Each pod is checked against every problem; pods with the same problem share one finding that
lists them all. A problem on the job's own pods blocks training (P0); elsewhere it is P1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hyperpod_nccl.analyze.k8s_common import (
    delete_pod,
    describe_pod,
    name_of,
    namespace_of,
    node_of,
    pod_events,
    pod_evidence,
    pod_logs,
)
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import KubeKind, KubeObjectName, Namespace
from hyperpod_nccl.models import BlastRadius, Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import container_statuses, pod_key

IMAGE_PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})


@dataclass
class Problem:
    kind: str
    evidence: Evidence
    commands: list[SuggestedCommand] = field(default_factory=list)


@dataclass(frozen=True)
class Kind:
    id: str
    title: str  # formatted with {n}, the number of pods
    reference: str
    detail: str


KINDS = {
    "unschedulable": Kind(
        "k8s.pod.unschedulable",
        "{n} pod(s) Pending: the scheduler cannot place them",
        "debugging-guide.md § 9",
        "FailedScheduling says which resource or constraint no node satisfies.",
    ),
    "image_pull": Kind(
        "k8s.pod.image_pull",
        "{n} pod(s) cannot pull their image",
        "debugging-guide.md § 9",
        "The image tag or registry access is wrong; the container never starts.",
    ),
    "init_failed": Kind(
        "k8s.pod.init_failed",
        "{n} pod(s) stuck on a failing init container",
        "debugging-guide.md § 9",
        "The main container only starts after every init container exits 0.",
    ),
    "oom_killed": Kind(
        "k8s.pod.oom_killed",
        "{n} pod(s) killed for memory (OOMKilled / exit 137)",
        "debugging-guide.md § 4",
        "The container went over its memory limit and was killed; the other ranks then hang or time out.",
    ),
    "crash_loop": Kind(
        "k8s.pod.crash_loop",
        "{n} pod(s) in CrashLoopBackOff",
        "debugging-guide.md § 9",
        "The container keeps exiting; its previous log shows why.",
    ),
    "restarted": Kind(
        "k8s.pod.restarted",
        "{n} pod(s) restarted",
        "debugging-guide.md § 9",
        "A restarted rank rejoins a job whose other ranks may still wait in the old collective.",
    ),
    "evicted": Kind(
        "k8s.pod.evicted",
        "{n} pod(s) Evicted",
        "debugging-guide.md § 9",
        "The kubelet evicted the pod under node resource pressure.",
    ),
    "failed": Kind(
        "k8s.pod.failed",
        "{n} pod(s) Failed",
        "debugging-guide.md § 9",
        "Every container of the pod terminated and at least one failed.",
    ),
    "unknown": Kind(
        "k8s.pod.unknown",
        "{n} pod(s) in phase Unknown",
        "debugging-guide.md § 16",
        "The node stopped reporting the pod's state, usually because the node itself was lost.",
    ),
}


def _terminated(status: dict[str, Any]) -> dict[str, Any]:
    """The most recent termination of a container: the current one, else the last one."""
    return (
        (status.get("state") or {}).get("terminated")
        or (status.get("lastState") or {}).get("terminated")
        or {}
    )


def _termination_text(terminated: dict[str, Any]) -> str:
    parts = [f"reason={terminated.get('reason', '')}", f"exitCode={terminated.get('exitCode')}"]
    if terminated.get("finishedAt"):
        parts.append(f"finishedAt={terminated['finishedAt']}")
    return " ".join(parts)


def _unschedulable(pod: dict[str, Any]) -> list[Problem]:
    if pod["status"].get("phase") != "Pending":
        return []
    for condition in pod["status"].get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            evidence = pod_evidence(pod, "status.conditions[PodScheduled]", condition.get("message", ""))
            return [Problem("unschedulable", evidence, [pod_events(namespace_of(pod), name_of(pod))])]
    return []


def _waiting(pod: dict[str, Any], reasons: frozenset[str], kind: str, *, init: bool = False) -> list[Problem]:
    problems = []
    where = "initContainerStatuses" if init else "containerStatuses"
    for status in container_statuses(pod, init=init):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in reasons:
            text = f"{waiting['reason']}: {waiting.get('message', '')}".strip(": ")
            last = (status.get("lastState") or {}).get("terminated")
            if last:
                text += f" (last terminated {_termination_text(last)})"
            evidence = pod_evidence(pod, f"status.{where}[{status['name']}].state.waiting", text)
            problems.append(Problem(kind, evidence, _inspect(pod, status)))
    return problems


def _inspect(pod: dict[str, Any], status: dict[str, Any]) -> list[SuggestedCommand]:
    commands = [describe_pod(pod)]
    if status.get("restartCount", 0) > 0 or (status.get("lastState") or {}).get("terminated"):
        why = f"The output of the {status['name']} container's last run, which ended the way shown."
        commands.append(pod_logs(pod, status["name"], previous=True, why=why))
    return commands


def _image_pull(pod: dict[str, Any]) -> list[Problem]:
    return _waiting(pod, IMAGE_PULL_REASONS, "image_pull")


def _crash_loop(pod: dict[str, Any]) -> list[Problem]:
    # An OOM-killed container in back-off is reported once, as an OOM.
    return [p for p in _waiting(pod, frozenset({"CrashLoopBackOff"}), "crash_loop") if not _oom_problems(pod)]


def _init_failed(pod: dict[str, Any]) -> list[Problem]:
    problems = _waiting(pod, frozenset({"CrashLoopBackOff", *IMAGE_PULL_REASONS}), "init_failed", init=True)
    if problems:
        return problems
    for status in container_statuses(pod, init=True):
        terminated = _terminated(status)
        if terminated.get("exitCode") not in (None, 0):
            evidence = pod_evidence(
                pod, f"status.initContainerStatuses[{status['name']}]", _termination_text(terminated)
            )
            problems.append(Problem("init_failed", evidence, _inspect(pod, status)))
    return problems


def _oom_problems(pod: dict[str, Any]) -> list[Problem]:
    if pod["status"].get("reason") == "Evicted":  # eviction kills with 137 too; reported as an eviction
        return []
    problems = []
    for status in container_statuses(pod):
        for state in ("state", "lastState"):
            terminated = (status.get(state) or {}).get("terminated") or {}
            if terminated.get("reason") == "OOMKilled" or terminated.get("exitCode") == 137:
                text = f"{_termination_text(terminated)} restartCount={status.get('restartCount', 0)}"
                evidence = pod_evidence(pod, f"status.containerStatuses[{status['name']}].{state}", text)
                problems.append(Problem("oom_killed", evidence, _inspect(pod, status)))
                break
    return problems


def _restarted(pod: dict[str, Any]) -> list[Problem]:
    problems = []
    for status in container_statuses(pod):
        if status.get("restartCount", 0) > 0:
            text = f"restartCount={status['restartCount']}"
            last = (status.get("lastState") or {}).get("terminated")
            if last:
                text += f" last terminated {_termination_text(last)}"
            evidence = pod_evidence(pod, f"status.containerStatuses[{status['name']}]", text)
            problems.append(Problem("restarted", evidence, _inspect(pod, status)))
    return problems


_PHASE_KINDS = {"Failed": "failed", "Unknown": "unknown"}


def _phase(pod: dict[str, Any]) -> list[Problem]:
    status = pod["status"]
    kind = "evicted" if status.get("reason") == "Evicted" else _PHASE_KINDS.get(status.get("phase", ""))
    if kind is None:
        return []
    text = f"phase={status.get('phase')} reason={status.get('reason', '')}: {status.get('message', '')}"
    why = "Its controller recreates it; only once the cause above is fixed."
    return [
        Problem(
            kind, pod_evidence(pod, "status", text.strip(": ")), [describe_pod(pod), delete_pod(pod, why)]
        )
    ]


def _owner_edit(pod: dict[str, Any], what: str) -> list[SuggestedCommand]:
    owners = pod["metadata"].get("ownerReferences") or []
    if not owners:
        return []
    owner = owners[0]
    kind = str(owner.get("kind", "")).lower()
    return [
        suggest(
            "kubectl edit",
            value(KubeKind, kind),
            value(KubeObjectName, owner.get("name")),
            "-n",
            value(Namespace, namespace_of(pod)),
            why=f"Change {what} in the job spec; the job's pods are recreated.",
            blast_radius=BlastRadius.RESTARTS_JOB,
            permission=f"{kind[:64]}s: update",
        )
    ]


_FIXES = {
    "oom_killed": "the container's memory limit (or the per-rank batch / DataLoader workers)",
    "image_pull": "the image reference",
    "init_failed": "what the init container waits for",
}


def pod_problems(pod: dict[str, Any]) -> list[Problem]:
    problems = [
        problem
        for check in (_unschedulable, _image_pull, _init_failed, _oom_problems, _crash_loop, _phase)
        for problem in check(pod)
    ]
    if not any(problem.kind in ("crash_loop", "oom_killed", "evicted") for problem in problems):
        problems += _restarted(pod)
    return problems


def _finding(name: str, entries: list[tuple[dict[str, Any], Problem]], job_pods: set[str]) -> Finding:
    kind = KINDS[name]
    pods = list(dict.fromkeys(pod_key(pod) for pod, _ in entries))
    on_job = any(key in job_pods for key in pods)
    status, priority = (Status.FAIL, Priority.P0 if on_job else Priority.P1)
    if name == "restarted":
        status, priority = Status.WARN, Priority.P1
    first_pod, first = entries[0]
    commands = list(first.commands)
    if name in _FIXES:
        commands += _owner_edit(first_pod, _FIXES[name])
    return Finding(
        id=kind.id,
        status=status,
        priority=priority,
        title=kind.title.format(n=len(pods)),
        reference=kind.reference,
        detail=kind.detail,
        pods=pods,
        nodes=sorted({node for pod, _ in entries if (node := node_of(pod))}),
        evidence=[problem.evidence for _, problem in entries],
        suggested_commands=commands,
    )


def analyze_pods(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None or not kubernetes.pods:
        return []
    grouped: dict[str, list[tuple[dict[str, Any], Problem]]] = {name: [] for name in KINDS}
    for pod in kubernetes.pods:
        for problem in pod_problems(pod):
            grouped[problem.kind].append((pod, problem))
    job_pods = {pod_key(pod) for pod in kubernetes.job_pods()}
    findings = [_finding(name, entries, job_pods) for name, entries in grouped.items() if entries]
    if findings:
        return findings
    return [
        Finding(id="k8s.pod.healthy", status=Status.PASS, title=f"All {len(kubernetes.pods)} pods healthy")
    ]
