"""Keep a triage report small enough for an LLM's context: at most 8 KB of JSON *as printed*
(`render_json`, what the CLI's `--json` and the MCP tool print), at 1,024 ranks too.

Reductions are applied in order of least information lost until the report fits: suggested
commands of secondary findings beyond their first, long timelines, the culprits' activity beyond
one line each, long evidence texts, evidence lines beyond four, informational findings, the
consequences' detail, then every evidence line but the first. The root cause and every
FAIL/WARN finding always survive, and the root cause's own finding keeps its evidence longest.
Every list cut short says how many items it lost (`Report.omitted`, `timeline: +8 more`); texts
are cut between words, never inside a number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hyperpod_nccl.models import Finding, Report, Status
from hyperpod_nccl.render import render_json, shorten

BUDGET_BYTES = 8_192  # 8 KB as printed (issue 14): indented, what the CLI and the MCP tool return
_SHORT_TEXT = 200
_ROOT_TEXT = 320  # the root cause's own lines: what decides is often at their end
_SHORT_DETAIL = 160
_SHORT_LINE = 120
_BARE_LINE = 80

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
        """Every cut list, except the parts of findings that were dropped whole (counted once)."""
        present = {finding.id for finding in self.report.findings}
        self.report.omitted = [
            f"{what}: +{before - kept} more"
            for what, (before, kept) in self.lengths.items()
            if "." not in (owner := what.split(" ", 1)[0]) or owner in present
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


def _short_activity(trim: _Trim) -> None:
    """What the culprits were doing: the first culprit and the waiting rank, one other line each,
    shorter; the progress line stays."""
    report = trim.report
    culprits = [a for a in report.activity if a.role == "culprit"]
    if len(culprits) > 1:
        trim.record("activity culprits", len(culprits), 1)
        report.activity = [a for a in report.activity if a.role != "culprit" or a is culprits[0]]
    for activity in report.activity:
        activity.before = trim.keep(f"activity rank {activity.rank} before", activity.before, 1)
        for line in [activity.last_progress, *activity.before]:
            if line is not None:
                line.text = shorten(line.text, _SHORT_LINE)
    job = trim.report.job
    if job is not None:
        for quoted in [
            job.outcome.evidence if job.outcome else None,
            job.resume.evidence if job.resume else None,
            *(group.evidence for group in job.transports),
        ]:
            if quoted is not None:
                quoted.text = shorten(quoted.text, _SHORT_LINE)


def _trim_consequences(trim: _Trim) -> None:
    """Consequences of the root cause keep their first evidence line and first sentence."""
    for finding in trim.others():
        if finding.consequence_of:
            finding.evidence = trim.keep(f"{finding.id} evidence", finding.evidence, 1)
            finding.detail = shorten(finding.detail.split(". ", 1)[0], _SHORT_DETAIL)


def _trim_job(trim: _Trim) -> None:
    report = trim.report
    job = report.job
    if job and len(job.rank_map) > 4:
        job.rank_map = job.rank_map[:4]
        layout = (job.rank_map_note or "").partition("; ")[2]
        job.rank_map_note = f"{job.nodes - 4} more nodes not listed" + (f"; {layout}" if layout else ".")
    report.skipped = trim.keep("skipped", report.skipped, 10)
    report.rank_states = trim.keep("rank_states", report.rank_states, 8)
    if job:
        job.rank_times = trim.keep("job rank_times", job.rank_times, 3)
        job.transports = trim.keep("job transports", job.transports, 3)
    for activity in report.activity:
        activity.before = trim.keep(f"activity rank {activity.rank} before", activity.before, 0)


def _drop_noise(trim: _Trim) -> None:
    """Noise said to be noise goes last: the root cause's `ruled_out` still says it."""
    report = trim.report
    kept = [f for f in report.findings if not (f.status == Status.INFO and f.id.startswith("triage.noise"))]
    if len(kept) < len(report.findings):
        trim.record("INFO findings", len(report.findings) - len(kept), 0)
        report.findings = kept


def _trim_cause(trim: _Trim) -> None:
    cause = trim.report.root_cause
    if cause is not None:
        cause.ruled_out = trim.keep("root_cause ruled_out", cause.ruled_out, 3)
        cause.chain = [shorten(step, _SHORT_TEXT) for step in cause.chain]


def _culprit_only(trim: _Trim) -> None:
    """The culprit's activity without the waiting rank's, one span of times, no notes: before the
    root cause's own evidence is shortened."""
    report = trim.report
    waiting = [a for a in report.activity if a.role == "waiting"]
    if waiting:
        trim.record("activity waiting", len(waiting), 0)
        report.activity = [a for a in report.activity if a.role != "waiting"]
        for activity in waiting:  # dropped whole: counted once, above
            trim.lengths.pop(f"activity rank {activity.rank} before", None)
    if report.job:
        report.job.rank_times = trim.keep("job rank_times", report.job.rank_times, 1)
        report.job.notes = trim.keep("job notes", report.job.notes, 1)  # the first says what input is missing


def _consequences_unquoted(trim: _Trim) -> None:
    """Consequences without their own evidence: what they followed from is quoted by the root
    cause's finding."""
    for finding in trim.report.findings:
        if finding.consequence_of:
            finding.evidence = trim.keep(f"{finding.id} evidence", finding.evidence, 0)


def _bare(trim: _Trim) -> None:
    """Last resort: every quoted line shorter, the root cause's least."""
    report = trim.report
    for finding in report.findings:
        chars = _ROOT_TEXT if finding.id == trim.protected else _SHORT_LINE
        for item in finding.evidence:
            item.text = shorten(item.text, chars)
    job = report.job
    quoted = [g.evidence for g in job.transports] if job else []
    quoted += [job.outcome.evidence] if job and job.outcome and job.outcome.evidence else []
    for line in quoted:
        line.text = shorten(line.text, _BARE_LINE)
    if job is not None:
        job.rank_map = trim.keep("job rank_map", job.rank_map, 2)
        job.transports = trim.keep("job transports", job.transports, 2)
    if report.root_cause is not None:
        report.root_cause.chain = [shorten(step, _SHORT_LINE) for step in report.root_cause.chain]


def _minimal(trim: _Trim) -> None:
    report = trim.report
    report.timeline = trim.keep("timeline", report.timeline, 3)
    for finding in report.findings:
        finding.ranks = trim.keep(f"{finding.id} ranks", finding.ranks, 16)
        finding.nodes = trim.keep(f"{finding.id} nodes", finding.nodes, 4)
        finding.detail = shorten(finding.detail, _SHORT_DETAIL)
        if finding.id != trim.protected:  # the root cause's own commands are what the user runs next
            finding.suggested_commands = trim.keep(
                f"{finding.id} suggested_commands", finding.suggested_commands, 1
            )


def _root_evidence_lines(count: int) -> Reduction:
    """The root cause's own evidence loses lines before any is shortened: it is the answer's proof,
    and its first lines are the decisive ones."""

    def reduce(trim: _Trim) -> None:
        for finding in trim.report.findings:
            if finding.id == trim.protected:
                finding.evidence = trim.keep(f"{finding.id} evidence", finding.evidence, count)

    return reduce


def _short_evidence(trim: _Trim) -> None:
    for finding in trim.report.findings:
        chars = _ROOT_TEXT if finding.id == trim.protected else _SHORT_TEXT
        for item in finding.evidence:
            item.text = shorten(item.text, chars)


REDUCTIONS: tuple[Reduction, ...] = (
    _first_command_only,
    _shorten_timeline,
    _short_activity,
    _short_texts,
    _evidence_lines(4),
    _drop_info_findings,
    _trim_consequences,
    _evidence_lines(1),
    _trim_job,
    _drop_noise,
    _trim_cause,
    _culprit_only,
    _minimal,
    _consequences_unquoted,
    _root_evidence_lines(4),
    _root_evidence_lines(2),
    _short_evidence,
    _bare,
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
