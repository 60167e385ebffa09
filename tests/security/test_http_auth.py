"""`serve --http` beyond loopback: a bearer token is required, checked on every request, the
Host/Origin checks stay on, and the server says at start where it listens and whether auth is
on. Bad listen addresses are one-line refusals, not tracebacks."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio
SERVE = [sys.executable, "-m", "hyperpod_nccl", "serve"]
TOKEN = "s3cr3t-bearer-token-for-tests"


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _start(args: list[str], connect: tuple[str, int]) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen([*SERVE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(connect, timeout=0.5).close()
            return process, ""
        except OSError:
            if process.poll() is not None:
                return process, process.stderr.read().decode()
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start within 30 s")


@pytest.fixture(scope="module")
def public_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    token_file = tmp_path_factory.mktemp("token") / "token"
    token_file.write_text(TOKEN + "\n")
    port = _free_port()
    process, _ = _start(["--http", f"0.0.0.0:{port}", "--token-file", str(token_file)], ("127.0.0.1", port))
    try:
        yield port, ""
    finally:
        process.terminate()
        process.wait(timeout=10)
        banner = process.stderr.read().decode()
        assert "bearer token required" in banner and f":{port}/mcp" in banner


def test_binding_beyond_loopback_without_a_token_refuses_to_start() -> None:
    port = _free_port()
    done = subprocess.run([*SERVE, "--http", f"0.0.0.0:{port}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--token-file" in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize("listen", ["127.0.0.1:99999", "127.0.0.1:http", "host:port:1", ""])
def test_an_unusable_listen_address_is_one_line(listen: str) -> None:
    done = subprocess.run([*SERVE, "--http", listen], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_an_ipv6_loopback_address_is_understood() -> None:
    try:
        port = _free_port("::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    process, failure = _start(["--http", f"[::1]:{port}"], ("::1", port))
    process.terminate()
    process.wait(timeout=10)
    assert not failure
    assert f"http://[::1]:{port}/mcp" in process.stderr.read().decode()


async def test_requests_without_the_token_are_refused(public_server: tuple[int, str]) -> None:
    port, _ = public_server
    url = f"http://127.0.0.1:{port}/mcp"
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"}, {"Authorization": TOKEN}):
            answer = await http.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
            )
            assert answer.status_code == 401, headers


async def test_the_token_opens_the_server_and_host_checks_stay_on(public_server: tuple[int, str]) -> None:
    port, _ = public_server
    url = f"http://127.0.0.1:{port}/mcp"
    authorized = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    async with Client(streamable_http_client(url, http_client=authorized)) as client:
        tools = (await client.list_tools()).tools
    assert "triage_logs" in {tool.name for tool in tools}
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}
    ) as http:
        answer = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code in (400, 403, 421)
