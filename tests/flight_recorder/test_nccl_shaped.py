"""NCCL-shaped dumps (ncclgen.py) for what gloo cannot produce: started / completed states and
times, pg_status, point-to-point pairs, wrapped ring buffers, older format versions, JSON without
frames, truncated files and ranks whose dump is missing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hyperpod_nccl.flight_recorder.analyze import Kind, Matcher
from hyperpod_nccl.flight_recorder.findings import dump_findings
from hyperpod_nccl.flight_recorder.reader import DumpFile, read_dumps
from hyperpod_nccl.models import Category
from tests.flight_recorder.conftest import analyse_dir
from tests.flight_recorder.ncclgen import Group, job, steps, write_job


def _straggler(world: int = 8, culprit: int = 5, healthy: int = 20) -> list:
    """Every rank completed `healthy` steps; all but `culprit` entered the next all_reduce."""
    ranks = job(world)
    steps(ranks, healthy)
    for rank in ranks:
        if rank.rank != culprit:
            rank.collective("all_reduce", [4096], state="started", where=("sync_gradients", 88))
    return ranks


def _coverage(result) -> str:
    return next(f for f in result.findings if f.id == "flight_recorder.coverage").detail


def test_a_rank_that_never_entered_is_missing_and_its_progress_is_idle(tmp_path: Path) -> None:
    write_job(_straggler(), tmp_path)
    result = analyse_dir(tmp_path)
    first = result.analysis.decisive
    assert (first.kind, first.culprits, first.seq) == (Kind.MISSING, (5,), 21)
    assert first.expected.state.label == "started"
    progress = result.analysis.progress
    assert (progress[5].enqueued, progress[5].completed, progress[5].idle) == (20, 20, True)
    assert (progress[0].enqueued, progress[0].started, progress[0].completed) == (21, 21, 20)
    assert result.cause.category == Category.DATA_LOADING_STALL and result.cause.ranks == [5]


@pytest.mark.parametrize("version", ["2.3", "2.4", "2.7", "2.10"])
@pytest.mark.parametrize("encoding", ["pickle", "json"])
def test_every_format_version_and_encoding_reads_the_same(
    tmp_path: Path, version: str, encoding: str
) -> None:
    write_job(_straggler(), tmp_path, version=version, encoding=encoding)  # type: ignore[arg-type]
    result = analyse_dir(tmp_path)
    assert (result.analysis.decisive.kind, result.analysis.decisive.culprits) == (Kind.MISSING, (5,))
    assert result.analysis.groups[0].desc == "default_pg" and not result.analysis.groups[0].inferred
    if encoding == "json":
        assert "no Python frames" in _coverage(result)
        assert "sync_gradients" not in result.findings[0].detail
    else:
        assert "sync_gradients (code/train.py:88)" in result.findings[0].detail


def test_a_rank_that_had_not_started_what_the_others_completed_is_named(tmp_path: Path) -> None:
    ranks = job(4)
    steps(ranks, 5)
    for rank in ranks:
        rank.collective("all_reduce", [4096], state="scheduled" if rank.rank == 2 else "completed")
    write_job(ranks, tmp_path)
    first = analyse_dir(tmp_path).analysis.decisive
    assert (first.kind, first.culprits, first.seq) == (Kind.STATE, (2,), 6)
    assert first.found[0].state.label == "scheduled" and first.expected.state.label == "completed"


def test_every_rank_inside_the_same_collective_points_at_the_fabric(tmp_path: Path) -> None:
    ranks = job(4)
    steps(ranks, 5)
    for rank in ranks:
        rank.collective("all_reduce", [4096], state="started")
    write_job(ranks, tmp_path)
    result = analyse_dir(tmp_path)
    assert not result.analysis.disagreements
    assert [f.id for f in result.findings] == ["flight_recorder.all_inside", "flight_recorder.coverage"]
    assert result.cause.category == Category.NETWORK


def test_a_dtype_mismatch_is_its_own_kind(tmp_path: Path) -> None:
    ranks = job(4)
    steps(ranks, 3)
    for rank in ranks:
        rank.collective(
            "all_reduce", [4096], dtype="BFloat16" if rank.rank == 1 else "Float", state="started"
        )
    write_job(ranks, tmp_path)
    result = analyse_dir(tmp_path)
    assert (result.analysis.decisive.kind, result.analysis.decisive.culprits) == (Kind.DTYPE, (1,))
    assert result.findings[0].id == "flight_recorder.dtype_mismatch"


def test_wrapped_ring_buffers_still_align_by_sequence_id(tmp_path: Path) -> None:
    ranks = _straggler(healthy=3000)  # more than the 2,000 entries each buffer keeps
    write_job(ranks, tmp_path)
    result = analyse_dir(tmp_path)
    assert (result.analysis.decisive.kind, result.analysis.decisive.culprits) == (Kind.MISSING, (5,))
    assert result.analysis.decisive.seq == 3001
    assert "ring buffer wrapped" in _coverage(result)


def test_ranks_whose_dump_is_missing_are_said_and_not_blamed(tmp_path: Path) -> None:
    write_job(_straggler(), tmp_path, skip=(3, 6))
    result = analyse_dir(tmp_path)
    assert result.analysis.missing_dumps == [3, 6]
    assert result.analysis.decisive.culprits == (5,)
    assert "no dump from ranks 3,6" in _coverage(result)


def test_a_truncated_dump_is_analysed_as_far_as_it_goes(tmp_path: Path) -> None:
    write_job(_straggler(), tmp_path)
    victim = tmp_path / "nccl_trace_rank_7"
    victim.write_bytes(victim.read_bytes()[:-3000])
    result = analyse_dir(tmp_path)
    assert result.analysis.dumped == list(range(8))
    assert "rank 7: the file ends mid-way" in _coverage(result)
    assert result.analysis.decisive.culprits == (5,)  # rank 7's buffer simply ends earlier


def test_a_receive_never_posted_is_named_on_the_peer(tmp_path: Path) -> None:
    stage = Group("1", "pipeline", [0, 1, 2, 3])
    ranks = job(4, [stage])
    for _ in range(3):
        ranks[1].send(2, [8, 1024], group="1")
        ranks[2].recv(1, [8, 1024], group="1")
    ranks[1].send(2, [8, 1024], group="1", state="started")
    write_job(ranks, tmp_path)
    result = analyse_dir(tmp_path)
    first = result.analysis.decisive
    assert (first.kind, first.culprits, first.seq) == (Kind.P2P_UNMATCHED, (2,), 4)
    assert first.group.desc == "pipeline"
    assert result.findings[0].title.startswith("Rank 2 never posted the receive matching rank 1's send #4")


def test_sizes_of_a_send_and_its_receive_are_compared(tmp_path: Path) -> None:
    stage = Group("1", "pipeline", [0, 1])
    ranks = job(2, [stage])
    ranks[0].send(1, [8, 1024], group="1", state="started")
    ranks[1].recv(0, [8, 512], group="1", state="started")
    write_job(ranks, tmp_path)
    first = analyse_dir(tmp_path).analysis.decisive
    assert (first.kind, first.culprits) == (Kind.SIZE, (1,))


def test_a_rank_behind_on_every_group_is_named(tmp_path: Path) -> None:
    dp = [Group("1", "dp_group", [0, 2]), Group("2", "dp_group", [1, 3])]
    ranks = job(4, dp)
    steps(ranks, 4)
    for name in ("1", "2"):
        steps(ranks, 2, group=name)
    # Rank 3 stops; everyone else goes one step further on the default group and its dp group.
    for rank in ranks[:3]:
        rank.collective(
            "all_reduce", [4096], group="1" if rank.rank in (0, 2) else "2", where=("dp_sync", 140)
        )
    for rank in ranks[:3]:
        rank.collective("all_reduce", [16], state="started", where=("average_loss", 150))
    write_job(ranks, tmp_path)
    result = analyse_dir(tmp_path)
    assert result.analysis.behind_everywhere == [3]
    assert {d.culprits for d in result.analysis.disagreements} == {(3,)}


def test_a_coalesced_call_is_compared_as_a_whole(tmp_path: Path) -> None:
    ranks = job(2)
    steps(ranks, 2)
    for rank in ranks:
        rank.collective("all_reduce", [1024], state="started")
        rank.seq["0"] -= 1  # the next op shares the sequence number: one coalesced launch
        rank.collective("all_reduce", [2048 if rank.rank == 0 else 4096], state="started")
    write_job(ranks, tmp_path)
    first = analyse_dir(tmp_path).analysis.decisive
    assert first.kind == Kind.SIZE and first.seq == 3 and len(first.expected.calls) == 2


def test_a_dump_named_without_a_rank_is_skipped_with_the_reason(tmp_path: Path) -> None:
    write_job(_straggler(world=2, culprit=1), tmp_path)
    (tmp_path / "nccl_trace_rank_1").rename(tmp_path / "flight_recorder_dump")
    result = analyse_dir(tmp_path)
    assert result.analysis.dumped == [0]
    assert any("carries no rank number" in s.reason for s in result.skipped)


def test_dynamic_file_names_give_their_rank(tmp_path: Path) -> None:
    paths = write_job(_straggler(world=4, culprit=2), tmp_path)
    for path in paths:
        rank = path.name.rsplit("_", 1)[1]
        path.rename(tmp_path / f"job-4711_rank{rank}_20260101T000000")
    result = analyse_dir(tmp_path)
    assert result.analysis.dumped == [0, 1, 2, 3] and result.analysis.decisive.culprits == (2,)


def test_the_order_dumps_arrive_in_changes_nothing(tmp_path: Path) -> None:
    ranks = job(8, [Group("1", "tp_group", [0, 1, 2, 3]), Group("2", "tp_group", [4, 5, 6, 7])])
    steps(ranks, 3)
    for rank in ranks:
        rank.collective("all_gather", [64], group="1" if rank.rank < 4 else "2", state="started")
        if rank.rank != 6:
            rank.collective(
                "all_reduce", [4096], state="started", dtype="Half" if rank.rank == 2 else "Float"
            )
    paths = write_job(ranks, tmp_path)
    dumps = list(read_dumps([DumpFile(p, p.name, int(p.name.rsplit("_", 1)[1])) for p in paths]))
    reports = []
    for seed in range(5):
        matcher = Matcher()
        for dump in random.Random(seed).sample(dumps, len(dumps)):
            matcher.add(dump)
        findings, cause = dump_findings(matcher.result(), [])
        reports.append(([f.model_dump_json() for f in findings], cause))
    assert all(report == reports[0] for report in reports)
