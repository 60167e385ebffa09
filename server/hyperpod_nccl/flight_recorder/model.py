"""Typed Flight Recorder records: what one rank's dump says, the same for every format version.

A dump is a dict written by PyTorch's FlightRecorder (`FlightRecorderDetail.hpp`): `version`,
`pg_config` (group name → name, desc, ranks as a string), `pg_status` (pg_id → last enqueued /
started / completed collective), `comm_lib_version`, and `entries`, one per collective or
point-to-point call, oldest first. `parse_dump` turns that plain data into the records below,
entry by entry: a malformed entry is counted and skipped, a missing field takes the value older
formats imply, and everything the dump cannot say is listed in `RankDump.limits`.

Records are frozen dataclasses with slots because a 1,024-rank job brings two million of them;
frames, stacks and calls are interned so one dump holds each distinct one once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal, TypeVar

Encoding = Literal["pickle", "json"]
_T = TypeVar("_T")

MAX_ENTRIES = 100_000  # the ring buffer holds 2,000 by default; nobody keeps fifty times that
MAX_FRAMES = 64  # frames kept per entry, innermost first (the call site is within the first few)
MAX_TEXT = 512  # characters kept of any one name, file name, description or version string
MAX_TENSORS = 64  # tensors described per entry (a coalesced call can carry many)
MAX_DIMS = 16
MAX_GROUP_RANKS = 1 << 20
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1


class State(IntEnum):
    """How far a collective got on one rank; ordered, so `min` is the least advanced."""

    SCHEDULED = 0
    STARTED = 1
    COMPLETED = 2

    @property
    def label(self) -> str:
        return self.name.lower()


_STATES = {"scheduled": State.SCHEDULED, "started": State.STARTED, "completed": State.COMPLETED}
_PROFILING_NAME = re.compile(r"^(?:(?P<backend>[A-Za-z0-9_]+):)?(?P<op>[A-Za-z0-9_]+)(?:\s+(?P<peer>\S+))?")
_RANK_LIST = re.compile(r"^\s*\[\s*(?:\d{1,9}\s*(?:,\s*\d{1,9}\s*)*)?\]\s*$")
_INTEGER = re.compile(r"^-?[0-9]{1,19}$")
_SEND = re.compile(r"^(-?\d+)->(-?\d+)$")
_RECV = re.compile(r"^(-?\d+)<-(-?\d+)$")


@dataclass(frozen=True, slots=True)
class Frame:
    name: str
    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.name} ({self.filename}:{self.line})"


Sizes = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class Call:
    """What a rank asked for: the part of an entry that must agree across the ranks of a group."""

    backend: str  # nccl, gloo, xccl; "" when the profiling name carries none
    op: str  # all_reduce, broadcast, send, recv, coalesced, …
    input_sizes: Sizes = ()
    output_sizes: Sizes = ()
    input_dtypes: tuple[str, ...] = ()
    output_dtypes: tuple[str, ...] = ()
    src: int | None = None  # group-local ranks of a send / recv
    dst: int | None = None

    @property
    def shape(self) -> str:
        """`all_reduce [1000] Float`: the op with what it carried, as people compare them."""
        sizes = ",".join(_dims(s) for s in self.input_sizes) or ",".join(_dims(s) for s in self.output_sizes)
        dtypes = ",".join(sorted(set(self.input_dtypes or self.output_dtypes)))
        peer = f" {self.src}->{self.dst}" if self.src is not None else ""
        return " ".join(part for part in (f"{self.op}{peer}", sizes, dtypes) if part)


def _dims(size: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, size)) + "]"


@dataclass(frozen=True, slots=True)
class Record:
    """One Flight Recorder entry."""

    record_id: int
    group: str  # process group name: "0" for the default group, "1", … or a hash for split groups
    desc: str  # its description: default_pg, dp_group, pipeline_stage_1, undefined
    pg_id: int | None
    is_p2p: bool
    seq: int  # collective_seq_id, or p2p_seq_id for a send / recv
    op_id: int | None
    call: Call
    state: State
    created_ns: int | None = None
    started_ns: int | None = None
    completed_ns: int | None = None
    retired: bool | None = None
    timeout_ms: int | None = None
    stack: tuple[Frame, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupConfig:
    name: str
    desc: str
    ranks: tuple[int, ...] | None  # global ranks; None when the dump does not list them


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """pg_status: the last collective sequence number enqueued / started / completed (None: -1)."""

    enqueued: int | None
    started: int | None
    completed: int | None


@dataclass(slots=True)
class RankDump:
    source: str
    rank: int | None
    encoding: Encoding
    version: str | None = None
    comm_lib_version: str | None = None
    configs: dict[str, GroupConfig] = field(default_factory=dict)
    status: dict[str, GroupStatus] = field(default_factory=dict)  # by group name (pg_id when unknown)
    records: list[Record] = field(default_factory=list)
    has_frames: bool = False
    limits: list[str] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return next((r.call.backend for r in self.records if r.call.backend), "")


class NotADump(ValueError):
    """The data decoded, but it is not a Flight Recorder dump."""


def parse_dump(data: object, source: str, rank: int | None, encoding: Encoding) -> RankDump:
    """Turn one decoded dump (plain dicts, lists, strings, numbers) into a `RankDump`."""
    if not isinstance(data, dict) or not ({"entries", "pg_config", "version"} & data.keys()):
        raise NotADump("not a Flight Recorder dump: no entries, pg_config or version at the top level")
    dump = RankDump(source=source, rank=rank, encoding=encoding)
    dump.version = _text(data.get("version")) or None
    dump.comm_lib_version = _text(data.get("comm_lib_version")) or None
    dump.configs = _configs(data.get("pg_config"))
    interner = _Interner()
    entries = data.get("entries", [])
    if not isinstance(entries, list):
        dump.limits.append("its entries are not a list: no collective could be read")
        entries = []
    if len(entries) > MAX_ENTRIES:
        dump.limits.append(f"{len(entries)} entries: only the last {MAX_ENTRIES} were read")
        entries = entries[-MAX_ENTRIES:]
    malformed = 0
    for entry in entries:
        record = _record(entry, interner) if isinstance(entry, dict) else None
        if record is None:
            malformed += 1
        else:
            dump.records.append(record)
    if malformed:
        dump.limits.append(f"{malformed} malformed entr{'ies' if malformed > 1 else 'y'} skipped")
    dump.has_frames = any(isinstance(e, dict) and "frames" in e for e in entries)
    if entries and not dump.has_frames:
        dump.limits.append("no Python frames (a JSON dump, or stack traces were not captured)")
    dump.status = _status(data.get("pg_status"), dump.records)
    return dump


class _Interner:
    """One object per distinct frame, stack and call, so a dump holds each once."""

    def __init__(self) -> None:
        self.frames: dict[int, tuple[Frame, ...]] = {}  # keyed by id() of the decoded frames list
        self.values: dict[object, object] = {}

    def get(self, value: _T) -> _T:
        return self.values.setdefault(value, value)  # type: ignore[return-value]

    def stack(self, frames: object) -> tuple[Frame, ...]:
        if not isinstance(frames, list):
            return ()
        known = self.frames.get(id(frames))
        if known is not None:
            return known
        stack = self.get(tuple(f for f in (self._frame(item) for item in frames[:MAX_FRAMES]) if f))
        self.frames[id(frames)] = stack
        return stack

    def _frame(self, item: object) -> Frame | None:
        if not isinstance(item, dict):
            return None
        line = item.get("line")
        return self.get(
            Frame(
                _text(item.get("name")) or "?",
                _text(item.get("filename")) or "?",
                line if _is_int(line) else 0,
            )
        )


def _record(entry: dict[object, object], interner: _Interner) -> Record | None:
    record_id = _int(entry.get("record_id"))
    name = _text(entry.get("profiling_name"))
    if record_id is None or not name:
        return None
    group, desc = _group_of(entry)
    call = _call(name, entry, interner)
    if call is None:
        return None
    is_p2p = entry.get("is_p2p")
    if not isinstance(is_p2p, bool):
        is_p2p = call.op in ("send", "recv")
    seq = _int(entry.get("p2p_seq_id" if is_p2p else "collective_seq_id"))
    if seq is None:
        seq = _int(entry.get("seq_id"))  # the field's name before format 2.0
    if seq is None:
        return None
    started = _time(entry.get("time_discovered_started_ns"))
    completed = _time(entry.get("time_discovered_completed_ns"))
    retired = entry.get("retired")
    return Record(
        record_id=record_id,
        group=group,
        desc=desc,
        pg_id=_int(entry.get("pg_id")),
        is_p2p=is_p2p,
        seq=seq,
        op_id=_int(entry.get("op_id")),
        call=call,
        state=_state(entry.get("state"), started, completed),
        created_ns=_time(entry.get("time_created_ns")),
        started_ns=started,
        completed_ns=completed,
        retired=retired if isinstance(retired, bool) else None,
        timeout_ms=_int(entry.get("timeout_ms")),
        stack=interner.stack(entry.get("frames")),
    )


def _group_of(entry: dict[object, object]) -> tuple[str, str]:
    group = entry.get("process_group")
    if isinstance(group, list | tuple) and len(group) == 2:
        return _text(group[0]) or "?", _text(group[1]) or "undefined"
    pg_id = _int(entry.get("pg_id"))
    return (str(pg_id) if pg_id is not None else "?"), "undefined"


def _call(name: str, entry: dict[object, object], interner: _Interner) -> Call | None:
    parsed = _PROFILING_NAME.match(name)
    if parsed is None:
        return None
    op, peer = parsed.group("op"), parsed.group("peer")
    src = dst = None
    if peer and (send := _SEND.match(peer)) and op == "send":
        src, dst = int(send.group(1)), int(send.group(2))
    elif peer and (recv := _RECV.match(peer)) and op == "recv":
        dst, src = int(recv.group(1)), int(recv.group(2))
    return interner.get(
        Call(
            backend=(parsed.group("backend") or "")[:MAX_TEXT],
            op=op[:MAX_TEXT],
            input_sizes=_sizes(entry.get("input_sizes")),
            output_sizes=_sizes(entry.get("output_sizes")),
            input_dtypes=_dtypes(entry.get("input_dtypes")),
            output_dtypes=_dtypes(entry.get("output_dtypes")),
            src=src,
            dst=dst,
        )
    )


def _sizes(value: object) -> Sizes:
    if not isinstance(value, list | tuple):
        return ()
    sizes = []
    for tensor in value[:MAX_TENSORS]:
        if isinstance(tensor, list | tuple):
            sizes.append(tuple(d for d in tensor[:MAX_DIMS] if _is_int(d)))
    return tuple(sizes)


def _dtypes(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(_text(d) for d in value[:MAX_TENSORS] if isinstance(d, str))


def _state(value: object, started: int | None, completed: int | None) -> State:
    if isinstance(value, str) and value in _STATES:
        return _STATES[value]
    if completed is not None:
        return State.COMPLETED
    return State.STARTED if started is not None else State.SCHEDULED


def _configs(value: object) -> dict[str, GroupConfig]:
    """pg_config; gloo writes one entry under an empty name, with empty desc and the world's ranks."""
    configs: dict[str, GroupConfig] = {}
    if not isinstance(value, dict):
        return configs
    for key, info in value.items():
        if not isinstance(info, dict):
            continue
        name = _text(info.get("name", key))
        configs[name] = GroupConfig(name, _text(info.get("desc")), _ranks(info.get("ranks")))
    return configs


def _ranks(value: object) -> tuple[int, ...] | None:
    """`ranks` is a string such as "[0, 1, 2, 3]": read as digits, never evaluated."""
    if isinstance(value, str):
        if len(value) > 12 * MAX_GROUP_RANKS or not _RANK_LIST.match(value):
            return None
        value = [int(r) for r in re.findall(r"\d+", value)]
    if isinstance(value, list | tuple) and len(value) <= MAX_GROUP_RANKS:
        ranks = tuple(r for r in value if _is_int(r) and r >= 0)
        return ranks if len(ranks) == len(value) else None
    return None


def _status(value: object, records: list[Record]) -> dict[str, GroupStatus]:
    """pg_status is keyed by the rank-local pg_id; the entries say which group name each id is."""
    if not isinstance(value, dict):
        return {}
    names = {str(r.pg_id): r.group for r in records if r.pg_id is not None}
    status = {}
    for key, fields in value.items():
        if isinstance(fields, Mapping):
            pg_id = _text(key)
            status[names.get(pg_id, f"pg_id {pg_id}")] = GroupStatus(
                _seq(fields.get("last_enqueued_collective")),
                _seq(fields.get("last_started_collective")),
                _seq(fields.get("last_completed_collective")),
            )
    return status


def _seq(value: object) -> int | None:
    number = _int(value)
    return number if number is not None and number >= 0 else None


def _is_int(value: object) -> bool:
    """A 64-bit integer: a pickle can carry far bigger ones, which no field of a dump holds."""
    return isinstance(value, int) and not isinstance(value, bool) and _INT_MIN <= value <= _INT_MAX


def _int(value: object) -> int | None:
    """An integer field; JSON dumps write some of them as strings."""
    if _is_int(value):
        return value  # type: ignore[return-value]
    if isinstance(value, str) and _INTEGER.match(value):
        return int(value)
    return None


def _time(value: object) -> int | None:
    """A nanosecond time; JSON dumps write 0 where the pickle has None."""
    number = _int(value)
    return number if number else None


def _text(value: object) -> str:
    if not isinstance(value, str):
        return ""
    value = value[:MAX_TEXT]
    # A pickle can carry lone surrogates, which no JSON report can; keep them visible as escapes.
    return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode("utf-8")
