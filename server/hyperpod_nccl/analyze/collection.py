"""What the diagnostic could not see, as findings: a denied call names the IAM action or RBAC verb
to grant and what was skipped; a throttled or failed call says the data is partial. So "no data"
never reads as "healthy"."""

from __future__ import annotations

from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import EksClusterName, Region
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot

_IAM = "operations.md § 2"
# A missing log group is reported by the CloudWatch analyzer, with the section on enabling it;
# a Prometheus without DCGM series by the metrics coverage analyzer.
_REPORTED_ELSEWHERE = {("logs:DescribeLogGroups", "not_found"), ("prometheus:inventory", "not_found")}


def _slug(source: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in source.lower()).strip("_") or "unknown"


def _evidence(issue: CollectionIssue) -> list[Evidence]:
    return [Evidence(source=issue.source, text=f"{issue.kind}: {issue.message}")]


def _access_denied(issue: CollectionIssue) -> Finding:
    permission = issue.permission or issue.source
    return Finding(
        id=f"collection.access_denied.{_slug(issue.source)}",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"Missing permission {permission}: {issue.source} was skipped",
        reference=_IAM,
        detail="The checks that need this data did not run; grant the permission and rerun.",
        evidence=_evidence(issue),
    )


def _partial(issue: CollectionIssue) -> Finding:
    return Finding(
        id=f"collection.{issue.kind}.{_slug(issue.source)}",
        status=Status.WARN,
        priority=Priority.P2,
        title=f"{issue.source} {issue.kind}: continued with partial data",
        reference="operations.md § 9",
        detail="Rerun later: the diagnostic only reads, so rerunning is safe.",
        evidence=_evidence(issue),
    )


def _kubernetes_skipped(snapshot: Snapshot, issue: CollectionIssue) -> Finding:
    cluster = snapshot.aws.hyperpod if snapshot.aws else None
    eks = cluster.eks_cluster_arn.rsplit("/", 1)[-1] if cluster and cluster.eks_cluster_arn else None
    login = suggest(
        "aws eks update-kubeconfig --name",
        value(EksClusterName, eks),
        "--region",
        value(Region, snapshot.region),
        why="Writes a kubeconfig entry for the EKS cluster; rerun with --kubeconfig/--context if needed.",
        permission="eks:DescribeCluster",
    )
    return Finding(
        id="collection.kubernetes_skipped",
        status=Status.WARN,
        priority=Priority.P1,
        title="Kubernetes unreachable or unauthorised: the Kubernetes checks were skipped",
        reference=_IAM,
        detail="Pods, events, NetworkPolicies and pod logs were not read; CloudWatch was searched instead.",
        evidence=_evidence(issue),
        suggested_commands=[login],
    )


def _informational(issue: CollectionIssue) -> Finding:
    return Finding(
        id=f"collection.{issue.kind}.{_slug(issue.source)}",
        status=Status.INFO,
        title=f"{issue.source}: {issue.message}",
        evidence=_evidence(issue),
    )


def _finding(snapshot: Snapshot, issue: CollectionIssue) -> Finding:
    if issue.kind == "access_denied":
        return _access_denied(issue)
    if issue.kind in ("throttled", "timeout", "unreachable", "error"):
        return _partial(issue)
    if issue.source == "kubernetes" and issue.kind == "skipped":
        return _kubernetes_skipped(snapshot, issue)
    return _informational(issue)


def analyze_collection(snapshot: Snapshot) -> list[Finding]:
    findings: dict[str, Finding] = {}
    for issue in snapshot.collection_issues:
        if (issue.source, issue.kind) in _REPORTED_ELSEWHERE:
            continue
        finding = _finding(snapshot, issue)
        # Ids are stable per source and kind; a second issue of the same kind adds evidence.
        if finding.id in findings:
            findings[finding.id].evidence.extend(finding.evidence)
        else:
            findings[finding.id] = finding
    return list(findings.values())
