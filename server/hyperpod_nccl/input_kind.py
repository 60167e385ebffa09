"""What an input path is, when it is not training logs: a saved diagnostic bundle (a folder with
`snapshot.json`, or that file itself) or an escalation bundle (`.tar.gz` of CASE.md, report and
snapshot). Log triage would read such JSON as log lines and answer with confidence about nothing;
the triage faces say what the input is and which tool reads it instead."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

from hyperpod_nccl.artifacts import BUNDLE_FOLDER, SNAPSHOT_FILE

# Enough of snapshot.json to see its first keys: `{"schema_version": 1, "collected_at": ...`.
_HEAD_BYTES = 4096
_SNAPSHOT_KEYS = ('"schema_version"', '"collected_at"')
_MEMBERS_LOOKED_AT = 64


@dataclass(frozen=True)
class NotLogs:
    what: str  # "a saved diagnostic bundle", "an escalation bundle"
    path: Path
    bundle: Path | None  # the folder `diagnose --bundle` replays, when there is one

    def for_cli(self) -> str:
        return self._message(
            f"`hyperpod-nccl diagnose --bundle {self.bundle}` (its pod logs are triaged there)"
        )

    def for_tool(self) -> str:
        return self._message(f'run_diagnostic (bundle="{self.bundle}"); its pod logs are triaged there')

    def _message(self, replay: str) -> str:
        how = f"replay it with {replay}" if self.bundle is not None else self._unpack
        return f"{self.path} is {self.what}, not training logs: {how}"

    @property
    def _unpack(self) -> str:
        return (
            f"unpack it (`tar -xzf {self.path.name}`), read {BUNDLE_FOLDER}/CASE.md, and replay its "
            f"snapshot.json folder with `hyperpod-nccl diagnose --bundle {BUNDLE_FOLDER}`"
        )


def _is_snapshot(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return head.lstrip().startswith("{") and all(key in head for key in _SNAPSHOT_KEYS)


def _is_escalation_bundle(path: Path) -> bool:
    if not path.name.endswith((".tar.gz", ".tgz")):
        return False
    try:
        with tarfile.open(path, "r:gz") as archive:
            for count, member in enumerate(archive):
                if member.name.startswith(f"{BUNDLE_FOLDER}/"):
                    return True
                if count >= _MEMBERS_LOOKED_AT:
                    return False
    except (OSError, tarfile.TarError, EOFError):
        return False
    return False


def not_logs(path: Path) -> NotLogs | None:
    """What `path` is when it is one of our own bundles; None for anything else."""
    try:
        if path.is_dir() and _is_snapshot(path / SNAPSHOT_FILE):
            return NotLogs("a saved diagnostic bundle (snapshot.json)", path, path)
        if path.is_file() and path.name == SNAPSHOT_FILE and _is_snapshot(path):
            return NotLogs("a diagnostic snapshot", path, path.parent)
        if path.is_file() and _is_escalation_bundle(path):
            return NotLogs("an escalation bundle", path, None)
    except OSError:
        return None
    return None
