"""Security groups on the cluster's (EFA) interfaces: every group needs an inbound and an outbound
all-traffic rule that references itself, or EFA and NCCL traffic between nodes is dropped (P0).
A group open to 0.0.0.0/0 inbound adds nothing EFA needs and exposes every node's ports."""

from __future__ import annotations

from collections.abc import Iterable

from hyperpod_nccl.guard.commands import joined, suggest, value
from hyperpod_nccl.guard.validate import Region, SecurityGroupId
from hyperpod_nccl.models import BlastRadius, Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import SecurityGroup, SecurityGroupRule

_SOURCE = "ec2:DescribeSecurityGroups"
_WORLD = ("0.0.0.0/0", "::/0")
_REFERENCE = "operations.md § 8"


def _self_referenced(group: SecurityGroup, rules: list[SecurityGroupRule]) -> bool:
    return any(rule.all_traffic and group.group_id in rule.source_groups for rule in rules)


def _describe(rule: SecurityGroupRule) -> str:
    ports = "all ports" if rule.from_port in (None, -1) else f"ports {rule.from_port}-{rule.to_port}"
    peers = [*rule.source_groups, *rule.cidrs, *rule.ipv6_cidrs]
    protocol = "all" if rule.all_traffic else rule.protocol
    return f"protocol {protocol}, {ports}, peers {', '.join(peers) or 'none'}"


def _rules_evidence(group: SecurityGroup, direction: str, rules: list[SecurityGroupRule]) -> list[Evidence]:
    prefix = f"{group.group_id} {direction}"
    if not rules:
        return [Evidence(source=_SOURCE, text=f"{prefix}: no rules")]
    return [Evidence(source=_SOURCE, text=f"{prefix}: {_describe(rule)}") for rule in rules]


def _authorize(group_id: str, direction: str, region: str) -> SuggestedCommand:
    group = value(SecurityGroupId, group_id)
    return suggest(
        f"aws ec2 authorize-security-group-{direction} --group-id",
        group,
        "--region",
        value(Region, region),
        "--ip-permissions",
        joined("IpProtocol=-1,UserIdGroupPairs=[{GroupId=", group, "}]"),
        why=f"Allows all {direction} traffic between the instances that share {group_id} (EFA needs it).",
        blast_radius=BlastRadius.CHANGES_CONFIG,
        permission=f"ec2:AuthorizeSecurityGroup{direction.capitalize()}",
    )


def _missing_self_reference(group: SecurityGroup, region: str) -> Finding | None:
    missing = [
        direction
        for direction, rules in (("ingress", group.inbound), ("egress", group.outbound))
        if not _self_referenced(group, rules)
    ]
    if not missing:
        return None
    words = " and ".join("inbound" if d == "ingress" else "outbound" for d in missing)
    return Finding(
        id="aws.security_group.self_reference_missing",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Security group {group.group_id} has no {words} all-traffic rule referencing itself",
        reference=_REFERENCE,
        detail=f"Used by {', '.join(group.used_by) or 'the cluster'}: EFA and NCCL traffic between its "
        "nodes is dropped without the self-reference.",
        evidence=_rules_evidence(group, "inbound", group.inbound)
        + _rules_evidence(group, "outbound", group.outbound),
        suggested_commands=[_authorize(group.group_id, direction, region) for direction in missing],
    )


def _world_open(group: SecurityGroup, region: str) -> Finding | None:
    open_rules = [
        rule for rule in group.inbound if any(cidr in _WORLD for cidr in (*rule.cidrs, *rule.ipv6_cidrs))
    ]
    if not open_rules:
        return None
    revoke = suggest(
        "aws ec2 revoke-security-group-ingress --group-id",
        value(SecurityGroupId, group.group_id),
        "--region",
        value(Region, region),
        "--ip-permissions 'IpProtocol=-1,IpRanges=[{CidrIp=0.0.0.0/0}]'",
        why="Closes the world-open inbound rule; match its protocol and ports as the evidence shows them.",
        blast_radius=BlastRadius.CHANGES_CONFIG,
        permission="ec2:RevokeSecurityGroupIngress",
    )
    return Finding(
        id="aws.security_group.open_to_world",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"EFA security group {group.group_id} is open to 0.0.0.0/0 inbound",
        reference=_REFERENCE,
        detail="EFA needs only the self-reference; a world-open rule exposes every port of every node.",
        evidence=_rules_evidence(group, "inbound", open_rules),
        suggested_commands=[revoke],
    )


def _passes(groups: Iterable[SecurityGroup]) -> Finding:
    ids = [group.group_id for group in groups]
    return Finding(
        id="aws.security_group.self_reference",
        status=Status.PASS,
        title=f"Every cluster security group references itself inbound and outbound ({', '.join(ids)})",
        evidence=[Evidence(source=_SOURCE, text=f"{len(ids)} group(s) checked")],
    )


def analyze_security_groups(snapshot: Snapshot) -> list[Finding]:
    groups = snapshot.aws.security_groups if snapshot.aws else None
    if not groups:
        return []
    region = snapshot.region or "<region>"
    missing = [f for group in groups if (f := _missing_self_reference(group, region))]
    exposed = [f for group in groups if (f := _world_open(group, region))]
    return [*missing, *exposed] if missing else [_passes(groups), *exposed]
