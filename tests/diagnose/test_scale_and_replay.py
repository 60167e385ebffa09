"""A 2,000-node cluster lists completely; a saved bundle replays to the identical report with no
network; when Logs Insights cannot answer, FilterLogEvents against moto finds the same nodes."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from mcp import Client

from hyperpod_nccl.analyze.cluster_status import analyze_cluster_status
from hyperpod_nccl.cli import main
from hyperpod_nccl.collect.hyperpod import list_nodes
from hyperpod_nccl.diagnose.service import DiagnoseOptions, collect_snapshot, diagnose
from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.mcp_server import build_server
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import AwsSnapshot
from tests.diagnose.conftest import Stubs, assert_only_reads, planted_stubs
from tests.diagnose.world import (
    EFA_ERROR_NODE,
    FAILED_NODE,
    REGION,
    WATCHDOG_NODE,
    World,
    _instance_group,
    plant_cluster,
)
from tests.servers.moto_server import MotoServer

LARGE = 2000
LARGE_FAILED = {7: ("Failure", "Node unresponsive"), 1999: ("Failure", "EFA health check failed")}


@pytest.fixture(scope="module")
def large_cluster(moto: MotoServer, world: World) -> list[str]:
    groups = [_instance_group("workers", "ml.p5.48xlarge", LARGE)]
    extra = {"Orchestrator": {"Eks": {"ClusterArn": "arn:aws:eks:us-west-2:123456789012:cluster/big"}}}
    _, nodes = plant_cluster(
        moto.url, "ml-cluster-2k", groups=groups, vpc_sgs=[world.sg_ok], extra=extra, statuses=LARGE_FAILED
    )
    return nodes


def test_a_2000_node_cluster_lists_every_node(large_cluster: list[str], endpoint: MotoServer) -> None:
    sagemaker = make_client("sagemaker", region=REGION)
    nodes, listing = list_nodes(sagemaker, "ml-cluster-2k")
    assert listing.complete and listing.issue is None
    assert len(nodes) == LARGE and {node.instance_id for node in nodes} == set(large_cluster)
    assert endpoint.operations().count("ListClusterNodes") == LARGE // 100
    findings = analyze_cluster_status(
        Snapshot(collected_at="2026-11-22T05:00:00Z", aws=AwsSnapshot(nodes=nodes, nodes_complete=True))
    )
    summary = next(f for f in findings if f.id == "hyperpod.nodes.summary")
    assert summary.title == "2000 nodes listed (every page): Failure 2, Running 1998"
    failed = next(f for f in findings if f.id == "hyperpod.nodes.failed")
    assert failed.instance_ids == [large_cluster[7], large_cluster[1999]]


def test_save_bundle_then_bundle_gives_the_identical_report_offline(
    stubs: Stubs,
    world: World,
    endpoint: MotoServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    live_args = ["--cluster", world.name, "--region", REGION, "--sample-nodes", "0"]
    live_status = main(["diagnose", *live_args, "--save-bundle", str(tmp_path / "b"), "--json"])
    live = capsys.readouterr().out
    assert_only_reads(endpoint.received)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    endpoint.received.clear()
    replay_status = main(["diagnose", "--bundle", str(tmp_path / "b"), "--json"])
    replay = capsys.readouterr().out
    assert (replay_status, replay) == (live_status, live)
    assert endpoint.received == []
    assert json.loads(live)["summary"]["p0"] >= 2
    main(["diagnose", "--bundle", str(tmp_path / "b")])
    text = capsys.readouterr().out
    assert "→ references/operations.md § 8" in text and world.sg_no_egress in text


def test_a_directory_without_a_snapshot_is_unusable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", "--bundle", str(tmp_path)]) == 2
    assert "snapshot.json not found" in capsys.readouterr().err


def test_when_insights_fails_filter_log_events_finds_the_same_nodes(
    endpoint: MotoServer, world: World
) -> None:
    session = boto3.session.Session()
    planted_stubs(session, world, insights={"status": "Failed", "results": []})
    snapshot = collect_snapshot(
        DiagnoseOptions(cluster=world.name, region=REGION, sample_nodes=0), session=session
    )
    [scan] = snapshot.aws.cloudwatch
    assert (scan.method, scan.complete) == ("filter", True)
    by_node = {stream.instance_id: stream.counts for stream in scan.streams}
    assert by_node == {
        FAILED_NODE: {"xid": 1, "gpu_fell_off_bus": 1},
        WATCHDOG_NODE: {"watchdog_timeout": 1},
        EFA_ERROR_NODE: {"efa_error": 2, "nccl_warn": 2},
    }
    assert "FilterLogEvents" in endpoint.operations()
    ids = {f.id for f in diagnose(snapshot).findings}
    assert {"cloudwatch.xid", "cloudwatch.watchdog", "cloudwatch.transport"} <= ids


@pytest.mark.anyio
async def test_list_cluster_nodes_tool_summarises_2000_nodes_in_a_few_kilobytes(
    large_cluster: list[str], stubs: Stubs
) -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool("list_cluster_nodes", {"cluster": "ml-cluster-2k", "region": REGION})
    nodes = result.structured_content
    assert (nodes["total"], nodes["complete"], nodes["unhealthy_total"]) == (LARGE, True, 2)
    assert nodes["by_status"] == {"Running": 1998, "Failure": 2}
    assert len(json.dumps(nodes)) < 4000
