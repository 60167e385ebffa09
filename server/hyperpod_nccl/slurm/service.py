"""The Slurm diagnostic as one service call, shared by the CLI and the MCP tool.

Without a cluster name it reads Slurm on this host (a login or controller node, no AWS needed);
with `cluster` and `region` it reaches the controller node over SSM.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime

from hyperpod_nccl.analyze import run_each
from hyperpod_nccl.analyze.slurm_controller import analyze_slurm_controller
from hyperpod_nccl.analyze.slurm_host import analyze_slurm_host
from hyperpod_nccl.analyze.slurm_jobs import analyze_slurm_jobs
from hyperpod_nccl.analyze.slurm_nodes import analyze_slurm_nodes
from hyperpod_nccl.collect.slurm import collect_slurm, collect_slurm_cluster
from hyperpod_nccl.models import Report, SkippedInput
from hyperpod_nccl.probes.runners.base import NodeTarget, Runner
from hyperpod_nccl.snapshot import Snapshot

SLURM_ANALYZERS = (analyze_slurm_controller, analyze_slurm_nodes, analyze_slurm_jobs, analyze_slurm_host)
NO_SETUP = (
    "run on a Slurm login or controller node, or pass --cluster and --region to reach the controller over SSM"
)
NO_SLURM_HERE = f"scontrol is not installed on this host: {NO_SETUP}"


class SlurmUnavailable(RuntimeError):
    """Nothing about Slurm could be read; the message says what to do instead."""


# How a shell, coreutils' `timeout` and busybox say a program is not there.
_NOT_INSTALLED = ("command not found", "failed to run command", "can't execute")


def raise_if_not_slurm_host(ping_error: str) -> None:
    if any(words in ping_error for words in _NOT_INSTALLED):
        raise SlurmUnavailable(NO_SLURM_HERE)
    if "configuration source" in ping_error:
        # No slurm.conf and no DNS SRV record: this host is not a Slurm client at all.
        raise SlurmUnavailable(
            f"Slurm is not configured on this host ({ping_error.splitlines()[-1]}); {NO_SETUP}"
        )


async def collect_slurm_snapshot(
    *,
    job_id: str | None = None,
    cluster: str | None = None,
    region: str | None = None,
    runner: Runner | None = None,
) -> Snapshot:
    if cluster:
        if not region:
            raise SlurmUnavailable("--cluster needs --region")
        if runner is None:
            from hyperpod_nccl.probes.runners.ssm import SsmRunner

            runner = SsmRunner(region)
        slurm, issues = await collect_slurm_cluster(cluster, region, runner, job_id=job_id)
    else:
        if runner is None:
            from hyperpod_nccl.probes.runners.local import LocalRunner

            runner = LocalRunner()
        target = NodeTarget(hostname=socket.gethostname())
        slurm, issues = await collect_slurm(runner, target, job_id=job_id)
    if slurm is None:
        raise SlurmUnavailable(
            "; ".join(f"{i.source}: {i.message}" for i in issues) or "the Slurm probe printed nothing"
        )
    raise_if_not_slurm_host(slurm.command_errors.get("ping", ""))
    return Snapshot(
        collected_at=datetime.now(UTC).isoformat(timespec="seconds"),
        region=region,
        orchestrator="slurm",
        job=job_id,
        slurm=slurm,
        collection_issues=issues,
    )


def slurm_report(snapshot: Snapshot) -> Report:
    findings, unreadable = run_each(SLURM_ANALYZERS, snapshot)
    skipped = [SkippedInput(source=i.source, reason=i.message) for i in snapshot.collection_issues]
    return Report.build("diagnose", findings, skipped=skipped + unreadable)
