"""Kubernetes access to an EKS cluster without the aws CLI or a kubeconfig.

EKS authenticates a bearer token that is a presigned STS GetCallerIdentity URL: the API server
calls that URL and learns who signed it. The `x-k8s-aws-id` header, covered by the signature,
binds the token to one cluster so it cannot be replayed against another. This is the same token
`aws eks get-token` and aws-iam-authenticator produce.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import re
import time
from pathlib import Path
from tempfile import NamedTemporaryFile
from typing import Any, Literal

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from kubernetes.client import Configuration

from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.guard.k8s import ReadOnlyApiClient, read_only_api_client
from hyperpod_nccl.guard.validate import EksClusterName, preview, validated
from hyperpod_nccl.snapshot import CollectionIssue

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# aws-iam-authenticator presigns for 60 s; EKS accepts a token for 15 minutes after signing, so
# the client asks for a fresh one well before that.
_PRESIGN_SECONDS = 60
_REFRESH_AFTER_SECONDS = 10 * 60
_HTTPS_ENDPOINT = re.compile(r"https://[A-Za-z0-9.-]{1,253}(:\d{1,5})?(/[A-Za-z0-9._~/-]*)?")


class KubernetesAccessError(Exception):
    """No Kubernetes client could be built; `issue` is what the report records instead."""

    def __init__(self, issue: CollectionIssue) -> None:
        self.issue = issue
        super().__init__(issue.message)


def eks_token(cluster_name: str, region: str, *, session: boto3.session.Session | None = None) -> str:
    """A bearer token for the EKS cluster `cluster_name`, signed with the caller's credentials."""
    sts = make_client("sts", region=region, session=session)

    def bind_to_cluster(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    # before-sign runs on the request about to be presigned, so the header is in the signature.
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", bind_to_cluster)
    url = sts.generate_presigned_url(
        "get_caller_identity", Params={}, ExpiresIn=_PRESIGN_SECONDS, HttpMethod="GET"
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _write_ca_file(ca_data: str) -> str:
    """The kubernetes client only takes a CA *file*; the file lives as long as the process."""
    try:
        pem = base64.b64decode(ca_data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError("the EKS certificate authority data is not base64") from error
    with NamedTemporaryFile("wb", prefix="hyperpod-nccl-eks-ca-", suffix=".pem", delete=False) as handle:
        handle.write(pem)
    atexit.register(Path(handle.name).unlink, missing_ok=True)
    return handle.name


def kubernetes_client_for_eks(
    cluster_name: str,
    region: str,
    endpoint: str,
    ca_data: str,
    *,
    session: boto3.session.Session | None = None,
) -> ReadOnlyApiClient:
    """A read-only client for an EKS cluster from its endpoint and CA (eks:DescribeCluster)."""
    configuration = Configuration(host=endpoint)
    try:
        configuration.ssl_ca_cert = _write_ca_file(ca_data)
    except ValueError as error:
        issue = CollectionIssue(
            source="eks:DescribeCluster certificateAuthority", kind="error", message=str(error)
        )
        raise KubernetesAccessError(issue) from error
    configuration.api_key_prefix["authorization"] = "Bearer"
    signed_at: float | None = None  # never signed: sign on first use, whatever the clock reads

    def refresh_token(config: Configuration) -> None:
        nonlocal signed_at
        if signed_at is None or time.monotonic() - signed_at > _REFRESH_AFTER_SECONDS:
            config.api_key["authorization"] = eks_token(cluster_name, region, session=session)
            signed_at = time.monotonic()

    try:
        refresh_token(configuration)
    except (BotoCoreError, ClientError) as error:
        raise KubernetesAccessError(_sts_issue(error)) from error
    configuration.refresh_api_key_hook = refresh_token
    return read_only_api_client(configuration)


def _sts_issue(error: Exception) -> CollectionIssue:
    return CollectionIssue(
        source="sts:GetCallerIdentity (EKS token)",
        kind="access_denied" if isinstance(error, ClientError) else "error",
        message=f"could not sign an EKS token: {error}",
        permission="sts:GetCallerIdentity",
    )


_EKS_ERROR_KINDS: dict[str, Literal["not_found", "access_denied"]] = {
    "ResourceNotFoundException": "not_found",
    "AccessDeniedException": "access_denied",
}


def kubernetes_client_for_eks_cluster(
    cluster_name: str, region: str, *, session: boto3.session.Session | None = None
) -> ReadOnlyApiClient:
    """Look the EKS cluster up (eks:DescribeCluster) and build a read-only client for it.

    The name comes from the HyperPod cluster's orchestrator ARN and the endpoint from AWS's
    answer: both are checked before they configure a client (a name an EKS cluster can have, an
    https:// URL with no credentials in it)."""
    try:
        validated(EksClusterName, cluster_name)
    except ValueError as error:
        issue = CollectionIssue(
            source="eks:DescribeCluster", kind="error", message=f"EKS cluster name: {error}"
        )
        raise KubernetesAccessError(issue) from None
    try:
        cluster = make_client("eks", region=region, session=session).describe_cluster(name=cluster_name)
    except ClientError as error:
        kind = _EKS_ERROR_KINDS.get(error.response.get("Error", {}).get("Code", ""), "error")
        raise KubernetesAccessError(
            CollectionIssue(
                source="eks:DescribeCluster",
                kind=kind,
                message=f"EKS cluster {cluster_name!r} in {region}: {error}",
                permission="eks:DescribeCluster" if kind == "access_denied" else None,
            )
        ) from error
    except BotoCoreError as error:
        issue = CollectionIssue(source="eks:DescribeCluster", kind="unreachable", message=str(error))
        raise KubernetesAccessError(issue) from error
    details = cluster["cluster"]
    ca_data = (details.get("certificateAuthority") or {}).get("data")
    endpoint = str(details.get("endpoint") or "")
    if endpoint and not _HTTPS_ENDPOINT.fullmatch(endpoint):
        message = (
            f"EKS cluster {cluster_name!r} reports an endpoint that is not an https URL: {preview(endpoint)}"
        )
        raise KubernetesAccessError(
            CollectionIssue(source="eks:DescribeCluster", kind="error", message=message)
        )
    if not endpoint or not ca_data:
        message = f"EKS cluster {cluster_name!r} has no API endpoint yet (status {details.get('status')})"
        raise KubernetesAccessError(
            CollectionIssue(source="eks:DescribeCluster", kind="error", message=message)
        )
    return kubernetes_client_for_eks(cluster_name, region, details["endpoint"], ca_data, session=session)
