"""SKILL.md files are valid Agent Skills, every `<file>.md § <section>` they or the references
mention resolves, and every reference section can be reached from a skill or a finding."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

import hyperpod_nccl
from hyperpod_nccl.models import REFERENCE_POINTER
from hyperpod_nccl.references import ReferenceIndex, Section, UnknownReference, default_index

ROOT = Path(__file__).parents[2]
PACKAGE = Path(hyperpod_nccl.__file__).parent
SKILL_FILES = [ROOT / "SKILL.md", *sorted((ROOT / "skills").glob("*/SKILL.md"))]
_FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# `debugging-guide.md § 11`, `references/operations.md` (no section: the whole file), or inside
# a reference file a bare `§ 3`, which means that file's section 3.
_FILE_MENTION = re.compile(r"\b([a-z0-9][a-z0-9-]*\.md)`?(?:\s*§\s*(\d+(?:\.\d+)*))?")
_BARE_SECTION = re.compile(r"(?<!\.md )(?<!\.md` )(?<!\.md)§\s*(\d+(?:\.\d+)*)")


def frontmatter(path: Path) -> dict:
    match = _FRONTMATTER.match(path.read_text(encoding="utf-8"))
    assert match, f"{path.relative_to(ROOT)} does not start with a --- frontmatter block"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict), f"{path.relative_to(ROOT)}: frontmatter is not a mapping"
    return data


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_skill_frontmatter_has_a_valid_name_and_a_description_of_when_to_use_it(path: Path) -> None:
    data = frontmatter(path)
    name, description = data.get("name"), data.get("description")
    assert isinstance(name, str) and _NAME.match(name) and len(name) <= 64, name
    if path.parent != ROOT:
        assert name == path.parent.name, "a sibling skill is named after its folder"
    assert isinstance(description, str) and 0 < len(description) <= 1024
    assert re.search(r"\buse (it|this)\b|\bwhen\b", description, re.I), "say when to use it"
    assert re.search(r"\bnot for\b|\bdo(n't| not) use\b", description, re.I), "say when not to use it"


def test_there_are_sibling_skills_for_log_triage_and_the_escalation_bundle() -> None:
    assert {path.parent.name for path in SKILL_FILES[1:]} >= {"log-triage", "escalation-bundle"}


def mentions(text: str, own_file: str | None, index: ReferenceIndex) -> tuple[set[str], list[str]]:
    """(what the text points at: `file` or `file § key`, the pointers that do not resolve)."""
    known = {reference.name for reference in index.files()}
    targets: set[str] = set()
    broken: list[str] = []
    found = [(m.group(1), m.group(2)) for m in _FILE_MENTION.finditer(text)]
    if own_file:
        found += [(own_file, key) for key in _BARE_SECTION.findall(text)]
    for file, key in found:
        if file not in known:
            if key:
                broken.append(f"{file} § {key}")
            continue
        if key is None:
            targets.add(file)
            continue
        try:
            targets.add(index.section(file, key).pointer)
        except UnknownReference:
            broken.append(f"{file} § {key}")
    return targets, broken


def _code_pointers() -> set[str]:
    pointers = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and REFERENCE_POINTER.match(node.value)
            ):
                pointers.add(node.value)
    return pointers


def _intro(index: ReferenceIndex, file: str) -> str:
    reference = index.file(file)
    first = reference.sections[0].start if reference.sections else len(reference.lines)
    return "\n".join(reference.lines[:first])


def test_every_pointer_written_in_a_skill_or_a_reference_resolves() -> None:
    index = default_index()
    broken = []
    for path in SKILL_FILES:
        broken += [f"{path.relative_to(ROOT)}: {b}" for b in mentions(path.read_text(), None, index)[1]]
    for reference in index.files():
        text = "\n".join(reference.lines)
        broken += [f"references/{reference.name}: {b}" for b in mentions(text, reference.name, index)[1]]
    assert not broken, "\n".join(broken)


def reachable_sections(index: ReferenceIndex) -> set[str]:
    """Walk from the skills and the code's finding pointers through every section and index table."""
    frontier = set(_code_pointers())
    for path in SKILL_FILES:
        frontier |= mentions(path.read_text(encoding="utf-8"), None, index)[0]
    seen: set[str] = set()
    while frontier:
        target = frontier.pop()
        if target in seen:
            continue
        seen.add(target)
        if " § " in target:
            section = index.resolve(target)
            # Whoever reads a section can open its file, whose index table lists every section.
            frontier |= {*mentions(index.text(section), section.file, index)[0], section.file}
        else:  # a whole file: its introduction and index table
            frontier |= mentions(_intro(index, target), target, index)[0]
    return {target for target in seen if " § " in target}


def _parent_reached(section: Section, sections: list[Section], reached: set[str]) -> bool:
    # A subsection is part of its parent's text: reading the parent shows it.
    parents = [s for s in sections if s.level < section.level and s.start < section.start < s.end]
    return any(parent.pointer in reached for parent in parents)


def test_every_reference_section_is_reachable_from_a_skill_or_a_finding() -> None:
    index = default_index()
    reached = reachable_sections(index)
    orphans = [
        section.pointer
        for reference in index.files()
        for section in reference.sections
        if section.pointer not in reached and not _parent_reached(section, list(reference.sections), reached)
    ]
    assert not orphans, "no skill, finding or section leads to: " + ", ".join(orphans)
