"""The HyperPod collector: DescribeCluster, every page of ListClusterNodes and ListClusterEvents.

Responses are kept as the API returns them (for the bundle) and reduced to typed snapshot parts
(for the checks). Nothing here judges: "Failure" is recorded, the analyzers decide what it means.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hyperpod_nccl.collect.aws import (
    NOT_FOUND_CODES,
    AwsPrerequisiteError,
    Listing,
    Progress,
    error_code,
    list_all,
    no_progress,
)
from hyperpod_nccl.snapshot.aws import ClusterEvent, ClusterNode, HyperPodCluster, InstanceGroup

_PAGE_SIZE = 100  # the API's maximum for both listings


class ClusterNotFound(AwsPrerequisiteError):
    def __init__(self, cluster: str, region: str, known: Listing) -> None:
        self.known = sorted(summary["ClusterName"] for summary in known.items)
        listed = ", ".join(self.known) or "none"
        if known.issue:
            listed = f"could not be listed ({known.issue.message})"
        super().__init__(
            f"HyperPod cluster {cluster!r} not found in {region}. Clusters in {region}: {listed}. "
            "Confirm the cluster name and region."
        )


def _is_not_found(error: ClientError) -> bool:
    # The service says ResourceNotFound; older endpoints (and moto) say ValidationException.
    message = str(error.response.get("Error", {}).get("Message", "")).lower()
    return error_code(error) in NOT_FOUND_CODES or "could not find" in message or "not found" in message


def _json_safe(value: Any) -> Any:
    """A boto3 response as plain JSON data (datetimes as ISO 8601), metadata dropped."""
    value = {key: item for key, item in value.items() if key != "ResponseMetadata"}
    return json.loads(json.dumps(value, default=_iso))


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def describe_cluster(sagemaker: Any, cluster: str, region: str) -> dict[str, Any]:
    """sagemaker:DescribeCluster as JSON data; a missing cluster raises with the region's clusters."""
    try:
        return _json_safe(sagemaker.describe_cluster(ClusterName=cluster))
    except ClientError as error:
        if not _is_not_found(error):
            raise
    known = list_all(sagemaker, "list_clusters", "ClusterSummaries", "sagemaker:ListClusters")
    raise ClusterNotFound(cluster, region, known)


def _orchestrator(described: dict[str, Any]) -> tuple[str, str | None]:
    eks = (described.get("Orchestrator") or {}).get("Eks") or {}
    # DescribeCluster names an EKS orchestrator explicitly; a cluster without one runs Slurm.
    return ("eks", eks.get("ClusterArn")) if eks else ("slurm", None)


def _instance_group(group: dict[str, Any]) -> InstanceGroup:
    return InstanceGroup(
        name=group["InstanceGroupName"],
        instance_type=group.get("InstanceType"),
        current_count=group.get("CurrentCount"),
        target_count=group.get("TargetCount"),
        status=group.get("Status"),
        security_group_ids=(group.get("OverrideVpcConfig") or {}).get("SecurityGroupIds", []),
    )


def parse_cluster(described: dict[str, Any]) -> HyperPodCluster:
    orchestrator, eks_arn = _orchestrator(described)
    vpc = described.get("VpcConfig") or {}
    return HyperPodCluster(
        name=described["ClusterName"],
        arn=described["ClusterArn"],
        cluster_id=described["ClusterArn"].rsplit("/", 1)[-1],
        status=described.get("ClusterStatus", "Unknown"),
        failure_message=described.get("FailureMessage") or None,
        orchestrator=orchestrator,
        eks_cluster_arn=eks_arn,
        node_recovery=described.get("NodeRecovery"),
        security_group_ids=vpc.get("SecurityGroupIds", []),
        subnets=vpc.get("Subnets", []),
        instance_groups=[_instance_group(group) for group in described.get("InstanceGroups") or []],
    )


def _node(summary: dict[str, Any]) -> ClusterNode:
    status = summary.get("InstanceStatus") or {}
    launch = summary.get("LaunchTime")
    return ClusterNode(
        instance_id=summary["InstanceId"],
        instance_group=summary.get("InstanceGroupName", ""),
        instance_type=summary.get("InstanceType"),
        status=status.get("Status", "Unknown"),
        message=status.get("Message") or None,
        launch_time=launch.isoformat() if isinstance(launch, datetime) else launch,
    )


def list_nodes(
    sagemaker: Any, cluster: str, *, progress: Progress = no_progress
) -> tuple[list[ClusterNode], Listing]:
    """Every node of the cluster, page by page (thousands of nodes is the normal case)."""
    listing = list_all(
        sagemaker,
        "list_cluster_nodes",
        "ClusterNodeSummaries",
        "sagemaker:ListClusterNodes",
        progress=progress,
        ClusterName=cluster,
        PaginationConfig={"PageSize": _PAGE_SIZE},
    )
    return [_node(item) for item in listing.items], listing


def _event(item: dict[str, Any]) -> ClusterEvent:
    when = item.get("EventTime")
    return ClusterEvent(
        event_id=item["EventId"],
        event_time=when.isoformat() if isinstance(when, datetime) else str(when),
        resource_type=item.get("ResourceType", "Cluster"),
        level=item.get("EventLevel"),
        description=item.get("Description", ""),
        instance_group=item.get("InstanceGroupName"),
        instance_id=item.get("InstanceId"),
    )


def list_events(
    sagemaker: Any, cluster: str, since: datetime, *, progress: Progress = no_progress
) -> tuple[list[ClusterEvent], Listing]:
    """Every cluster event in the window, newest first, page by page."""
    listing = list_all(
        sagemaker,
        "list_cluster_events",
        "Events",
        "sagemaker:ListClusterEvents",
        progress=progress,
        ClusterName=cluster,
        EventTimeAfter=since,
        SortOrder="Descending",
        PaginationConfig={"PageSize": _PAGE_SIZE},
    )
    return [_event(item) for item in listing.items], listing
