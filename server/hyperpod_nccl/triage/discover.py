"""Walk the inputs: directories recursively, plain files, `.gz`, storage `.tar.gz` archives.

Whatever cannot be used (a symlink loop, a dangling link, an unreadable file, a FIFO) becomes a
`SkippedInput` with the reason; nothing is silently dropped and nothing here raises for a bad
entry. Only an unusable *argument* (a path that does not exist) is the caller's error.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hyperpod_nccl.models import SkippedInput

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


@dataclass(frozen=True)
class InputFile:
    path: Path
    source: str  # the name evidence uses: the path relative to the directory the user gave
    storage: bool
    size: int

    @property
    def archive(self) -> bool:
        return self.path.name.endswith(_ARCHIVE_SUFFIXES)


@dataclass
class Discovery:
    files: list[InputFile]
    skipped: list[SkippedInput]


def discover(log_paths: Sequence[Path], storage_paths: Sequence[Path] = ()) -> Discovery:
    found = Discovery([], [])
    for roots, storage in ((log_paths, False), (storage_paths, True)):
        for root in roots:
            for item in _walk_root(Path(root), storage, found.skipped):
                found.files.append(item)
    return found


def _walk_root(root: Path, storage: bool, skipped: list[SkippedInput]) -> Iterator[InputFile]:
    if not root.is_dir():
        yield from _file(root, root.name, storage, skipped)
        return
    visited: set[tuple[int, int]] = set()
    pending = [root]
    while pending:
        directory = pending.pop()
        identity = _identity(directory)
        if identity in visited:
            skipped.append(
                SkippedInput(
                    source=_relative(directory, root), reason="symlink loop: directory already visited"
                )
            )
            continue
        visited.add(identity)
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as error:
            skipped.append(SkippedInput(source=_relative(directory, root), reason=_reason(error)))
            continue
        subdirectories = []
        for entry in entries:
            path = Path(entry.path)
            try:
                is_directory = entry.is_dir()  # follows symlinks
                if not is_directory:
                    path.stat()  # raises on a dangling or looping symlink
            except OSError as error:
                skipped.append(SkippedInput(source=_relative(path, root), reason=_reason(error)))
                continue
            if is_directory:
                subdirectories.append(path)
            else:
                yield from _file(path, _relative(path, root), storage, skipped)
        pending.extend(reversed(subdirectories))


def _file(path: Path, source: str, storage: bool, skipped: list[SkippedInput]) -> Iterator[InputFile]:
    try:
        status = path.stat()
    except OSError as error:
        skipped.append(SkippedInput(source=source, reason=_reason(error)))
        return
    if not path.is_file():
        skipped.append(SkippedInput(source=source, reason="not a regular file"))
    elif not os.access(path, os.R_OK):
        skipped.append(SkippedInput(source=source, reason="permission denied: file is not readable"))
    elif status.st_size == 0:
        skipped.append(SkippedInput(source=source, reason="empty file"))
    else:
        yield InputFile(path, source, storage, status.st_size)


def _identity(directory: Path) -> tuple[int, int]:
    status = directory.stat()
    return status.st_dev, status.st_ino


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "symlink loop"
    if error.errno == errno.ENOENT:
        return "dangling symlink: its target does not exist"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return f"unreadable: {error.strerror or error}"


def unusable_reason(log_paths: Sequence[Path], storage_paths: Sequence[Path] = ()) -> str | None:
    """Why the arguments cannot be triaged at all (CLI exit 2), or None when they can."""
    for path in [*log_paths, *storage_paths]:
        if not Path(path).exists():
            return f"{path}: no such file or directory"
    found = discover(log_paths)
    if found.files:
        return None
    if not found.skipped:
        return f"{', '.join(map(str, log_paths))}: no log files (empty directory)"
    reasons = "; ".join(f"{s.source}: {s.reason}" for s in found.skipped[:3])
    return f"no readable log file under {', '.join(map(str, log_paths))} ({reasons})"
