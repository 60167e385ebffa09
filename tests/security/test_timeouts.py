"""Every AWS and Kubernetes request has connect/read timeouts and no retried read, and every tool
a deadline with progress while it waits: a silent endpoint (accepts, never answers) gets a
one-line answer in seconds, not a call held for minutes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
import yaml
from kubernetes.client import Configuration, CoreV1Api
from mcp import Client

from hyperpod_nccl.guard import k8s as k8s_guard
from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.guard.k8s import read_only_api_client
from tests.servers.mcp_stdio import serve
from tests.servers.silent import start_silent_server

pytestmark = pytest.mark.anyio
DEADLINE_S = 4


@pytest.fixture(scope="module")
def silent() -> Iterator[str]:
    yield from start_silent_server()


def test_every_aws_client_has_timeouts_and_few_attempts() -> None:
    for service in ("sagemaker", "ec2", "logs", "eks", "sts", "ssm"):
        config = make_client(service, region="us-west-2").meta.config
        assert (config.connect_timeout, config.read_timeout) == (5, 20), service
        assert config.retries["total_max_attempts"] <= 3, service


def test_a_kubernetes_request_without_a_timeout_gets_one_and_a_read_is_not_retried(
    silent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(k8s_guard, "REQUEST_TIMEOUT", (1.0, 1.0))
    core = CoreV1Api(read_only_api_client(Configuration(host=silent)))
    started = time.monotonic()
    with pytest.raises((urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.MaxRetryError)):
        core.list_namespaced_pod("training")  # no _request_timeout given: the guard adds one
    assert time.monotonic() - started < 4  # one read of 1 s, not four


def _env(silent: str) -> dict[str, str]:
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE")
    env = {name: os.environ[name] for name in names}
    return env | {"AWS_ENDPOINT_URL": silent, "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}


# The client's stdio transport waits this long for a server to exit on its own before killing it.
_CLIENT_WAITS_S = 2.0


async def _timed_call(server, tool: str, arguments: dict) -> tuple[float, object, list[str | None]]:
    """The call's time, its result and its progress messages; the server must then exit as soon as
    the client closes, not when its abandoned request times out."""
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client(server) as client:
        started = time.monotonic()
        result = await client.call_tool(tool, arguments, progress_callback=on_progress)
        took = time.monotonic() - started
        closing = time.monotonic()
    assert time.monotonic() - closing < _CLIENT_WAITS_S, "the server outlived its client's close"
    return took, result, progress


async def test_a_silent_aws_endpoint_gets_an_answer_at_the_deadline_with_progress(silent: str) -> None:
    server = serve(extra=("--tool-deadline", str(DEADLINE_S)), env=_env(silent))
    took, result, progress = await _timed_call(
        server, "describe_cluster", {"cluster": "ml-cluster-1", "region": "us-west-2"}
    )
    assert result.is_error and f"did not finish within {DEADLINE_S} s" in result.content[0].text
    assert took < DEADLINE_S + 5
    assert progress and "still waiting" in (progress[0] or "")


async def test_a_silent_kubernetes_api_gets_an_answer_at_the_deadline(silent: str, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "silent", "cluster": {"server": silent}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "u"}}],
                "current-context": "silent",
            }
        )
    )
    server = serve(extra=("--tool-deadline", str(DEADLINE_S), "--kubeconfig", str(kubeconfig)))
    took, result, progress = await _timed_call(
        server, "get_pod_logs", {"namespace": "training", "pod": "w-0"}
    )
    assert result.is_error and f"did not finish within {DEADLINE_S} s" in result.content[0].text
    assert took < DEADLINE_S + 5 and progress
