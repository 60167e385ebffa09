"""The repository is also a Claude Code plugin and its own marketplace: `claude plugin validate
--strict` accepts both manifests, and once installed `claude plugin details` lists the three skills
and the MCP server, which `claude mcp list` then connects to. The projected token cost the CLI
reports is the one the README states.

Needs the Claude Code CLI (`make test` installs it under .venv/claude); skipped otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CLAUDE = os.environ.get("HYPERPOD_NCCL_CLAUDE_BIN") or shutil.which("claude")
NOT_SHIPPED = shutil.ignore_patterns(
    ".venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", "out", "*.egg-info"
)
SKILLS = ("escalation-bundle", "hyperpod-nccl", "log-triage")

pytestmark = pytest.mark.skipif(
    CLAUDE is None,
    reason="Claude Code CLI not installed (make test installs it under .venv/claude; needs npm)",
)


@pytest.fixture(scope="module")
def claude(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Run the CLI as a user with an empty home would, on a copy of what a clone holds."""
    home = tmp_path_factory.mktemp("home")
    checkout = tmp_path_factory.mktemp("clone") / "hyperpod-nccl"
    shutil.copytree(ROOT, checkout, ignore=NOT_SHIPPED, symlinks=True)
    # The server runs from this test's virtualenv instead of installing one from PyPI.
    env = {**os.environ, "HOME": str(home), "HYPERPOD_NCCL_VENV": str(Path(sys.executable).parents[1])}

    def run(*arguments: str, timeout: int = 180) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [CLAUDE, *arguments],  # type: ignore[list-item]
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"claude {' '.join(arguments)}: {done.stdout}{done.stderr}"
        return done

    run.checkout = checkout  # type: ignore[attr-defined]
    return run


def test_both_manifests_pass_strict_validation(claude) -> None:  # type: ignore[no-untyped-def]
    for manifest in ("plugin.json", "marketplace.json"):
        checked = claude("plugin", "validate", "--strict", str(claude.checkout / ".claude-plugin" / manifest))
        assert "Validation passed" in checked.stdout, checked.stdout


def test_one_install_gives_the_three_skills_and_the_server(claude) -> None:  # type: ignore[no-untyped-def]
    claude("plugin", "marketplace", "add", str(claude.checkout))
    claude("plugin", "install", "hyperpod-nccl@hyperpod-nccl")
    details = claude("plugin", "details", "hyperpod-nccl").stdout
    assert re.search(r"Skills \(3\)\s+" + r",\s*".join(SKILLS), details), details
    assert re.search(r"MCP servers \(1\)\s+hyperpod-nccl\b", details), details
    listed = claude("mcp", "list").stdout
    assert re.search(r"plugin:hyperpod-nccl:hyperpod-nccl: .* - ✔ Connected", listed), listed

    always_on = re.search(r"Always-on:\s+~([\d.]+)(k?) tok", details)
    assert always_on, details
    reported = float(always_on.group(1)) * (1000 if always_on.group(2) else 1)
    stated = re.search(r"~([\d,]+) tokens always on", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert stated, "README states the plugin's always-on token cost"
    # Estimates move with the CLI version; the README's figure stays within a quarter of it.
    assert abs(float(stated.group(1).replace(",", "")) - reported) <= reported / 4, details
