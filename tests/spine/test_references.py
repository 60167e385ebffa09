"""The reference index, and the guarantee that every pointer the code can emit resolves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hyperpod_nccl
from hyperpod_nccl.models import REFERENCE_POINTER
from hyperpod_nccl.references import ReferenceIndex, UnknownReference, default_index, read_reference_section

PACKAGE = Path(hyperpod_nccl.__file__).parent


def test_numbered_and_unnumbered_headings_become_sections(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(
        "# Guide\n\n## 1. Timeouts\ntext\n### 1.2 Straggler\nmore\n## Glossary\nwords\n"
        "```\n## not a heading inside code\n```\n"
    )
    index = ReferenceIndex(tmp_path)
    assert [s.key for s in index.file("guide.md").sections] == ["1", "1.2", "Glossary"]
    assert index.resolve("guide.md § 1.2").title == "Straggler"
    assert index.resolve("references/guide.md § glossary").key == "Glossary"
    section_one = index.text(index.resolve("guide.md § 1"))
    assert "Straggler" in section_one  # a section includes its subsections
    assert "Glossary" not in section_one


def test_unknown_file_and_section_name_what_exists(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n## 1. Timeouts\n")
    index = ReferenceIndex(tmp_path)
    with pytest.raises(UnknownReference, match=r"known files: guide\.md"):
        index.resolve("other.md § 1")
    with pytest.raises(UnknownReference, match="sections: 1"):
        index.resolve("guide.md § 99")


def pointer_literals(source: str) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and REFERENCE_POINTER.match(node.value)
    ]


def test_the_scan_finds_pointers_wherever_they_are_written() -> None:
    source = 'X = "debugging-guide.md § 1"\ndef f():\n    return Finding(reference="operations.md § 8")\n'
    assert pointer_literals(source) == [(1, "debugging-guide.md § 1"), (3, "operations.md § 8")]


def test_the_package_emits_pointers_as_literals_only() -> None:
    """Pointers built at run time could not be checked here, so none may be built."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.JoinedStr):
                continue
            for part, following in zip(node.values, node.values[1:], strict=False):
                builds_section = isinstance(following, ast.FormattedValue)
                if isinstance(part, ast.Constant) and part.value.endswith(".md § ") and builds_section:
                    raise AssertionError(f"{path}:{node.lineno} builds a reference pointer at run time")


def test_every_pointer_the_code_can_emit_resolves() -> None:
    index = default_index()
    unresolved = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, pointer in pointer_literals(path.read_text(encoding="utf-8")):
            try:
                index.resolve(pointer)
            except UnknownReference as error:
                unresolved.append(f"{path.relative_to(PACKAGE)}:{line}: {error}")
    assert not unresolved, "\n".join(unresolved)


def test_a_long_section_comes_in_parts_that_hold_all_of_it(tmp_path: Path) -> None:
    """Every line of a section an LLM is told to read can be read: parts cut between paragraphs."""
    paragraphs = [f"Paragraph {n}: " + "word " * 700 for n in range(8)]  # ~3.5 KB each, 28 KB in all
    (tmp_path / "guide.md").write_text("# Guide\n\n## 1. Long\n" + "\n\n".join(paragraphs) + "\n")
    index = ReferenceIndex(tmp_path)
    first = read_reference_section("guide.md", "1", index)
    assert first.parts > 1 and first.truncated and first.part == 1
    parts = [read_reference_section("guide.md", "1", index, part=n) for n in range(1, first.parts + 1)]
    assert all(len(p.text) <= 12_000 for p in parts) and not parts[-1].truncated
    assert "\n\n".join(p.text for p in parts) == index.text(index.resolve("guide.md § 1"))
    with pytest.raises(UnknownReference, match="part"):
        read_reference_section("guide.md", "1", index, part=first.parts + 1)
