"""The front door (issue 13 item 3): `serve` on stdio answers the handshake from a recording while
the SDK loads, byte for byte as the SDK would, and hands everything else to the SDK in order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from hyperpod_nccl import __version__
from hyperpod_nccl.front_door import SWITCH, load_recording
from hyperpod_nccl.handshake_recorder import ask_server, handshake_requests

_STALE = "handshake.json is stale: run `python -m hyperpod_nccl.handshake_recorder` and commit it"


def test_the_recording_is_of_this_release_and_this_sdk() -> None:
    assert load_recording(__version__) is not None, _STALE


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01"])
def test_the_door_answers_the_handshake_as_the_sdk_does(version: str) -> None:
    assert ask_server(front_door=True, protocol_version=version) == ask_server(
        front_door=False, protocol_version=version
    ), _STALE


def test_the_door_and_the_entry_point_load_no_sdk_and_no_pydantic() -> None:
    probe = "import sys, json, hyperpod_nccl.entry; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    top_level = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert top_level.isdisjoint({"mcp", "mcp_types", "pydantic", "anyio", "boto3", "kubernetes"})


def _converse(messages: list[dict[str, Any]], answers: int, *, front_door: bool) -> list[dict[str, Any]]:
    """Everything sent at once, before the server could have loaded; `answers` lines read back."""
    with subprocess.Popen(
        [sys.executable, "-m", "hyperpod_nccl", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, SWITCH: "1" if front_door else "0"},
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        server.stdin.flush()
        received = [json.loads(server.stdout.readline()) for _ in range(answers)]
        server.stdin.close()  # end of input: the server exits, with nothing more to say
        assert server.stdout.read() == b""
        assert server.wait(timeout=60) == 0
    return received


def test_requests_sent_before_the_server_loaded_are_answered_once_each() -> None:
    messages = [
        *handshake_requests("2025-06-18"),
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "list_references", "arguments": {}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    received = _converse(messages, 4, front_door=True)
    assert [message.get("id") for message in received[:2]] == [1, 2], "the handshake first, from the door"
    by_id = {message["id"]: message for message in received}
    assert sorted(by_id) == [1, 2, 3, 4], (
        "one answer each: the SDK's answer to the replayed initialize is dropped"
    )
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert "debugging-guide.md" in json.dumps(by_id[3]["result"])
    assert by_id[4]["result"] == {}


def test_a_malformed_initialize_is_left_to_the_sdk() -> None:
    malformed = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2025}}]
    with_door = _converse(malformed, 1, front_door=True)
    without = _converse(malformed, 1, front_door=False)
    assert with_door == without
    assert "error" in with_door[0]
