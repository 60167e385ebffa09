"""A reproducible `.tar.gz`: sorted members under one folder, fixed owner, mode and time.

The same inputs give the same bytes, so a bundle can be checked, diffed and tested. Every member
passes `redact_text` here, the last point before bytes reach the disk.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from hyperpod_nccl.artifacts import BUNDLE_FOLDER
from hyperpod_nccl.guard.boundary import write_new_file
from hyperpod_nccl.guard.redact import redact_text
from hyperpod_nccl.guard.validate import preview

_SUFFIXES = (".tar.gz", ".tgz")


class BundleError(ValueError):
    """The bundle cannot be written; the message says what to change."""


def check_bundle_name(value: str | Path) -> Path:
    """A path whose file name ends in .tar.gz / .tgz."""
    path = Path(value)
    if not path.name.endswith(_SUFFIXES):
        raise BundleError(f"{preview(str(value))} must end in .tar.gz (the bundle is a gzipped tar)")
    return path


def check_output_path(value: str | Path) -> Path:
    """A new `.tar.gz` in an existing folder. An existing file is never overwritten."""
    if not str(value).strip():
        raise BundleError("the output path is empty: name a new .tar.gz file")
    if "\x00" in str(value):
        raise BundleError("the output path cannot contain a NUL byte")
    path = check_bundle_name(Path(value).expanduser())
    if not path.parent.resolve().is_dir():
        raise BundleError(f"the folder {path.parent} does not exist on the machine running hyperpod-nccl")
    if path.exists():
        raise BundleError(f"{path} already exists; choose a new file name (bundles are never overwritten)")
    return path.resolve()


def _tar_bytes(members: dict[str, str], mtime: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            data = redact_text(members[name]).encode("utf-8")
            info = tarfile.TarInfo(f"{BUNDLE_FOLDER}/{name}")
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_archive(path: Path, members: dict[str, str], mtime: int, *, within: Path | None = None) -> bytes:
    """Write the archive to a path that must not exist yet (O_EXCL|O_NOFOLLOW, reached from
    `within` without following a link); return the bytes written."""
    for name in members:
        if name.startswith("/") or ".." in Path(name).parts:
            raise BundleError(f"refusing member name {name!r}: bundle members are relative")
    compressed = gzip.compress(_tar_bytes(members, mtime), mtime=mtime)
    try:
        write_new_file(path, compressed, within=within)
    except FileExistsError:
        raise BundleError(f"{path} already exists; choose a new file name") from None
    except OSError as error:
        raise BundleError(f"cannot write {path}: {error.strerror or error}") from None
    return compressed
