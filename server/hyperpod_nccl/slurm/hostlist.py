"""Slurm host lists (`ip-10-1-2-[3-5,9],n1`) and durations (`1-02:03:04`), as Slurm prints them."""

from __future__ import annotations

import re

_RANGE_GROUP = re.compile(r"\[([^\]]+)\]")
_MAX_EXPANDED = 10_000  # a node list is never larger than a cluster; refuse pathological ranges


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current] if current else parts


def _expand_one(name: str) -> list[str]:
    match = _RANGE_GROUP.search(name)
    if not match:
        return [name]
    head, tail = name[: match.start()], name[match.end() :]
    names: list[str] = []
    for item in match.group(1).split(","):
        low, _, high = item.partition("-")
        width = len(low)
        for number in range(int(low), int(high or low) + 1):
            names.extend(_expand_one(f"{head}{number:0{width}d}{tail}"))
            if len(names) > _MAX_EXPANDED:
                raise ValueError(f"host list {name!r} expands to more than {_MAX_EXPANDED} names")
    return names


def expand_hostlist(text: str | None) -> list[str]:
    """`n[1-3],gpu-[08-09]` → `[n1, n2, n3, gpu-08, gpu-09]`; `(null)`/`None`/empty → []."""
    text = (text or "").strip()
    if text in ("", "(null)", "None", "N/A"):
        return []
    try:
        return [name for part in _split_top_level(text) for name in _expand_one(part.strip()) if name]
    except ValueError:
        return [text]


def duration_seconds(text: str | None) -> int | None:
    """Slurm's `[days-]hours:minutes:seconds`, `minutes:seconds` or `minutes`; None if unlimited."""
    text = (text or "").strip()
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not match:
        return None
    days, first, second, third = match.groups()
    if third is not None:
        hours, minutes, seconds = int(first), int(second), int(third)
    elif second is not None:
        hours, minutes, seconds = (int(first), int(second), 0) if days else (0, int(first), int(second))
    else:
        hours, minutes, seconds = (int(first), 0, 0) if days else (0, int(first), 0)
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds
