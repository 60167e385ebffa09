"""The AWS-side analyzers on hand-built snapshots: the edges the planted cluster does not cover."""

from __future__ import annotations

from hyperpod_nccl.analyze.cloudwatch import analyze_cloudwatch
from hyperpod_nccl.analyze.cluster_events import analyze_cluster_events
from hyperpod_nccl.analyze.cluster_status import analyze_cluster_status
from hyperpod_nccl.analyze.collection import analyze_collection
from hyperpod_nccl.analyze.security_groups import analyze_security_groups
from hyperpod_nccl.models import Priority, Status
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.aws import (
    AwsSnapshot,
    CloudWatchScan,
    ClusterEvent,
    HyperPodCluster,
    SecurityGroup,
    SecurityGroupRule,
    StreamMatches,
)

SG = "sg-0123456789abcdef0"


def snapshot(**aws: object) -> Snapshot:
    return Snapshot(collected_at="2026-11-22T05:00:00Z", region="us-west-2", aws=AwsSnapshot(**aws))


def cluster(status: str = "InService", recovery: str | None = "Automatic") -> HyperPodCluster:
    arn = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234efgh"
    return HyperPodCluster(
        name="c",
        arn=arn,
        cluster_id="abcd1234efgh",
        status=status,
        orchestrator="slurm",
        node_recovery=recovery,
    )


def self_ref(protocol: str = "-1", ports: tuple[int, int] | None = None) -> SecurityGroupRule:
    low, high = ports or (None, None)
    return SecurityGroupRule(protocol=protocol, from_port=low, to_port=high, source_groups=[SG])


def test_a_failed_cluster_is_p0_and_an_updating_one_p1() -> None:
    failed = analyze_cluster_status(snapshot(hyperpod=cluster("Failed")))[0]
    assert (failed.status, failed.priority) == (Status.FAIL, Priority.P0)
    updating = analyze_cluster_status(snapshot(hyperpod=cluster("SystemUpdating")))[0]
    assert (updating.status, updating.priority) == (Status.WARN, Priority.P1)


def test_node_recovery_left_unset_is_a_warning_with_the_update_command() -> None:
    finding = analyze_cluster_status(snapshot(hyperpod=cluster(recovery=None)))[1]
    assert finding.status == Status.WARN
    assert finding.suggested_commands[0].command.startswith("aws sagemaker update-cluster --cluster-name c")


def test_a_self_reference_on_some_ports_only_does_not_count() -> None:
    group = SecurityGroup(group_id=SG, inbound=[self_ref("tcp", (0, 65535))], outbound=[self_ref()])
    [finding] = analyze_security_groups(snapshot(security_groups=[group]))
    assert finding.priority == Priority.P0 and "inbound" in finding.title and "outbound" not in finding.title
    assert finding.suggested_commands[0].permission == "ec2:AuthorizeSecurityGroupIngress"


def test_groups_that_reference_themselves_both_ways_pass() -> None:
    group = SecurityGroup(group_id=SG, inbound=[self_ref()], outbound=[self_ref()])
    [finding] = analyze_security_groups(snapshot(security_groups=[group]))
    assert finding.status == Status.PASS


def test_no_events_is_information_that_clears_nothing() -> None:
    [finding] = analyze_cluster_events(snapshot(events=[], events_complete=True))
    assert finding.status == Status.INFO and finding.title.startswith("0 cluster event(s)")
    assert "not a clean bill of health" in finding.detail


def test_events_not_listed_at_all_produce_no_events_finding() -> None:
    assert analyze_cluster_events(snapshot()) == []


def test_a_scan_without_hits_is_info_not_pass() -> None:
    scan = CloudWatchScan(log_group="/g", found=True, method="insights", window_start="a", window_end="b")
    [finding] = analyze_cloudwatch(snapshot(cloudwatch=[scan]))
    assert finding.status == Status.INFO and finding.id == "cloudwatch.no_matches"


def test_tcp_fallback_in_cloudwatch_is_a_p1_warning() -> None:
    stream = StreamMatches(
        stream="s/i-0123456789abcdef0", instance_id="i-0123456789abcdef0", counts={"tcp_fallback": 4}
    )
    scan = CloudWatchScan(
        log_group="/g", found=True, method="filter", window_start="a", window_end="b", streams=[stream]
    )
    [finding] = analyze_cloudwatch(snapshot(cloudwatch=[scan]))
    assert (finding.id, finding.priority, finding.reference) == (
        "cloudwatch.tcp_fallback",
        Priority.P1,
        "debugging-guide.md § 13",
    )


def test_two_denials_of_one_action_are_one_warning_with_both_messages() -> None:
    issues = [
        CollectionIssue(
            source="ec2:DescribeSecurityGroups", kind="access_denied", message=m, permission="ec2:X"
        )
        for m in ("first", "second")
    ]
    shot = snapshot().model_copy(update={"collection_issues": issues})
    [finding] = analyze_collection(shot)
    assert finding.title == "Missing permission ec2:X: ec2:DescribeSecurityGroups was skipped"
    assert len(finding.evidence) == 2


def test_a_reboot_logged_at_info_is_still_an_infrastructure_event() -> None:
    reboot = ClusterEvent(
        event_id="e-1",
        event_time="2026-11-22T04:00:00Z",
        resource_type="Instance",
        level="Info",
        description="Instance reboot initiated by health monitoring agent",
        instance_id="i-0123456789abcdef0",
    )
    routine = reboot.model_copy(update={"event_id": "e-2", "description": "Cluster update completed"})
    findings = analyze_cluster_events(snapshot(events=[reboot, routine], events_complete=True))
    [problem] = [f for f in findings if f.id == "hyperpod.events.infrastructure"]
    assert (problem.priority, problem.instance_ids) == (Priority.P2, ["i-0123456789abcdef0"])
