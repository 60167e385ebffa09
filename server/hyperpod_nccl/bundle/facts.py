"""The facts an AWS Support case asks for, pulled from the reports and the Snapshot.

Pure functions: no I/O. Each fact is None or empty when the inputs do not carry it, so CASE.md
can say "not known" instead of inventing a value.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from hyperpod_nccl.bundle.escalation import escalation_reasons, problem_statement, questions
from hyperpod_nccl.bundle.inventory import InstanceFact, Versions, instance_facts, instance_groups, versions
from hyperpod_nccl.models import Finding, Priority, Report, finding_sort_key
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import containers_of, env_of, pod_key

_ENV_OF_INTEREST = re.compile(r"^(NCCL|FI_|TORCH_)")
# Support searches its own logs around the failure: give them the window with room on both sides.
WINDOW_MARGIN = timedelta(minutes=15)
# Evidence that states configuration, not an error: Support would send it back to the user.
_CONFIGURATION_SOURCES = re.compile(
    r"\bspec\b|spec\.|ec2:DescribeSecurityGroups|^networkpolicy |^daemonset|sagemaker:DescribeCluster$|"
    r"^job .*\(pod statuses|^cluster timeline$|metadata\.creationTimestamp"
)
# Parts of a log line that differ between ranks of the same error: its time and its rank prefix.
_VARYING = re.compile(r"^\S*\d{4}-\d\d-\d\dT\S+Z |\[rank\d+\]:|\d+")
_ARN_REGION = re.compile(r"^arn:aws[a-z-]*:[a-z]+:([a-z0-9-]+):")


class ClusterIdentity(BaseModel):
    name: str | None = None
    arn: str | None = None
    cluster_id: str | None = Field(default=None, description="The last part of the ARN.")
    region: str | None = None
    orchestrator: str | None = Field(default=None, description="eks or slurm.")
    eks_cluster_name: str | None = None
    eks_cluster_arn: str | None = None
    slurm_controller: str | None = Field(default=None, description="Controller node or instance group.")
    node_recovery: str | None = Field(default=None, description="Automatic or None, from DescribeCluster.")
    instance_groups: list[str] = Field(default_factory=list, description="`group: type × count`.")


class FailureWindow(BaseModel):
    start: str | None = Field(default=None, description="Earliest timestamped event, ISO 8601 UTC.")
    end: str | None = Field(default=None, description="Latest timestamped event, ISO 8601 UTC.")
    events: int = Field(default=0, description="How many timestamped events the window spans.")
    source: str | None = Field(default=None, description="Where the times came from.")
    search_start: str | None = Field(
        default=None, description="`start` minus the margin: where to look from."
    )
    search_end: str | None = Field(default=None, description="`end` plus the margin.")


class AffectedIds(BaseModel):
    instance_ids: list[str] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)
    pods: list[str] = Field(default_factory=list)
    ranks: list[int] = Field(default_factory=list)
    namespace: str | None = None
    job: str | None = None


class ErrorString(BaseModel):
    finding: str
    source: str
    line: int | None = None
    text: str


class PodEnvironment(BaseModel):
    pod: str | None = Field(default=None, description="`namespace/pod` the variables were read from.")
    container: str | None = None
    variables: dict[str, str] = Field(default_factory=dict, description="NCCL_*, FI_* and TORCH_* only.")


class CaseFacts(BaseModel):
    problem: str = Field(default="", description="The problem statement CASE.md opens with.")
    questions: list[str] = Field(default_factory=list, description="What to ask AWS Support.")
    escalate_because: list[str] = Field(
        default_factory=list, description="The escalation criteria a finding shows, with the finding ids."
    )
    cluster: ClusterIdentity
    window: FailureWindow
    affected: AffectedIds
    instances: list[InstanceFact] = Field(default_factory=list, description="Every instance involved.")
    versions: Versions = Field(default_factory=Versions)
    error_strings: list[ErrorString]
    environment: PodEnvironment


def _issues(reports: list[Report]) -> list[Finding]:
    return sorted((f for report in reports for f in report.findings if f.is_issue), key=finding_sort_key)


def _described(snapshot: Snapshot | None) -> dict[str, Any]:
    """Name, ARN, orchestrator, EKS ARN and instance groups: typed when the collector parsed
    DescribeCluster, else read from the raw response."""
    aws = snapshot.aws if snapshot else None
    if aws and aws.hyperpod:
        cluster = aws.hyperpod
        groups = [group.name for group in cluster.instance_groups]
        return {
            "name": cluster.name,
            "arn": cluster.arn,
            "orchestrator": cluster.orchestrator,
            "eks_arn": cluster.eks_cluster_arn,
            "groups": groups,
            "node_recovery": cluster.node_recovery,
        }
    raw = (aws.cluster if aws else None) or {}
    return {
        "name": raw.get("ClusterName"),
        "arn": raw.get("ClusterArn"),
        "eks_arn": ((raw.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn"),
        "groups": [group.get("InstanceGroupName", "") for group in raw.get("InstanceGroups") or []],
        "node_recovery": raw.get("NodeRecovery"),
    }


def _slurm_controller(snapshot: Snapshot | None, groups: list[str]) -> str | None:
    slurm = snapshot.slurm if snapshot else None
    if slurm:
        primary = next((ping.host for ping in slurm.controller.pings if ping.role == "primary"), None)
        if primary or slurm.controller_node:
            return primary or slurm.controller_node
    # HyperPod names no controller in DescribeCluster; the convention is a group named so.
    group = next((g for g in groups if "controller" in g.lower() or "head" in g.lower()), None)
    return group and f"instance group {group}"


def cluster_identity(
    snapshot: Snapshot | None, cluster: str | None, region: str | None, orchestrator: str | None = None
) -> ClusterIdentity:
    described = _described(snapshot)
    given_arn = cluster if cluster and cluster.startswith("arn:") else None
    arn = described["arn"] or given_arn
    eks_arn = described["eks_arn"]
    orchestrator = (
        (snapshot.orchestrator if snapshot else None)
        or described.get("orchestrator")
        or orchestrator
        or ("eks" if eks_arn else None)
    )
    from_arn = _ARN_REGION.match(arn or "")
    return ClusterIdentity(
        name=described["name"] or (cluster if cluster and not given_arn else None),
        arn=arn,
        cluster_id=arn.rsplit("/", 1)[-1] if arn and "/" in arn else None,
        region=(snapshot.region if snapshot else None) or region or (from_arn.group(1) if from_arn else None),
        orchestrator=orchestrator,
        eks_cluster_name=eks_arn.rsplit("/", 1)[-1] if eks_arn else None,
        eks_cluster_arn=eks_arn,
        slurm_controller=_slurm_controller(snapshot, described["groups"]) if orchestrator != "eks" else None,
        node_recovery=described.get("node_recovery"),
        instance_groups=instance_groups(snapshot),
    )


def _utc(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None  # a time without a zone cannot be placed in UTC


def _warning_event_times(snapshot: Snapshot | None) -> list[datetime]:
    events = snapshot.kubernetes.events if snapshot and snapshot.kubernetes else []
    stamps = (e.get("lastTimestamp") or e.get("eventTime") for e in events if e.get("type") == "Warning")
    return [t for stamp in stamps if (t := _utc(stamp))]


def _cloudwatch_hit_times(snapshot: Snapshot | None) -> list[datetime]:
    scans = (snapshot.aws.cloudwatch if snapshot and snapshot.aws else None) or []
    stamps = (stamp for scan in scans for s in scan.streams for stamp in (s.first_seen, s.last_seen))
    return [t for stamp in stamps if (t := _utc(stamp))]


_CHAIN_TIME = re.compile(r"\b(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")


def _chain_times(reports: list[Report]) -> list[datetime]:
    """The times a root cause's chain names, from the trigger to the final crash: the failure
    itself, without the hours of context the timeline also holds."""
    stamps = (
        f"{found.group(1)}T{found.group(2)}+00:00"
        for report in reports
        if report.root_cause
        for step in report.root_cause.chain
        if (found := _CHAIN_TIME.search(step))  # a step's own time comes first; later ones are quoted
    )
    return [t for stamp in stamps if (t := _utc(stamp))]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def failure_window(reports: list[Report], snapshot: Snapshot | None = None) -> FailureWindow:
    """The times of the root cause's chain when there is one, else the report's whole timeline;
    failing that, the times of what the snapshot saw go wrong: Kubernetes warning events, then
    CloudWatch pattern hits. With a margin on both sides for searching."""
    candidates = [
        ("the root cause's chain", _chain_times(reports)),
        ("the report's timeline", [t for r in reports for e in r.timeline if (t := _utc(e.time))]),
        ("Kubernetes warning events", _warning_event_times(snapshot)),
        ("CloudWatch error-pattern hits", _cloudwatch_hit_times(snapshot)),
    ]
    source, times = next(((name, sorted(found)) for name, found in candidates if found), ("", []))
    if not times:
        return FailureWindow()
    return FailureWindow(
        start=_iso(times[0]),
        end=_iso(times[-1]),
        events=len(times),
        source=source,
        search_start=_iso(times[0] - WINDOW_MARGIN),
        search_end=_iso(times[-1] + WINDOW_MARGIN),
    )


def _actionable(finding: Finding) -> bool:
    """Findings whose evidence Support can act on: blocking ones, and the pod logs' (log lines are
    errors whatever the finding's priority); not latent configuration, not an earlier event the
    timeline set aside."""
    if finding.title.startswith(("Latent: ", "Earlier, not this failure: ")):
        return False
    return finding.priority in (Priority.P0, Priority.P1) or finding.id.startswith("pod_logs.")


def _same_error(text: str) -> str:
    return _VARYING.sub("#", text.strip())


def error_strings(reports: list[Report]) -> list[ErrorString]:
    """The error lines behind the blocking findings, verbatim, each kind once: a watchdog line
    printed by 24 ranks is one string. Configuration facts (env values, policy specs, security
    group rules) are left out: they are the user's to change, and Support would send them back."""
    seen: set[str] = set()
    found = []
    for finding in _issues(reports):
        if not _actionable(finding):
            continue
        for evidence in finding.evidence:
            key = _same_error(evidence.text)
            if not key or key in seen or _CONFIGURATION_SOURCES.search(evidence.source):
                continue
            seen.add(key)
            found.append(
                ErrorString(finding=finding.id, **evidence.model_dump(include={"source", "line", "text"}))
            )
    return found


def affected_ids(
    reports: list[Report], snapshot: Snapshot | None, namespace: str | None, job: str | None
) -> AffectedIds:
    issues = _issues(reports)
    causes = [report.root_cause for report in reports if report.root_cause]
    evidence = [item for finding in issues for item in finding.evidence]
    nodes = {n for f in issues for n in f.nodes} | {n for c in causes for n in c.culprit_nodes}
    return AffectedIds(
        instance_ids=sorted(
            {i for f in issues for i in f.instance_ids} | {e.instance_id for e in evidence if e.instance_id}
        ),
        nodes=sorted(nodes | {e.node for e in evidence if e.node}),
        pods=sorted({p for f in issues for p in f.pods}),
        ranks=sorted({r for f in issues for r in f.ranks} | {r for c in causes for r in c.culprit_ranks}),
        namespace=namespace or (snapshot.namespace if snapshot else None),
        job=job
        or (snapshot.job if snapshot else None)
        or (snapshot.slurm.job_id if snapshot and snapshot.slurm else None),
    )


def pod_environment(snapshot: Snapshot | None) -> PodEnvironment:
    """NCCL_*, FI_* and TORCH_* of one training pod, as `printenv | grep` would show them."""
    kubernetes = snapshot.kubernetes if snapshot else None
    if kubernetes is None:
        return PodEnvironment()
    for pod in kubernetes.job_pods() or kubernetes.pods:
        for container in containers_of(pod):
            env = {k: v for k, v in sorted(env_of(container).items()) if _ENV_OF_INTEREST.match(k)}
            if env:
                return PodEnvironment(pod=pod_key(pod), container=container.get("name"), variables=env)
    return PodEnvironment()


def case_facts(
    reports: list[Report],
    snapshot: Snapshot | None,
    *,
    cluster: str | None = None,
    region: str | None = None,
    orchestrator: str | None = None,
    namespace: str | None = None,
    job: str | None = None,
) -> CaseFacts:
    identity = cluster_identity(snapshot, cluster, region, orchestrator)
    affected = affected_ids(reports, snapshot, namespace, job)
    culprits = [i for r in reports if r.root_cause for i in r.root_cause.culprit_instance_ids]
    involved = list(dict.fromkeys([*culprits, *affected.instance_ids]))
    window = failure_window(reports, snapshot)
    return CaseFacts(
        problem=problem_statement(reports, identity.name or identity.arn or "the cluster", affected.job),
        questions=questions(reports, window.start),
        escalate_because=[
            f"{criterion.text.rstrip(';.')} ({', '.join(ids)})"
            for criterion, ids in escalation_reasons(reports)
            if ids
        ],
        cluster=identity,
        window=window,
        affected=affected,
        instances=instance_facts(reports, snapshot, involved),
        versions=versions(reports, snapshot, involved),
        error_strings=error_strings(reports),
        environment=pod_environment(snapshot),
    )
