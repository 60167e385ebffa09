"""Rerun diff: what a fix changed between two reports of the same diagnostic.

Issues (FAIL and WARN) are matched by finding id and scope (the ranks, nodes, instance ids and
pods they concern). The same id whose scope overlaps the previous one is *still failing* (with
the part of the scope that cleared and the part that is new); the same id on a disjoint scope is
a different problem, so the previous one is gone and the current one *new*.

An issue the rerun did not report is *fixed* only when the rerun could have seen it: same kind of
diagnostic, a run that can be a rerun of the previous one (`compare_runs`), the kind of input the
issue was seen in, its nodes and ranks. Otherwise it is *unconfirmed*, with the reason, and the
verdict is `inconclusive` or `not_comparable` instead of "fixed".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from hyperpod_nccl.compare_runs import (
    Run,
    RunFacts,
    describe_run,
    not_comparable,
    run_differences,
    unseen_because,
    untied,
)
from hyperpod_nccl.models import Finding, Priority, Report, Status, finding_sort_key
from hyperpod_nccl.render import json_text, shorten

# A report is findings and summaries, never whole logs: anything this big is not one.
_PRIORITY_RANK = {Priority.P0: 0, Priority.P1: 1, Priority.P2: 2}
MAX_REPORT_BYTES = 16 << 20  # a report is kilobytes; a bigger file is a log or a bundle
BUDGET_BYTES = 8_000  # the comparison as printed, like a report
_LIST_CAPS = (20, 10, 5, 2)
_SCOPE_SHOWN = 8
_TITLE_CHARS = 160


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
    unconfirmed: str | None = Field(
        default=None, description="For unconfirmed issues: why the rerun could not have seen it."
    )


Verdict = Literal[
    "all_fixed", "improved", "unchanged", "regressed", "clean", "inconclusive", "not_comparable"
]


class ComparisonSummary(BaseModel):
    fixed: int = Field(description="Issues the rerun could have seen and did not: fixed.")
    unconfirmed: int = Field(
        default=0, description="Issues the rerun did not report but could not have seen."
    )
    still_failing: int
    new: int
    priority_changed: int
    verdict: Verdict = Field(
        description="not_comparable: the current report is not a rerun of the previous one; "
        "inconclusive: some issues are unconfirmed, never call them fixed; otherwise what changed."
    )


class ReportComparison(BaseModel):
    """Fixed, unconfirmed, still failing and new issues between a previous report and the current one."""

    previous_kind: Literal["triage", "diagnose"]
    current_kind: Literal["triage", "diagnose"]
    summary: ComparisonSummary
    reasons: list[str] = Field(
        default_factory=list, description="Why the verdict is not_comparable or inconclusive."
    )
    previous_run: RunFacts | None = None
    current_run: RunFacts | None = None
    fixed: list[FindingChange]
    unconfirmed: list[FindingChange] = Field(default_factory=list)
    still_failing: list[FindingChange]
    new: list[FindingChange]
    notes: list[str] = Field(
        default_factory=list, description="Caveats, and how many entries each capped list left out."
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


def _verdict(fixed: int, still: int, new: int) -> Verdict:
    if new:
        return "regressed"
    if still:
        return "improved" if fixed else "unchanged"
    return "all_fixed" if fixed else "clean"


def _notes(before: Run, after: Run) -> list[str]:
    notes = []
    if before.world_size != after.world_size and None not in (before.world_size, after.world_size):
        notes.append(f"World size {before.world_size} before, {after.world_size} now.")
    if before.report.kind == "diagnose" and after.report.skipped:
        notes.append(
            f"The current run skipped {len(after.report.skipped)} input(s): see `skipped` in its report."
        )
    return notes


def diff_reports(previous: Report, current: Report) -> ReportComparison:
    """Match the issues of two reports: fixed, unconfirmed, still failing (priority change), new."""
    if previous.kind != current.kind:
        raise UnusableReport(
            f"the previous report comes from {previous.kind} and the current one from {current.kind}: "
            f"compare a {current.kind} report with the {current.kind} report of the run before"
        )
    before, after = describe_run(previous), describe_run(current)
    refusals = not_comparable(before, after)
    differences = [] if refusals else run_differences(before, after)
    remaining = _issues(current)
    fixed: list[FindingChange] = []
    unconfirmed: list[FindingChange] = []
    still: list[FindingChange] = []
    for issue in _issues(previous):
        match = next((after_issue for after_issue in remaining if _same_problem(issue, after_issue)), None)
        if match is not None:
            remaining.remove(match)
            still.append(_still(issue, match))
            continue
        why = (
            ("not comparable: " + refusals[0] if refusals else None)
            or unseen_because(before, after, issue)
            or (differences[0] if differences else None)
        )
        if why:
            unconfirmed.append(_change(issue).model_copy(update={"unconfirmed": why}))
        else:
            fixed.append(_change(issue))
    new = [_change(after_issue) for after_issue in remaining]
    verdict: Verdict = (
        "not_comparable"
        if refusals
        # a new issue in a run nothing ties to the previous one is not a regression of it
        else "inconclusive"
        if untied(before, after) and (new or unconfirmed)
        else "regressed"
        if new
        else "inconclusive"
        if unconfirmed
        else _verdict(len(fixed), len(still), len(new))
    )
    reasons = refusals or list(dict.fromkeys([*differences, *(c.unconfirmed or "" for c in unconfirmed)]))
    summary = ComparisonSummary(
        fixed=len(fixed),
        unconfirmed=len(unconfirmed),
        still_failing=len(still),
        new=len(new),
        priority_changed=sum(change.priority_change != "same" for change in still),
        verdict=verdict,
    )
    comparison = ReportComparison(
        previous_kind=previous.kind,
        current_kind=current.kind,
        summary=summary,
        reasons=[reason for reason in reasons if reason],
        previous_run=before.facts(),
        current_run=after.facts(),
        fixed=fixed,
        unconfirmed=unconfirmed,
        still_failing=still,
        new=new,
        notes=_notes(before, after),
    )
    return fit_comparison(comparison)


def _capped_scope(values: list[str]) -> list[str]:
    more = len(values) - _SCOPE_SHOWN
    return [*values[:_SCOPE_SHOWN], f"+{more} more"] if more > 0 else values


def _capped_change(change: FindingChange) -> FindingChange:
    return change.model_copy(
        update={
            "title": shorten(change.title, _TITLE_CHARS),
            "scope": _capped_scope(change.scope),
            "scope_cleared": _capped_scope(change.scope_cleared),
            "scope_added": _capped_scope(change.scope_added),
        }
    )


def fit_comparison(comparison: ReportComparison, budget: int = BUDGET_BYTES) -> ReportComparison:
    """The comparison in at most `budget` bytes as printed: long scopes and titles shortened, then
    each list capped (the summary keeps the totals; `notes` says how many each list left out)."""
    lists = ("fixed", "unconfirmed", "still_failing", "new")
    full = {name: [_capped_change(c) for c in getattr(comparison, name)] for name in lists}
    fitted = comparison.model_copy(update=full)
    for cap in _LIST_CAPS:
        if len(json_text(fitted).encode()) <= budget:
            break
        left_out = [
            f"{name}: +{len(full[name]) - cap} more not listed" for name in lists if len(full[name]) > cap
        ]
        fitted = comparison.model_copy(
            update={**{name: full[name][:cap] for name in lists}, "notes": [*comparison.notes, *left_out]}
        )
    return fitted


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


def _too_big(path: Path, size: int) -> UnusableReport:
    return UnusableReport(
        f"{path} is {size / 1e6:.0f} MB; a report is at most {MAX_REPORT_BYTES >> 20} MiB: "
        "pass the file `--json` wrote, not a log or a bundle"
    )


def load_report(path: Path) -> Report:
    """Read a report written by `triage --json` / `diagnose --json`; a file far bigger than any
    report is refused before it is read, and no read goes past the bound (/proc files lie)."""
    try:
        if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
            raise UnusableReport(f"{path} is not a regular file; pass the file `--json` wrote")
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_REPORT_BYTES:
                raise _too_big(path, size)
            raw = handle.read(MAX_REPORT_BYTES + 1)
        if len(raw) > MAX_REPORT_BYTES:
            raise _too_big(path, len(raw))
        data = json.loads(raw.decode("utf-8"))
    except OSError as error:
        raise UnusableReport(f"cannot read {path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise UnusableReport(f"{path} is not JSON ({reason}); save a report with --json") from None
    return report_from_data(data, str(path))
