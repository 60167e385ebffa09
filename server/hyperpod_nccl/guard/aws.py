"""Read-only enforcement for every boto3 client the product creates.

A botocore `before-parameter-build` hook runs before the request is serialised, so a refused
operation never reaches the wire. The allowlist is explicit, per service and per operation: it is
also the source of the IAM policy in references/operations.md (see `iam_actions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import boto3
from botocore.config import Config

from hyperpod_nccl.guard import ssm as ssm_guard
from hyperpod_nccl.guard.prometheus import amp_iam_actions

# Every AWS operation the product may call. Only reads: Describe*/List*/Get*, log searches and
# Logs Insights queries (which read and aggregate server-side), and the STS identity check.
READ_OPERATIONS: Mapping[str, frozenset[str]] = {
    "sts": frozenset({"GetCallerIdentity"}),
    "sagemaker": frozenset(
        {
            "DescribeCluster",
            "DescribeClusterNode",
            "DescribeClusterEvent",
            "ListClusters",
            "ListClusterNodes",
            "ListClusterEvents",
        }
    ),
    "eks": frozenset({"DescribeCluster", "ListClusters"}),
    "ec2": frozenset(
        {
            "DescribeSecurityGroups",
            "DescribeSecurityGroupRules",
            "DescribeInstances",
            "DescribeInstanceTypes",
            "DescribeNetworkInterfaces",
            "DescribeSubnets",
        }
    ),
    "logs": frozenset(
        {
            "DescribeLogGroups",
            "DescribeLogStreams",
            "FilterLogEvents",
            "GetLogEvents",
            "StartQuery",
            "GetQueryResults",
        }
    ),
    "ssm": frozenset({"DescribeInstanceInformation"}),
}

# Opening an SSM session is not a read, but it is how the probe runner reaches a node to run the
# project's own read-only scripts. Only clients created for the probe runner may do it.
PROBE_SESSION_OPERATIONS: Mapping[str, frozenset[str]] = {
    "ssm": frozenset({"StartSession", "TerminateSession"}),
}

# Adaptive retries absorb throttling; three attempts of at most 5 s to connect and 20 s to read
# bound one call to about a minute (six of 60 s held a silent endpoint for 423 s).
CLIENT_CONFIG = Config(
    retries={"mode": "adaptive", "total_max_attempts": 3},
    connect_timeout=5,
    read_timeout=20,
    user_agent_extra="hyperpod-nccl",
)


class ReadOnlyViolation(PermissionError):
    """Raised before a non-read AWS operation leaves the process."""

    def __init__(self, service: str, operation: str, why: str | None = None) -> None:
        self.service = service
        self.operation = operation
        because = f" ({why})" if why else ""
        super().__init__(
            f"hyperpod-nccl is read-only: refused {service}:{operation}{because} before it was sent. "
            "Suggest the command to the user instead of running it."
        )


# Operations allowed only with parameters the guard checks itself: (params) -> why refused, or None.
_PARAMETER_CHECKS = {
    "StartSession": ssm_guard.start_session_refusal,
    "TerminateSession": ssm_guard.terminate_session_refusal,
}


def allowed_operations(service: str, *, probe_sessions: bool = False) -> frozenset[str]:
    allowed = READ_OPERATIONS.get(service, frozenset())
    if probe_sessions:
        allowed |= PROBE_SESSION_OPERATIONS.get(service, frozenset())
    return allowed


def iam_actions(*, include_probe_sessions: bool = True) -> list[str]:
    """The IAM actions the product can use, e.g. `sagemaker:ListClusterNodes`, sorted."""
    actions = {f"{service}:{op}" for service, ops in READ_OPERATIONS.items() for op in ops}
    # Amazon Managed Service for Prometheus queries are signed HTTP reads, not boto3 operations.
    actions |= amp_iam_actions()
    if include_probe_sessions:
        actions |= {f"{service}:{op}" for service, ops in PROBE_SESSION_OPERATIONS.items() for op in ops}
    return sorted(actions)


def make_read_only_hook(service: str, *, probe_sessions: bool = False):
    """A botocore event handler that refuses every operation outside the allowlist."""
    allowed = allowed_operations(service, probe_sessions=probe_sessions)

    def refuse_unless_allowed(model: Any, params: Any = None, **_: Any) -> None:
        if model.name not in allowed:
            raise ReadOnlyViolation(service, model.name)
        check = _PARAMETER_CHECKS.get(model.name) if service == "ssm" else None
        why = check(params if isinstance(params, dict) else {}) if check else None
        if why:
            raise ReadOnlyViolation(service, model.name, why)

    return refuse_unless_allowed


def guard_client(client: Any, *, probe_sessions: bool = False) -> Any:
    """Attach the read-only hook to an existing boto3 client and return it."""
    service = client.meta.service_model.service_name
    hook = make_read_only_hook(service, probe_sessions=probe_sessions)
    # Client event emitters are per client: the bare event name covers every operation.
    client.meta.events.register_first("before-parameter-build", hook)
    if probe_sessions and service == "ssm":
        client.meta.events.register("after-call.ssm.StartSession", ssm_guard.remember_session)
    return client


def make_client(
    service: str,
    *,
    region: str | None = None,
    session: boto3.session.Session | None = None,
    probe_sessions: bool = False,
) -> Any:
    """The only way the product creates an AWS client: guarded, with retries and time limits.

    The endpoint follows botocore's own configuration (`AWS_ENDPOINT_URL` and friends), which is
    how the tests point clients at a local moto server.
    """
    if service not in READ_OPERATIONS and service not in PROBE_SESSION_OPERATIONS:
        raise ValueError(f"hyperpod-nccl does not use the AWS service {service!r}")
    session = session or boto3.session.Session()
    client = session.client(service, region_name=region, config=CLIENT_CONFIG)
    return guard_client(client, probe_sessions=probe_sessions)
