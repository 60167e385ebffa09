"""Walk the inputs: directories recursively, plain files, `.gz`, storage `.tar.gz` archives.

Whatever cannot be used (a symlink loop, a dangling link, an unreadable file, a FIFO) becomes a
`SkippedInput` with the reason; nothing is silently dropped and nothing here raises for a bad
entry. Only an unusable *argument* (a path that does not exist) is the caller's error.

A symlink whose target lies outside the input (or outside `boundaries`, the MCP server's read
roots) is listed as skipped and not followed, unless `follow_links` is set (`--follow-links`):
a link to /etc in a log folder must not turn a man page into evidence. Names are shown with
undecodable bytes and control characters escaped, so a file name cannot forge a report line.
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


def discover(
    log_paths: Sequence[Path],
    storage_paths: Sequence[Path] = (),
    *,
    follow_links: bool = False,
    boundaries: Sequence[Path] | None = None,
) -> Discovery:
    found = Discovery([], [])
    for roots, storage in ((log_paths, False), (storage_paths, True)):
        for root in roots:
            root = Path(root)
            fence = None if follow_links else _fence(root, boundaries)
            for item in _walk_root(root, storage, found.skipped, fence):
                found.files.append(item)
    return found


def _fence(root: Path, boundaries: Sequence[Path] | None) -> tuple[Path, ...]:
    """Where links may point: the input itself, or the server's read roots."""
    if boundaries is not None:
        return tuple(Path(b).resolve() for b in boundaries)
    resolved = root.resolve()
    return (resolved if resolved.is_dir() else resolved.parent,)


def _leaves(path: Path, fence: tuple[Path, ...] | None) -> str | None:
    """Why a symlink is not followed, or None when it may be."""
    if fence is None or not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None  # dangling or looping: reported as such by the caller
    if any(target.is_relative_to(allowed) for allowed in fence):
        return None
    where = display(target.as_posix())[:200]
    return f"symlink to {where}, outside the input: not followed (--follow-links reads it)"


def _walk_root(
    root: Path, storage: bool, skipped: list[SkippedInput], fence: tuple[Path, ...] | None
) -> Iterator[InputFile]:
    if not root.is_dir():
        yield from _file(root, display(root.name), storage, skipped)
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
            outside = _leaves(path, fence)
            if outside:
                skipped.append(SkippedInput(source=_relative(path, root), reason=outside))
                continue
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


def display(name: str) -> str:
    """A file name as text: undecodable bytes as \\xNN, control characters escaped."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _relative(path: Path, root: Path) -> str:
    try:
        return display(path.relative_to(root).as_posix())
    except ValueError:
        return display(path.as_posix())


def _reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "symlink loop"
    if error.errno == errno.ENOENT:
        return "dangling symlink: its target does not exist"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return f"unreadable: {error.strerror or error}"


def unusable_reason(
    log_paths: Sequence[Path],
    storage_paths: Sequence[Path] = (),
    *,
    follow_links: bool = False,
    boundaries: Sequence[Path] | None = None,
) -> str | None:
    """Why the arguments cannot be triaged at all (CLI exit 2), or None when they can."""
    for path in [*log_paths, *storage_paths]:
        name = display(str(path))[:200]
        if not str(path).strip():
            return "the log path is empty: name a folder or file of logs"
        try:
            if not Path(path).exists():
                return f"{name}: no such file or directory"
        except OSError as error:  # a name longer than NAME_MAX or PATH_MAX
            return f"{name}: {error.strerror or error}"
    found = discover(log_paths, follow_links=follow_links, boundaries=boundaries)
    if found.files:
        return None
    if not found.skipped:
        return f"{', '.join(map(str, log_paths))}: no log files (empty directory)"
    reasons = "; ".join(f"{s.source}: {s.reason}" for s in found.skipped[:3])
    return f"no readable log file under {', '.join(map(str, log_paths))} ({reasons})"
