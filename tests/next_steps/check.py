"""The next-step rules a report must keep, as one list of problems per report (empty when kept)."""

from __future__ import annotations

from hyperpod_nccl.models import BlastRadius, Report
from tests.next_steps.sections import unshown

_HARM = list(BlastRadius)


def next_step_problems(report: Report) -> list[str]:
    """Every FAIL/WARN has commands or a reason; each command is one its section shows; read-only
    ones come first; no placeholder stands where the report itself holds the value (unless that
    value failed its check, which the command's `why` then says)."""
    problems: list[str] = []
    job_id = report.job.job_id if report.job else None
    for finding in report.findings:
        if not finding.is_issue:
            continue
        commands = finding.suggested_commands
        if not commands and not finding.no_command_reason:
            problems.append(f"{finding.id}: no command and no reason")
        for command in commands:
            problems += [
                f"{finding.id}: `{command.command}` runs {program}, which {finding.reference} does not show"
                for program in unshown(command.command, finding.reference or "")
            ]
            if job_id and "<job-id>" in command.command:
                problems.append(f"{finding.id}: `{command.command}` leaves out job id {job_id}")
            if finding.nodes and "<node>" in command.command and "<node> left out" not in command.why:
                problems.append(f"{finding.id}: `{command.command}` leaves out node {finding.nodes[0]}")
        radii = [_HARM.index(c.blast_radius) for c in commands]
        if radii != sorted(radii):
            problems.append(f"{finding.id}: a fix comes before a read-only check")
    return problems
