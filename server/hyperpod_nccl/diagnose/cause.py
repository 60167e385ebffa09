"""The root cause of a cluster diagnostic: which blocking finding is the most fundamental.

A cluster report holds causes and symptoms side by side (a GPU that fell off the bus, and the
watchdog timeout it caused on every other rank). Causes are ranked from the hardest evidence to
the softest; symptoms (watchdog timeouts, NCCL WARN lines) never become the cause. With more
than one kind of cause among the blocking findings the confidence is low, and the report says
what else was seen. Pod-log triage names its own root cause in its findings.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, RootCause, Status

# (finding id prefix, category), most fundamental first.
_CAUSES: tuple[tuple[str, Category], ...] = (
    ("cloudwatch.xid", Category.GPU_HARDWARE),
    ("node.gpu.", Category.GPU_HARDWARE),
    ("metrics.gpu.", Category.GPU_HARDWARE),
    ("metrics.node.stopped_reporting", Category.INFRASTRUCTURE),
    ("hyperpod.cluster.status", Category.INFRASTRUCTURE),
    ("hyperpod.nodes.failed", Category.INFRASTRUCTURE),
    ("k8s.node.", Category.INFRASTRUCTURE),
    ("aws.security_group.self_reference_missing", Category.CONFIG),
    ("k8s.network_policy.blocks_job", Category.CONFIG),
    ("k8s.master_addr.", Category.CONFIG),
    ("k8s.shm.", Category.CONFIG),
    ("k8s.efa.", Category.CONFIG),
    ("nccl.env.", Category.CONFIG),
    ("cloudwatch.transport", Category.NETWORK),
    ("k8s.version.", Category.SOFTWARE),
)


def _rank(finding: Finding) -> tuple[int, Category] | None:
    for index, (prefix, category) in enumerate(_CAUSES):
        if finding.id.startswith(prefix):
            return index, category
    return None


def _blocking(findings: list[Finding]) -> list[Finding]:
    failed = [f for f in findings if f.status == Status.FAIL]
    p0 = [f for f in failed if f.priority == Priority.P0]
    return p0 or failed


def diagnose_root_cause(findings: list[Finding]) -> RootCause | None:
    """None when nothing failed; `unknown` when failures were seen but none names a cause."""
    blocking = _blocking(findings)
    if not blocking:
        return None
    ranked = sorted(
        ((rank, f) for f in blocking if (rank := _rank(f)) is not None), key=lambda pair: pair[0][0]
    )
    symptoms = [f.title for f in blocking if _rank(f) is None]
    if not ranked:
        summary = "Failures were seen but none of them names a cause; see the findings."
        return RootCause(category=Category.UNKNOWN, summary=summary, chain=symptoms, confidence="low")
    (_, category), cause = ranked[0]
    others = [f.title for rank, f in ranked[1:] if rank[1] != category]
    also = f" Other blocking causes, not excluded: {'; '.join(others)}." if others else ""
    return RootCause(
        category=category,
        summary=f"{cause.title}.{also}",
        culprit_nodes=cause.nodes or cause.instance_ids,
        chain=[f"trigger: {cause.title}", *(f"→ {title}" for title in symptoms)],
        confidence="low" if others else "medium",
    )
