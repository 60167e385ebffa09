"""Compare every rank's NCCL state and name the outliers (seed 003: check ALL ranks).

- a rank outside NCCL (enqueued == completed, below the stuck SeqNum) while others wait inside
  → a straggler: it never entered the collective;
- ranks that left no watchdog line while others timed out → silent (killed, crashed, hung);
  ranks that left no line at all are absent: their logs are not in the input, which is said,
  never guessed at; ranks whose logs could not be read wholly are unread, and like the absent
  they are never blamed for a silence the triage could not see;
- different OpType / NumelIn / NumelOut at the same SeqNum → a collective mismatch;
- everyone inside the collective, nobody outside → the collective itself could not complete;
- rank 0 ahead of the others → the broadcast root finished its send side (not a culprit).
The collective started at (time the watchdog fired − the timeout).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from hyperpod_nccl.triage.rank_state import RankState

Verdict = Literal["mismatch", "straggler", "silent", "incomplete", "all_inside", "none"]
Signature = tuple[str | None, int | None, int | None]


@dataclass
class Classification:
    verdict: Verdict
    culprits: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    idle: list[int] = field(default_factory=list)
    silent: list[int] = field(default_factory=list)
    absent: list[int] = field(default_factory=list)
    unread: list[int] = field(default_factory=list)
    notified: list[int] = field(default_factory=list)
    stuck_seq: int | None = None
    stuck_signature: Signature | None = None
    timeout_ms: int | None = None
    rank0_ahead: bool = False
    mismatched: dict[Signature, list[int]] = field(default_factory=dict)


def classify(
    states: dict[int, RankState],
    world: list[int],
    seen: set[int] | None = None,
    unread: Iterable[int] = (),
    known: bool = True,
) -> Classification:
    """Compare every rank; `seen` are the ranks that left any line at all (default: all of `world`),
    `unread` those whose logs could not be read wholly. `known` says whether the world size was
    read from a line: one rank's state alone, in a world inferred from it, compares with nothing."""
    if not states:
        return Classification("none")
    result = Classification("none")
    result.stuck_seq, result.stuck_signature = _stuck_collective(states)
    result.timeout_ms = next((s.timeout_ms for s in states.values() if s.timeout_ms), None)
    result.waiting = sorted(r for r, s in states.items() if s.inside)
    result.idle = sorted(r for r, s in states.items() if s.idle)
    result.notified = sorted(r for r, s in states.items() if s.watchdog == "notified")
    missing = set(world) - set(states)
    result.unread = sorted(missing & set(unread))
    result.absent = sorted(missing - seen - set(unread)) if seen is not None else []
    result.silent = sorted(missing - set(result.absent) - set(result.unread))
    result.mismatched = _mismatch(states)
    result.rank0_ahead = _rank0_ahead(states, result.stuck_seq)
    result.verdict, result.culprits = _verdict(states, result)
    if result.verdict == "all_inside" and not known and len(states) < 2:
        result.verdict = "incomplete"  # the others' logs are not in the input: nothing to compare
    return result


def _stuck_collective(states: dict[int, RankState]) -> tuple[int | None, Signature | None]:
    """The SeqNum most ranks timed out on (or, without timeout lines, failed at)."""
    seqs = Counter(s.seq for s in states.values() if s.seq is not None)
    if not seqs:
        return None, None
    seq = seqs.most_common(1)[0][0]
    signatures = Counter(_signature(s) for s in states.values() if s.seq == seq and s.timeout_event)
    return seq, signatures.most_common(1)[0][0] if signatures else None


def _signature(state: RankState) -> Signature:
    return state.op, state.numel_in, state.numel_out


def _mismatch(states: dict[int, RankState]) -> dict[Signature, list[int]]:
    """Ranks grouped by what they issued at a SeqNum where ranks disagree; empty when all agree."""
    by_seq: dict[int, dict[Signature, list[int]]] = {}
    for rank, state in states.items():
        if state.seq is not None and state.timeout_event is not None:
            by_seq.setdefault(state.seq, {}).setdefault(_signature(state), []).append(rank)
    for groups in by_seq.values():
        if len(groups) > 1:
            return {signature: sorted(ranks) for signature, ranks in groups.items()}
    return {}


def _rank0_ahead(states: dict[int, RankState], stuck_seq: int | None) -> bool:
    root = states.get(0)
    if root is None or root.completed is None:
        return False
    others = [s.completed for r, s in states.items() if r != 0 and s.completed is not None]
    if not others:
        return False
    return root.completed > max(others) or (stuck_seq is not None and root.completed >= stuck_seq)


def _verdict(states: dict[int, RankState], result: Classification) -> tuple[Verdict, list[int]]:
    if result.mismatched:
        groups = sorted(result.mismatched.values(), key=len)
        minority = [rank for ranks in groups[:-1] for rank in ranks]
        return "mismatch", sorted(minority)
    stragglers = [r for r in result.idle if _behind(states[r], result.stuck_seq) and r not in result.waiting]
    if stragglers and result.waiting:
        return "straggler", stragglers
    if result.silent and result.waiting:
        return "silent", result.silent
    if (result.absent or result.unread) and result.waiting:
        return "incomplete", []
    if result.waiting:
        return "all_inside", []
    return "none", []


def _behind(state: RankState, stuck_seq: int | None) -> bool:
    """Outside NCCL and short of the stuck collective: it never issued it."""
    return stuck_seq is None or state.completed is None or state.completed < stuck_seq
