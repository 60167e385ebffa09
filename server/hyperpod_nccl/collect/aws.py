"""AWS plumbing shared by the HyperPod, EC2 and CloudWatch collectors: guarded clients, the
caller's identity, error → CollectionIssue mapping, and complete pagination.

Every client comes from `guard.aws.make_client` (read-only, adaptive retries with backoff). A
call that still fails after the retries becomes a CollectionIssue naming the IAM action it
needed, so one denied or throttled call never stops the rest of the diagnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.snapshot import CollectionIssue

# (message, done, total): total is None while the size of the work is unknown.
Progress = Callable[[str, int, int | None], None]

ACCESS_DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException"}
)
THROTTLING_CODES = frozenset(
    {"Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded", "TooManyRequests"}
)
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "ResourceNotFoundException", "InvalidGroup.NotFound"})
REJECTED_CREDENTIAL_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "AuthFailure",
    }
)


class AwsPrerequisiteError(Exception):
    """The diagnostic cannot start: no usable credentials, or the cluster does not exist."""


def no_progress(_message: str, _done: int, _total: int | None) -> None:
    """The default progress sink: nobody is watching."""


def default_session() -> boto3.session.Session:
    """boto3's module-level session: whatever the caller configured with boto3.setup_default_session()."""
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    return boto3.DEFAULT_SESSION


@dataclass(frozen=True)
class AwsClients:
    """One guarded client per service, made up front: boto3 sessions are not thread-safe, clients are."""

    sts: Any
    sagemaker: Any
    ec2: Any
    logs: Any

    @classmethod
    def create(cls, region: str, session: boto3.session.Session | None = None) -> AwsClients:
        session = session or default_session()
        return cls(*(make_client(name, region=region, session=session) for name in cls.__dataclass_fields__))


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def credentials_problem(error: BaseException) -> str | None:
    """The one wording the CLI and every tool use for missing or rejected AWS credentials; None
    when `error` is about something else."""
    if isinstance(error, NoCredentialsError):
        return f"no AWS credentials found ({error}); fix AWS credentials and rerun"
    if isinstance(error, PartialCredentialsError | CredentialRetrievalError):
        return f"AWS credentials are not usable ({error}); fix AWS credentials and rerun"
    if isinstance(error, ClientError) and error_code(error) in REJECTED_CREDENTIAL_CODES:
        said = error.response.get("Error", {}).get("Message", "")
        return f"AWS rejected the credentials ({error_code(error)}: {said}); fix AWS credentials and rerun"
    return None


def issue_for(action: str, error: Exception, *, what: str = "") -> CollectionIssue:
    """A CollectionIssue for a failed call; `action` is the IAM action, e.g. `ec2:DescribeSecurityGroups`."""
    subject = f"{what}: " if what else ""
    problem = credentials_problem(error)
    if problem:
        return CollectionIssue(source=action, kind="error", message=f"{subject}{problem}")
    if isinstance(error, ClientError):
        code = error_code(error)
        if code in ACCESS_DENIED_CODES:
            message = f"{subject}access denied; grant {action}"
            return CollectionIssue(source=action, kind="access_denied", message=message, permission=action)
        if code in THROTTLING_CODES:
            message = f"{subject}still throttled after the client's retries ({code})"
            return CollectionIssue(source=action, kind="throttled", message=message)
        kind = "not_found" if code in NOT_FOUND_CODES else "error"
        return CollectionIssue(source=action, kind=kind, message=f"{subject}{error}")
    if isinstance(error, ConnectTimeoutError | ReadTimeoutError):
        return CollectionIssue(source=action, kind="timeout", message=f"{subject}{error}")
    if isinstance(error, EndpointConnectionError):
        return CollectionIssue(source=action, kind="unreachable", message=f"{subject}{error}")
    return CollectionIssue(source=action, kind="error", message=f"{subject}{error}")


@dataclass
class Identity:
    account: str
    arn: str


def check_identity(sts: Any) -> Identity:
    """sts:GetCallerIdentity. Without working credentials nothing else can run: raise."""
    try:
        reply = sts.get_caller_identity()
    except (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError) as error:
        raise AwsPrerequisiteError(
            f"cannot reach AWS STS ({error}); check network access and rerun"
        ) from None
    except (ClientError, BotoCoreError) as error:
        problem = credentials_problem(error)
        if problem:
            raise AwsPrerequisiteError(problem) from None
        raise AwsPrerequisiteError(
            f"aws sts get-caller-identity failed: {error}; fix AWS credentials and rerun"
        ) from None
    return Identity(account=reply["Account"], arn=reply["Arn"])


@dataclass
class Listing:
    """Every item of a paginated listing, or as many as arrived before a call failed."""

    items: list[dict[str, Any]]
    complete: bool
    issue: CollectionIssue | None = None


def list_all(
    client: Any,
    operation: str,
    result_key: str,
    action: str,
    *,
    progress: Progress = no_progress,
    **params: Any,
) -> Listing:
    """Follow NextToken to the last page; a failure keeps the pages already read."""
    items: list[dict[str, Any]] = []
    try:
        for page in client.get_paginator(operation).paginate(**params):
            items.extend(page.get(result_key, []))
            progress(f"{action}: {len(items)} read", len(items), None)
    except (ClientError, BotoCoreError) as error:
        return Listing(
            items, complete=False, issue=issue_for(action, error, what=f"after {len(items)} items")
        )
    return Listing(items, complete=True)
