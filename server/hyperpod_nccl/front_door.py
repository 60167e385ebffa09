"""The MCP handshake answered at once, from a recording, while the server is still loading.

A client spawning `hyperpod-nccl serve` waits for `initialize` and `tools/list` before it can do
anything; importing the MCP SDK, pydantic and building the tools' schemas takes most of a second.
Their answers never change for one release of this package and of the SDK, so `handshake.json`
holds them, recorded from the real server (`python -m hyperpod_nccl.handshake_recorder`; a test
fails when the recording differs from what the server answers). This module, standard library
only, owns the process's stdin and stdout from the first moment: it answers those two requests
from the recording and keeps every other message, then hands the wire to the SDK's stdio transport
with the client's `initialize` replayed first, and drops the SDK's second answer to it.

A recording made for another package or SDK version is not used, nor is the door opened with
HYPERPOD_NCCL_FRONT_DOOR=0: the server then answers everything itself.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import Any

RECORDING = Path(__file__).with_name("handshake.json")
SWITCH = "HYPERPOD_NCCL_FRONT_DOOR"
_EOF = ""
_opened: FrontDoor | None = None


def sdk_version() -> str | None:
    """The installed MCP SDK's version, from its dist-info folder's name (no import of the SDK)."""
    spec = find_spec("mcp")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).parent.parent
    for entry in site.glob("mcp-*.dist-info"):
        return entry.name.removeprefix("mcp-").removesuffix(".dist-info")
    return None


def load_recording(package_version: str) -> dict[str, Any] | None:
    try:
        recording = json.loads(RECORDING.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if recording.get("package") != package_version or recording.get("sdk") != sdk_version():
        return None
    return recording


class FrontDoor:
    """Owns fd 0 and 1: the wire. Stray writes to stdout by anything loaded later go to stderr."""

    def __init__(self, recording: dict[str, Any]) -> None:
        self._recording = recording
        self._wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
        self._wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
        self._divert_std_streams()
        self._lock = threading.Lock()
        self._for_server: queue.Queue[str] = queue.Queue()
        self._replay: list[str] = []
        self._answered: set[Any] = set()  # request ids this module answered: the server's answers are dropped
        self._handed_over = False
        threading.Thread(target=self._read, name="mcp-front-door", daemon=True).start()

    @staticmethod
    def _divert_std_streams() -> None:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)

    def _read(self) -> None:
        for raw in self._wire_in:
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            with self._lock:
                if self._handed_over or not self._answer(line):
                    self._for_server.put(line)
        self._for_server.put(_EOF)

    def _answer(self, line: str) -> bool:
        """Answer `initialize` and a first-page `tools/list`; True when the line needs nothing more."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or "id" not in message:
            if isinstance(message, dict) and message.get("method") == "notifications/initialized":
                self._replay.append(line)
                return True
            return False
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize" and _plausible_initialize(params) and not self._replay:
            result = dict(self._recording["initialize"])
            asked = params.get("protocolVersion")
            if asked not in self._recording["protocol_versions"]:
                asked = self._recording["latest"]
            result["protocolVersion"] = asked
            self._replay.append(line)
            self._answered.add(message["id"])
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return True
        if method == "tools/list" and self._replay and isinstance(params, dict) and not params.get("cursor"):
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": self._recording["tools/list"]})
            return True
        return False

    def _send(self, message: dict[str, Any]) -> None:
        self._wire_out.write((json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode())

    def hand_over(self) -> tuple[_ServerStdin, _ServerStdout]:
        """The streams the SDK's stdio transport reads and writes from now on."""
        with self._lock:
            self._handed_over = True
            replay = list(self._replay)
        return _ServerStdin(replay, self._for_server), _ServerStdout(self)

    def write_from_server(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and "method" not in message and message.get("id") in self._answered:
            self._answered.discard(message["id"])  # the server's own answer to the replayed initialize
            return
        with self._lock:
            self._wire_out.write(line.encode())


class _ServerStdin:
    """Lines for the SDK (anyio reads them with `readline` until ""): the replayed handshake, then
    whatever the client sent and sends."""

    def __init__(self, replay: list[str], pending: queue.Queue[str]) -> None:
        self._replay, self._pending = replay, pending

    def readline(self) -> str:
        if self._replay:
            return self._replay.pop(0)
        line = self._pending.get()
        if line == _EOF:
            self._pending.put(_EOF)
        return line


class _ServerStdout:
    """What the SDK writes, one JSON-RPC message per line, to the wire."""

    def __init__(self, door: FrontDoor) -> None:
        self._door, self._partial = door, ""

    def write(self, text: str) -> int:
        self._partial += text
        while "\n" in self._partial:
            line, self._partial = self._partial.split("\n", 1)
            self._door.write_from_server(line + "\n")
        return len(text)

    def flush(self) -> None:
        return None


def _plausible_initialize(params: object) -> bool:
    """Only a well-formed request is answered here; the SDK says what is wrong with any other."""
    return (
        isinstance(params, dict)
        and isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(params.get("clientInfo"), dict)
        and isinstance(params["clientInfo"].get("name"), str)
        and isinstance(params["clientInfo"].get("version"), str)
    )


def open_front_door(argv: list[str], package_version: str) -> None:
    """Open the door for `serve` on stdio when a recording of this release exists."""
    global _opened
    if not argv or argv[0] != "serve" or any(word in ("--http", "-h", "--help") for word in argv):
        return
    if os.environ.get(SWITCH, "1") == "0":
        return
    recording = load_recording(package_version)
    if recording is not None:
        _opened = FrontDoor(recording)


def opened() -> FrontDoor | None:
    return _opened
