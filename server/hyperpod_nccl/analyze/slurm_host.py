"""Host settings read on the Slurm controller that shape every job: RemoveIPC, memlock limits,
and NCCL / libfabric variables set in prolog, epilog or profile files."""

from __future__ import annotations

from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import HostPath
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.slurm.batch_script import ScriptIssue, host_setting_issues, nccl_env_lines
from hyperpod_nccl.snapshot import Snapshot

# (status, priority, reference, title) per host check.
_CHECKS = {
    "memlock_limited": (
        Status.FAIL,
        Priority.P1,
        "debugging-guide.md § 17",
        "memlock is limited for Slurm jobs",
    ),
    "remove_ipc": (Status.WARN, Priority.P1, "debugging-guide.md § 17", "RemoveIPC is not set to no"),
    "tcp_transport_forced": (Status.FAIL, Priority.P1, "debugging-guide.md § 13", "NCCL is forced onto TCP"),
}


def _finding(issue: ScriptIssue, node: str | None) -> Finding:
    status, priority, reference, title = _CHECKS[issue.check]
    return Finding(
        id=f"slurm.host.{issue.check}",
        status=status,
        priority=priority,
        title=f"{title} ({issue.source})",
        reference=reference,
        detail=issue.message
        + ". Read on the host the Slurm probe ran on; lifecycle scripts usually set all nodes alike.",
        evidence=[Evidence(source=issue.source, line=issue.line, text=issue.text, node=node)],
        suggested_commands=[
            suggest(
                "grep -n .", value(HostPath, issue.source), why="read the whole file the setting comes from"
            )
        ],
    )


def analyze_slurm_host(snapshot: Snapshot) -> list[Finding]:
    slurm = snapshot.slurm
    if slurm is None:
        return []
    node = slurm.controller_node
    findings = [_finding(i, node) for i in host_setting_issues(slurm.host_settings, slurm.host_files_read)]
    env = nccl_env_lines(slurm.host_settings)
    if env:
        findings.append(
            Finding(
                id="slurm.host.nccl_env",
                status=Status.INFO,
                title=f"{len(env)} NCCL / libfabric settings in prolog, profile or environment files",
                evidence=[Evidence(source=s.path, line=s.line, text=s.text, node=node) for s in env],
            )
        )
    return findings
