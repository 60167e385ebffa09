"""The Prometheus HTTP API reader: instant queries, range queries and series, nothing else.

It talks to a Prometheus (or Thanos, Mimir, VictoriaMetrics: anything serving `/api/v1`) at a
URL the user gives, or to Amazon Managed Service for Prometheus with SigV4 signing from the
credentials boto3 would use. Every request passes `guard.prometheus.check_read` first. Every
answer is bounded: a time limit for the whole request (not only between bytes), a response size
cap, and the server's own `timeout` parameter. Any failure is a `PrometheusError` whose `kind`
is a CollectionIssue kind, so callers record it and carry on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from hyperpod_nccl.guard.prometheus import AMP_SIGNING_SERVICE, check_read

IssueKind = Literal["access_denied", "throttled", "not_found", "unreachable", "timeout", "error"]
_ERROR_TEXT_CHARS = 200


@dataclass(frozen=True)
class ReaderLimits:
    # A healthy Prometheus answers a 2-hour range query over a few thousand series in seconds;
    # 30 s leaves room for a loaded one without letting one query hold up the whole report.
    timeout_s: float = 30.0
    connect_timeout_s: float = 5.0
    # 64 MiB of JSON is ~2 million samples: far beyond what the bounded queries ask for, and
    # small enough that a misconfigured proxy streaming forever cannot exhaust memory.
    max_response_bytes: int = 64 * 1024 * 1024


class PrometheusError(Exception):
    def __init__(self, kind: IssueKind, message: str, permission: str | None = None) -> None:
        super().__init__(message)
        self.kind: IssueKind = kind
        self.permission = permission


def _printable(text: str) -> str:
    cleaned = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return cleaned[:_ERROR_TEXT_CHARS] + ("..." if len(cleaned) > _ERROR_TEXT_CHARS else "")


class SigV4Auth(httpx.Auth):
    """Signs each request for Amazon Managed Service for Prometheus (service `aps`), with the
    credentials of a boto3 session, refreshed per request as boto3 itself would."""

    requires_request_body = True

    def __init__(self, session: Any, region: str) -> None:
        self.session = session
        self.region = region

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        from botocore.auth import SigV4Auth as BotoSigV4
        from botocore.awsrequest import AWSRequest

        credentials = self.session.get_credentials()
        if credentials is None:
            raise PrometheusError("access_denied", "no AWS credentials found for Amazon Managed Prometheus")
        signed = AWSRequest(
            method=request.method,
            url=str(request.url),
            data=request.content,
            headers={"Content-Type": request.headers.get("Content-Type", "")},
        )
        BotoSigV4(credentials.get_frozen_credentials(), AMP_SIGNING_SERVICE, self.region).add_auth(signed)
        request.headers.update(dict(signed.headers.items()))
        yield request


class PrometheusReader:
    """One Prometheus API root. Thread-safe: the collector runs queries from a small pool."""

    def __init__(
        self,
        base_url: str,
        *,
        auth: httpx.Auth | None = None,
        limits: ReaderLimits | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.limits = limits or ReaderLimits()
        self._client = httpx.Client(
            auth=auth,
            transport=transport,
            timeout=httpx.Timeout(self.limits.timeout_s, connect=self.limits.connect_timeout_s),
            follow_redirects=False,
            headers={"User-Agent": "hyperpod-nccl", "Accept": "application/json"},
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> PrometheusReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def instant(self, promql: str, at: int) -> list[dict[str, Any]]:
        data = self._call("/api/v1/query", {"query": promql, "time": str(at)})
        return _result(data, "vector")

    def range(self, promql: str, start: int, end: int, step_s: int) -> list[dict[str, Any]]:
        form = {"query": promql, "start": str(start), "end": str(end), "step": f"{step_s}s"}
        return _result(self._call("/api/v1/query_range", form), "matrix")

    def series(self, match: str, start: int, end: int) -> list[dict[str, str]]:
        data = self._call("/api/v1/series", {"match[]": match, "start": str(start), "end": str(end)})
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise PrometheusError("error", "the series answer is not a list of label sets")
        return data

    def _call(self, path: str, form: dict[str, str]) -> Any:
        permission = check_read("POST", path)
        # The server stops evaluating at its own limit too, and says so as errorType "timeout".
        form = {**form, "timeout": f"{max(1, int(self.limits.timeout_s) - 1)}s"}
        url = f"{self.base_url}{path}"
        try:
            with self._client.stream("POST", url, data=form) as response:
                body = self._read(response)
        except httpx.TimeoutException:
            raise PrometheusError(
                "timeout", f"{path}: no answer within {self.limits.timeout_s:g} s"
            ) from None
        except httpx.TransportError as error:
            raise PrometheusError("unreachable", f"{self.base_url}: {_printable(str(error))}") from None
        return _decode(response.status_code, response.headers, body, path, permission)

    def _read(self, response: httpx.Response) -> bytes:
        deadline = time.monotonic() + self.limits.timeout_s
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self.limits.max_response_bytes:
                raise PrometheusError(
                    "error",
                    f"answer larger than {self.limits.max_response_bytes // (1024 * 1024)} MiB: "
                    "shorten the window or narrow to one node",
                )
            if time.monotonic() > deadline:
                raise PrometheusError("timeout", f"answer still streaming after {self.limits.timeout_s:g} s")
            chunks.append(chunk)
        return b"".join(chunks)


def _status_error(status: int, headers: httpx.Headers, path: str, permission: str) -> PrometheusError | None:
    if status in (401, 403):
        return PrometheusError("access_denied", f"{path}: HTTP {status}; grant {permission}", permission)
    if status == 404:
        return PrometheusError(
            "not_found",
            f"{path}: HTTP 404, no Prometheus API here (is the base URL right, e.g. a /prometheus prefix?)",
        )
    if status == 429:
        return PrometheusError("throttled", f"{path}: HTTP 429, the server is rate limiting queries")
    if 300 <= status < 400:
        where = _printable(headers.get("location", "elsewhere"))
        return PrometheusError("error", f"{path}: HTTP {status}, redirected to {where} (a login proxy?)")
    return None


def _decode(status: int, headers: httpx.Headers, body: bytes, path: str, permission: str) -> Any:
    error = _status_error(status, headers, path, permission)
    if error:
        raise error
    try:
        envelope = json.loads(body)
    except ValueError:
        raise PrometheusError(
            "error",
            f"{path}: HTTP {status}, not a Prometheus answer: "
            f"{_printable(body[:200].decode('utf-8', 'replace'))!r}",
        ) from None
    if not isinstance(envelope, dict) or envelope.get("status") not in ("success", "error"):
        raise PrometheusError("error", f"{path}: HTTP {status}, the answer has no Prometheus status field")
    if envelope["status"] == "error" or status >= 400:
        kind: IssueKind = "timeout" if envelope.get("errorType") in ("timeout", "canceled") else "error"
        message = _printable(str(envelope.get("error", "")))
        raise PrometheusError(kind, f"{path}: HTTP {status} {envelope.get('errorType', 'error')}: {message}")
    return envelope.get("data")


def _result(data: Any, expected: str) -> list[dict[str, Any]]:
    if (
        not isinstance(data, dict)
        or data.get("resultType") != expected
        or not isinstance(data.get("result"), list)
    ):
        raise PrometheusError("error", f"the answer is not a {expected} result")
    rows = data["result"]
    key = "value" if expected == "vector" else "values"
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("metric"), dict) or key not in row:
            raise PrometheusError("error", f"a {expected} row has no metric labels or {key}")
    return rows


def amp_reader(
    workspace: str, region: str, session: Any, limits: ReaderLimits | None = None
) -> PrometheusReader:
    from hyperpod_nccl.guard.prometheus import amp_base_url

    return PrometheusReader(amp_base_url(workspace, region), auth=SigV4Auth(session, region), limits=limits)
