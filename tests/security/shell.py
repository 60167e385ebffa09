"""Run a printed command line the way a user would paste it, with every program stubbed.

Each stub records its argv (NUL-separated, one record per line of the log) and does nothing
else, so a line can be executed safely and the test sees exactly what the shell passed to which
program. `hostile-marker` is a stub too: hostile values call it, so a record of it means a
value was interpreted by the shell instead of passed as data.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

MARKER = "hostile-marker"
HOSTILE = [
    "us-west-2; hostile-marker",
    "$(hostile-marker)",
    "`hostile-marker`",
    "x' ; hostile-marker ; '",
    'x" ; hostile-marker ; "',
    "a|hostile-marker",
    "a && hostile-marker",
    "a\nhostile-marker",
    "--exec=hostile-marker",
    "-rf",
    "*",
    "~root",
    "\x1b]0;title\x07$(hostile-marker)",
    "/tmp/a b; hostile-marker",
    "i-0abc123def4567890 && hostile-marker",
    "x" * 5000 + ";hostile-marker",
]
# Every program a suggested command names; anything else is not on PATH.
PROGRAMS = (
    "aws kubectl scontrol sinfo squeue sudo grep ls sort tail xargs find df ip pgrep systemctl "
    "nv-fabricmanager nvidia-smi fi_info lspci iptables mount tee sed hyperpod-nccl py-spy "
    f"{MARKER}"
).split()
# One file per process: stages of a pipeline run at once and must not interleave their records.
_STUB = """#!/bin/sh
printf '%s\\0' "$(basename "$0")" "$@" > "$STUB_LOG.$$"
"""


@dataclass
class Sandbox:
    bin: Path
    log: Path

    def syntax_ok(self, line: str) -> bool:
        return subprocess.run(["sh", "-n", "-c", line], capture_output=True).returncode == 0

    def run(self, line: str) -> list[list[str]]:
        """Execute `line` with only the stubs on PATH; return the argv of every program it ran."""
        for old in self.log.parent.glob(f"{self.log.name}.*"):
            old.unlink()
        env = {"PATH": str(self.bin), "STUB_LOG": str(self.log), "HOME": str(self.log.parent)}
        subprocess.run(["/bin/sh", "-c", line], env=env, cwd=self.log.parent, capture_output=True, timeout=20)
        records = [path.read_bytes() for path in self.log.parent.glob(f"{self.log.name}.*")]
        return [[part.decode() for part in record.split(b"\0")[:-1]] for record in records]


def make_sandbox(directory: Path) -> Sandbox:
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "_stub"
    stub.write_text(_STUB.replace("basename", "/usr/bin/basename"))
    stub.chmod(0o755)
    for name in PROGRAMS:
        (bin_dir / name).symlink_to(stub)
    return Sandbox(bin_dir, directory / "stub.log")


def stages(line: str) -> list[list[str]]:
    """The commands of a printed line as shlex reads them, split at |, && and ;."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in ("|", "&&", ";"):
            commands.append([])
        else:
            commands[-1].append(token)
    return commands
