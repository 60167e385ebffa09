"""moto's AWS server on 127.0.0.1, with a log of every request that reached it.

The log is what lets a test prove a refused call never went on the wire.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server


@dataclass
class ReceivedRequest:
    method: str
    path: str
    operation: str  # X-Amz-Target, the Action parameter, or the REST path


@dataclass
class MotoServer:
    url: str
    received: list[ReceivedRequest] = field(default_factory=list)

    def operations(self) -> list[str]:
        return [request.operation for request in self.received]


def _operation_of(environ: dict[str, Any], body: bytes) -> str:
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return target.rsplit(".", 1)[-1]
    query = parse_qs(environ.get("QUERY_STRING", "")) | parse_qs(body.decode("utf-8", "replace"))
    if "Action" in query:
        return query["Action"][0]
    return environ.get("PATH_INFO", "")


def start_moto_server() -> Iterator[MotoServer]:
    """Generator for a pytest fixture: yields a running server, stops it afterwards."""
    import io

    backend = DomainDispatcherApplication(create_backend_app)
    server_info = MotoServer(url="")

    def recording_app(environ: dict[str, Any], start_response: Any) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        server_info.received.append(
            ReceivedRequest(
                environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), _operation_of(environ, body)
            )
        )
        return backend(environ, start_response)

    server = make_server("127.0.0.1", 0, recording_app, threaded=True, request_handler=MotoRequestHandler)
    server_info.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_info
    finally:
        server.shutdown()
        thread.join(timeout=10)
