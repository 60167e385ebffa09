"""The `triage_logs` MCP tool: the same report the CLI prints, computed off the event loop."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from hyperpod_nccl.models import Report
from hyperpod_nccl.server_settings import ReadablePath, current


async def triage_logs(
    log_dir: Annotated[
        ReadablePath,
        Field(
            description="Directory (read recursively) or file of worker logs from every rank, plain or .gz."
        ),
    ],
    storage_log_dir: Annotated[
        ReadablePath | None,
        Field(description="Optional storage daemon logs (e.g. AIStore): a directory or .tar.gz archives."),
    ] = None,
) -> Report:
    """Triage a failed or hung distributed-training job from its worker logs, across every rank.

    Use this when a training job crashed, hung or timed out and its logs (Slurm per-node error
    files, one file per rank, torchrun output, `kubectl logs` dumps, dmesg / kern.log beside them)
    are on this machine, in a folder the server may read; PyTorch Flight Recorder dumps
    (`nccl_trace_rank_<N>`) beside them, or on their own, are matched across ranks too. Reads every
    file once, read-only; a symlink that leads out of those folders is listed as skipped, not
    followed. Returns a report with the root cause (CONTRACT category, culprit ranks and nodes,
    the chain from trigger to final crash, what was ruled out), findings with `file:line`
    evidence and a `references/… § N` pointer each, the NCCL state of every rank grouped as rank
    ranges, a timeline, a job summary, and the inputs it had to skip. Call `read_reference` on
    each FAIL/WARN pointer before suggesting a fix.
    """
    from hyperpod_nccl.input_kind import not_logs
    from hyperpod_nccl.triage.discover import unusable_reason
    from hyperpod_nccl.triage.engine import nothing_read, run_triage

    if recognised := not_logs(Path(log_dir)):
        raise ToolError(recognised.for_tool())
    logs = [Path(log_dir)]
    storage = [Path(storage_log_dir)] if storage_log_dir else []
    roots = current().files.read_roots
    reason = unusable_reason(logs, storage, boundaries=roots)
    if reason:
        raise ToolError(reason)
    report = await anyio.to_thread.run_sync(lambda: run_triage(logs, storage, boundaries=roots))
    if reason := nothing_read(report):
        raise ToolError(reason)
    return report
