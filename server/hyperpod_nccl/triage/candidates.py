"""Origin candidates: each catalogue meaning that can start a failure, plus the NCCL verdict."""

from __future__ import annotations

from collections.abc import Iterable

from hyperpod_nccl.models import Category
from hyperpod_nccl.triage.classify import Classification
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import JOB_WIDE_IDS, NODE_LEVEL_IDS, Meaning, exit_code
from hyperpod_nccl.triage.rank_state import RankState
from hyperpod_nccl.triage.root_cause import Candidate, Confidence
from hyperpod_nccl.triage.summary import Topology, srun_tasks
from hyperpod_nccl.triage.timeline import Clock, collective_start, earliest

_KILL_IDS = frozenset({"triage.host.sigkill"})
_LATE_SETUP = "triage.rendezvous.late_setup"
SILENT_EXIT_ID = "triage.nccl.silent_exit"
_SILENT_EXIT_WEIGHT = 53  # just above a silent stall: an error exit says the rank died, not stalled
_STALL_WEIGHT, _SILENT_WEIGHT, _MISMATCH_WEIGHT, _ALL_INSIDE_WEIGHT = 57, 52, 88, 40


def event_ranks(event: Event) -> set[int]:
    """The ranks an event concerns: its own, or the task list of an srun exit line."""
    if event.kind == "srun_task" and "tasks" in event.fields:
        return set(srun_tasks(event.fields["tasks"]))
    return {event.rank} if event.rank is not None else set()


def catalogue_candidates(
    groups: dict[str, tuple[Meaning, list[Event]]], verdict: Classification, topology: Topology, clock: Clock
) -> list[Candidate]:
    suspects = set(verdict.culprits) if verdict.verdict in ("straggler", "silent") else set()
    found = []
    for meaning, events in groups.values():
        if meaning.category is None or meaning.weight == 0:
            continue
        ranks = set().union(*(event_ranks(e) for e in events))
        if meaning.id in _KILL_IDS and verdict.waiting:
            # SIGKILL also ends survivors; it only marks the origin on a rank that never entered.
            ranks &= suspects
            if not ranks:
                continue
            events = [e for e in events if event_ranks(e) & ranks]
        candidate = _candidate(meaning, events, ranks, topology, clock)
        _refine_culprits(candidate, meaning, groups, topology)
        found.append(candidate)
    return found


def _refine_culprits(
    candidate: Candidate, meaning: Meaning, groups: dict[str, tuple[Meaning, list[Event]]], topology: Topology
) -> None:
    """Who to blame differs by kind: nobody for a job-wide cancellation, the whole node for a node
    failure, the ranks still installing packages for a store that timed out waiting for clients."""
    if meaning.id in JOB_WIDE_IDS:
        candidate.ranks, candidate.nodes = [], []
    elif meaning.id in NODE_LEVEL_IDS and not candidate.ranks:
        candidate.ranks = sorted(r for r, node in topology.rank_node.items() if node in candidate.nodes)
    elif meaning.category == Category.RENDEZVOUS:
        candidate.ranks = _store_culprits(groups) or candidate.ranks
        candidate.nodes = (
            sorted({n for r in candidate.ranks if (n := topology.node_of(r))}) or candidate.nodes
        )


def _store_culprits(groups: dict[str, tuple[Meaning, list[Event]]]) -> list[int]:
    """Ranks still installing packages never reached the store; a rank every other rank waited on
    for the ncclUniqueId never published it."""
    if _LATE_SETUP in groups:
        late = sorted(set().union(*(event_ranks(e) for e in groups[_LATE_SETUP][1])))
        if late:
            return late
    events = [
        e for meaning, found in groups.values() if meaning.category == Category.RENDEZVOUS for e in found
    ]
    return sorted({int(e.fields["root"]) for e in events if "root" in e.fields})


def _candidate(
    meaning: Meaning, events: list[Event], ranks: Iterable[int], topology: Topology, clock: Clock
) -> Candidate:
    first = earliest(events, clock)
    nodes = {e.node for e in events if e.node} | {n for r in ranks if (n := topology.node_of(r))}
    return Candidate(
        category=meaning.category or Category.UNKNOWN,
        weight=meaning.weight,
        title=meaning.title,
        ranks=sorted(ranks),
        nodes=sorted(nodes),
        first=first,
        when=clock.at(first.stamp) if first else None,
        confidence="high" if meaning.weight >= 75 else "medium",
        finding_id=meaning.id,
    )


def silent_exits(events: list[Event], verdict: Classification) -> list[Event]:
    """Exit lines with an error code (not a signal) for ranks that left no watchdog line."""
    if verdict.verdict != "silent":
        return []
    silent = set(verdict.culprits)
    return [e for e in events if _error_exit(e) and event_ranks(e) & silent]


def _error_exit(event: Event) -> bool:
    if event.kind == "srun_task":
        return event.fields.get("status", "").startswith("Exited with exit code") and not event.fields[
            "status"
        ].endswith(" 0")
    return event.kind == "worker_exit" and (exit_code(event) or 0) > 0


def silent_exit_candidate(
    exits: list[Event], verdict: Classification, topology: Topology, clock: Clock
) -> Candidate | None:
    if not exits:
        return None
    ranks = sorted(set().union(*(event_ranks(e) for e in exits)) & set(verdict.culprits))
    first = earliest(exits, clock)
    return Candidate(
        category=Category.UNKNOWN,
        weight=_SILENT_EXIT_WEIGHT,
        title="Exited with an error code and printed no reason; the others then timed out waiting",
        ranks=ranks,
        nodes=sorted({n for r in ranks if (n := topology.node_of(r))}),
        first=first,
        when=clock.at(first.stamp) if first else None,
        confidence="low",
        finding_id=SILENT_EXIT_ID,
    )


# Verdict → (category, weight, title, confidence, finding id) of the cross-rank NCCL candidate.
_VERDICTS: dict[str, tuple[Category, int, str, Confidence, str]] = {
    "mismatch": (
        Category.COLLECTIVE_MISMATCH,
        _MISMATCH_WEIGHT,
        "Ranks issued different collectives",
        "high",
        "triage.nccl.collective_mismatch",
    ),
    "straggler": (
        Category.DATA_LOADING_STALL,
        _STALL_WEIGHT,
        "Stuck outside NCCL (data loading / training loop) while the others waited",
        "high",
        "triage.nccl.straggler",
    ),
    "silent": (
        Category.DATA_LOADING_STALL,
        _SILENT_WEIGHT,
        "Left no watchdog line while the others waited (stuck outside NCCL, or died silently)",
        "medium",
        "triage.nccl.silent_ranks",
    ),
    "incomplete": (
        Category.UNKNOWN,
        20,
        "The ranks the others waited for left no line in the input (their logs are missing)",
        "low",
        "triage.input.missing_ranks",
    ),
    "all_inside": (
        Category.NETWORK,
        _ALL_INSIDE_WEIGHT,
        "Every rank was inside the collective and it could not complete",
        "medium",
        "triage.nccl.all_inside",
    ),
}


def nccl_candidate(
    verdict: Classification,
    states: dict[int, RankState],
    fired: Event | None,
    topology: Topology,
    clock: Clock,
) -> Candidate | None:
    if verdict.verdict not in _VERDICTS:
        return None
    category, weight, title, confidence, finding_id = _VERDICTS[verdict.verdict]
    culprits = verdict.culprits
    if verdict.verdict == "silent":  # ranks that ran at some point, rather than never-started ones
        culprits = [r for r in culprits if topology.node_of(r)] or culprits
    return Candidate(
        category=category,
        weight=weight,
        title=title,
        ranks=culprits,
        nodes=sorted({n for r in culprits if (n := topology.node_of(r))}),
        first=next((e for r in culprits if r in states for e in states[r].witness_events), fired),
        when=collective_start(clock.at(fired.stamp) if fired else None, verdict.timeout_ms),
        confidence=confidence,
        finding_id=finding_id,
    )
