"""Compact rank lists: `0-76,78-1023` instead of a thousand integers."""

from __future__ import annotations

from collections.abc import Iterable


def compress(ranks: Iterable[int]) -> str:
    ordered = sorted(set(ranks))
    if not ordered:
        return ""
    runs: list[str] = []
    start = previous = ordered[0]
    for rank in ordered[1:]:
        if rank != previous + 1:
            runs.append(str(start) if start == previous else f"{start}-{previous}")
            start = rank
        previous = rank
    runs.append(str(start) if start == previous else f"{start}-{previous}")
    return ",".join(runs)


# No job has more ranks than this (the largest run today is ~100,000 GPUs): a world size, a rank or a
# rank list past it is a garbled or crafted line, and expanding it would exhaust memory.
MAX_RANKS = 1 << 20


def expand(text: str) -> list[int]:
    """`0-6,8` → [0, …, 6, 8]; ValueError when it is not a rank list, or names more than MAX_RANKS."""
    ranks: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if not 0 <= first <= last < MAX_RANKS or len(ranks) + last - first >= MAX_RANKS:
            raise ValueError(f"not a rank list of at most {MAX_RANKS} ranks: {part}")
        ranks.extend(range(first, last + 1))
    return ranks
