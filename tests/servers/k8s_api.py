"""A small Kubernetes API server on 127.0.0.1 that serves recorded objects and pod logs.

It speaks enough of the real API (list across or within namespaces, get by name, label and field
selectors, pods/log with tailLines and previous) for the official `kubernetes` client, and
records every request it receives so tests can prove no mutating request ever arrived.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_PLURALS = {"Endpoints": "endpoints", "NetworkPolicy": "networkpolicies"}


def plural_of(kind: str) -> str:
    return _PLURALS.get(kind, kind.lower() + "s")


def api_prefix(api_version: str) -> str:
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


@dataclass
class RecordedCluster:
    """The objects and logs the server answers with."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    # (namespace, pod, container or "", previous) -> log text
    logs: dict[tuple[str, str, str, bool], str] = field(default_factory=dict)
    # resource plural (or "*" for every request) -> HTTP status to answer with, e.g. 403
    denied: dict[str, int] = field(default_factory=dict)
    # (namespace, pod) -> (HTTP status, message) for its logs: the API server reads them through the
    # node's kubelet, so a pod on a lost node answers 500 with the kubelet's dial error
    log_errors: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)


@dataclass
class K8sApiServer:
    url: str
    cluster: RecordedCluster
    received: list[tuple[str, str]] = field(default_factory=list)  # (method, path)

    def methods(self) -> set[str]:
        return {method for method, _ in self.received}


def _matches_selectors(obj: dict[str, Any], query: dict[str, list[str]]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    for selector in query.get("labelSelector", []):
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            if labels.get(key) != value.lstrip("="):
                return False
    for selector in query.get("fieldSelector", []):
        for term in filter(None, selector.split(",")):
            path, _, value = term.partition("=")
            current: Any = obj
            for part in path.split("."):
                current = current.get(part) if isinstance(current, dict) else None
            if str(current) != value:
                return False
    return True


class _Handler(BaseHTTPRequestHandler):
    server_state: K8sApiServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _refuse(self) -> None:
        self.server_state.received.append((self.command, urlsplit(self.path).path))
        self._send(405, {"kind": "Status", "status": "Failure", "code": 405, "reason": "MethodNotAllowed"})

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.server_state.received.append(("GET", parts.path))
        query = parse_qs(parts.query)
        segments = [s for s in parts.path.split("/") if s]
        if segments[:1] == ["api"]:
            api_version, rest = segments[1], segments[2:]
        elif segments[:1] == ["apis"] and len(segments) >= 3:
            api_version, rest = f"{segments[1]}/{segments[2]}", segments[3:]
        else:
            self._send(404, {"kind": "Status", "code": 404})
            return
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        self._answer(api_version, namespace, rest, query)

    def _answer(self, api_version: str, namespace: str | None, rest: list[str], query: dict) -> None:
        plural, name, sub = [*rest, None, None][:3]
        denied = self.server_state.cluster.denied
        status = denied.get("*") or denied.get(f"{plural}/{sub}" if sub else plural or "")
        if status:
            user = "arn:aws:sts::111122223333:assumed-role/ReadOnly/diag"
            forbidden = f'{plural} is forbidden: User "{user}" cannot list resource "{plural}"'
            message, reason = (forbidden, "Forbidden") if status == 403 else ("Unauthorized", "Unauthorized")
            self._send(
                status,
                {"kind": "Status", "status": "Failure", "code": status, "reason": reason, "message": message},
            )
            return
        if sub == "log" and (namespace or "", name or "") in self.server_state.cluster.log_errors:
            code, message = self.server_state.cluster.log_errors[(namespace or "", name or "")]
            self._send(code, {"kind": "Status", "status": "Failure", "code": code, "message": message})
            return
        if sub == "log":
            key = (
                namespace or "",
                name or "",
                query.get("container", [""])[0],
                "true" in query.get("previous", []),
            )
            text = self.server_state.cluster.logs.get(key)
            if text is None:
                self._send(
                    400, {"kind": "Status", "code": 400, "message": "previous terminated container not found"}
                )
                return
            tail = query.get("tailLines")
            lines = text.splitlines(keepends=True)
            self._send(200, "".join(lines[-int(tail[0]) :] if tail else lines), "text/plain")
            return
        matching = [
            obj
            for obj in self.server_state.cluster.objects
            if obj.get("apiVersion") == api_version
            and plural_of(obj.get("kind", "")) == plural
            and (namespace is None or obj.get("metadata", {}).get("namespace") == namespace)
        ]
        if name:
            found = [obj for obj in matching if obj["metadata"]["name"] == name]
            if found:
                self._send(200, found[0])
            else:
                self._send(404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"})
            return
        items = [obj for obj in matching if _matches_selectors(obj, query)]
        kind = next((obj["kind"] for obj in matching), plural.capitalize())
        self._send(200, {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {}, "items": items})


def start_k8s_api_server(cluster: RecordedCluster) -> Iterator[K8sApiServer]:
    """Generator for a pytest fixture: yields a running server, stops it afterwards."""
    state = K8sApiServer(url="", cluster=cluster)
    handler = type("Handler", (_Handler,), {"server_state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.url = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        thread.join(timeout=10)
