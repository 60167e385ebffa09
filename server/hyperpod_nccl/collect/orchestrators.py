"""The orchestrator side of a live collection: Kubernetes for an EKS cluster, the Slurm controller
for a Slurm one, and the on-node probes on a sample of nodes. Each reuses the collector its owner
provides; this module only decides what to call with what, and records what could not run."""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.collect.eks_auth import KubernetesAccessError, kubernetes_client_for_eks_cluster
from hyperpod_nccl.collect.k8s import collect_kubernetes, kubernetes_client_from_kubeconfig
from hyperpod_nccl.collect.run import CollectionRun, skipped
from hyperpod_nccl.collect.slurm import collect_slurm_cluster
from hyperpod_nccl.guard.k8s import ReadOnlyApiClient
from hyperpod_nccl.probes.fanout import ProbeProgress, UnknownNode
from hyperpod_nccl.probes.runners.ssm import SsmRunner
from hyperpod_nccl.probes.service import probe_nodes_for_snapshot
from hyperpod_nccl.probes.targets import cluster_nodes_from_responses
from hyperpod_nccl.snapshot import CollectionIssue

K8S_SKIPPED = "no Kubernetes access: the Kubernetes checks were skipped; CloudWatch is used instead"
_STOPPING_KINDS = ("unreachable", "timeout", "access_denied")


def _kubernetes_client(run: CollectionRun) -> ReadOnlyApiClient:
    options, cluster = run.options, run.aws.hyperpod
    if run.kubernetes_client is not None:
        return run.kubernetes_client
    if options.kubeconfig or options.context:
        return kubernetes_client_from_kubeconfig(options.kubeconfig, options.context)
    if cluster is None or cluster.eks_cluster_arn is None:
        issue = CollectionIssue(
            source="eks:DescribeCluster",
            kind="skipped",
            message="the EKS cluster is unknown (DescribeCluster failed); pass --kubeconfig and --context",
        )
        raise KubernetesAccessError(issue)
    eks_name = cluster.eks_cluster_arn.rsplit("/", 1)[-1]
    return kubernetes_client_for_eks_cluster(eks_name, options.region, session=run.session)


async def collect_eks(run: CollectionRun) -> None:
    try:
        api_client = await run.call(_kubernetes_client, run)
    except KubernetesAccessError as error:
        run.record(error.issue, skipped("kubernetes", K8S_SKIPPED))
        return
    kubernetes, issues = await collect_kubernetes(
        api_client,
        namespace=run.options.namespace,
        job=run.options.job,
        progress=lambda message: run.progress(message, 0, None),
    )
    run.record(*issues)
    # An API server that never answered leaves empty lists: that is "not seen", not "no pods".
    if not (kubernetes.nodes or kubernetes.pods) and any(issue.kind in _STOPPING_KINDS for issue in issues):
        run.record(skipped("kubernetes", K8S_SKIPPED))
        return
    run.snapshot.kubernetes = kubernetes


async def collect_slurm(run: CollectionRun) -> None:
    runner = run.probe_runner or SsmRunner(run.options.region)
    slurm, issues = await collect_slurm_cluster(
        run.cluster_ref, run.options.region, runner, job_id=run.options.job, sagemaker=run.clients.sagemaker
    )
    run.snapshot.slurm = slurm
    run.record(*issues)


def _probe_progress(run: CollectionRun) -> Any:
    def report(update: ProbeProgress) -> None:
        run.progress(f"probe {update.node}: {update.status}", update.done, update.total)

    return report


async def probe_sample(run: CollectionRun, summaries: list[dict[str, Any]]) -> None:
    """node_health on `--node`, or on `--sample-nodes` nodes spread over the instance groups."""
    options = run.options
    if options.sample_nodes == 0 and options.node is None:
        run.record(skipped("ssm:StartSession", "on-node probes not requested (--sample-nodes 0)"))
        return
    if run.aws.cluster is None or not summaries:
        run.record(
            skipped("ssm:StartSession", "no node list to probe (DescribeCluster or ListClusterNodes failed)")
        )
        return
    try:
        run.snapshot.probes = await probe_nodes_for_snapshot(
            run.cluster_ref,
            options.region,
            node=options.node,
            sample_nodes=max(options.sample_nodes, 1),
            cluster_nodes=cluster_nodes_from_responses(run.aws.cluster, summaries),
            runner=run.probe_runner,
            progress=_probe_progress(run),
        )
    except UnknownNode as error:
        run.record(CollectionIssue(source="ssm:StartSession", kind="not_found", message=str(error)))
