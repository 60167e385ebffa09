"""The time window the GPU checks read: the last `--since`, an explicit `--start/--end`, or the
span of a triage report's timeline with margins around it (the failure and what led to it).

Times are ISO 8601 (a `Z` or an offset; a naive time is taken as UTC) or Unix seconds. Windows
are bounded: a window of a week at the coarsest step is still a few thousand points per series.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hyperpod_nccl.collect.run import parse_window

DEFAULT_SINCE = "2h"
MAX_WINDOW = timedelta(days=7)
# Before the first timeline event: long enough to see the GPUs working normally, which is what
# the hang and straggler checks compare against. After the last: the exporter's last samples.
BEFORE_TIMELINE = timedelta(minutes=30)
AFTER_TIMELINE = timedelta(minutes=10)


@dataclass(frozen=True)
class Window:
    start: int
    end: int
    note: str


def parse_time(text: str) -> datetime:
    """ISO 8601 or Unix seconds → aware UTC datetime; ValueError saying the accepted forms."""
    value = text.strip()
    try:
        if value.replace(".", "", 1).isdigit():
            return datetime.fromtimestamp(float(value), UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise ValueError(
            f"{text!r} is not a time: give ISO 8601 (2026-03-02T11:04:05Z) or Unix seconds"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _bounded(start: datetime, end: datetime, note: str) -> Window:
    if end <= start:
        raise ValueError("the window's end must be after its start")
    if end - start > MAX_WINDOW:
        raise ValueError(
            f"the window is longer than {MAX_WINDOW.days} days: narrow it with --since or --start/--end"
        )
    return Window(int(start.timestamp()), int(end.timestamp()), note)


def resolve_window(
    *, since: str | None = None, start: str | None = None, end: str | None = None, now: datetime | None = None
) -> Window:
    """--since, or --start [--end] (the end defaults to now)."""
    now = now or datetime.now(UTC)
    if start is not None:
        if since is not None:
            raise ValueError("give --since or --start/--end, not both")
        begin, finish = parse_time(start), parse_time(end) if end else now
        return _bounded(begin, finish, f"{_iso(begin)} to {_iso(finish)}, as given")
    if end is not None:
        raise ValueError("--end needs --start")
    span = parse_window(since or DEFAULT_SINCE)
    finish = now.replace(microsecond=0)
    return _bounded(finish - span, finish, f"the last {since or DEFAULT_SINCE} before {_iso(finish)}")


def window_from_report(path: Path) -> Window:
    """The window around a triage report's timeline (`triage --json` output)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} is not a readable JSON report: {error}") from None
    events = report.get("timeline") if isinstance(report, dict) else None
    times = []
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and isinstance(event.get("time"), str):
            try:
                times.append(parse_time(event["time"]))
            except ValueError:
                continue
    if not times:
        raise ValueError(f"{path} has no timeline with times: give --since or --start/--end instead")
    first, last = min(times), max(times)
    note = f"the triage timeline {_iso(first)} to {_iso(last)}, 30 min before and 10 min after"
    return _bounded(first - BEFORE_TIMELINE, last + AFTER_TIMELINE, note)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def iso_seconds(seconds: float) -> str:
    return _iso(datetime.fromtimestamp(seconds, UTC))
