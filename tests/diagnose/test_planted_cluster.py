"""The live diagnostic against the planted EKS cluster in moto: every planted fault is reported
with its priority, reference and concrete ids, and only read operations reach the server."""

from __future__ import annotations

from dataclasses import dataclass

import boto3
import pytest

from hyperpod_nccl.diagnose.service import DiagnoseOptions, collect_snapshot, diagnose
from hyperpod_nccl.models import BlastRadius, Finding, Priority, Report, Status
from hyperpod_nccl.snapshot import Snapshot
from tests.diagnose.conftest import Stubs, assert_only_reads, aws_env, planted_stubs
from tests.diagnose.world import (
    EFA_ERROR_NODE,
    FAILED_NODE,
    PENDING_NODE,
    REGION,
    WATCHDOG_NODE,
    XID_LINE,
    World,
)
from tests.servers.moto_server import MotoServer, ReceivedRequest


def options(cluster: str, **overrides: object) -> DiagnoseOptions:
    return DiagnoseOptions(cluster=cluster, region=REGION, sample_nodes=0, **overrides)


@dataclass
class PlantedRun:
    snapshot: Snapshot
    stubs: Stubs
    progress: list[tuple[str, int, int | None]]
    requests: list[ReceivedRequest]


@pytest.fixture(scope="module")
def planted(moto: MotoServer, world: World) -> PlantedRun:
    """One live collection of the planted cluster, shared by the tests that read it."""
    with aws_env(moto):
        stubs = planted_stubs(boto3.session.Session(), world)
        progress: list[tuple[str, int, int | None]] = []
        moto.received.clear()
        snapshot = collect_snapshot(
            options(world.name), session=stubs.session, progress=lambda *update: progress.append(update)
        )
        return PlantedRun(snapshot, stubs, progress, list(moto.received))


@pytest.fixture
def collected(planted: PlantedRun) -> Snapshot:
    return planted.snapshot


@pytest.fixture
def stubs(planted: PlantedRun) -> Stubs:
    return planted.stubs


@pytest.fixture(scope="module")
def report(planted: PlantedRun) -> Report:
    return diagnose(planted.snapshot)


def one(report: Report, finding_id: str) -> Finding:
    matches = [finding for finding in report.findings if finding.id == finding_id]
    assert len(matches) == 1, [finding.id for finding in report.findings]
    return matches[0]


def test_the_cluster_is_described_and_its_orchestrator_detected(collected: Snapshot, world: World) -> None:
    assert collected.orchestrator == "eks"
    assert collected.aws.account == "123456789012"
    assert collected.aws.hyperpod.cluster_id == world.cluster_id
    assert collected.aws.hyperpod.eks_cluster_arn.endswith("/hp-eks-prod")
    assert collected.aws.cluster["ClusterArn"] == world.arn


def test_missing_egress_self_reference_is_p0_with_the_egress_command(report: Report, world: World) -> None:
    finding = one(report, "aws.security_group.self_reference_missing")
    assert (finding.status, finding.priority, finding.reference) == (
        Status.FAIL,
        Priority.P0,
        "operations.md § 8",
    )
    assert world.sg_no_egress in finding.title and "outbound" in finding.title
    [command] = finding.suggested_commands
    assert command.command.startswith(
        f"aws ec2 authorize-security-group-egress --group-id {world.sg_no_egress}"
    )
    assert f"UserIdGroupPairs=[{{GroupId={world.sg_no_egress}}}]" in command.command
    assert command.blast_radius == BlastRadius.CHANGES_CONFIG
    assert command.permission == "ec2:AuthorizeSecurityGroupEgress"


def test_efa_group_open_to_the_world_is_a_warning(report: Report, world: World) -> None:
    finding = one(report, "aws.security_group.open_to_world")
    assert (finding.status, finding.priority) == (Status.WARN, Priority.P1)
    assert world.sg_efa_open in finding.title
    assert all(e.source == "ec2:DescribeSecurityGroups" for e in finding.evidence)


def test_the_self_referencing_group_raises_nothing(report: Report, world: World) -> None:
    named = [f for f in report.findings if world.sg_ok in f.title]
    assert named == []


def test_failed_and_pending_nodes_are_named_by_instance_id(report: Report, world: World) -> None:
    failed = one(report, "hyperpod.nodes.failed")
    assert (failed.status, failed.priority, failed.instance_ids) == (Status.FAIL, Priority.P1, [FAILED_NODE])
    assert "deep health check" in failed.evidence[0].text
    assert any(c.blast_radius == BlastRadius.READ_ONLY for c in failed.suggested_commands)
    pending = one(report, "hyperpod.nodes.not_ready")
    assert pending.instance_ids == [PENDING_NODE]
    summary = one(report, "hyperpod.nodes.summary")
    assert "6 nodes listed (every page)" in summary.title
    assert "worker-p5: Failure 1, Pending 1, Running 3" in summary.detail


def test_node_recovery_none_is_reported(report: Report) -> None:
    finding = one(report, "hyperpod.cluster.node_recovery")
    assert (finding.status, finding.priority, finding.reference) == (
        Status.WARN,
        Priority.P2,
        "operations.md § 6",
    )


def test_cloudwatch_hits_are_per_node_with_the_verbatim_line(report: Report, stubs: Stubs) -> None:
    xid = one(report, "cloudwatch.xid")
    assert (xid.priority, xid.reference, xid.instance_ids) == (
        Priority.P0,
        "debugging-guide.md § 5",
        [FAILED_NODE],
    )
    assert XID_LINE in xid.evidence[0].text
    assert one(report, "cloudwatch.watchdog").instance_ids == [WATCHDOG_NODE]
    assert one(report, "cloudwatch.transport").instance_ids == [EFA_ERROR_NODE]
    [query] = stubs.insights.calls
    assert query["queryId"]  # the query was started on moto, its results came from Insights' stats


def test_cluster_events_say_no_events_is_not_healthy(report: Report, stubs: Stubs) -> None:
    summary = one(report, "hyperpod.events.summary")
    assert "3 cluster event(s)" in summary.title
    assert "not a clean bill of health" in summary.detail
    problems = one(report, "hyperpod.events.infrastructure")
    assert problems.instance_ids == [FAILED_NODE]
    assert stubs.events.calls[0]["ClusterName"] == "ml-cluster-prod"


def test_kubernetes_without_access_is_skipped_with_a_warning(report: Report) -> None:
    finding = one(report, "collection.kubernetes_skipped")
    assert (finding.status, finding.priority) == (Status.WARN, Priority.P1)
    assert (
        finding.suggested_commands[0].command
        == f"aws eks update-kubeconfig --name hp-eks-prod --region {REGION}"
    )


def test_only_read_operations_reach_moto(planted: PlantedRun) -> None:
    assert_only_reads(planted.requests)
    operations = {request.operation for request in planted.requests}
    assert {
        "GetCallerIdentity",
        "DescribeCluster",
        "ListClusterNodes",
        "DescribeSecurityGroups",
    } <= operations
    assert {"DescribeLogGroups", "StartQuery"} <= operations


def test_progress_is_reported(planted: PlantedRun) -> None:
    messages = [message for message, _, _ in planted.progress]
    assert any("ListClusterNodes" in message for message in messages)
    assert messages[-1] == "collection complete"


def test_the_xid_that_lines_up_with_the_stuck_collective_is_the_trigger(report: Report) -> None:
    """The watchdog fired 30 min ago after Timeout(ms)=600000, so the collective stuck 40 min ago,
    when the GPU fell off the bus; the EFA error 31 min ago came after it."""
    cause = report.root_cause
    assert cause is not None
    assert (cause.category, cause.culprit_instance_ids) == ("gpu_hardware", [FAILED_NODE])
    # no Kubernetes view: HyperPod's instance id is the only name the node has
    assert cause.culprit_nodes == [FAILED_NODE]
    assert any("derived" in step and "stuck collective issued" in step for step in cause.chain)
    efa = [line for line in cause.ruled_out if EFA_ERROR_NODE in line]
    assert efa and "after the stuck collective was issued: a consequence" in efa[0]
