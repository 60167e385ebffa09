"""Times normalised across formats; the year PyTorch ≥ 2.4 omits comes from the same log set."""

from __future__ import annotations

from datetime import datetime

from hyperpod_nccl.models import TimelineEvent
from hyperpod_nccl.triage.events import FileScan
from hyperpod_nccl.triage.timeline import Clock, collective_start, ordered


def test_yearless_stamps_take_the_year_of_the_dated_lines_and_say_so() -> None:
    clock = Clock([FileScan("a", dated_years={2026: 40}), FileScan("b", dated_years={2025: 1})])
    assert clock.at("0000-06-26T06:24:44") == datetime(2026, 6, 26, 6, 24, 44)
    assert any("2026 inferred" in note for note in clock.notes())


def test_without_any_dated_line_yearless_stamps_stay_undated() -> None:
    clock = Clock([FileScan("a")])
    assert clock.at("0000-06-26T06:24:44") is None
    assert any("could not be dated" in note for note in clock.notes())


def test_collective_started_one_timeout_before_the_watchdog_fired() -> None:
    assert collective_start(datetime(2026, 3, 2, 10, 30, 43), 1_800_000) == datetime(2026, 3, 2, 10, 0, 43)
    assert collective_start(None, 1_800_000) is None


def test_an_undated_line_keeps_its_place_before_the_dated_lines_after_it_in_its_file() -> None:
    cancelled = TimelineEvent(time="2022-05-17T17:58:10", source="slurm-1.out:4", event="cancelled")
    oom = TimelineEvent(time=None, source="slurm-1.out:1", event="oom kill")
    task = TimelineEvent(time=None, source="slurm-1.out:2", event="task out of memory")
    elsewhere = TimelineEvent(time=None, source="other.log:9", event="undated elsewhere")
    earlier = TimelineEvent(time="2022-05-17T17:50:00", source="other.log:3", event="earlier")
    timeline = ordered([cancelled, elsewhere, oom, task, earlier], limit=12)
    assert [e.event for e in timeline] == [
        "earlier",
        "oom kill",
        "task out of memory",
        "cancelled",
        "undated elsewhere",
    ]
