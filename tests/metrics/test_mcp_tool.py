"""`query_gpu_metrics` through the official MCP client over stdio, against the real Prometheus."""

from __future__ import annotations

import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.metrics import dcgmgen
from tests.metrics.realprom import LocalPrometheus

pytestmark = [pytest.mark.anyio, pytest.mark.prometheus]


async def test_the_tool_returns_the_findings_sized_for_an_assistant(prometheus: LocalPrometheus) -> None:
    server = StdioServerParameters(command=sys.executable, args=["-m", "hyperpod_nccl", "serve"])
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["query_gpu_metrics"].annotations.read_only_hint is True
        result = await client.call_tool(
            "query_gpu_metrics",
            {"prometheus": prometheus.url, "start": str(dcgmgen.START), "end": "2026-03-02T12:00:00Z"},
        )
        refused = await client.call_tool("query_gpu_metrics", {"prometheus": "http://a:b@prom"})
    out = result.structured_content
    assert not result.is_error and out is not None
    assert (out["gpus"], out["nodes"]) == (40, 5)
    ids = {f["id"] for f in out["findings"]}
    assert {"metrics.hang.signature", "metrics.gpu.stopped_reporting", "metrics.job.straggler"} <= ids
    assert all(len(f["evidence"]) <= 3 for f in out["findings"])
    assert out["root_cause"]["category"] == "gpu_hardware"
    assert refused.is_error
