"""Collect the Slurm view by running `slurm_controller.sh` through a runner.

Two places it runs: on a login/controller node with no AWS access (the local runner, this host),
or from anywhere with the cluster named (the SSM runner to the node of the instance group whose
name contains "controller"). With the cluster known, Slurm node names (`ip-10-1-2-3`) are mapped
to HyperPod instance ids through `DescribeClusterNode`'s private DNS host name.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_nccl.collect.aws import issue_for
from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.probes.catalog import probe_script
from hyperpod_nccl.probes.runners.base import NodeTarget, Runner, hyperpod_ssm_target
from hyperpod_nccl.slurm.probe import SCRIPT, snapshot_from_output
from hyperpod_nccl.snapshot import CollectionIssue
from hyperpod_nccl.snapshot.slurm import SlurmSnapshot

PROBE_TIMEOUT_S = 180.0
_MAX_DESCRIBED = 200  # DescribeClusterNode calls per run: enough for the nodes worth naming
_CONCURRENCY = 8
_SLURM_JOB_ID = re.compile(r"\d{1,12}(_\d{1,9})?")


class ControllerNotFound(LookupError):
    """The cluster has no instance group whose name contains "controller"."""


async def collect_slurm(
    runner: Runner, target: NodeTarget, *, job_id: str | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> tuple[SlurmSnapshot | None, list[CollectionIssue]]:
    """Run the controller probe on `target`; a probe that printed nothing yields None and why."""
    issues = []
    if job_id and not _SLURM_JOB_ID.fullmatch(job_id):
        # `diagnose --job` also takes Kubernetes job names; on Slurm only a job id means anything.
        message = f"{job_id!r} is not a Slurm job id; jobs were read without it"
        issues.append(CollectionIssue(source="slurm job", kind="skipped", message=message))
        job_id = None
    script = probe_script(SCRIPT, {"JOB_ID": job_id} if job_id else {})
    result = await runner.run(script, target, timeout_s)
    source = "ssm" if target.ssm_target else "local"
    if result.status != "ok":
        kind = result.status if result.status in ("unreachable", "timeout", "access_denied") else "error"
        issues.append(
            CollectionIssue(source=f"slurm probe on {target.label}", kind=kind, message=result.error or kind)
        )
    if not result.output.strip():
        return None, issues
    snapshot = snapshot_from_output(result.output, job_id=job_id, source=source, controller_node=target.label)
    return snapshot, issues


def _cluster_nodes(sagemaker: Any, cluster: str) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for page in sagemaker.get_paginator("list_cluster_nodes").paginate(ClusterName=cluster):
        nodes.extend(page.get("ClusterNodeSummaries", []))
    return nodes


def controller_target(sagemaker: Any, cluster: str) -> NodeTarget:
    """The SSM target of the cluster's controller node."""
    arn = sagemaker.describe_cluster(ClusterName=cluster)["ClusterArn"]
    for node in _cluster_nodes(sagemaker, cluster):
        group = node.get("InstanceGroupName", "")
        if "controller" in group.lower():
            return NodeTarget(
                instance_id=node["InstanceId"],
                instance_group=group,
                instance_type=node.get("InstanceType"),
                ssm_target=hyperpod_ssm_target(arn.rsplit("/", 1)[-1], group, node["InstanceId"]),
            )
    raise ControllerNotFound(f"cluster {cluster} has no instance group with 'controller' in its name")


async def _host_names(sagemaker: Any, cluster: str, instance_ids: list[str]) -> dict[str, str]:
    """Short private host name (the Slurm node name) → instance id."""
    names: dict[str, str] = {}
    limiter = anyio.CapacityLimiter(_CONCURRENCY)

    async def describe(instance_id: str) -> None:
        response = await anyio.to_thread.run_sync(
            lambda: sagemaker.describe_cluster_node(ClusterName=cluster, NodeId=instance_id), limiter=limiter
        )
        details = response.get("NodeDetails", {})
        host = details.get("PrivateDnsHostname") or ""
        if host:
            names[host.split(".")[0]] = details.get("InstanceId", instance_id)

    async with anyio.create_task_group() as group:
        for instance_id in instance_ids:
            group.start_soon(describe, instance_id)
    return names


async def map_instance_ids(sagemaker: Any, cluster: str, slurm: SlurmSnapshot) -> list[CollectionIssue]:
    """Fill `instance_id` on the Slurm nodes HyperPod knows, by private DNS host name."""
    try:
        ids = [n["InstanceId"] for n in _cluster_nodes(sagemaker, cluster)]
        names = await _host_names(sagemaker, cluster, ids[:_MAX_DESCRIBED])
    except (BotoCoreError, ClientError) as error:
        return [CollectionIssue(source="sagemaker:DescribeClusterNode", kind="error", message=str(error))]
    for node in slurm.nodes:
        node.instance_id = names.get(node.name)
    if len(ids) > _MAX_DESCRIBED:
        message = f"mapped the first {_MAX_DESCRIBED} of {len(ids)} instances to Slurm node names"
        return [CollectionIssue(source="sagemaker:DescribeClusterNode", kind="skipped", message=message)]
    return []


async def collect_slurm_cluster(
    cluster: str, region: str, runner: Runner, *, job_id: str | None = None, sagemaker: Any | None = None
) -> tuple[SlurmSnapshot | None, list[CollectionIssue]]:
    """From anywhere with AWS access: find the controller, probe it over `runner`, map instance ids."""
    sagemaker = sagemaker or make_client("sagemaker", region=region)
    try:
        target = await anyio.to_thread.run_sync(controller_target, sagemaker, cluster)
    except (BotoCoreError, ClientError, ControllerNotFound) as error:
        return None, [issue_for("sagemaker:ListClusterNodes", error)]
    slurm, issues = await collect_slurm(runner, target, job_id=job_id)
    if slurm is not None:
        issues += await map_instance_ids(sagemaker, cluster, slurm)
    return slurm, issues
