"""EKS access without the aws CLI: the bearer token is a presigned STS GetCallerIdentity URL bound
to the cluster by a signed `x-k8s-aws-id` header. Proven against moto's STS and EKS over HTTP."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from hyperpod_nccl.collect.eks_auth import (
    CLUSTER_ID_HEADER,
    TOKEN_PREFIX,
    KubernetesAccessError,
    eks_token,
    kubernetes_client_for_eks,
    kubernetes_client_for_eks_cluster,
)
from tests.servers.moto_server import MotoServer, start_moto_server

PEM = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    yield from start_moto_server()


@pytest.fixture
def aws(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    moto.received.clear()
    return moto


def _decode(token: str) -> str:
    assert token.startswith(TOKEN_PREFIX)
    body = token.removeprefix(TOKEN_PREFIX)
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def test_the_token_is_a_presigned_get_caller_identity_url_bound_to_the_cluster(aws: MotoServer) -> None:
    url = _decode(eks_token("ml-cluster-eks", "us-west-2"))
    query = parse_qs(urlsplit(url).query)
    assert query["Action"] == ["GetCallerIdentity"]
    assert CLUSTER_ID_HEADER in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Expires"] == ["60"]
    assert "=" not in eks_token("ml-cluster-eks", "us-west-2").removeprefix(TOKEN_PREFIX)
    assert aws.received == []  # presigning is local: nothing went on the wire


def test_the_url_is_signed_for_the_regional_sts_endpoint(aws: MotoServer) -> None:
    url = urlsplit(_decode(eks_token("ml-cluster-eks", "eu-west-1")))
    assert f"{url.scheme}://{url.netloc}" == aws.url  # the endpoint botocore is configured with
    credential = parse_qs(url.query)["X-Amz-Credential"][0]
    assert credential.endswith("/eu-west-1/sts/aws4_request")


def test_the_client_sends_the_token_as_a_bearer_and_trusts_the_cluster_ca(aws: MotoServer) -> None:
    client = kubernetes_client_for_eks(
        "ml-cluster-eks",
        "us-west-2",
        "https://ABC.gr7.us-west-2.eks.amazonaws.com",
        base64.b64encode(PEM).decode(),
    )
    header = client.configuration.get_api_key_with_prefix("authorization")
    assert header.startswith(f"Bearer {TOKEN_PREFIX}")
    assert Path(client.configuration.ssl_ca_cert).read_bytes() == PEM
    assert type(client).__name__ == "ReadOnlyApiClient"


def test_bad_ca_data_is_refused(aws: MotoServer) -> None:
    with pytest.raises(KubernetesAccessError, match="not base64") as raised:
        kubernetes_client_for_eks("c", "us-west-2", "https://x", "not base64 !!")
    assert raised.value.issue.kind == "error"


def test_the_eks_cluster_is_found_with_describe_cluster(aws: MotoServer) -> None:
    # Test setup creates the cluster with an unguarded client; the product only reads it.
    raw = boto3.client("eks", region_name="us-west-2", endpoint_url=aws.url)
    raw.create_cluster(
        name="hp-eks",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-0a1b2c3d"]},
    )
    endpoint = raw.describe_cluster(name="hp-eks")["cluster"]["endpoint"]
    aws.received.clear()
    client = kubernetes_client_for_eks_cluster("hp-eks", "us-west-2")
    assert client.configuration.host == endpoint
    assert aws.operations()[:1] == ["/clusters/hp-eks"]


def test_a_missing_eks_cluster_is_a_not_found_issue(aws: MotoServer) -> None:
    with pytest.raises(KubernetesAccessError) as raised:
        kubernetes_client_for_eks_cluster("no-such-cluster", "us-west-2")
    assert raised.value.issue.kind == "not_found"
    assert raised.value.issue.source == "eks:DescribeCluster"
