"""Where the MCP server may read and write files, and how it writes them.

An LLM chooses the paths the tools get, and what it passes can come from a prompt it was fed.
So the server reads logs, reports and bundles only under the roots it was started with (its
working directory unless that is `/`, plus each `serve --allow-dir`), and writes only under one
output directory (`serve --output-dir`, by default the working directory unless that is `/`).
Every write creates a new file with O_EXCL|O_NOFOLLOW, reached from the directory it must stay
in without following a symlink, so nothing existing is ever replaced and no link leads it out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hyperpod_nccl.guard.validate import preview

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OutsideBoundary(ValueError):
    """A path the server may not use; the message says which roots it may use."""


def _checked_text(value: str) -> str:
    if not value or not value.strip():
        raise OutsideBoundary("the path is empty: name a file or directory")
    if "\x00" in value:
        raise OutsideBoundary("a path cannot contain a NUL byte")
    if len(value.encode("utf-8", "surrogateescape")) > 4096:
        raise OutsideBoundary(f"{preview(value)} is longer than PATH_MAX (4096 bytes)")
    return value


def _resolved(value: str, base: Path) -> Path:
    try:
        path = Path(value).expanduser()
        return (path if path.is_absolute() else base / path).resolve()
    except (OSError, RuntimeError, ValueError) as error:
        raise OutsideBoundary(f"{preview(value)} cannot be used as a path: {error}") from None


def default_roots(cwd: Path) -> tuple[Path, ...]:
    """The working directory, unless it is `/`: a server started from / reads nothing by default."""
    cwd = cwd.resolve()
    return () if cwd == Path("/") else (cwd,)


@dataclass(frozen=True)
class FileBoundary:
    read_roots: tuple[Path, ...]
    output_dir: Path | None

    @classmethod
    def create(
        cls, allow_dirs: Sequence[str], output_dir: str | None, cwd: Path | None = None
    ) -> FileBoundary:
        cwd = (cwd or Path.cwd()).resolve()
        roots = list(default_roots(cwd))
        for directory in allow_dirs:
            path = _resolved(_checked_text(directory), cwd)
            if not path.is_dir():
                raise OutsideBoundary(f"--allow-dir {preview(directory)} is not a directory")
            roots.append(path)
        output = (
            _resolved(_checked_text(output_dir), cwd)
            if output_dir
            else (roots[0] if roots[:1] == [cwd] else None)
        )
        if output is not None and not output.is_dir():
            raise OutsideBoundary(f"--output-dir {preview(output_dir)} is not a directory")
        return cls(tuple(dict.fromkeys(roots)), output)

    def describe(self) -> str:
        reads = ", ".join(map(str, self.read_roots)) or "nothing (started from /: pass --allow-dir)"
        writes = str(self.output_dir) if self.output_dir else "nowhere (pass --output-dir)"
        return f"reads files under {reads}; writes bundles under {writes}"

    def readable(self, value: str) -> Path:
        """An existing file or directory under a read root, symlinks resolved."""
        path = _resolved(_checked_text(value), self.read_roots[0] if self.read_roots else Path.cwd())
        if not any(path.is_relative_to(root) for root in self.read_roots):
            roots = ", ".join(map(str, self.read_roots)) or "none (the server was started from /)"
            raise OutsideBoundary(
                f"{preview(value)} is outside the folders this server reads ({roots}); "
                "the operator can add one with `serve --allow-dir DIR`"
            )
        if not path.exists():
            raise OutsideBoundary(f"{preview(value)} does not exist on the machine running hyperpod-nccl")
        return path

    def writable(self, value: str) -> Path:
        """A path for a new file or folder inside the output directory (relative to it, or absolute)."""
        if self.output_dir is None:
            raise OutsideBoundary(
                "this server writes no files: the operator can set `serve --output-dir DIR`"
            )
        text = _checked_text(value)
        raw = Path(text).expanduser()
        lexical = raw if raw.is_absolute() else self.output_dir / raw
        if ".." in lexical.parts:
            raise OutsideBoundary(f"{preview(value)}: `..` is not allowed in an output path")
        path = lexical.parent.resolve() / lexical.name
        if not path.is_relative_to(self.output_dir) or path == self.output_dir:
            raise OutsideBoundary(
                f"{preview(value)} is outside this server's output directory {self.output_dir}; "
                "give a name inside it"
            )
        return path


def _open_directory(root: Path, relative: Sequence[str]) -> int:
    """A descriptor for root/relative, reached without following any symlink below root."""
    fd = os.open(root, _DIRECTORY)
    try:
        for part in relative:
            next_fd = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except OSError:
        os.close(fd)
        raise
    return fd


def _relative_parts(path: Path, within: Path) -> tuple[str, ...]:
    return path.relative_to(within).parts


def write_new_file(path: Path, data: bytes, *, within: Path | None = None, mode: int = 0o644) -> None:
    """Create `path` with `data`; never replace anything, never follow a link at or below `within`.

    `within` defaults to the file's own folder. Raises FileExistsError when the path exists (a
    file, a folder or a symlink), OSError (ELOOP, ENOTDIR) when a link stands in the way."""
    within = within or path.parent
    *folders, name = _relative_parts(path, within)
    directory = _open_directory(within, folders)
    try:
        fd = os.open(name, _NEW_FILE, mode, dir_fd=directory)
    finally:
        os.close(directory)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def make_new_directory(path: Path, *, within: Path | None = None) -> None:
    """Create the folder `path` (one level: its parent must exist) unless it already exists as a
    real folder; a symlink in its place, or on the way to it below `within`, is refused."""
    within = within or path.parent
    *folders, name = _relative_parts(path, within)
    directory = _open_directory(within, folders)
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=directory)
        except FileExistsError:
            os.close(os.open(name, _DIRECTORY, dir_fd=directory))  # a real folder, not a link
    finally:
        os.close(directory)
