"""The user's line behind a collective: a recorded stack trimmed to the first frames outside torch.

Frames are innermost first (`all_reduce` in distributed_c10d.py, then c10d_logger's wrapper, then
whoever called it). The call site is the first frame that is neither torch nor the Python
runtime; when that frame is a library's (DeepSpeed, Lightning, Megatron under site-packages),
the first frame of the user's own code follows it.
"""

from __future__ import annotations

import re

from hyperpod_nccl.flight_recorder.model import Frame

_TORCH = re.compile(r"(^|[/\\])torch[/\\]")
_RUNTIME = re.compile(
    r"[/\\]lib[/\\]python3(\.\d+)?[/\\](?!site-packages|dist-packages)|^<(frozen |string|stdin)"
)
_NATIVE = re.compile(r"\.(cpp|cc|c|h|hpp|cu|cuh)$|^\?\?$")
_PACKAGES = re.compile(r"[/\\](site|dist)-packages[/\\]")


def is_framework(frame: Frame) -> bool:
    """torch itself, the Python runtime and native frames: never where the user's call was."""
    name = frame.filename
    return bool(_TORCH.search(name) or _RUNTIME.search(name) or _NATIVE.search(name))


def call_site(stack: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The first frame outside torch and, if that one is a library's, the user's own frame after it."""
    outside = [frame for frame in stack if not is_framework(frame)]
    if not outside:
        return ()
    first = outside[0]
    if not _PACKAGES.search(first.filename):
        return (first,)
    own = next((frame for frame in outside[1:] if not _PACKAGES.search(frame.filename)), None)
    return (first, own) if own else (first,)


def describe(stack: tuple[Frame, ...], full: bool = False) -> str:
    """`sync_gradients (trainer/loop.py:41)`, or a plain statement that there is no call site.

    Paths are cut to their last two parts unless `full`: enough to recognise the line, short
    enough for a report that has to fit an LLM's context."""
    site = call_site(stack)
    if site:
        return " ← ".join(str(frame) if full else _short(frame) for frame in site)
    return "torch-internal stack only" if stack else "no stack recorded"


def _short(frame: Frame) -> str:
    parts = re.split(r"[/\\]", frame.filename)
    return f"{frame.name} ({'/'.join(parts[-2:])}:{frame.line})"
