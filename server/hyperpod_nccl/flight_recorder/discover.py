"""Which files are Flight Recorder dumps, and whose.

The watchdog writes `<prefix><rank>`: `/tmp/nccl_trace_rank_<N>` unless
`TORCH_NCCL_DEBUG_INFO_TEMP_FILE` (or `TORCH_FR_DUMP_TEMP_FILE`) says otherwise, and with
`TORCH_FR_DUMP_DYNAMIC_FILE_NAME` the name is whatever that variable holds at dump time. So a
dump is recognised by its first bytes (a pickle or a JSON object whose first keys are a dump's),
never by its name alone; the name only gives the rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from hyperpod_nccl.flight_recorder.reader import DumpFile, sniff
from hyperpod_nccl.models import SkippedInput

HEAD_BYTES = 512
# The first keys a dump writes: a pickle starts with version / pg_config, JSON sorts its keys
# (comm_lib_version, entries, …); older formats start with entries.
_DUMP_KEYS = (b"pg_config", b"comm_lib_version", b"entries", b"pg_status", b"version")
_RANK_WORD = re.compile(r"rank[_\-.]?(\d{1,7})", re.IGNORECASE)
_TRAILING_NUMBER = re.compile(r"(\d{1,7})(?:\.(?:json|pkl|pickle|bin))?$", re.IGNORECASE)


def rank_from_name(name: str) -> int | None:
    """`nccl_trace_rank_12` → 12; a dynamic name such as `job7_rank12_1712345678` → 12 too."""
    found = _RANK_WORD.findall(name)
    if found:
        return int(found[-1])
    trailing = _TRAILING_NUMBER.search(name)
    return int(trailing.group(1)) if trailing else None


def is_dump(head: bytes) -> bool:
    """A pickle or a JSON object whose first bytes carry a dump's top-level keys."""
    return sniff(head) is not None and any(key in head[:HEAD_BYTES] for key in _DUMP_KEYS)


def read_head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return b""


def choose_dumps(candidates: Iterable[tuple[Path, str]]) -> tuple[list[DumpFile], list[SkippedInput]]:
    """One dump per rank from (path, source) pairs already known to be dumps: the pickle over the
    JSON of the same rank (it carries the Python frames), then the first by name. Every other
    file is listed as skipped, with the reason."""
    by_rank: dict[int, list[DumpFile]] = {}
    skipped: list[SkippedInput] = []
    unranked: list[DumpFile] = []
    for path, source in candidates:
        dump = DumpFile(path, source, rank_from_name(path.name))
        if dump.rank is None:
            unranked.append(dump)
        else:
            by_rank.setdefault(dump.rank, []).append(dump)
    chosen = []
    for rank, dumps in sorted(by_rank.items()):
        dumps.sort(key=lambda d: (sniff(read_head(d.path)) != "pickle", d.source))
        chosen.append(dumps[0])
        skipped += [
            SkippedInput(
                source=d.source,
                reason=f"a second Flight Recorder dump of rank {rank}: {dumps[0].source} was used",
            )
            for d in dumps[1:]
        ]
    skipped += [
        SkippedInput(
            source=d.source,
            reason="Flight Recorder dump whose file name carries no rank number: "
            "rename it <prefix>_rank_<N> to use it",
        )
        for d in unranked
    ]
    return chosen, skipped
