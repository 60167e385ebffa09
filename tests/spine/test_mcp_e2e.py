"""The MCP server driven by the official `mcp` client, as Claude would: over stdio as a
subprocess, and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.anyio

SERVER_COMMAND = [sys.executable, "-m", "hyperpod_nccl", "serve"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--http", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(process.stderr.read().decode()) from None
            time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError("the HTTP server did not start within 30 s")
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["stdio", "http"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    if request.param == "stdio":
        target = StdioServerParameters(command=SERVER_COMMAND[0], args=SERVER_COMMAND[1:])
    else:
        target = request.getfixturevalue("http_server")
    async with Client(target) as connected:
        yield connected


# The tools that write a local file (a new one, in the output directory) say so; no tool destroys.
WRITERS = {"create_escalation_bundle", "run_diagnostic"}


async def test_every_tool_is_annotated_truthfully_with_typed_input_and_output(client: Client) -> None:
    tools = (await client.list_tools()).tools
    names = {tool.name for tool in tools}
    assert {"list_references", "read_reference"} <= names
    for tool in tools:
        assert tool.annotations is not None, tool.name
        assert tool.annotations.read_only_hint is (tool.name not in WRITERS), tool.name
        assert tool.annotations.destructive_hint is False, tool.name
        if tool.name in WRITERS:
            assert tool.annotations.idempotent_hint is False, tool.name
        assert tool.description and "Use this" in tool.description, tool.name
        assert tool.output_schema, f"{tool.name} has no structured output"


async def test_read_reference_returns_the_section(client: Client) -> None:
    result = await client.call_tool("read_reference", {"file": "debugging-guide.md", "section": "11"})
    assert not result.is_error
    assert result.structured_content["pointer"] == "debugging-guide.md § 11"
    assert "out of memory" in result.structured_content["text"].lower()


async def test_bad_input_is_refused_with_a_clear_error(client: Client) -> None:
    result = await client.call_tool("read_reference", {"file": "../etc/passwd", "section": "1"})
    assert result.is_error
    assert "pattern" in result.content[0].text
    missing = await client.call_tool("read_reference", {"file": "debugging-guide.md", "section": "999"})
    assert missing.is_error
    assert "has no section '999'" in missing.content[0].text


async def test_references_are_resources(client: Client) -> None:
    resources = (await client.list_resources()).resources
    uris = {str(resource.uri) for resource in resources}
    assert "hyperpod-nccl://references/debugging-guide.md" in uris
    assert "hyperpod-nccl://references/debugging-guide.md/1" in uris
    section = await client.read_resource("hyperpod-nccl://references/operations.md/8")
    assert section.contents[0].text.startswith("## 8.")


async def test_the_workflow_is_a_prompt(client: Client) -> None:
    prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
    assert "diagnose_nccl_failure" in prompts
    result = await client.get_prompt(
        "diagnose_nccl_failure", {"cluster": "ml-cluster", "region": "us-west-2"}
    )
    text = result.messages[0].content.text
    assert "Cluster: ml-cluster" in text
    assert "read_reference" in text
    assert "Never run them" in text


async def test_no_tool_takes_a_shell_command(client: Client) -> None:
    for tool in (await client.list_tools()).tools:
        for parameter in tool.input_schema.get("properties", {}):
            assert parameter.lower() not in {"command", "cmd", "shell", "script", "exec"}, (
                tool.name,
                parameter,
            )
