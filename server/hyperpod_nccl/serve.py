"""`hyperpod-nccl serve`: the MCP server on stdio, or on streamable HTTP behind a bearer token.

On loopback the SDK's Host/Origin checks keep other sites' pages out. Anywhere else the server
requires `--token-file` (checked in constant time on every request) and keeps Host/Origin checks
for the names it can be reached by. It says at start where it listens, whether auth is on, and
which folders it reads and writes.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from hyperpod_nccl import front_door
from hyperpod_nccl.cli_common import EXIT_OK, UsageError
from hyperpod_nccl.guard.boundary import FileBoundary, OutsideBoundary
from hyperpod_nccl.guard.kubeconfig import KubeconfigRefused, load_server_kubeconfig
from hyperpod_nccl.guard.validate import preview
from hyperpod_nccl.server_settings import DEFAULT_TOOL_DEADLINE_S, ServerSettings, configure

_LISTEN = re.compile(r"(?:(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):)?(?P<port>\d{1,5})")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MIN_TOKEN_CHARS = 16

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


@dataclass(frozen=True)
class Listen:
    host: str  # as uvicorn takes it: no brackets
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_listen(text: str) -> Listen:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT`; HOST defaults to 127.0.0.1."""
    match = _LISTEN.fullmatch(text.strip())
    if not match:
        raise UsageError(f"--http expects HOST:PORT, [IPv6]:PORT or PORT, got {preview(text)}")
    port = int(match.group("port"))
    if not 1 <= port <= 65535:
        raise UsageError(f"--http port {port} is out of range (1-65535)")
    host = (match.group("host") or "127.0.0.1").strip("[]") or "127.0.0.1"
    return Listen(host, port)


def read_token(path: str) -> str:
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"--token-file {preview(path)}: cannot read it ({error})") from None
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() for ch in token):
        raise UsageError(f"--token-file: the token must be one word of at least {MIN_TOKEN_CHARS} characters")
    return token


def bearer_guard(app: Asgi, token: str) -> Asgi:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode()

    async def guarded(
        scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token from --token-file>"}'
                headers = [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="hyperpod-nccl"'),
                    (b"content-length", str(len(body)).encode()),
                ]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def _allowed_names(listen: Listen, extra: list[str]) -> list[str]:
    names = [*_LOOPBACK_NAMES, *extra]
    if not listen.loopback:
        wildcard = listen.host in ("0.0.0.0", "::")
        names += [socket.gethostname(), socket.getfqdn()] + ([] if wildcard else [listen.url_host])
    return list(dict.fromkeys(name for name in names if name))


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP on HOST:PORT (HOST defaults to 127.0.0.1) instead of stdio; "
        "any host but loopback needs --token-file",
    )
    parser.add_argument("--token-file", metavar="FILE", help="bearer token clients must send (HTTP)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name clients use (HTTP)",
    )
    parser.add_argument(
        "--allow-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the tools may read logs, reports and bundles from (besides the working directory)",
    )
    parser.add_argument(
        "--output-dir", metavar="DIR", help="the one folder escalation bundles and snapshots are written to"
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="the kubeconfig the Kubernetes tools use (default: $KUBECONFIG)"
    )
    parser.add_argument(
        "--tool-deadline",
        type=float,
        default=DEFAULT_TOOL_DEADLINE_S,
        metavar="SECONDS",
        help="longest a tool call may run before it answers with a timeout (default %(default)s)",
    )
    parser.add_argument(
        "--allow-exec-plugin",
        action="append",
        default=[],
        metavar="PROGRAM",
        help="an exec credential plugin the kubeconfig may run (e.g. aws, kubelogin); none by default",
    )


def _settings(args: argparse.Namespace) -> ServerSettings:
    try:
        files = FileBoundary.create(args.allow_dir, args.output_dir)
        kubeconfig = load_server_kubeconfig(args.kubeconfig, args.allow_exec_plugin)
    except (OutsideBoundary, KubeconfigRefused) as error:
        raise UsageError(str(error)) from None
    if not 1 <= args.tool_deadline <= 24 * 3600:
        raise UsageError("--tool-deadline must be between 1 and 86400 seconds")
    return ServerSettings(files=files, kubeconfig=kubeconfig, tool_deadline_s=args.tool_deadline)


def _say(message: str) -> None:
    print(f"hyperpod-nccl: {message}", file=sys.stderr, flush=True)


def run_serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    listen = parse_listen(args.http) if args.http is not None else None
    token = read_token(args.token_file) if args.token_file else None
    if listen is not None and not listen.loopback and token is None:
        raise UsageError(
            f"--http {listen.url_host}:{listen.port} is reachable from other machines: give --token-file "
            "FILE (a bearer token every client must send), or bind to 127.0.0.1"
        )
    configure(settings)
    from hyperpod_nccl.mcp_server import build_server

    server = build_server()
    _start_scan_workers_parent()
    kube = settings.kubeconfig
    contexts = (
        f"{len(kube.contexts())} kubeconfig contexts from {', '.join(map(str, kube.paths))}"
        if kube.paths
        else "no kubeconfig"
    )
    if listen is None:
        _say(f"MCP server on stdio; {settings.files.describe()}; {contexts}")
        door = front_door.opened()
        if door is None:
            server.run("stdio")
        else:
            anyio.run(server.run_stdio_streams, *door.hand_over())
        _leave_abandoned_calls()
        return EXIT_OK
    _check_bindable(listen)
    _serve_http(server, listen, token, args.allow_host, f"{settings.files.describe()}; {contexts}")
    return EXIT_OK


_IDLE_WORKERS_STOP_S = 0.5


def _leave_abandoned_calls() -> None:
    """The client closed the connection. A call answered at its deadline may still hold a worker
    thread blocked on a silent endpoint (read-only, its answer already given); nobody waits for it
    now, so exit at once instead of when its socket times out."""
    workers = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    until = time.monotonic() + _IDLE_WORKERS_STOP_S  # idle workers were told to stop: let them
    for worker in workers:
        worker.join(max(0.0, until - time.monotonic()))
    if any(worker.is_alive() for worker in workers):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_OK)


def _start_scan_workers_parent() -> None:
    """Triage scans big inputs in processes forked from a fork server; starting it now, beside the
    client's handshake, spares the first triage its start-up."""
    from hyperpod_nccl.triage.parallel import start_fork_server

    threading.Thread(target=start_fork_server, name="fork-server", daemon=True).start()


def _check_bindable(listen: Listen) -> None:
    """Bind once before starting, so a port in use or a foreign address is one line, not a traceback."""
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((listen.host, listen.port))
    except (OSError, OverflowError) as error:
        raise UsageError(
            f"cannot listen on {listen.url_host}:{listen.port}: {error.strerror or error}"
        ) from None


def _serve_http(server: Any, listen: Listen, token: str | None, extra_hosts: list[str], what: str) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    names = _allowed_names(listen, extra_hosts)
    security = TransportSecuritySettings(
        allowed_hosts=[f"{name}:{listen.port}" for name in names] + names,
        allowed_origins=[
            f"{scheme}://{name}:{listen.port}" for name in names for scheme in ("http", "https")
        ],
    )
    app = server.streamable_http_app(transport_security=security, host=listen.host)
    auth = "bearer token required (--token-file)" if token else "no authentication (loopback only)"
    _say(f"MCP server at http://{listen.url_host}:{listen.port}/mcp; {auth}; Host/Origin checked; {what}")
    uvicorn.run(
        bearer_guard(app, token) if token else app, host=listen.host, port=listen.port, log_level="warning"
    )
