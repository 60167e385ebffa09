"""Generate examples/eks-cluster-bundle: a live `diagnose` of a HyperPod EKS cluster whose AWS side
is planted in moto and whose Kubernetes side is the recorded `faulty` cluster, saved as a bundle.

    .venv/bin/python -m tests.diagnose.example_bundle [OUTPUT_DIR]

What the AWS side plants (the Kubernetes side is tests/kubernetes/fixtures/README.md, scoped here
to namespace `misconfig`, job `qwen`):
- the cluster security group has no outbound self-reference (P0);
- worker i-0c8f1d2e3a4b5c608 failed its deep health check (Failure, and an Error cluster event),
  and CloudWatch holds its Xid 79 ("fallen off the bus");
- worker i-0c8f1d2e3a4b5c604 logged an NCCL watchdog timeout.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import boto3
import pytest

from hyperpod_nccl.diagnose.service import DiagnoseOptions, collect_snapshot
from hyperpod_nccl.guard.redact import redact_model
from hyperpod_nccl.snapshot import Snapshot
from tests.diagnose.conftest import aws_env
from tests.diagnose.stubs import OneCallStub
from tests.diagnose.world import ACCOUNT, REGION, _client, _instance_group, _self_reference, plant_cluster
from tests.kubernetes.conftest import recorded_cluster
from tests.servers.k8s_api import start_k8s_api_server
from tests.servers.moto_server import start_moto_server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eks-cluster-bundle"
NAME = "llm-train-prod"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/k7x2m9p4q1zt"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/hp-eks-llm-prod"
WORKERS = [f"i-0c8f1d2e3a4b5c60{n}" for n in range(1, 9)]
SYSTEM = "i-0c8f1d2e3a4b5c5f0"
LOG_GROUP = f"/aws/sagemaker/Clusters/{NAME}/k7x2m9p4q1zt"
XID = "[Sun Nov 22 03:41:07 2026] NVRM: Xid (PCI:0000:a8:00): 79, pid=0, GPU has fallen off the bus."
WATCHDOG = (
    "[rank24]:[E1122 03:52:10.123491 ProcessGroupNCCL.cpp:616] [Rank 24] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=48112, OpType=ALLREDUCE, NumelIn=131072000, NumelOut=131072000, "
    "Timeout(ms)=1800000) ran for 1800085 milliseconds before timing out."
)
LOG_LINES = {  # instance id -> (minutes ago, line)
    WORKERS[7]: [(52, "health-monitoring-agent: GPU 5 reported Xid 79"), (52, XID)],
    WORKERS[3]: [(21, WATCHDOG)],
    WORKERS[0]: [(95, "lifecycle: on_create.sh completed in 412s")],
}


def _security_groups(url: str) -> str:
    ec2 = _client("ec2", url)
    vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    group = ec2.create_security_group(GroupName=f"{NAME}-nodes", Description="HyperPod nodes", VpcId=vpc)
    # Someone tightened egress to 443 only; the self-reference went with it.
    ec2.revoke_security_group_egress(
        GroupId=group["GroupId"], IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    https = [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    ec2.authorize_security_group_egress(GroupId=group["GroupId"], IpPermissions=https)
    _self_reference(ec2, group["GroupId"], egress=False)
    return group["GroupId"]


def _logs(url: str, now: datetime) -> None:
    logs = _client("logs", url)
    logs.create_log_group(logGroupName=LOG_GROUP)
    for node, entries in LOG_LINES.items():
        stream = f"LifecycleConfig/worker-p5/{node}"
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        events = [
            {"timestamp": int((now - timedelta(minutes=m)).timestamp() * 1000), "message": t}
            for m, t in entries
        ]
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=events)


def _insights_rows(now: datetime) -> list[list[dict[str, str]]]:
    def stamp(minutes: int) -> str:
        return (now - timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S.000")

    def row(node: str, minutes: int, sample: str, **counts: int) -> list[dict[str, str]]:
        cells = {"@logStream": f"LifecycleConfig/worker-p5/{node}", "first_seen": stamp(minutes)}
        cells |= {"last_seen": stamp(minutes), "sample": sample} | {k: str(v) for k, v in counts.items()}
        return [{"field": key, "value": value} for key, value in cells.items()]

    return [
        row(WORKERS[7], 52, XID, xid=1, gpu_fell_off_bus=1),
        row(WORKERS[3], 21, WATCHDOG, watchdog_timeout=1),
    ]


def _events(now: datetime) -> list[dict[str, Any]]:
    base = {"ClusterArn": CLUSTER_ARN, "ClusterName": NAME}
    return [
        base
        | {
            "EventId": "e-7f3c2a91",
            "ResourceType": "Instance",
            "InstanceGroupName": "worker-p5",
            "InstanceId": WORKERS[7],
            "EventTime": now - timedelta(minutes=50),
            "EventLevel": "Error",
            "Description": "Deep health check failed: DCGM diagnostic level 2 reported GPU 5 unreachable. "
            "Instance scheduled for replacement.",
        },
        base
        | {
            "EventId": "e-1b9d0c44",
            "ResourceType": "Cluster",
            "EventTime": now - timedelta(minutes=115),
            "EventLevel": "Info",
            "Description": "Cluster software update completed.",
        },
    ]


def plant(url: str, now: datetime) -> None:
    group_id = _security_groups(url)
    groups = [
        _instance_group("system", "ml.m5.4xlarge", 1),
        _instance_group("worker-p5", "ml.p5.48xlarge", 8),
    ]
    statuses = {8: ("Failure", "Deep health check failed: GPU 5 unreachable")}
    extra = {
        "ClusterArn": CLUSTER_ARN,
        "Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}},
        "NodeRecovery": "Automatic",
    }
    plant_cluster(
        url,
        NAME,
        groups=groups,
        vpc_sgs=[group_id],
        extra=extra,
        statuses=statuses,
        instance_ids=[SYSTEM, *WORKERS],
    )
    _logs(url, now)


def write_kubeconfig(directory: Path, server: str) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: hp\n"
        f"clusters: [{{name: hp, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: hp, user: {token: recorded}}]\n"
        "contexts: [{name: hp, context: {cluster: hp, user: hp}}]\n"
    )
    return path


def generate(output: Path) -> Snapshot:
    with TemporaryDirectory(prefix="hyperpod-nccl-example-") as scratch:
        snapshot = _collect(Path(scratch))
    snapshot.save(output)
    return snapshot


def _collect(scratch: Path) -> Snapshot:
    now = datetime.now(UTC)
    moto = start_moto_server()
    kubernetes = start_k8s_api_server(recorded_cluster("faulty"))
    moto_server, k8s_server = next(moto), next(kubernetes)
    try:
        with aws_env(moto_server), pytest.MonkeyPatch.context() as patch:
            patch.setenv("AWS_DEFAULT_REGION", REGION)
            plant(moto_server.url, now)
            session = boto3.session.Session()
            OneCallStub(session, "sagemaker", "ListClusterEvents").respond({"Events": _events(now)})
            OneCallStub(session, "logs", "GetQueryResults").respond(
                {"status": "Complete", "results": _insights_rows(now)}
            )
            options = DiagnoseOptions(
                cluster=NAME,
                region=REGION,
                namespace="misconfig",
                job="qwen",
                sample_nodes=0,
                kubeconfig=str(write_kubeconfig(scratch, k8s_server.url)),
                context="hp",
            )
            return redact_model(collect_snapshot(options, session=session))
    finally:
        moto.close()
        kubernetes.close()


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else EXAMPLE
    generate(target)
    print(target)
