"""What every rule's findings share, sized for an LLM: verbatim evidence lines (the earliest, one per
rank first), listed ranks and nodes within limits, and every rank's NCCL state grouped."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from hyperpod_nccl.models import (
    Evidence,
    RankStateGroup,
)
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.classify import Classification
from hyperpod_nccl.triage.events import FRAME, FRAME_LINE, Event
from hyperpod_nccl.triage.rank_state import RankState
from hyperpod_nccl.triage.summary import Topology, srun_tasks

if TYPE_CHECKING:
    from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.timeline import Clock, order_key

EVIDENCE_TEXT_CHARS = 320
MAX_EVIDENCE = 2
MAX_LISTED_RANKS = 64
MAX_LISTED_NODES = 16


# PyTorch appends advice to some lines; the quote keeps what the line says, not the advice.
_BOILERPLATE = (
    ".This is most likely caused",
    " If reserved but unallocated",
    " Due to the asynchronous nature",
)


def clip(text: str, limit: int = EVIDENCE_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    for marker in _BOILERPLATE:
        cut = text.find(marker)
        if 0 < cut <= limit:
            return text[: cut + 1] + "…"
    return text[:limit] + "…"


def evidence(event: Event, topology: Topology) -> Evidence:
    text = clip(event.text)
    return Evidence(
        source=event.source,
        line=event.line,
        text=text,
        rank=event.rank,
        node=topology.node_of_line(event),
    )


def quoted(events: Iterable[Event], topology: Topology) -> list[Evidence]:
    """Each event's line, followed by the traceback frame it was read through when it has one (the
    shared-memory code above an ENOSPC: the line that shows which device was full)."""
    found: list[Evidence] = []
    for event in events:
        found.append(evidence(event, topology))
        if FRAME_LINE in event.fields:
            frame = replace(event, line=int(event.fields[FRAME_LINE]), text=event.fields[FRAME], fields={})
            found.append(evidence(frame, topology))
    return found


def quoted_lines(events: Iterable[Event]) -> set[tuple[str, int]]:
    """The (source, line) of every line `quoted` would give for `events`, without building them (an
    origin's group may hold one event per rank of a 32k-rank job)."""
    lines = set()
    for event in events:
        lines.add((event.source, event.line))
        if FRAME_LINE in event.fields:
            lines.add((event.source, int(event.fields[FRAME_LINE])))
    return lines


def decisive(events: Iterable[Event], clock: Clock, limit: int = MAX_EVIDENCE) -> list[Event]:
    """The earliest events, one per rank first so the evidence shows distinct witnesses, then the
    other lines of those ranks (an exception and the DataLoader line that wrapped it)."""
    ordered = sorted(events, key=lambda e: order_key(e, clock))
    firsts: list[Event] = []
    seen: set[int | None] = set()
    for event in ordered:
        if event.rank is None or event.rank not in seen:
            firsts.append(event)
            seen.add(event.rank)
    chosen = {id(e) for e in firsts}
    rest = [e for e in ordered if id(e) not in chosen]
    return (firsts + rest)[:limit]


def event_ranks(event: Event) -> set[int]:
    """The ranks an event concerns: its own, or the task list of an srun exit line."""
    if event.kind == "srun_task" and "tasks" in event.fields:
        return set(srun_tasks(event.fields["tasks"]))
    if event.kind == "monitored_barrier":  # the ranks it names, not the rank that reports them
        named = event.fields.get("late") or event.fields.get("peer", "")
        return {int(rank) for rank in named.replace(" ", "").split(",") if rank}
    return {event.rank} if event.rank is not None else set()


def listed(ranks: Iterable[int]) -> list[int]:
    unique = sorted(set(ranks))
    return unique if len(unique) <= MAX_LISTED_RANKS else []


def scope(ranks: list[int], nodes: list[str]) -> str:
    parts = []
    if ranks:
        parts.append(f"ranks {compress(ranks)}" if len(ranks) > 1 else f"rank {ranks[0]}")
    if nodes:
        parts.append(f"{len(nodes)} node{'s' if len(nodes) > 1 else ''}")
    return ", ".join(parts)


def rank_state_groups(incident: Incident) -> list[RankStateGroup]:
    """Every rank, grouped by identical state; silent, absent and unread ranks are groups of their own."""
    states, verdict, topology = incident.states, incident.verdict, incident.topology
    grouped: dict[tuple[object, ...], list[int]] = {}
    for rank, state in sorted(states.items()):
        key = (
            _state_label(state, verdict),
            state.watchdog,
            state.pg,
            state.seq,
            state.op,
            state.numel_in,
            state.numel_out,
            state.timeout_ms,
            state.enqueued,
            state.completed,
        )
        grouped.setdefault(key, []).append(rank)
    groups = [_group(key, ranks, topology) for key, ranks in grouped.items()]
    if verdict.absent:
        groups.append(
            RankStateGroup(
                ranks=compress(verdict.absent),
                count=len(verdict.absent),
                state="not in the input: no line from these ranks was read",
                watchdog="none",
            )
        )
    if verdict.unread:
        groups.append(
            RankStateGroup(
                ranks=compress(verdict.unread),
                count=len(verdict.unread),
                state="log not read wholly (skipped or cut short): "
                + (incident.reading.unread_ranks.get(verdict.unread[0]) or "unreadable"),
                watchdog="none",
            )
        )
    if verdict.silent:
        groups.append(
            RankStateGroup(
                ranks=compress(verdict.silent),
                count=len(verdict.silent),
                state="no watchdog line: killed, crashed, never started, or stuck outside NCCL (old PyTorch)",
                watchdog="none",
                nodes=incident.nodes_of(verdict.silent)[:4] if len(verdict.silent) <= 16 else [],
            )
        )
    return sorted(groups, key=lambda g: g.count)


def _group(key: tuple[object, ...], ranks: list[int], topology: Topology) -> RankStateGroup:
    label, watchdog, pg, seq, op, numel_in, numel_out, timeout_ms, enqueued, completed = key
    return RankStateGroup(
        ranks=compress(ranks),
        count=len(ranks),
        state=str(label),
        watchdog=watchdog,  # type: ignore[arg-type]
        process_group=pg,  # type: ignore[arg-type]
        seq=seq,  # type: ignore[arg-type]
        op=op,  # type: ignore[arg-type]
        numel_in=numel_in,  # type: ignore[arg-type]
        numel_out=numel_out,  # type: ignore[arg-type]
        timeout_ms=timeout_ms,  # type: ignore[arg-type]
        last_enqueued=enqueued,  # type: ignore[arg-type]
        last_completed=completed,  # type: ignore[arg-type]
        nodes=sorted({n for r in ranks if (n := topology.node_of(r))})[:4] if len(ranks) <= 16 else [],
    )


def _state_label(state: RankState, verdict: Classification) -> str:
    if state.rank in verdict.culprits and verdict.verdict == "straggler":
        return "outside NCCL: never entered the stuck collective (straggler)"
    if state.idle:
        return "outside NCCL: nothing in flight"
    if state.inside:
        return "inside the collective, waiting"
    return "notified of another rank's dump" if state.watchdog == "notified" else "watchdog fired"
