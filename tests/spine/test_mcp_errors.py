"""Every tool failure reaches the client as one short line it can act on, over stdio with the
official `mcp` client: the same wording as the CLI for the same cause, argument names instead of
CLI flags, never an exception group, a traceback or a bare "Error executing tool"."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from botocore.exceptions import NoCredentialsError
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

from hyperpod_nccl.tool_errors import MAX_MESSAGE_CHARS, tool_failure

pytestmark = pytest.mark.anyio

CLI = [sys.executable, "-m", "hyperpod_nccl"]


def _without_credentials(tmp_path: Path) -> dict[str, str]:
    """A machine with no AWS credentials anywhere: no variables, files, profile or metadata."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    empty = tmp_path / "empty"
    empty.write_text("")
    return {
        **env,
        "AWS_CONFIG_FILE": str(empty),
        "AWS_SHARED_CREDENTIALS_FILE": str(empty),
        "AWS_EC2_METADATA_DISABLED": "true",
        "HOME": str(tmp_path),
    }


@pytest.fixture
async def bare_client(tmp_path: Path) -> AsyncIterator[Client]:
    target = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=_without_credentials(tmp_path)
    )
    async with Client(target) as connected:
        yield connected


def _text(result) -> str:  # type: ignore[no-untyped-def]
    assert result.is_error, result
    [content] = result.content
    return content.text


def _assert_one_actionable_line(text: str) -> None:
    assert "\n" not in text and len(text) <= MAX_MESSAGE_CHARS, text
    for noise in ("Error executing tool", "Traceback", "ExceptionGroup", "TaskGroup", "pydantic.dev"):
        assert noise not in text, text


async def test_run_diagnostic_without_credentials_reads_as_the_cli_does(
    bare_client: Client, tmp_path: Path
) -> None:
    cli = subprocess.run(
        [*CLI, "diagnose", "--cluster", "ml-cluster", "--region", "us-west-2"],
        env=_without_credentials(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = cli.stderr.strip().removeprefix("hyperpod-nccl: ")
    assert said.startswith("no AWS credentials found"), cli.stderr
    result = await bare_client.call_tool("run_diagnostic", {"cluster": "ml-cluster", "region": "us-west-2"})
    assert _text(result) == said
    _assert_one_actionable_line(said)


async def test_every_aws_tool_words_missing_credentials_the_same(bare_client: Client) -> None:
    cluster = {"cluster": "ml-cluster", "region": "us-west-2"}
    with anyio.fail_after(120):
        for tool in ("describe_cluster", "scan_cloudwatch", "run_diagnostic", "probe_nodes"):
            text = _text(await bare_client.call_tool(tool, cluster))
            assert text.startswith("no AWS credentials found") and "fix AWS credentials" in text, (tool, text)
        # The Slurm tool says which call needed them.
        text = _text(await bare_client.call_tool("slurm_status", cluster))
        assert text.startswith("sagemaker:ListClusterNodes: no AWS credentials found"), text


async def test_arguments_that_fail_the_schema_are_named_in_one_line(bare_client: Client) -> None:
    text = _text(await bare_client.call_tool("run_diagnostic", {"cluster": "ml-cluster", "region": "mars-1"}))
    _assert_one_actionable_line(text)
    assert text.startswith("invalid arguments: `region`:") and "'mars-1' is not a valid AWS region" in text


async def test_a_message_naming_a_cli_flag_names_the_tool_argument(bare_client: Client) -> None:
    text = _text(await bare_client.call_tool("slurm_status", {"cluster": "ml-cluster"}))
    assert text == "`cluster` needs `region`"


async def test_an_anticipated_failure_passes_through_verbatim(bare_client: Client) -> None:
    text = _text(
        await bare_client.call_tool("read_reference", {"file": "debugging-guide.md", "section": "999"})
    )
    assert text.startswith("debugging-guide.md has no section '999'; sections: 1, 2")
    _assert_one_actionable_line(text)


def _raised_in(tool: str, error: Exception) -> ToolError:
    """What the SDK hands the server for `error` raised inside `tool` (its own wrapping)."""
    wrapper = (UnexpectedToolError if not isinstance(error, ToolError) else ToolError)(
        f"Error executing tool {tool}"
    )
    wrapper.__cause__ = error
    return wrapper


def test_a_failure_inside_a_task_group_is_unwrapped_to_its_message() -> None:
    group = ExceptionGroup("unhandled errors in a TaskGroup", [ToolError("no AWS credentials found (x)")])
    assert tool_failure("run_diagnostic", _raised_in("run_diagnostic", group)) == (
        "no AWS credentials found (x)",
        True,
    )
    boto = BaseExceptionGroup("outer", [ExceptionGroup("inner", [NoCredentialsError()])])
    message, anticipated = tool_failure("list_pods", _raised_in("list_pods", boto))
    assert anticipated and message.startswith("no AWS credentials found (Unable to locate credentials)")


def test_a_crash_names_the_tool_and_what_to_do_and_keeps_its_text_on_the_server() -> None:
    message, anticipated = tool_failure(
        "triage_logs", _raised_in("triage_logs", KeyError("secret-ish detail"))
    )
    assert not anticipated
    assert (
        message.startswith("triage_logs failed unexpectedly")
        and "report it as a hyperpod-nccl bug" in message
    )
    assert "secret-ish" not in message
    _assert_one_actionable_line(message)


def test_a_long_multi_line_message_is_bounded_to_one_line_and_redacted() -> None:
    token = "hf_" + "a" * 34
    error = ToolError("first line\n  second line with token " + token + " " + "word " * 200)
    message, _ = tool_failure("get_pod_logs", _raised_in("get_pod_logs", error))
    _assert_one_actionable_line(message)
    assert message.startswith("first line second line") and token not in message and message.endswith("…")
