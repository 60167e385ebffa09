"""The cluster diagnostic as a service the CLI and the MCP tools share.

`collect_snapshot` reads the live cluster (AWS, then Kubernetes or Slurm, on-node probes and
CloudWatch, independent calls concurrently with a bound) into one Snapshot; `diagnose` runs the
analyzers over a Snapshot, live or replayed from a bundle, into a Report. Only the prerequisites
(credentials, the cluster's existence) stop a run; every other failure becomes a CollectionIssue.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import boto3
from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_nccl.analyze import run_analyzers
from hyperpod_nccl.analyze.job_topology import Topology, build_topology
from hyperpod_nccl.analyze.pod_logs import pod_log_findings, triage_pod_logs
from hyperpod_nccl.collect import cloudwatch, hyperpod, orchestrators, security_groups
from hyperpod_nccl.collect.aws import (
    AwsClients,
    Listing,
    Progress,
    check_identity,
    default_session,
    issue_for,
    no_progress,
)
from hyperpod_nccl.collect.run import CollectionRun, DiagnoseOptions, parse_window, skipped
from hyperpod_nccl.diagnose.cause import diagnose_root_cause, root_cause
from hyperpod_nccl.diagnose.earlier import set_aside_earlier
from hyperpod_nccl.diagnose.latent import job_activity, mark_latent
from hyperpod_nccl.diagnose.timeline import build_timeline, for_report
from hyperpod_nccl.diagnose.trigger import choose
from hyperpod_nccl.models import Report, SkippedInput
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import AwsSnapshot, CloudWatchScan

T = TypeVar("T")

__all__ = ["DiagnoseOptions", "collect_snapshot", "collect_snapshot_async", "diagnose", "parse_window"]


def collect_snapshot(
    options: DiagnoseOptions,
    *,
    session: boto3.session.Session | None = None,
    progress: Progress = no_progress,
    probe_runner: Any | None = None,
) -> Snapshot:
    """Read the live cluster into a Snapshot (blocking). Raises AwsPrerequisiteError when it cannot start."""
    return anyio.run(
        lambda: collect_snapshot_async(options, session=session, progress=progress, probe_runner=probe_runner)
    )


async def collect_snapshot_async(
    options: DiagnoseOptions,
    *,
    session: boto3.session.Session | None = None,
    progress: Progress = no_progress,
    probe_runner: Any | None = None,
    kubernetes_client: Any | None = None,
) -> Snapshot:
    """`kubernetes_client`: the API client to read Kubernetes with (the MCP server's chosen
    context); without it, the kubeconfig in `options` or the EKS cluster's own access."""
    run = _start(options, session or default_session(), progress)
    run.probe_runner, run.kubernetes_client = probe_runner, kubernetes_client
    identity = await run.call(check_identity, run.clients.sts)
    run.aws.account, run.aws.caller_arn = identity.account, identity.arn
    await _describe(run)
    run.snapshot.orchestrator = options.orchestrator or (
        run.aws.hyperpod.orchestrator if run.aws.hyperpod else None
    )
    async with anyio.create_task_group() as group:
        for step in (
            _nodes_and_probes,
            _events,
            _security_groups,
            _cloudwatch,
            _orchestrator_side,
            _gpu_metrics,
        ):
            group.start_soon(step, run)
    # Steps finish in any order; sorted, the same cluster state always saves the same bundle.
    run.snapshot.collection_issues.sort(key=lambda issue: (issue.source, issue.kind, issue.message))
    progress("collection complete", 1, 1)
    return run.snapshot


def _start(options: DiagnoseOptions, session: boto3.session.Session, progress: Progress) -> CollectionRun:
    end = datetime.now(UTC).replace(microsecond=0)
    aws = AwsSnapshot()
    snapshot = Snapshot(
        collected_at=end.isoformat().replace("+00:00", "Z"),
        region=options.region,
        namespace=options.namespace,
        job=options.job,
        aws=aws,
    )
    return CollectionRun(
        options=options,
        clients=AwsClients.create(options.region, session),
        session=session,
        snapshot=snapshot,
        aws=aws,
        limiter=anyio.CapacityLimiter(options.concurrency),
        progress=progress,
        start=end - parse_window(options.since),
        end=end,
    )


async def _describe(run: CollectionRun) -> None:
    """DescribeCluster; a missing cluster raises (prerequisite), a denied one is recorded."""
    try:
        described = await run.call(
            hyperpod.describe_cluster, run.clients.sagemaker, run.options.cluster, run.options.region
        )
    except (ClientError, BotoCoreError) as error:
        run.record(issue_for("sagemaker:DescribeCluster", error))
        return
    run.aws.cluster = described
    run.aws.hyperpod = hyperpod.parse_cluster(described)
    run.progress(f"cluster {run.aws.hyperpod.name}: {run.aws.hyperpod.status}", 0, None)


def _listed(items: list[Any], listing: Listing) -> list[Any] | None:
    """None when the very first page failed: nothing was seen, which is not "zero items"."""
    return None if listing.issue and not listing.items else items


async def _nodes_and_probes(run: CollectionRun) -> None:
    nodes, listing = await run.call(
        hyperpod.list_nodes, run.clients.sagemaker, run.cluster_ref, progress=run.progress
    )
    run.aws.nodes, run.aws.nodes_complete = _listed(nodes, listing), listing.complete
    run.record(listing.issue)
    run.progress(f"sagemaker:ListClusterNodes: {len(nodes)} nodes", len(nodes), len(nodes))
    await orchestrators.probe_sample(run, listing.items)


async def _events(run: CollectionRun) -> None:
    events, listing = await run.call(hyperpod.list_events, run.clients.sagemaker, run.cluster_ref, run.start)
    run.aws.events, run.aws.events_complete = _listed(events, listing), listing.complete
    run.record(listing.issue)


async def _security_groups(run: CollectionRun) -> None:
    if run.aws.hyperpod is None:
        run.record(
            skipped(
                "ec2:DescribeSecurityGroups", "the cluster's VpcConfig is unknown (DescribeCluster failed)"
            )
        )
        return
    groups, listing = await run.call(
        security_groups.describe_security_groups, run.clients.ec2, run.aws.hyperpod
    )
    run.aws.security_groups = groups if listing.complete else None
    run.record(listing.issue)


def _log_groups(run: CollectionRun) -> list[tuple[str, bool]]:
    """(name or prefix, required): the cluster's node logs, then EKS container logs when present."""
    cluster = run.aws.hyperpod
    if cluster is None:
        # Without DescribeCluster the cluster id is unknown, but a name still narrows the prefix.
        arn = run.options.cluster.startswith("arn:")
        return [] if arn else [(f"/aws/sagemaker/Clusters/{run.options.cluster}/", True)]
    groups = [(cloudwatch.log_group_name(cluster.name, cluster.cluster_id), True)]
    if cluster.eks_cluster_arn:
        eks = cluster.eks_cluster_arn.rsplit("/", 1)[-1]
        groups.append((f"/aws/containerinsights/{eks}/application", False))
    return groups


async def _scan(run: CollectionRun, prefix: str, required: bool) -> CloudWatchScan | None:
    group, issue = await run.call(cloudwatch.find_log_group, run.clients.logs, prefix)
    if group is None:
        absent = issue is not None and issue.kind == "not_found"
        if required or not absent:
            run.record(issue)
        if not (required and absent):  # denied or failed: unknown, which is not "no log group"
            return None
        window = {"window_start": _iso(run.start), "window_end": _iso(run.end)}
        return CloudWatchScan(log_group=prefix.rstrip("/"), found=False, complete=False, **window)
    run.progress(f"CloudWatch: querying {group}", 0, None)
    scan, issues = await run.call(cloudwatch.scan_log_group, run.clients.logs, group, run.start, run.end)
    run.record(*issues)
    return scan


async def _cloudwatch(run: CollectionRun) -> None:
    groups = _log_groups(run)
    if not groups:
        run.record(skipped("logs:StartQuery", "the cluster id is unknown (DescribeCluster failed)"))
        return
    scans = [await _scan(run, prefix, required) for prefix, required in groups]
    run.aws.cloudwatch = [scan for scan in scans if scan]


async def _orchestrator_side(run: CollectionRun) -> None:
    if run.snapshot.orchestrator == "eks":
        await orchestrators.collect_eks(run)
    elif run.snapshot.orchestrator == "slurm":
        await orchestrators.collect_slurm(run)


async def _gpu_metrics(run: CollectionRun) -> None:
    """DCGM history over the same window as events and CloudWatch, when a source was given."""
    from pydantic import ValidationError

    from hyperpod_nccl.metrics.service import MetricsOptions, MetricsSource, collect_metrics
    from hyperpod_nccl.metrics.window import Window

    options = run.options
    if not (options.prometheus or options.amp_workspace):
        return
    try:
        source = MetricsSource(
            prometheus=options.prometheus,
            amp_workspace=options.amp_workspace,
            region=options.region if options.amp_workspace else None,
        )
    except ValidationError as error:
        run.record(skipped("prometheus", error.errors()[0]["msg"].removeprefix("Value error, ")))
        return
    window = Window(int(run.start.timestamp()), int(run.end.timestamp()), f"the last {options.since}")
    run.progress(f"GPU metrics: querying {source.label}", 0, None)
    metrics, issues = await run.call(
        lambda: collect_metrics(MetricsOptions(source=source), window, session=run.session)
    )
    run.snapshot.metrics = metrics
    run.record(*issues)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def diagnose(snapshot: Snapshot) -> Report:
    """Every analyzer over the snapshot, the pod logs triaged once, the cluster timeline built from
    every source, latent configuration told from active, and the trigger chosen from the timeline.
    The same snapshot always gives the same report: times are measured from `collected_at`."""
    skipped_inputs = [
        SkippedInput(source=issue.source, reason=f"{issue.kind}: {issue.message}")
        for issue in snapshot.collection_issues
    ]
    findings, unreadable = run_analyzers(snapshot)
    topology = _guarded("job topology", unreadable, lambda: build_topology(snapshot), Topology())
    triaged = _guarded("pod-log triage", unreadable, lambda: triage_pod_logs(snapshot, topology), [])
    findings += _guarded("pod-log findings", unreadable, lambda: pod_log_findings(triaged, topology), [])
    findings, _ = _guarded(
        "latent configuration",
        unreadable,
        lambda: mark_latent(findings, snapshot, job_activity(snapshot, triaged)),
        (findings, []),
    )
    timeline = _guarded(
        "cluster timeline", unreadable, lambda: build_timeline(snapshot, topology, triaged), []
    )
    choice = choose(timeline, topology)
    findings = _guarded(
        "earlier events set aside",
        unreadable,
        lambda: set_aside_earlier(findings, choice, timeline),
        findings,
    )
    cause, decisive = _guarded(
        "root cause from the timeline",
        unreadable,
        lambda: root_cause(findings, choice, timeline, topology, triaged),
        (diagnose_root_cause(findings, topology), []),
    )
    shown, left_out = for_report(timeline, decisive, topology)
    return Report.build(
        "diagnose",
        findings,
        root_cause=cause,
        timeline=shown,
        skipped=skipped_inputs + unreadable,
        omitted=[f"timeline: +{left_out} more"] if left_out else [],
    )


def _guarded(what: str, skipped: list[SkippedInput], step: Callable[[], T], fallback: T) -> T:
    """One derived step that cannot read the snapshot (a bundle edited by hand) is skipped with
    the reason, like an analyzer; the rest of the report still comes out."""
    try:
        return step()
    except Exception as error:  # one blind spot must not sink the whole report
        reason = str(error).splitlines()[0][:200] if str(error) else ""
        skipped.append(SkippedInput(source=what, reason=f"skipped ({type(error).__name__}: {reason})"))
        return fallback
