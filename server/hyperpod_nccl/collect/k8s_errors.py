"""Kubernetes API failures as CollectionIssues: what was denied (with the RBAC verb it needed),
what could not be reached, what failed otherwise."""

from __future__ import annotations

import json
from typing import Literal

import urllib3
from kubernetes.client.exceptions import ApiException

from hyperpod_nccl.snapshot import CollectionIssue

IssueKind = Literal["access_denied", "throttled", "not_found", "unreachable", "timeout", "error"]
_STATUS_KINDS: dict[int, IssueKind] = {
    401: "access_denied",
    403: "access_denied",
    404: "not_found",
    429: "throttled",
}


def issue_for(source: str, permission: str, error: Exception) -> CollectionIssue:
    """What a failed call means for the report: denied (with the verb), unreachable, or an error."""
    if isinstance(error, ApiException):
        kind = _STATUS_KINDS.get(error.status or 0, "error")
        return CollectionIssue(
            source=f"kubernetes {source}",
            kind=kind,
            message=f"HTTP {error.status} {error.reason}: {_status_message(error)}",
            permission=permission if kind == "access_denied" else None,
        )
    if isinstance(error, ValueError):  # a proxy or load balancer answered instead of the API server
        return CollectionIssue(
            source=f"kubernetes {source}", kind="error", message=f"not a Kubernetes API answer: {error}"
        )
    if isinstance(error, urllib3.exceptions.TimeoutError):
        return CollectionIssue(source=f"kubernetes {source}", kind="timeout", message=str(error))
    return CollectionIssue(
        source=f"kubernetes {source}",
        kind="unreachable",
        message=f"the Kubernetes API server could not be reached: {error}",
    )


def _status_message(error: ApiException) -> str:
    try:
        return str(json.loads(error.body or "{}").get("message") or error.body or "")
    except (ValueError, AttributeError):
        return str(error.body or "")
