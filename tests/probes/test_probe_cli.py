"""`hyperpod-nccl probe` as a user runs it (a subprocess), and the `probe_nodes` MCP tool, against
recorded node outputs and moto's SageMaker server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import boto3
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from hyperpod_nccl.cli import main
from hyperpod_nccl.mcp_server import READ_ONLY_LIVE, TOOLS
from hyperpod_nccl.probes.tool import probe_nodes
from tests.probes.plant import healthy, recorded, with_gpu_field, with_instance, with_section
from tests.servers.moto_server import MotoServer, start_moto_server

CLI = str(Path(sys.executable).parent / "hyperpod-nccl")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def test_probe_local_on_a_host_without_a_gpu_reports_it_and_exits_by_its_findings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = run_cli("probe", "--local")
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert "[INFO] no NVIDIA GPU/driver on this host" in done.stdout
    status = main(["probe", "--local", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "diagnose"
    assert (report["summary"]["p0"] + report["summary"]["p1"] > 0) == (status == 1) == (done.returncode == 1)


PLANTED = {
    "i-0aaaaaaaaaaaaaaa1": ("node.gpu.xid_79", "P0", "debugging-guide.md § 5"),
    "i-0aaaaaaaaaaaaaaa2": ("node.limits.memlock", "P0", "debugging-guide.md § 17"),
    "i-0aaaaaaaaaaaaaaa3": ("node.fabric.manager_down", "P0", "multinode.md § 1"),
    "i-0aaaaaaaaaaaaaaa4": ("node.gpu.row_remap_pending", "P1", "debugging-guide.md § 5"),
    "i-0aaaaaaaaaaaaaaa5": ("node.efa.provider_missing", "P0", "debugging-guide.md § 13"),
    "i-0aaaaaaaaaaaaaaa6": ("node.limits.shm_small", "P0", "debugging-guide.md § 17"),
    "i-0aaaaaaaaaaaaaaa7": ("node.pcie.downgraded", "P1", "performance-testing.md § 6"),
    "i-0aaaaaaaaaaaaaaa8": ("cross.net.mtu_mismatch", "P1", "multinode.md § 4"),
}


def planted_cluster(directory: Path) -> None:
    """Twelve recorded nodes: four healthy, eight with one planted fault each."""
    faults = [
        with_section(healthy(), "kernel_log", recorded("kernel_log-xid79.txt")),
        with_section(healthy(), "limits", recorded("limits-memlock-64k.txt")),
        with_section(healthy(), "fabric_manager", recorded("fabric_manager-inactive.txt")),
        with_gpu_field(healthy(), "75", "Remapped Rows", "Pending", "Yes"),
        with_section(healthy(), "efa_fi_info", recorded("efa_fi_info-no-provider.txt")),
        with_section(healthy(), "shm", recorded("shm-64m.txt")),
        with_section(healthy(), "pcie", recorded("pcie-downgraded.txt")),
        with_section(healthy(), "mtu", recorded("mtu-1500.txt")),
    ]
    for instance_id, output in zip(PLANTED, faults, strict=True):
        (directory / f"{instance_id}.txt").write_text(with_instance(output, instance_id))
    for n in range(4):
        instance_id = f"i-0bbbbbbbbbbbbbbb{n}"
        (directory / f"{instance_id}.txt").write_text(with_instance(healthy(), instance_id))


def test_probe_replay_reports_every_planted_node_fault_with_its_instance_id(tmp_path: Path) -> None:
    planted_cluster(tmp_path)
    done = run_cli("probe", "--replay", str(tmp_path), "--json")
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    for instance_id, (finding_id, priority, reference) in PLANTED.items():
        matching = [f for f in findings if f["id"] == finding_id and instance_id in f["instance_ids"]]
        assert matching, f"{finding_id} on {instance_id} not reported"
        assert (matching[0]["priority"], matching[0]["reference"]) == (priority, reference)
        assert any(e["instance_id"] == instance_id for e in matching[0]["evidence"])
    healthy_ids = {f"i-0bbbbbbbbbbbbbbb{n}" for n in range(4)}
    issues = [f for f in findings if f["status"] in ("FAIL", "WARN")]
    assert not healthy_ids & {i for f in issues for i in f["instance_ids"]}


def test_probe_arguments_that_cannot_work_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--cluster", "ml-cluster-1"]) == 2
    assert "--cluster needs --region" in capsys.readouterr().err
    assert main(["probe", "--cluster", "ml-cluster-1", "--region", "us-west-2", "--node", "i-nope"]) == 2
    assert "not a valid EC2 instance id" in capsys.readouterr().err


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    yield from start_moto_server()


@pytest.fixture
def hyperpod_cluster(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    sagemaker = boto3.client("sagemaker", region_name="us-west-2", endpoint_url=moto.url)
    if "ml-cluster-1" not in [c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]]:
        group = {
            "LifeCycleConfig": {
                "SourceS3Uri": "s3://sagemaker-lifecycle/scripts",
                "OnCreate": "on_create.sh",
            },
            "ExecutionRole": "arn:aws:iam::123456789012:role/hyperpod",
            "ThreadsPerCore": 1,
        }
        sagemaker.create_cluster(
            ClusterName="ml-cluster-1",
            InstanceGroups=[
                {
                    **group,
                    "InstanceGroupName": "controller-machine",
                    "InstanceType": "ml.m5.12xlarge",
                    "InstanceCount": 1,
                },
                {
                    **group,
                    "InstanceGroupName": "worker-group-1",
                    "InstanceType": "ml.p5.48xlarge",
                    "InstanceCount": 4,
                },
            ],
        )
    return moto


def without_plugin_path(tmp_path: Path) -> str:
    """PATH with the usual tools but certainly no session-manager-plugin."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("sh", "env"):
        found = shutil.which(tool)
        assert found
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_probe_cluster_without_the_plugin_says_install_it(
    hyperpod_cluster: MotoServer, tmp_path: Path
) -> None:
    env = {**os.environ, "PATH": without_plugin_path(tmp_path)}
    done = run_cli("probe", "--cluster", "ml-cluster-1", "--region", "us-west-2", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    sampling = next(f for f in report["findings"] if f["id"] == "node.probe.sampling")
    assert sampling["title"].startswith("Probed 3 of 5 node(s)")
    assert all(i.startswith("worker-group-1") for i in sampling["instance_ids"])
    error = next(f for f in report["findings"] if f["id"] == "node.probe.error")
    assert "Install session-manager-plugin" in error["detail"] and len(error["instance_ids"]) == 3
    assert "probe 3/3" in done.stderr


def test_probe_nodes_tool_answers_with_node_status_and_issues_only(
    hyperpod_cluster: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", without_plugin_path(tmp_path))
    assert (probe_nodes, READ_ONLY_LIVE) in TOOLS
    result = anyio.run(lambda: probe_nodes("ml-cluster-1", "us-west-2", sample_nodes=2))
    assert [n.status for n in result.nodes] == ["error", "error"]
    assert all(f.is_issue or f.id == "node.probe.sampling" for f in result.findings)
    assert len(result.model_dump_json()) < 8000
    with pytest.raises(ToolError, match="no-such-cluster"):
        anyio.run(lambda: probe_nodes("no-such-cluster", "us-west-2"))


def test_diagnose_with_the_replay_runner_reports_each_planted_node_fault(
    hyperpod_cluster: MotoServer,
) -> None:
    from hyperpod_nccl.diagnose.service import DiagnoseOptions, collect_snapshot, diagnose
    from hyperpod_nccl.probes.runners.replay import ReplayRunner

    planted = {
        "worker-group-1-1": (
            with_section(healthy(), "kernel_log", recorded("kernel_log-xid79.txt")),
            "node.gpu.xid_79",
        ),
        "worker-group-1-2": (
            with_section(healthy(), "limits", recorded("limits-memlock-64k.txt")),
            "node.limits.memlock",
        ),
        "worker-group-1-3": (
            with_section(healthy(), "mtu", recorded("mtu-1500.txt")),
            "cross.net.mtu_mismatch",
        ),
    }
    recordings = {"worker-group-1-0": healthy()} | {node: output for node, (output, _) in planted.items()}
    options = DiagnoseOptions(cluster="ml-cluster-1", region="us-west-2", sample_nodes=4)
    report = diagnose(collect_snapshot(options, probe_runner=ReplayRunner(recordings)))
    for node, (_, finding_id) in planted.items():
        found = [f for f in report.findings if f.id == finding_id]
        assert found and found[0].instance_ids == [node], f"{finding_id} on {node}: {found}"
        assert found[0].status == "FAIL" and found[0].priority in ("P0", "P1") and found[0].reference
    assert report.blocking


@pytest.mark.anyio
async def test_over_mcp_the_tool_is_read_only_live_and_refuses_a_name_that_is_not_a_cluster() -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async with Client(StdioServerParameters(command=CLI, args=["serve"])) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        annotations = tools["probe_nodes"].annotations
        assert annotations is not None and annotations.read_only_hint and not annotations.destructive_hint
        assert set(tools["probe_nodes"].input_schema["properties"]) == {
            "cluster",
            "region",
            "node",
            "sample_nodes",
        }
        refused = await client.call_tool("probe_nodes", {"cluster": "x; reboot", "region": "us-west-2"})
    assert refused.is_error
    assert "not a valid HyperPod cluster name" in refused.content[0].text
