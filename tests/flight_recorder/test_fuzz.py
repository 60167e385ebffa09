"""Property-based fuzzing of the dump reader: whatever the bytes, no exception escapes and the
output stays bounded; whatever the plain data, matching and findings stay bounded too."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperpod_nccl.flight_recorder.analyze import Matcher
from hyperpod_nccl.flight_recorder.findings import dump_findings
from hyperpod_nccl.flight_recorder.model import (
    MAX_ENTRIES,
    MAX_FRAMES,
    MAX_TEXT,
    NotADump,
    RankDump,
    _Builder,
    parse_dump,
)
from hyperpod_nccl.flight_recorder.reader import DumpFile, Unreadable, decode, read_dumps
from tests.flight_recorder.conftest import GLOO
from tests.flight_recorder.ncclgen import job, steps

SEEDS = [p.read_bytes() for p in sorted(GLOO.glob("*/*/*"))]
MAX_REASON = 400
MAX_FINDING_JSON = 6_000

_settings = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@st.composite
def mutated_dumps(draw: st.DrawFn) -> bytes:
    """A real dump, cut, flipped, spliced or padded; or bytes that merely start like one."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(0, 6))):
        action = rng.choice(["cut", "flip", "insert", "splice", "repeat"])
        at = rng.randrange(len(data) + 1) if data else 0
        if action == "cut":
            del data[at:]
        elif action == "flip" and at < len(data):
            data[at] = rng.randrange(256)
        elif action == "insert":
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif action == "splice":
            other = rng.choice(SEEDS)
            start = rng.randrange(len(other))
            data[at:at] = other[start : start + rng.randrange(1, 200)]
        elif action == "repeat" and at < len(data):
            data[at:at] = data[at : at + 64] * rng.randrange(1, 50)
    if draw(st.booleans()):
        data = bytearray(draw(st.sampled_from([b"\x80\x02", b"\x80\x05", b"{", b' {"entries":'])) + data)
    return bytes(data)


@_settings
@given(st.lists(mutated_dumps(), min_size=1, max_size=12))
def test_no_exception_escapes_the_reader_and_its_output_is_bounded(
    tmp_path: Path, blobs: list[bytes]
) -> None:
    files = []
    for index, blob in enumerate(blobs):
        path = tmp_path / f"nccl_trace_rank_{index}"
        path.write_bytes(blob)
        files.append(DumpFile(path, path.name, index))
    results = list(read_dumps(files))
    assert sorted(r.rank for r in results) == list(range(len(blobs)))
    matcher = Matcher()
    for result in results:
        if isinstance(result, Unreadable):
            assert result.reason and len(result.reason) <= MAX_REASON
        else:
            _assert_bounded(result)
            matcher.add(result)
    _assert_findings_bounded(matcher, [r for r in results if isinstance(r, Unreadable)])


def _assert_bounded(dump: RankDump) -> None:
    assert dump.entries <= MAX_ENTRIES
    assert sum(len(t) for t in [*dump.collectives.values(), *dump.p2p.values()]) <= dump.entries
    assert all(len(stack) <= MAX_FRAMES for stack in dump.stacks)
    assert all(len(call.op) <= MAX_TEXT for calls, _ in dump.votes for call in calls)
    assert all(len(group) <= MAX_TEXT for group in [*dump.collectives, *dump.p2p])
    assert all(len(note) <= MAX_REASON for note in dump.limits)


def _assert_findings_bounded(matcher: Matcher, unreadable: list[Unreadable]) -> None:
    analysis = matcher.result() if matcher.ranks else None
    findings, _ = dump_findings(analysis, unreadable)
    assert len(findings) <= len(unreadable) + 3 * (len(analysis.groups) if analysis else 0) + 4
    for finding in findings:
        assert len(finding.model_dump_json()) <= MAX_FINDING_JSON


# Plain data shaped like a dump, with every field free to be the wrong type.
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=30)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_ENTRY_KEYS = [
    "record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
    "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state", "time_created_ns",
    "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p", "frames",
]  # fmt: skip


@st.composite
def plain_dumps(draw: st.DrawFn) -> object:
    ranks = job(4, [])
    steps(ranks, draw(st.integers(1, 4)))
    dump = ranks[draw(st.integers(0, 3))].dump()
    for entry in dump["entries"]:  # type: ignore[union-attr]
        for key in draw(st.lists(st.sampled_from(_ENTRY_KEYS), max_size=3)):
            entry[key] = draw(_values)
    for key in draw(st.lists(st.sampled_from(["version", "pg_config", "pg_status", "entries"]), max_size=2)):
        dump[key] = draw(_values)
    return dump


@settings(max_examples=150, deadline=None)
@given(
    st.lists(plain_dumps(), min_size=1, max_size=5), st.sampled_from(["pickle", "json"]), st.integers(2, 5)
)
def test_any_plain_data_parses_matches_and_reports_within_bounds(
    dumps: list[object], route: str, protocol: int
) -> None:
    matcher = Matcher()
    for rank, data in enumerate(dumps):
        # Through the real pickler or JSON encoder, as the reader would see the file.
        if route == "pickle":
            decoded = decode(pickle.dumps(data, protocol=protocol))
        else:
            try:
                decoded = decode(json.dumps(data).encode())
            except (TypeError, ValueError):  # keys or numbers JSON cannot carry
                continue
        try:
            parsed = parse_dump(decoded.data, f"nccl_trace_rank_{rank}", rank, decoded.encoding)
        except NotADump:
            continue
        _assert_bounded(parsed)
        matcher.add(parsed)
    _assert_findings_bounded(matcher, [])


def _entry_by_entry(data: object) -> RankDump:
    """The dump as `_Builder.add` alone reads it: every field of every entry checked."""
    dump = RankDump(source="nccl_trace_rank_0", rank=0, encoding="pickle")
    builder = _Builder(dump)
    entries = data.get("entries") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        builder.add(entry)
    return dump


@settings(max_examples=200, deadline=None)
@given(plain_dumps())
def test_the_shortcut_for_repeated_calls_reads_exactly_what_the_full_check_reads(data: object) -> None:
    try:
        parsed = parse_dump(data, "nccl_trace_rank_0", 0, "pickle")
    except NotADump:
        return
    full = _entry_by_entry(data)
    assert parsed.records() == full.records()
    for name in ("entries", "earliest_record", "states_known", "has_frames", "backend"):
        assert getattr(parsed, name) == getattr(full, name), name
