"""The root cause of a cluster diagnostic.

First from the timeline (trigger.py): the earliest abnormal event that lines up with the moment
the job failed and touches the job. When nothing lines up, the pod-log triage's own verdict, and
failing that the most fundamental blocking finding: causes are ranked from the hardest evidence to
the softest; symptoms (watchdog timeouts, NCCL WARN lines) never become the cause, latent
configuration (latent.py) never does either, and neither does a finding the timeline placed
elsewhere or at another time. Every other candidate is named in `ruled_out` with its reason.
"""

from __future__ import annotations

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.pod_logs import JobLogs, log_source
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.diagnose.trigger import (
    Choice,
    chain_events,
    culprit_of,
    ruled_out_candidates,
    trigger_root_cause,
    unknown_root_cause,
)
from hyperpod_nccl.models import Category, Finding, Priority, RootCause, Status
from hyperpod_nccl.rankset import compress

_RULED_OUT_LIMIT = 14

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


def _places(finding: Finding) -> set[str]:
    return set(finding.nodes) | set(finding.instance_ids)


def _cause_node(cause: Finding, topology: Topology | None) -> tuple[list[str], list[str]]:
    """(nodes, instance ids) of a cause finding. A finding that names a node by its instance id
    (CloudWatch streams, HyperPod) gets the node's name when the cluster knows it."""
    instances = list(cause.instance_ids)
    named = topology.node_of_instance if topology else (lambda _: None)
    nodes = [named(name) or name for name in (cause.nodes or instances)]
    if topology is not None:
        instances += [i for node in nodes if (i := topology.instance_of(node))]
    return list(dict.fromkeys(nodes)), list(dict.fromkeys(instances))


def diagnose_root_cause(findings: list[Finding], topology: Topology | None = None) -> RootCause | None:
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
    nodes, instances = _cause_node(cause, topology)
    return RootCause(
        category=category,
        summary=f"{cause.title}.{also}",
        culprit_nodes=nodes,
        culprit_instance_ids=instances,
        chain=[f"trigger: {cause.title}", *(f"→ {title}" for title in symptoms)],
        confidence="low" if others else "medium",
    )


def is_cause_finding(finding: Finding) -> bool:
    return _rank(finding) is not None


def _findings_ruled_out(findings: list[Finding], cause: RootCause, explained: set[str]) -> list[str]:
    """Cause findings that are not about the culprit, and that no timeline entry already placed:
    latent configuration, and blockers nothing dates."""
    culprit = set(cause.culprit_nodes) | set(cause.culprit_instance_ids)
    reasons = []
    for finding in findings:
        latent = finding.title.startswith("Latent: ")
        blocking = finding.status == Status.FAIL and finding.priority in (Priority.P0, Priority.P1)
        if not is_cause_finding(finding) or not (latent or blocking):
            continue
        if latent:
            title = finding.title.removeprefix("Latent: ")
            reasons.append(f"{title}: latent. {finding.detail.split('. ')[0]}.")
            continue
        places = _places(finding)
        about_culprit = places & culprit or (finding.pods and set(finding.pods) <= set(cause.culprit_pods))
        if not about_culprit and not (places and places <= explained):
            reasons.append(f"{finding.title}: nothing dates it, so it cannot be placed at the failure")
    return reasons


def _triage_ruled_out(triaged: list[JobLogs], cause: RootCause) -> list[str]:
    reasons = []
    for job_logs in triaged:
        verdict = job_logs.report.root_cause
        if verdict is None or verdict.category in (cause.category, Category.UNKNOWN):
            continue
        ranks = set(verdict.culprit_ranks)
        said = f"pod-log triage of {job_logs.job}: {verdict.category}" + (
            f" of ranks {compress(ranks)}" if ranks else ""
        )
        if ranks and ranks <= set(cause.culprit_ranks):
            reasons.append(f"{said}: those are the culprit's ranks, explained by the trigger above")
        else:
            reasons.append(f"{said}: the cluster event above lines up with the failure first")
    return reasons


def _adopt_triage(triaged: list[JobLogs], topology: Topology, choice: Choice) -> RootCause | None:
    """The pod-log triage's verdict, placed on the cluster: its ranks' pods, nodes and instances."""
    for job_logs in triaged:
        verdict = job_logs.report.root_cause
        if verdict is None or verdict.category == Category.UNKNOWN:
            continue
        places = [place for rank in verdict.culprit_ranks if (place := topology.pod_of_rank(rank))]
        hosts = [topology.resolve_host(host) for host in verdict.culprit_nodes]
        nodes = [p.node for p in places if p.node] + [node for node, _ in hosts if node]
        pods = [p.pod for p in places] + [pod for _, pod in hosts if pod]
        chain = list(verdict.chain)
        for name, log in job_logs.by_file.items():
            chain = [step.replace(name, log_source(log)) for step in chain]
        nodes = list(dict.fromkeys(nodes))
        return verdict.model_copy(
            update={
                "summary": f"{verdict.summary} (pod-log triage of {job_logs.job}; nothing in the cluster "
                "lines up with the failure before it)",
                "culprit_nodes": nodes,
                "culprit_instance_ids": [i for n in nodes if (i := topology.instance_of(n))],
                "culprit_pods": list(dict.fromkeys(pods)),
                "chain": chain,
                "ruled_out": [*verdict.ruled_out, *(r for _, r in ruled_out_candidates(choice, []))],
            }
        )
    return None


def root_cause(
    findings: list[Finding],
    choice: Choice,
    timeline: list[TimedEvent],
    topology: Topology,
    triaged: list[JobLogs],
) -> tuple[RootCause | None, list[TimedEvent]]:
    """The root cause, and the timeline entries that make it (the trigger and its chain)."""
    if not any(f.status == Status.FAIL for f in findings) and choice.anchor is None:
        return None, []
    trigger = choice.trigger
    if trigger is not None:
        cause = trigger_root_cause(choice, topology, triaged, timeline)
        explained = {
            p for e, _ in ruled_out_candidates(choice, timeline) for p in (e.node, e.instance_id) if p
        }
        extra = _findings_ruled_out(findings, cause, explained) + _triage_ruled_out(triaged, cause)
        decisive = chain_events(trigger, choice.anchor, timeline, culprit_of(trigger, topology))
        return cause.model_copy(update={"ruled_out": [*cause.ruled_out, *extra][:_RULED_OUT_LIMIT]}), decisive
    adopted = _adopt_triage(triaged, topology, choice)
    if adopted is not None:
        return adopted, [choice.anchor] if choice.anchor else []
    # A finding about a place the timeline already ruled out (another job's node, another time)
    # cannot be the root cause either.
    placed = {p for e, _ in ruled_out_candidates(choice, timeline) for p in (e.node, e.instance_id) if p}
    remaining = [f for f in findings if not (is_cause_finding(f) and _places(f) and _places(f) <= placed)]
    fallback = diagnose_root_cause(remaining, topology)
    if fallback is None or fallback.category == Category.UNKNOWN:
        return unknown_root_cause(choice, timeline), []
    timeline_reasons = [reason for _, reason in ruled_out_candidates(choice, timeline)]
    return fallback.model_copy(update={"ruled_out": timeline_reasons[:_RULED_OUT_LIMIT]}), []
