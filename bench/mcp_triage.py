"""One triage through the MCP server, made as an assistant's client makes it.

Spawns `hyperpod-nccl serve` over stdio (reading LOG_DIR only), waits for its tool list, then
times the `triage_logs` call alone: the server's start-up is measured by the cold-start test, not
here. Prints one JSON object: `seconds` (the call) and `root_cause` (what the report named).

    .venv/bin/python bench/mcp_triage.py LOG_DIR
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def triage(logs: Path) -> dict[str, object]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "hyperpod_nccl", "serve", "--allow-dir", str(logs)]
    )
    async with Client(server) as client:
        await client.list_tools()
        started = time.perf_counter()
        result = await client.call_tool("triage_logs", {"log_dir": str(logs)})
        seconds = time.perf_counter() - started
    report = result.structured_content or {}
    return {"seconds": seconds, "error": result.is_error, "root_cause": report.get("root_cause")}


def main() -> int:
    print(json.dumps(anyio.run(triage, Path(sys.argv[1]).resolve())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
