"""The nodes of a HyperPod cluster as probe targets: `DescribeCluster` for the cluster id (the
SSM target uses the id, not the name) and orchestrator, `ListClusterNodes` for the nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_nccl.collect.aws import credentials_problem
from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.probes.runners.base import NodeTarget, hyperpod_ssm_target


class ClusterLookupError(Exception):
    """The cluster or its nodes could not be read; the message says what to do."""


@dataclass(frozen=True)
class ClusterNodes:
    cluster_name: str
    cluster_id: str
    orchestrator: Literal["eks", "slurm"] | None
    nodes: list[NodeTarget]


def cluster_nodes_from_responses(described: dict[str, Any], summaries: list[dict[str, Any]]) -> ClusterNodes:
    """Build targets from a `DescribeCluster` response and `ListClusterNodes` summaries, so a
    caller that already read them (the diagnose collector) does not read them twice."""
    cluster_id = described["ClusterArn"].rsplit("/", 1)[-1]
    orchestrator = "eks" if (described.get("Orchestrator") or {}).get("Eks") else "slurm"
    nodes = [
        NodeTarget(
            instance_id=summary.get("InstanceId"),
            instance_group=summary.get("InstanceGroupName"),
            instance_type=summary.get("InstanceType"),
            status=(summary.get("InstanceStatus") or {}).get("Status"),
            hostname=summary.get("PrivateDnsHostname"),
            ssm_target=hyperpod_ssm_target(cluster_id, summary["InstanceGroupName"], summary["InstanceId"])
            if summary.get("InstanceGroupName") and summary.get("InstanceId")
            else None,
        )
        for summary in summaries
    ]
    return ClusterNodes(described["ClusterName"], cluster_id, orchestrator, nodes)


def list_cluster_nodes(
    cluster: str, region: str, *, session: boto3.session.Session | None = None
) -> ClusterNodes:
    client = make_client("sagemaker", region=region, session=session)
    try:
        described = client.describe_cluster(ClusterName=cluster)
        summaries: list[dict[str, Any]] = []
        request: dict[str, Any] = {"ClusterName": cluster}
        while True:
            page = client.list_cluster_nodes(**request)
            summaries += page.get("ClusterNodeSummaries", [])
            if not page.get("NextToken"):
                break
            request["NextToken"] = page["NextToken"]
    except (ClientError, BotoCoreError) as error:
        if problem := credentials_problem(error):
            raise ClusterLookupError(problem) from None
        if isinstance(error, BotoCoreError):
            raise ClusterLookupError(f"cannot reach SageMaker in {region}: {error}") from None
        code = error.response.get("Error", {}).get("Code", "")
        if code in ("AccessDeniedException", "AccessDenied"):
            raise ClusterLookupError(
                f"{code}: grant sagemaker:DescribeCluster and sagemaker:ListClusterNodes (operations.md § 2)"
            ) from None
        raise ClusterLookupError(f"cannot read cluster {cluster!r} in {region}: {error}") from None
    return cluster_nodes_from_responses(described, summaries)
