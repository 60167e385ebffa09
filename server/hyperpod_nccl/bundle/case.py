"""CASE.md: the AWS Support case, in the order a support engineer reads it.

The problem and the questions first, then why it is Support's to answer, what the user must still
add (the same list the tool result returns as `missing`), and the facts: cluster, every instance
involved, versions, the window with its margin, the timeline, the root cause with what was ruled
out, and only the error strings Support can act on.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from hyperpod_nccl import __version__
from hyperpod_nccl.bundle.escalation import escalation_reasons
from hyperpod_nccl.bundle.facts import CaseFacts, ClusterIdentity
from hyperpod_nccl.bundle.inventory import InstanceFact
from hyperpod_nccl.compare import ReportComparison
from hyperpod_nccl.compare_cli import render_comparison
from hyperpod_nccl.guard.commands import command_text, joined, placeholder, value
from hyperpod_nccl.guard.validate import BundleFileName
from hyperpod_nccl.models import Report, finding_sort_key
from hyperpod_nccl.rankset import compress

UNKNOWN = "not known — add it before sending"
NOT_SEEN = "not in the inputs"
_MAX_ERROR_STRINGS = 40
_MAX_TIMELINE = 30
# AWS Support takes up to three attachments of up to 5 MB each on a case.
SUPPORT_ATTACHMENT_LIMIT = 5 * 1024 * 1024
_TRIED = "what was already tried (restarts, reboots, replacements, timeout or memlock changes)"
_S3_URI = "the S3 URI of this bundle, once uploaded (it is too large to attach)"


class UploadSuggestion(BaseModel):
    """Uploading the bundle is the user's action, never the product's."""

    command: str = Field(description="Suggested command (run this yourself).")
    why: str
    effect: str = "writes one object to your S3 bucket; changes nothing on the cluster"
    permission: str = "s3:PutObject"
    attachable: bool = Field(
        default=False, description="Small enough to attach to the support case directly (5 MB limit)."
    )


def upload_suggestion(bundle_name: str, attachable: bool = False) -> UploadSuggestion:
    name = value(BundleFileName, bundle_name)
    why = "Put the bundle where AWS Support can be given access, then paste its S3 URI into the case."
    if attachable:
        why = "Only if you prefer S3 to attaching it: the bundle is small enough to attach to the case."
    return UploadSuggestion(
        command=command_text(
            ["aws s3 cp", name, joined("s3://", placeholder("your-bucket"), "/hyperpod-nccl/", name)]
        ),
        why=why,
        attachable=attachable,
    )


def case_gaps(facts: CaseFacts, *, attachable: bool) -> list[str]:
    """What the case still lacks, in the words CASE.md uses: the tool result's `missing` and
    CASE.md's "Add before sending" are this one list."""
    affected = facts.affected
    instances = facts.instances
    checks = {
        "cluster name or ARN": facts.cluster.name or facts.cluster.arn,
        "AWS region": facts.cluster.region,
        "orchestrator": facts.cluster.orchestrator,
        "NodeRecovery setting of the cluster": facts.cluster.node_recovery,
        "failure window (UTC)": facts.window.start,
        "exact error strings": facts.error_strings,
        "affected instance ids / nodes / pods": affected.instance_ids or affected.nodes or affected.pods,
        "instance group and type of the affected instances": not instances
        or all(i.instance_group and i.instance_type for i in instances),
        "AMI / OS image, Kubernetes and NVIDIA driver versions": facts.versions.known,
        "NCCL / FI / TORCH environment of one pod": facts.environment.variables,
        _TRIED: False,
        _S3_URI: attachable,
    }
    return [item for item, known in checks.items() if not known]


def _value(value: object, gap: bool = True) -> str:
    """A fact in backticks; when absent, UNKNOWN if it is on the list to add, else NOT_SEEN."""
    if value not in (None, "", []):
        return f"`{value}`"
    return UNKNOWN if gap else NOT_SEEN


def _cluster_lines(cluster: ClusterIdentity) -> list[str]:
    unnamed = not (cluster.name or cluster.arn)
    lines = [
        f"- Cluster name: {_value(cluster.name, unnamed)}",
        f"- Cluster ARN: {_value(cluster.arn, unnamed)}",
        f"- Cluster id: {_value(cluster.cluster_id, gap=not cluster.arn)}",
        f"- Region: {_value(cluster.region)}",
        f"- Orchestrator: {_value(cluster.orchestrator)}",
    ]
    if cluster.orchestrator == "slurm":
        lines.append(f"- Slurm controller: {_value(cluster.slurm_controller, gap=False)}")
    elif cluster.orchestrator == "eks":
        arn = f" (`{cluster.eks_cluster_arn}`)" if cluster.eks_cluster_arn else ""
        lines.append(f"- EKS cluster: {_value(cluster.eks_cluster_name, gap=False)}{arn}")
    lines.append(f"- NodeRecovery: {_value(cluster.node_recovery)}")
    lines.append(f"- Instance groups: {_value(', '.join(cluster.instance_groups), gap=False)}")
    return lines


def _instance_line(fact: InstanceFact) -> str:
    cells = [
        f"`{fact.instance_id}`",
        f"`{fact.node}`" if fact.node else NOT_SEEN,
        fact.instance_group or NOT_SEEN,
        fact.instance_type or NOT_SEEN,
        fact.hyperpod_status or NOT_SEEN,
        fact.kubernetes_ready or NOT_SEEN,
        "; ".join(fact.roles),
    ]
    return "| " + " | ".join(cells) + " |"


def _instance_lines(facts: CaseFacts) -> list[str]:
    if not facts.instances:
        affected = facts.affected
        return [f"Instance ids: {_value(None, not (affected.nodes or affected.pods))}"]
    return [
        "| instance | node | group | type | HyperPod status | Kubernetes Ready | part in the failure |",
        "|---|---|---|---|---|---|---|",
        *(_instance_line(fact) for fact in facts.instances),
    ]


def _version_lines(facts: CaseFacts) -> list[str]:
    versions = facts.versions
    gap = not versions.known
    rows = [
        ("AMI", versions.ami, "HyperPod's default for the instance groups" if versions.os_image else None),
        ("OS image", versions.os_image, None),
        ("Kernel", versions.kernel, None),
        ("Kubernetes (kubelet)", versions.kubelet, None),
        ("Container runtime", versions.container_runtime, None),
        ("NVIDIA driver", versions.nvidia_driver, None),
        ("NCCL (from the logs)", versions.nccl, None),
        ("PyTorch (from the logs)", versions.torch, None),
    ]
    return [
        f"- {name}: " + (", ".join(f"`{v}`" for v in found) if found else (fallback or _value(None, gap)))
        for name, found, fallback in rows
    ]


def _affected_lines(facts: CaseFacts) -> list[str]:
    affected = facts.affected
    gap = not (affected.instance_ids or affected.nodes or affected.pods)
    return [
        f"- Instance ids: {_value(', '.join(affected.instance_ids), gap)}",
        f"- Nodes: {_value(', '.join(affected.nodes), gap)}",
        f"- Pods: {_value(', '.join(affected.pods), gap)}",
        f"- Namespace: {_value(affected.namespace, gap=False)}",
        f"- Job: {_value(affected.job, gap=False)}",
        f"- Ranks: {_value(compress(affected.ranks) if affected.ranks else '', gap=False)}",
    ]


def _window_lines(facts: CaseFacts) -> list[str]:
    window = facts.window
    if window.start is None:
        return [f"- Start / end (UTC): {UNKNOWN} (no timestamped event in the report or the snapshot)"]
    return [
        f"- Start (UTC): `{window.start}`",
        f"- End (UTC): `{window.end}`",
        f"- Spanning {window.events} timestamped events of {window.source}.",
        f"- Search with a margin: `{window.search_start}` to `{window.search_end}`.",
    ]


def _timeline_lines(reports: list[Report]) -> list[str]:
    entries = [entry for report in reports for entry in report.timeline][:_MAX_TIMELINE]
    if not entries:
        return ["The report carries no timeline."]
    lines = []
    for entry in entries:
        touches = ", ".join(x for x in (entry.node, entry.instance_id, entry.pod) if x)
        derived = " (derived)" if entry.derived else ""
        lines.append(f"- `{entry.time or '?'}`{derived} {entry.event}" + (f" — {touches}" if touches else ""))
    return lines


def _cause_lines(reports: list[Report]) -> list[str]:
    lines = []
    for cause in (report.root_cause for report in reports if report.root_cause):
        lines += [f"**{cause.category}** ({cause.confidence} confidence): {cause.summary}", ""]
        lines += [f"- {step}" for step in cause.chain]
        if cause.ruled_out:
            lines += ["", "Ruled out:", "", *(f"- {item}" for item in cause.ruled_out)]
    return lines or ["No root cause was established."]


def _error_lines(facts: CaseFacts) -> list[str]:
    if not facts.error_strings:
        return [f"{UNKNOWN}: copy the exact NCCL / libfabric error from the pod logs or journalctl."]
    lines = [
        "Verbatim, each kind once, from the blocking findings (configuration values and settings the "
        "user changes are left out; all of them: `error-strings.txt`):",
        "",
        "```",
    ]
    for item in facts.error_strings[:_MAX_ERROR_STRINGS]:
        where = f"{item.source}:{item.line}" if item.line else item.source
        lines.append(f"{where}: {item.text.strip()}")
    return [*lines, "```"]


def _environment_lines(facts: CaseFacts) -> list[str]:
    environment = facts.environment
    if not environment.variables:
        return [
            f"{UNKNOWN}: run `printenv | grep -E '^NCCL|^FI_|^TORCH_'` where one rank runs (a training "
            "pod, or the Slurm task's environment) and paste it."
        ]
    where = f"From pod `{environment.pod}`, container `{environment.container}` (`nccl-env.txt`):"
    variables = [f"{name}={value}" for name, value in environment.variables.items()]
    return [where, "", "```", *variables, "```"]


def _finding_lines(reports: list[Report]) -> list[str]:
    issues = sorted((f for r in reports for f in r.findings if f.is_issue), key=finding_sort_key)
    lines = [f"- [{f.status}] {f.priority} `{f.id}`: {f.title} → `references/{f.reference}`" for f in issues]
    return lines or ["- The diagnostic found no issue (Issues Found: 0) although training still fails."]


def _escalate_lines(reports: list[Report]) -> list[str]:
    lines = ["Ticked where a finding shows it; tick any other that applies:", ""]
    for criterion, ids in escalation_reasons(reports):
        shown = f" — shown by {', '.join(f'`{i}`' for i in ids)}" if ids else ""
        lines.append(f"- [{'x' if ids else ' '}] {criterion.text}{shown}")
    return lines


def _attachment_lines(members: list[str]) -> list[str]:
    described = {
        "report.txt": "the diagnostic report as printed (the case's `nccl-diag.txt`)",
        "report.json": "the same report as JSON",
        "triage-report.txt": "log triage of the attached log directory",
        "triage-report.json": "the same triage as JSON",
        "snapshot.json": "everything the cluster diagnostic read (redacted)",
        "error-strings.txt": "every error line Support can act on, verbatim",
        "nccl-env.txt": "NCCL_*, FI_*, TORCH_* of one training pod",
        "case.json": "the facts of this file as JSON",
        "comparison.txt": "what the last change fixed, left failing and newly broke",
        "comparison.json": "the same comparison as JSON",
    }
    return [f"- `{name}`: {described[name]}" for name in members if name in described]


def _tried_lines(comparison: ReportComparison | None) -> list[str]:
    lines = [f"- Restarts, reboots, replacements, timeout or memlock changes already tried: {UNKNOWN}"]
    if comparison is None:
        return [*lines, "- What changed after each: bundle with a previous report (`--previous`) to show it."]
    return [
        *lines,
        "",
        "What changed between the report before the last change and this one (`comparison.txt`):",
        "",
        "```",
        render_comparison(comparison).rstrip(),
        "```",
    ]


def _upload_lines(upload: UploadSuggestion, size_hint: str) -> list[str]:
    if upload.attachable:
        first = [
            f"This bundle is {size_hint}: small enough to **attach to the support case directly** (AWS "
            "Support takes attachments of up to 5 MB). To share it through S3 instead:",
        ]
        uri = []
    else:
        first = [
            f"This bundle is {size_hint}, over the 5 MB attachment limit: upload it and give Support the URI."
        ]
        uri = ["", f"- S3 URI of this bundle: {UNKNOWN}"]
    return [
        "## Attach or upload",
        "",
        *first,
        "",
        "Suggested command (run this yourself):",
        "",
        "```sh",
        upload.command,
        "```",
        "",
        f"{upload.why} Effect: it {upload.effect}. Needs `{upload.permission}`.",
        *uri,
        "- Per-node logs (collected with the HyperPod issue-report tooling): only if AWS Support asks.",
    ]


def _gap_lines(gaps: list[str]) -> list[str]:
    if not gaps:
        return ["Nothing: every item below is filled in."]
    return [f"- [ ] {gap}" for gap in gaps]


def render_case(
    facts: CaseFacts,
    reports: list[Report],
    members: list[str],
    upload: UploadSuggestion,
    size_hint: str,
    comparison: ReportComparison | None = None,
) -> str:
    name = facts.cluster.name or facts.cluster.arn or "the cluster"
    gaps = case_gaps(facts, attachable=upload.attachable)
    sections = [
        [f"# AWS Support case: distributed-training failure on {name}"],
        [
            f"Prepared by hyperpod-nccl {__version__}. Secrets (keys, tokens, passwords) were redacted "
            "before anything was written; read the bundle once more before you send it."
        ],
        ["## Problem", "", facts.problem or "Training fails; see the findings below."],
        ["## Questions for AWS Support", "", *(f"{n}. {q}" for n, q in enumerate(facts.questions, 1))],
        ["## Why escalate", "", *_escalate_lines(reports)],
        ["## Add before sending", "", *_gap_lines(gaps)],
        ["## Cluster", "", *_cluster_lines(facts.cluster)],
        ["## Instances involved", "", *_instance_lines(facts)],
        ["## Versions", "", *_version_lines(facts)],
        ["## Failure window", "", *_window_lines(facts)],
        ["## Timeline (UTC)", "", *_timeline_lines(reports)],
        ["## Root cause and what was ruled out", "", *_cause_lines(reports)],
        ["## Exact error strings", "", *_error_lines(facts)],
        ["## Affected resources", "", *_affected_lines(facts)],
        ["## Findings", "", *_finding_lines(reports)],
        ["## NCCL / FI / TORCH environment", "", *_environment_lines(facts)],
        ["## What was already tried", "", *_tried_lines(comparison)],
        ["## Attached in this bundle", "", *_attachment_lines(members)],
        _upload_lines(upload, size_hint),
    ]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
