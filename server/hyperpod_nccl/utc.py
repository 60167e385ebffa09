"""Times from every source as aware UTC datetimes, and back to the report's ISO form.

Kubernetes, HyperPod and CloudWatch print their times in different shapes (`…Z`, `+00:00`,
microseconds, a space for the `T`); the cluster timeline compares them, so they are read here
once. A time without a zone is not guessed into UTC unless its source is UTC by definition.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def parse_utc(text: object, *, naive_is_utc: bool = False) -> datetime | None:
    """An API or log time as an aware UTC datetime; None when it cannot be placed in UTC.

    `naive_is_utc` is for sources that are UTC by definition but print no zone (Logs Insights,
    the triage's normalised stamps)."""
    if not isinstance(text, str) or not text.strip():
        return None
    value = text.strip().replace(" ", "T", 1).replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC) if naive_is_utc else None
    return moment.astimezone(UTC)


def iso_utc(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def human_span(seconds: float) -> str:
    """A duration as people say it: `45 s`, `12 min`, `3 h 10 min`, `2 d 4 h`."""
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


_LONGEST_WAIT = timedelta(days=366)  # no watchdog or store timeout is set longer than this


def earlier_by(moment: datetime, milliseconds: int) -> datetime | None:
    """`moment` minus a timeout a log line states, or None when the amount is no wait a process
    could have made (over a year: a garbled or crafted line), rather than an overflow."""
    if not 0 <= milliseconds <= _LONGEST_WAIT // timedelta(milliseconds=1):
        return None
    try:
        return moment - timedelta(milliseconds=milliseconds)
    except OverflowError:  # before year 1
        return None
