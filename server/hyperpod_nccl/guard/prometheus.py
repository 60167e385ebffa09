"""Read-only enforcement and input validation for the Prometheus HTTP reader.

The reader may reach exactly three read endpoints of the Prometheus HTTP API. Queries go out as
POST with a form body, as the Prometheus documentation recommends for long selectors: POST on
these paths evaluates PromQL and changes nothing. Admin, write and lifecycle endpoints
(`/api/v1/admin/...`, `/api/v1/write`, `/-/reload`, `/-/quit`) are refused before a request is
built. The same table names the Amazon Managed Service for Prometheus IAM action each path needs,
which `guard.aws.iam_actions` adds to the policy in references/operations.md § 2.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

from pydantic import AfterValidator, Field

from hyperpod_nccl.guard.validate import Placeholder

# Path under the API root → the IAM action Amazon Managed Service for Prometheus checks.
READ_PATHS: dict[str, str] = {
    "/api/v1/query": "aps:QueryMetrics",
    "/api/v1/query_range": "aps:QueryMetrics",
    "/api/v1/series": "aps:GetSeries",
}
READ_METHODS = frozenset({"GET", "POST"})
# SigV4 signing name of Amazon Managed Service for Prometheus.
AMP_SIGNING_SERVICE = "aps"


class PrometheusReadOnlyViolation(PermissionError):
    """Raised before a request to anything but the three query endpoints is built."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(f"hyperpod-nccl only queries Prometheus: refused {method} {path} before it was sent")


def check_read(method: str, path: str) -> str:
    """The IAM action for an allowed (method, API path); raises for anything else."""
    if method.upper() not in READ_METHODS or path not in READ_PATHS:
        raise PrometheusReadOnlyViolation(method, path)
    return READ_PATHS[path]


def amp_iam_actions() -> set[str]:
    return set(READ_PATHS.values())


def _prometheus_url(value: str) -> str:
    """An http(s) base URL with a host, optionally a path prefix (a proxy's `/prometheus`).

    Credentials in the URL would be printed in every report and bundle, and a query string or
    fragment would be silently mixed into each request: all are refused with the reason.
    """
    if any(ch.isspace() or ord(ch) < 32 for ch in value) or len(value) > 2048:
        raise ValueError("a Prometheus URL cannot contain spaces or control characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL with a host (example: http://prometheus:9090)")
    if parts.username or parts.password:
        raise ValueError("put no credentials in the Prometheus URL: they would be printed in reports")
    if parts.query or parts.fragment:
        raise ValueError("give the Prometheus base URL without a query string or fragment")
    path = parts.path.rstrip("/")
    if path.endswith("/api/v1") or "/api/v1/" in path:
        raise ValueError("give the Prometheus base URL, without /api/v1 (example: http://prometheus:9090)")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


PrometheusUrl = Annotated[
    str,
    AfterValidator(_prometheus_url),
    Placeholder("prometheus-url"),
    Field(description="Prometheus base URL, e.g. http://prometheus.monitoring:9090 (no /api/v1)."),
]

_WORKSPACE = re.compile(r"ws-[A-Za-z0-9][A-Za-z0-9-]{0,63}")


def _workspace_id(value: str) -> str:
    if not _WORKSPACE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not an Amazon Managed Service for Prometheus workspace id "
            "(example: ws-12345678-abcd-1234-abcd-123456789012)"
        )
    return value


AmpWorkspaceId = Annotated[
    str,
    AfterValidator(_workspace_id),
    Field(description="Amazon Managed Service for Prometheus workspace id, e.g. ws-1234abcd-...."),
]


def amp_base_url(workspace: str, region: str) -> str:
    """The Prometheus-compatible query root of a workspace (both values already validated)."""
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace}"
