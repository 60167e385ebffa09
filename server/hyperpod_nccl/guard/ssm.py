"""What an SSM session may be opened for: the shipped probe scripts, and nothing else.

Allowing `ssm:StartSession` by name would let any code holding the probe runner's client open a
shell on a node with any document and command. So the guard reads the request itself: the
document must be the non-interactive command document, the target a node, and the one command
exactly the wrapper `probes/runners/ssm.remote_command` builds, whose base64 payload must unpack
byte for byte to a script shipped in probes/scripts/ and whose environment assignments are the
catalogue's narrow identifiers. TerminateSession may only close a session this process opened.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import re
import threading
import zlib
from collections.abc import Mapping
from typing import Any

from hyperpod_nccl.guard.validate import SsmTarget, validated
from hyperpod_nccl.probes.catalog import SCRIPTS_DIR, available_scripts

DOCUMENT = "AWS-StartNonInteractiveCommand"
_MAX_SCRIPT_BYTES = 1 << 20
REMOTE_COMMAND = re.compile(
    r"printf %s (?P<payload>[A-Za-z0-9+/=]+) \| base64 -d \| gzip -dc \| "
    r"env (?P<env>(?:[A-Z][A-Z0-9_]{0,63}='[A-Za-z0-9_.,:/=+@-]{0,256}' )*)sh -s"
)

_opened: set[str] = set()
_lock = threading.Lock()


def _shipped_scripts() -> set[bytes]:
    return {(SCRIPTS_DIR / f"{name}.sh").read_bytes() for name in available_scripts()}


def _script_of(payload: str) -> bytes | None:
    try:
        packed = base64.b64decode(payload, validate=True)
        with gzip.GzipFile(fileobj=io.BytesIO(packed)) as unpacked:
            script = unpacked.read(_MAX_SCRIPT_BYTES + 1)
    except (binascii.Error, ValueError, OSError, EOFError, zlib.error):
        return None
    return script if len(script) <= _MAX_SCRIPT_BYTES else None


def start_session_refusal(params: Mapping[str, Any]) -> str | None:
    """Why these StartSession parameters are refused, or None when they open a shipped probe."""
    extra = set(params) - {"Target", "DocumentName", "Parameters", "Reason"}
    if extra:
        return f"unexpected parameters {sorted(extra)}"
    if params.get("DocumentName") != DOCUMENT:
        return f"only the {DOCUMENT} document is used"
    try:
        validated(SsmTarget, str(params.get("Target", "")))
    except ValueError as error:
        return str(error)
    parameters = params.get("Parameters")
    if not isinstance(parameters, dict) or set(parameters) != {"command"}:
        return "the only parameter is the probe command"
    commands = parameters["command"]
    if not isinstance(commands, list) or len(commands) != 1 or not isinstance(commands[0], str):
        return "exactly one command is sent"
    match = REMOTE_COMMAND.fullmatch(commands[0])
    if not match:
        return "the command is not the probe wrapper"
    if _script_of(match.group("payload")) not in _shipped_scripts():
        return "the command does not run a script shipped in probes/scripts/"
    return None


def remember_session(parsed: Mapping[str, Any] | None, **_: Any) -> None:
    """botocore after-call hook for StartSession: the session ids this process opened."""
    session = (parsed or {}).get("SessionId")
    if isinstance(session, str):
        with _lock:
            _opened.add(session)


def terminate_session_refusal(params: Mapping[str, Any]) -> str | None:
    with _lock:
        known = params.get("SessionId") in _opened
    return None if known else "only sessions this process opened can be terminated"


def forget_session(params: Mapping[str, Any]) -> None:
    with _lock:
        _opened.discard(params.get("SessionId"))
