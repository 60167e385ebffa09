"""Record the server's answers to the MCP handshake into `handshake.json` (see front_door.py).

Run after changing a tool, its description or its types, or after upgrading the MCP SDK:
`python -m hyperpod_nccl.handshake_recorder`. The server is asked as a client would ask it, over
stdio, with the front door shut.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from hyperpod_nccl import __version__
from hyperpod_nccl.front_door import RECORDING, SWITCH, sdk_version

CLIENT = {"name": "handshake-recorder", "version": __version__}


def handshake_requests(protocol_version: str) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": protocol_version, "capabilities": {}, "clientInfo": CLIENT},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]


def ask_server(front_door: bool, protocol_version: str = LATEST_HANDSHAKE_VERSION) -> list[str]:
    """The server's two answer lines, as they came over stdio."""
    env = {**os.environ, SWITCH: "1" if front_door else "0"}
    with subprocess.Popen(
        [sys.executable, "-m", "hyperpod_nccl", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(
            b"".join(json.dumps(m).encode() + b"\n" for m in handshake_requests(protocol_version))
        )
        server.stdin.flush()
        answers = [server.stdout.readline().decode(), server.stdout.readline().decode()]
        server.kill()
    return answers


def record(path: Path = RECORDING) -> None:
    # `protocolVersion` is negotiated per connection: the front door fills in the client's.
    initialize, tools = (json.loads(line)["result"] for line in ask_server(front_door=False))
    recording = {
        "package": __version__,
        "sdk": sdk_version(),
        "protocol_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest": LATEST_HANDSHAKE_VERSION,
        "initialize": initialize,
        "tools/list": tools,
    }
    path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    record()
    print(f"recorded the handshake in {RECORDING}")
