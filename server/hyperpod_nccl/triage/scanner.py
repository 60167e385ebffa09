"""Scan one input into a `FileScan`: the only place where lines become events.

Each line the prefilter selects is stripped of its prefixes and named by the first event pattern
that matches; fact patterns (versions, topology) are all applied. Repeats of one kind on one rank
fold into the first event's `count`, so memory grows with ranks × kinds, never with file size.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import BinaryIO

from hyperpod_nccl.triage.discover import InputFile
from hyperpod_nccl.triage.events import AGAIN, APART, FRAME, FRAME_LINE, Event, FileScan
from hyperpod_nccl.triage.lines import HEAD_LINES, BinaryInput, HitFinder, ReadReport, select_lines
from hyperpod_nccl.triage.patterns import (
    EVENT_PATTERNS,
    FACT_PATTERNS,
    FRAMEWORK_WORDS,
    LAST_WORDS_BENIGN,
    LAST_WORDS_FAILURE,
    LAST_WORDS_LINES,
    POD_FAILED,
    POD_ROW,
    SHELL_PROMPT,
    STORAGE_PATTERNS,
    STORAGE_PREFILTER,
    Dispatcher,
    Pattern,
    bars_apart,
    elapsed_seconds,
)
from hyperpod_nccl.triage.prefilter import build_hit_finder
from hyperpod_nccl.triage.prefixes import UNKNOWN_YEAR, Stripped, message_rank, rank_in_file_name, strip
from hyperpod_nccl.triage.run_facts import RUN_FACTS

MAX_EVENTS_PER_FILE = 40_000
MAX_TEXT_CHARS = 600  # evidence quotes the line, not a 64 KiB blob
_MAX_PROBLEMS_PER_FILE = 5
# Kinds whose latest line is kept: a bar's or a work item's last state; a traceback's deepest frame
# (where a paste cut short before the exception stopped).
_KEEP_LATEST = frozenset({"work_update", "progress", "traceback_frame"})
_FACT_KINDS = frozenset(pattern.kind for pattern in RUN_FACTS)
# Kinds whose second line is kept too (marked AGAIN): a process announcing a rank another already took.
_KEEP_SECOND = frozenset({"ddp_member"})
# Kinds whose repeated lines change the event kept, not only its count.
_UPDATED_BY_REPEATS = _KEEP_LATEST | _KEEP_SECOND
# Lines from a traceback frame to the exception it raised: a few frames, a pasted echo of them.
_FRAME_REACH = 8
# Lines from a gRPC status to the call it answered (`RPC: /tensorflow.CoordinationService/RegisterTask`).
_STATUS_REACH = 3


def _log_finder() -> HitFinder:
    return _log_dispatcher().find_hits


@cache
def _storage_finder() -> HitFinder:
    return build_hit_finder([anchor.encode() for anchor in STORAGE_PREFILTER])


def prepare() -> None:
    """Build the prefilters and the dispatcher in a process that is about to fork the scanning
    workers: each inherits them instead of compiling its own (~60 ms per worker)."""
    _log_finder()
    _storage_finder()
    _log_dispatcher()


# Facts first, then events, in one dispatcher: one anchor pass per line finds the candidates of both.
_FACTS = frozenset(id(pattern) for pattern in FACT_PATTERNS + RUN_FACTS)


@cache
def _log_dispatcher() -> Dispatcher:
    return Dispatcher(FACT_PATTERNS + RUN_FACTS + EVENT_PATTERNS)


@cache
def _storage_dispatcher() -> Dispatcher:
    return Dispatcher(STORAGE_PATTERNS)


def scan_input(item: InputFile) -> FileScan:
    """Read one file (or every member of one archive) and return what it holds."""
    scan = FileScan(source=item.source, storage=item.storage)
    try:
        if item.archive:
            _scan_archive(item, scan)
        else:
            with _open(item) as stream:
                _scan_stream(stream, item.source, scan)
    except BinaryInput as error:
        scan.damage = str(error)
    except (EOFError, zlib.error, tarfile.TarError) as error:
        scan.damage = f"truncated or corrupt compressed data after line {scan.lines_read}: {error}"
    except OSError as error:
        scan.damage = f"read error after line {scan.lines_read}: {error.strerror or error}"
    if scan.damage:
        scan.problems.append(scan.damage)
    _fill_file_level_identity(scan)
    return scan


@contextmanager
def _open(item: InputFile) -> Iterator[BinaryIO]:
    with item.path.open("rb") as raw:
        if raw.read(2) == b"\x1f\x8b":
            raw.seek(0)
            yield _GzipStream(raw)  # type: ignore[misc]
        else:
            raw.seek(0)
            yield raw


class _GzipStream:
    """A gzip file read forward only. Unlike GzipFile, which drops the output of the read call
    that meets the damage, every byte decompressed before a cut or a corrupt block is returned
    first; the error comes on the next read."""

    _RAW_CHUNK = 256 * 1024

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._unzip = zlib.decompressobj(wbits=31)
        self._pending = b""
        self._error: Exception | None = None
        self._done = False

    def read(self, size: int) -> bytes:
        while len(self._pending) < size and not self._done and self._error is None:
            self._fill()
        if not self._pending and self._error is not None:
            raise self._error
        out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def _fill(self) -> None:
        data = self._raw.read(self._RAW_CHUNK)
        try:
            if not data:
                if not self._unzip.eof:
                    self._error = EOFError(
                        "compressed file ended before the end-of-stream marker was reached"
                    )
                self._done = True
                return
            self._pending += self._unzip.decompress(data)
            while self._unzip.eof and self._unzip.unused_data:  # concatenated gzip members
                rest = self._unzip.unused_data
                self._unzip = zlib.decompressobj(wbits=31)
                self._pending += self._unzip.decompress(rest)
        except zlib.error as error:
            self._error = error


MAX_GZIP_SKIP = 1 << 30  # decompressing further to re-read a few lines costs more than it tells


def read_before(item: InputFile, offset: int, size: int) -> bytes | None:
    """The `size` bytes before `offset` in a file (decompressed), or None when they cannot be read."""
    if item.archive:
        return None
    start = max(0, offset - size)
    try:
        with _open(item) as stream:
            if isinstance(stream, _GzipStream):
                if start > MAX_GZIP_SKIP:
                    return None
                for _ in range(start // _GzipStream._RAW_CHUNK):
                    stream.read(_GzipStream._RAW_CHUNK)
                stream.read(start % _GzipStream._RAW_CHUNK)
            else:
                stream.seek(start)
            return stream.read(offset - start)
    except (OSError, EOFError, zlib.error):
        return None


def _scan_archive(item: InputFile, scan: FileScan) -> None:
    with tarfile.open(item.path, mode="r|*") as archive:
        for member in archive:
            if not member.isfile():
                continue
            stream = archive.extractfile(member)
            if stream is not None:
                _scan_stream(stream, f"{item.source}:{member.name}", scan)  # type: ignore[arg-type]


class _FileState:
    """What one pass over a file accumulates besides events."""

    def __init__(self, scan: FileScan, source: str) -> None:
        self.scan = scan
        self.source = source
        self.keyed: dict[tuple[object, ...], Event] = {}
        # (srun task of the launcher or None, local rank) → global rank, and → (host, pid)
        self.local_to_global: dict[tuple[int | None, int], int] = {}
        self.local_pids: dict[tuple[int | None, int], tuple[str, int]] = {}
        self.failure_block: dict[str, str] = {}
        self.failure_section = ""  # "Root Cause" or "Failures" inside torchrun's ChildFailedError
        # Ranks taken from srun/mpirun labels, kept aside until the file shows whether labels are ranks.
        self.label_identity: set[tuple[int, str | None, int | None]] = set()
        self.labels_are_launchers = False
        self.offset = -1  # of the line being read
        self.shm_frame: tuple[int, str] = (0, "")  # the last traceback frame inside shared-memory code
        self.grpc_status: tuple[int, str] = (0, "")  # the last bare gRPC status line
        self.last_event_line = 0  # the file's last line that a pattern understood as more than a fact
        self.frame_line = -1  # the last traceback frame line (`File "…", line N, in f`)


def _scan_stream(stream: BinaryIO, source: str, scan: FileScan) -> None:
    report = ReadReport()
    state = _FileState(scan, source)
    finder = _storage_finder() if scan.storage else _log_finder()
    dispatcher = _storage_dispatcher() if scan.storage else _log_dispatcher()
    try:
        for number, text in select_lines(stream, finder, report):
            state.offset = report.at
            try:
                # Storage logs are small and one of their patterns has no anchor: every line is parsed.
                parse = report.hit or scan.storage
                # Storage lines are found by a prefilter of their own: the dispatcher looks again.
                found = None if scan.storage else report.found
                _take_line(state, dispatcher if parse else None, number, text, found)
            except ValueError as error:  # a line that fits a pattern's shape but not its meaning
                if len(scan.problems) < _MAX_PROBLEMS_PER_FILE:
                    scan.problems.append(f"{source}:{number}: line not understood ({error}); read past it")
    finally:
        tail = [(number, text, strip(text)) for number, text in report.tail]
        for _, _, stripped in tail:  # when the log ends: its last stamped line
            _note_stamp(scan, stripped)
        if not scan.storage:
            _note_last_words(state, tail)
        scan.lines_read += report.lines
        for line, dropped in report.truncated:
            scan.problems.append(f"{source}:{line}: line truncated, {dropped} bytes past 64 KiB not read")
        if report.unfinished_line:  # a paste cut short, a process killed mid-write, or a log still written
            scan.problems.append(
                f"{source}:{report.unfinished_line}: the file ends inside this line (no final newline): "
                "usual for a paste, but a log cut short or still being written ends the same way; "
                "anything after it is not in the input"
            )
        if report.nul_bytes:
            scan.damage = scan.damage or (
                f"{report.nul_bytes} NUL bytes (a hole in the file) skipped from line "
                f"{report.first_nul_line}; the lines around them were read"
            )
        scan.events.extend(state.keyed.values())
        _settle_labels(state)
        _apply_local_ranks(state)
        _rank_from_name(scan)


def _note_last_words(state: _FileState, tail: list[tuple[int, str, Stripped]]) -> None:
    """The earliest of the file's last non-blank lines below its last understood one that says it
    failed: the never-silent fallback's last resort (`LAST_WORDS_FAILURE`)."""
    last = [line for line in tail if line[1].strip()][-LAST_WORDS_LINES:]
    for number, text, stripped in last:
        if number <= state.last_event_line:
            continue
        if LAST_WORDS_FAILURE.search(stripped.message) and not LAST_WORDS_BENIGN.search(stripped.message):
            event = _event(state, "last_words", {}, number, text, stripped)
            event.offset = -1  # read after the pass: where the line starts is not kept
            state.keyed[("last_words",)] = event
            return


def _rank_from_name(scan: FileScan) -> None:
    """A file whose lines name no rank, named for one (`train_rank2.log`): its lines are that rank's."""
    if scan.ranks or scan.storage or (named := rank_in_file_name(scan.source)) is None:
        return
    scan.ranks.add(named)
    for event in scan.events:
        if event.rank is None:
            event.rank = named


def _take_line(
    state: _FileState, dispatcher: Dispatcher | None, number: int, text: str, found: frozenset[int] | None
) -> None:
    """What a line says about who wrote it and when; then, for a line with an anchor (`dispatcher`
    is None for a head line without one), the event or facts it states."""
    stripped = strip(text)
    if state.scan.storage and stripped.stamp is None:
        stripped.stamp = _daemon_stamp(state.source, text)
    _note_identity(state, stripped)
    if stripped.rank is None and stripped.local_rank is None:
        state.scan.unprefixed_lines += bool(stripped.message.strip())
    elif stripped.rank_from_launcher:
        state.scan.launcher_ranked_lines += 1
    if number <= HEAD_LINES:
        _note_framework(state.scan, text)
        if prompt := SHELL_PROMPT.match(text):  # a terminal session pasted whole: the machine it ran on
            state.scan.hosts.add(prompt["host"])
        if row := POD_ROW.match(text):
            fields = {name: value for name, value in row.groupdict().items() if value is not None}
            _record(state, POD_FAILED, fields, number, text, stripped)
            return
    if dispatcher is None or _frame_source_line(state, number, stripped.message):
        return
    for pattern in dispatcher.candidates(stripped.message, found):
        fields = pattern.parse(stripped.message)
        if fields is not None:
            _record(state, pattern, fields, number, text, stripped)
            if pattern.kind == "traceback_frame":
                state.frame_line = number
            if id(pattern) not in _FACTS:  # every fact a line states is kept, but only its first event
                return


def _frame_source_line(state: _FileState, number: int, message: str) -> bool:
    """The indented line under a traceback frame is the source it ran (`    os.kill(pid, signal.SIGTERM)`,
    `    raise ValueError("…")`): code, not something that happened."""
    return (
        number == state.frame_line + 1
        and message.startswith("    ")
        and not message.lstrip().startswith("File ")
    )


_DAEMON_CLOCK = re.compile(r"[IWE] (\d\d:\d\d:\d\d)\.\d+ ")
_DAEMON_FILE_DAY = re.compile(r"\.(\d\d)(\d\d)-\d{6}\.")


def _daemon_stamp(source: str, text: str) -> str | None:
    """AIStore's glog lines carry only a time; the day is in the file name (`INFO.0302-095500.1`)."""
    clock, day = _DAEMON_CLOCK.match(text), _DAEMON_FILE_DAY.search(source)
    if not clock or not day:
        return None
    return f"{UNKNOWN_YEAR}-{day.group(1)}-{day.group(2)}T{clock.group(1)}"


def _note_identity(state: _FileState, stripped: Stripped) -> None:
    scan = state.scan
    if stripped.label is not None and (
        stripped.local_rank is not None or (not stripped.rank_from_label and stripped.rank != stripped.label)
    ):
        state.labels_are_launchers = True  # `1: [rank5]:` or `1: [default1]:`: labels number launchers
    if stripped.rank_from_label:
        if stripped.rank is not None:
            state.label_identity.add((stripped.rank, stripped.host, stripped.pid))
        if stripped.host:
            scan.hosts.add(stripped.host)
        _note_stamp(scan, stripped)
        return
    if stripped.host:
        scan.hosts.add(stripped.host)
        if stripped.pid is not None and stripped.rank is not None:
            scan.pid_ranks.setdefault((stripped.host, stripped.pid), stripped.rank)
        elif stripped.pid is not None and stripped.local_rank is not None:
            state.local_pids.setdefault((stripped.task, stripped.local_rank), (stripped.host, stripped.pid))
    if stripped.rank is not None:
        scan.ranks.add(stripped.rank)
        if stripped.host:
            scan.rank_hosts.setdefault(stripped.rank, stripped.host)
        if stripped.local_rank is not None:
            state.local_to_global.setdefault((stripped.task, stripped.local_rank), stripped.rank)
    _note_stamp(scan, stripped)


def _note_stamp(scan: FileScan, stripped: Stripped) -> None:
    if stripped.since_boot:
        scan.since_boot_lines += 1
    if stripped.stamp:
        scan.first_stamp = scan.first_stamp or stripped.stamp
        scan.last_stamp = stripped.stamp
        if stripped.stamp.endswith("Z"):
            scan.utc_stamps += 1
        else:
            scan.zoneless_stamps += 1
    if stripped.stamp and not stripped.stamp.startswith(UNKNOWN_YEAR):
        year = int(stripped.stamp[:4])
        scan.dated_years[year] = scan.dated_years.get(year, 0) + 1
        if scan.first_dated is None or stripped.stamp < scan.first_dated:
            scan.first_dated = stripped.stamp


_FRAMEWORK_OF = {word: name for name, words in FRAMEWORK_WORDS for word in words}
# Longest first, so a word that contains another is the one found.
# `lightning-thunder` (a compiler) is not PyTorch Lightning.
_FRAMEWORK_WORD = re.compile(
    "(?:" + "|".join(re.escape(w) for w in sorted(_FRAMEWORK_OF, key=len, reverse=True)) + r")(?![-_]thunder)"
)


def _note_framework(scan: FileScan, text: str) -> None:
    for found in _FRAMEWORK_WORD.finditer(text):
        scan.frameworks.add(_FRAMEWORK_OF[found.group()])


def _record(
    state: _FileState, pattern: Pattern, fields: dict[str, str], number: int, text: str, stripped: Stripped
) -> None:
    if pattern.kind == "failure_field":
        _note_failure_field(state, fields)
        return
    if pattern.kind == "failure_section":
        state.failure_section, state.failure_block = fields["section"], {}
        return
    if pattern.kind == "shm_frame":
        state.shm_frame = (number, text[:MAX_TEXT_CHARS])
        return
    if pattern.kind == "grpc_status":
        state.grpc_status = (number, text[:MAX_TEXT_CHARS])
        return
    kind = pattern.kind
    frame_line, frame = state.shm_frame
    if kind == "disk_full" and frame_line and number - frame_line <= _FRAME_REACH:
        kind = "shm_exhausted"  # the errno came from shared-memory code: /dev/shm is what is full
        fields = {**fields, FRAME_LINE: str(frame_line), FRAME: frame}  # the line that shows it
    status_line, status = state.grpc_status
    if kind == "coordination" and status_line and number - status_line <= _STATUS_REACH:
        fields = {**fields, FRAME_LINE: str(status_line), FRAME: status}  # what the call got back
    if pattern.kind == "worker_exit":
        event = _event(state, kind, fields, number, text, stripped)
        _attach_failure_block(state, event)
        if "mpi_rank" in fields:  # Open MPI names the global rank and its node
            event.rank = int(fields["mpi_rank"])
        _keep(state, event, _fold_key(pattern, kind, event.fields, stripped, event.rank))
        return
    key = _fold_key(pattern, kind, fields, stripped, stripped.rank)
    if kind not in _UPDATED_BY_REPEATS and (existing := state.keyed.get(key)) is not None:
        # A line that only adds to the count of an event already kept (retry noise, repeated
        # warnings: most lines of a big log that match at all) builds no event of its own.
        existing.count += 1
        if kind not in _FACT_KINDS:
            state.last_event_line = number
        return
    _keep(state, _event(state, kind, fields, number, text, stripped), key)


def _fold_key(
    pattern: Pattern, kind: str, fields: dict[str, str], stripped: Stripped, rank: int | None
) -> tuple[object, ...]:
    """Lines with the same key fold into one event: one kind, from one pattern, on one rank."""
    return (
        kind,
        pattern.anchors[0],
        rank,
        stripped.local_rank,
        stripped.host or _short_host(fields.get("host")),
        fields.get("pg"),
        str(stripped.task) if stripped.task is not None else fields.get("task"),
        fields.get(pattern.key) if pattern.key else None,
    )


def _event(
    state: _FileState, kind: str, fields: dict[str, str], number: int, text: str, stripped: Stripped
) -> Event:
    event = Event(
        kind=kind,
        source=state.source,
        line=number,
        text=text[:MAX_TEXT_CHARS],
        rank=stripped.rank,
        node=stripped.host or _short_host(fields.get("host")),
        stamp=_stamp(stripped, fields),
        fields=fields,
        offset=state.offset if state.source == state.scan.source else -1,  # archive members: no re-read
    )
    if stripped.local_rank is not None:
        event.fields["local_rank"] = str(stripped.local_rank)
    if stripped.task is not None:
        event.fields["task"] = str(stripped.task)
    if stripped.rank_from_label:
        event.fields["rank_from"] = "label"
    return event


def _keep(state: _FileState, event: Event, key: tuple[object, ...]) -> None:
    if event.kind not in _FACT_KINDS:  # a fact about the run (`--nnodes=2`) explains no failure
        state.last_event_line = event.line
    existing = state.keyed.get(key)
    if existing is None:
        if len(state.keyed) < MAX_EVENTS_PER_FILE:
            state.keyed[key] = event
        return
    existing.count += 1
    if existing.count == 2 and event.kind in _KEEP_SECOND:
        event.fields[AGAIN] = "1"
        state.keyed[(*key, AGAIN)] = event
    if event.kind == "progress":
        if APART in existing.fields:
            return  # two bars steps apart: that pair is what the bars show
        _note_apart(existing, event)
        if elapsed_seconds(event.fields) < elapsed_seconds(existing.fields):
            return  # a bar is kept at its longest-running state, not its last redraw
    if event.kind in _KEEP_LATEST:
        existing.line, existing.text, existing.fields, existing.stamp, existing.offset = (
            event.line,
            event.text,
            event.fields,
            event.stamp,
            event.offset,
        )


def _note_apart(kept: Event, new: Event) -> None:
    """Bars one key folds together (a console paste's unprefixed bars) that stood steps apart at the
    same moment: each names the other, so whichever is kept is quoted with the other."""
    apart = bars_apart(kept.fields, new.fields)
    if apart is not None:
        for bar, other in ((kept, new), (new, kept)):
            bar.fields[APART] = f"{apart[0]}/{apart[1]}"
            bar.fields[FRAME_LINE], bar.fields[FRAME] = str(other.line), other.text


def _stamp(stripped: Stripped, fields: dict[str, str]) -> str | None:
    explicit = fields.get("time")
    if explicit and len(explicit) >= 19 and explicit[:4].isdigit():
        return explicit[:10] + "T" + explicit[11:19]
    return stripped.stamp


def _short_host(host: str | None) -> str | None:
    """NCCL prints gethostname() cut at the first dot; torchrun prints the FQDN. Use NCCL's form."""
    if not host:
        return None
    return host if host.replace(".", "").isdigit() else host.split(".", 1)[0]


def _note_failure_field(state: _FileState, fields: dict[str, str]) -> None:
    name, value = fields["field"], fields["value"]
    if name == "time":
        state.failure_block = {}
    state.failure_block[name] = value
    if fields.get("local_rank"):
        state.failure_block["local_rank"] = fields["local_rank"]


def _attach_failure_block(state: _FileState, event: Event) -> None:
    """torchrun's ChildFailedError names rank, host and time on the lines before `exitcode`, and
    the failure listed under "Root Cause (first observed failure)" is where the job's end began."""
    block = state.failure_block
    if "block_code" not in event.fields and "signal" not in event.fields:
        return
    if block.get("rank", "").isdigit():
        event.rank = int(block["rank"])
    event.node = event.node or _short_host(block.get("host"))
    if state.failure_section == "Root Cause":
        event.fields["first_failure"] = "1"
    if event.node:
        state.scan.hosts.add(event.node)
    pid = event.fields.get("block_pid")
    if event.rank is not None and event.node:
        state.scan.rank_hosts.setdefault(event.rank, event.node)
        if pid:
            state.scan.pid_ranks.setdefault((event.node, int(pid)), event.rank)  # joins a kernel OOM kill
    if "time" in block:
        event.fields["time"] = block["time"]
        event.stamp = _stamp(Stripped(""), {"time": block["time"]})
    if "local_rank" in block:
        event.fields["local_rank"] = block["local_rank"]


def _settle_labels(state: _FileState) -> None:
    """srun/mpirun labels are ranks unless some line of the file showed them numbering launchers: then
    a line with only a label belongs to no known rank (the message may still name one)."""
    scan = state.scan
    if not state.labels_are_launchers:
        for rank, host, pid in state.label_identity:
            scan.ranks.add(rank)
            if host:
                scan.rank_hosts.setdefault(rank, host)
                if pid is not None:
                    scan.pid_ranks.setdefault((host, pid), rank)
        return
    for event in state.keyed.values():
        if event.fields.pop("rank_from", None) == "label":
            event.rank = message_rank(strip(event.text).message)


def _apply_local_ranks(state: _FileState) -> None:
    """A line tagged only `[default3]:` belongs to the global rank other lines of the file give local 3."""
    _learn_local_ranks(state)
    for event in state.keyed.values():
        if event.rank is None and "local_rank" in event.fields:
            event.rank = state.local_to_global.get(_local_key(event))
    for local, host_pid in state.local_pids.items():
        if local in state.local_to_global:
            state.scan.pid_ranks.setdefault(host_pid, state.local_to_global[local])


def _local_key(event: Event) -> tuple[int | None, int]:
    task = event.fields.get("task")
    return (int(task) if task is not None else None, int(event.fields["local_rank"]))


def _learn_local_ranks(state: _FileState) -> None:
    """Local → global ranks from NCCL's world communicator lines, then torchrun's arithmetic.

    torchrun numbers a node's workers contiguously (global = node offset + local): when every known
    pair of one launcher shares one offset, the same offset names the workers that never said who
    they are. A file may hold several launchers (srun --label over torchrun): each has its own.
    """
    worlds = [e for e in state.keyed.values() if e.kind == "comm_rank" and "local_rank" in e.fields]
    widest = max((int(e.fields["nranks"]) for e in worlds), default=0)
    for event in worlds:
        if int(event.fields["nranks"]) == widest:
            state.local_to_global.setdefault(_local_key(event), int(event.fields["comm_rank"]))
    offsets: dict[int | None, set[int]] = {}
    for (task, local), rank in state.local_to_global.items():
        offsets.setdefault(task, set()).add(rank - local)
    keys_seen = {_local_key(e) for e in state.keyed.values() if "local_rank" in e.fields}
    for task, local in keys_seen:
        found = offsets.get(task, set())
        if len(found) == 1:
            state.local_to_global.setdefault((task, local), next(iter(found)) + local)


def _fill_file_level_identity(scan: FileScan) -> None:
    """A file written by one rank (or one host) lends that identity to its unprefixed lines."""
    only_rank = next(iter(scan.ranks)) if len(scan.ranks) == 1 else None
    only_host = next(iter(scan.hosts)) if len(scan.hosts) == 1 else None
    for event in scan.events:
        if event.rank is None and only_rank is not None and event.kind not in ("srun_task", "slurm_cancel"):
            event.rank = only_rank
            event.fields["rank_lent"] = "file"  # not said by the line itself
        if event.node is None and only_host is not None:
            event.node = only_host
    if only_host is not None:
        for rank in scan.ranks:
            scan.rank_hosts.setdefault(rank, only_host)
