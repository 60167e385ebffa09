"""MCP tool `slurm_status`: the Slurm diagnostic for an assistant."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from hyperpod_nccl.guard.validate import ClusterName, Region, SlurmJobId
from hyperpod_nccl.models import Report


async def slurm_status(
    job: SlurmJobId | None = None, cluster: ClusterName | None = None, region: Region | None = None
) -> Report:
    """Read a Slurm cluster's health: controller, every node's state and reason, and jobs.

    Use this on HyperPod Slurm (or any Slurm cluster) when training hangs, a job will not start
    or was cancelled, or nodes look unhealthy. Without `cluster` it reads Slurm on the machine the
    server runs on (a login or controller node, no AWS needed); with `cluster` and `region` it
    reaches the controller node over SSM and maps node names to instance ids. Give `job` to also
    check that job's state, reason, time limit and batch script against the auto-resume rules.
    Returns findings (controller down, nodes down/drained/failing with what their reason means,
    GRES mismatch, held or pending jobs, auto-resume mistakes, memlock/RemoveIPC settings), each
    with a reference section and suggested `scontrol` commands that only the user may run.
    """
    from hyperpod_nccl.slurm.service import SlurmUnavailable, collect_slurm_snapshot, slurm_report

    try:
        snapshot = await collect_slurm_snapshot(job_id=job, cluster=cluster, region=region)
    except (SlurmUnavailable, ValidationError) as error:
        raise ToolError(str(error)) from None
    return slurm_report(snapshot)
