"""Scan every file once, across processes when the input is big enough to pay for them.

The CLI is single-threaded, so it forks: start-up is cheap and the entry point never runs again.
The MCP server triages in a worker thread, where fork is unsafe (another thread may hold a lock
the child inherits). It uses a fork server instead: a clean process, started once, that imports
the scanner and forks each worker from itself, so a worker starts at once and never re-imports the
server (spawn would re-run the entry point's imports in every worker of every triage). Each
triage gets its own pool, so two triages running at once share the cores through the OS
scheduler instead of queueing behind each other's files.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import forkserver, get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from typing import Literal

from hyperpod_nccl.triage.discover import InputFile
from hyperpod_nccl.triage.events import FileScan
from hyperpod_nccl.triage.lines import prepare_line_counter
from hyperpod_nccl.triage.scanner import prepare, scan_input

PARALLEL_MIN_BYTES = 64 << 20  # below this, starting worker processes costs more than it saves
MAX_WORKERS = 4
# What the fork server imports before forking workers (named, not imported: importing it builds
# the prefilters, which only the fork server needs at start).
FORK_SERVER_PRELOAD = ("__main__", "hyperpod_nccl.triage.prepared_scanner")


Start = Literal["fork", "forkserver", "spawn"]


@dataclass(frozen=True)
class Plan:
    workers: int
    start: Start


def plan(files: list[InputFile]) -> Plan:
    """How many processes scan `files`, and how they start."""
    start: Start = "fork" if threading.active_count() == 1 else _without_fork()
    if sum(f.size for f in files) < PARALLEL_MIN_BYTES:
        return Plan(1, start)
    return Plan(min(os.cpu_count() or 1, MAX_WORKERS, len(files)), start)


def scan_all(files: list[InputFile]) -> list[FileScan]:
    """One FileScan per file, sorted by source."""
    chosen = plan(files)
    # Loaded before forking, so every worker inherits it (the fork server loaded it at its start).
    prepare_line_counter(sum(f.size for f in files) // chosen.workers)
    if chosen.workers < 2:
        return [scan_input(item) for item in files]
    biggest_first = sorted(files, key=lambda f: -f.size)
    if chosen.start == "fork":
        prepare()
    try:
        with ProcessPoolExecutor(chosen.workers, mp_context=_context(chosen.start)) as pool:
            scans = list(pool.map(scan_input, biggest_first))
    except BrokenProcessPool:  # a worker died (e.g. the OOM killer): the serial path still answers
        scans = [scan_input(item) for item in biggest_first]
    return sorted(scans, key=lambda scan: scan.source)


def _without_fork() -> Start:
    return "forkserver" if "forkserver" in get_all_start_methods() else "spawn"


def _context(start: Start) -> BaseContext:
    context = get_context(start)
    if start == "forkserver":
        # The entry script too: a worker forked from a server that holds it skips re-running it.
        context.set_forkserver_preload(list(FORK_SERVER_PRELOAD))
    return context


def start_fork_server() -> None:
    """Start the fork server ahead of the first triage (the MCP server does at start-up), so that
    triage does not wait for it to start and import the scanner."""
    start = _without_fork()
    if start == "forkserver":
        _context(start)
        forkserver.ensure_running()
