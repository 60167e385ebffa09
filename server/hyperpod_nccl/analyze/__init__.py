"""Analyzers: pure functions `Snapshot -> list[Finding]`, one module per concern.

`ANALYZERS` is the registry `diagnose` runs; adding a check means adding one module, one row
here, one reference section and one fixture.
"""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_nccl.models import Finding
from hyperpod_nccl.snapshot import Snapshot

Analyzer = Callable[[Snapshot], list[Finding]]

ANALYZERS: list[Analyzer] = []


def run_analyzers(snapshot: Snapshot) -> list[Finding]:
    return [finding for analyzer in ANALYZERS for finding in analyzer(snapshot)]
