"""Split a probe's output into its sections, keeping 1-based line numbers within each."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hyperpod_nccl.probes.catalog import SECTION_MARKER

_PREFIX, _SUFFIX = SECTION_MARKER.split("{name}")
_MARKER = re.compile(re.escape(_PREFIX) + r"(?P<name>[A-Za-z0-9_.-]+)" + re.escape(_SUFFIX))
NOT_INSTALLED = "not installed:"


@dataclass(frozen=True)
class Line:
    """One line of probe output, with the section it belongs to and its number in that section."""

    section: str
    number: int
    text: str


@dataclass(frozen=True)
class Section:
    name: str
    lines: tuple[str, ...]

    def numbered(self) -> Iterator[Line]:
        for number, text in enumerate(self.lines, start=1):
            yield Line(self.name, number, text)

    @property
    def not_installed(self) -> bool:
        return any(line.startswith(NOT_INSTALLED) for line in self.lines)

    def first(self, pattern: re.Pattern[str]) -> tuple[re.Match[str], Line] | None:
        for line in self.numbered():
            match = pattern.search(line.text)
            if match:
                return match, line
        return None


def split_sections(output: str) -> dict[str, Section]:
    """Sections by name. Text before the first marker (session banners) is dropped; a section
    cut short by a timeout keeps the lines that arrived."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in output.splitlines():
        line = raw.rstrip("\r")
        match = _MARKER.fullmatch(line.strip())
        if match:
            current = sections.setdefault(match.group("name"), [])
        elif current is not None:
            current.append(line)
    return {name: Section(name, tuple(lines)) for name, lines in sections.items()}


def empty(name: str) -> Section:
    return Section(name, ())
