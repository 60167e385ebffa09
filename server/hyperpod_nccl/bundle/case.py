"""CASE.md: the AWS Support case text, one heading per item a support engineer asks for."""

from __future__ import annotations

from pydantic import BaseModel, Field

from hyperpod_nccl import __version__
from hyperpod_nccl.bundle.facts import CaseFacts, ClusterIdentity
from hyperpod_nccl.compare import ReportComparison
from hyperpod_nccl.compare_cli import render_comparison
from hyperpod_nccl.guard.commands import command_text, joined, placeholder, value
from hyperpod_nccl.guard.validate import BundleFileName
from hyperpod_nccl.models import Report, finding_sort_key
from hyperpod_nccl.rankset import compress

UNKNOWN = "not known — add it before sending"
_MAX_ERROR_STRINGS = 40


class UploadSuggestion(BaseModel):
    """Uploading the bundle is the user's action, never the product's."""

    command: str = Field(description="Suggested command (run this yourself).")
    why: str
    effect: str = "writes one object to your S3 bucket; changes nothing on the cluster"
    permission: str = "s3:PutObject"


def upload_suggestion(bundle_name: str) -> UploadSuggestion:
    name = value(BundleFileName, bundle_name)
    return UploadSuggestion(
        command=command_text(
            ["aws s3 cp", name, joined("s3://", placeholder("your-bucket"), "/hyperpod-nccl/", name)]
        ),
        why="Put the bundle where AWS Support can be given access, then paste its S3 URI into the case.",
    )


def _value(value: object) -> str:
    return f"`{value}`" if value not in (None, "", []) else UNKNOWN


def _cluster_lines(cluster: ClusterIdentity) -> list[str]:
    lines = [
        f"- Cluster name: {_value(cluster.name)}",
        f"- Cluster ARN: {_value(cluster.arn)}",
        f"- Region: {_value(cluster.region)}",
        f"- Orchestrator: {_value(cluster.orchestrator)}",
    ]
    if cluster.orchestrator == "slurm":
        lines.append(f"- Slurm controller: {_value(cluster.slurm_controller)}")
    elif cluster.orchestrator == "eks":
        arn = f" (`{cluster.eks_cluster_arn}`)" if cluster.eks_cluster_arn else ""
        lines.append(f"- EKS cluster: {_value(cluster.eks_cluster_name)}{arn}")
    else:
        lines.append(f"- EKS cluster name or Slurm controller node: {UNKNOWN}")
    return lines


def _affected_lines(facts: CaseFacts) -> list[str]:
    affected = facts.affected
    return [
        f"- Instance ids: {_value(', '.join(affected.instance_ids))}",
        f"- Nodes: {_value(', '.join(affected.nodes))}",
        f"- Pods: {_value(', '.join(affected.pods))}",
        f"- Namespace: {_value(affected.namespace)}",
        f"- Job: {_value(affected.job)}",
        f"- Ranks: {_value(compress(affected.ranks) if affected.ranks else '')}",
    ]


def _window_lines(facts: CaseFacts) -> list[str]:
    window = facts.window
    if window.start is None:
        return [f"- Start / end (UTC): {UNKNOWN} (no timestamped event in the report or the snapshot)"]
    return [
        f"- Start (UTC): `{window.start}`",
        f"- End (UTC): `{window.end}`",
        f"- Spanning {window.events} timestamped events of {window.source}.",
    ]


def _error_lines(facts: CaseFacts) -> list[str]:
    if not facts.error_strings:
        return [f"{UNKNOWN}: copy the exact NCCL / libfabric error from the pod logs or journalctl."]
    lines = [
        "Verbatim, from the evidence of every FAIL and WARN (all of them: `error-strings.txt`):",
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
    for cause in (report.root_cause for report in reports if report.root_cause):
        lines.append(f"- Root cause ({cause.category}, confidence {cause.confidence}): {cause.summary}")
    return lines or ["- The diagnostic found no issue (Issues Found: 0) although training still fails."]


_ESCALATE_WHEN = [
    "security groups correct and EFA verified on-node, but NCCL still times out;",
    "hardware checks pass on every node, but the collective still hangs;",
    "the diagnostic reports Issues Found: 0, but training still fails;",
    "GPU Xid errors persist after the node was replaced;",
    "the collective timeout was raised and the memlock workaround applied, "
    "but large-cluster rendezvous still hangs.",
]


def _attachment_lines(members: list[str]) -> list[str]:
    described = {
        "report.txt": "the diagnostic report as printed (the case's `nccl-diag.txt`)",
        "report.json": "the same report as JSON",
        "triage-report.txt": "log triage of the attached log directory",
        "triage-report.json": "the same triage as JSON",
        "snapshot.json": "everything the cluster diagnostic read (redacted)",
        "error-strings.txt": "every verbatim error line behind a FAIL or WARN",
        "nccl-env.txt": "NCCL_*, FI_*, TORCH_* of one training pod",
        "case.json": "the facts of this file as JSON",
        "comparison.txt": "what the last change fixed, left failing and newly broke",
        "comparison.json": "the same comparison as JSON",
    }
    return [f"- `{name}`: {described[name]}" for name in members if name in described]


def _tried_lines(comparison: ReportComparison | None) -> list[str]:
    lines = [
        f"- Restarts, reboots, replacements, timeout or memlock changes already tried: {UNKNOWN}",
    ]
    if comparison is None:
        return [
            *lines,
            f"- What changed after each: {UNKNOWN} (bundle with a previous report to fill this in)",
        ]
    return [
        *lines,
        "",
        "What changed between the report before the last change and this one (`comparison.txt`):",
        "",
        "```",
        render_comparison(comparison).rstrip(),
        "```",
    ]


def _upload_lines(upload: UploadSuggestion) -> list[str]:
    return [
        "## Upload",
        "",
        "Suggested command (run this yourself):",
        "",
        "```sh",
        upload.command,
        "```",
        "",
        f"{upload.why} Effect: it {upload.effect}. Needs `{upload.permission}`.",
        "",
        "- S3 URI of this bundle: " + UNKNOWN,
        "- S3 URI of per-node logs, if AWS Support asks for them (collected with the HyperPod "
        "issue-report tooling): " + UNKNOWN,
    ]


def render_case(
    facts: CaseFacts,
    reports: list[Report],
    members: list[str],
    bundle_name: str,
    comparison: ReportComparison | None = None,
) -> str:
    name = facts.cluster.name or facts.cluster.arn or "the cluster"
    sections = [
        [f"# AWS Support case: NCCL / distributed-training failure on {name}"],
        [
            f"Prepared by hyperpod-nccl {__version__}. Secrets (keys, tokens, passwords) were redacted "
            "before anything was written; read the bundle once more before you send it."
        ],
        ["## Cluster", "", *_cluster_lines(facts.cluster)],
        ["## Failure window", "", *_window_lines(facts)],
        ["## Exact error strings", "", *_error_lines(facts)],
        ["## Affected resources", "", *_affected_lines(facts)],
        ["## Findings", "", *_finding_lines(reports)],
        ["## NCCL / FI / TORCH environment", "", *_environment_lines(facts)],
        ["## What was already tried", "", *_tried_lines(comparison)],
        ["## Attached in this bundle", "", *_attachment_lines(members)],
        ["## Why escalate", "", "Escalate when one of these holds (tick the one that applies):", ""]
        + [f"- [ ] {item}" for item in _ESCALATE_WHEN],
        _upload_lines(upload_suggestion(bundle_name)),
    ]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
