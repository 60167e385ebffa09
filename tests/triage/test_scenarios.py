"""The triage engine against the incident corpus: right category, right culprit, honest evidence.

Each scenario in `scenarios.py` writes a realistic job's logs and says what it planted; these
tests only compare the engine's report with that record. The first tests check the generator
itself, so a failure below them is the engine's, not the fixture's.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hyperpod_nccl.models import Category, Priority, Report, Status
from tests.next_steps.check import next_step_problems
from tests.triage import scenarios
from tests.triage.formats import TorchWording
from tests.triage.loggen import Layout, Planted

REPO = Path(__file__).resolve().parents[2]
BLOCKING = (Priority.P0, Priority.P1)


def triage(log_dir: Path, storage_dir: Path | None = None) -> Report:
    # Imported here so that each test fails on its own while the engine is missing or partial.
    from hyperpod_nccl.triage.engine import run_triage

    return run_triage([log_dir], [storage_dir] if storage_dir else [])


def triage_planted(planted: Planted) -> Report:
    return triage(planted.log_dir, planted.storage_dir)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "hyperpod_nccl", "triage", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def relative_source(source: str, log_dir: Path) -> str:
    """Evidence may name a file relative to the log directory or by absolute path."""
    path = Path(source)
    if path.is_absolute():
        try:
            return path.relative_to(log_dir).as_posix()
        except ValueError:
            return source
    return path.as_posix()


def read_line(path: Path, number: int) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for current, line in enumerate(handle, 1):
            if current == number:
                return line.rstrip("\n")
    raise AssertionError(f"{path} has fewer than {number} lines")


def describe(report: Report) -> str:
    """What the engine concluded, for assertion messages."""
    cause = report.root_cause
    head = (
        "root_cause=None"
        if cause is None
        else (
            f"root_cause={cause.category} ranks={cause.culprit_ranks} nodes={cause.culprit_nodes}: "
            f"{cause.summary}"
        )
    )
    issues = [f"  [{f.status} {f.priority}] {f.id}: {f.title}" for f in report.findings if f.is_issue]
    return "\n".join([head, *issues])


def cited_evidence(report: Report, log_dir: Path) -> dict[tuple[str, int], str]:
    """(file, line) → text of every evidence line cited by a FAIL or WARN finding."""
    return {
        (relative_source(e.source, log_dir), e.line): e.text
        for finding in report.findings
        if finding.status in (Status.FAIL, Status.WARN)
        for e in finding.evidence
        if e.line is not None
    }


def assert_collective_dated(report: Report, planted: Planted) -> None:
    """Some timeline event dates the stuck collective: watchdog time minus the timeout, to the second."""
    assert planted.collective_issued_at is not None
    # The generated logs write UTC without a zone, and zone-less times are printed as written.
    times = [datetime.fromisoformat(e.time.removesuffix("Z")) for e in report.timeline if e.time]
    issued = planted.collective_issued_at.replace(tzinfo=None)
    closest = min((abs(t - issued) for t in times), default=None)
    assert closest is not None and closest <= timedelta(seconds=2), (
        f"{planted.name}: nothing near {planted.collective_issued_at} in "
        f"{[(e.time, e.event) for e in report.timeline]}"
    )


def assert_acts(report: Report, planted: Planted) -> None:
    """What an assistant acts on: the cause first, no event counted twice, and for every FAIL or
    WARN a command to run (from its section, with the values the logs hold) or why there is none."""
    story = f"{planted.name}: {planted.story}\nengine: {describe(report)}"
    cause = report.root_cause
    assert cause is not None and report.findings[0].id == cause.finding, story
    assert report.findings[0].priority == Priority.P0, story
    merged = [i for f in report.findings for i in f.also_reported_as]
    assert not set(merged) & {f.id for f in report.findings}, story
    assert next_step_problems(report) == [], story


def assert_diagnosed(report: Report, planted: Planted) -> None:
    cause = report.root_cause
    story = f"{planted.name}: {planted.story}\nengine: {describe(report)}"
    assert cause is not None, story
    assert cause.category == Category(planted.category), story
    assert sorted(cause.culprit_ranks) == list(planted.culprit_ranks), story
    assert sorted(cause.culprit_nodes) == sorted(planted.culprit_nodes), story
    cited = cited_evidence(report, planted.log_dir)
    found = [e for e in planted.evidence if (e.file, e.line) in cited]
    assert found, f"{story}\nno decisive line of {planted.evidence} is cited; cited: {sorted(cited)[:20]}"
    assert all(e.contains in cited[(e.file, e.line)] for e in found), story


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Planted]:
    root = tmp_path_factory.mktemp("corpus")
    made = [make(root / make.__name__) for make in (*scenarios.INCIDENTS, scenarios.healthy_with_noise)]
    return {planted.name: planted for planted in made}


INCIDENT_NAMES = [make.__name__ for make in scenarios.INCIDENTS]


# --- the generator tells the truth --------------------------------------------------------------


def test_corpus_covers_every_category_two_wordings_and_two_layouts(corpus: dict[str, Planted]) -> None:
    incidents = [p for p in corpus.values() if p.category is not None]
    assert len(incidents) >= 20
    assert {p.category for p in incidents} == {c.value for c in Category}
    assert len({p.torch for p in incidents}) >= 2
    assert {Layout.SLURM_NODE, Layout.PER_RANK, Layout.TORCHRUN, Layout.KUBECTL} <= {
        p.layout for p in incidents
    }


def test_planted_evidence_lines_hold_what_the_generator_claims(corpus: dict[str, Planted]) -> None:
    for planted in corpus.values():
        for evidence in planted.evidence:
            line = read_line(planted.log_dir / evidence.file, evidence.line)
            assert evidence.contains in line, f"{planted.name}: {evidence} reads {line!r}"


def test_every_incident_plants_a_decisive_line(corpus: dict[str, Planted]) -> None:
    assert all(p.evidence for p in corpus.values() if p.category is not None)


def test_regenerating_a_scenario_gives_identical_files(tmp_path: Path) -> None:
    first = scenarios.ecc_current_kubectl_journal(tmp_path / "a")
    second = scenarios.ecc_current_kubectl_journal(tmp_path / "b")
    files = sorted(p.relative_to(first.log_dir) for p in first.log_dir.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second.log_dir) for p in second.log_dir.rglob("*") if p.is_file())
    for file in files:
        assert (first.log_dir / file).read_bytes() == (second.log_dir / file).read_bytes(), file


# --- the engine against the corpus ----------------------------------------------------------------


@pytest.mark.parametrize("name", INCIDENT_NAMES)
def test_incident_gets_its_category_culprit_and_decisive_evidence(
    corpus: dict[str, Planted], name: str
) -> None:
    planted = corpus[name]
    report = triage_planted(planted)
    assert_diagnosed(report, planted)
    assert_acts(report, planted)


@pytest.mark.parametrize(
    ("name", "make"), scenarios.variants(), ids=[name for name, _ in scenarios.variants()]
)
def test_incident_is_found_whatever_the_wording_layout_and_culprit(
    tmp_path: Path, name: str, make: Callable[[Path], Planted]
) -> None:
    planted = make(tmp_path)
    report = triage_planted(planted)
    assert_diagnosed(report, planted)
    assert_acts(report, planted)
    if planted.collective_issued_at and TorchWording(planted.torch).timestamped:
        assert_collective_dated(report, planted)


def test_healthy_run_full_of_noise_has_no_root_cause_and_no_blocking_issue(
    corpus: dict[str, Planted],
) -> None:
    report = triage_planted(corpus["healthy_with_noise"])
    assert report.root_cause is None, describe(report)
    blocking = [f.id for f in report.findings if f.is_issue and f.priority in BLOCKING]
    assert blocking == [], describe(report)


def test_timeline_dates_the_stuck_collective_as_watchdog_time_minus_timeout(
    corpus: dict[str, Planted],
) -> None:
    planted = corpus["straggler_current_slurm"]
    assert_collective_dated(triage_planted(planted), planted)


def test_recovered_connection_resets_are_called_noise_not_a_cause(corpus: dict[str, Planted]) -> None:
    report = triage_planted(corpus["straggler_current_slurm"])
    assert report.root_cause is not None
    assert report.root_cause.category != Category.STORAGE_IO, describe(report)


def test_straggler_report_for_1024_ranks_stays_under_8_kb_and_names_the_straggler(tmp_path: Path) -> None:
    planted = scenarios.straggler_at_scale(tmp_path)
    report = triage_planted(planted)
    assert_diagnosed(report, planted)
    size = len(report.model_dump_json().encode())
    assert size < 8 * 1024, f"{size} bytes of JSON for {planted.world_size} ranks"


# --- the CLI, end to end ---------------------------------------------------------------------------


def test_cli_exits_1_with_the_root_cause_in_json_when_it_finds_an_incident(
    corpus: dict[str, Planted],
) -> None:
    planted = corpus["host_oom_slurm_cgroup_2_3"]
    result = cli(planted.log_dir, "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["kind"] == "triage"
    assert report["root_cause"]["category"] == planted.category
    assert report["root_cause"]["culprit_ranks"] == list(planted.culprit_ranks)


@pytest.mark.parametrize("form", ["--storage", "two folders"])
def test_cli_reads_the_storage_logs_given_with_storage_or_as_the_second_folder(
    corpus: dict[str, Planted], form: str
) -> None:
    planted = corpus["storage_retries_exhausted_current_per_rank"]
    assert planted.storage_dir is not None
    storage = ["--storage", planted.storage_dir] if form == "--storage" else [planted.storage_dir]
    result = cli(planted.log_dir, *storage, "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["root_cause"]["category"] == "storage_io"
    assert any(f["id"].startswith("triage.storage.ais") for f in report["findings"])
    assert ("two-folder form" in result.stderr) == (form == "two folders")


def test_cli_reads_every_file_it_is_given_as_worker_logs(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("RuntimeError: NCCL error: unhandled cuda error, NCCL version 2.10.3\n")
    (tmp_path / "dmesg.txt").write_text(
        "[1.0] NVRM: Xid (PCI:0000:53:00): 79, pid=4242, GPU has fallen off the bus.\n"
    )
    result = cli(tmp_path / "a.txt", tmp_path / "dmesg.txt", "--json")
    report = json.loads(result.stdout)
    assert report["summary"]["files_read"] == 2, result.stderr
    assert report["root_cause"]["category"] == "gpu_hardware"


def test_cli_exits_0_on_a_healthy_run(corpus: dict[str, Planted]) -> None:
    result = cli(corpus["healthy_with_noise"].log_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["root_cause"] is None


def test_cli_prints_a_text_report_by_default(corpus: dict[str, Planted]) -> None:
    result = cli(corpus["straggler_current_slurm"].log_dir)
    assert result.returncode == 1, result.stderr
    assert "43" in result.stdout


def test_cli_exits_2_with_one_line_on_stderr_for_a_missing_path(tmp_path: Path) -> None:
    result = cli(tmp_path / "no-such-dir", "--json")
    assert result.returncode == 2
    assert result.stderr.strip() and len(result.stderr.strip().splitlines()) == 1


def test_cli_exits_2_for_an_empty_directory(tmp_path: Path) -> None:
    result = cli(tmp_path, "--json")
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip()


# --- bad input is reported, never fatal --------------------------------------------------------------


def skipped_reason(report: Report, name: str) -> str | None:
    return next((s.reason for s in report.skipped if name in s.source), None)


@pytest.fixture
def healthy_dir(tmp_path: Path) -> Path:
    return scenarios.healthy_with_noise(tmp_path / "logs").log_dir


def _binary(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 256)


def _truncated_gz(path: Path) -> None:
    whole = gzip.compress(("[INFO] step=1 loss=2.0\n" * 20_000).encode(), mtime=0)
    path.write_bytes(whole[: len(whole) * 2 // 3])


def _symlink_loop(path: Path) -> None:
    partner = path.with_name("loop-b.log")
    path.symlink_to(partner.name)
    partner.symlink_to(path.name)


def _dangling_symlink(path: Path) -> None:
    path.symlink_to("/nonexistent/hyperpod-nccl/rank-3.log")


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("core.48213.bin", _binary),
        ("error-4242-9.out.gz", _truncated_gz),
        ("loop-a.log", _symlink_loop),
        ("rank-3.log", _dangling_symlink),
    ],
    ids=["binary", "truncated-gz", "symlink-loop", "unreadable-dangling-symlink"],
)
def test_bad_input_lands_in_skipped_with_a_reason(
    healthy_dir: Path, name: str, make: Callable[[Path], None]
) -> None:
    make(healthy_dir / name)
    report = triage(healthy_dir)
    reason = skipped_reason(report, name)
    assert reason, f"{name} not in skipped: {report.skipped}"
    assert report.root_cause is None, describe(report)


def test_unreadable_file_lands_in_skipped(healthy_dir: Path) -> None:
    locked = healthy_dir / "rank-5.log"
    locked.write_text("[INFO] step=1 loss=2.0\n")
    locked.chmod(0)
    if os.access(locked, os.R_OK):
        pytest.skip(
            "running as root: chmod 000 does not make a file unreadable (see the dangling-symlink case)"
        )
    assert skipped_reason(triage(healthy_dir), "rank-5.log")


def test_a_100_mb_line_is_skipped_with_a_reason_and_the_rest_is_still_read(tmp_path: Path) -> None:
    planted = scenarios.cuda_oom_2_1_slurm(tmp_path / "logs")
    with (planted.log_dir / "runaway-print.log").open("w") as handle:
        handle.write("x" * 100 * 1024 * 1024 + "\n")
    report = triage(planted.log_dir)
    assert skipped_reason(report, "runaway-print.log")
    assert_diagnosed(report, planted)


def test_crlf_and_invalid_utf8_logs_are_still_diagnosed(tmp_path: Path) -> None:
    """Windows line endings and stray undecodable bytes are damage to read through, not a reason to
    drop a log."""
    planted = scenarios.python_exception_current_slurm(tmp_path / "logs")
    for path in planted.log_dir.glob("error-*.out"):
        data = path.read_bytes().replace(b"\n", b"\r\n")
        path.write_bytes(data.replace(b"tokens/s=152103", b"tokens/s=\xff\xfe152103", 3))
    report = triage(planted.log_dir)
    assert_diagnosed(report, planted)
    assert not [e.text for f in report.findings for e in f.evidence if "\r" in e.text]


def test_a_directory_symlink_loop_does_not_hang_or_double_count(tmp_path: Path) -> None:
    planted = scenarios.cuda_oom_2_1_slurm(tmp_path / "logs")
    (planted.log_dir / "again").symlink_to(".")
    report = triage(planted.log_dir)
    assert_diagnosed(report, planted)
    assert report.summary.ranks_seen == planted.world_size


# --- the demo example ------------------------------------------------------------------------------


EXAMPLE = REPO / "examples" / "training-hang" / "logs"


def test_the_committed_example_is_what_the_generator_writes(tmp_path: Path) -> None:
    fresh = scenarios.training_hang_example(tmp_path / "logs")
    committed = sorted(p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*") if p.is_file())
    assert committed == sorted(p.relative_to(fresh.log_dir) for p in fresh.log_dir.rglob("*") if p.is_file())
    for file in committed:
        assert (EXAMPLE / file).read_bytes() == (fresh.log_dir / file).read_bytes(), file


def test_the_example_triage_names_the_stalled_rank(tmp_path: Path) -> None:
    planted = scenarios.training_hang_example(tmp_path / "logs")
    assert_diagnosed(triage(EXAMPLE), replace(planted, log_dir=EXAMPLE))
