"""Times normalised across formats; the year PyTorch ≥ 2.4 omits comes from the same log set."""

from __future__ import annotations

from datetime import datetime

from hyperpod_nccl.triage.events import FileScan
from hyperpod_nccl.triage.timeline import Clock, collective_start


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
