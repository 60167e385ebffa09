"""Decode Flight Recorder dumps without running anything they contain, within fixed bounds.

A dump is a pickle (what the watchdog writes, `_dump_fr_trace`) or JSON (`_dump_fr_trace_json`).
Pickles go through an unpickler whose `find_class` refuses every global: no class, function or
`__reduce__` can be named, so nothing but dicts, lists, tuples, sets, strings, bytes, numbers,
booleans and None can come out, and a dump from a stranger can never run code.

Refusing globals is not enough on its own: a 12-byte pickle can make the C unpickler allocate
and zero tens of gigabytes of memo, and a few bytes per object can expand sixty-fold. So a
file over `MAX_DUMP_BYTES` is refused unread, and `read_dumps` decodes in worker processes
whose address space is capped at `DECODE_HEADROOM` above what they start with: a hostile dump
costs one "refused" line in the report, never the machine. The workers also read dumps in
parallel, which is what makes a thousand of them take seconds.

A truncated dump is read as far as it goes: the entries complete before the cut are kept and
the cut is stated.
"""

from __future__ import annotations

import gc
import io
import json
import os
import pickle
import re
import resource
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from hyperpod_nccl.flight_recorder.model import Encoding, NotADump, RankDump, parse_dump

MAX_DUMP_BYTES = 64 << 20  # a 2,000-entry dump with stacks is well under 1 MB
DECODE_HEADROOM = 1 << 30  # address space a decoding worker may add to what it starts with
MAX_WORKERS = 8  # decoding is CPU-bound: one worker per core, up to this many
_PICKLE_PROTOCOL_OPCODE = 0x80
_SNIFF_BYTES = 64


class Refused(Exception):
    """The dump cannot be used; the message says why, in words for the report."""


class CarriesCode(Refused):
    """The pickle names a class or function: not a dump PyTorch wrote, nothing in it was run."""


@dataclass(frozen=True)
class DumpFile:
    path: Path
    source: str  # the name evidence uses: relative to the directory the user gave
    rank: int | None  # from the file name; None when the name carries none


@dataclass(frozen=True)
class Unreadable:
    source: str
    rank: int | None
    reason: str
    carries_code: bool = False  # refused because it names code: a hostile file, not a damaged one


class _RefusesCode:
    """Every global and persistent reference refused: no class, function or `__reduce__` can be
    named, so nothing but plain data can come out of the pickle."""

    def find_class(self, module: str, name: str) -> object:
        raise CarriesCode(_refusal(module, name))

    def persistent_load(self, pid: object) -> object:
        raise CarriesCode("refused: the pickle refers to a persistent object; a dump holds only plain data")


class _PlainDataUnpickler(_RefusesCode, pickle.Unpickler):
    """The C unpickler, refusing code."""


class _SalvagingUnpickler(_RefusesCode, pickle._Unpickler):  # type: ignore[name-defined,misc]
    """The pure-Python unpickler, used only on a pickle the C one found truncated: after the
    error its stacks still hold everything decoded before the cut (its memo is a dict, so it
    allocates nothing for a huge memo index either)."""


def _refusal(module: str, name: str) -> str:
    return (
        f"refused: the pickle asks to load {str(module)[:80]}.{str(name)[:80]}; a Flight Recorder dump "
        "holds only plain data, so this file was not decoded further (nothing in it was run)"
    )


def sniff(head: bytes) -> Encoding | None:
    """What the first bytes say the file is: a pickle (protocol 2 to 5), JSON, or neither."""
    if len(head) > 1 and head[0] == _PICKLE_PROTOCOL_OPCODE and 2 <= head[1] <= 5:
        return "pickle"
    return "json" if head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{" else None


@dataclass(frozen=True)
class Decoded:
    data: object
    encoding: Encoding
    cut: str | None = None  # what a truncated file lost, in words


def decode(data: bytes) -> Decoded:
    """Plain data from a dump's bytes. Raises `Refused` for anything else.

    Call it where memory is bounded (`read_dumps` does): see the module docstring."""
    encoding = sniff(data[:_SNIFF_BYTES])
    if encoding == "pickle":
        return _decode_pickle(data)
    if encoding == "json":
        return _decode_json(data)
    raise Refused("not a Flight Recorder dump: neither a pickle nor a JSON object")


def _decode_pickle(data: bytes) -> Decoded:
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=max(len(data), 1))  # peek(): no per-op reads
    try:
        return Decoded(_PlainDataUnpickler(stream).load(), "pickle")
    except (Refused, MemoryError):
        raise
    except (EOFError, pickle.UnpicklingError) as error:
        if not isinstance(error, EOFError) and "truncated" not in str(error):
            raise Refused(f"corrupt pickle: {_short(error)}") from None
        partial = _salvage_pickle(data)
        if partial is None:
            raise Refused(f"truncated pickle: {_short(error)}; nothing before the cut was usable") from None
        return Decoded(partial, "pickle", "the file ends mid-way: only what came before the cut was read")
    except Exception as error:  # the C unpickler raises many kinds on garbage; all mean "corrupt"
        raise Refused(f"corrupt pickle: {type(error).__name__}: {_short(error)}") from None


def _salvage_pickle(data: bytes) -> dict[object, object] | None:
    """Everything the pure-Python unpickler built before the cut, put back into its containers."""
    unpickler = _SalvagingUnpickler(io.BytesIO(data))
    try:
        unpickler.load()
    except Refused:
        raise
    except Exception:  # the cut itself (or garbage right before it); what was built is on the stacks
        pass
    levels = [*getattr(unpickler, "metastack", []), getattr(unpickler, "stack", [])]
    innermost = True
    for outer, items in zip(reversed(levels[:-1]), reversed(levels[1:]), strict=True):
        container = outer[-1] if outer else None
        if isinstance(container, dict):
            pairs = items[: len(items) - len(items) % 2]
            for key, value in zip(pairs[::2], pairs[1::2], strict=True):
                if isinstance(key, str | int):
                    container[key] = value
        elif isinstance(container, list):
            # Below the innermost level, the last item is the container the cut fell in: a
            # half-built entry is dropped rather than read with fields missing.
            container.extend(items if innermost else items[:-1])
        innermost = False
    top = levels[0][0] if levels and levels[0] else None
    return top if isinstance(top, dict) and top else None


_ENTRIES_KEY = re.compile(r'"entries"\s*:\s*\[')
_SPACE = re.compile(r"\s*")


def _decode_json(data: bytes) -> Decoded:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise Refused(f"not UTF-8 JSON: {_short(error)}") from None
    try:
        return Decoded(json.loads(text), "json")
    except RecursionError:
        raise Refused("refused: JSON nested deeper than any dump") from None
    except json.JSONDecodeError as error:
        partial = _salvage_json(text)
        if partial is None:
            raise Refused(f"invalid JSON: {_short(error)}") from None
        return Decoded(
            partial,
            "json",
            f"the JSON breaks off at character {error.pos}: only the entries "
            "before it were read (the group config and status come after them and are lost)",
        )
    except ValueError as error:  # e.g. an integer with more digits than Python converts
        raise Refused(f"invalid JSON: {_short(error)}") from None


def _salvage_json(text: str) -> dict[str, object] | None:
    """The complete entries before a cut: `_dump_fr_trace_json` sorts its keys, so they come first."""
    found = _ENTRIES_KEY.search(text)
    if found is None:
        return None
    decoder = json.JSONDecoder()
    position = found.end()
    entries: list[object] = []
    try:
        while True:
            entry, position = decoder.raw_decode(text, _SPACE.match(text, position).end())  # type: ignore[union-attr]
            entries.append(entry)
            position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
            if text[position : position + 1] != ",":
                break
            position += 1
    except (ValueError, RecursionError):
        pass
    return {"entries": entries} if entries else None


def _short(error: BaseException, limit: int = 160) -> str:
    text = str(error)
    return text if len(text) <= limit else text[:limit] + "…"


def read_dump(file: DumpFile) -> RankDump | Unreadable:
    """One file's dump, or why it cannot be used. Never raises: a bad dump is one line in the report."""
    try:
        size = file.path.stat().st_size
        if size > MAX_DUMP_BYTES:
            return Unreadable(
                file.source,
                file.rank,
                f"refused: {size} bytes, over the {_mib(MAX_DUMP_BYTES)} a dump can be",
            )
        with file.path.open("rb") as handle:
            data = handle.read(MAX_DUMP_BYTES + 1)
        if len(data) > MAX_DUMP_BYTES:
            return Unreadable(
                file.source, file.rank, f"refused: over the {_mib(MAX_DUMP_BYTES)} a dump can be"
            )
        decoded = decode(data)
        dump = parse_dump(decoded.data, file.source, file.rank, decoded.encoding)
        if decoded.cut:
            dump.limits.insert(0, decoded.cut)
        return dump
    except (Refused, NotADump) as error:
        return Unreadable(file.source, file.rank, str(error), isinstance(error, CarriesCode))
    except MemoryError:
        return Unreadable(
            file.source, file.rank, f"refused: decoding it needed more than {_mib(DECODE_HEADROOM)} of memory"
        )
    except OSError as error:
        return Unreadable(file.source, file.rank, f"unreadable: {error.strerror or error}")
    except Exception as error:  # a dump shape nobody foresaw: the other dumps still count
        return Unreadable(
            file.source, file.rank, f"could not be read: {type(error).__name__}: {_short(error)}"
        )


def _mib(count: int) -> str:
    return f"{count >> 20} MiB"


def read_dumps(files: Sequence[DumpFile], workers: int | None = None) -> Iterator[RankDump | Unreadable]:
    """Every file's dump or the reason it is unusable, decoded in memory-bounded worker
    processes, in the order they finish. A file that kills its worker is named, not guessed at:
    the files in flight when a worker died are retried one at a time."""
    count = max(1, min(workers or MAX_WORKERS, len(files), os.cpu_count() or 1))
    queue: list[DumpFile] = list(files)
    suspects: list[DumpFile] = []
    while queue:
        queue = yield from _run(queue, count, suspects)
    for file in suspects:
        died: list[DumpFile] = []
        yield from _run([file], 1, died)
        if died:
            yield Unreadable(
                file.source,
                file.rank,
                "refused: the worker process decoding it died (killed for memory, or crashed)",
            )


def _run(
    files: list[DumpFile], count: int, died: list[DumpFile]
) -> Generator[RankDump | Unreadable, None, list[DumpFile]]:
    """Decode `files` in one pool; when a worker dies, the files in flight go to `died` and the
    ones not yet submitted are returned for a fresh pool."""
    pending = list(reversed(files))
    try:
        pool = ProcessPoolExecutor(
            count, mp_context=get_context("spawn"), initializer=_bound_worker, initargs=(DECODE_HEADROOM,)
        )
        with pool:
            in_flight: dict[Future[RankDump | Unreadable], DumpFile] = {}
            while pending or in_flight:
                while pending and len(in_flight) < 2 * count:
                    file = pending.pop()
                    in_flight[pool.submit(read_dump, file)] = file
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                broken = False
                for future in done:
                    file = in_flight.pop(future)
                    if isinstance(future.exception(), BrokenProcessPool):
                        died.append(file)
                        broken = True
                    else:
                        yield future.result()
                if broken:  # one dead worker breaks the whole pool
                    died.extend(in_flight.values())
                    return list(reversed(pending))
    except BrokenProcessPool:  # died while a file was being submitted
        died.extend(f for f in files if f not in pending)
        return list(reversed(pending))
    except (OSError, RuntimeError) as error:
        yield from (
            Unreadable(f.source, f.rank, f"not decoded: no worker process could start ({error})")
            for f in files
        )
    return []


def _bound_worker(headroom: int) -> None:
    """In each decoding worker: cap its address space, skip the cycle collector (decoded dumps
    hold no cycles; the collector would only slow a thousand files down), and write nothing to
    stdout, which an MCP server over stdio shares with its workers."""
    gc.disable()
    with Path(os.devnull).open("w") as devnull:
        os.dup2(devnull.fileno(), 1)
    try:
        base = _address_space()
        if base is None:
            return
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = base + headroom if hard == resource.RLIM_INFINITY else min(base + headroom, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):  # a platform without RLIMIT_AS: the byte bound still holds
        pass


def _address_space() -> int | None:
    """This process's virtual memory size in bytes (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
