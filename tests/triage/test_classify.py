"""Every rank's NCCL state compared, outliers named (seed 003's watchdog anatomy)."""

from __future__ import annotations

from hyperpod_nccl.triage.classify import classify
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.rank_state import build_rank_states


def timed_out(rank: int, seq: int = 808, op: str = "ALLREDUCE", numel: int = 9801523) -> Event:
    return Event(
        "wd_timeout",
        "error-1-0.out",
        rank + 1,
        f"[Rank {rank}] Watchdog caught collective operation timeout",
        rank=rank,
        fields={
            "seq": str(seq),
            "op": op,
            "numel_in": str(numel),
            "numel_out": str(numel),
            "timeout_ms": "600000",
        },
    )


def status(rank: int, enqueued: int, completed: int, seq: int = 808) -> Event:
    fields = {"pg": "0", "seq": str(seq), "enqueued": str(enqueued), "completed": str(completed)}
    return Event(
        "wd_status", "error-1-0.out", 100 + rank, "failure detected by watchdog", rank=rank, fields=fields
    )


def notified(rank: int, origin: int, enqueued: int, completed: int) -> list[Event]:
    fields = {"pg": "0", "origin": str(origin), "enqueued": str(enqueued), "completed": str(completed)}
    return [
        Event("dump_observed", "error-1-0.out", 500, "Observed flight recorder dump signal", rank=rank),
        Event("dump_received", "error-1-0.out", 501, "Received a dump signal", rank=rank, fields=fields),
    ]


def waiting(ranks: range, skip: set[int] = frozenset()) -> list[Event]:  # type: ignore[assignment]
    return [e for r in ranks if r not in skip for e in (timed_out(r), status(r, 808, 807))]


def test_straggler_is_the_rank_that_never_enqueued() -> None:
    events = waiting(range(16), {5}) + notified(5, origin=3, enqueued=807, completed=807)
    states = build_rank_states(events)
    verdict = classify(states, list(range(16)))
    assert verdict.verdict == "straggler"
    assert verdict.culprits == [5]
    assert states[5].watchdog == "notified" and states[5].told_by == 3
    assert len(verdict.waiting) == 15 and verdict.stuck_seq == 808


def test_everyone_inside_with_nobody_missing_means_the_collective_itself_failed() -> None:
    verdict = classify(build_rank_states(waiting(range(8))), list(range(8)))
    assert (verdict.verdict, verdict.culprits) == ("all_inside", [])


def test_ranks_with_no_watchdog_line_are_silent_culprits_on_old_pytorch() -> None:
    events = [timed_out(r) for r in range(8) if r != 6]  # PyTorch 2.1: no status lines at all
    verdict = classify(build_rank_states(events), list(range(8)))
    assert (verdict.verdict, verdict.culprits) == ("silent", [6])


def test_different_op_at_the_same_seqnum_is_a_mismatch_and_the_minority_is_blamed() -> None:
    events = [timed_out(r) for r in range(1, 8)] + [timed_out(0, op="ALLGATHER")]
    verdict = classify(build_rank_states(events), list(range(8)))
    assert (verdict.verdict, verdict.culprits) == ("mismatch", [0])


def test_different_sizes_at_the_same_seqnum_are_a_mismatch_too() -> None:
    events = [timed_out(r) for r in range(8) if r != 3] + [timed_out(3, numel=1024)]
    assert classify(build_rank_states(events), list(range(8))).culprits == [3]


def test_rank_0_ahead_as_broadcast_root_is_not_a_straggler() -> None:
    events = [e for r in range(1, 8) if r != 4 for e in (timed_out(r, op="BROADCAST"), status(r, 808, 807))]
    events += [timed_out(0, seq=809), status(0, 809, 808, seq=809)]
    events += notified(4, origin=1, enqueued=807, completed=807)
    verdict = classify(build_rank_states(events), list(range(8)))
    assert verdict.verdict == "straggler" and verdict.culprits == [4]
    assert verdict.rank0_ahead


def test_sub_group_lines_do_not_mix_with_the_default_group() -> None:
    sub = status(2, 10, 10)
    sub.fields["pg"] = "3"
    states = build_rank_states([*waiting(range(4)), sub])
    assert states[2].enqueued == 808


def test_ranks_that_left_no_line_at_all_are_absent_not_culprits() -> None:
    events = waiting(range(8, 16))  # one node's file of a 16-rank job
    verdict = classify(build_rank_states(events), list(range(16)), seen=set(range(8, 16)))
    assert (verdict.verdict, verdict.culprits, verdict.absent) == ("incomplete", [], list(range(8)))
