"""Input discovery: every file found once, every unusable entry skipped with its reason."""

from __future__ import annotations

import os
from pathlib import Path

from hyperpod_nccl.triage.discover import discover, unusable_reason


def test_directories_are_walked_recursively_and_named_relative_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "node-logs" / "gpu-1").mkdir(parents=True)
    (tmp_path / "error-1-0.out").write_text("x\n")
    (tmp_path / "node-logs" / "gpu-1" / "kern.log").write_text("y\n")
    found = discover([tmp_path])
    assert [f.source for f in found.files] == ["error-1-0.out", "node-logs/gpu-1/kern.log"]
    assert found.skipped == []


def test_a_directory_symlink_loop_is_walked_once_and_reported(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x\n")
    (tmp_path / "again").symlink_to(".")
    found = discover([tmp_path])
    assert [f.source for f in found.files] == ["a.log"]
    assert [(s.source, s.reason) for s in found.skipped] == [
        ("again", "symlink loop: directory already visited")
    ]


def test_dangling_and_looping_file_symlinks_empty_files_and_fifos_are_skipped_with_reasons(
    tmp_path: Path,
) -> None:
    (tmp_path / "dangling.log").symlink_to("/nonexistent/rank-3.log")
    (tmp_path / "loop-a.log").symlink_to("loop-b.log")
    (tmp_path / "loop-b.log").symlink_to("loop-a.log")
    (tmp_path / "empty.log").write_text("")
    os.mkfifo(tmp_path / "pipe.log")
    reasons = {s.source: s.reason for s in discover([tmp_path]).skipped}
    assert reasons["dangling.log"].startswith("dangling symlink")
    assert reasons["loop-a.log"] == "symlink loop" and reasons["loop-b.log"] == "symlink loop"
    assert reasons["empty.log"] == "empty file"
    assert reasons["pipe.log"] == "not a regular file"


def test_only_a_missing_path_or_an_empty_directory_makes_the_arguments_unusable(tmp_path: Path) -> None:
    assert "no such file" in (unusable_reason([tmp_path / "nope"]) or "")
    assert "empty directory" in (unusable_reason([tmp_path]) or "")
    (tmp_path / "rank-0.log").write_text("x\n")
    (tmp_path / "dangling.log").symlink_to("/nonexistent")
    assert unusable_reason([tmp_path]) is None


def test_storage_archives_are_recognised(tmp_path: Path) -> None:
    (tmp_path / "ais-target-1.tar.gz").write_bytes(b"\x1f\x8b")
    (storage,) = discover([], [tmp_path]).files
    assert storage.storage and storage.archive
