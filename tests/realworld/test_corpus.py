"""Integrity of the real-world incident corpus (not the engine's score on it: see score.py)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.realworld.corpus import CASES_DIR, RECORD_NAME, Case, load_cases

CASES = load_cases()
MAX_CASES_PER_REPOSITORY = 6
MIN_CASES = 40
_CASE_NAME = re.compile(r"^\d{2}-[a-z0-9]+(-[a-z0-9]+)*$")
_GITHUB_WHERE = re.compile(r"^github:(?P<repo>[\w.-]+/[\w.-]+)#\d+$")


def _thread(case: Case) -> str:
    """The thread a case comes from, whatever the spelling of its address."""
    address = case.record.source.lower().rstrip("/").split("#", 1)[0]
    return re.sub(r"^https?://(www\.)?", "", address).replace("/pull/", "/issues/")


def test_every_case_directory_has_a_record() -> None:
    directories = [d.name for d in CASES_DIR.iterdir() if d.is_dir()]
    assert sorted(directories) == [case.name for case in CASES], f"a case directory lacks {RECORD_NAME}"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_is_well_formed(case: Case) -> None:
    assert _CASE_NAME.match(case.name), f"{case.name}: name is not NN-short-slug"
    assert case.log_files, f"{case.name}: no log file"
    texts = case.log_text()
    assert all(text.strip() for text in texts.values()), f"{case.name}: an empty log file"
    where = _GITHUB_WHERE.match(case.record.where)
    if case.record.source.startswith("https://github.com/"):
        assert where, f"{case.name}: where should be github:owner/repo#N"
        assert where["repo"].lower() in case.record.source.lower(), f"{case.name}: where and source differ"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_decisive_lines_occur_in_the_logs(case: Case) -> None:
    everything = "\n".join(case.log_text().values())
    missing = [line for line in case.record.decisive_lines if line not in everything]
    assert not missing, f"{case.name}: decisive lines not in its logs: {missing}"


def test_no_two_cases_come_from_the_same_thread() -> None:
    repeated = [thread for thread, n in Counter(_thread(case) for case in CASES).items() if n > 1]
    assert not repeated, f"threads used twice: {repeated}"


def test_no_repository_dominates_the_corpus() -> None:
    repositories = Counter(
        match["repo"].lower() for case in CASES if (match := _GITHUB_WHERE.match(case.record.where))
    )
    crowded = {repo: n for repo, n in repositories.items() if n > MAX_CASES_PER_REPOSITORY}
    assert not crowded, f"more than {MAX_CASES_PER_REPOSITORY} cases from one repository: {crowded}"


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= MIN_CASES, f"only {len(CASES)} cases, want at least {MIN_CASES}"
