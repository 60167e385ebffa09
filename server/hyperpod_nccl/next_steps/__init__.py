"""What to run next (issue 14 item 1): every FAIL and WARN carries suggested commands built from
the values the input holds, read-only confirmation first, or a one-line reason why none applies.

`attach` is the one pass that does it, after every rule or analyzer has spoken: commands a finding
already carries (an analyzer that knows its pod and namespace) are kept; the others come from the
catalogue of the section the finding points at (`catalogue.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hyperpod_nccl.models import BlastRadius, Finding, SuggestedCommand
from hyperpod_nccl.next_steps.catalogue import ID_STEPS, REASONS, SECTION_REASONS, SECTION_STEPS
from hyperpod_nccl.next_steps.facts import Facts, Quoted

__all__ = ["Facts", "Quoted", "attach", "commands_for", "read_only_first", "reason_for"]

_HARM = list(BlastRadius)


def attach(findings: Iterable[Finding], facts_of: Callable[[Finding], Facts]) -> None:
    """Fill in every FAIL/WARN's commands (or the reason there are none), read-only ones first."""
    for finding in findings:
        if not finding.is_issue:
            continue
        if not finding.suggested_commands and finding.consequence_of is None:
            finding.suggested_commands = commands_for(finding, facts_of(finding))
        finding.suggested_commands = read_only_first(finding.suggested_commands)
        if not finding.suggested_commands and finding.no_command_reason is None:
            finding.no_command_reason = reason_for(finding)


def commands_for(finding: Finding, facts: Facts) -> list[SuggestedCommand]:
    """The finding's own commands where it has some, else its section's; [] where a reason applies
    (a finding with both has commands only when the facts call for them)."""
    if finding.id in ID_STEPS:
        return ID_STEPS[finding.id](facts)
    if finding.id in REASONS:
        return []
    steps = SECTION_STEPS.get(finding.reference or "")
    return steps(facts) if steps else []


def reason_for(finding: Finding) -> str | None:
    return REASONS.get(finding.id) or SECTION_REASONS.get(finding.reference or "")


def read_only_first(commands: list[SuggestedCommand]) -> list[SuggestedCommand]:
    """Confirmation before any fix: commands ordered from harmless to destructive, stable otherwise;
    a command two steps came to alike (the node of a pod, to look at and to cordon) once."""
    once: dict[str, SuggestedCommand] = {}
    for command in sorted(commands, key=lambda command: _HARM.index(command.blast_radius)):
        once.setdefault(command.command, command)
    return list(once.values())
