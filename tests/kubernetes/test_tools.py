"""list_pods and get_pod_logs driven by the official `mcp` client over stdio, as Claude would,
against a recorded cluster served over HTTP and reached through a context of the kubeconfig the
server was started with."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl import server_settings
from hyperpod_nccl.diagnose.k8s_tool import list_pods
from hyperpod_nccl.guard.kubeconfig import load_server_kubeconfig
from tests.kubernetes.conftest import recorded_cluster
from tests.servers.k8s_api import K8sApiServer, start_k8s_api_server

pytestmark = pytest.mark.anyio


def server_with(kubeconfig: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "hyperpod_nccl", "serve", "--kubeconfig", kubeconfig]
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_kubeconfig(path: Path, server: K8sApiServer) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fixture", "cluster": {"server": server.url}}],
                "users": [{"name": "reader", "user": {"token": "fixture-token"}}],
                "contexts": [{"name": "fixture", "context": {"cluster": "fixture", "user": "reader"}}],
                "current-context": "fixture",
            }
        )
    )
    return str(path)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_list_pods_and_get_pod_logs_over_stdio(faulty_server: K8sApiServer, tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", faulty_server)
    faulty_server.received.clear()
    async with Client(server_with(kubeconfig)) as client:
        schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        assert not [name for name, schema in schemas.items() if "kubeconfig" in schema.get("properties", {})]
        contexts = await call(client, "list_kube_contexts", {})
        assert contexts["contexts"] == [{"name": "fixture", "current": True, "refused": None}]
        everything = await call(client, "list_pods", {})
        assert everything["total"] == 21 and everything["complete"] is True
        rows = {row["pod"]: row for row in everything["unhealthy"]}
        crash = rows["crashloop/bert-ft-worker-0"]
        assert (crash["problem"], crash["restarts"], crash["node"]) == (
            "k8s.pod.crash_loop",
            7,
            "hyperpod-i-0c8f1d2e3a4b5c602",
        )
        assert rows["oom/gpt-oom-master-0"]["problem"] == "k8s.pod.oom_killed"
        assert {f["id"] for f in everything["findings"]} >= {"k8s.pod.unschedulable", "k8s.pod.image_pull"}

        job = await call(
            client, "list_pods", {"context": "fixture", "namespace": "pending-efa", "job": "llama-efa"}
        )
        assert job["by_phase"] == {"Pending": 2}
        assert job["unhealthy"][0]["detail"].startswith(
            "0/8 nodes are available: 8 Insufficient vpc.amazonaws.com/efa."
        )

        logs = await call(
            client,
            "get_pod_logs",
            {"namespace": "crashloop", "pod": "bert-ft-worker-0", "previous": True},
        )
        assert logs["container"] == "pytorch" and logs["previous"] is True
        assert "ModuleNotFoundError: No module named 'transformers'" in logs["text"]
        assert (
            logs["triage_findings"][0]["evidence"][0]["source"]
            == "pod crashloop/bert-ft-worker-0 log (pytorch, previous)"
        )

        secret = await call(
            client,
            "get_pod_logs",
            {"namespace": "misconfig", "pod": "qwen-master-0", "tail": 2},
        )
        assert secret["lines"] == 2 and secret["truncated"] is True
        assert "api_key=[REDACTED]" in secret["text"] and "0123456789abcdef0123" not in secret["text"]

        for bad in (
            {"namespace": "Bad_NS", "pod": "x"},
            {"namespace": "oom", "pod": "gpt-oom-master-0", "tail": 5000},
            {"namespace": "oom", "pod": "gpt-oom-master-0", "container": "sidecar"},
            {"context": "absent", "namespace": "oom", "pod": "gpt-oom-master-0"},
        ):
            result = await client.call_tool("get_pod_logs", bad)
            assert result.is_error, bad
        missing = await client.call_tool(
            "get_pod_logs",
            {"namespace": "oom", "pod": "gpt-oom-master-0", "container": "x"},
        )
        assert "its containers: pytorch" in missing.content[0].text
    assert faulty_server.methods() == {"GET"}


async def test_list_pods_without_permission_says_so_instead_of_reporting_healthy(
    tmp_path: Path, server_files: Path
) -> None:
    cluster = recorded_cluster("healthy")
    cluster.denied = {"pods": 403}
    server = next(generator := start_k8s_api_server(cluster))
    kubeconfig = load_server_kubeconfig(write_kubeconfig(tmp_path / "config", server))
    server_settings.configure(replace(server_settings.current(), kubeconfig=kubeconfig))
    try:
        result = await list_pods(namespace="training")
    finally:
        await anyio.to_thread.run_sync(generator.close)
    assert result.complete is False and result.total == 0
    assert result.problems and result.problems[0].endswith("(needs RBAC pods: list)")
