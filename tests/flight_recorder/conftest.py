"""Helpers shared by the Flight Recorder tests: analyse a directory of dumps as triage would."""

from __future__ import annotations

from pathlib import Path

from hyperpod_nccl.flight_recorder.discover import choose_dumps, is_dump, read_head
from hyperpod_nccl.flight_recorder.service import DumpResult, analyse_dumps

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GLOO = FIXTURES / "gloo"


def analyse_dir(directory: Path) -> DumpResult:
    paths = sorted(p for p in directory.rglob("*") if p.is_file())
    dumps, skipped = choose_dumps(
        (p, p.relative_to(directory).as_posix()) for p in paths if is_dump(read_head(p))
    )
    return analyse_dumps(dumps, skipped)
