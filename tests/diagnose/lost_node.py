"""A HyperPod EKS cluster where exactly one node is lost mid-run, with noise that must not be blamed.

The AWS side is planted in moto (plus Stubber answers for ListClusterEvents and Insights), the
Kubernetes side is served by the recorded API server; every time is relative to `now`, as a
live cluster's would be. What it plants, and what the diagnosis must say:

- PyTorchJob `training/llama-pretrain`, 4 pods × 8 ranks, running for 5 hours and 79,214
  collectives. Node `LOST` (worker-1, ranks 16-23) stopped renewing its kubelet lease at `lost`;
  the stuck ALLREDUCE SeqNum 79215 was issued 7 s later; the other 24 ranks' watchdog fired
  30 min after that and their containers restarted (their current logs start after the failure).
  Worker-1's log cannot be read: the API server answers 500, the kubelet being gone. → trigger:
  `LOST`, its instance id, ranks 16-23, category infrastructure, high confidence.
- HyperPod still lists `LOST` Running and NodeRecovery is Automatic: the node has been NotReady
  for an hour with no reboot or replacement. → control-plane findings; the escalation question.
- Latent configuration: the node security group lost its outbound self-reference, and a
  default-deny ingress NetworkPolicy was created 1 h 40 min before collection; the job kept
  running through both. → latent, P2, not the trigger.
- An old flap elsewhere: `FLAPPED` (worker-2's node) went NotReady for 80 s 3 h 10 min ago, after
  an EFA completion error in its CloudWatch stream, and came back. → ruled out by time.
- `LABELLED`, which runs none of the job's pods, is labelled UnschedulablePendingReplacement
  although its deep health check passed. → a control-plane disagreement, not blamed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
from tests.diagnose.example_bundle import write_kubeconfig
from tests.diagnose.stubs import OneCallStub
from tests.diagnose.world import ACCOUNT, REGION, _client, _instance_group, _self_reference, plant_cluster
from tests.servers.k8s_api import K8sApiServer, RecordedCluster, start_k8s_api_server
from tests.servers.moto_server import MotoServer, start_moto_server

NAME = "llm-pretrain-prod"
CLUSTER_ID = "q4w8e2r6t1yz"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{CLUSTER_ID}"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/hp-eks-pretrain"
LOG_GROUP = f"/aws/sagemaker/Clusters/{NAME}/{CLUSTER_ID}"
NAMESPACE, JOB = "training", "llama-pretrain"
SYSTEM = "i-0d2e4f6a8b0c1d2e0"
WORKERS = [f"i-0d2e4f6a8b0c1d2e{n}" for n in range(1, 7)]
LOST, FLAPPED, LABELLED = WORKERS[2], WORKERS[3], WORKERS[5]
LOST_RANKS = list(range(16, 24))
GROUP = "worker-p5"
INSTANCE_TYPE = "ml.p5.48xlarge"
TIMEOUT_MS = 1_800_000
SEQ = 79215
# pod → (instance it runs on, node rank)
PODS = {
    f"{JOB}-master-0": (WORKERS[0], 0),
    f"{JOB}-worker-0": (WORKERS[1], 1),
    f"{JOB}-worker-1": (LOST, 2),
    f"{JOB}-worker-2": (FLAPPED, 3),
}
KUBELET_GONE = (
    'Get "https://10.1.88.17:10250/containerLogs/training/llama-pretrain-worker-1/pytorch?tailLines=500'
    '&timestamps=true": dial tcp 10.1.88.17:10250: connect: no route to host'
)


def node_name(instance_id: str) -> str:
    return f"hyperpod-{instance_id}"


@dataclass(frozen=True)
class Times:
    now: datetime

    @property
    def started(self) -> datetime:
        return self.now - timedelta(hours=5)

    @property
    def lost(self) -> datetime:  # the lost node's last lease renewal
        return self.now - timedelta(minutes=62)

    @property
    def issued(self) -> datetime:  # the stuck collective
        return self.lost + timedelta(seconds=7)

    @property
    def fired(self) -> datetime:
        return self.issued + timedelta(milliseconds=TIMEOUT_MS + 46)

    @property
    def not_ready(self) -> datetime:
        return self.lost + timedelta(seconds=48)

    @property
    def flap(self) -> datetime:
        return self.now - timedelta(hours=3, minutes=10)

    @property
    def policy_created(self) -> datetime:
        return self.now - timedelta(hours=1, minutes=40)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- AWS side ---------------------------------------------------------------------------------


def _security_group(url: str) -> str:
    ec2 = _client("ec2", url)
    vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    group = ec2.create_security_group(GroupName=f"{NAME}-nodes", Description="HyperPod nodes", VpcId=vpc)
    # Egress tightened to 443: the outbound self-reference went with it (latent: connections
    # already open survive a security-group change).
    ec2.revoke_security_group_egress(
        GroupId=group["GroupId"], IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    https = [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    ec2.authorize_security_group_egress(GroupId=group["GroupId"], IpPermissions=https)
    _self_reference(ec2, group["GroupId"], egress=False)
    return group["GroupId"]


EFA_LINE = (
    "hyperpod-i-0d2e4f6a8b0c1d2e4:3391:3502 [5] NCCL WARN NET/OFI Request 0x7f1a2c0b3d40 completed with "
    "error. RC: 15. Error: 15 (Connection reset by peer). Completed length: 0"
)


def _cloudwatch(url: str, times: Times) -> None:
    logs = _client("logs", url)
    logs.create_log_group(logGroupName=LOG_GROUP)
    stream = f"LifecycleConfig/{GROUP}/{FLAPPED}"
    logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    when = int((times.flap - timedelta(minutes=1)).timestamp() * 1000)
    logs.put_log_events(
        logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[{"timestamp": when, "message": EFA_LINE}]
    )


def insights_rows(times: Times) -> list[list[dict[str, str]]]:
    when = (times.flap - timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S.000")
    cells = {
        "@logStream": f"LifecycleConfig/{GROUP}/{FLAPPED}",
        "first_seen": when,
        "last_seen": when,
        "efa_error": "1",
        "nccl_warn": "1",
        "sample": EFA_LINE,
    }
    return [[{"field": key, "value": value} for key, value in cells.items()]]


def cluster_events(times: Times) -> list[dict[str, Any]]:
    return [
        {
            "EventId": "e-5a1c9e02",
            "ClusterArn": CLUSTER_ARN,
            "ClusterName": NAME,
            "ResourceType": "Cluster",
            "EventTime": times.now - timedelta(hours=5, minutes=20),
            "EventLevel": "Info",
            "Description": "Cluster software update completed.",
        }
    ]


def plant_aws(url: str, times: Times) -> None:
    group_id = _security_group(url)
    groups = [_instance_group("system", "ml.m5.4xlarge", 1), _instance_group(GROUP, INSTANCE_TYPE, 6)]
    extra = {
        "ClusterArn": CLUSTER_ARN,
        "Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}},
        "NodeRecovery": "Automatic",
    }
    plant_cluster(url, NAME, groups=groups, vpc_sgs=[group_id], extra=extra, instance_ids=[SYSTEM, *WORKERS])
    _cloudwatch(url, times)


# --- Kubernetes side --------------------------------------------------------------------------


def _node(instance_id: str, times: Times, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    name = node_name(instance_id)
    lost, flapped = instance_id == LOST, instance_id == FLAPPED
    if lost:
        ready = {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastHeartbeatTime": stamp(times.lost - timedelta(minutes=3)),
            "lastTransitionTime": stamp(times.not_ready),
        }
    else:
        since = times.flap + timedelta(seconds=80) if flapped else times.now - timedelta(days=3)
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": stamp(times.now - timedelta(seconds=40)),
            "lastTransitionTime": stamp(since),
        }
    health = {
        "sagemaker.amazonaws.com/node-health-status": "Schedulable",
        "sagemaker.amazonaws.com/deep-health-check-status": "Passed",
    }
    gpu = instance_id != SYSTEM
    resources = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"} if gpu else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "node.kubernetes.io/instance-type": INSTANCE_TYPE if gpu else "ml.m5.4xlarge",
                "sagemaker.amazonaws.com/instance-group-name": GROUP if gpu else "system",
                **health,
                **(labels or {}),
            },
            "creationTimestamp": stamp(times.now - timedelta(days=3)),
        },
        "spec": {
            "providerID": f"aws:///us-west-2a/{instance_id}",
            **(
                {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]} if lost else {}
            ),
        },
        "status": {
            "conditions": [ready],
            "capacity": {"cpu": "192", "memory": "2097152Mi", **resources},
            "allocatable": {"cpu": "191", "memory": "2000000Mi", **resources},
            "nodeInfo": {
                "kubeletVersion": "v1.31.4-eks-aeac579",
                "osImage": "Amazon Linux 2",
                "kernelVersion": "5.10.230-223.885.amzn2.x86_64",
                "containerRuntimeVersion": "containerd://1.7.25",
            },
            "addresses": [{"type": "Hostname", "address": name}],
        },
    }


def _lease(instance_id: str, times: Times) -> dict[str, Any]:
    renewed = times.lost if instance_id == LOST else times.now - timedelta(seconds=4)
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": node_name(instance_id), "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": node_name(instance_id),
            "leaseDurationSeconds": 40,
            "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }


def _env(node_rank: int) -> list[dict[str, str]]:
    values = {
        "MASTER_ADDR": f"{JOB}-master-0",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "4",
        "RANK": str(node_rank),
        "PET_NPROC_PER_NODE": "8",
        "PET_NNODES": "4",
        "NCCL_DEBUG": "INFO",
        "NCCL_SOCKET_IFNAME": "^lo,docker0",
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    return [{"name": key, "value": value} for key, value in values.items()]


def _container_status(pod: str, times: Times) -> dict[str, Any]:
    image = (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-ec2"
    )
    base = {"name": "pytorch", "image": image, "ready": True}
    if pod.endswith("worker-1"):  # on the lost node: its last known state, never updated again
        return base | {"restartCount": 0, "state": {"running": {"startedAt": stamp(times.started)}}}
    died = times.fired + timedelta(seconds=25)
    return base | {
        "restartCount": 1,
        "state": {"running": {"startedAt": stamp(died + timedelta(seconds=15))}},
        "lastState": {
            "terminated": {
                "reason": "Error",
                "exitCode": 1,
                "startedAt": stamp(times.started),
                "finishedAt": stamp(died),
            }
        },
    }


def _pod(pod: str, times: Times) -> dict[str, Any]:
    instance_id, node_rank = PODS[pod]
    replica = "master" if pod.endswith("master-0") else "worker"
    lost = instance_id == LOST
    metadata: dict[str, Any] = {
        "name": pod,
        "namespace": NAMESPACE,
        "labels": {
            "training.kubeflow.org/job-name": JOB,
            "training.kubeflow.org/replica-type": replica,
            "training.kubeflow.org/replica-index": pod.rsplit("-", 1)[1],
        },
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": JOB}],
        "creationTimestamp": stamp(times.started - timedelta(minutes=2)),
    }
    if lost:
        metadata["deletionTimestamp"] = stamp(times.not_ready + timedelta(minutes=5))
    conditions = [{"type": "Ready", "status": "False" if lost else "True"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "nodeName": node_name(instance_id),
            "restartPolicy": "OnFailure",
            "containers": [
                {
                    "name": "pytorch",
                    "image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1",
                    "command": ["torchrun"],
                    "args": ["--nnodes", "4", "--nproc_per_node", "8", "/fsx/code/train.py"],
                    "env": _env(node_rank),
                    "ports": [{"containerPort": 23456, "name": "pytorchjob-port", "protocol": "TCP"}],
                    "resources": {
                        "limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "memory": "1800Gi"},
                        "requests": {
                            "nvidia.com/gpu": "8",
                            "vpc.amazonaws.com/efa": "32",
                            "memory": "1800Gi",
                        },
                    },
                    "volumeMounts": [
                        {"name": "dshm", "mountPath": "/dev/shm"},
                        {"name": "fsx", "mountPath": "/fsx"},
                    ],
                }
            ],
            "volumes": [
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Gi"}},
                {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-claim"}},
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "startTime": stamp(times.started - timedelta(minutes=1)),
            "containerStatuses": [_container_status(pod, times)],
        },
    }


def _event(
    name: str, reason: str, message: str, when: datetime, involved: dict[str, str], **more: Any
) -> dict:
    namespace = involved.get("namespace", "default")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": more.get("type", "Normal"),
        "count": 1,
        "firstTimestamp": stamp(when),
        "lastTimestamp": stamp(when),
        "source": more.get("source", {"component": "node-controller"}),
    }


def _events(times: Times) -> list[dict[str, Any]]:
    lost, flapped = node_name(LOST), node_name(FLAPPED)
    worker = {"kind": "Pod", "namespace": NAMESPACE, "name": f"{JOB}-worker-1"}
    return [
        _event(
            f"{lost}.1",
            "NodeNotReady",
            f"Node {lost} status is now: NodeNotReady",
            times.not_ready,
            {"kind": "Node", "name": lost},
        ),
        _event(
            f"{JOB}-worker-1.1", "NodeNotReady", "Node is not ready", times.not_ready, worker, type="Warning"
        ),
        _event(
            f"{JOB}-worker-1.2",
            "TaintManagerEviction",
            f"Marking for deletion Pod {NAMESPACE}/{JOB}-worker-1",
            times.not_ready + timedelta(minutes=5),
            worker,
            source={"component": "taint-eviction-controller"},
        ),
        _event(
            f"{flapped}.1",
            "NodeNotReady",
            f"Node {flapped} status is now: NodeNotReady",
            times.flap,
            {"kind": "Node", "name": flapped},
        ),
        _event(
            f"{flapped}.2",
            "NodeReady",
            f"Node {flapped} status is now: NodeReady",
            times.flap + timedelta(seconds=80),
            {"kind": "Node", "name": flapped},
        ),
    ]


def _objects(times: Times) -> list[dict[str, Any]]:
    labelled = {"sagemaker.amazonaws.com/node-health-status": "UnschedulablePendingReplacement"}
    nodes = [_node(i, times, labels=labelled if i == LABELLED else None) for i in (SYSTEM, *WORKERS)]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{JOB}-master-0", "namespace": NAMESPACE},
        "spec": {
            "clusterIP": "None",
            "selector": {
                "training.kubeflow.org/job-name": JOB,
                "training.kubeflow.org/replica-type": "master",
            },
            "ports": [{"port": 23456}],
        },
    }
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": f"{JOB}-master-0", "namespace": NAMESPACE},
        "subsets": [{"addresses": [{"ip": "10.1.80.11"}], "ports": [{"port": 23456}]}],
    }
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "default-deny-ingress",
            "namespace": NAMESPACE,
            "creationTimestamp": stamp(times.policy_created),
        },
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    plugin = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "aws-efa-k8s-device-plugin-daemonset", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "efa", "image": "aws-efa-k8s-device-plugin:v0.5.6"}]}
            }
        },
        "status": {"desiredNumberScheduled": 6, "numberReady": 5},
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [
        *nodes,
        *(_lease(i, times) for i in (SYSTEM, *WORKERS)),
        *(_pod(pod, times) for pod in PODS),
        *_events(times),
        service,
        endpoints,
        deny,
        plugin,
        namespace,
    ]


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


def _glog(moment: datetime) -> str:
    return moment.strftime("%m%d %H:%M:%S.%f")


def _watchdog_lines(rank: int, times: Times) -> list[str]:
    fired = times.fired + timedelta(milliseconds=rank)
    prefix = f"{_ts(fired)} [rank{rank}]:[E{_glog(fired)} 1183 ProcessGroupNCCL.cpp"
    sizes = "NumelIn=262144000, NumelOut=262144000"
    work = f"WorkNCCL(SeqNum={SEQ}, OpType=ALLREDUCE, {sizes}, Timeout(ms)={TIMEOUT_MS})"
    return [
        f"{prefix}:616] [Rank {rank}] Watchdog caught collective operation timeout: {work} ran for "
        f"{TIMEOUT_MS + 46} milliseconds before timing out.",
        f"{prefix}:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception (either an error or timeout) "
        f"detected by watchdog at work: {SEQ}, last enqueued NCCL work: {SEQ}, "
        f"last completed NCCL work: {SEQ - 1}.",
    ]


def _failed_log(pod: str, times: Times) -> str:
    """The container instance that ran at the failure: training, the watchdog on all 8 local
    ranks, torchrun's summary. Lines carry the runtime's timestamps (`kubectl logs --timestamps`)."""
    _, node_rank = PODS[pod]
    ranks = range(node_rank * 8, node_rank * 8 + 8)
    first = f"{_ts(times.started)} [rank{ranks[0]}]:NCCL INFO comm 0x5581 rank {ranks[0]} nranks 32"
    lines = [f"{first} cudaDev 0 busId 53000 - Init COMPLETE"]
    for step in (79180, 79200):
        moment = times.lost - timedelta(seconds=(79214 - step) * 2)
        lines.append(
            f"{_ts(moment)} [rank{ranks[0]}]:step {step} loss 1.8{step % 7} lr 2.1e-4 tokens/s 4.1e5"
        )
    for rank in ranks:
        lines += _watchdog_lines(rank, times)
    died = times.fired + timedelta(seconds=24)
    summary = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {died:%Y-%m-%d_%H:%M:%S}",
        f"  host      : {pod}",
        f"  rank      : {ranks[0]} (local_rank: 0)",
        "  exitcode  : -6 (pid: 1183)",
        "  traceback : Signal 6 (SIGABRT) received by PID 1183",
    ]
    return "\n".join(lines + [f"{_ts(died)} {line}" for line in summary]) + "\n"


def _restarted_log(times: Times) -> str:
    """After the restart: waiting in rendezvous for the node that will not come back."""
    start = times.fired + timedelta(seconds=40)
    agent = "torch/distributed/elastic/agent/server/api.py:525"
    lines = [
        f"{_ts(start)} [I{_glog(start)} 1 torch/distributed/run.py:793] Using nproc_per_node=8.",
        f"{_ts(start)} [I{_glog(start)} 1 {agent}] [default] Rendezvous'ing worker group",
    ]
    return "\n".join(lines) + "\n"


def recorded(times: Times) -> RecordedCluster:
    logs = {}
    for pod in PODS:
        if pod.endswith("worker-1"):
            continue
        logs[(NAMESPACE, pod, "pytorch", True)] = _failed_log(pod, times)
        logs[(NAMESPACE, pod, "pytorch", False)] = _restarted_log(times)
    return RecordedCluster(
        objects=_objects(times),
        logs=logs,
        log_errors={(NAMESPACE, f"{JOB}-worker-1"): (500, KUBELET_GONE)},
    )


@dataclass
class Planted:
    options: DiagnoseOptions
    session: boto3.session.Session
    times: Times
    moto: MotoServer
    kubernetes: K8sApiServer


@contextmanager
def planted(now: datetime | None = None) -> Iterator[Planted]:
    """moto and the recorded API server running with the cluster planted, and the options and
    session a live diagnostic of it uses."""
    times = Times(now or datetime.now(UTC).replace(microsecond=0))
    moto = start_moto_server()
    kubernetes = start_k8s_api_server(recorded(times))
    moto_server, k8s_server = next(moto), next(kubernetes)
    try:
        with (
            TemporaryDirectory(prefix="hyperpod-nccl-lost-node-") as scratch,
            aws_env(moto_server),
            pytest.MonkeyPatch.context() as patch,
        ):
            patch.setenv("AWS_DEFAULT_REGION", REGION)
            plant_aws(moto_server.url, times)
            session = boto3.session.Session()
            OneCallStub(session, "sagemaker", "ListClusterEvents").respond({"Events": cluster_events(times)})
            OneCallStub(session, "logs", "GetQueryResults").respond(
                {"status": "Complete", "results": insights_rows(times)}
            )
            options = DiagnoseOptions(
                cluster=NAME,
                region=REGION,
                namespace=NAMESPACE,
                job=JOB,
                sample_nodes=0,
                since="6h",
                kubeconfig=str(write_kubeconfig(Path(scratch), k8s_server.url)),
                context="hp",
            )
            moto_server.received.clear()
            yield Planted(options, session, times, moto_server, k8s_server)
    finally:
        moto.close()
        kubernetes.close()


def collect(plant: Planted) -> Snapshot:
    return redact_model(collect_snapshot(plant.options, session=plant.session))
