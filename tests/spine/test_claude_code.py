"""`claude mcp add` exactly as the README says, checked by Claude Code's own health check.

Needs the Claude Code CLI (`npm install @anthropic-ai/claude-code`); point
HYPERPOD_NCCL_CLAUDE_BIN at its `claude` executable or put it on PATH. Skipped otherwise.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
CLAUDE = os.environ.get("HYPERPOD_NCCL_CLAUDE_BIN") or shutil.which("claude")


@pytest.mark.skipif(
    CLAUDE is None, reason="Claude Code CLI not installed (npm install @anthropic-ai/claude-code)"
)
def test_claude_code_connects_to_the_server_registered_as_the_readme_says(tmp_path: Path) -> None:
    line = re.search(r"^claude mcp add .*$", README, re.MULTILINE)
    assert line is not None
    words = shlex.split(
        line.group(0).replace("/path/to/hyperpod-nccl/.venv/bin", str(Path(sys.executable).parent))
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    run = dict(cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    added = subprocess.run([CLAUDE, *words[1:]], **run)
    assert added.returncode == 0, added.stderr
    listed = subprocess.run([CLAUDE, "mcp", "list"], **run)
    assert re.search(r"hyperpod-nccl: .* - ✔ Connected", listed.stdout), listed.stdout + listed.stderr
