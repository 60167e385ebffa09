"""The window the GPU checks read: --since, --start/--end, or a triage report's timeline."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hyperpod_nccl.metrics.service import choose_window

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_since_counts_back_from_now_and_defaults_to_two_hours() -> None:
    window = choose_window(now=NOW)
    assert (window.end - window.start, window.end) == (7200, int(NOW.timestamp()))
    assert choose_window(since="30m", now=NOW).start == int(NOW.timestamp()) - 1800


@pytest.mark.parametrize(
    "start", ["2026-03-02T10:00:00Z", "2026-03-02T11:00:00+01:00", "2026-03-02T10:00:00", "1772445600"]
)
def test_start_accepts_iso_8601_with_or_without_zone_and_unix_seconds(start: str) -> None:
    window = choose_window(start=start, end="2026-03-02T12:00:00Z", now=NOW)
    assert (window.start, window.end) == (1772445600, 1772452800)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"start": "yesterday"}, "is not a time"),
        ({"start": "2026-03-02T12:00:00Z", "end": "2026-03-02T11:00:00Z"}, "after its start"),
        ({"start": "2026-01-01T00:00:00Z", "end": "2026-03-01T00:00:00Z"}, "longer than 7 days"),
        ({"end": "2026-03-02T11:00:00Z"}, "--end needs --start"),
        ({"since": "2 hours"}, "not a duration"),
        ({"since": "1h", "start": "1772445600"}, "not both"),
    ],
)
def test_unusable_windows_say_why(arguments: dict[str, str], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        choose_window(now=NOW, **arguments)


def test_a_triage_timeline_gives_the_window_with_margins(tmp_path: Path) -> None:
    report = tmp_path / "triage.json"
    timeline = [
        {"time": "2026-03-02T11:04:05Z", "source": "a:1", "event": "x"},
        {"time": None, "source": "b:1", "event": "no time"},
        {"time": "2026-03-02T11:30:00Z", "source": "c:1", "event": "y"},
    ]
    report.write_text(json.dumps({"timeline": timeline}), encoding="utf-8")
    window = choose_window(around=report)
    assert window.start == int(datetime(2026, 3, 2, 10, 34, 5, tzinfo=UTC).timestamp())
    assert window.end == int(datetime(2026, 3, 2, 11, 40, tzinfo=UTC).timestamp())
    report.write_text(json.dumps({"timeline": []}), encoding="utf-8")
    with pytest.raises(ValueError, match="no timeline with times"):
        choose_window(around=report)
    report.write_bytes(b"\xff\x00garbage")
    with pytest.raises(ValueError, match="not a readable JSON report"):
        choose_window(around=report)
