"""Findings, sized for an LLM: grouped ranks, named outliers, a few decisive evidence lines each."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from hyperpod_nccl.guard.commands import placeholder, suggest
from hyperpod_nccl.models import Evidence, Finding, Priority, RankStateGroup, Status
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.classify import Classification
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import Meaning, cuda_oom_figures
from hyperpod_nccl.triage.rank_state import RankState
from hyperpod_nccl.triage.summary import Topology, srun_tasks
from hyperpod_nccl.triage.timeline import Clock, earliest

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
        node=event.node or topology.node_of(event.rank),
    )


def decisive(events: Iterable[Event], clock: Clock, limit: int = MAX_EVIDENCE) -> list[Event]:
    """The earliest events, one per rank first so the evidence shows distinct witnesses, then the
    other lines of those ranks (an exception and the DataLoader line that wrapped it)."""
    ordered = sorted(events, key=lambda e: _when(e, clock))
    firsts: list[Event] = []
    seen: set[int | None] = set()
    for event in ordered:
        if event.rank is None or event.rank not in seen:
            firsts.append(event)
            seen.add(event.rank)
    rest = [e for e in ordered if e not in firsts]
    return (firsts + rest)[:limit]


def _when(event: Event, clock: Clock) -> tuple[int, datetime, str, int]:
    moment = clock.at(event.stamp)
    return (0 if moment else 1, moment or datetime.max, event.source, event.line)


def listed(ranks: Iterable[int]) -> list[int]:
    unique = sorted(set(ranks))
    return unique if len(unique) <= MAX_LISTED_RANKS else []


def _scope(ranks: list[int], nodes: list[str]) -> str:
    parts = []
    if ranks:
        parts.append(f"ranks {compress(ranks)}" if len(ranks) > 1 else f"rank {ranks[0]}")
    if nodes:
        parts.append(f"{len(nodes)} node{'s' if len(nodes) > 1 else ''}")
    return ", ".join(parts)


def catalogue_finding(meaning: Meaning, events: list[Event], topology: Topology, clock: Clock) -> Finding:
    ranks = sorted({e.rank for e in events if e.rank is not None})
    nodes = sorted({n for e in events if (n := e.node or topology.node_of(e.rank))})
    lines = sum(e.count for e in events)
    detail = f"Seen {lines} time{'s' if lines > 1 else ''}" + (
        f" on {_scope(ranks, nodes)}" if ranks or nodes else ""
    )
    first = earliest(events, clock)
    if meaning.id == "triage.gpu.cuda_oom" and first is not None and "tried" in first.fields:
        detail += f"; {cuda_oom_figures(first)}"
    if meaning.category is None and meaning.status == Status.INFO:
        detail += ". A consequence or noise, not the cause."
    return Finding(
        id=meaning.id,
        status=meaning.status,
        priority=meaning.priority,
        title=meaning.title,
        reference=meaning.reference,
        detail=detail + ("" if detail.endswith(".") else "."),
        ranks=listed(ranks),
        nodes=nodes[:MAX_LISTED_NODES],
        evidence=[evidence(e, topology) for e in decisive(events, clock)],
    )


def _collective(verdict: Classification) -> str:
    signature = verdict.stuck_signature
    op = signature[0] if signature and signature[0] else "collective"
    return f"{op} SeqNum {verdict.stuck_seq}" if verdict.stuck_seq is not None else op


def nccl_findings(
    verdict: Classification, states: dict[int, RankState], topology: Topology, clock: Clock
) -> list[Finding]:
    builders = {
        "straggler": _straggler,
        "silent": _silent,
        "incomplete": _incomplete,
        "mismatch": _mismatch,
        "all_inside": _all_inside,
    }
    builder = builders.get(verdict.verdict)
    found = [builder(verdict, states, topology, clock)] if builder else []
    if verdict.rank0_ahead and 0 in states:
        root = states[0]
        found.append(
            Finding(
                id="triage.nccl.rank0_ahead",
                status=Status.INFO,
                priority=Priority.P2,
                title="Rank 0 is ahead of the others (broadcast root finished its send side)",
                reference="debugging-guide.md § 1",
                detail=f"Rank 0 completed work {root.completed}; it is the root, not a culprit.",
                ranks=[0],
                evidence=[evidence(e, topology) for e in [root.decisive_event] if e],
            )
        )
    return found


def _who(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {compress(ranks)}"


def _issued(signature: tuple[str | None, int | None, int | None]) -> str:
    op, numel_in, numel_out = signature
    sizes = f" NumelIn={numel_in} NumelOut={numel_out}" if numel_in is not None else ""
    return f"{op}{sizes}"


def _waiting_witness(verdict: Classification, states: dict[int, RankState]) -> list[Event]:
    for rank in verdict.waiting:
        event = states[rank].timeout_event or states[rank].decisive_event
        if event is not None:
            return [event]
    return []


def _nodes_of(ranks: list[int], topology: Topology) -> list[str]:
    return sorted({n for r in ranks if (n := topology.node_of(r))})[:MAX_LISTED_NODES]


def _straggler(
    verdict: Classification, states: dict[int, RankState], topology: Topology, clock: Clock
) -> Finding:
    culprits = verdict.culprits
    lines = [e for r in culprits for e in states[r].witness_events][:MAX_EVIDENCE]
    return Finding(
        id="triage.nccl.straggler",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Rank {compress(culprits)} never entered {_collective(verdict)}; {len(verdict.waiting)} ranks "
        "waited for it",
        reference="debugging-guide.md § 1",
        detail="Its last enqueued work equals its last completed work: nothing was in flight, it was stuck "
        "outside NCCL (data loading or the training loop) while the others waited inside the collective.",
        ranks=listed(culprits),
        nodes=_nodes_of(culprits, topology),
        evidence=[evidence(e, topology) for e in lines + _waiting_witness(verdict, states)],
        suggested_commands=[
            suggest(
                "py-spy dump --pid",
                placeholder(f"pid of rank {culprits[0]}"),
                why="shows where the straggler's Python stack is stuck if the job hangs again",
            )
        ],
    )


def _silent(
    verdict: Classification, states: dict[int, RankState], topology: Topology, clock: Clock
) -> Finding:
    silent = verdict.culprits
    return Finding(
        id="triage.nccl.silent_ranks",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{len(silent)} rank{'s' if len(silent) > 1 else ''} left no watchdog line while "
        f"{len(verdict.waiting)} timed out in {_collective(verdict)}",
        reference="debugging-guide.md § 1",
        detail=f"Silent ranks: {compress(silent)}. They were killed, crashed, never started, or were stuck "
        "outside NCCL on a PyTorch too old to report it.",
        ranks=listed(silent),
        nodes=_nodes_of(silent, topology),
        evidence=[evidence(e, topology) for e in _waiting_witness(verdict, states)],
    )


def _incomplete(
    verdict: Classification, states: dict[int, RankState], topology: Topology, clock: Clock
) -> Finding:
    return Finding(
        id="triage.input.missing_ranks",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"Logs of {len(verdict.absent)} ranks are not in the input, and {len(verdict.waiting)} ranks "
        f"timed out waiting in {_collective(verdict)}",
        reference="debugging-guide.md § 1",
        detail=f"Absent ranks: {compress(verdict.absent)}. The rank that never entered the collective may be "
        "among them: add every node's log files and run the triage again.",
        evidence=[evidence(e, topology) for e in _waiting_witness(verdict, states)],
    )


def _mismatch(
    verdict: Classification, states: dict[int, RankState], topology: Topology, clock: Clock
) -> Finding:
    groups = sorted(verdict.mismatched.items(), key=lambda item: len(item[1]))
    shown = "; ".join(f"{_who(ranks)}: {_issued(signature)}" for signature, ranks in groups[:4])
    witnesses = [states[ranks[0]].timeout_event for _, ranks in groups[:MAX_EVIDENCE]]
    return Finding(
        id="triage.nccl.collective_mismatch",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Ranks issued different collectives at SeqNum {verdict.stuck_seq}",
        reference="debugging-guide.md § 2",
        detail=f"{shown}. A code or configuration bug, not a slow rank.",
        ranks=listed(verdict.culprits),
        nodes=_nodes_of(verdict.culprits, topology),
        evidence=[evidence(e, topology) for e in witnesses if e],
    )


def _all_inside(
    verdict: Classification, states: dict[int, RankState], topology: Topology, clock: Clock
) -> Finding:
    return Finding(
        id="triage.nccl.all_inside",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"All {len(verdict.waiting)} ranks were inside {_collective(verdict)} and none was missing",
        reference="debugging-guide.md § 3",
        detail="No straggler and no silent rank: the collective itself could not complete (fabric, NIC or "
        "transport).",
        evidence=[evidence(e, topology) for e in _waiting_witness(verdict, states)],
    )


def silent_exit_finding(exits: list[Event], topology: Topology, clock: Clock) -> Finding:
    ranks = sorted({r for e in exits for r in _exit_ranks(e)})
    return Finding(
        id="triage.nccl.silent_exit",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"Rank {compress(ranks)} exited with an error code and printed no reason",
        reference="debugging-guide.md § 1",
        detail="It left no watchdog line and no error message; the others timed out waiting for it. "
        "Its own stderr, core dumps or the node's kernel log may say why.",
        ranks=listed(ranks),
        nodes=_nodes_of(ranks, topology),
        evidence=[evidence(e, topology) for e in decisive(exits, clock)],
    )


def _exit_ranks(event: Event) -> list[int]:
    if event.kind == "srun_task" and "tasks" in event.fields:
        return srun_tasks(event.fields["tasks"])
    return [event.rank] if event.rank is not None else []


def rank_state_groups(
    states: dict[int, RankState], verdict: Classification, topology: Topology
) -> list[RankStateGroup]:
    """Every rank, grouped by identical state; silent ranks are a group of their own."""
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
    if verdict.silent:
        groups.append(
            RankStateGroup(
                ranks=compress(verdict.silent),
                count=len(verdict.silent),
                state="no watchdog line: killed, crashed, never started, or stuck outside NCCL (old PyTorch)",
                watchdog="none",
                nodes=_nodes_of(verdict.silent, topology)[:4] if len(verdict.silent) <= 16 else [],
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
        nodes=_nodes_of(ranks, topology)[:4] if len(ranks) <= 16 else [],
    )


def _state_label(state: RankState, verdict: Classification) -> str:
    if state.rank in verdict.culprits and verdict.verdict == "straggler":
        return "outside NCCL: never entered the stuck collective (straggler)"
    if state.idle:
        return "outside NCCL: nothing in flight"
    if state.inside:
        return "inside the collective, waiting"
    return "notified of another rank's dump" if state.watchdog == "notified" else "watchdog fired"
