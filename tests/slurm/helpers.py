"""Run the product's Slurm path on recorded probe output: the replay runner, the collector, the
parsers and the analyzers, exactly as a live run would."""

from __future__ import annotations

from pathlib import Path

import anyio

from hyperpod_nccl.collect.slurm import collect_slurm
from hyperpod_nccl.models import Finding, Report
from hyperpod_nccl.probes.runners.base import NodeTarget
from hyperpod_nccl.probes.runners.replay import ReplayRunner
from hyperpod_nccl.slurm.service import slurm_report
from hyperpod_nccl.snapshot import Snapshot
from tests.next_steps.check import next_step_problems

RECORDED = Path(__file__).parent / "recorded"


def recorded_snapshot(name: str, job_id: str | None = None) -> Snapshot:
    runner = ReplayRunner({"local": (RECORDED / name).read_text(encoding="utf-8")})

    async def collect() -> Snapshot:
        slurm, issues = await collect_slurm(runner, NodeTarget(hostname="ctl"), job_id=job_id)
        assert slurm is not None, issues
        return Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm)

    return anyio.run(collect)


def recorded_report(name: str, job_id: str | None = None) -> Report:
    report = slurm_report(recorded_snapshot(name, job_id))
    problems = next_step_problems(report)
    assert problems == [], f"every FAIL/WARN says what to run next (issue 14): {problems}"
    return report


def findings(report: Report, finding_id: str) -> list[Finding]:
    return [f for f in report.findings if f.id == finding_id]


def only(report: Report, finding_id: str) -> Finding:
    found = findings(report, finding_id)
    assert len(found) == 1, f"{finding_id}: {[f.title for f in found]} in {[f.id for f in report.findings]}"
    return found[0]


def commands(finding: Finding) -> list[str]:
    return [c.command for c in finding.suggested_commands]
