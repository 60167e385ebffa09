"""Dumps and logs of the same job in one triage report: found among the logs by their content,
the rank states confirmed or corrected, a disagreement said, and the CLI and the MCP tool
carrying it; dumps alone are a valid input."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from hyperpod_nccl.rankset import expand
from hyperpod_nccl.triage.budget import BUDGET_BYTES
from hyperpod_nccl.triage.engine import run_triage
from tests.flight_recorder.conftest import GLOO
from tests.flight_recorder.ncclgen import job, write_job
from tests.flight_recorder.test_reader_safety import _WritesAFile
from tests.servers.mcp_stdio import serve
from tests.triage.loggen import COLLECTIVES_PER_STEP
from tests.triage.scenarios import STEPS, straggler_2_4_per_rank, straggler_current_slurm


def _dumps_for(directory: Path, world: int, culprit: int, *, tamper: dict[int, int] | None = None) -> None:
    """NCCL dumps that tell the same story as the logs: every rank completed the training steps'
    collectives, all but `culprit` started the next all_reduce. `tamper` makes a rank's dump
    claim it completed that many more collectives than its log says."""
    base = STEPS * COLLECTIVES_PER_STEP
    ranks = job(world)
    for rank in ranks:
        extra = (tamper or {}).get(rank.rank, 0)
        for _ in range(base + extra):
            rank.collective("all_reduce", [9_801_523], where=("sync_gradients", 88))
        if rank.rank != culprit:
            rank.collective("all_reduce", [9_801_523], state="started", where=("sync_gradients", 88))
    write_job(ranks, directory)


def _finding(report, finding_id: str):
    return next(f for f in report.findings if f.id == finding_id)


def test_dumps_beside_the_logs_confirm_the_watchdog_states_in_one_report(tmp_path: Path) -> None:
    planted = straggler_current_slurm(tmp_path / "logs")
    _dumps_for(tmp_path / "logs" / "fr", planted.world_size, 43)
    report = run_triage([tmp_path / "logs"])
    assert report.root_cause.culprit_ranks == [43]
    assert report.root_cause.category == "data_loading_stall"
    ids = {f.id for f in report.findings}
    assert {"triage.nccl.straggler", "flight_recorder.missing_rank"} <= ids
    assert (
        "The dumps confirm the watchdog state of ranks 0-63"
        in _finding(report, "flight_recorder.coverage").detail
    )
    missing = _finding(report, "flight_recorder.missing_rank")
    assert missing.ranks == [43] and missing.nodes == [planted.culprit_nodes[0]]  # nodes from the logs
    assert {e.source.split("/")[0] for e in missing.evidence} == {"fr"}
    assert all(e.record_id is not None for e in missing.evidence)
    assert not any(s.source.startswith("fr/") for s in report.skipped)  # dumps are not logs that failed


def test_a_dump_that_disagrees_with_its_watchdog_line_is_said(tmp_path: Path) -> None:
    planted = straggler_current_slurm(tmp_path / "logs")
    _dumps_for(tmp_path / "logs" / "fr", planted.world_size, 43, tamper={7: 1})
    report = run_triage([tmp_path / "logs"])
    disagrees = _finding(report, "flight_recorder.rank_state_disagrees")
    assert disagrees.status == "WARN" and disagrees.ranks == [7]
    assert "rank 7: last enqueued 361 in the log, 362 in the dump" in disagrees.detail
    assert disagrees.evidence[0].rank == 7 and disagrees.evidence[0].line  # the watchdog line it kept
    state = next(g for g in report.rank_states if 7 in expand(g.ranks))
    assert state.last_enqueued == 361  # the log's value stays


def test_a_rank_whose_log_is_missing_takes_its_state_from_its_dump(tmp_path: Path) -> None:
    planted = straggler_2_4_per_rank(tmp_path / "logs")
    culprit_logs = [p for p in (tmp_path / "logs").rglob("*") if p.is_file() and "17" in p.name]
    assert culprit_logs
    for path in culprit_logs:
        path.unlink()
    without = run_triage([tmp_path / "logs"])
    assert without.root_cause.culprit_ranks != [17] or without.root_cause.confidence != "high"
    _dumps_for(tmp_path / "logs" / "fr", planted.world_size, 17)
    report = run_triage([tmp_path / "logs"])
    assert report.root_cause.culprit_ranks == [17]
    assert "rank 17 left no watchdog state in the logs" in _finding(report, "flight_recorder.coverage").detail
    assert any(17 in expand(g.ranks) and "straggler" in g.state for g in report.rank_states)


def test_dumps_alone_are_a_valid_input(tmp_path: Path) -> None:
    shutil.copytree(GLOO / "op_mismatch" / "pickle", tmp_path / "dumps")
    report = run_triage([tmp_path / "dumps"])
    assert report.summary.files_read == 4 and report.summary.ranks_seen == 4
    assert report.root_cause.category == "collective_mismatch" and report.root_cause.culprit_ranks == [3]
    assert "share_embeddings" in report.root_cause.summary
    assert report.findings[0].id == "flight_recorder.op_mismatch"
    assert all(f.evidence for f in report.findings if f.is_issue)


def test_a_refused_dump_beside_the_logs_is_skipped_with_its_reason(tmp_path: Path) -> None:
    planted = straggler_current_slurm(tmp_path / "logs")
    _dumps_for(tmp_path / "logs" / "fr", planted.world_size, 43)
    victim = tmp_path / "logs" / "fr" / "nccl_trace_rank_5"
    dump = pickle.loads(victim.read_bytes())  # our own generator's output
    dump["entries"][-1]["frames"] = [_WritesAFile(tmp_path / "pwned")]
    victim.write_bytes(pickle.dumps(dump, protocol=2))
    report = run_triage([tmp_path / "logs"])
    assert report.root_cause.culprit_ranks == [43]
    (skipped,) = [s for s in report.skipped if s.source == "fr/nccl_trace_rank_5"]
    assert "asks to load" in skipped.reason and "open" in skipped.reason
    assert not (tmp_path / "pwned").exists()


def test_the_cli_and_the_mcp_tool_carry_the_dumps_within_the_report_budget(tmp_path: Path) -> None:
    planted = straggler_current_slurm(tmp_path / "logs")
    _dumps_for(tmp_path / "logs" / "fr", planted.world_size, 43)
    cli = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "triage", str(tmp_path / "logs"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert cli.returncode == 1, cli.stderr
    printed = json.loads(cli.stdout)
    assert len(json.dumps(printed, separators=(",", ":"), ensure_ascii=False).encode()) <= BUDGET_BYTES
    assert "flight_recorder.missing_rank" in {f["id"] for f in printed["findings"]}
    structured = _call_mcp(tmp_path / "logs")
    assert structured == printed


@pytest.mark.anyio
async def _mcp(log_dir: Path) -> dict:
    async with Client(serve(log_dir)) as client:
        result = await client.call_tool("triage_logs", {"log_dir": str(log_dir)})
    assert not result.is_error
    return result.structured_content


def _call_mcp(log_dir: Path) -> dict:
    import anyio

    return anyio.run(_mcp, log_dir)
