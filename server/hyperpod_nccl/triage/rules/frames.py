"""Where a native crash happened: the first frame of its backtrace outside the signal handler.

A process that dies on a signal often prints a backtrace (UCX, glibc, Open MPI all do): its first
frames are the handler's own (UCX's `libucs`, the C library's signal trampoline), the next one is
the library that executed the faulting instruction — what to rebuild, upgrade or turn off.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.model import Incident

# Findings whose lines are a process dying on a signal.
CRASH_IDS = frozenset(
    {
        "triage.software.illegal_instruction",
        "triage.unknown.segfault",
        "triage.config.sigbus",
        "triage.software.library_check",
    }
)
# Libraries whose frames are the signal's handling, not its cause.
_HANDLERS = ("libucs", "libc.so", "libc-", "libpthread", "libgcc_s", "libopen-pal", "libc10.so", "libunwind")
_WINDOW = 40  # lines after the crash line a backtrace of it can reach


def faulting_frame(crashes: Iterable[Event], incident: Incident) -> Event | None:
    """The first backtrace frame outside the handler after any of the crash lines, in the same file."""
    frames = incident.index.kind("crash_frame")
    for crash in sorted(crashes, key=lambda e: (e.source, e.line)):
        after = [f for f in frames if f.source == crash.source and 0 < f.line - crash.line <= _WINDOW]
        for frame in sorted(after, key=lambda f: f.line):
            if not any(handler in frame.fields["library"] for handler in _HANDLERS):
                return frame
    return None


def library_name(frame: Event) -> str:
    return PurePosixPath(frame.fields["library"]).name
