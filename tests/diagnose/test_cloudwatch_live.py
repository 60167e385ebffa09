"""The live CloudWatch path end to end against moto's server, with no stub: moto answers the
`stats … by @logStream` Insights query with raw rows, which the collector aggregates itself."""

from __future__ import annotations

import boto3
import pytest
from mcp import Client

from hyperpod_nccl.mcp_server import build_server
from tests.diagnose.world import EFA_ERROR_NODE, FAILED_NODE, REGION, WATCHDOG_NODE, World
from tests.servers.moto_server import MotoServer

pytestmark = pytest.mark.anyio


async def test_insights_rows_without_aggregates_are_counted_per_node(
    endpoint: MotoServer, world: World, default_session: boto3.session.Session
) -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool(
            "scan_cloudwatch", {"cluster": world.name, "region": REGION, "since": "3h"}
        )
    assert not result.is_error, result.content[0].text
    scan = result.structured_content
    assert scan["method"] == "insights" and scan["problems"] == []
    counts = {stream["instance_id"]: stream["counts"] for stream in scan["streams"]}
    assert counts[FAILED_NODE]["xid"] == 1
    assert counts[WATCHDOG_NODE] == {"watchdog_timeout": 1}
    assert counts[EFA_ERROR_NODE]["efa_error"] == 2
    assert "cloudwatch.xid" in {f["id"] for f in scan["findings"]}
    assert "StartQuery" in endpoint.operations() and "GetQueryResults" in endpoint.operations()
