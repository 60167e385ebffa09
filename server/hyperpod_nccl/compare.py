"""Rerun diff: what a fix changed between two reports of the same diagnostic.

Issues (FAIL and WARN) are matched by finding id and scope (the ranks, nodes, instance ids and
pods they concern). The same id whose scope overlaps the previous one is *still failing* (with
the part of the scope that cleared and the part that is new); the same id on a disjoint scope is
a different problem, so the previous one is *fixed* and the current one *new*.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from hyperpod_nccl.models import Finding, Priority, Report, Status, finding_sort_key

# A report is findings and summaries, never whole logs: anything this big is not one.
MAX_REPORT_BYTES = 32 << 20
_PRIORITY_RANK = {Priority.P0: 0, Priority.P1: 1, Priority.P2: 2}


class UnusableReport(ValueError):
    """A previous or current report that cannot be read; the message says what to pass instead."""


class FindingChange(BaseModel):
    """One issue as the comparison sees it: enough to name it, never its whole evidence."""

    id: str
    title: str
    status: Status = Field(description="Status in the current report (the previous one for a fixed issue).")
    priority: Priority | None
    reference: str | None
    scope: list[str] = Field(description="`rank:N`, `node:…`, `instance:i-…`, `pod:…` it concerns.")
    previous_status: Status | None = Field(default=None, description="Set for still-failing issues.")
    previous_priority: Priority | None = Field(default=None, description="Set for still-failing issues.")
    priority_change: Literal["worse", "better", "same"] | None = Field(
        default=None, description="For still-failing issues: did the priority rise (worse) or fall?"
    )
    scope_cleared: list[str] = Field(default_factory=list, description="Scope no longer affected.")
    scope_added: list[str] = Field(default_factory=list, description="Scope newly affected.")


class ComparisonSummary(BaseModel):
    fixed: int
    still_failing: int
    new: int
    priority_changed: int
    verdict: Literal["all_fixed", "improved", "unchanged", "regressed", "clean"]


class ReportComparison(BaseModel):
    """Fixed, still failing and new issues between a previous report and the current one."""

    previous_kind: Literal["triage", "diagnose"]
    current_kind: Literal["triage", "diagnose"]
    summary: ComparisonSummary
    fixed: list[FindingChange]
    still_failing: list[FindingChange]
    new: list[FindingChange]
    notes: list[str] = Field(
        default_factory=list, description="Caveats, e.g. inputs the current run skipped."
    )


def finding_scope(finding: Finding) -> list[str]:
    return sorted(
        [f"rank:{rank}" for rank in finding.ranks]
        + [f"node:{node}" for node in finding.nodes]
        + [f"instance:{instance}" for instance in finding.instance_ids]
        + [f"pod:{pod}" for pod in finding.pods]
    )


def _same_problem(previous: Finding, current: Finding) -> bool:
    before, after = set(finding_scope(previous)), set(finding_scope(current))
    # A finding with no scope concerns the whole job or cluster: it overlaps any other.
    return previous.id == current.id and (not before or not after or bool(before & after))


def _change(finding: Finding) -> FindingChange:
    return FindingChange(
        id=finding.id,
        title=finding.title,
        status=finding.status,
        priority=finding.priority,
        reference=finding.reference,
        scope=finding_scope(finding),
    )


def _still(previous: Finding, current: Finding) -> FindingChange:
    before, after = set(finding_scope(previous)), set(finding_scope(current))
    old, new = _PRIORITY_RANK.get(previous.priority, 3), _PRIORITY_RANK.get(current.priority, 3)
    return _change(current).model_copy(
        update={
            "previous_status": previous.status,
            "previous_priority": previous.priority,
            "priority_change": "worse" if new < old else "better" if new > old else "same",
            "scope_cleared": sorted(before - after),
            "scope_added": sorted(after - before),
        }
    )


def _issues(report: Report) -> list[Finding]:
    return sorted((f for f in report.findings if f.is_issue), key=finding_sort_key)


def _verdict(fixed: int, still: int, new: int) -> str:
    if new:
        return "regressed"
    if still:
        return "improved" if fixed else "unchanged"
    return "all_fixed" if fixed else "clean"


def _notes(previous: Report, current: Report) -> list[str]:
    notes = []
    if previous.kind != current.kind:
        notes.append(
            f"The reports come from different diagnostics ({previous.kind} vs {current.kind}): "
            "an issue only one of them can see shows as fixed or new."
        )
    if current.skipped:
        notes.append(
            f"The current run skipped {len(current.skipped)} input(s): an issue reported fixed may "
            "only be unobserved. Check `skipped` in the current report."
        )
    return notes


def diff_reports(previous: Report, current: Report) -> ReportComparison:
    """Match the issues of two reports: fixed, still failing (priority change), new."""
    remaining = _issues(current)
    fixed: list[FindingChange] = []
    still: list[FindingChange] = []
    for before in _issues(previous):
        match = next((after for after in remaining if _same_problem(before, after)), None)
        if match is None:
            fixed.append(_change(before))
            continue
        remaining.remove(match)
        still.append(_still(before, match))
    new = [_change(after) for after in remaining]
    summary = ComparisonSummary(
        fixed=len(fixed),
        still_failing=len(still),
        new=len(new),
        priority_changed=sum(change.priority_change != "same" for change in still),
        verdict=_verdict(len(fixed), len(still), len(new)),
    )
    return ReportComparison(
        previous_kind=previous.kind,
        current_kind=current.kind,
        summary=summary,
        fixed=fixed,
        still_failing=still,
        new=new,
        notes=_notes(previous, current),
    )


def report_from_data(data: Any, what: str = "report") -> Report:
    """A Report from `--json` output or a diagnostic tool's answer. Top-level fields added after
    v1 are ignored, as the contract promises readers may (shapes only ever grow)."""
    if not isinstance(data, dict):
        raise UnusableReport(f"{what} is not a JSON object from `triage --json` or `diagnose --json`")
    if "kind" not in data and "passed" in data:
        # run_diagnostic's answer: the diagnose report's findings without the envelope.
        data = {**data, "kind": "diagnose"}
    known = {key: value for key, value in data.items() if key in Report.model_fields}
    try:
        return Report.model_validate(known)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise UnusableReport(f"{what} is not a hyperpod-nccl report: {where}: {first['msg']}") from None


def load_report(path: Path) -> Report:
    """Read a report written by `triage --json` / `diagnose --json`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_REPORT_BYTES + 1)
        if len(raw) > MAX_REPORT_BYTES:
            raise UnusableReport(
                f"{path} is larger than {MAX_REPORT_BYTES >> 20} MiB: not a hyperpod-nccl report"
            )
        data = json.loads(raw.decode("utf-8"))
    except OSError as error:
        raise UnusableReport(f"cannot read {path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise UnusableReport(f"{path} is not JSON ({reason}); save a report with --json") from None
    return report_from_data(data, str(path))
