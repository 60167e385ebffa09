"""What a scan of one file yields: matched events, per-file facts, and what could not be read.

Plain dataclasses (not pydantic) because they cross process boundaries by pickling and a
1,024-rank scan creates tens of thousands of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# An event's fields naming the traceback frame that decided what it means (shared-memory code above
# an ENOSPC), quoted with it.
FRAME_LINE, FRAME = "frame_line", "frame"
# The field marking the second line of a kind the scanner keeps twice (a rank announced again).
AGAIN = "again"
# A progress bar's field naming two steps of its loop other bars (unprefixed, so folded into it)
# stood at at the same moment: `low/high`.
APART = "apart"


@dataclass(slots=True)
class Event:
    """One matched log line, first of its kind for its rank (or file) unless `count` says more."""

    kind: str
    source: str
    line: int
    text: str
    rank: int | None = None
    node: str | None = None
    stamp: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    count: int = 1
    offset: int = -1  # byte offset of the line in its (decompressed) file; -1 when not known


@dataclass(slots=True)
class FileScan:
    """Everything learned from one input file."""

    source: str
    storage: bool = False
    lines_read: int = 0
    events: list[Event] = field(default_factory=list)
    # Facts that hold for the whole file or map ranks to hosts.
    hosts: set[str] = field(default_factory=set)
    rank_hosts: dict[int, str] = field(default_factory=dict)
    pid_ranks: dict[tuple[str, int], int] = field(default_factory=dict)  # (host, pid) → rank
    ranks: set[int] = field(default_factory=set)
    dated_years: dict[int, int] = field(default_factory=dict)
    first_dated: str | None = None  # earliest full `YYYY-MM-DDTHH:MM:SS` stamp read
    first_stamp: str | None = None  # the first time a line carries, in file order (year or not)
    last_stamp: str | None = None  # the last time a line carries, the file's tail included
    utc_stamps: int = 0  # times whose format says they are UTC (`kubectl logs --timestamps`)
    zoneless_stamps: int = 0  # times that carry no zone
    since_boot_lines: int = 0  # kernel lines stamped in seconds since boot: no time of day to place them
    frameworks: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    damage: str | None = None  # why the file was not read to its end (binary, cut short, read error)
    unprefixed_lines: int = 0  # lines read that no launcher or rank prefix attributes to a rank
    launcher_ranked_lines: int = 0  # lines a launcher's per-line prefix attributes to a rank

    def mixes_prefixed_and_bare(self) -> bool:
        """A launcher prefixed some lines with a rank and left others bare: a console, or a rank's own
        file whose bare lines came from outside the prefixing (NCCL's C++ output, stdout)."""
        return bool(self.launcher_ranked_lines and self.unprefixed_lines)
