"""Keep a triage report small enough for an LLM's context: at most 8 KB of JSON *as printed*
(`render_json`, what the CLI's `--json` and the MCP tool print), at 1,024 ranks too.

Reductions are applied in order of least information lost until the report fits: suggested
commands of secondary findings beyond their first, long timelines, long evidence texts, evidence
lines beyond four, informational findings, then every evidence line but the first. The root cause and every
FAIL/WARN finding always survive, and the root cause's own finding keeps its evidence longest.
Every list cut short says how many items it lost (`Report.omitted`, `timeline: +8 more`); texts
are cut between words, never inside a number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hyperpod_nccl.models import Finding, Report, Status
from hyperpod_nccl.render import render_json, shorten

BUDGET_BYTES = 8_000
_SHORT_TEXT = 200
_SHORT_DETAIL = 160

Item = TypeVar("Item")


class _Trim:
    """One report being shrunk, and how long each list it cut was before the first cut."""

    def __init__(self, report: Report, protected: str | None) -> None:
        self.report = report
        self.protected = protected
        self.lengths: dict[str, tuple[int, int]] = {}  # what → (length before, length kept)

    def others(self) -> list[Finding]:
        """Findings other than the root cause's own, whose evidence is reduced last."""
        return [f for f in self.report.findings if f.id != self.protected]

    def keep(self, what: str, items: list[Item], count: int) -> list[Item]:
        if len(items) > count:
            self.record(what, len(items), count)
        return items[:count]

    def record(self, what: str, before: int, kept: int) -> None:
        self.lengths[what] = (self.lengths.get(what, (before, 0))[0], kept)

    def note_omissions(self) -> None:
        self.report.omitted = [
            f"{what}: +{before - kept} more" for what, (before, kept) in self.lengths.items()
        ]


Reduction = Callable[[_Trim], None]


def size_of(report: Report) -> int:
    """Bytes of the report as printed."""
    return len(render_json(report).encode())


def _first_command_only(trim: _Trim) -> None:
    """Secondary findings keep their first command (the read-only confirmation): every FAIL and
    WARN still says what to run next."""
    for finding in trim.others():
        finding.suggested_commands = trim.keep(
            f"{finding.id} suggested_commands", finding.suggested_commands, 1
        )


def _shorten_timeline(trim: _Trim) -> None:
    trim.report.timeline = trim.keep("timeline", trim.report.timeline, 6)


def _evidence_lines(count: int) -> Reduction:
    def reduce(trim: _Trim) -> None:
        for finding in trim.others():
            finding.evidence = trim.keep(f"{finding.id} evidence", finding.evidence, count)

    return reduce


# Informational findings that outlive the budget: noise said to be noise, and what the Flight
# Recorder dumps could not say (their limits are part of the answer).
_KEPT_INFO = ("triage.noise", "flight_recorder.coverage")


def _drop_info_findings(trim: _Trim) -> None:
    report = trim.report
    kept = [f for f in report.findings if f.status != Status.INFO or f.id.startswith(_KEPT_INFO)]
    if len(kept) < len(report.findings):
        trim.record("INFO findings", len(report.findings) - len(kept), 0)
        report.findings = kept


def _short_texts(trim: _Trim) -> None:
    for finding in trim.others():
        for item in finding.evidence:
            item.text = shorten(item.text, _SHORT_TEXT)


def _trim_job(trim: _Trim) -> None:
    report = trim.report
    job = report.job
    if job and len(job.rank_map) > 4:
        job.rank_map = job.rank_map[:4]
        layout = (job.rank_map_note or "").partition("; ")[2]
        job.rank_map_note = f"{job.nodes - 4} more nodes not listed" + (f"; {layout}" if layout else ".")
    report.skipped = trim.keep("skipped", report.skipped, 10)
    report.rank_states = trim.keep("rank_states", report.rank_states, 8)


def _minimal(trim: _Trim) -> None:
    report = trim.report
    report.timeline = trim.keep("timeline", report.timeline, 3)
    for finding in report.findings:
        finding.ranks = trim.keep(f"{finding.id} ranks", finding.ranks, 16)
        finding.nodes = trim.keep(f"{finding.id} nodes", finding.nodes, 4)
        finding.detail = shorten(finding.detail, _SHORT_DETAIL)


REDUCTIONS: tuple[Reduction, ...] = (
    _first_command_only,
    _shorten_timeline,
    _short_texts,
    _evidence_lines(4),
    _drop_info_findings,
    _evidence_lines(1),
    _trim_job,
    _minimal,
)


def fit_to_budget(report: Report, budget: int = BUDGET_BYTES, protected: str | None = None) -> Report:
    """Shrink `report` in place until it fits; `protected` names the root cause's own finding."""
    trim = _Trim(report, protected)
    for reduce in REDUCTIONS:
        if size_of(report) <= budget:
            break
        reduce(trim)
        trim.note_omissions()
    return report
