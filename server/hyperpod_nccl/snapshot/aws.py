"""What the AWS collectors saw: caller identity, the HyperPod cluster, its nodes and events,
security groups and CloudWatch. Field names follow the AWS API responses they come from, in
snake_case; every list holds everything that was listed, and a `*_complete` flag says whether
the listing reached its last page."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_nccl.bounded import Text


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InstanceGroup(_Part):
    name: str
    instance_type: str | None = None
    current_count: int | None = None
    target_count: int | None = None
    status: str | None = None
    security_group_ids: list[str] = Field(
        default_factory=list, description="OverrideVpcConfig.SecurityGroupIds, when the group overrides."
    )


class HyperPodCluster(_Part):
    """sagemaker:DescribeCluster, reduced to what the checks read."""

    name: str
    arn: str
    cluster_id: str = Field(description="The last part of the ARN; names the CloudWatch log group.")
    status: str
    failure_message: Text | None = None
    orchestrator: Literal["eks", "slurm"]
    eks_cluster_arn: str | None = None
    node_recovery: str | None = Field(default=None, description="Automatic | None; absent on old clusters.")
    security_group_ids: list[str] = Field(default_factory=list, description="VpcConfig.SecurityGroupIds.")
    subnets: list[str] = Field(default_factory=list)
    instance_groups: list[InstanceGroup] = Field(default_factory=list)


class ClusterNode(_Part):
    """One row of sagemaker:ListClusterNodes."""

    instance_id: str
    instance_group: str
    instance_type: str | None = None
    status: str
    message: Text | None = None
    launch_time: str | None = None


class ClusterEvent(_Part):
    """One row of sagemaker:ListClusterEvents."""

    event_id: str
    event_time: str
    resource_type: str
    level: str | None = None
    description: str = ""
    instance_group: str | None = None
    instance_id: str | None = None


class SecurityGroupRule(_Part):
    """One ec2:DescribeSecurityGroups IpPermission, flattened to what reachability needs."""

    protocol: str = Field(description="'-1' means all protocols.")
    from_port: int | None = None
    to_port: int | None = None
    cidrs: list[str] = Field(default_factory=list)
    ipv6_cidrs: list[str] = Field(default_factory=list)
    source_groups: list[str] = Field(default_factory=list, description="UserIdGroupPairs[].GroupId")

    @property
    def all_traffic(self) -> bool:
        return self.protocol == "-1"


class SecurityGroup(_Part):
    group_id: str
    name: str = ""
    vpc_id: str | None = None
    inbound: list[SecurityGroupRule] = Field(default_factory=list)
    outbound: list[SecurityGroupRule] = Field(default_factory=list)
    used_by: list[str] = Field(
        default_factory=list, description="`cluster` and/or the instance groups that attach it."
    )


class StreamMatches(_Part):
    """Pattern hits in one CloudWatch log stream (one node), aggregated."""

    stream: str
    instance_id: str | None = None
    counts: dict[str, int] = Field(default_factory=dict, description="Pattern name → matching events.")
    first_seen: str | None = None
    last_seen: str | None = None
    sample: Text | None = Field(default=None, description="The earliest matching message, verbatim.")


class CloudWatchScan(_Part):
    log_group: str
    found: bool
    method: Literal["insights", "filter"] | None = None
    window_start: str
    window_end: str
    streams: list[StreamMatches] = Field(default_factory=list)
    complete: bool = True


class AwsSnapshot(BaseModel):
    account: str | None = None
    caller_arn: str | None = None
    cluster: dict[str, Any] | None = Field(default=None, description="sagemaker:DescribeCluster response.")
    hyperpod: HyperPodCluster | None = Field(default=None, description="`cluster`, typed for the checks.")
    nodes: list[ClusterNode] | None = Field(default=None, description="None when not listed at all.")
    nodes_complete: bool = False
    events: list[ClusterEvent] | None = None
    events_complete: bool = False
    security_groups: list[SecurityGroup] | None = None
    cloudwatch: list[CloudWatchScan] | None = Field(
        default=None, description="The cluster's log group first, then the EKS application log group if any."
    )
