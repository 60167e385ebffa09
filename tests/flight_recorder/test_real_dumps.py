"""Issue 11, done when: on real gloo dumps written by PyTorch 2.13 (make_real_dumps.py), each
scenario names the culprit, what disagreed, and the user-code frame that issued the call."""

from __future__ import annotations

import pytest

from hyperpod_nccl.flight_recorder.analyze import Kind
from hyperpod_nccl.flight_recorder.callsite import call_site
from hyperpod_nccl.models import Category
from tests.flight_recorder.conftest import GLOO, analyse_dir

ENCODINGS = ["pickle", "json"]


def _frame_names(result, finding_id: str) -> str:
    finding = next(f for f in result.findings if f.id == finding_id)
    return finding.detail + " " + " ".join(e.text for e in finding.evidence)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_skipped_collective_names_the_missing_rank_and_sequence_id(encoding: str) -> None:
    result = analyse_dir(GLOO / "skipped_collective" / encoding)
    first = result.analysis.decisive
    assert (first.kind, first.culprits, first.seq, first.group.desc) == (Kind.MISSING, (2,), 8, "default_pg")
    assert first.others == (0, 1, 3)
    finding = result.findings[0]
    assert finding.id == "flight_recorder.missing_rank" and finding.ranks == [2]
    assert "Rank 2 never issued all_reduce #8 in default_pg" in finding.title
    assert result.cause.ranks == [2]
    if encoding == "pickle":  # the JSON variant carries no frames, and says so
        text = _frame_names(result, "flight_recorder.missing_rank")
        assert "average_loss (flight_recorder/make_real_dumps.py:" in text  # where the others waited
        assert "sync_gradients (flight_recorder/make_real_dumps.py:" in text  # rank 2's last call
    else:
        coverage = next(f for f in result.findings if f.id == "flight_recorder.coverage")
        assert "no Python frames" in coverage.detail


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_op_mismatch_names_the_rank_and_both_ops(encoding: str) -> None:
    result = analyse_dir(GLOO / "op_mismatch" / encoding)
    first = result.analysis.decisive
    assert (first.kind, first.culprits, first.seq) == (Kind.OP, (3,), 7)
    assert [c.op for c in first.found[0].calls] == ["broadcast"]
    assert [c.op for c in first.expected.calls] == ["all_reduce"]
    finding = result.findings[0]
    assert finding.title.startswith("Rank 3 issued broadcast where ranks 0-2 issued all_reduce")
    assert result.cause.category == Category.COLLECTIVE_MISMATCH and result.cause.confidence == "high"
    if encoding == "pickle":
        text = _frame_names(result, "flight_recorder.op_mismatch")
        assert "share_embeddings (flight_recorder/make_real_dumps.py:" in text
        assert "sync_gradients (flight_recorder/make_real_dumps.py:" in text


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_size_mismatch_names_both_sizes(encoding: str) -> None:
    result = analyse_dir(GLOO / "size_mismatch" / encoding)
    first = result.analysis.decisive
    assert (first.kind, first.culprits, first.seq) == (Kind.SIZE, (0,), 7)
    assert first.found[0].calls[0].input_sizes == ((1024,),)
    assert first.expected.calls[0].input_sizes == ((1000,),)
    title = result.findings[0].title
    assert "[1024]" in title and "[1000]" in title and title.startswith("Rank 0 issued broadcast")
    if encoding == "pickle":
        assert "broadcast_vocab (flight_recorder/make_real_dumps.py:" in result.findings[0].detail


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_subgroup_hang_names_its_group(encoding: str) -> None:
    result = analyse_dir(GLOO / "subgroup_hang" / encoding)
    first = result.analysis.decisive
    assert (first.kind, first.culprits, first.others, first.seq) == (Kind.MISSING, (3,), (2,), 4)
    assert first.group.desc == "pipeline_stage_1" and first.group.members == (2, 3)
    assert first.group.inferred  # gloo's pg_config does not list its subgroups
    assert len(result.analysis.disagreements) == 1  # default_pg and stage 0 agree
    assert "in pipeline_stage_1 (group 2)" in result.findings[0].title
    if encoding == "pickle":
        assert "reduce_stage_grads (flight_recorder/make_real_dumps.py:" in result.findings[0].detail


def test_gloo_limits_are_stated() -> None:
    result = analyse_dir(GLOO / "op_mismatch" / "pickle")
    coverage = next(f for f in result.findings if f.id == "flight_recorder.coverage")
    assert "gloo records every entry as scheduled" in coverage.detail


def test_the_call_site_is_the_first_frame_outside_torch() -> None:
    result = analyse_dir(GLOO / "op_mismatch" / "pickle")
    stack = result.analysis.decisive.found[0].sightings[0].stack
    assert stack[0].name == "broadcast" and "/torch/" in stack[0].filename
    assert [f.name for f in call_site(stack)] == ["share_embeddings"]


def test_pickle_and_json_of_one_rank_count_once_and_the_pickle_wins(tmp_path) -> None:
    for encoding in ENCODINGS:
        for path in (GLOO / "skipped_collective" / encoding).iterdir():
            (tmp_path / path.name).write_bytes(path.read_bytes())
    result = analyse_dir(tmp_path)
    assert result.analysis.dumped == [0, 1, 2, 3]
    assert sorted(s.source for s in result.skipped) == [f"nccl_trace_rank_{r}.json" for r in range(4)]
    assert "sync_gradients" in result.findings[0].detail  # frames: the pickles were used
