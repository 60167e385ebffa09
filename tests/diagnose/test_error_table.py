"""Every row of the seed's error-handling table, through the CLI against moto over HTTP.

| Failure                          | Expected                                             |
| sts get-caller-identity fails    | exit 1 with the AWS error                            |
| describe-cluster AccessDenied    | WARN naming sagemaker:DescribeCluster, rest continues |
| cluster not found                | the region's clusters listed, exit 1                 |
| CloudWatch log group not found   | INFO pointing at operations.md § 4                   |
| cluster events API throttled     | WARN, partial data kept                              |
| Kubernetes unreachable           | WARN, Kubernetes checks skipped                      |
| session-manager-plugin absent     | probes reported as skipped, the rest continues       |
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from hyperpod_nccl.cli import main
from tests.diagnose.conftest import Stubs, assert_only_reads, planted_stubs
from tests.diagnose.stubs import OneCallStub
from tests.diagnose.world import (
    EKS_ARN,
    FAILED_NODE,
    REGION,
    World,
    _instance_group,
    cluster_events,
    plant_cluster,
)
from tests.servers.moto_server import MotoServer


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    status = main(["diagnose", *argv, "--region", REGION, "--sample-nodes", "0", "--json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if captured.out else {}, captured.err


def finding(report: dict[str, Any], finding_id: str) -> dict[str, Any]:
    matches = [f for f in report["findings"] if f["id"] == finding_id]
    assert len(matches) == 1, [f["id"] for f in report["findings"]]
    return matches[0]


def test_sts_failure_exits_1_with_the_aws_error(
    stubs: Stubs, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    message = "The security token included in the request is invalid."
    stubs.stub("sts", "GetCallerIdentity").fail("InvalidClientTokenId", 403, message)
    status, report, err = run_json(capsys, "--cluster", world.name)
    assert (status, report) == (1, {})
    assert "InvalidClientTokenId" in err and message in err
    assert "fix AWS credentials" in err


def test_describe_cluster_denied_warns_naming_the_action_and_the_rest_continues(
    stubs: Stubs, world: World, endpoint: MotoServer, capsys: pytest.CaptureFixture[str]
) -> None:
    denied = (
        "User: arn:aws:sts::123456789012:assumed-role/dev/x is not authorized to perform: "
        "sagemaker:DescribeCluster"
    )
    stubs.stub("sagemaker", "DescribeCluster").fail("AccessDeniedException", 400, denied)
    status, report, _ = run_json(capsys, "--cluster", world.name)
    warning = finding(report, "collection.access_denied.sagemaker_describecluster")
    assert (warning["status"], warning["reference"]) == ("WARN", "operations.md § 2")
    assert "sagemaker:DescribeCluster" in warning["title"]
    # Nodes are listed by name, and the log group is found by prefix, without DescribeCluster.
    assert finding(report, "hyperpod.nodes.failed")["instance_ids"] == [FAILED_NODE]
    assert finding(report, "cloudwatch.xid")["instance_ids"] == [FAILED_NODE]
    assert status == 1
    assert_only_reads(endpoint.received)


def test_unknown_cluster_lists_the_regions_clusters_and_exits_1(
    stubs: Stubs, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report, err = run_json(capsys, "--cluster", "no-such-cluster")
    assert (status, report) == (1, {})
    assert "'no-such-cluster' not found in us-west-2" in err
    assert world.name in err


@pytest.fixture(scope="module")
def cluster_without_logs(moto: MotoServer, world: World) -> str:
    group = _instance_group("workers", "ml.g5.48xlarge", 2)
    extra = {"Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}}, "NodeRecovery": "Automatic"}
    plant_cluster(moto.url, "ml-cluster-nologs", groups=[group], vpc_sgs=[world.sg_ok], extra=extra)
    return "ml-cluster-nologs"


def test_missing_log_group_is_info_pointing_at_enabling_it(
    stubs: Stubs, cluster_without_logs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report, _ = run_json(capsys, "--cluster", cluster_without_logs)
    info = finding(report, "cloudwatch.log_group_missing")
    assert (info["status"], info["reference"]) == ("INFO", "operations.md § 4")
    assert f"/aws/sagemaker/Clusters/{cluster_without_logs}/" in info["title"]
    assert not [f for f in report["findings"] if f["id"].startswith("collection.") and "logs" in f["id"]]


def _first_page_then_throttled(stub: OneCallStub, world: World) -> None:
    first = cluster_events(world)[:1]
    stub.respond({"Events": first, "NextToken": "page-2"}).fail("ThrottlingException", 400, "Rate exceeded")


def test_throttled_events_warn_and_keep_the_pages_read(
    default_session: boto3.session.Session, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    stubs = planted_stubs(default_session, world, events=_first_page_then_throttled)
    _, report, _ = run_json(capsys, "--cluster", world.name)
    warning = finding(report, "collection.throttled.sagemaker_listclusterevents")
    assert (warning["status"], warning["priority"]) == ("WARN", "P2")
    assert "partial data" in warning["title"]
    summary = finding(report, "hyperpod.events.summary")
    assert summary["title"].startswith("1 cluster event(s) in the window (partial")
    assert [call.get("NextToken") for call in stubs.events.calls] == [None, "page-2"]


def test_unreachable_kubernetes_warns_and_skips_the_kubernetes_checks(
    stubs: Stubs, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
                "contexts": [{"name": "hp", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "hp",
            }
        )
    )
    _, report, _ = run_json(
        capsys, "--cluster", world.name, "--kubeconfig", str(kubeconfig), "--context", "hp"
    )
    warning = finding(report, "collection.kubernetes_skipped")
    assert (warning["status"], warning["priority"]) == ("WARN", "P1")
    assert "CloudWatch was searched instead" in warning["detail"]
    assert any(f["id"].startswith("collection.unreachable.") for f in report["findings"])
    assert finding(report, "cloudwatch.xid")  # CloudWatch still ran


def test_a_missing_region_is_unusable_input(
    stubs: Stubs, world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert main(["diagnose", "--cluster", world.name]) == 2
    assert "a region is required" in capsys.readouterr().err


def _events_denied(stub: OneCallStub, world: World) -> None:
    del world
    stub.fail("AccessDeniedException", 400, "not authorized to perform: sagemaker:ListClusterEvents")


def test_denied_events_are_a_warning_not_zero_events(
    default_session: boto3.session.Session, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    planted_stubs(default_session, world, events=_events_denied)
    _, report, _ = run_json(capsys, "--cluster", world.name)
    warning = finding(report, "collection.access_denied.sagemaker_listclusterevents")
    assert "sagemaker:ListClusterEvents" in warning["title"]
    assert not [f for f in report["findings"] if f["id"].startswith("hyperpod.events.")]


def test_a_cluster_without_an_eks_orchestrator_is_diagnosed_as_slurm(
    stubs: Stubs, moto: MotoServer, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    groups = [
        _instance_group("controller-machine", "ml.m5.4xlarge", 1),
        _instance_group("gpu", "ml.p5.48xlarge", 2),
    ]
    plant_cluster(
        moto.url, "ml-slurm", groups=groups, vpc_sgs=[world.sg_ok], extra={"NodeRecovery": "Automatic"}
    )
    _, report, _ = run_json(capsys, "--cluster", "ml-slurm")
    status = finding(report, "hyperpod.cluster.status")
    assert status["title"] == "Cluster ml-slurm is InService (slurm)"
    assert not [f for f in report["findings"] if f["id"] == "collection.kubernetes_skipped"]


def test_a_log_group_we_may_not_look_for_is_not_reported_missing(
    stubs: Stubs, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    stubs.stub("logs", "DescribeLogGroups").fail("AccessDeniedException", 400, "not authorized")
    _, report, _ = run_json(capsys, "--cluster", world.name)
    assert (
        "logs:DescribeLogGroups"
        in finding(report, "collection.access_denied.logs_describeloggroups")["title"]
    )
    assert not [f for f in report["findings"] if f["id"].startswith("cloudwatch.")]


def test_unreachable_aws_exits_1_saying_so_not_blaming_credentials(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    status, report, err = run_json(capsys, "--cluster", "ml-cluster-prod")
    assert (status, report) == (1, {})
    assert "cannot reach AWS STS" in err and "credentials" not in err


def test_without_session_manager_plugin_probes_are_skipped_and_the_rest_continues(
    stubs: Stubs, world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no session-manager-plugin to be found
    status = main(["diagnose", "--cluster", world.name, "--region", REGION, "--sample-nodes", "2", "--json"])
    report = json.loads(capsys.readouterr().out)
    probe_issues = [f for f in report["findings"] if f["id"].startswith("node.") and f["status"] != "PASS"]
    assert probe_issues, [f["id"] for f in report["findings"]]
    assert any("session-manager-plugin" in json.dumps(f) for f in probe_issues)
    assert finding(report, "aws.security_group.self_reference_missing")
    assert status == 1
