"""A dump from a stranger never runs code and never takes the machine down: hostile pickles are
refused, oversized or memory-hungry ones are bounded, broken ones are read as far as they go."""

from __future__ import annotations

import json
import os
import pickle
import resource
import struct
from pathlib import Path

import pytest

from hyperpod_nccl.flight_recorder.model import RankDump
from hyperpod_nccl.flight_recorder.reader import (
    MAX_DUMP_BYTES,
    DumpFile,
    Refused,
    Unreadable,
    decode,
    read_dump,
    read_dumps,
)
from tests.flight_recorder.conftest import GLOO, analyse_dir
from tests.flight_recorder.ncclgen import job, steps, write_job


class _WritesAFile:
    """Unpickling this calls open(target, "w"): the file would appear if the pickle ran."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.target), "w")


class _RunsAShellCommand:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.target}",)


def _planted(tmp_path: Path, payload: object) -> Path:
    """A dump that looks like PyTorch's, with a payload hidden in one entry's frames."""
    ranks = job(2)
    steps(ranks, 2)
    dump = ranks[0].dump()
    dump["entries"][1]["frames"] = [payload]  # type: ignore[index]
    path = tmp_path / "dumps" / "nccl_trace_rank_0"
    path.parent.mkdir()
    path.write_bytes(pickle.dumps(dump, protocol=2))
    return path


@pytest.mark.parametrize("gadget", [_WritesAFile, _RunsAShellCommand])
def test_a_pickle_that_would_write_a_file_is_refused_and_nothing_is_written(
    tmp_path: Path, gadget: type
) -> None:
    target = tmp_path / "pwned"
    path = _planted(tmp_path, gadget(target))
    with pytest.raises(Refused, match="asks to load"):
        decode(path.read_bytes())
    (result,) = read_dumps([DumpFile(path, path.name, 0)])
    assert isinstance(result, Unreadable)
    assert "nothing in it was run" in result.reason
    assert not target.exists()


def test_a_refused_dump_is_a_warning_and_the_other_dumps_still_count(tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    path = _planted(tmp_path, _WritesAFile(target))
    ranks = job(2)
    steps(ranks, 2)
    write_job(ranks, path.parent, skip=(0,))
    result = analyse_dir(path.parent)
    assert not target.exists()
    assert result.analysis.dumped == [1]
    refused = next(f for f in result.findings if f.id == "flight_recorder.refused_dump")
    assert refused.status == "WARN" and refused.ranks == [0]
    assert [s.source for s in result.skipped] == ["nccl_trace_rank_0"]


def test_a_memo_index_that_would_allocate_gigabytes_is_refused_in_a_bounded_worker(tmp_path: Path) -> None:
    # LONG_BINPUT 2**31-1: the C unpickler would grow its memo to 2**32 slots (32 GiB) and zero them.
    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(b"\x80\x02}" + b"r" + struct.pack("<I", 0x7FFFFFFF) + b".")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (result,) = read_dumps([DumpFile(path, path.name, 0)])
    assert isinstance(result, Unreadable) and "memory" in result.reason
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: not here


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "nccl_trace_rank_0"
    with path.open("wb") as handle:
        handle.write(b"\x80\x02}")
        handle.truncate(MAX_DUMP_BYTES + 1)  # sparse: costs no disk
    result = read_dump(DumpFile(path, path.name, 0))
    assert isinstance(result, Unreadable) and "refused" in result.reason and "MiB" in result.reason


def test_a_truncated_pickle_is_read_up_to_the_cut(tmp_path: Path) -> None:
    data = (GLOO / "skipped_collective" / "pickle" / "nccl_trace_rank_0").read_bytes()
    whole = read_dump(DumpFile(GLOO / "skipped_collective" / "pickle" / "nccl_trace_rank_0", "r0", 0))
    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(data[: len(data) * 2 // 3])
    cut = read_dump(DumpFile(path, path.name, 0))
    assert isinstance(whole, RankDump) and isinstance(cut, RankDump)
    assert 0 < len(cut.records()) < len(whole.records())
    assert cut.records() == whole.records()[: len(cut.records())]
    assert "ends mid-way" in cut.limits[0]


def test_a_truncated_json_dump_keeps_the_entries_before_the_cut(tmp_path: Path) -> None:
    text = (GLOO / "op_mismatch" / "json" / "nccl_trace_rank_3.json").read_text()
    path = tmp_path / "nccl_trace_rank_3.json"
    path.write_text(text[: text.index('"pg_config"') - 400])
    cut = read_dump(DumpFile(path, path.name, 3))
    assert isinstance(cut, RankDump) and cut.records()
    assert "breaks off at character" in cut.limits[0]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x00\x01garbage", "neither a pickle nor a JSON object"),
        (b'{"model": "llama", "lr": 0.1}', "not a Flight Recorder dump"),
        (b"\x80\x02]q\x00.", "not a Flight Recorder dump"),
        (b"\x80\x02\xff", "corrupt pickle"),
        (b'{"entries": [{"record_id": 1' + b"0" * 5000 + b"}]}", "invalid JSON"),
        (b"[" * 100_000, "neither"),
        (b'{"entries": ' + b"[" * 100_000, "nested deeper"),
    ],
)
def test_what_is_not_a_dump_is_said_in_words(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(content)
    result = read_dump(DumpFile(path, path.name, 0))
    assert isinstance(result, Unreadable) and reason in result.reason


def test_hostile_values_inside_plain_data_stay_bounded(tmp_path: Path) -> None:
    ranks = job(2)
    steps(ranks, 3)
    dump = ranks[0].dump()
    entries = dump["entries"]
    entries[0]["record_id"] = 10**5000  # type: ignore[index]  # more digits than Python prints
    entries[1]["profiling_name"] = "nccl:" + "x" * 100_000  # type: ignore[index]
    entries[2]["frames"] = [{"name": "\udc80", "filename": 7, "line": "x"}] * 10_000  # type: ignore[index]
    dump["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": "[" + "9" * 50_000 + "]"}}
    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(pickle.dumps(dump, protocol=2))
    (result,) = read_dumps([DumpFile(path, path.name, 0)])
    assert isinstance(result, RankDump)
    records = result.records()
    assert [r.record_id for r in records] == [1, 2]  # the unprintable id: one malformed entry
    assert len(records[0].calls[0].op) <= 512
    assert len(records[1].stack) <= 64
    assert result.configs["0"].ranks is None
    json.dumps([str(f) for r in records for f in r.stack])  # lone surrogates were escaped
