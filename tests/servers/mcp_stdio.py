"""The MCP server as a subprocess over stdio, started as an operator would start it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp.client.stdio import StdioServerParameters


def serve(
    *folders: Path, extra: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> StdioServerParameters:
    """`hyperpod-nccl serve`, reading under each of `folders` and writing bundles to the first;
    `env` is added to the few variables the SDK passes on."""
    args = ["-m", "hyperpod_nccl", "serve", *extra]
    for folder in folders:
        args += ["--allow-dir", str(folder)]
    if folders:
        args += ["--output-dir", str(folders[0])]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


# What a client writes to list the tools: raw JSON-RPC lines, no SDK in between.
LIST_TOOLS_HANDSHAKE = (
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
)


def raw_tool_list(server: subprocess.Popen[str]) -> str:
    """Send the handshake to a server started with text pipes; the tools/list answer's line as it came."""
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(message) + "\n" for message in LIST_TOOLS_HANDSHAKE))
    server.stdin.flush()
    server.stdout.readline()  # the initialize answer
    return server.stdout.readline()
