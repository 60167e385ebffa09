"""MCP tools for the end of the workflow: compare a rerun with the previous report, and write the
escalation bundle. Both read local files only; the bundle writes one local file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AfterValidator, Field

from hyperpod_nccl.bundle import BundleError, BundleRequest, BundleResult, create_bundle
from hyperpod_nccl.bundle.archive import check_bundle_name
from hyperpod_nccl.compare import (
    ReportComparison,
    UnusableReport,
    diff_reports,
    load_report,
    report_from_data,
)
from hyperpod_nccl.guard.validate import ClusterName, JobName, Namespace, Region
from hyperpod_nccl.models import Report
from hyperpod_nccl.server_settings import OutputPath, ReadablePath, current

ReportInput = Annotated[
    ReadablePath | dict[str, Any],
    Field(
        description=(
            "A report: the path of a JSON file saved with `triage --json` / `diagnose --json`, or the "
            "object a triage_logs or run_diagnostic call returned, passed as is."
        )
    ),
]
BundlePath = Annotated[
    OutputPath,
    AfterValidator(lambda value: str(check_bundle_name(value))),
    Field(
        description="The bundle's file name (ending in .tar.gz), new, in the server's output directory "
        "(a name, or a path inside that directory)."
    ),
]


def _report(value: str | dict[str, Any], what: str) -> Report:
    try:
        return load_report(Path(value)) if isinstance(value, str) else report_from_data(value, what)
    except UnusableReport as error:
        raise ToolError(str(error)) from None


def compare_reports(previous: ReportInput, current: ReportInput) -> ReportComparison:
    """Compare a rerun's report with the report from before the user acted.

    Use this after the user ran a suggested fix and you reran the same diagnostic (two triage or
    two cluster reports; mixing them is refused). Issues are matched by finding id and by the
    ranks, nodes, instance ids and pods they concern. It also checks the runs: job ids, nodes,
    world size, dates and the kinds of input each report shows. Returns the verdict, its reasons,
    both runs' facts and the issues: fixed (the rerun could have seen them and did not),
    unconfirmed (not seen, but the rerun could not have seen them: never call these fixed), still
    failing (with priority and scope changes) and new. not_comparable and inconclusive are never
    "fixed": tell the user the reasons.
    """
    return diff_reports(_report(previous, "previous"), _report(current, "current"))


def create_escalation_bundle(
    output_path: BundlePath,
    report: ReportInput | None = None,
    previous_report: Annotated[
        ReadablePath | dict[str, Any] | None,
        Field(description="The report from before the last fix (path or object): CASE.md says what changed."),
    ] = None,
    snapshot_dir: Annotated[
        ReadablePath | None, Field(description="Folder saved by `diagnose --save-bundle`.")
    ] = None,
    log_dir: Annotated[
        ReadablePath | None, Field(description="Training logs to triage into the bundle.")
    ] = None,
    cluster: ClusterName | None = None,
    region: Region | None = None,
    orchestrator: Literal["eks", "slurm"] | None = None,
    namespace: Namespace | None = None,
    job: JobName | None = None,
) -> BundleResult:
    """Write a redacted escalation bundle (.tar.gz) for an AWS Support case.

    Use this when the escalation criteria are met (e.g. the diagnostic finds nothing but
    training still fails, or NCCL still times out after the network checks pass). Give the
    report (path or object) and/or a log folder, plus the saved snapshot folder when there is
    one. It writes one local file on the machine running hyperpod-nccl and changes nothing on
    the cluster; secrets are redacted in every member. Returns the path, sha256, the members
    (CASE.md, report text and JSON, snapshot, error strings, NCCL env), the case facts, what
    the case still lacks, and the S3 upload as a suggested command for the user to run. It is the
    one tool that writes: a new file in the server's output directory, never replacing one.
    """
    files = current().files
    request = BundleRequest(
        within=files.output_dir,
        read_roots=list(files.read_roots),
        output=Path(output_path),
        report=Path(report) if isinstance(report, str) else None,
        report_data=report if isinstance(report, dict) else None,
        previous=Path(previous_report) if isinstance(previous_report, str) else None,
        previous_data=previous_report if isinstance(previous_report, dict) else None,
        snapshot=Path(snapshot_dir) if snapshot_dir else None,
        logs=Path(log_dir) if log_dir else None,
        cluster=cluster,
        region=region,
        orchestrator=orchestrator,
        namespace=namespace,
        job=job,
    )
    try:
        return create_bundle(request)
    except BundleError as error:
        raise ToolError(str(error)) from None
