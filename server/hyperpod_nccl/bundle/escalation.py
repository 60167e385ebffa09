"""When to escalate, what the problem is, and what to ask AWS Support.

The criteria are the field's (NCCL still failing once everything the user controls is right) plus
the control plane's: when HyperPod and Kubernetes disagree about a node, when automatic recovery
does not act, when an API answers reads with server errors, no change to the job fixes it and
only Support can say why. A criterion is ticked only when a finding shows it. The questions name
the instance, the node and the times, so Support starts where the diagnosis ended.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hyperpod_nccl.models import Category, Finding, Report, Status
from hyperpod_nccl.rankset import compress


@dataclass(frozen=True)
class Criterion:
    text: str
    shown_by: Callable[[list[Report]], list[str]]  # the finding ids that show it; none: not ticked


def _findings(reports: list[Report]) -> list[Finding]:
    return [finding for report in reports for finding in report.findings if finding.is_issue]


def _with_prefix(*prefixes: str) -> Callable[[list[Report]], list[str]]:
    def shown(reports: list[Report]) -> list[str]:
        return sorted({f.id for f in _findings(reports) if f.id.startswith(prefixes)})

    return shown


def _never(_: list[Report]) -> list[str]:
    return []


def _no_issue(reports: list[Report]) -> list[str]:
    return ["Issues Found: 0"] if reports and all(r.summary.issues_found == 0 for r in reports) else []


ESCALATE_WHEN = (
    Criterion(
        "HyperPod's view of a node disagrees with Kubernetes (its status, or a health label against a "
        "passed deep health check);",
        _with_prefix(
            "control_plane.node_status_disagrees",
            "control_plane.failed_node_ready",
            "control_plane.health_label_disagrees",
        ),
    ),
    Criterion(
        "NodeRecovery is Automatic but a node stayed NotReady with no reboot or replacement;",
        _with_prefix("control_plane.recovery_not_acting"),
    ),
    Criterion(
        "an AWS or Kubernetes API answered reads with server errors (5xx);",
        _with_prefix("control_plane.api_errors"),
    ),
    Criterion(
        "a node was lost or failed a hardware check while the job ran (instance or GPU fault);",
        _with_prefix("k8s.node.not_ready", "hyperpod.nodes.failed", "cloudwatch.xid", "node.gpu."),
    ),
    Criterion("security groups correct and EFA verified on-node, but NCCL still times out;", _never),
    Criterion("hardware checks pass on every node, but the collective still hangs;", _never),
    Criterion("the diagnostic reports Issues Found: 0, but training still fails;", _no_issue),
    Criterion("GPU Xid errors persist after the node was replaced;", _never),
    Criterion(
        "the collective timeout was raised and the memlock workaround applied, but large-cluster rendezvous "
        "still hangs.",
        _never,
    ),
)


def escalation_reasons(reports: list[Report]) -> list[tuple[Criterion, list[str]]]:
    """Every criterion with the findings that show it (empty when nothing does)."""
    return [(criterion, criterion.shown_by(reports)) for criterion in ESCALATE_WHEN]


def _first(reports: list[Report], prefix: str) -> Finding | None:
    return next((f for f in _findings(reports) if f.id.startswith(prefix)), None)


def _cause(reports: list[Report]) -> tuple[Report, Category] | None:
    for report in reports:
        if report.root_cause is not None:
            return report, report.root_cause.category
    return None


def problem_statement(reports: list[Report], cluster: str, job: str | None) -> str:
    who = f"Training job `{job}` on HyperPod cluster `{cluster}`" if job else f"A training job on `{cluster}`"
    found = _cause(reports)
    if found is None:
        issues = sum(r.summary.issues_found for r in reports)
        return f"{who} fails, and the diagnostic found no cause (Issues Found: {issues})."
    report, category = found
    cause = report.root_cause
    assert cause is not None
    sentence = f"{who} failed. Root cause ({category}, {cause.confidence} confidence): {cause.summary}"
    disagreements = [f.title for f in _findings(reports) if f.id.startswith("control_plane.")]
    if disagreements:
        sentence += " The control plane disagrees with the data plane: " + "; ".join(disagreements) + "."
    return sentence


def _instance(finding: Finding | None) -> str:
    return finding.instance_ids[0] if finding and finding.instance_ids else "<instance-id>"


def questions(reports: list[Report], since: str | None = None) -> list[str]:
    """What to ask, the most specific first: the culprit instance, then each disagreement.
    `since`: when the failure began (the window's start)."""
    asked = []
    found = _cause(reports)
    if found is not None:
        cause = found[0].root_cause
        assert cause is not None
        where = ", ".join(cause.culprit_instance_ids) or ", ".join(cause.culprit_nodes)
        ranks = f" (ranks {compress(cause.culprit_ranks)})" if cause.culprit_ranks else ""
        if found[1] == Category.INFRASTRUCTURE and where:
            at = f" at {since}" if since else ""
            asked.append(
                f"Why did instance {where}{ranks} stop responding{at}? Please check its hardware, hypervisor "
                "and network health at that time; the timeline below shows what the cluster saw."
            )
        elif found[1] == Category.GPU_HARDWARE and where:
            asked.append(f"Please confirm the GPU fault on instance {where}{ranks} and repair or replace it.")
        elif found[1] == Category.UNKNOWN:
            asked.append(
                "The diagnostic found no cause that lines up with the failure: what else can explain it?"
            )
    recovery = _first(reports, "control_plane.recovery_not_acting")
    if recovery is not None:
        asked.append(
            f"NodeRecovery is Automatic, yet {_instance(recovery)} has stayed NotReady and HyperPod has "
            "neither rebooted nor replaced it. Why is recovery not acting, and should we replace it "
            "ourselves (which destroys its volumes)?"
        )
    status = _first(reports, "control_plane.node_status_disagrees") or _first(
        reports, "control_plane.failed_node_ready"
    )
    if status is not None:
        asked.append(
            f"Why does HyperPod's ListClusterNodes disagree with Kubernetes about {_instance(status)}: "
            f"{status.title}?"
        )
    label = _first(reports, "control_plane.health_label_disagrees")
    if label is not None:
        asked.append(f"{label.title}: which check set the label, and does {_instance(label)} need replacing?")
    api = _first(reports, "control_plane.api_errors")
    if api is not None:
        asked.append(f"{api.title}: is there a service issue for this cluster or region?")
    if not asked:
        failing = [f.title for f in _findings(reports) if f.status == Status.FAIL][:3]
        if failing:
            asked.append(
                "What explains these failures, which the checks under our control do not: "
                + "; ".join(failing)
                + "?"
            )
        else:
            asked.append(
                "Training still fails although the diagnostic found no issue: what else should we check?"
            )
    return asked
