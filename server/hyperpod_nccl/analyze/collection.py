"""What the diagnostic could not see, as findings: a denied call names the IAM action or RBAC verb
to grant and what was skipped; a throttled or failed call says the data is partial. So "no data"
never reads as "healthy"."""

from __future__ import annotations

from hyperpod_nccl.analyze.log_coverage import lost_nodes
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import EksClusterName, Region
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.kubernetes import pod_key

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


def _log_on_lost_node(snapshot: Snapshot, issue: CollectionIssue) -> Finding | None:
    """A pod's log is read through its node's kubelet: on a lost node the read fails however often
    it is retried, so it is said as that, not as "rerun later"."""
    if "pods/log " not in issue.source or snapshot.kubernetes is None:
        return None
    pod = issue.source.split("pods/log ", 1)[1].split(" (", 1)[0]
    node = next(
        ((p.get("spec") or {}).get("nodeName") for p in snapshot.kubernetes.pods if pod_key(p) == pod), None
    )
    if node is None or node not in lost_nodes(snapshot):
        return None
    return Finding(
        id="collection.pod_log_on_lost_node",
        status=Status.INFO,
        title="Logs of pods on a lost node cannot be read",
        detail="The API server reads a pod's log through its node's kubelet, so rerunning does not help "
        "until the node is back. The log-coverage finding names the ranks this leaves without a log.",
        evidence=[Evidence(source=issue.source, text=f"node {node} is lost; {issue.kind}: {issue.message}")],
    )


def _finding(snapshot: Snapshot, issue: CollectionIssue) -> Finding:
    lost = _log_on_lost_node(snapshot, issue)
    if lost is not None:
        return lost
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
