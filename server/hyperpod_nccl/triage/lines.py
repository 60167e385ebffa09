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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 64 * 1024
HEAD_LINES = 40  # every file's first lines are always yielded: banners name the framework and versions
TAIL_LINES = 16  # every file's last lines are kept aside: when the log ends, and how
_MAX_TRUNCATIONS_LISTED = 5

HitFinder = Callable[[bytes], list[int]]


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
    at: int = 0  # byte offset of the line being yielded
    _block_at: int = 0  # byte offset of the block being emitted
    _last_block: tuple[int, bytes] = (1, b"")


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
    """Yield (line number, text) for the head of the file and every line with a hit."""
    carry = b""
    dropping = 0  # > 0 while skipping the unread tail of an overlong line
    first = True
    report._block_at = 0  # where `carry` starts in the stream
    while chunk := stream.read(CHUNK_BYTES):
        if first and looks_binary(chunk[:_BINARY_SAMPLE]):
            raise BinaryInput("binary file (NUL bytes), not a text log")
        if b"\x00" in chunk:  # a C-speed check; only damaged chunks pay for the rest
            chunk = _skip_nuls(chunk, carry, report)
        if dropping:
            newline = chunk.find(b"\n")
            if newline < 0:
                dropping += len(chunk)
                continue
            dropping += newline
            yield from _emit_block(carry + b"\n", find_hits, report, first, truncated_by=dropping)
            report._block_at += len(carry) + dropping + 1
            carry, dropping, first = b"", 0, False
            chunk = chunk[newline + 1 :]
        buffer = carry + chunk
        end = buffer.rfind(b"\n") + 1
        if end:
            yield from _emit_block(buffer[:end], find_hits, report, first)
            report._block_at += end
            first = False
        carry = buffer[end:]
        if len(carry) > MAX_LINE_BYTES:
            dropping = len(carry) - MAX_LINE_BYTES
            carry = carry[:MAX_LINE_BYTES]
    if carry:
        yield from _emit_block(carry + b"\n", find_hits, report, first, truncated_by=dropping)
    report.tail = _tail(*report._last_block)


def _tail(base: int, block: bytes) -> list[tuple[int, str]]:
    """The last lines of the last block read, with their numbers: the end of the file."""
    lines = block.split(b"\n")[:-1][-TAIL_LINES:]
    first = base + block.count(b"\n") - len(lines)
    return [(first + offset, decode(line)) for offset, line in enumerate(lines)]


def _skip_nuls(chunk: bytes, carry: bytes, report: ReadReport) -> bytes:
    cleaned = chunk.replace(b"\x00", b"")
    if report.first_nul_line is None:
        report.first_nul_line = report.lines + 1 + (carry + chunk[: chunk.index(b"\x00")]).count(b"\n")
    report.nul_bytes += len(chunk) - len(cleaned)
    return cleaned


def _emit_block(
    block: bytes, find_hits: HitFinder, report: ReadReport, is_head: bool, truncated_by: int = 0
) -> Iterator[tuple[int, str]]:
    base = report.lines + 1
    report._last_block = (base, block)
    if truncated_by and len(report.truncated) < _MAX_TRUNCATIONS_LISTED:
        report.truncated.append((base, truncated_by))
    starts = _head_starts(block) if is_head else []
    starts.extend(block.rfind(b"\n", 0, hit) + 1 for hit in find_hits(block))
    number, counted_to = base, 0
    last_start = -1
    for start in sorted(set(starts)):
        if start <= last_start:
            continue
        number += block.count(b"\n", counted_to, start)
        counted_to = start
        end = block.find(b"\n", start)
        last_start = start
        report.at = report._block_at + start
        yield number, decode(block[start:end])
    report.lines += block.count(b"\n")


def _head_starts(block: bytes) -> list[int]:
    starts, position = [0], 0
    for _ in range(HEAD_LINES - 1):
        position = block.find(b"\n", position) + 1
        if not position or position >= len(block):
            break
        starts.append(position)
    return starts
