"""Typed Flight Recorder records: what one rank's dump says, the same for every format version.

A dump is a dict written by PyTorch's FlightRecorder (`FlightRecorderDetail.hpp`): `version`,
`pg_config` (group name → name, desc, ranks as a string), `pg_status` (pg_id → last enqueued /
started / completed collective), `comm_lib_version`, and `entries`, one per collective or
point-to-point call, oldest first. `parse_dump` turns that plain data into the records below,
entry by entry: a malformed entry is counted and skipped, a missing field takes the value older
formats imply, and everything the dump cannot say is listed in `RankDump.limits`.

A 1,024-rank job brings two million entries, so a rank's calls are kept per process group as
parallel arrays (`Trace`) of sequence numbers, record ids, times and indices into the dump's
tables of distinct calls, votes and stacks; `Record` is a view of one, for evidence and tests.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from operator import itemgetter
from typing import Literal

Encoding = Literal["pickle", "json"]

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
    """One call of one rank, as evidence quotes it (coalesced ops that share a sequence number
    are one call)."""

    record_id: int
    group: str
    desc: str
    is_p2p: bool
    seq: int
    calls: tuple[Call, ...]
    state: State
    stack: tuple[Frame, ...]
    created_ns: int | None


Vote = tuple[tuple[Call, ...], State]  # what a rank issued at one sequence number, and how far it got


@dataclass(slots=True)
class Trace:
    """One rank's calls in one process group, oldest first, as parallel arrays: a thousand
    ranks' two thousand entries each must fit in memory and cross process boundaries fast."""

    group: str  # process group name: "0" for the default group, "1", … or a hash for split groups
    desc: str  # its description: default_pg, dp_group, pipeline_stage_1, undefined
    is_p2p: bool = False
    seqs: array[int] = field(default_factory=lambda: array("q"))  # collective_seq_id (p2p_seq_id)
    votes: array[int] = field(default_factory=lambda: array("i"))  # index into RankDump.votes
    record_ids: array[int] = field(default_factory=lambda: array("q"))
    stacks: array[int] = field(default_factory=lambda: array("i"))  # index into RankDump.stacks
    created: array[int] = field(default_factory=lambda: array("q"))  # time_created_ns, 0 unknown

    def __len__(self) -> int:
        return len(self.seqs)


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
    votes: list[Vote] = field(default_factory=list)
    stacks: list[tuple[Frame, ...]] = field(default_factory=lambda: [()])
    collectives: dict[str, Trace] = field(default_factory=dict)  # by group name
    p2p: dict[str, Trace] = field(default_factory=dict)  # sends and receives, one entry each
    entries: int = 0  # entries read
    earliest_record: int | None = None
    states_known: bool = False  # any entry started or completed: gloo leaves every one scheduled
    backend: str = ""
    has_frames: bool = False
    limits: list[str] = field(default_factory=list)

    def record(self, trace: Trace, index: int) -> Record:
        calls, state = self.votes[trace.votes[index]]
        return Record(
            trace.record_ids[index],
            trace.group,
            trace.desc,
            trace.is_p2p,
            trace.seqs[index],
            calls,
            state,
            self.stacks[trace.stacks[index]],
            trace.created[index] or None,
        )

    def records(self) -> list[Record]:
        """Every call, in record order (for evidence and tests; analysis reads the traces)."""
        traces = [*self.collectives.values(), *self.p2p.values()]
        found = [self.record(trace, i) for trace in traces for i in range(len(trace))]
        return sorted(found, key=lambda r: r.record_id)


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
    entries = data.get("entries", [])
    if not isinstance(entries, list):
        dump.limits.append("its entries are not a list: no collective could be read")
        entries = []
    if len(entries) > MAX_ENTRIES:
        dump.limits.append(f"{len(entries)} entries: only the last {MAX_ENTRIES} were read")
        entries = entries[-MAX_ENTRIES:]
    builder = _Builder(dump)
    malformed = sum(1 for entry in entries if not builder.take(entry))
    if malformed:
        dump.limits.append(f"{malformed} malformed entr{'ies' if malformed > 1 else 'y'} skipped")
    if entries and not dump.has_frames:
        dump.limits.append("no Python frames (a JSON dump, or stack traces were not captured)")
    dump.status = _status(data.get("pg_status"), builder.pg_ids)
    return dump


class _Builder:
    """Appends entries to their group's trace, each distinct call, vote, frame and stack once.

    Calls are recognised by their raw fields before they are validated, and stacks by the
    identity of the decoded frames: a training loop repeats a handful of calls two thousand
    times, and validating each once is what keeps a thousand dumps to seconds."""

    def __init__(self, dump: RankDump) -> None:
        self.dump = dump
        self.call_ids: dict[object, int] = {}  # raw fields → index in calls (-1: malformed)
        self.calls: list[Call] = []
        self.vote_ids: dict[tuple[tuple[int, ...], State], int] = {}
        self.vote_calls: list[tuple[int, ...]] = []  # the call indices of each vote
        self.frames: dict[int, Frame | None] = {}  # id() of a decoded frame dict
        self.stack_ids: dict[tuple[int, ...], int] = {(): 0}  # id()s of a stack's frame dicts
        self.traces: dict[tuple[object, bool], Trace] = {}
        self.pg_ids: dict[str, str] = {}  # pg_id → group name
        # (call's raw fields, group, state) → its trace, vote and whether it started: see `take`
        self.routine: dict[tuple[object, ...], tuple[Trace, int, bool]] = {}

    def take(self, entry: object) -> bool:
        """`add`, with a shortcut for the common entry: a collective that repeats a call, group and
        state this dump has already had. Its trace and vote are known from the first time, so it
        costs six appends instead of three validations (a third of the parse time). Anything
        else, and every first occurrence, goes through `add`."""
        try:
            rid, name, is_p2p, seq, state_name, created, *sizes, group, frames = _ROUTINE(entry)
        except (KeyError, TypeError):  # not a dict, or an older format: `add` reads it field by field
            return self.add(entry)
        if (
            is_p2p is not False
            or type(rid) is not int
            or type(seq) is not int
            or type(created) is not int
            or type(state_name) is not str
            or not (_INT_MIN <= rid <= _INT_MAX and _INT_MIN <= seq <= _INT_MAX and 0 < created <= _INT_MAX)
        ):
            return self.add(entry)
        try:
            key = (name, repr(sizes), tuple(group) if type(group) is list else group, state_name)
            known = self.routine.get(key)
        except (TypeError, RecursionError):  # unhashable or absurdly nested: `add` says what it is
            return self.add(entry)
        if known is None or (known[0].seqs and known[0].seqs[-1] == seq):  # first time, or coalesced
            trace = self.traces.get((key[2], False))
            before = len(trace) if trace is not None else 0
            added = self.add(entry)
            trace = self.traces.get((key[2], False))
            # Only an entry that became a record of its own shows its call's vote (a coalesced
            # one merged into the record before it).
            if added and state_name in _STATES and trace is not None and len(trace) == before + 1:
                self.routine.setdefault(key, (trace, trace.votes[-1], bool(_STATES[state_name])))
            return added
        trace, vote, started = known
        dump = self.dump
        dump.entries += 1
        if started:
            dump.states_known = True
        if dump.earliest_record is None or rid < dump.earliest_record:
            dump.earliest_record = rid
        trace.seqs.append(seq)
        trace.votes.append(vote)
        trace.record_ids.append(rid)
        trace.stacks.append(self._stack(frames) if frames is not None else 0)
        trace.created.append(created)
        return True

    def add(self, entry: object) -> bool:
        """Take one entry; False when it is malformed (counted, not read)."""
        if type(entry) is not dict:
            return False
        try:
            rid, name, is_p2p, cseq, pseq, state_name, created = _FAST(entry)
        except KeyError:  # an older format, or a damaged entry: each field the slow way below
            rid = name = is_p2p = cseq = pseq = state_name = created = None
        if type(rid) is not int or not _INT_MIN <= rid <= _INT_MAX or type(name) is not str:
            rid, name = _int(entry.get("record_id")), entry.get("profiling_name")
            if rid is None or not isinstance(name, str):
                return False
        call = self._call(name, entry)
        if call < 0:
            return False
        if type(is_p2p) is not bool:
            is_p2p = self.calls[call].op in ("send", "recv")
        seq = pseq if is_p2p else cseq
        if type(seq) is not int or not _INT_MIN <= seq <= _INT_MAX:
            seq = _int(entry.get("p2p_seq_id" if is_p2p else "collective_seq_id"))
            seq = _int(entry.get("seq_id")) if seq is None else seq  # the field's name before format 2.0
            if seq is None:
                return False
        state = _STATES.get(state_name) if type(state_name) is str else None
        if state is None:
            state = _state(entry)
        if type(created) is not int or not 0 < created <= _INT_MAX:
            created = _time(created) or 0
        dump = self.dump
        dump.entries += 1
        if state:  # started or completed: this dump's states say something (gloo's never do)
            dump.states_known = True
        if dump.earliest_record is None or rid < dump.earliest_record:
            dump.earliest_record = rid
        trace = self._trace(entry, is_p2p)
        if not is_p2p and trace.seqs and trace.seqs[-1] == seq:  # a coalesced launch: one call
            earlier = trace.votes[-1]
            trace.votes[-1] = self._vote(
                (*self.vote_calls[earlier], call), min(dump.votes[earlier][1], state)
            )
            trace.record_ids[-1] = rid
            return True
        frames = entry.get("frames")
        trace.seqs.append(seq)
        trace.votes.append(self._vote((call,), state))
        trace.record_ids.append(rid)
        trace.stacks.append(self._stack(frames) if frames is not None else 0)
        trace.created.append(created)
        return True

    def _trace(self, entry: dict[object, object], is_p2p: bool) -> Trace:
        group = entry.get("process_group")
        try:
            key = (tuple(group) if type(group) is list else group, is_p2p)
            trace = self.traces.get(key)
        except TypeError:  # an unhashable group: no dump has one; named the slow way below
            key, trace = None, None
        if trace is None:
            name, desc = _group_of(entry)
            traces = self.dump.p2p if is_p2p else self.dump.collectives
            trace = traces.get(name)
            if trace is None:
                trace = traces[name] = Trace(name, desc, is_p2p)
                pg_id = _int(entry.get("pg_id"))
                if pg_id is not None:
                    self.pg_ids.setdefault(str(pg_id), name)
            if key is not None:
                self.traces[key] = trace
        return trace

    def _call(self, name: str, entry: dict[object, object]) -> int:
        """The index of the entry's call in `calls`, or -1 when the entry is malformed."""
        try:
            raw = _SIZES(entry)
        except KeyError:
            raw = tuple(entry.get(key) for key in _SIZE_KEYS)
        try:  # repr, not the values: sizes are lists, and repr tells 1 from "1" and True
            key: str | None = repr((name, raw))
            index = self.call_ids.get(key)  # type: ignore[arg-type]
        except RecursionError:  # nested deeper than any dump: validated, never cached
            key, index = None, None
        if index is None:
            call = _call(name, entry)
            index = -1 if call is None else len(self.calls)
            if call is not None:
                self.calls.append(call)
                self.dump.backend = self.dump.backend or call.backend
            if key is not None:
                self.call_ids[key] = index
        return index

    def _vote(self, calls: tuple[int, ...], state: State) -> int:
        key = (calls, state)
        index = self.vote_ids.get(key)
        if index is None:
            index = self.vote_ids[key] = len(self.dump.votes)
            self.dump.votes.append((tuple(self.calls[i] for i in calls), state))
            self.vote_calls.append(calls)
        return index

    def _stack(self, frames: object) -> int:
        if type(frames) is not list:
            return 0
        self.dump.has_frames = True
        kept = frames[:MAX_FRAMES]
        key = tuple(map(id, kept))
        index = self.stack_ids.get(key)
        if index is None:
            stack = tuple(frame for item in kept if (frame := self._frame(item)) is not None)
            index = self.stack_ids[key] = len(self.dump.stacks)
            self.dump.stacks.append(stack)
        return index

    def _frame(self, item: object) -> Frame | None:
        key = id(item)
        if key not in self.frames:
            self.frames[key] = _frame(item)
        return self.frames[key]


_SIZE_KEYS = ("input_sizes", "input_dtypes", "output_sizes", "output_dtypes")
_ROUTINE = itemgetter(
    "record_id",
    "profiling_name",
    "is_p2p",
    "collective_seq_id",
    "state",
    "time_created_ns",
    *_SIZE_KEYS,
    "process_group",
    "frames",
)
_SIZES = itemgetter(*_SIZE_KEYS)
_FAST = itemgetter(
    "record_id", "profiling_name", "is_p2p", "collective_seq_id", "p2p_seq_id", "state", "time_created_ns"
)


def _frame(item: object) -> Frame | None:
    if not isinstance(item, dict):
        return None
    line = item.get("line")
    return Frame(
        _text(item.get("name")) or "?", _text(item.get("filename")) or "?", line if _is_int(line) else 0
    )


def _group_of(entry: dict[object, object]) -> tuple[str, str]:
    group = entry.get("process_group")
    if isinstance(group, list | tuple) and len(group) == 2:
        return _text(group[0]) or "?", _text(group[1]) or "undefined"
    pg_id = _int(entry.get("pg_id"))
    return (str(pg_id) if pg_id is not None else "?"), "undefined"


def _call(name: str, entry: dict[object, object]) -> Call | None:
    parsed = _PROFILING_NAME.match(name)
    if parsed is None:
        return None
    op, peer = parsed.group("op"), parsed.group("peer")
    src = dst = None
    if peer and (send := _SEND.match(peer)) and op == "send":
        src, dst = int(send.group(1)), int(send.group(2))
    elif peer and (recv := _RECV.match(peer)) and op == "recv":
        dst, src = int(recv.group(1)), int(recv.group(2))
    return Call(
        backend=_text(parsed.group("backend") or ""),
        op=_text(op),
        input_sizes=_sizes(entry.get("input_sizes")),
        output_sizes=_sizes(entry.get("output_sizes")),
        input_dtypes=_dtypes(entry.get("input_dtypes")),
        output_dtypes=_dtypes(entry.get("output_dtypes")),
        src=src,
        dst=dst,
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


def _state(entry: dict[object, object]) -> State:
    """From the times when the state itself is missing or unknown."""
    if _time(entry.get("time_discovered_completed_ns")):
        return State.COMPLETED
    return State.STARTED if _time(entry.get("time_discovered_started_ns")) else State.SCHEDULED


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


def _status(value: object, pg_ids: dict[str, str]) -> dict[str, GroupStatus]:
    """pg_status is keyed by the rank-local pg_id; the entries say which group name each id is."""
    if not isinstance(value, dict):
        return {}
    status = {}
    for key, fields in value.items():
        if isinstance(fields, Mapping):
            pg_id = _text(key) if isinstance(key, str) else str(_int(key))
            status[pg_ids.get(pg_id, f"pg_id {pg_id}")] = GroupStatus(
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
