"""The security groups the cluster's nodes use: ec2:DescribeSecurityGroups for every group named
in the cluster's VpcConfig and in any instance group's OverrideVpcConfig."""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.collect.aws import Listing, list_all
from hyperpod_nccl.snapshot.aws import HyperPodCluster, SecurityGroup, SecurityGroupRule


def security_group_usage(cluster: HyperPodCluster) -> dict[str, list[str]]:
    """Security group id → who attaches it: `cluster` and/or `instance group <name>`."""
    usage: dict[str, list[str]] = {group_id: ["cluster"] for group_id in cluster.security_group_ids}
    for group in cluster.instance_groups:
        for group_id in group.security_group_ids:
            usage.setdefault(group_id, []).append(f"instance group {group.name}")
    return usage


def _rule(permission: dict[str, Any]) -> SecurityGroupRule:
    return SecurityGroupRule(
        protocol=str(permission.get("IpProtocol", "-1")),
        from_port=permission.get("FromPort"),
        to_port=permission.get("ToPort"),
        cidrs=[item["CidrIp"] for item in permission.get("IpRanges", []) if "CidrIp" in item],
        ipv6_cidrs=[item["CidrIpv6"] for item in permission.get("Ipv6Ranges", []) if "CidrIpv6" in item],
        source_groups=[
            item["GroupId"] for item in permission.get("UserIdGroupPairs", []) if "GroupId" in item
        ],
    )


def _group(raw: dict[str, Any], used_by: list[str]) -> SecurityGroup:
    return SecurityGroup(
        group_id=raw["GroupId"],
        name=raw.get("GroupName", ""),
        vpc_id=raw.get("VpcId"),
        inbound=[_rule(permission) for permission in raw.get("IpPermissions", [])],
        outbound=[_rule(permission) for permission in raw.get("IpPermissionsEgress", [])],
        used_by=used_by,
    )


def describe_security_groups(ec2: Any, cluster: HyperPodCluster) -> tuple[list[SecurityGroup], Listing]:
    usage = security_group_usage(cluster)
    if not usage:
        return [], Listing([], complete=True)
    listing = list_all(
        ec2,
        "describe_security_groups",
        "SecurityGroups",
        "ec2:DescribeSecurityGroups",
        GroupIds=sorted(usage),
    )
    groups = [_group(raw, usage.get(raw["GroupId"], [])) for raw in listing.items]
    return sorted(groups, key=lambda group: group.group_id), listing
