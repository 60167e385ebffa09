"""From anywhere with `--cluster/--region`: the controller is found by its instance group, reached
at its HyperPod SSM target, and Slurm node names are mapped to instance ids. The SageMaker calls
go through the product's guarded client, answered by botocore's Stubber; the probe output is the
recorded 22.05 controller."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
from botocore.stub import Stubber

from hyperpod_nccl.collect.slurm import collect_slurm_cluster
from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.probes.catalog import ProbeScript
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult
from hyperpod_nccl.probes.runners.replay import ReplayRunner
from hyperpod_nccl.slurm.service import slurm_report
from hyperpod_nccl.snapshot import Snapshot
from tests.slurm.helpers import RECORDED, only

CLUSTER_ID = "abcd1234efgh"
ARN = f"arn:aws:sagemaker:us-west-2:123456789012:cluster/{CLUSTER_ID}"
CONTROLLER = "i-0c0c0c0c0c0c0c0c0"
WORKERS = {"i-0a1a1a1a1a1a1a1a1": "ip-10-1-1-12", "i-0b2b2b2b2b2b2b2b2": "ip-10-1-1-14"}


def _summary(instance_id: str, group: str) -> dict[str, Any]:
    return {
        "InstanceGroupName": group,
        "InstanceId": instance_id,
        "InstanceType": "ml.p5.48xlarge" if group == "worker-group-1" else "ml.m5.xlarge",
        "LaunchTime": datetime(2024, 5, 1, tzinfo=UTC),
        "InstanceStatus": {"Status": "Running"},
    }


def _stubbed_sagemaker() -> tuple[Any, Stubber]:
    client = make_client("sagemaker", region="us-west-2")
    stub = Stubber(client)
    stub.add_response(
        "describe_cluster",
        {"ClusterArn": ARN, "ClusterName": "ml-cluster", "ClusterStatus": "InService", "InstanceGroups": []},
    )
    nodes = [_summary(CONTROLLER, "controller-machine")] + [_summary(i, "worker-group-1") for i in WORKERS]
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": nodes})
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": nodes})
    for instance_id, host in [(CONTROLLER, "ip-10-1-0-10"), *WORKERS.items()]:
        details = {"InstanceId": instance_id, "PrivateDnsHostname": f"{host}.us-west-2.compute.internal"}
        stub.add_response("describe_cluster_node", {"NodeDetails": details})
    stub.activate()
    return client, stub


class TargetLog(ReplayRunner):
    """The replay runner, remembering which node each probe was sent to."""

    def __init__(self, recordings: dict[str, str]) -> None:
        super().__init__(recordings)
        self.targets: list[NodeTarget] = []

    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult:
        self.targets.append(target)
        return await super().run(script, target, timeout_s)


def test_controller_is_reached_over_its_ssm_target_and_nodes_get_instance_ids() -> None:
    sagemaker, stub = _stubbed_sagemaker()
    # The replay runner answers only the controller's instance id: any other target is unreachable.
    runner = TargetLog({CONTROLLER: (RECORDED / "slurm-22.05.txt").read_text(encoding="utf-8")})
    slurm, issues = anyio.run(
        lambda: collect_slurm_cluster("ml-cluster", "us-west-2", runner, job_id="4242", sagemaker=sagemaker)
    )
    stub.assert_no_pending_responses()
    assert slurm is not None and issues == []
    assert slurm.source == "ssm" and slurm.controller_node == CONTROLLER
    assert [t.ssm_target for t in runner.targets] == [
        f"sagemaker-cluster:{CLUSTER_ID}_controller-machine-{CONTROLLER}"
    ]
    mapped = {n.name: n.instance_id for n in slurm.nodes}
    assert mapped["ip-10-1-1-12"] == "i-0a1a1a1a1a1a1a1a1" and mapped["ip-10-1-1-11"] is None
    report = slurm_report(Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm))
    gres = only(report, "slurm.node.gres_mismatch")
    assert gres.instance_ids == ["i-0a1a1a1a1a1a1a1a1"]
    assert gres.evidence[0].instance_id == "i-0a1a1a1a1a1a1a1a1"
    assert only(report, "slurm.node.down").instance_ids == ["i-0b2b2b2b2b2b2b2b2"]


def test_a_cluster_without_a_controller_group_says_so() -> None:
    client = make_client("sagemaker", region="us-west-2")
    stub = Stubber(client)
    stub.add_response(
        "describe_cluster",
        {"ClusterArn": ARN, "ClusterName": "ml-cluster", "ClusterStatus": "InService", "InstanceGroups": []},
    )
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [_summary(CONTROLLER, "workers")]})
    stub.activate()
    slurm, issues = anyio.run(
        lambda: collect_slurm_cluster("ml-cluster", "us-west-2", ReplayRunner({}), sagemaker=client)
    )
    assert slurm is None and "controller" in issues[0].message
