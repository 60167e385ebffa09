"""Timestamps normalised across formats, and the job's timeline.

Formats differ in what they carry: NCCL ≥ 2.26 WARN lines, torchrun ≤ 2.2, Slurm and `dmesg -T`
carry a full date; PyTorch ≥ 2.4 (`E0626 06:24:44`), torchrun ≥ 2.3 and journald carry no year.
The missing year is taken from the dated lines of the same log set (the most common year), and
the report says so. No format carries a time zone: times are reported as UTC, as written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta

from hyperpod_nccl.models import TimelineEvent
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.prefixes import UNKNOWN_YEAR


class Clock:
    """Turns raw stamps into datetimes, filling in the inferred year."""

    def __init__(self, scans: Iterable[FileScan]) -> None:
        years: Counter[int] = Counter()
        for scan in scans:
            years.update(scan.dated_years)
        self.year = years.most_common(1)[0][0] if years else None
        self.yearless_seen = False

    def at(self, stamp: str | None) -> datetime | None:
        if not stamp:
            return None
        if stamp.startswith(UNKNOWN_YEAR):
            self.yearless_seen = True
            if self.year is None:
                return None
            stamp = f"{self.year}{stamp[4:]}"
        try:
            return datetime.fromisoformat(stamp[:19])
        except ValueError:
            return None

    def notes(self) -> list[str]:
        notes = ["Log times carry no time zone; they are reported as UTC, as written."]
        if self.yearless_seen and self.year is not None:
            notes.append(
                f"Year {self.year} inferred for year-less stamps (PyTorch ≥ 2.4 `E0626 06:24:44`, torchrun, "
                "journald) from the dated lines of the same log set."
            )
        elif self.yearless_seen:
            notes.append("Year-less stamps could not be dated: no line in the set carries a year.")
        return notes


def iso(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def earliest(events: Iterable[Event], clock: Clock) -> Event | None:
    """The event that happened first: by time where known, else by file and line."""
    ordered = sorted(events, key=lambda e: _order_key(e, clock))
    return ordered[0] if ordered else None


def _order_key(event: Event, clock: Clock) -> tuple[int, datetime, str, int]:
    moment = clock.at(event.stamp)
    return (0 if moment else 1, moment or datetime.max, event.source, event.line)


def collective_start(fired_at: datetime | None, timeout_ms: int | None) -> datetime | None:
    """When the stuck collective was issued: the watchdog fires `timeout` after it started."""
    if fired_at is None or not timeout_ms:
        return None
    return fired_at - timedelta(milliseconds=timeout_ms)


def entry(event: Event, clock: Clock, text: str) -> TimelineEvent:
    return TimelineEvent(
        time=iso(clock.at(event.stamp)),
        source=f"{event.source}:{event.line}",
        event=text,
        rank=event.rank,
        node=event.node,
    )


def ordered(entries: list[TimelineEvent], limit: int) -> list[TimelineEvent]:
    """Chronological; entries without a time keep their place at the end."""
    timed = sorted((e for e in entries if e.time), key=lambda e: e.time or "")
    untimed = [e for e in entries if not e.time]
    return (timed + untimed)[:limit]
