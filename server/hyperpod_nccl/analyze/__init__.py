"""Analyzers: pure functions `Snapshot -> list[Finding]`, one module per concern.

`ANALYZERS` is the registry `diagnose` runs; adding a check means adding one module, one row
here, one reference section and one fixture.
"""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_nccl.analyze.slurm_controller import analyze_slurm_controller
from hyperpod_nccl.analyze.slurm_host import analyze_slurm_host
from hyperpod_nccl.analyze.slurm_jobs import analyze_slurm_jobs
from hyperpod_nccl.analyze.slurm_nodes import analyze_slurm_nodes
from hyperpod_nccl.models import Finding
from hyperpod_nccl.snapshot import Snapshot

Analyzer = Callable[[Snapshot], list[Finding]]

ANALYZERS: list[Analyzer] = [
    analyze_slurm_controller,
    analyze_slurm_nodes,
    analyze_slurm_jobs,
    analyze_slurm_host,
]


def run_analyzers(snapshot: Snapshot) -> list[Finding]:
    return [finding for analyzer in ANALYZERS for finding in analyzer(snapshot)]
