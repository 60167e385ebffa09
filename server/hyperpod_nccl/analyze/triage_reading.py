"""What a triage Report says about when the job failed, read from its public fields only.

The triage engine dates the stuck collective's start (watchdog time − Timeout(ms)) and the first
watchdog in its timeline, and gives every rank's state in `rank_states`. The cluster diagnostic
needs those moments to place the logs beside the cluster's own events, so they are recognised by
their relation, not their wording: the start is the entry one Timeout(ms) before the watchdog
entry from the same log line.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from hyperpod_nccl.models import Report, TimelineEvent
from hyperpod_nccl.rankset import expand
from hyperpod_nccl.utc import earlier_by


@dataclass(frozen=True)
class StuckCollective:
    started: datetime  # when the collective was issued: the watchdog's time minus its timeout
    fired: datetime  # when the first watchdog fired
    started_entry: TimelineEvent
    fired_entry: TimelineEvent
    timeout_ms: int
    op: str | None
    seq: int | None
    waiting: frozenset[int]  # ranks whose own watchdog fired: inside the collective, waiting
    never_joined: frozenset[int]  # ranks the triage found outside the collective


def _time(entry: TimelineEvent) -> datetime | None:
    if not entry.time:
        return None
    try:
        moment = datetime.fromisoformat(entry.time.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _ranks(text: str) -> set[int]:
    try:
        return set(expand(text))
    except ValueError:
        return set()


def stuck_collective(report: Report) -> StuckCollective | None:
    fired_groups = [group for group in report.rank_states if group.watchdog == "fired" and group.timeout_ms]
    if not fired_groups:
        return None
    timeout = fired_groups[0].timeout_ms or 0
    timed = [(moment, entry) for entry in report.timeline if (moment := _time(entry))]
    for started, start_entry in sorted(timed, key=lambda pair: pair[0]):
        for fired, fired_entry in timed:
            same_line = fired_entry.source == start_entry.source and fired_entry is not start_entry
            if same_line and earlier_by(fired, timeout) == started:
                waiting = {rank for group in fired_groups for rank in _ranks(group.ranks)}
                others = {
                    rank
                    for group in report.rank_states
                    if group.watchdog != "fired"
                    for rank in _ranks(group.ranks)
                }
                return StuckCollective(
                    started=started,
                    fired=fired,
                    started_entry=start_entry,
                    fired_entry=fired_entry,
                    timeout_ms=timeout,
                    op=fired_groups[0].op,
                    seq=fired_groups[0].seq,
                    waiting=frozenset(waiting),
                    never_joined=frozenset(others),
                )
    return None


def failure_moment(report: Report) -> datetime | None:
    """When the job failed, as the logs date it: the stuck collective's start, else the earliest
    timed entry of the triage timeline (its first abnormal event)."""
    stuck = stuck_collective(report)
    if stuck is not None:
        return stuck.started
    times = [moment for entry in report.timeline if (moment := _time(entry))]
    return min(times) if times and report.root_cause is not None else None


def absent_ranks(report: Report) -> set[int]:
    """Ranks the triage saw no watchdog line from: outside every rank-state group (beyond the
    world size it read), or in a group that left none. A superset of the ranks absent from its
    input, which is what comparing with the log coverage needs."""
    world = report.job.world_size if report.job else None
    grouped = {rank for group in report.rank_states for rank in _ranks(group.ranks)}
    silent = {rank for g in report.rank_states if g.watchdog == "none" for rank in _ranks(g.ranks)}
    return silent | (set(range(world)) - grouped if world else set())


def waiting_sentence(report: Report) -> str:
    stuck = stuck_collective(report)
    if stuck is None:
        return ""
    op = f"{stuck.op} SeqNum {stuck.seq}" if stuck.op and stuck.seq is not None else "the stuck collective"
    return f"The other {len(stuck.waiting)} ranks timed out waiting in {op}."
