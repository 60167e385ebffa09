"""The escalation bundle: a redacted Snapshot plus the report, and CASE.md for AWS Support.

`create_bundle` is the service the CLI (`hyperpod-nccl bundle`) and the MCP tool
(`create_escalation_bundle`) share. It reads local files and writes one local `.tar.gz`; it
changes nothing on any cluster and uploads nothing (the upload is a suggested command).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from hyperpod_nccl.bundle.archive import BUNDLE_FOLDER, BundleError, check_output_path, write_archive
from hyperpod_nccl.bundle.case import (
    SUPPORT_ATTACHMENT_LIMIT,
    UploadSuggestion,
    case_gaps,
    render_case,
    upload_suggestion,
)
from hyperpod_nccl.bundle.facts import CaseFacts, case_facts
from hyperpod_nccl.compare import (
    ReportComparison,
    UnusableReport,
    diff_reports,
    load_report,
    report_from_data,
)
from hyperpod_nccl.compare_cli import render_comparison
from hyperpod_nccl.guard.redact import redact_data, redact_model
from hyperpod_nccl.models import Report
from hyperpod_nccl.render import render_json, render_text
from hyperpod_nccl.snapshot import SNAPSHOT_FILE, Snapshot, UnusableSnapshot

_ERROR_STRINGS_SHOWN = 10
# Room left for CASE.md in the attachment limit, so a bundle said to be attachable always is.
_CASE_ALLOWANCE = 256 * 1024

__all__ = ["BundleError", "BundleRequest", "BundleResult", "create_bundle"]


class BundleRequest(BaseModel):
    output: Path
    report: Path | None = None
    report_data: dict[str, Any] | None = Field(default=None, description="A report given inline, as JSON.")
    previous: Path | None = Field(default=None, description="The report from before the last change.")
    previous_data: dict[str, Any] | None = None
    snapshot: Path | None = None
    logs: Path | None = None
    cluster: str | None = None
    region: str | None = None
    orchestrator: Literal["eks", "slurm"] | None = None
    namespace: str | None = None
    job: str | None = None
    created_at: datetime | None = Field(default=None, description="Fixes the members' time (tests).")
    # The MCP server's output folder (no link out of it is followed) and read roots (for logs).
    within: Path | None = None
    read_roots: list[Path] | None = None


class BundleResult(BaseModel):
    path: str = Field(description="The bundle written on the machine running hyperpod-nccl.")
    size_bytes: int
    sha256: str
    members: list[str] = Field(description="Member names inside the archive, sorted.")
    case: CaseFacts = Field(
        description="What CASE.md states: cluster, window, affected ids, errors (the first few), env."
    )
    error_strings_total: int = Field(description="How many error strings the bundle holds in all.")
    upload: UploadSuggestion
    missing: list[str] = Field(
        description="What the case still lacks (ask the user): the list CASE.md's 'Add before sending' holds."
    )


def _load_snapshot(path: Path) -> Snapshot:
    directory = path.parent if path.is_file() else path
    if not (directory / SNAPSHOT_FILE).is_file():
        raise BundleError(f"{path} holds no {SNAPSHOT_FILE}; pass a folder saved by `diagnose --save-bundle`")
    try:
        return Snapshot.load(directory)
    except UnusableSnapshot as error:
        raise BundleError(str(error)) from None


def _triage(logs: Path, roots: list[Path] | None) -> Report:
    try:
        from hyperpod_nccl.triage.engine import run_triage
    except ImportError:
        raise BundleError("log triage is not available in this installation; pass --report instead") from None
    if not logs.is_dir():
        raise BundleError(f"{logs} is not a folder of training logs")
    return run_triage([logs], [], boundaries=roots)


def _reports(request: BundleRequest) -> dict[str, Report]:
    if request.report is None and request.report_data is None and request.logs is None:
        raise BundleError("give a report saved with `triage --json` / `diagnose --json`, or a log folder")
    reports: dict[str, Report] = {}
    try:
        if request.report is not None:
            reports["report"] = load_report(request.report)
        elif request.report_data is not None:
            reports["report"] = report_from_data(request.report_data)
    except UnusableReport as error:
        raise BundleError(str(error)) from None
    if request.logs is not None:
        reports["triage-report"] = _triage(request.logs, request.read_roots)
    return reports


def _comparison(request: BundleRequest, reports: dict[str, Report]) -> ReportComparison | None:
    try:
        if request.previous is not None:
            previous = load_report(request.previous)
        elif request.previous_data is not None:
            previous = report_from_data(request.previous_data, "previous report")
        else:
            return None
        return diff_reports(previous, next(iter(reports.values())))
    except UnusableReport as error:
        raise BundleError(str(error)) from None


def _json(data: Any) -> str:
    return json.dumps(redact_data(data), indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def _members(reports: dict[str, Report], snapshot: Snapshot | None, facts: CaseFacts) -> dict[str, str]:
    members: dict[str, str] = {"case.json": _json(facts.model_dump(mode="json"))}
    for name, report in reports.items():
        members[f"{name}.json"] = render_json(report) + "\n"
        members[f"{name}.txt"] = render_text(report)
    if snapshot is not None:
        members["snapshot.json"] = _json(redact_model(snapshot).model_dump(mode="json"))
    if facts.error_strings:
        members["error-strings.txt"] = "".join(
            f"{item.source}:{item.line or ''}\t{item.finding}\t{item.text.rstrip()}\n"
            for item in facts.error_strings
        )
    if facts.environment.variables:
        members["nccl-env.txt"] = f"# {facts.environment.pod} ({facts.environment.container})\n" + "".join(
            f"{name}={value}\n" for name, value in facts.environment.variables.items()
        )
    return members


def _size_hint(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


def _estimated_size(members: dict[str, str]) -> int:
    """The archive's size without CASE.md, which is written last and adds a few KB: the tar.gz
    of the same text, plus a tar header per member."""
    text = "".join(members.values()).encode("utf-8")
    return len(gzip.compress(text, mtime=0)) + 512 * len(members)


def create_bundle(request: BundleRequest) -> BundleResult:
    """Write the escalation bundle and say what it holds and what the case still lacks."""
    output = check_output_path(request.output) if request.within is None else request.output
    reports = _reports(request)
    snapshot = _load_snapshot(request.snapshot) if request.snapshot is not None else None
    facts = redact_model(
        case_facts(
            list(reports.values()),
            snapshot,
            cluster=request.cluster,
            region=request.region,
            orchestrator=request.orchestrator,
            namespace=request.namespace,
            job=request.job,
        )
    )
    members = _members(reports, snapshot, facts)
    comparison = _comparison(request, reports)
    if comparison is not None:
        members["comparison.txt"] = render_comparison(comparison)
        members["comparison.json"] = _json(comparison.model_dump(mode="json"))
    listed = sorted([*members, "CASE.md"])
    estimate = _estimated_size(members)
    upload = upload_suggestion(output.name, attachable=estimate + _CASE_ALLOWANCE <= SUPPORT_ATTACHMENT_LIMIT)
    members["CASE.md"] = render_case(
        facts, list(reports.values()), listed, upload, _size_hint(estimate), comparison
    )
    created = request.created_at or datetime.now(UTC)
    data = write_archive(output, members, int(created.timestamp()), within=request.within)
    return BundleResult(
        path=str(output),
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        members=[f"{BUNDLE_FOLDER}/{name}" for name in listed],
        # The bundle holds every error string; the tool's answer stays small for an LLM's context.
        case=facts.model_copy(update={"error_strings": facts.error_strings[:_ERROR_STRINGS_SHOWN]}),
        error_strings_total=len(facts.error_strings),
        upload=upload,
        missing=case_gaps(facts, attachable=upload.attachable),
    )
