"""The facts an AWS Support case asks for, pulled from the reports and the Snapshot.

Pure functions: no I/O. Each fact is None or empty when the inputs do not carry it, so CASE.md
can say "not known" instead of inventing a value.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from hyperpod_nccl.models import Finding, Report, finding_sort_key
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import containers_of, env_of, pod_key

_ENV_OF_INTEREST = re.compile(r"^(NCCL|FI_|TORCH_)")
_ARN_REGION = re.compile(r"^arn:aws[a-z-]*:[a-z]+:([a-z0-9-]+):")


class ClusterIdentity(BaseModel):
    name: str | None = None
    arn: str | None = None
    region: str | None = None
    orchestrator: str | None = Field(default=None, description="eks or slurm.")
    eks_cluster_name: str | None = None
    eks_cluster_arn: str | None = None
    slurm_controller: str | None = Field(default=None, description="Controller node or instance group.")


class FailureWindow(BaseModel):
    start: str | None = Field(default=None, description="Earliest timestamped event, ISO 8601 UTC.")
    end: str | None = Field(default=None, description="Latest timestamped event, ISO 8601 UTC.")
    events: int = Field(default=0, description="How many timestamped events the window spans.")
    source: str | None = Field(default=None, description="Where the times came from.")


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
    cluster: ClusterIdentity
    window: FailureWindow
    affected: AffectedIds
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
        }
    raw = (aws.cluster if aws else None) or {}
    return {
        "name": raw.get("ClusterName"),
        "arn": raw.get("ClusterArn"),
        "eks_arn": ((raw.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn"),
        "groups": [group.get("InstanceGroupName", "") for group in raw.get("InstanceGroups") or []],
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
        region=(snapshot.region if snapshot else None) or region or (from_arn.group(1) if from_arn else None),
        orchestrator=orchestrator,
        eks_cluster_name=eks_arn.rsplit("/", 1)[-1] if eks_arn else None,
        eks_cluster_arn=eks_arn,
        slurm_controller=_slurm_controller(snapshot, described["groups"]) if orchestrator != "eks" else None,
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


def failure_window(reports: list[Report], snapshot: Snapshot | None = None) -> FailureWindow:
    """The report's timeline; failing that (a cluster diagnostic has none), the times of what
    the snapshot saw go wrong: Kubernetes warning events, then CloudWatch pattern hits."""
    candidates = [
        ("the report's timeline", [t for r in reports for e in r.timeline if (t := _utc(e.time))]),
        ("Kubernetes warning events", _warning_event_times(snapshot)),
        ("CloudWatch error-pattern hits", _cloudwatch_hit_times(snapshot)),
    ]
    source, times = next(((name, sorted(found)) for name, found in candidates if found), ("", []))
    if not times:
        return FailureWindow()
    start, end = (t.astimezone(UTC).isoformat().replace("+00:00", "Z") for t in (times[0], times[-1]))
    return FailureWindow(start=start, end=end, events=len(times), source=source)


def error_strings(reports: list[Report]) -> list[ErrorString]:
    seen: set[str] = set()
    found = []
    for finding in _issues(reports):
        for evidence in finding.evidence:
            if evidence.text.strip() and evidence.text not in seen:
                seen.add(evidence.text)
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
    return CaseFacts(
        cluster=cluster_identity(snapshot, cluster, region, orchestrator),
        window=failure_window(reports, snapshot),
        affected=affected_ids(reports, snapshot, namespace, job),
        error_strings=error_strings(reports),
        environment=pod_environment(snapshot),
    )
