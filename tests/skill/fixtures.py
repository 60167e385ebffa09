"""Hand-built reports and snapshots with known values, so a test can say exactly what it expects."""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.models import (
    BlastRadius,
    Evidence,
    Finding,
    Priority,
    Report,
    RootCause,
    Status,
    SuggestedCommand,
    TimelineEvent,
)
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import AwsSnapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot

CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234efgh"
EKS_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/hp-eks-prod"
STRAGGLER_LINE = (
    "[rank77]:[E ProcessGroupNCCL.cpp:616] [Rank 77] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=4121, OpType=ALLREDUCE, NumelIn=262144, Timeout(ms)=600000) ran for 600021 milliseconds"
)
EFA_LINE = "NET/OFI Selected provider is tcp, fabric is TCP-IP (found 1 nics)"


def finding(
    finding_id: str,
    status: Status = Status.FAIL,
    priority: Priority | None = Priority.P0,
    *,
    ranks: list[int] | None = None,
    nodes: list[str] | None = None,
    instance_ids: list[str] | None = None,
    pods: list[str] | None = None,
    evidence: list[Evidence] | None = None,
    reference: str = "debugging-guide.md § 1",
) -> Finding:
    return Finding(
        id=finding_id,
        status=status,
        priority=priority,
        title=f"title of {finding_id}",
        reference=reference,
        ranks=ranks or [],
        nodes=nodes or [],
        instance_ids=instance_ids or [],
        pods=pods or [],
        evidence=evidence or [],
    )


def incident_report() -> Report:
    """A straggler (P0, rank 77 on one node) and EFA TCP fallback (P1, two instances)."""
    straggler = finding(
        "nccl.watchdog.straggler",
        ranks=[77],
        nodes=["ip-10-1-2-3"],
        instance_ids=["i-0abc123def4567890"],
        pods=["llama-worker-9"],
        evidence=[
            Evidence(source="worker-9.log", line=4521, text=STRAGGLER_LINE, rank=77, node="ip-10-1-2-3")
        ],
    )
    straggler.suggested_commands.append(
        SuggestedCommand(
            command="kubectl logs -n training llama-worker-9 --previous",
            why="see why the rank stalled",
            blast_radius=BlastRadius.READ_ONLY,
            permission="pods/log: get",
        )
    )
    fallback = finding(
        "efa.tcp_fallback",
        priority=Priority.P1,
        instance_ids=["i-0aaa1111bbbb22223", "i-0ccc3333dddd44445"],
        evidence=[Evidence(source="worker-0.log", line=12, text=EFA_LINE, instance_id="i-0aaa1111bbbb22223")],
        reference="debugging-guide.md § 13",
    )
    healthy = finding("nccl.version.consistent", Status.PASS, None)
    return Report.build(
        "diagnose",
        [straggler, fallback, healthy],
        files_read=16,
        ranks_seen=128,
        root_cause=RootCause(
            category="data_loading_stall",
            summary="rank 77 stalled in the data loader",
            culprit_ranks=[77],
            culprit_nodes=["ip-10-1-2-3"],
            confidence="high",
        ),
        timeline=[
            TimelineEvent(
                time="2026-03-02T11:04:05Z", source="worker-9.log:4400", event="last step on rank 77"
            ),
            TimelineEvent(time=None, source="worker-3.log:1", event="no time"),
            TimelineEvent(
                time="2026-03-02T11:14:06+00:00", source="worker-9.log:4521", event="watchdog timeout"
            ),
        ],
    )


def pod(name: str, env: list[dict[str, Any]], node: str = "ip-10-1-2-3") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "training",
            "labels": {"training.kubeflow.org/job-name": "llama"},
        },
        "spec": {"nodeName": node, "containers": [{"name": "pytorch", "env": env}]},
        "status": {"phase": "Running"},
    }


def incident_snapshot(extra_env: list[dict[str, Any]] | None = None) -> Snapshot:
    env = [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "FI_PROVIDER", "value": "efa"},
        {"name": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "value": "1"},
        {"name": "PATH", "value": "/usr/bin"},
        *(extra_env or []),
    ]
    return Snapshot(
        collected_at="2026-03-02T11:20:00Z",
        region="us-west-2",
        orchestrator="eks",
        namespace="training",
        job="llama",
        aws=AwsSnapshot(
            account="123456789012",
            cluster={
                "ClusterName": "ml-cluster-prod",
                "ClusterArn": CLUSTER_ARN,
                "Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}},
                "InstanceGroups": [{"InstanceGroupName": "workers"}],
            },
        ),
        kubernetes=KubernetesSnapshot(
            namespace="training", job="llama", pods=[pod("llama-worker-0", env), pod("llama-worker-9", env)]
        ),
    )
