"""A HyperPod EKS cluster planted in moto's server, with the faults the diagnostic must find.

What it plants, and what the report must say about it:
- security group `sg_ok` references itself both ways (PASS);
- `sg_no_egress` lacks the outbound self-reference (P0 FAIL naming the egress command);
- `sg_efa_open`, attached by the `worker-p5` instance group, is open to 0.0.0.0/0 inbound (WARN);
- node `FAILED_NODE` is in Failure and `PENDING_NODE` still Pending; NodeRecovery is None;
- CloudWatch streams: an Xid 79 on the failed node, a watchdog timeout and an EFA completion
  error on two others;
- cluster events (ListClusterEvents, which moto lacks, answered by a Stubber): the failed node's
  health-check Error and routine Info events.

moto stores a cluster's request fields except Orchestrator and NodeRecovery, names nodes
`<group>-<n>`, and cannot page nodes past the first 100; `plant_cluster` fills those in on moto's
own objects so DescribeCluster and ListClusterNodes answer as the service does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto.sagemaker.models import sagemaker_backends

ACCOUNT = "123456789012"
REGION = "us-west-2"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/hp-eks-prod"
FAILED_NODE = "i-0f3a9c1d2b4e5f601"
PENDING_NODE = "i-0f3a9c1d2b4e5f604"
WATCHDOG_NODE = "i-0f3a9c1d2b4e5f602"
EFA_ERROR_NODE = "i-0f3a9c1d2b4e5f603"
XID_LINE = "[Sun Nov 22 03:41:07 2026] NVRM: Xid (PCI:0000:53:00): 79, pid=0, GPU has fallen off the bus."
WATCHDOG_LINE = (
    "[rank12]:[E1122 03:52:10.123 ProcessGroupNCCL.cpp:616] [Rank 12] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=88211, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) "
    "ran for 600021 milliseconds before timing out."
)
EFA_LINE = (
    "ip-10-1-55-31:2817:3104 [3] NCCL WARN NET/OFI Request 0x7f2c3c0a1b80 completed with error. RC: 21. "
    "Error: 12 (Cannot allocate memory). Completed length: 0"
)
BENIGN_LINE = "ip-10-1-55-40:2817:2817 [0] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)"


@dataclass
class World:
    name: str
    arn: str
    cluster_id: str
    sg_ok: str
    sg_no_egress: str
    sg_efa_open: str
    node_ids: list[str] = field(default_factory=list)

    @property
    def log_group(self) -> str:
        return f"/aws/sagemaker/Clusters/{self.name}/{self.cluster_id}"


def _client(service: str, url: str) -> Any:
    # Package-scoped setup runs before the per-test fake credentials exist: bring its own.
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _self_reference(ec2: Any, group_id: str, *, ingress: bool = True, egress: bool = True) -> None:
    rule = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id}]}]
    if ingress:
        ec2.authorize_security_group_ingress(GroupId=group_id, IpPermissions=rule)
    if egress:
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=rule)


def plant_security_groups(url: str, prefix: str) -> tuple[str, str, str]:
    ec2 = _client("ec2", url)
    vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]

    def group(name: str) -> str:
        return ec2.create_security_group(GroupName=f"{prefix}-{name}", Description=name, VpcId=vpc)["GroupId"]

    ok, no_egress, efa_open = group("cluster"), group("cluster-extra"), group("efa")
    _self_reference(ec2, ok)
    _self_reference(ec2, no_egress, egress=False)
    _self_reference(ec2, efa_open)
    world = [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    ec2.authorize_security_group_ingress(GroupId=efa_open, IpPermissions=world)
    return ok, no_egress, efa_open


def _instance_group(
    name: str, instance_type: str, count: int, sgs: list[str] | None = None
) -> dict[str, Any]:
    group: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle-hp/eks/", "OnCreate": "on_create.sh"},
        "ExecutionRole": f"arn:aws:iam::{ACCOUNT}:role/hyperpod-eks-exec",
        "ThreadsPerCore": 1,
    }
    if sgs:
        group["OverrideVpcConfig"] = {"SecurityGroupIds": sgs, "Subnets": ["subnet-0a1b2c3d4e5f60718"]}
    return group


def _default_instance_id(index: int) -> str:
    return f"i-0f3a9c1d2b4e{index:05x}" if index > 4 else f"i-0f3a9c1d2b4e5f6{index:02d}"


def _fill_in_moto(
    name: str, extra: dict[str, Any], statuses: dict[int, tuple[str, str]], instance_ids: list[str] | None
) -> list[str]:
    """Give moto's cluster the fields it drops and its nodes real instance ids and statuses."""
    cluster = sagemaker_backends[ACCOUNT][REGION].clusters[name]
    described = cluster.describe
    cluster.describe = lambda: {**described(), **extra}
    renamed = {}
    for index, node in enumerate(cluster.nodes.values()):
        node.instance_id = instance_ids[index] if instance_ids else _default_instance_id(index)
        node.status, message = statuses.get(index, ("Running", ""))
        # moto pages by each object's `arn`, which its ClusterNode lacks: without one, page 2 never comes.
        node.arn = f"{extra['ClusterArn']}/node/{node.instance_id}"
        node.summary = _summary_with_message(node.summary, message)
        renamed[node.instance_id] = node
    cluster.nodes = renamed
    return list(renamed)


def _summary_with_message(summary: Any, message: str) -> Any:
    def answer() -> dict[str, Any]:
        row = summary()
        row["InstanceStatus"]["Message"] = message
        return row

    return answer


def plant_cluster(
    url: str,
    name: str,
    *,
    groups: list[dict[str, Any]],
    vpc_sgs: list[str],
    extra: dict[str, Any],
    statuses: dict[int, tuple[str, str]] | None = None,
    instance_ids: list[str] | None = None,
) -> tuple[str, list[str]]:
    """A cluster in moto; `extra` may carry a real-looking ClusterArn (moto puts the name in it)."""
    arn = _client("sagemaker", url).create_cluster(
        ClusterName=name,
        InstanceGroups=groups,
        VpcConfig={"SecurityGroupIds": vpc_sgs, "Subnets": ["subnet-0a1b2c3d4e5f60718"]},
    )["ClusterArn"]
    extra = {"ClusterArn": arn, **extra}
    return extra["ClusterArn"], _fill_in_moto(name, extra, statuses or {}, instance_ids)


def plant_eks_cluster(url: str, name: str = "ml-cluster-prod") -> World:
    ok, no_egress, efa_open = plant_security_groups(url, name)
    groups = [
        _instance_group("system", "ml.m5.4xlarge", 1),
        _instance_group("worker-p5", "ml.p5.48xlarge", 5, [efa_open]),
    ]
    # index 0 is the system node; 1.. are the workers, in creation order.
    statuses = {1: ("Failure", "Node failed deep health check: GPU error"), 4: ("Pending", "")}
    extra = {"Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}}, "NodeRecovery": "None"}
    arn, nodes = plant_cluster(
        url, name, groups=groups, vpc_sgs=[ok, no_egress], extra=extra, statuses=statuses
    )
    world = World(name, arn, arn.rsplit("/", 1)[-1], ok, no_egress, efa_open, nodes)
    plant_logs(url, world)
    return world


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def plant_logs(url: str, world: World) -> None:
    logs = _client("logs", url)
    logs.create_log_group(logGroupName=world.log_group)
    now = datetime.now(UTC)
    lines = {
        FAILED_NODE: [(50, BENIGN_LINE), (40, XID_LINE)],
        WATCHDOG_NODE: [(45, BENIGN_LINE), (30, WATCHDOG_LINE)],
        EFA_ERROR_NODE: [(31, EFA_LINE), (30, EFA_LINE)],
    }
    for node, entries in lines.items():
        stream = f"LifecycleConfig/worker-p5/{node}"
        logs.create_log_stream(logGroupName=world.log_group, logStreamName=stream)
        events = [
            {"timestamp": _millis(now - timedelta(minutes=ago)), "message": text} for ago, text in entries
        ]
        logs.put_log_events(logGroupName=world.log_group, logStreamName=stream, logEvents=events)


def insights_rows() -> list[list[dict[str, str]]]:
    """What Logs Insights' stats query returns for `plant_logs` (moto's Insights ignores stats):
    each stream's first and last hit at the times `plant_logs` wrote them."""
    now = datetime.now(UTC)

    def stamp(minutes: int) -> str:
        return (now - timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S.000")

    def row(node: str, first: int, last: int, sample: str, **counts: int) -> list[dict[str, str]]:
        cells = {"@logStream": f"LifecycleConfig/worker-p5/{node}", "first_seen": stamp(first)}
        cells |= {"last_seen": stamp(last)} | {name: str(count) for name, count in counts.items()}
        cells |= {"sample": sample}
        return [{"field": key, "value": value} for key, value in cells.items()]

    return [
        row(FAILED_NODE, 40, 40, XID_LINE, xid=1, gpu_fell_off_bus=1),
        row(WATCHDOG_NODE, 30, 30, WATCHDOG_LINE, watchdog_timeout=1),
        row(EFA_ERROR_NODE, 31, 30, EFA_LINE, efa_error=2, nccl_warn=2),
    ]


def cluster_events(world: World) -> list[dict[str, Any]]:
    """ListClusterEvents rows for the planted cluster, newest first."""
    now = datetime.now(UTC)

    def event(minutes: int, level: str, text: str, node: str | None = None, group: str | None = None) -> dict:
        row = {
            "EventId": f"ev-{minutes:04d}",
            "ClusterArn": world.arn,
            "ClusterName": world.name,
            "ResourceType": "Instance" if node else ("InstanceGroup" if group else "Cluster"),
            "EventTime": now - timedelta(minutes=minutes),
            "EventLevel": level,
            "Description": text,
        }
        return (
            row
            | ({"InstanceId": node, "InstanceGroupName": "worker-p5"} if node else {})
            | ({"InstanceGroupName": group} if group else {})
        )

    return [
        event(
            38, "Error", "Instance failed deep health check (GPU): marked for replacement", node=FAILED_NODE
        ),
        event(90, "Info", "Instance group scaling completed: 5/5 instances", group="worker-p5"),
        event(110, "Info", "Cluster update completed"),
    ]
