"""Streaming line selection: bounded memory whatever the file, and only the lines that matter.

A file is read in fixed-size chunks. Each chunk's complete lines are handed, as one bytes block,
to a hit finder (the prefilter in `patterns`), and only the lines holding a hit are decoded and
yielded, with their 1-based numbers. A line longer than `MAX_LINE_BYTES` keeps its first
`MAX_LINE_BYTES` and the rest is dropped unread, so a 100 MB line costs one chunk of memory.

A file that starts as binary (a core dump, an archive) is not a log. Runs of NUL bytes inside a
text log (a crashed node's hole in its file) are skipped and counted; the lines around them are
read, with their numbers unchanged.

While a line is yielded, `ReadReport.at` holds the byte offset where it starts in the (decompressed)
stream, so a rule can later look at the few lines before it without reading the file again
(exact in an undamaged file; a skipped NUL run shifts the offsets after it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any, BinaryIO

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 64 * 1024
HEAD_LINES = 40  # every file's first lines are always yielded: banners name the framework and versions
TAIL_LINES = 16  # every file's last lines are kept aside: when the log ends, and how
_MAX_TRUNCATIONS_LISTED = 5

# (offset inside a line, what was found there: a literal's index or a prefilter marker) per hit.
HitFinder = Callable[[memoryview], list[tuple[int, int]]]


_BINARY_SAMPLE = 8192
_TEXT_SHARE = 0.9  # of the non-NUL bytes a text log's start must be printable


class BinaryInput(ValueError):
    """The file starts as binary data: it is not a text log."""


@dataclass
class ReadReport:
    lines: int = 0
    truncated: list[tuple[int, int]] = field(default_factory=list)  # (line number, bytes dropped)
    nul_bytes: int = 0  # NUL bytes skipped inside the text
    first_nul_line: int | None = None
    tail: list[tuple[int, str]] = field(default_factory=list)  # the file's last lines, numbered
    unfinished_line: int | None = None  # the file ends inside this line: no newline after it
    at: int = 0  # byte offset of the line being yielded
    hit: bool = False  # whether the line being yielded holds a hit (a head line may not)
    found: frozenset[int] = frozenset()  # what the hit finder found in it
    _block_at: int = 0  # byte offset of the block being emitted


_CONTROL_SHARE = 0.01  # control bytes (other than tab, newlines and ANSI escapes) text never has
_TEXT_CONTROLS = frozenset(b"\t\n\r\x1b")


def looks_binary(start: bytes) -> bool:
    """Binary data, not text with a hole: NULs, and what is left has control bytes or is mostly not
    printable text (a hole in a log is NULs alone)."""
    if b"\x00" not in start:
        return False
    rest = start.replace(b"\x00", b"")
    if not rest:
        return False  # only NULs so far: text may follow the hole
    controls = sum(1 for byte in rest if (byte < 0x20 and byte not in _TEXT_CONTROLS) or byte == 0x7F)
    if controls > _CONTROL_SHARE * len(rest):
        return True
    text = rest.decode("utf-8", errors="replace")
    printable = sum(1 for char in text if char != "\ufffd" and (char.isprintable() or char in "\t\r\n\x1b"))
    return printable < _TEXT_SHARE * len(text)


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n").rstrip("\r")


def select_lines(stream: BinaryIO, find_hits: HitFinder, report: ReadReport) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for the head of the file and every line with a hit.

    One buffer is reused for the whole file: each chunk is read into it after the unfinished line
    the previous chunk left, so no byte is copied or allocated again on its way to the hit finder
    (fresh megabyte objects cost page faults and copies that outweigh the scan itself)."""
    buffer = _take_buffer()
    view = memoryview(buffer)
    carry = 0  # buffer[:carry] is a line the previous chunk did not finish
    dropping = 0  # > 0 while skipping the unread tail of an overlong line
    first = True
    report._block_at = 0  # where `carry` starts in the stream
    try:
        while got := _read_into(stream, view[carry : carry + CHUNK_BYTES]):
            if first and looks_binary(bytes(view[carry : carry + min(got, _BINARY_SAMPLE)])):
                raise BinaryInput("binary file (NUL bytes), not a text log")
            if buffer.find(b"\x00", carry, carry + got) >= 0:  # a C-speed check; only damaged chunks pay
                got = _skip_nuls(view, carry, got, report)
            filled = carry + got
            if dropping:
                newline = buffer.find(b"\n", carry, filled)
                if newline < 0:
                    dropping += got
                    continue
                dropping += newline - carry
                line = bytes(view[:carry]) + b"\n"
                yield from _emit_block(line, len(line), find_hits, report, first, truncated_by=dropping)
                report._block_at += carry + dropping + 1
                first, dropping = False, 0
                buffer[: filled - newline - 1] = buffer[newline + 1 : filled]
                filled -= newline + 1
            end = buffer.rfind(b"\n", 0, filled) + 1
            if end:
                yield from _emit_block(buffer, end, find_hits, report, first)
                report._block_at += end
                first = False
                buffer[: filled - end] = buffer[end:filled]
            carry = filled - end
            if carry > MAX_LINE_BYTES:
                dropping, carry = carry - MAX_LINE_BYTES, MAX_LINE_BYTES
        if carry:
            report.unfinished_line = report.lines + 1
            line = bytes(view[:carry]) + b"\n"
            yield from _emit_block(line, len(line), find_hits, report, first, truncated_by=dropping)
    finally:
        view.release()
        _spare.buffer = buffer


# One buffer per thread, reused file after file: a job with a log per rank has thousands of small
# files, and a fresh megabyte for each costs more than reading it. A reader that starts while
# another in the same thread is unfinished gets a buffer of its own.
_spare = threading.local()


def _take_buffer() -> bytearray:
    buffer = getattr(_spare, "buffer", None)
    _spare.buffer = None
    return buffer if buffer is not None else bytearray(MAX_LINE_BYTES + CHUNK_BYTES)


def _read_into(stream: BinaryIO, target: memoryview) -> int:
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        return readinto(target) or 0
    data = stream.read(len(target))
    target[: len(data)] = data
    return len(data)


def _skip_nuls(view: memoryview, start: int, size: int, report: ReadReport) -> int:
    """Drop the NUL bytes of the chunk at view[start:start + size] in place; its new size."""
    chunk = bytes(view[start : start + size])
    cleaned = chunk.replace(b"\x00", b"")
    if report.first_nul_line is None:
        report.first_nul_line = report.lines + 1 + chunk.count(b"\n", 0, chunk.index(b"\x00"))
    report.nul_bytes += size - len(cleaned)
    view[start : start + len(cleaned)] = cleaned
    return len(cleaned)


def _tail_of(block: bytes | bytearray, end: int, last: int) -> list[tuple[int, str]]:
    """The last lines of block[:end] (which ends with a newline), the last one numbered `last`."""
    start = end - 1
    for _ in range(TAIL_LINES):
        start = block.rfind(b"\n", 0, start)
        if start < 0:
            break
    lines = bytes(block[start + 1 : end - 1]).split(b"\n")
    first = last - len(lines) + 1
    return [(first + offset, decode(line)) for offset, line in enumerate(lines)]


def _emit_block(
    block: bytes | bytearray,
    end: int,
    find_hits: HitFinder,
    report: ReadReport,
    is_head: bool,
    truncated_by: int = 0,
) -> Iterator[tuple[int, str]]:
    """The head and hit lines of block[:end], a run of whole lines."""
    base = report.lines + 1
    if truncated_by and len(report.truncated) < _MAX_TRUNCATIONS_LISTED:
        report.truncated.append((base, truncated_by))
    with memoryview(block) as whole, whole[:end] as lines:
        hits = find_hits(lines)
    found_at = _by_line(block, end, hits)
    starts = sorted(found_at.keys() | _head_starts(block, end) if is_head else found_at)
    before, total = _newlines_before(block, end, starts)
    for start, newlines in zip(starts, before, strict=True):
        line_end = block.find(b"\n", start, end)
        report.at = report._block_at + start
        found = found_at.get(start)
        report.hit = found is not None
        report.found = frozenset(found) if found else frozenset()
        yield base + newlines, decode(block[start:line_end])
    report.lines += total
    tail = _tail_of(block, end, report.lines)
    # A short last block (the unfinished line, one too long) ends the tail, not replaces it.
    report.tail = report.tail[len(tail) - TAIL_LINES :] + tail if len(tail) < TAIL_LINES else tail


def _by_line(block: bytes | bytearray, end: int, hits: list[tuple[int, int]]) -> dict[int, set[int]]:
    """Line start → what was found on the line. Hits come in offset order, several to a line: each
    line is looked up once, at its first hit (a dated-line hit may come out of order)."""
    found_at: dict[int, set[int]] = {}
    line_start, line_end, found = -1, -1, set()
    for offset, what in hits:
        if not line_start <= offset < line_end:
            line_start = block.rfind(b"\n", 0, offset) + 1
            line_end = block.find(b"\n", offset, end)
            found = found_at.setdefault(line_start, set())
        found.add(what)
    return found_at


def _newlines_before(block: bytes | bytearray, end: int, starts: list[int]) -> tuple[list[int], int]:
    """How many newlines block[:end] holds before each of `starts` (sorted), and in all.

    `bytes.count` is a byte-by-byte loop and a fifth of a big triage's instructions; numpy compares
    the whole block in one vectorised pass and counts the stretches between the starts, ~4x fewer
    instructions. Until `load_line_counter` ran in this process, `bytes.count`."""
    numpy = _COUNTER.numpy
    if numpy is None:
        count = block.count
    else:
        # Into a mask reused block after block (a fresh megabyte costs page faults every time); the
        # view of `block` is gone once the mask is filled: the caller reuses `block`.
        mask = numpy.equal(
            numpy.frombuffer(block, dtype=numpy.uint8, count=end), _NEWLINE, out=_newline_mask(numpy, end)
        )
        count_nonzero, count_bytes = numpy.count_nonzero, block.count

        def count(newline: bytes, start: int, stop: int) -> int:
            # a numpy call costs what bytes.count spends on a few kilobytes: short gaps (lines that
            # match in a row) are counted directly
            if stop - start < _SHORT_GAP:
                return count_bytes(newline, start, stop)
            return int(count_nonzero(mask[start:stop]))

    before, counted, counted_to = [], 0, 0
    for start in starts:
        counted += count(b"\n", counted_to, start)
        counted_to = start
        before.append(counted)
    return before, counted + count(b"\n", counted_to, end)


_NEWLINE = ord("\n")
_SHORT_GAP = 2048


def _newline_mask(numpy: Any, size: int) -> Any:
    mask = getattr(_spare, "mask", None)
    if mask is None or len(mask) < size:
        mask = _spare.mask = numpy.empty(max(size, CHUNK_BYTES + MAX_LINE_BYTES), dtype=bool)
    return mask[:size]


@dataclass
class _LineCounter:
    numpy: Any = None  # the accelerator, once loaded


_COUNTER = _LineCounter()
# numpy counts a megabyte ~0.45 ms faster than bytes.count and takes ~0.12 s to import: it pays for
# itself from about a quarter of a gigabyte counted in one process.
NUMPY_PAYS_FROM_BYTES = 256 << 20


def load_line_counter() -> None:
    """Count lines with numpy in this process from now on (where it is installed and allowed)."""
    _COUNTER.numpy = _numpy()


def prepare_line_counter(bytes_per_process: int) -> None:
    """Load numpy when each scanning process has enough to count to pay for its import."""
    if bytes_per_process >= NUMPY_PAYS_FROM_BYTES:
        load_line_counter()


@cache
def _numpy() -> Any:
    """numpy, an optional accelerator (imported when a big input needs it, not at start-up)."""
    if os.environ.get(NO_NUMPY):
        return None
    try:
        import numpy
    except ImportError:
        return None
    return numpy


# Set to count lines with bytes.count even where numpy is installed (tests compare the two).
NO_NUMPY = "HYPERPOD_NCCL_NO_NUMPY"


def _head_starts(block: bytes | bytearray, end: int) -> set[int]:
    starts, position = {0}, 0
    for _ in range(HEAD_LINES - 1):
        position = block.find(b"\n", position, end) + 1
        if not position or position >= end:
            break
        starts.add(position)
    return starts
