"""The cluster-diagnostic MCP tools through the official `mcp` client, against the planted
cluster in moto: small structured outputs, validated inputs, progress notifications."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from hyperpod_nccl.mcp_server import build_server
from tests.diagnose.conftest import Stubs, assert_only_reads
from tests.diagnose.world import FAILED_NODE, PENDING_NODE, REGION, World
from tests.servers.moto_server import MotoServer

pytestmark = pytest.mark.anyio


async def call(name: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
    async with Client(build_server()) as client:
        return await client.call_tool(name, arguments, **kwargs)


async def test_list_cluster_nodes_is_a_summary_naming_the_unhealthy(
    stubs: Stubs, world: World, endpoint: MotoServer
) -> None:
    result = await call("list_cluster_nodes", {"cluster": world.name, "region": REGION})
    nodes = result.structured_content
    assert (nodes["total"], nodes["complete"]) == (6, True)
    assert nodes["by_instance_group"]["worker-p5"] == {"Failure": 1, "Running": 3, "Pending": 1}
    assert [node["instance_id"] for node in nodes["unhealthy"]] == [FAILED_NODE, PENDING_NODE]
    assert_only_reads(endpoint.received)


async def test_describe_cluster_reports_orchestrator_and_node_recovery(stubs: Stubs, world: World) -> None:
    result = await call("describe_cluster", {"cluster": world.name, "region": REGION})
    described = result.structured_content
    assert described["cluster"]["orchestrator"] == "eks"
    assert described["cluster"]["cluster_id"] == world.cluster_id
    assert {f["id"] for f in described["findings"]} == {
        "hyperpod.cluster.status",
        "hyperpod.cluster.node_recovery",
    }


async def test_describe_cluster_of_an_unknown_cluster_lists_the_known_ones(
    stubs: Stubs, world: World
) -> None:
    result = await call("describe_cluster", {"cluster": "nope", "region": REGION})
    assert result.is_error
    assert world.name in result.content[0].text


async def test_scan_cloudwatch_returns_hits_per_node(stubs: Stubs, world: World) -> None:
    result = await call("scan_cloudwatch", {"cluster": world.name, "region": REGION, "since": "3h"})
    scan = result.structured_content
    assert (scan["log_group"], scan["method"]) == (world.log_group, "insights")
    assert scan["streams"][0]["instance_id"] in {FAILED_NODE, "i-0f3a9c1d2b4e5f603"}
    assert "cloudwatch.xid" in {f["id"] for f in scan["findings"]}


async def test_run_diagnostic_reports_progress_and_saves_a_replayable_bundle(
    stubs: Stubs, world: World, server_files: Path
) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    arguments = {"cluster": world.name, "region": REGION, "sample_nodes": 0, "save_bundle": "saved"}
    live = (await call("run_diagnostic", arguments, progress_callback=on_progress)).structured_content
    assert live["summary"]["p0"] >= 2
    assert (live["root_cause"]["category"], live["root_cause"]["culprit_nodes"]) == (
        "gpu_hardware",
        [FAILED_NODE],
    )
    assert any(f["id"] == "aws.security_group.self_reference_missing" for f in live["findings"])
    assert all(f["status"] != "PASS" for f in live["findings"])
    assert all(len(f["evidence"]) <= 3 for f in live["findings"])
    assert progress and [value for value, _ in progress] == sorted(value for value, _ in progress)
    assert live["saved_bundle"] == str(server_files / "saved")
    replay = (await call("run_diagnostic", {"bundle": live["saved_bundle"]})).structured_content
    assert (replay["summary"], replay["findings"]) == (live["summary"], live["findings"])


@pytest.mark.parametrize(
    "arguments",
    [
        {"cluster": "bad name; rm -rf /", "region": REGION},
        {"cluster": "ml-cluster-prod", "region": "not-a-region"},
        {"cluster": "ml-cluster-prod", "region": REGION, "since": "2 hours"},
    ],
)
async def test_bad_input_is_refused(arguments: dict[str, Any]) -> None:
    result = await call("scan_cloudwatch", arguments)
    assert result.is_error
