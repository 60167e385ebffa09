"""What the culprit was doing (issue 14 item 3): for each culprit rank, its last training step or
progress line and the few other non-NCCL lines it wrote after that step and before its first
abnormal line (a warning, a print, the traceback that led to it) — or that it wrote nothing, a
silent stall — next to the same for one rank that waited.

The scan reads only the lines its prefilter routes, so ordinary output (step lines, prints) is
never parsed. Instead, each event remembers where its line starts in the file, and here, for at
most a few ranks, a bounded window of bytes just before that line is read again (`WindowReader`):
a few hundred KiB, never the file. Lines of other ranks in an interleaved file are told apart by
the same prefixes the anchor line carries (`[rank43]:`, srun's `43: `, torchrun's `[default3]:`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hyperpod_nccl.models import RankActivity, RankLine
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import meaning_of
from hyperpod_nccl.triage.findings import clip
from hyperpod_nccl.triage.lines import decode
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.prefixes import Stripped, strip

# (source, offset, size) → the `size` bytes before `offset` in that file, or None when unreadable.
WindowReader = Callable[[str, int, int], bytes | None]

WINDOW_BYTES = 256 * 1024
MAX_CULPRITS = 2
LINES_BEFORE = 3
LINE_CHARS = 160
_STATE_KINDS = frozenset({"wd_timeout", "wd_status", "dump_first", "dump_observed", "dump_received"})
_CRASH_KINDS = frozenset({"traceback", "exception", "crash"})
_PROGRESS = re.compile(
    r"(?i)\b(?:global[_ ])?(?:step|iter(?:ation)?|epoch|batch)\b\s*[=:#]?\s*\[?\d|\d{1,3}%\|"
)


def rank_activity(incident: Incident, culprits: list[int], reader: WindowReader | None) -> list[RankActivity]:
    """The culprits (at most two), then the first rank that waited for them."""
    if reader is None:
        return []
    shown = culprits[:MAX_CULPRITS]
    found = [_activity(rank, "culprit", _culprit_anchor(incident, rank), incident, reader) for rank in shown]
    waiting = next((r for r in incident.verdict.waiting if r not in culprits), None)
    if waiting is not None:
        state = incident.states.get(waiting)
        anchor = (state.timeout_event or state.decisive_event) if state else None
        found.append(_activity(waiting, "waiting", anchor, incident, reader))
    return [activity for activity in found if activity is not None]


def _culprit_anchor(incident: Incident, rank: int) -> Event | None:
    """The rank's first line that says something went wrong, in its own log."""
    node_logs = incident.node_log_sources
    own = [
        e
        for e in incident.index.by_rank.get(rank, [])
        if e.offset >= 0 and e.source not in node_logs and _abnormal(e)
    ]
    return incident.first(own)


def _abnormal(event: Event) -> bool:
    if event.kind in _STATE_KINDS or event.kind in _CRASH_KINDS:
        return True
    meaning = meaning_of(event)
    return meaning is not None and meaning.category is not None


def _activity(
    rank: int, role: str, anchor: Event | None, incident: Incident, reader: WindowReader
) -> RankActivity | None:
    if anchor is None or anchor.offset < 0:
        return None
    until = f"line {anchor.line} ({anchor.kind.replace('_', ' ')})"
    node = incident.node_of(rank)
    base = RankActivity(rank=rank, node=node, role=role, source=anchor.source, until=until)  # type: ignore[arg-type]
    window = reader(anchor.source, anchor.offset, WINDOW_BYTES)
    if window is None:
        return base.model_copy(update={"note": "the log could not be read again at that line"})
    lines = _lines_before(window, anchor, starts_file=anchor.offset <= WINDOW_BYTES)
    single = _single_rank_file(incident, anchor.source)
    mine = _belongs_to(strip(anchor.text), rank, single)
    progress: RankLine | None = None
    before: list[RankLine] = []
    unclaimed: list[RankLine] = []  # bare lines of a lone console: any rank's
    for number, text in reversed(lines):
        stripped = strip(text)
        if not stripped.message.strip() or "NCCL" in stripped.message:
            continue
        if not mine(stripped):
            if not single and _bare(stripped) and len(unclaimed) < LINES_BEFORE:
                unclaimed.append(RankLine(line=number, text=clip(text.strip(), LINE_CHARS)))
            continue
        quoted = RankLine(
            line=number,
            text=clip(text.strip(), LINE_CHARS),
            time=incident.clock.iso(incident.clock.at(stripped.stamp)),
        )
        if _PROGRESS.search(stripped.message):
            # Its last step still worked: what it wrote before that is not what stopped it.
            progress = quoted
            break
        if len(before) < LINES_BEFORE:
            before.append(quoted)
    note = None
    if progress and not before:
        note = "nothing of its own after its last step: it went silent, with no warning, exception or print"
    elif not progress and not before and unclaimed:
        shown = "; ".join(f"line {q.line}: {q.text}" for q in unclaimed[::-1])
        note = (
            "no line of its own before it; lines without a rank prefix came before it, which may be "
            f"another rank's (the one the others waited for): {shown}"
        )
    elif not progress and not before:
        note = "no line of its own before it in the part of the log read"
    return base.model_copy(update={"last_progress": progress, "before": before[::-1], "note": note})


def _bare(line: Stripped) -> bool:
    return line.rank is None and line.local_rank is None and line.label is None


def _lines_before(window: bytes, anchor: Event, *, starts_file: bool) -> list[tuple[int, str]]:
    raw = window.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()  # the window ends at the anchor line's start: its last newline ends the line before
    if not starts_file and raw:
        raw.pop(0)  # a line cut by the window's start
    first = anchor.line - len(raw)
    return [(first + index, decode(line)) for index, line in enumerate(raw) if first + index >= 1]


def _single_rank_file(incident: Incident, source: str) -> bool:
    """A file whose every line is its one rank's. A lone console where a launcher prefixed one rank's
    lines and left others bare is not: those may be any rank's (another's progress, stdout), so only
    the prefixed lines count. Beside other one-rank files, it is that rank's own file."""
    scan = next((s for s in incident.scans if s.source == source), None)
    if scan is None or len(scan.ranks) != 1:
        return False
    per_rank_files = sum(len(other.ranks) == 1 for other in incident.scans if not other.storage) > 1
    return per_rank_files or not scan.mixes_prefixed_and_bare()


def _belongs_to(anchor: Stripped, rank: int, single: bool) -> Callable[[Stripped], bool]:
    """Lines of the same rank as the anchor line: in a one-rank file every line; else the same
    global rank, or the same torchrun local rank under the same launcher."""
    if single:
        return lambda _: True

    def mine(line: Stripped) -> bool:
        if line.rank is not None and not line.rank_from_label:
            return line.rank == rank
        if anchor.local_rank is not None:
            return line.local_rank == anchor.local_rank and line.task == anchor.task
        return line.rank == rank

    return mine
