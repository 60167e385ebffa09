"""Run one argv (never a shell string) with a time limit, keeping whatever it printed.

Both the local runner (`sh` reading a shipped script) and the SSM runner
(`session-manager-plugin`) need the same thing: output as it arrives, so a node that hangs
halfway still yields its first sections, and the whole process group killed at the deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
from anyio.abc import Process

# A probe prints tens of kilobytes; anything far beyond that is a runaway, not evidence.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ProcessOutcome:
    output: str
    returncode: int | None
    timed_out: bool
    duration_s: float


async def _drain(process: Process, chunks: list[bytes]) -> None:
    assert process.stdout is not None
    size = 0
    async for chunk in process.stdout:
        if size < MAX_OUTPUT_BYTES:
            chunks.append(chunk[: MAX_OUTPUT_BYTES - size])
            size += len(chunk)


def _kill_group(process: Process) -> None:
    # The script's children (`timeout`, `nvidia-smi`) share its process group: kill them all so
    # none keeps the pipe open after the deadline.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


async def run_argv(
    argv: Sequence[str],
    *,
    timeout_s: float,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    hold_stdin: bool = False,
) -> ProcessOutcome:
    """Run `argv` directly (no shell), feeding `stdin`, for at most `timeout_s` seconds.

    `hold_stdin` gives the process a pipe that stays open and empty until it exits, for programs
    that would take end-of-input as "the user is done" (session-manager-plugin)."""
    started = time.monotonic()
    chunks: list[bytes] = []
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE if stdin is not None or hold_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    timed_out = True
    with anyio.move_on_after(timeout_s):
        if stdin is not None and process.stdin is not None:
            await process.stdin.send(stdin)
            await process.stdin.aclose()
        await _drain(process, chunks)
        await process.wait()
        timed_out = False
    if timed_out:
        _kill_group(process)
        with anyio.move_on_after(5, shield=True):
            await process.wait()
    await process.aclose()
    return ProcessOutcome(
        output=b"".join(chunks).decode("utf-8", "replace"),
        returncode=None if timed_out else process.returncode,
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
    )
