"""The README is part of the product: its commands, permissions and tool list must be true."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl.guard.aws import iam_actions
from hyperpod_nccl.mcp_server import TOOLS

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
VENV_BIN = Path(sys.executable).parent


def test_readme_starts_with_the_two_quick_start_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.DOTALL)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]
    assert README.index("make demo") < README.index("## What it is")


def test_readme_lists_exactly_the_iam_actions_the_guard_allows() -> None:
    block = re.search(
        r"<!-- iam-actions:start -->\n```\n(.*?)```\n<!-- iam-actions:end -->", README, re.DOTALL
    )
    assert block is not None
    assert block.group(1).split() == iam_actions()


def test_readme_has_a_line_for_every_tool() -> None:
    for tool, _ in TOOLS:
        assert f"| `{tool.__name__}` |" in README, f"README's tool table lacks {tool.__name__}"


def _config_snippets() -> list[dict]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", README, re.DOTALL)]


def test_claude_code_command_runs_the_installed_executable() -> None:
    assert "claude mcp add hyperpod-nccl -- /path/to/hyperpod-nccl/.venv/bin/hyperpod-nccl serve" in README


@pytest.mark.anyio
@pytest.mark.parametrize("client_name", ["Claude Desktop", "VS Code"])
async def test_config_snippet_starts_a_working_server(client_name: str) -> None:
    snippets = {
        "Claude Desktop": _config_snippets()[0]["mcpServers"],
        "VS Code": _config_snippets()[1]["servers"],
    }
    entry = snippets[client_name]["hyperpod-nccl"]
    executable = entry["command"].replace("/path/to/hyperpod-nccl/.venv/bin", str(VENV_BIN))
    assert Path(executable).exists(), f"{executable} is not installed: `make` installs it"
    async with Client(StdioServerParameters(command=executable, args=entry["args"])) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "read_reference" in names
