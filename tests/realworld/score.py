"""Score the triage engine on real-world incidents: `python -m tests.realworld.score [--cases DIR] [--json]`.

Each case is triaged exactly as the CLI would (`run_triage` on the case's log files; `case.json`
is never part of the input) and the report is compared with what the thread established:

- right:   the root cause's category matches, and so does the culprit where the case names one;
- partial: the category matches but the culprit does not, or the report says `unknown`;
- wrong:   a root cause of another category;
- silent:  no root cause, or no P0/P1 finding (exit status 0), although every case holds a failure.

Independently of the verdict, every evidence line the report quotes must occur in the case's
input: a quoted line that does not is listed as invented.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

from hyperpod_nccl.guard.redact import redact_text
from hyperpod_nccl.models import Category, Report
from hyperpod_nccl.triage.engine import run_triage
from tests.realworld.corpus import CASES_DIR, Case, load_cases

_ELLIPSIS = "…"  # the report budget shortens long evidence texts with this suffix


class Verdict(StrEnum):
    RIGHT = "right"
    PARTIAL = "partial"
    WRONG = "wrong"
    SILENT = "silent"


@dataclass(frozen=True)
class CaseScore:
    case: str
    verdict: Verdict
    expected: str
    got: str | None
    expected_ranks: list[int]
    expected_nodes: list[str]
    got_ranks: list[int]
    got_nodes: list[str]
    exit_status: int
    invented_evidence: list[str] = field(default_factory=list)
    note: str = ""


def triage_case(case: Case) -> Report:
    return run_triage(case.log_files)


def _short_host(name: str) -> str:
    return name.strip().lower().split(".", 1)[0]


def _same_nodes(expected: Iterable[str], got: Iterable[str]) -> bool:
    return {_short_host(n) for n in expected} == {_short_host(n) for n in got}


def invented_evidence(report: Report, case: Case) -> list[str]:
    """Evidence texts the report quotes that occur nowhere in the case's input."""
    texts = {name: redact_text(text) for name, text in case.log_text().items()}
    everything = "\n".join(texts.values())
    invented: list[str] = []
    for finding in report.findings:
        for item in finding.evidence:
            quoted = item.text.removesuffix(_ELLIPSIS).strip()
            if not quoted:
                continue
            haystack = texts.get(item.source, everything)
            if quoted not in haystack and quoted not in everything:
                invented.append(f"{finding.id}: {item.source}:{item.line}: {item.text[:120]}")
    return invented


def judge(case: Case, report: Report) -> CaseScore:
    record = case.record
    cause = report.root_cause
    exit_status = 1 if report.blocking else 0
    got_ranks = sorted(cause.culprit_ranks) if cause else []
    got_nodes = sorted(cause.culprit_nodes) if cause else []
    note = ""
    if cause is None or not report.blocking:
        verdict = Verdict.SILENT
        note = "no root cause" if cause is None else "root cause without a P0/P1 finding (exit 0)"
    elif cause.category == record.category:
        ranks_ok = not record.culprit_ranks or set(got_ranks) == set(record.culprit_ranks)
        nodes_ok = not record.culprit_nodes or _same_nodes(record.culprit_nodes, got_nodes)
        verdict = Verdict.RIGHT if ranks_ok and nodes_ok else Verdict.PARTIAL
        if verdict is Verdict.PARTIAL:
            note = "culprit differs"
    elif cause.category == Category.UNKNOWN:
        verdict = Verdict.PARTIAL
        note = "category unknown"
    else:
        verdict = Verdict.WRONG
    return CaseScore(
        case=case.name,
        verdict=verdict,
        expected=record.category.value,
        got=cause.category.value if cause else None,
        expected_ranks=sorted(record.culprit_ranks),
        expected_nodes=sorted(record.culprit_nodes),
        got_ranks=got_ranks,
        got_nodes=got_nodes,
        exit_status=exit_status,
        invented_evidence=invented_evidence(report, case),
        note=note,
    )


def score_case(case: Case) -> CaseScore:
    try:
        report = triage_case(case)
    except Exception as error:  # a crash on real input is scored, not raised: the run goes on
        record = case.record
        return CaseScore(
            case=case.name,
            verdict=Verdict.SILENT,
            expected=record.category.value,
            got=None,
            expected_ranks=sorted(record.culprit_ranks),
            expected_nodes=sorted(record.culprit_nodes),
            got_ranks=[],
            got_nodes=[],
            exit_status=2,
            note=f"engine raised {type(error).__name__}: {error}",
        )
    return judge(case, report)


def score_corpus(root: Path = CASES_DIR) -> list[CaseScore]:
    return [score_case(case) for case in load_cases(root)]


def totals(scores: Sequence[CaseScore]) -> dict[str, int]:
    counts = Counter(score.verdict for score in scores)
    result = {verdict.value: counts.get(verdict, 0) for verdict in Verdict}
    result["cases"] = len(scores)
    result["invented_evidence"] = sum(len(score.invented_evidence) for score in scores)
    return result


def _culprit(ranks: Sequence[int], nodes: Sequence[str]) -> str:
    parts = []
    if ranks:
        parts.append("ranks " + ",".join(map(str, ranks)))
    if nodes:
        parts.append("nodes " + ",".join(nodes))
    return f" ({'; '.join(parts)})" if parts else ""


def render_line(score: CaseScore) -> str:
    expected = score.expected + _culprit(score.expected_ranks, score.expected_nodes)
    got = (score.got or "-") + _culprit(score.got_ranks, score.got_nodes)
    line = f"{score.verdict.value:<8} {score.case:<48} expected {expected:<28} got {got}"
    if score.note:
        line += f"  [{score.note}]"
    if score.invented_evidence:
        line += f"  [{len(score.invented_evidence)} evidence line(s) not in the input]"
    return line


def render_text(scores: Sequence[CaseScore]) -> str:
    lines = [render_line(score) for score in scores]
    summary = totals(scores)
    lines.append("")
    lines.append(
        f"{summary['cases']} cases: {summary['right']} right, {summary['partial']} partial, "
        f"{summary['wrong']} wrong, {summary['silent']} silent; "
        f"{summary['invented_evidence']} evidence line(s) not in the input"
    )
    for score in scores:
        lines.extend(f"  invented in {score.case}: {text}" for text in score.invented_evidence)
    return "\n".join(lines) + "\n"


def render_json(scores: Sequence[CaseScore]) -> str:
    payload = {"totals": totals(scores), "cases": [asdict(score) for score in scores]}
    return json.dumps(payload, indent=2) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=CASES_DIR, help="directory of case folders")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = parser.parse_args(argv)
    if not args.cases.is_dir():
        print(f"score: {args.cases} is not a directory", file=sys.stderr)
        return 2
    scores = score_corpus(args.cases)
    if not scores:
        print(f"score: no case.json under {args.cases}", file=sys.stderr)
        return 2
    sys.stdout.write(render_json(scores) if args.json else render_text(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
