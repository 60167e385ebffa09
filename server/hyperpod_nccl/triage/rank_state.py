"""The NCCL watchdog state of every rank, rebuilt from its own lines (seed 003's anatomy).

For each rank: the process group, the timed-out SeqNum / OpType / NumelIn / NumelOut / timeout,
its last enqueued and last completed work, and whether its own watchdog fired (it timed out, or
was the first PG to signal dumping) or it was only notified (it observed another rank's dump
signal). Ranks that printed none of these are reported as such by the classifier.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from hyperpod_nccl.triage.events import Event

STATE_KINDS = frozenset(
    {"wd_timeout", "wd_status", "dump_first", "dump_observed", "dump_received", "work_update", "async_error"}
)
_FIRED_KINDS = frozenset({"wd_timeout", "wd_status", "dump_first", "async_error"})
_DEFAULT_PG = "0"

Watchdog = Literal["fired", "notified", "none"]


@dataclass
class RankState:
    rank: int
    node: str | None = None
    pg: str | None = None
    seq: int | None = None
    op: str | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    timeout_ms: int | None = None
    enqueued: int | None = None
    completed: int | None = None
    watchdog: Watchdog = "none"
    told_by: int | None = None  # the rank whose dump signal this rank received
    timeout_event: Event | None = None
    status_event: Event | None = None
    signal_event: Event | None = None
    events: list[Event] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        """No NCCL work in flight: the rank never entered the collective the others wait in."""
        return self.enqueued is not None and self.enqueued == self.completed

    @property
    def inside(self) -> bool:
        if self.enqueued is not None and self.completed is not None:
            return self.enqueued > self.completed
        return self.timeout_event is not None

    @property
    def decisive_event(self) -> Event | None:
        return self.status_event or self.timeout_event or self.signal_event

    @property
    def witness_events(self) -> list[Event]:
        """The lines that show this rank's state: its status or timeout, else what it was told."""
        if self.status_event or self.timeout_event:
            return [e for e in (self.status_event or self.timeout_event,) if e]
        observed = [e for e in self.events if e.kind == "dump_observed"][:1]
        return [e for e in (self.signal_event, *observed) if e]


def build_rank_states(events: Iterable[Event]) -> dict[int, RankState]:
    """One state per rank that left at least one watchdog / flight-recorder line."""
    stated = [e for e in events if e.kind in STATE_KINDS and e.rank is not None]
    main_group = _main_group(stated)
    by_rank: dict[int, list[Event]] = {}
    for event in stated:
        if event.fields.get("pg", main_group) == main_group:
            by_rank.setdefault(event.rank, []).append(event)
    return {
        rank: _state_of(rank, sorted(found, key=lambda e: (e.source, e.line)))
        for rank, found in by_rank.items()
    }


def _main_group(events: list[Event]) -> str:
    """The group every rank shares: sub-groups have their own sequence numbers.

    That is the default group (PG 0) when any line names it; a launcher that created a group of
    its own first (accelerate's training loop reports `[PG 1 Rank 0]`) leaves the lowest id seen.
    """
    named = {pg for e in events if (pg := e.fields.get("pg")) is not None}
    if not named or _DEFAULT_PG in named:
        return _DEFAULT_PG
    return min(named, key=int)


def _state_of(rank: int, events: list[Event]) -> RankState:
    state = RankState(rank=rank, events=events)
    for event in events:
        state.node = state.node or event.node
        state.pg = state.pg or event.fields.get("pg")
        if event.kind in _FIRED_KINDS:
            state.watchdog = "fired"
        if event.kind == "wd_timeout" and state.timeout_event is None:
            _take_timeout(state, event)
        elif event.kind == "wd_status" and state.status_event is None:
            _take_progress(state, event)
            state.status_event = event
            state.seq = state.seq or _int(event.fields.get("seq"))
        elif event.kind == "dump_received":
            _take_signal(state, event)
        elif event.kind == "dump_observed":
            state.signal_event = state.signal_event or event
        elif event.kind == "work_update" and state.enqueued is None:
            _take_progress(state, event)
    if state.watchdog == "none" and state.signal_event is not None:
        state.watchdog = "notified"
    return state


def _take_timeout(state: RankState, event: Event) -> None:
    fields = event.fields
    state.timeout_event = event
    state.seq = _int(fields.get("seq"))
    state.op = fields.get("op")
    state.numel_in = _int(fields.get("numel_in"))
    state.numel_out = _int(fields.get("numel_out"))
    state.timeout_ms = _int(fields.get("timeout_ms"))


def _take_progress(state: RankState, event: Event) -> None:
    state.enqueued = _int(event.fields.get("enqueued"))
    state.completed = _int(event.fields.get("completed"))


def _take_signal(state: RankState, event: Event) -> None:
    origin = event.fields.get("origin")
    if origin is None:  # "from this local rank": its own watchdog fired
        state.watchdog = "fired"
    else:
        state.told_by = int(origin)
        state.signal_event = event  # names the origin and carries enqueued / completed
    if state.status_event is None:
        _take_progress(state, event)


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None
