"""Property-based fuzzing of what reads outside data: the log line parsers, the Slurm parsers, the
node probe parser, the snapshot loader (with the analyzers a replay runs) and the redactor. Inputs
are recorded, realistic text with lines replaced, cut or garbled. No exception escapes, outputs
stay bounded, and redaction is idempotent. (The Flight Recorder dump reader is fuzzed beside it.)"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperpod_nccl.diagnose.service import diagnose
from hyperpod_nccl.guard.redact import MASK, redact_text
from hyperpod_nccl.probes.parse.node import parse_node
from hyperpod_nccl.render import render_json, render_text
from hyperpod_nccl.slurm.hostlist import expand_hostlist
from hyperpod_nccl.slurm.probe import snapshot_from_output
from hyperpod_nccl.slurm.service import slurm_report
from hyperpod_nccl.snapshot import Snapshot, UnusableSnapshot
from hyperpod_nccl.triage.discover import InputFile
from hyperpod_nccl.triage.engine import analyse, run_triage
from hyperpod_nccl.triage.patterns import EVENT_PATTERNS, FACT_PATTERNS, STORAGE_PATTERNS
from hyperpod_nccl.triage.prefixes import strip
from hyperpod_nccl.triage.run_facts import RUN_FACTS
from hyperpod_nccl.triage.scanner import scan_input
from tests.probes.plant import healthy, node, report
from tests.skill import secrets

ROOT = Path(__file__).parents[2]
LOG_LINES = (ROOT / "examples" / "training-hang" / "logs" / "error-51877-0.out").read_text().splitlines()
SLURM_OUTPUT = (ROOT / "tests" / "slurm" / "recorded" / "slurm-24.11.txt").read_text()
SNAPSHOT = json.loads((ROOT / "examples" / "eks-cluster-bundle" / "snapshot.json").read_text())
# FUZZ_EXAMPLES=2000 digs deeper by hand; CI keeps the default.
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

garbage = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda raw: raw.decode("latin-1")),
    st.sampled_from(
        ["\x1b]0;x\x07", "\x00", "[" * 50, "=" * 80, "NodeName=", "| | |", "x" * 70_000, "key" * 9_000]
    ),
)


@st.composite
def mutated(draw: st.DrawFn, lines: list[str]) -> list[str]:
    """Recorded lines with some replaced by garbage, some garbled, and the whole maybe cut short."""
    lines = list(lines)
    for _ in range(draw(st.integers(0, 12))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["replace", "insert", "garble", "drop"]))
        if action == "replace":
            lines[index] = draw(garbage)
        elif action == "insert":
            lines.insert(index, draw(garbage))
        elif action == "garble":
            cut = draw(st.integers(0, len(lines[index])))
            lines[index] = lines[index][:cut] + draw(garbage) + lines[index][cut:]
        elif len(lines) > 1:
            del lines[index]
    return lines[: draw(st.integers(1, len(lines)))]


@FUZZ
@given(
    st.one_of(
        garbage, st.sampled_from(LOG_LINES).flatmap(lambda line: st.just(line) | garbage.map(line.__add__))
    )
)
def test_the_log_prefix_stripper_takes_any_line(line: str) -> None:
    strip(line)


@FUZZ
@given(mutated(LOG_LINES[:400]), st.booleans())
def test_the_log_scanner_reads_any_file_into_a_bounded_report(lines: list[str], compressed: bool) -> None:
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rank-0.out"
        path.write_bytes(gzip.compress(data)[: len(data) // 2] if compressed else data)
        scan = scan_input(InputFile(path, "rank-0.out", storage=False, size=path.stat().st_size))
    text = render_text(analyse([scan], []))
    assert len(text) < 200_000


@FUZZ
@given(mutated(SLURM_OUTPUT.splitlines()))
def test_the_slurm_parsers_read_any_probe_output(lines: list[str]) -> None:
    slurm = snapshot_from_output("\n".join(lines), job_id="4242")
    result = slurm_report(Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm))
    assert len(render_json(result)) < 1_000_000


@FUZZ
@given(st.text(alphabet="n[]-,0123456789()", max_size=60))
def test_a_host_list_never_explodes(text: str) -> None:
    assert len(expand_hostlist(text)) <= 20_001


@FUZZ
@given(mutated(healthy().splitlines()))
def test_the_node_probe_parser_reads_any_output(lines: list[str]) -> None:
    output = "\n".join(lines)
    parse_node(output)
    report(node(output))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: object, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            found += _paths(item, (*path, index))
    return found


SNAPSHOT_PATHS = [path for path in _paths(SNAPSHOT) if path]


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(SNAPSHOT_PATHS), JSON), min_size=1, max_size=6), st.integers(0, 3))
def test_a_bundle_replays_or_says_why_whatever_its_snapshot_holds(changes: list, cut: int) -> None:
    data = json.loads(json.dumps(SNAPSHOT))
    for path, value in changes:
        target = data
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    raw = json.dumps(data).encode()
    if cut:
        raw = raw[: len(raw) * cut // 4]
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "snapshot.json").write_bytes(raw)
        try:
            snapshot = Snapshot.load(Path(folder))
        except UnusableSnapshot as error:
            assert "\n" not in str(error) and len(str(error)) < 1_000
            return
    result = diagnose(snapshot)
    assert len(render_text(result)) < 1_000_000


@FUZZ
@given(st.lists(st.one_of(garbage, st.sampled_from(secrets.FREE_TEXT_LINES)), max_size=8))
def test_redaction_is_idempotent_bounded_and_masks_planted_lines_among_garbage(lines: list[str]) -> None:
    text = "\n".join(lines)
    once = redact_text(text)
    assert redact_text(once) == once
    assert len(once) <= 3 * len(text) + len(MASK)
    planted = "\n".join(line for line in lines if line in secrets.FREE_TEXT_LINES)
    assert [kind for kind in secrets.leaks(once) if kind in secrets.leaks(planted)] == []


# Lines an attacker can put in a log or a probe's output to make a backtracking regex run for
# minutes: long runs of one character class, and the words some patterns key on, repeated.
ADVERSARIAL = [
    run * (65_536 // len(run))
    for run in ("x", "1", "a:", " a", "=a", "[rank1]:", "key", "http://a:", "--", "NodeName=", "sk-", "eyJ")
] + [
    "RendezvousTimeoutError " + "1" * 65_000,
    "eth0 " + "x" * 65_000 + " Link down",
    "[a" + "1" * 65_000,  # a torchrun-style tag that never closes
    "[PG 1 " * 10_000,  # a process-group tag that never closes, repeated
]


def test_no_parser_or_redaction_rule_backtracks_for_long_on_a_crafted_line(tmp_path: Path) -> None:
    started = time.monotonic()
    for line in ADVERSARIAL:
        redact_text(line)
        strip(line)
        parse_node(f"===== hyperpod-nccl:section kernel_log =====\n{line}\n")
        snapshot_from_output(f"===== hyperpod-nccl:section nodes =====\n{line}\n", job_id="1")
    logs = tmp_path / "rank-0.out"
    logs.write_text("\n".join(ADVERSARIAL) + "\n")
    scan_input(InputFile(logs, "rank-0.out", storage=False, size=logs.stat().st_size))
    # Linear work is well under a second here; a quadratic rule took 30 s for one line.
    assert time.monotonic() - started < 20


# Runs that make a pattern's parts compete for the same characters: whitespace between optional
# separators, digits a number and a file name can both take, words a lazy group stops at.
_CONTESTED_RUNS = (" ", "\t", "1", "a1 ", "[PG 1 ", "[a1", "File (", "start", "resum", ":Request")


def test_no_catalogue_pattern_backtracks_for_long_on_a_line_that_holds_its_anchor() -> None:
    """Each event and fact pattern, on 16 KB lines that hold its anchor beside a contested run (the
    dispatcher only runs a pattern on a line that holds one of its anchors): linear work is a few
    milliseconds; a quadratic pattern takes seconds."""
    slow = {}
    for pattern in (*EVENT_PATTERNS, *FACT_PATTERNS, *STORAGE_PATTERNS, *RUN_FACTS):
        anchor = pattern.anchors[0]
        for run in _CONTESTED_RUNS:
            body = run * (16_384 // len(run))
            for line in (body + anchor, anchor + body, f"{anchor} {body} {anchor}"):
                started = time.monotonic()
                pattern.parse(line)
                taken = time.monotonic() - started
                if taken > 0.5:
                    slow[(pattern.kind, anchor, run)] = round(taken, 2)
    assert slow == {}


def test_a_timeout_no_process_could_wait_is_read_as_unknown_not_a_crash(tmp_path: Path) -> None:
    """A watchdog line stating a timeout of 10^20 ms (garbled or crafted): the times derived from it
    are left out, and the rest of the report still comes."""
    stamp = "[2026-11-27 10:00:00,000] train.py:1 step 1\n"
    for rank, timeout in ((0, "99999999999999999999"), (1, "99999999999999")):
        (tmp_path / f"rank{rank}.log").write_text(
            stamp
            + f"[rank{rank}]:[E1127 10:30:00.000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)={timeout}) ran for 600043 milliseconds before timing out.\n"
        )
    report = run_triage([tmp_path])
    assert report.root_cause is not None
    assert all("≈" not in step for step in report.root_cause.chain)  # no collective start derived


def test_world_sizes_and_rank_lists_no_job_could_have_are_not_expanded(tmp_path: Path) -> None:
    """A communicator of 10^11 ranks, a rank numbered 10^11, an srun task range of as many: read as
    no rank at all, where expanding them would exhaust memory."""
    huge = "99999999999"
    (tmp_path / "rank0.log").write_text(
        f"gpu-a:11:12 [0] NCCL INFO comm 0x55 rank 0 nranks {huge} cudaDev 0 busId 1b000 - Init COMPLETE\n"
        f"[rank{huge}]: RuntimeError: boom\n"
        f"srun: error: gpu-b: tasks 0-{huge}: Exited with exit code 1\n"
        f"MEMBER: 1/{huge}\n"
    )
    report = run_triage([tmp_path])
    assert report.root_cause is not None
    assert report.job is None or (report.job.world_size or 0) < 1 << 20


def test_stamps_at_the_calendars_ends_are_left_undated_not_a_crash(tmp_path: Path) -> None:
    """Year 1 and year 9999 (a garbled or crafted stamp): the times around them would leave the
    calendar; they are read as undated lines and the report still comes."""
    (tmp_path / "rank0.log").write_text(
        "[0001-01-01 00:00:00,000] trainer started\n"
        "[0001-01-01 00:01:00,000] RuntimeError: NCCL error: unhandled system error\n"
        "[9999-12-31 23:59:59,000] Killed process 1234 (python)\n"
    )
    report = run_triage([tmp_path])
    assert report.root_cause is not None
    assert all(entry.time is None for entry in report.timeline)
