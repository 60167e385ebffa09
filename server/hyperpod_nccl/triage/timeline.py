"""Timestamps normalised across formats, and the job's timeline.

Formats differ in what they carry: NCCL ≥ 2.26 WARN lines, torchrun ≤ 2.2, Slurm and `dmesg -T`
carry a full date; PyTorch ≥ 2.4 (`E0626 06:24:44`), torchrun ≥ 2.3 and journald carry no year.
The missing year is taken from the dated lines of the same log set (the most common year), and
the report says so. Only `kubectl logs --timestamps` says its zone (UTC); every other format
writes the node's local time with no zone, so times are printed as written, without a `Z`, and
the report says "local, zone unknown" unless every dated line said UTC.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from hyperpod_nccl.models import TimelineEvent
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.prefixes import UNKNOWN_YEAR
from hyperpod_nccl.utc import earlier_by

if TYPE_CHECKING:
    from hyperpod_nccl.triage.model import Incident


# A stamp outside these years is a garbled or crafted line, not a time: left undated, it cannot
# push the arithmetic on times (windows, derived starts) past the calendar's ends.
_PLAUSIBLE_YEARS = range(1970, 2200)


class Clock:
    """Turns raw stamps into datetimes, filling in the inferred year."""

    def __init__(self, scans: Iterable[FileScan]) -> None:
        years: Counter[int] = Counter()
        utc = zoneless = 0
        self.since_boot: list[str] = []  # files whose kernel lines count seconds since boot
        for scan in scans:
            years.update({year: n for year, n in scan.dated_years.items() if year in _PLAUSIBLE_YEARS})
            utc += scan.utc_stamps
            zoneless += scan.zoneless_stamps
            if scan.since_boot_lines and not scan.dated_years:
                self.since_boot.append(scan.source)
        self.year = years.most_common(1)[0][0] if years else None
        self.yearless_seen = False
        self.utc = utc > 0 and zoneless == 0  # every dated line said UTC
        self.stamped = utc + zoneless > 0

    def at(self, stamp: str | None) -> datetime | None:
        if not stamp:
            return None
        if stamp.startswith(UNKNOWN_YEAR):
            self.yearless_seen = True
            if self.year is None:
                return None
            stamp = f"{self.year}{stamp[4:]}"
        try:
            moment = datetime.fromisoformat(stamp[:19])
        except ValueError:
            return None
        return moment if moment.year in _PLAUSIBLE_YEARS else None

    @property
    def zone(self) -> str:
        if not self.stamped:
            return "no times in the input"
        return "UTC" if self.utc else "local, zone unknown"

    def iso(self, moment: datetime | None) -> str | None:
        """ISO 8601 as written; `Z` only when the logs said UTC."""
        return f"{moment:%Y-%m-%dT%H:%M:%S}{'Z' if self.utc else ''}" if moment else None

    def notes(self) -> list[str]:
        """How times were read (the zone itself is the job's `time_zone`)."""
        notes = []
        if self.since_boot:
            files = ", ".join(self.since_boot[:3])
            more = f" (+{len(self.since_boot) - 3} more)" if len(self.since_boot) > 3 else ""
            notes.append(
                f"Kernel lines in {files}{more} count seconds since boot (`dmesg` without -T): they cannot "
                "be placed on the job's clock, so the timeline lists them undated; `dmesg -T` or the "
                "journal gives their time."
            )
        if self.yearless_seen and self.year is not None:
            notes.append(
                f"Year {self.year} inferred for the stamps that carry no year (as PyTorch ≥ 2.4's `E0626 "
                "06:24:44`, torchrun's, journald's and vLLM's do) from the dated lines of the same log set."
            )
        elif self.yearless_seen:
            notes.append("Year-less stamps could not be dated: no line in the set carries a year.")
        return notes


def earliest(events: Iterable[Event], clock: Clock) -> Event | None:
    """The event that happened first: by time where known, else by file and line."""
    ordered = sorted(events, key=lambda e: order_key(e, clock))
    return ordered[0] if ordered else None


def order_key(event: Event, clock: Clock) -> tuple[int, datetime, str, int]:
    moment = clock.at(event.stamp)
    return (0 if moment else 1, moment or datetime.max, event.source, event.line)


def collective_start(fired_at: datetime | None, timeout_ms: int | None) -> datetime | None:
    """When the stuck collective was issued: the watchdog fires `timeout` after it started."""
    if fired_at is None or not timeout_ms:
        return None
    return earlier_by(fired_at, timeout_ms)


def entry(event: Event, clock: Clock, text: str) -> TimelineEvent:
    return TimelineEvent(
        time=clock.iso(clock.at(event.stamp)),
        source=f"{event.source}:{event.line}",
        event=text,
        rank=event.rank,
        node=event.node,
    )


def ordered(entries: list[TimelineEvent], limit: int) -> list[TimelineEvent]:
    """Chronological. An entry without a time goes before the first timed entry that follows it in
    its own file (Slurm's undated OOM lines before its dated CANCELLED line), else at the end."""
    result = sorted((e for e in entries if e.time), key=lambda e: e.time or "")
    for untimed in (e for e in entries if not e.time):
        source, line = _place(untimed)
        later = (i for i, e in enumerate(result) if e.time and _place(e)[0] == source and _place(e)[1] > line)
        result.insert(next(later, len(result)), untimed)
    return result[:limit]


def _place(entry: TimelineEvent) -> tuple[str, int]:
    source, _, line = entry.source.rpartition(":")
    return (source, int(line)) if line.isdigit() else (entry.source, 0)


TIMELINE_LIMIT = 12
_CULPRITS_FOLLOWED = 4


def build_timeline(incident: Incident, culprits: list[int]) -> list[TimelineEvent]:
    """First occurrence of each event (with how many ranks saw it), the stuck collective's start,
    the first watchdog, and every event's first occurrence on the culprit ranks."""
    clock = incident.clock
    entries: list[TimelineEvent] = []
    for group in incident.groups.values():
        first = earliest(group.events, clock)
        ranks = {e.rank for e in group.events if e.rank is not None}
        if first is not None:
            spread = f" ({len(ranks)} ranks)" if len(ranks) > 1 else ""
            entries.append(entry(first, clock, f"first {group.meaning.title}{spread}"))
    entries += _watchdog_entries(incident)
    seen = {e.source for e in entries}
    for extra in _culprit_entries(incident, culprits[:_CULPRITS_FOLLOWED]):
        if extra.source not in seen:  # a line already in the timeline is not repeated per rank
            entries.append(extra)
            seen.add(extra.source)
    return ordered(entries, TIMELINE_LIMIT)


def _watchdog_entries(incident: Incident) -> list[TimelineEvent]:
    fired, verdict, clock = incident.fired, incident.verdict, incident.clock
    if fired is None:
        return []
    found = []
    started = collective_start(clock.at(fired.stamp), verdict.timeout_ms)
    if started is not None:
        found.append(
            TimelineEvent(
                time=clock.iso(started),
                source=f"{fired.source}:{fired.line}",
                event=f"stuck collective issued (derived: watchdog time − {verdict.timeout_ms} ms timeout)",
                derived=True,
            )
        )
    count = sum(1 for s in incident.states.values() if s.watchdog == "fired")
    found.append(
        entry(fired, clock, f"first watchdog fired ({count} ranks fired, {len(verdict.notified)} notified)")
    )
    return found


def _culprit_entries(incident: Incident, culprits: list[int]) -> list[TimelineEvent]:
    clock, states = incident.clock, incident.states
    found = []
    for rank in culprits:
        for group in incident.groups.values():
            first = earliest([e for e in group.events if e.rank == rank], clock)
            if first is not None:
                found.append(entry(first, clock, f"rank {rank}: {group.meaning.title}"))
        if rank in states and (state_line := states[rank].decisive_event):
            found.append(entry(state_line, clock, f"rank {rank}: {state_line.kind.replace('_', ' ')}"))
    return found
