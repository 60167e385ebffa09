"""Run a shipped probe script on this host: `sh -s` reading the script text, parameters as env."""

from __future__ import annotations

import os
import shutil

from hyperpod_nccl.probes.catalog import ProbeScript
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult
from hyperpod_nccl.probes.runners.process import run_argv


class LocalRunner:
    """The host `hyperpod-nccl probe --local` runs on. The target only labels the result."""

    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult:
        shell = shutil.which("sh")
        if shell is None:
            return ProbeResult(target=target, script=script.name, status="error", error="no `sh` on PATH")
        # The script is data on stdin, never an argument: argv is fixed, and parameters reach it
        # only as environment variables the catalogue validated.
        outcome = await run_argv(
            [shell, "-s"],
            stdin=script.text.encode("utf-8"),
            env={**os.environ, **script.params},
            timeout_s=timeout_s,
        )
        if outcome.timed_out:
            status, error = "timeout", f"timed out after {timeout_s:.0f} s; partial output kept"
        elif outcome.returncode != 0:
            status, error = "partial", f"the script exited with status {outcome.returncode}"
        else:
            status, error = "ok", None
        return ProbeResult(
            target=target,
            script=script.name,
            status=status,
            output=outcome.output,
            error=error,
            duration_s=outcome.duration_s,
        )
