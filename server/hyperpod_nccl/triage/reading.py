"""What was read, what could not be, and whose logs that leaves incomplete (issue 16 item 5).

A rank whose file was skipped (binary, unreadable) or only partly read (a gzip stream cut short, a
read error) is not "absent": the triage does not know what it did. Such ranks are never made
culprits for their silence, and a verdict that rests on silence says it is less sure and why.

Which ranks a damaged file held is learned, most direct first, from the ranks its readable part
showed, a rank number in its name (`rank-5.log`), a host in its name (`gpu-b.log`: every rank of
that node), or its readable siblings (`train-77-4.out` beside `train-77-3.out`, which held rank 3).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hyperpod_nccl.models import SkippedInput
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.events import FileScan
from hyperpod_nccl.triage.prefixes import rank_in_file_name
from hyperpod_nccl.triage.summary import Topology

_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")
NODE_LOG_NAMES = (".dmesg", "kern.log", "dmesg.log", "syslog", "messages")


@dataclass
class Reading:
    """The input as read: counts, what was skipped, and the ranks whose logs are incomplete."""

    files_read: int = 0
    lines_read: int = 0
    skipped: list[SkippedInput] = field(default_factory=list)
    unread_ranks: dict[int, str] = field(default_factory=dict)  # rank → which file, and why
    unattributed_ranks: set[int] = field(default_factory=set)  # present only through unprefixed lines

    def caveat(self) -> str | None:
        """One sentence on what the triage could not see, or None when it saw everything."""
        if not self.unread_ranks:
            return None
        ranks = sorted(self.unread_ranks)
        why = sorted(set(self.unread_ranks.values()))
        shown = "; ".join(why[:2]) + (f"; +{len(why) - 2} more" if len(why) > 2 else "")
        plural = "s" if len(ranks) > 1 else ""
        return f"logs of rank{plural} {compress(ranks)} could not be read wholly ({shown})"


def assess_reading(
    scans: list[FileScan], skipped: list[SkippedInput], topology: Topology, seen: set[int]
) -> Reading:
    reading = Reading(
        files_read=sum(1 for scan in scans if scan.lines_read),
        lines_read=sum(scan.lines_read for scan in scans),
        skipped=skipped + [SkippedInput(source=s.source, reason=p) for s in scans for p in s.problems],
    )
    siblings = _sibling_ranks(scans)
    damaged = [(s.source, s.damage, set(s.ranks)) for s in scans if s.damage and not s.storage]
    damaged += [(s.source, s.reason, set()) for s in skipped]
    for source, reason, shown in damaged:
        ranks = shown or _ranks_by_name(source, topology) or siblings(source)
        for rank in ranks:
            reading.unread_ranks.setdefault(rank, f"{source}: {reason}")
    reading.unattributed_ranks = _unattributed(scans, topology, seen)
    return reading


def _ranks_by_name(source: str, topology: Topology) -> set[int]:
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    if (named := rank_in_file_name(name)) is not None:
        return {named}
    if name.endswith(NODE_LOG_NAMES):
        return set()  # a node's kernel log holds no rank's output
    stem = name.split(".", 1)[0]
    hosts = [node for node in topology.nodes if node == stem or node in name]
    return {rank for rank, node in topology.rank_node.items() if node in hosts}


def _template(source: str) -> tuple[str, int] | None:
    """`logs/train-77-4.out` → (`logs/train-77-{}.out`, 4)."""
    found = _LAST_NUMBER.search(source)
    if not found:
        return None
    return source[: found.start()] + "{}" + source[found.end() :], int(found.group(1))


def _sibling_ranks(scans: list[FileScan]) -> Callable[[str], set[int]]:
    """Files named alike number their ranks alike: one rank per number, or one node's block."""
    by_template: dict[str, dict[int, set[int]]] = {}
    for scan in scans:
        named = _template(scan.source)
        if named and scan.ranks and not scan.damage:
            by_template.setdefault(named[0], {})[named[1]] = set(scan.ranks)

    def ranks_of(source: str) -> set[int]:
        named = _template(source)
        known = by_template.get(named[0], {}) if named else {}
        if not named or len(known) < 2:
            return set()
        number = named[1]
        if all(ranks == {n} for n, ranks in known.items()):
            return {number}
        sizes = {len(ranks) for ranks in known.values()}
        if len(sizes) == 1:
            size = sizes.pop()
            if all(ranks == set(range(n * size, n * size + size)) for n, ranks in known.items()):
                return set(range(number * size, number * size + size))
        return set()

    return ranks_of


def _unattributed(scans: list[FileScan], topology: Topology, seen: set[int]) -> set[int]:
    """A console paste holds several ranks' prefixed lines and one rank's unprefixed ones (progress
    bars, tokenizer output): when exactly one rank of the job left no prefixed line and such a file
    has unprefixed lines, that rank is present, not missing."""
    missing = set(topology.world) - seen
    if len(missing) != 1:
        return set()
    pasted = any(len(scan.ranks) >= 2 and scan.unprefixed_lines for scan in scans if not scan.storage)
    return missing if pasted else set()
