"""What the culprit was doing and which transport each node chose (issue 14 item 3), read from
real files through the triage entry points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hyperpod_nccl.flight_recorder.join import split_inputs
from hyperpod_nccl.triage.discover import discover
from hyperpod_nccl.triage.engine import analyse, run_triage, window_reader
from hyperpod_nccl.triage.parallel import scan_all
from tests.triage import scenarios


def test_the_stalled_rank_shows_its_last_step_next_to_a_rank_that_waited(tmp_path: Path) -> None:
    planted = scenarios.straggler_2_4_per_rank(tmp_path)
    report = run_triage([planted.log_dir])
    culprit = next(a for a in report.activity if a.role == "culprit")
    assert culprit.rank == planted.culprit_ranks[0]
    assert culprit.last_progress is not None and "step" in culprit.last_progress.text
    assert culprit.last_progress.line < int(culprit.until.split()[1])
    waiting = [a for a in report.activity if a.role == "waiting"]
    assert all(a.rank not in planted.culprit_ranks for a in waiting)


def test_an_interleaved_file_quotes_only_the_culprits_own_lines(tmp_path: Path) -> None:
    planted = scenarios.straggler_current_slurm(tmp_path)  # one file per node, srun-labelled ranks
    report = run_triage([planted.log_dir])
    culprit = next(a for a in report.activity if a.role == "culprit")
    rank = planted.culprit_ranks[0]
    lines = [*([culprit.last_progress] if culprit.last_progress else []), *culprit.before]
    assert lines, culprit
    assert all(line.text.startswith(f"{rank}: ") for line in lines), lines


def test_one_node_on_tcp_among_efa_nodes_stands_out(tmp_path: Path) -> None:
    planted = scenarios.tcp_fallback_current_kubectl(tmp_path)
    report = run_triage([planted.log_dir])
    assert report.job is not None
    groups = {group.transport: group for group in report.job.transports}
    efa = next(g for name, g in groups.items() if name.startswith("EFA"))
    tcp = next(g for name, g in groups.items() if name.startswith("TCP"))
    assert efa.node_count == 3 and efa.nodes == []  # the majority is counted
    assert tcp.nodes == list(planted.culprit_nodes) and tcp.nics == 1  # the outlier is named
    assert "Selected provider is tcp" in tcp.evidence.text


def test_a_log_gone_before_the_look_back_says_so(tmp_path: Path) -> None:
    planted = scenarios.straggler_2_4_per_rank(tmp_path)
    found = discover([planted.log_dir], [])
    logs, _ = split_inputs(found.files)
    scans = scan_all(logs)
    for item in logs:  # rotated away between the scan and the look-back
        item.path.unlink()
    report = analyse(scans, found.skipped, reader=window_reader(logs))
    assert report.root_cause is not None and report.root_cause.culprit_ranks == list(planted.culprit_ranks)
    assert report.activity and all(a.note and "could not be read" in a.note for a in report.activity)


def test_garbage_and_a_huge_line_before_the_stall_do_not_leak_into_the_activity(tmp_path: Path) -> None:
    planted = scenarios.straggler_2_4_per_rank(tmp_path)
    rank = planted.culprit_ranks[0]
    culprit_log = next(
        p for p in planted.log_dir.rglob("*") if p.is_file() and p.name.endswith(f"-{rank}.out")
    )
    lines = culprit_log.read_bytes().split(b"\n")
    stall = next(i for i, line in enumerate(lines) if b"Last enqueued NCCL work" in line)
    junk = [b"\xff\xfe garbage \xc3\x28", b"x" * 2_000_000]
    culprit_log.write_bytes(b"\n".join([*lines[: stall - 1], *junk, *lines[stall - 1 :]]))
    report = run_triage([planted.log_dir])
    culprit = next(a for a in report.activity if a.role == "culprit")
    shown = [*([culprit.last_progress] if culprit.last_progress else []), *culprit.before]
    assert all(len(line.text) <= 200 for line in shown)
    assert report.root_cause is not None and report.root_cause.culprit_ranks == [rank]


def test_the_cli_prints_the_activity_and_the_transports(tmp_path: Path) -> None:
    planted = scenarios.tcp_fallback_current_kubectl(tmp_path)
    command = [sys.executable, "-m", "hyperpod_nccl", "triage", str(planted.log_dir)]
    printed = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False).stdout
    assert f"transport on {planted.culprit_nodes[0]}: TCP" in printed
    assert "transport on 3 nodes: EFA" in printed
    assert "What the culprit was doing" in printed


def test_a_culprit_silent_after_its_last_step_is_said_to_have_gone_silent(tmp_path: Path) -> None:
    """What it printed before a step that still worked is not what stopped it: a warning from the
    start of the run must not stand in for the stall."""
    planted = scenarios.straggler_2_4_per_rank(tmp_path)
    rank = planted.culprit_ranks[0]
    culprit_log = next(
        p for p in planted.log_dir.rglob("*") if p.is_file() and p.name.endswith(f"-{rank}.out")
    )
    lines = culprit_log.read_text().split("\n")
    first_step = next(i for i, line in enumerate(lines) if "step" in line)
    lines.insert(first_step, "UserWarning: an old warning from the start of the run")
    culprit_log.write_text("\n".join(lines))
    report = run_triage([planted.log_dir])
    culprit = next(a for a in report.activity if a.role == "culprit")
    assert culprit.last_progress is not None
    assert culprit.before == []  # the scenario's culprit writes nothing after its last step
    assert culprit.note is not None and "went silent" in culprit.note


def test_a_straggler_trigger_time_computed_from_the_watchdog_says_it_is_derived(tmp_path: Path) -> None:
    """The line the trigger cites was written when the watchdog fired; the time before it is the
    watchdog's time minus the timeout, and the chain says so rather than pass it off as read."""
    planted = scenarios.straggler_2_4_per_rank(tmp_path)
    report = run_triage([planted.log_dir])
    assert report.root_cause is not None
    trigger = report.root_cause.chain[0]
    assert trigger.startswith("trigger:") and "(derived: watchdog time − timeout)" in trigger, trigger


_TIMEOUT = (
    "[rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600659 "
    "milliseconds before timing out.\n"
)


def test_a_lone_console_lends_its_bare_lines_to_no_rank(tmp_path: Path) -> None:
    """The launcher prefixed rank 1's lines and left the rest bare: those may be the straggler's."""
    (tmp_path / "console.log").write_text(
        "Clustering 111099511 points in 128D to 524288 clusters, redo 1 times, 4 iterations\n"
        "  Preprocessing in 8.98 s\n" + _TIMEOUT
    )
    report = run_triage([tmp_path])
    waiting = next(a for a in report.activity if a.rank == 1)
    assert waiting.before == [] and waiting.note
    assert "may be another rank's" in waiting.note and "line 1: Clustering" in waiting.note


def test_a_ranks_own_file_keeps_its_bare_lines(tmp_path: Path) -> None:
    """Beside other one-rank files, bare lines (stdout, NCCL's own output) are the file's rank's."""
    (tmp_path / "rank1.log").write_text("loading shard 7 of 8 from /fsx/data\n" + _TIMEOUT)
    (tmp_path / "rank2.log").write_text("[rank2]:[W Utils.hpp:133] Warning: NCCL_DEBUG set\n")
    report = run_triage([tmp_path])
    waiting = next(a for a in report.activity if a.rank == 1)
    assert [line.text for line in waiting.before] == ["loading shard 7 of 8 from /fsx/data"]
