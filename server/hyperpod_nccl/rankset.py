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


def expand(text: str) -> list[int]:
    ranks: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        ranks.extend(range(int(low), int(high or low) + 1))
    return ranks
