"""The triage engine's score on the real-world corpus (issue 16, "Done when"): at least 90 % of
the cases right (category, and culprit where the thread names one), no visible failure answered
with exit 0, and no quoted evidence line that is not in the input."""

from __future__ import annotations

import pytest

from tests.realworld.score import CaseScore, Verdict, render_line, score_corpus, totals

RIGHT_AT_LEAST = 0.90


@pytest.fixture(scope="module")
def scores() -> list[CaseScore]:
    return score_corpus()


def test_at_least_nine_in_ten_cases_are_right(scores: list[CaseScore]) -> None:
    summary = totals(scores)
    not_right = "\n".join(render_line(s) for s in scores if s.verdict is not Verdict.RIGHT)
    assert summary["right"] >= RIGHT_AT_LEAST * summary["cases"], f"{summary}\n{not_right}"


def test_no_visible_failure_is_answered_with_exit_0(scores: list[CaseScore]) -> None:
    silent = [render_line(s) for s in scores if s.verdict is Verdict.SILENT or s.exit_status == 0]
    assert silent == [], "\n".join(silent)


def test_every_quoted_evidence_line_is_in_the_input(scores: list[CaseScore]) -> None:
    invented = [f"{s.case}: {text}" for s in scores for text in s.invented_evidence]
    assert invented == [], "\n".join(invented)
