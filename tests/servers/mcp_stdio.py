"""The MCP server as a subprocess over stdio, started as an operator would start it."""

from __future__ import annotations

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
