"""Slurm jobs: the one asked about (or every running/pending one), their state, reason, nodes and
time limit, and for the asked job its batch script against HyperPod's auto-resume rules."""

from __future__ import annotations

from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.slurm import remediation
from hyperpod_nccl.slurm.batch_script import ScriptIssue, script_issues
from hyperpod_nccl.slurm.states import NodeState
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.slurm import SlurmJob, SlurmSnapshot

_ACTIVE = {
    "RUNNING",
    "PENDING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "SUSPENDED",
    "CONFIGURING",
    "COMPLETING",
}
# Ended states the scheduler caused (debugging-guide § 16), and the memory one (§ 4).
_SCHEDULER_ENDED = {"TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
_NEAR_LIMIT = 0.9
_BROKEN = {"down", "fail", "failing"}
# (check, status, priority, reference) for each batch-script problem.
_SCRIPT_CHECKS = {
    "no_auto_resume": (Status.FAIL, Priority.P1, "operations.md § 7"),
    "auto_resume_not_on_main_step": (Status.FAIL, Priority.P1, "operations.md § 7"),
    "stale_nodelist": (Status.FAIL, Priority.P1, "operations.md § 7"),
    "not_exclusive": (Status.WARN, Priority.P1, "operations.md § 7"),
    "no_srun": (Status.WARN, Priority.P2, "operations.md § 7"),
}


def _evidence(job: SlurmJob) -> Evidence:
    reason, nodes = job.reason or "None", job.node_list or ""
    text = f"JobId={job.job_id} JobState={job.state} Reason={reason} NodeList={nodes}"
    return Evidence(source=job.source, text=text)


def _job_finding(job: SlurmJob, **fields: object) -> Finding:
    return Finding(
        nodes=job.nodes,
        evidence=[_evidence(job)],
        suggested_commands=[remediation.show_job(job.job_id)],
        **fields,
    )


def _reason_finding(job: SlurmJob) -> Finding | None:
    reason = (job.reason or "").lower()
    if "launch failed requeued held" in reason:
        finding = _job_finding(
            job,
            id="slurm.job.launch_failed_held",
            status=Status.FAIL,
            priority=Priority.P0,
            title=f"Job {job.job_id} is held: launch failed, requeued held",
            reference="operations.md § 7",
            detail=(
                "The job failed to launch on a node (often a node fault), was requeued and held; "
                "it will not start until released."
            ),
        )
        finding.suggested_commands.append(remediation.release(job.job_id))
        return finding
    if "reqnodenotavail" in reason or "required for job are down" in reason:
        return _job_finding(
            job,
            id="slurm.job.nodes_unavailable",
            status=Status.FAIL,
            priority=Priority.P1,
            title=f"Job {job.job_id} is pending: nodes it needs are unavailable ({job.reason})",
            reference="operations.md § 7",
            detail="Nodes the job requires are down, drained or reserved; see the node findings for why.",
        )
    return None


def _ended_finding(job: SlurmJob) -> Finding | None:
    state = job.state.split()[0].upper()
    if state == "OUT_OF_MEMORY":
        reference = "debugging-guide.md § 4"
    elif state in _SCHEDULER_ENDED:
        reference = "debugging-guide.md § 16"
    else:
        return None
    return _job_finding(
        job,
        id=f"slurm.job.{state.lower()}",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"Job {job.job_id} ended {state}" + (f" on {job.node_list}" if job.node_list else ""),
        reference=reference,
        detail="The scheduler ended the job; the training logs show what each rank saw at that moment.",
    )


def _time_finding(job: SlurmJob) -> Finding | None:
    if job.state != "RUNNING" or not job.time_limit_s or job.elapsed_s is None:
        return None
    if job.elapsed_s < _NEAR_LIMIT * job.time_limit_s:
        return None
    return _job_finding(
        job,
        id="slurm.job.near_time_limit",
        status=Status.WARN,
        priority=Priority.P2,
        title=f"Job {job.job_id} has used {job.elapsed} of its {job.time_limit} time limit",
        reference="debugging-guide.md § 16",
        detail="Slurm cancels it DUE TO TIME LIMIT at the limit; make sure a checkpoint lands before then.",
    )


def _bad_nodes_finding(job: SlurmJob, slurm: SlurmSnapshot) -> Finding | None:
    states = {n.name: NodeState(n.base, frozenset(n.flags)) for n in slurm.nodes}
    bad = [name for name in job.nodes if name in states and states[name].unusable]
    if job.state != "RUNNING" or not bad:
        return None
    # A draining node lets the job finish; down, failed or silent nodes are where ranks hang.
    broken = any(states[n].condition in _BROKEN or "NOT_RESPONDING" in states[n].flags for n in bad)
    return _job_finding(
        job,
        id="slurm.job.on_unusable_node",
        status=Status.FAIL,
        priority=Priority.P0 if broken else Priority.P1,
        title=f"Job {job.job_id} is running on {', '.join(bad)}, which Slurm marks unusable",
        reference="operations.md § 7",
        detail="A rank on a down, failing or unresponsive node stalls every collective: the job hangs.",
    )


def _status_line(job: SlurmJob) -> Finding:
    limit = f", elapsed {job.elapsed} of {job.time_limit}" if job.time_limit else ""
    nodes = f" on {job.node_list}" if job.node_list else ""
    reason = f" ({job.reason})" if job.reason else ""
    return _job_finding(
        job,
        id="slurm.job.status",
        status=Status.INFO,
        title=f"Job {job.job_id} {job.state}{reason}{nodes}{limit}",
    )


def _script_finding(job_id: str, issue: ScriptIssue) -> Finding:
    status, priority, reference = _SCRIPT_CHECKS[issue.check]
    evidence = (
        [Evidence(source=f"batch script of job {job_id}", line=issue.line, text=issue.text)]
        if issue.text
        else []
    )
    return Finding(
        id=f"slurm.batch_script.{issue.check}",
        status=status,
        priority=priority,
        title=f"Job {job_id}: {issue.message.split(':')[0]}",
        reference=reference,
        detail=issue.message,
        evidence=evidence,
        suggested_commands=[remediation.read_batch_script(job_id)],
    )


def _jobs_in_scope(slurm: SlurmSnapshot) -> list[SlurmJob]:
    if slurm.job_id:
        listed = [j for j in slurm.jobs if j.job_id == slurm.job_id]
        return [slurm.job] if slurm.job else listed
    return [j for j in slurm.jobs if j.state in _ACTIVE or j.state.split()[0] in _SCHEDULER_ENDED]


def _job_not_found(slurm: SlurmSnapshot) -> Finding:
    error = slurm.command_errors.get("job", "")
    return Finding(
        id="slurm.job.not_found",
        status=Status.INFO,
        title=f"Job {slurm.job_id} is not known to slurmctld",
        detail="It may have ended longer ago than MinJobAge; `sacct -j` still has it when accounting is on.",
        evidence=[Evidence(source="scontrol show job", text=error)] if error else [],
    )


def _script_unreadable(slurm: SlurmSnapshot) -> Finding:
    job_id = slurm.job_id or ""
    return Finding(
        id="slurm.batch_script.unreadable",
        status=Status.INFO,
        title=f"Job {job_id}: the batch script could not be read, so auto-resume rules were not checked",
        detail="`scontrol write batch_script` needs the job's owner, root or SlurmUser.",
        evidence=[Evidence(source="scontrol write batch_script", text=slurm.command_errors["batch_script"])],
        suggested_commands=[remediation.read_batch_script(job_id)],
    )


def analyze_slurm_jobs(snapshot: Snapshot) -> list[Finding]:
    slurm = snapshot.slurm
    if slurm is None:
        return []
    findings: list[Finding] = []
    for job in _jobs_in_scope(slurm):
        checks = [
            _reason_finding(job),
            _ended_finding(job),
            _time_finding(job),
            _bad_nodes_finding(job, slurm),
        ]
        findings += [f for f in checks if f] or [_status_line(job)]
    if slurm.job_id and slurm.job is None and slurm.controller.reachable:
        findings.append(_job_not_found(slurm))
    if slurm.job_id and slurm.job and not slurm.batch_script and "batch_script" in slurm.command_errors:
        findings.append(_script_unreadable(slurm))
    if slurm.job_id and slurm.batch_script:
        exclusive = slurm.job.exclusive if slurm.job else None
        findings += [_script_finding(slurm.job_id, i) for i in script_issues(slurm.batch_script, exclusive)]
    return findings
