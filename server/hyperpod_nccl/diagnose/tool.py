"""MCP tools for the cluster diagnostic: describe_cluster, list_cluster_nodes, scan_cloudwatch and
run_diagnostic. Each validates its input, calls the same collectors and analyzers as the CLI, and
returns a summary sized for an LLM's context: counts and the decisive rows, never thousands."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AfterValidator, BaseModel, Field

from hyperpod_nccl.diagnose.k8s_tool import KubeContext
from hyperpod_nccl.guard.kubeconfig import KubeconfigRefused
from hyperpod_nccl.guard.prometheus import AmpWorkspaceId, PrometheusUrl
from hyperpod_nccl.guard.redact import redact_model
from hyperpod_nccl.guard.validate import ClusterName, InstanceId, JobName, Namespace, Region
from hyperpod_nccl.models import Finding, Report, RootCause, SkippedInput, Summary, TimelineEvent
from hyperpod_nccl.server_settings import OutputPath, ReadablePath, current
from hyperpod_nccl.snapshot import SNAPSHOT_FILE, CollectionIssue, Snapshot, UnusableSnapshot
from hyperpod_nccl.snapshot.aws import (
    AwsSnapshot,
    CloudWatchScan,
    ClusterNode,
    HyperPodCluster,
    StreamMatches,
)

# boto3, the Kubernetes client, the collectors and the analysers load when a tool is first called:
# the server answers its tool list without them.
if TYPE_CHECKING:
    from hyperpod_nccl.collect.aws import AwsClients
    from hyperpod_nccl.collect.run import DiagnoseOptions
    from hyperpod_nccl.guard.k8s import ReadOnlyApiClient


def _window(value: str) -> str:
    from hyperpod_nccl.collect.run import parse_window

    parse_window(value)
    return value


Window = Annotated[
    str,
    AfterValidator(_window),
    Field(description="How far back to look, e.g. 30m, 2h, 1d (default 2h, at most 366d)."),
]
_MAX_ROWS = 50
_EVIDENCE_PER_FINDING = 3
_HEALTHY = "Running"


def _compact(findings: list[Finding], *, keep_pass: bool = False) -> list[Finding]:
    return [
        f.model_copy(update={"evidence": f.evidence[:_EVIDENCE_PER_FINDING]})
        for f in findings
        if keep_pass or f.status != "PASS"
    ]


def _clients(region: str) -> AwsClients:
    from hyperpod_nccl.collect.aws import AwsClients

    return AwsClients.create(region)


def _describe(cluster: str, region: str) -> tuple[dict, HyperPodCluster]:
    from botocore.exceptions import BotoCoreError, ClientError

    from hyperpod_nccl.collect import hyperpod
    from hyperpod_nccl.collect.aws import AwsPrerequisiteError, issue_for

    try:
        described = hyperpod.describe_cluster(_clients(region).sagemaker, cluster, region)
    except AwsPrerequisiteError as error:
        raise ToolError(str(error)) from None
    except (ClientError, BotoCoreError) as error:
        raise ToolError(issue_for("sagemaker:DescribeCluster", error).message) from None
    return described, hyperpod.parse_cluster(described)


class ClusterDescription(BaseModel):
    cluster: HyperPodCluster
    findings: list[Finding] = Field(description="Cluster status and NodeRecovery checks.")


def describe_cluster(cluster: ClusterName, region: Region) -> ClusterDescription:
    """Describe a SageMaker HyperPod cluster (sagemaker:DescribeCluster).

    Use this first to learn the cluster's status, orchestrator (EKS cluster ARN or Slurm),
    NodeRecovery setting, instance groups with their counts, security groups and the cluster id
    (which names its CloudWatch log group and SSM targets). Returns the cluster and the status /
    NodeRecovery findings. A cluster that does not exist returns an error listing the region's
    clusters.
    """
    from hyperpod_nccl.analyze.cluster_status import analyze_cluster_status

    _, parsed = _describe(cluster, region)
    snapshot = Snapshot(collected_at=_now(), region=region, aws=AwsSnapshot(hyperpod=parsed))
    return ClusterDescription(
        cluster=parsed, findings=_compact(analyze_cluster_status(snapshot), keep_pass=True)
    )


class NodeList(BaseModel):
    cluster: str
    total: int = Field(description="Every node listed, all pages.")
    complete: bool = Field(description="False when the listing stopped early; see `problem`.")
    by_status: dict[str, int]
    by_instance_group: dict[str, dict[str, int]]
    unhealthy: list[ClusterNode] = Field(description=f"Nodes not Running, at most {_MAX_ROWS}.")
    unhealthy_total: int
    problem: str | None = None


def list_cluster_nodes(cluster: ClusterName, region: Region) -> NodeList:
    """List every node of a HyperPod cluster (all pages of sagemaker:ListClusterNodes), summarised.

    Use this to see how many nodes are Running, Pending, in Failure or in deep health checks,
    per instance group, and which instance ids are unhealthy. Returns counts and the unhealthy
    nodes (instance id, group, status, message), never the full list of thousands of nodes.
    """
    from hyperpod_nccl.collect import hyperpod

    nodes, listing = hyperpod.list_nodes(_clients(region).sagemaker, cluster)
    groups: dict[str, Counter[str]] = {}
    for node in nodes:
        groups.setdefault(node.instance_group, Counter())[node.status] += 1
    unhealthy = [node for node in nodes if node.status != _HEALTHY]
    return NodeList(
        cluster=cluster,
        total=len(nodes),
        complete=listing.complete,
        by_status=dict(Counter(node.status for node in nodes)),
        by_instance_group={group: dict(counts) for group, counts in groups.items()},
        unhealthy=unhealthy[:_MAX_ROWS],
        unhealthy_total=len(unhealthy),
        problem=listing.issue.message if listing.issue else None,
    )


class CloudWatchResult(BaseModel):
    log_group: str
    found: bool
    method: Literal["insights", "filter"] | None
    window_start: str
    window_end: str
    streams: list[StreamMatches] = Field(
        description=f"Node streams with hits, most hits first, at most {_MAX_ROWS}."
    )
    streams_total: int
    findings: list[Finding]
    problems: list[str] = Field(default_factory=list, description="Calls that failed or were skipped.")


def _scan(cluster: str, region: str, since: str) -> tuple[Snapshot, list[CollectionIssue]]:
    from hyperpod_nccl.collect import cloudwatch
    from hyperpod_nccl.collect.run import parse_window

    _, parsed = _describe(cluster, region)
    logs = _clients(region).logs
    end = datetime.now(UTC).replace(microsecond=0)
    start = end - parse_window(since)
    group = cloudwatch.log_group_name(parsed.name, parsed.cluster_id)
    found, issue = cloudwatch.find_log_group(logs, group)
    if found is None:
        window = {"window_start": _iso(start), "window_end": _iso(end)}
        scan = CloudWatchScan(log_group=group, found=False, complete=False, **window)
        issues = [issue] if issue else []
    else:
        scan, issues = cloudwatch.scan_log_group(logs, found, start, end)
    return Snapshot(collected_at=_iso(end), region=region, aws=AwsSnapshot(cloudwatch=[scan])), issues


def scan_cloudwatch(cluster: ClusterName, region: Region, since: Window = "2h") -> CloudWatchResult:
    """Search the HyperPod cluster's CloudWatch log group for NCCL, EFA, watchdog and Xid lines.

    Runs a Logs Insights query aggregated by log stream (one stream per node) over the window,
    falling back to FilterLogEvents. Use this when pods or nodes are gone, Kubernetes is not
    reachable, or to see which nodes logged Xids or transport errors. Returns per-node hit counts
    with the first matching line, and the findings; a missing log group is reported as such
    (CloudWatch not enabled), never as healthy.
    """
    from hyperpod_nccl.analyze.cloudwatch import analyze_cloudwatch

    snapshot, issues = _scan(cluster, region, since)
    [scan] = snapshot.aws.cloudwatch
    ranked = sorted(scan.streams, key=lambda stream: -sum(stream.counts.values()))
    return CloudWatchResult(
        log_group=scan.log_group,
        found=scan.found,
        method=scan.method,
        window_start=scan.window_start,
        window_end=scan.window_end,
        streams=ranked[:_MAX_ROWS],
        streams_total=len(scan.streams),
        findings=_compact(analyze_cloudwatch(snapshot)),
        problems=[f"{issue.source}: {issue.message}" for issue in issues],
    )


def _now() -> str:
    return _iso(datetime.now(UTC).replace(microsecond=0))


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


class DiagnosticResult(BaseModel):
    source: str = Field(description="`live` or the bundle directory replayed.")
    summary: Summary
    root_cause: RootCause | None = Field(
        default=None,
        description="The trigger: earliest abnormal event lining up with the failure, chain, ruled out.",
    )
    findings: list[Finding] = Field(description="FAIL, WARN and INFO findings; PASS omitted.")
    passed: list[str] = Field(description="Titles of the checks that passed.")
    skipped: list[SkippedInput] = Field(description="What could not be collected, and why.")
    timeline: list[TimelineEvent] = Field(
        default_factory=list,
        description="Every source's events in UTC order; `derived` marks computed times.",
    )
    omitted: list[str] = Field(default_factory=list, description="What the size budget cut.")
    saved_bundle: str | None = None


class _ProgressRelay:
    """Collectors report from worker threads; MCP progress is sent from the event loop, so the
    latest update is kept here and a pump forwards it."""

    def __init__(self) -> None:
        self.latest: tuple[str, int, int | None] | None = None
        self.updates = 0

    def __call__(self, message: str, done: int, total: int | None) -> None:
        self.latest, self.updates = (message, done, total), self.updates + 1

    async def pump(self, ctx: Context, stop: anyio.Event) -> None:
        sent = 0
        while sent < self.updates or not stop.is_set():
            if self.latest and sent < self.updates:
                sent = self.updates
                await ctx.report_progress(sent, None, self.latest[0])
            with anyio.move_on_after(0.5):
                await stop.wait()


def _server_kubernetes_client(context: str | None) -> ReadOnlyApiClient | None:
    """A context of the server's own kubeconfig, when one is named; else the EKS cluster's access."""
    if context is None:
        return None
    try:
        return current().kubeconfig.client(context)
    except KubeconfigRefused as error:
        raise ToolError(str(error)) from None


def _save(snapshot: Snapshot, directory: Path) -> None:
    try:
        snapshot.save(directory, within=current().files.output_dir)
    except FileExistsError:
        raise ToolError(f"{directory} already holds a {SNAPSHOT_FILE}; choose a new folder name") from None
    except OSError as error:
        raise ToolError(f"cannot write the snapshot to {directory}: {error.strerror or error}") from None


async def _collect_live(
    ctx: Context, options: DiagnoseOptions, kubernetes: ReadOnlyApiClient | None
) -> Snapshot:
    from hyperpod_nccl.collect.aws import AwsPrerequisiteError
    from hyperpod_nccl.diagnose.service import collect_snapshot_async

    relay, stop = _ProgressRelay(), anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(relay.pump, ctx, stop)
        try:
            return await collect_snapshot_async(options, progress=relay, kubernetes_client=kubernetes)
        except AwsPrerequisiteError as error:
            problem = str(error)
        finally:
            stop.set()
    # Raised after the task group, which would otherwise deliver it wrapped in an ExceptionGroup.
    raise ToolError(problem)


def _load_bundle(directory: str) -> Snapshot:
    try:
        return Snapshot.load(Path(directory))
    except UnusableSnapshot as error:
        raise ToolError(str(error)) from None


async def run_diagnostic(
    ctx: Context,
    cluster: ClusterName | None = None,
    region: Region | None = None,
    namespace: Namespace | None = None,
    job: JobName | None = None,
    orchestrator: Literal["eks", "slurm"] | None = None,
    node: InstanceId | None = None,
    sample_nodes: Annotated[int, Field(ge=0, le=50, description="Nodes to probe over SSM; 0 skips.")] = 3,
    since: Window = "2h",
    bundle: ReadablePath | None = None,
    save_bundle: Annotated[
        OutputPath | None,
        Field(description="A new folder in the server's output directory for the snapshot."),
    ] = None,
    context: KubeContext | None = None,
    prometheus: PrometheusUrl | None = None,
    amp_workspace: AmpWorkspaceId | None = None,
) -> DiagnosticResult:
    """Run the full read-only HyperPod cluster diagnostic, live or from a saved bundle.

    Use this first for an NCCL or distributed-training failure on HyperPod: it checks the
    cluster, every node, events, security groups, Kubernetes (pods, NetworkPolicies, NCCL env,
    pod logs) or Slurm, on-node probes and CloudWatch. Live: `cluster` and `region`
    (`namespace`, `job` narrow it; `context`: list_kube_contexts). Offline: `bundle`.
    With `prometheus` or `amp_workspace`, DCGM GPU metrics too. Returns the root cause (the
    trigger in time: node, instance id, ranks, chain, ruled out), one timeline, the
    FAIL/WARN/INFO findings with references and suggested commands (show them to the user, run
    none; `Latent:` did not cause this failure), passed checks and what was not collected.
    Large clusters take minutes.
    """
    from hyperpod_nccl.collect.run import DiagnoseOptions
    from hyperpod_nccl.diagnose.service import diagnose

    if bundle:
        snapshot = _load_bundle(bundle)
    else:
        if not (cluster and region):
            raise ToolError("give cluster and region for a live run, or bundle for a replay")
        options = DiagnoseOptions(
            cluster=cluster,
            region=region,
            namespace=namespace,
            job=job,
            orchestrator=orchestrator,
            node=node,
            sample_nodes=sample_nodes,
            since=since,
            prometheus=prometheus,
            amp_workspace=amp_workspace,
        )
        kubernetes = _server_kubernetes_client(context)
        snapshot = redact_model(await _collect_live(ctx, options, kubernetes))
        if save_bundle:
            _save(snapshot, Path(save_bundle))
    saved = save_bundle if save_bundle and not bundle else None
    return _result(diagnose(snapshot), bundle or "live", saved)


def _result(report: Report, source: str, saved: str | None) -> DiagnosticResult:
    return DiagnosticResult(
        source=source,
        summary=report.summary,
        root_cause=report.root_cause,
        findings=_compact(report.findings),
        passed=[f.title for f in report.findings if f.status == "PASS"],
        skipped=report.skipped,
        timeline=report.timeline,
        omitted=report.omitted,
        saved_bundle=saved,
    )
