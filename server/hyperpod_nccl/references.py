"""Index of references/*.md: sections, pointer resolution and section text.

A pointer is `<file>.md § <section>`, where section is a heading's number (`11`, `3.2`) or, for
unnumbered headings, the heading text. Every FAIL/WARN the product emits carries one, and the
test suite proves each resolves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from hyperpod_nccl.models import REFERENCE_POINTER

_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")
_NUMBERED = re.compile(r"^(?:§\s*)?(\d+(?:\.\d+)*|[A-Z](?:\.\d+)*)[.)]?\s+(.+)$")


class UnknownReference(LookupError):
    pass


@dataclass(frozen=True)
class Section:
    file: str
    key: str  # what follows "§" in a pointer
    title: str
    level: int
    start: int  # 0-based line index of the heading
    end: int  # exclusive

    @property
    def pointer(self) -> str:
        return f"{self.file} § {self.key}"


@dataclass(frozen=True)
class ReferenceFile:
    name: str
    title: str
    sections: tuple[Section, ...]
    lines: tuple[str, ...]


def references_root() -> Path:
    """The references folder: bundled inside an installed wheel, or at the top of a checkout."""
    package = Path(__file__).resolve().parent
    bundled = package / "_bundled" / "references"
    return bundled if bundled.is_dir() else package.parents[1] / "references"


def _parse(name: str, text: str) -> ReferenceFile:
    lines = tuple(text.splitlines())
    headings: list[tuple[int, int, str]] = []
    in_code = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        match = None if in_code else _HEADING.match(line)
        if match:
            headings.append((index, len(match.group(1)), match.group(2)))
    title = next((text for _, level, text in headings if level == 1), name)
    sections = []
    for position, (start, level, heading) in enumerate(headings):
        if level == 1:
            continue
        end = next((i for i, lvl, _ in headings[position + 1 :] if lvl <= level), len(lines))
        numbered = _NUMBERED.match(heading)
        key, heading_title = (numbered.group(1), numbered.group(2)) if numbered else (heading, heading)
        sections.append(Section(name, key, heading_title, level, start, end))
    return ReferenceFile(name, title, tuple(sections), lines)


class ReferenceIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._files = {
            path.name: _parse(path.name, path.read_text(encoding="utf-8"))
            for path in sorted(root.glob("*.md"))
        }

    def files(self) -> list[ReferenceFile]:
        return list(self._files.values())

    def file(self, name: str) -> ReferenceFile:
        name = name.removeprefix("references/")
        try:
            return self._files[name]
        except KeyError:
            known = ", ".join(self._files)
            raise UnknownReference(f"no reference file {name!r}; known files: {known}") from None

    def section(self, file: str, key: str) -> Section:
        reference = self.file(file)
        wanted = key.strip().removeprefix("§").strip().rstrip(".").casefold()
        for section in reference.sections:
            if wanted in (section.key.casefold(), section.title.casefold()):
                return section
        raise UnknownReference(
            f"{reference.name} has no section {key!r}; sections: "
            + ", ".join(section.key for section in reference.sections)
        )

    def resolve(self, pointer: str) -> Section:
        match = REFERENCE_POINTER.match(pointer.removeprefix("references/"))
        if not match:
            raise UnknownReference(f"{pointer!r} is not a pointer of the form '<file>.md § <section>'")
        return self.section(match.group("file"), match.group("section"))

    def text(self, section: Section) -> str:
        return "\n".join(self._files[section.file].lines[section.start : section.end]).strip() + "\n"


@cache
def default_index() -> ReferenceIndex:
    return ReferenceIndex(references_root())


# --- Service functions shared by the CLI and the MCP tools -----------------------------------

_SECTION_TEXT_BUDGET = 12_000  # characters: a section, never a whole file, fits an LLM's context


class SectionInfo(BaseModel):
    pointer: str = Field(description="`<file>.md § <section>`, as findings print it.")
    title: str


class ReferenceFileInfo(BaseModel):
    file: str
    title: str
    sections: list[SectionInfo]


class ReferenceList(BaseModel):
    files: list[ReferenceFileInfo]


class ReferenceSection(BaseModel):
    pointer: str
    title: str
    text: str = Field(description="The section's markdown, including its subsections (this part of it).")
    truncated: bool = Field(description="True when more of the section follows: read the next part.")
    part: int = Field(default=1, description="Which part of the section this is, from 1.")
    parts: int = Field(default=1, description="How many parts the section has at the output budget.")


def list_reference_files(index: ReferenceIndex | None = None) -> ReferenceList:
    index = index or default_index()
    return ReferenceList(
        files=[
            ReferenceFileInfo(
                file=reference.name,
                title=reference.title,
                sections=[SectionInfo(pointer=s.pointer, title=s.title) for s in reference.sections],
            )
            for reference in index.files()
        ]
    )


def read_reference_section(
    file: str, section: str, index: ReferenceIndex | None = None, part: int = 1
) -> ReferenceSection:
    """One part of a section: a long section comes in parts cut between paragraphs, each within the
    output budget, so every line of it can be read."""
    index = index or default_index()
    found = index.section(file, section)
    parts = _parts(index.text(found))
    if not 1 <= part <= len(parts):
        raise UnknownReference(f"{found.pointer} has {len(parts)} part(s); part {part} does not exist")
    return ReferenceSection(
        pointer=found.pointer,
        title=found.title,
        text=parts[part - 1],
        truncated=part < len(parts),
        part=part,
        parts=len(parts),
    )


def _parts(text: str) -> list[str]:
    """The text in runs of whole paragraphs within the budget; a paragraph longer than it is cut."""
    parts: list[str] = []
    current = ""
    for paragraph in text.split("\n\n"):
        while len(paragraph) > _SECTION_TEXT_BUDGET:
            if current:
                parts.append(current)
                current = ""
            parts.append(paragraph[:_SECTION_TEXT_BUDGET])
            paragraph = paragraph[_SECTION_TEXT_BUDGET:]
        joined = f"{current}\n\n{paragraph}" if current else paragraph
        if len(joined) > _SECTION_TEXT_BUDGET:
            parts.append(current)
            current = paragraph
        else:
            current = joined
    parts.append(current)
    return parts
