"""Keep a triage report small enough for an LLM's context (issue 3: < 8 KB of JSON at 1,024 ranks).

Reductions are applied in order of least information lost until the report fits: suggested
commands of secondary findings, long timelines, long evidence texts, evidence lines beyond four,
informational findings, then every evidence line but the first. The root cause and every
FAIL/WARN finding always survive, and the root cause's own finding keeps its evidence longest.
"""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_nccl.models import Finding, Report, Status

BUDGET_BYTES = 7_800
_SHORT_TEXT = 200

Reduction = Callable[[Report, str | None], None]


def size_of(report: Report) -> int:
    return len(report.model_dump_json().encode())


def _others(report: Report, protected: str | None) -> list[Finding]:
    """Findings other than the root cause's own, whose evidence is reduced last."""
    return [f for f in report.findings if f.id != protected]


def _drop_secondary_commands(report: Report, protected: str | None) -> None:
    for finding in _others(report, protected):
        finding.suggested_commands = []


def _shorten_timeline(report: Report, protected: str | None) -> None:
    report.timeline = report.timeline[:6]


def _one_evidence_line(report: Report, protected: str | None) -> None:
    for finding in _others(report, protected):
        finding.evidence = finding.evidence[:1]


# Informational findings that outlive the budget: noise said to be noise, and what the Flight
# Recorder dumps could not say (their limits are part of the answer).
_KEPT_INFO = ("triage.noise", "flight_recorder.coverage")


def _drop_info_findings(report: Report, protected: str | None) -> None:
    report.findings = [f for f in report.findings if f.status != Status.INFO or f.id.startswith(_KEPT_INFO)]


def _short_texts(report: Report, protected: str | None) -> None:
    for finding in _others(report, protected):
        for item in finding.evidence:
            if len(item.text) > _SHORT_TEXT:
                item.text = item.text[:_SHORT_TEXT] + "…"


def _trim_job(report: Report, protected: str | None) -> None:
    if report.job:
        report.job.rank_map = report.job.rank_map[:4]
    report.skipped = report.skipped[:10]
    report.rank_states = report.rank_states[:8]


def _minimal(report: Report, protected: str | None) -> None:
    report.timeline = report.timeline[:3]
    for finding in report.findings:
        finding.ranks = finding.ranks[:16]
        finding.nodes = finding.nodes[:4]
        finding.detail = finding.detail[:160]


def _four_evidence_lines(report: Report, protected: str | None) -> None:
    for finding in _others(report, protected):
        finding.evidence = finding.evidence[:4]


REDUCTIONS: tuple[Reduction, ...] = (
    _drop_secondary_commands,
    _shorten_timeline,
    _short_texts,
    _four_evidence_lines,
    _drop_info_findings,
    _one_evidence_line,
    _trim_job,
    _minimal,
)


def fit_to_budget(report: Report, budget: int = BUDGET_BYTES, protected: str | None = None) -> Report:
    """Shrink `report` in place until it fits; `protected` names the root cause's own finding."""
    for reduce in REDUCTIONS:
        if size_of(report) <= budget:
            break
        reduce(report, protected)
    return report
