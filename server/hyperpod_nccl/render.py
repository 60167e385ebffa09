"""Presenters: the text report operators know from the HyperPod diagnostic script, and JSON.

Renderers only format. Both redact first, so nothing leaves the process unredacted; the text
report also escapes control characters, so nothing from input can drive the terminal.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, TextIO

from pydantic import BaseModel

from hyperpod_nccl.guard.redact import redact_model
from hyperpod_nccl.guard.text import printable_model
from hyperpod_nccl.models import (
    PRIORITY_MEANING,
    Finding,
    JobSummary,
    Priority,
    RankActivity,
    RankStateGroup,
    Report,
    Status,
    TimelineEvent,
)
from hyperpod_nccl.rankset import compress

_COLORS = {
    Status.FAIL: "\033[31m",
    Status.WARN: "\033[33m",
    Status.PASS: "\033[32m",
    Status.INFO: "\033[36m",
}
_RESET = "\033[0m"
_MAX_EVIDENCE_PER_FINDING = 3
_MAX_LISTED = 12
_EVIDENCE_CHARS = 300
_INLINE_WIDTH = 100
# Where a text may be cut: before a space, or after punctuation that does not sit inside a number
# (`1.5`, `10:30:27`) or a path, so no number or word is ever cut in two. A list of numbers
# (`12,31,290-291`) may be cut after a comma; the text then says how many items it left out.
_CUT_POINT = re.compile(r"\s|[;:)\]](?!\d)|,(?!\d)")
_LIST_COMMA = re.compile(r"(?<=\d),(?=\d)")
_LIST_ITEM = re.compile(r"\d+(?:-\d+)?")
_LIST_RUN = re.compile(r"[\d,-]*")


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, ending in `…`, cut where no word or number is split;
    a list of numbers cut short says how many items it left out (`12,31 (+44 more)…`)."""
    if len(text) <= limit:
        return text
    endings = []
    for found in _CUT_POINT.finditer(text, 0, limit):
        endings.append((found.start() if found.group().isspace() else found.end(), "…"))
    for found in _LIST_COMMA.finditer(text, 0, limit):
        rest = _LIST_RUN.match(text, found.end()).group()  # type: ignore[union-attr]
        endings.append((found.start(), f" (+{len(_LIST_ITEM.findall(rest))} more)…"))
    fitting = [
        (cut, ending)
        for cut, ending in endings
        if cut > 0 and len(text[:cut].rstrip()) + len(ending) <= limit
    ]
    # A single word longer than the limit (a hash, a path) is the only thing ever cut in two.
    cut, ending = max(fitting, key=lambda pair: (pair[0], pair[1] != "…")) if fitting else (limit - 1, "…")
    return text[:cut].rstrip(" ,;") + ending


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never with NO_COLOR or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def json_text(data: Any) -> str:
    """JSON as every front end prints it (CLI `--json`, MCP tool results, bundles): indented, with
    numbers and short lists of scalars on one line, so a list of ranks costs one line, not one each."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    return _json(data, 0)


def _json(value: Any, indent: int) -> str:
    if isinstance(value, dict) and value:
        inner = " " * (indent + 2)
        items = [
            f"{inner}{json.dumps(key, ensure_ascii=False)}: {_json(item, indent + 2)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and value:
        flat = json.dumps(value, ensure_ascii=False)
        scalars = not any(isinstance(item, dict | list) for item in value)
        numbers = all(isinstance(item, int | float) for item in value)
        if scalars and (numbers or len(flat) <= _INLINE_WIDTH):
            return flat
        inner = " " * (indent + 2)
        return (
            "[\n" + ",\n".join(inner + _json(item, indent + 2) for item in value) + "\n" + " " * indent + "]"
        )
    return json.dumps(value, ensure_ascii=False)


def render_json(report: Report) -> str:
    return json_text(redact_model(report))


def _listing(values: list[str]) -> str:
    shown = ", ".join(values[:_MAX_LISTED])
    return shown + (f" (+{len(values) - _MAX_LISTED} more)" if len(values) > _MAX_LISTED else "")


def _finding_lines(finding: Finding, color: bool) -> list[str]:
    tag = f"[{finding.status}]"
    if color:
        tag = f"{_COLORS[finding.status]}{tag}{_RESET}"
    priority = f" {finding.priority}" if finding.priority else ""
    lines = [f"{tag}{priority} {finding.title}"]
    indent = " " * 7
    if finding.detail:
        lines.append(f"{indent}{finding.detail}")
    scope = []
    if finding.ranks:
        scope.append(f"ranks: {compress(finding.ranks)}")
    if finding.nodes:
        scope.append(f"nodes: {_listing(finding.nodes)}")
    if finding.instance_ids:
        scope.append(f"instances: {_listing(finding.instance_ids)}")
    if finding.pods:
        scope.append(f"pods: {_listing(finding.pods)}")
    if scope:
        lines.append(indent + "   ".join(scope))
    for evidence in finding.evidence[:_MAX_EVIDENCE_PER_FINDING]:
        where = f"{evidence.source}:{evidence.line}" if evidence.line else evidence.source
        if evidence.record_id is not None:  # a Flight Recorder dump: records, not lines
            where = f"{evidence.source} record {evidence.record_id}"
        lines.append(f"{indent}evidence {where}: {shorten(evidence.text.strip(), _EVIDENCE_CHARS)}")
    if len(finding.evidence) > _MAX_EVIDENCE_PER_FINDING:
        lines.append(f"{indent}(+{len(finding.evidence) - _MAX_EVIDENCE_PER_FINDING} more evidence lines)")
    if finding.reference and finding.is_issue:
        lines.append(f"{indent}→ references/{finding.reference}")
    if finding.suggested_commands:
        lines.append(f"{indent}Suggested command (run this yourself):")
        for suggestion in finding.suggested_commands:
            lines.append(f"{indent}  $ {suggestion.command}")
            needs = f"; needs {suggestion.permission}" if suggestion.permission else ""
            lines.append(f"{indent}    {suggestion.why} [{suggestion.blast_radius}{needs}]")
    elif finding.no_command_reason and finding.is_issue:
        lines.append(f"{indent}No command fits: {finding.no_command_reason}")
    return lines


def _job_lines(job: JobSummary) -> list[str]:
    shape = [
        f"framework {job.framework or 'unknown'}",
        (
            f"world size at least {job.world_size} (the highest rank seen, no line states it)"
            if job.world_size_stated is False
            else f"world size {job.world_size if job.world_size is not None else '?'}"
        ),
        f"{job.nodes} nodes",
    ]
    if job.ranks_per_node:
        shape.append(f"{job.ranks_per_node} ranks per node")
    if job.resumed_from_checkpoint is not None:
        shape.append("resumed from a checkpoint" if job.resumed_from_checkpoint else "not resumed")
    lines = ["Job: " + ", ".join(shape)]
    for group in job.versions:
        versions = ", ".join(
            f"{name} {value}"
            for name, value in (
                ("torch", group.torch),
                ("NCCL", group.nccl),
                ("aws-ofi-nccl", group.aws_ofi_nccl),
            )
            if value
        )
        where = _listing(group.nodes) if group.nodes else f"{group.node_count} nodes"
        lines.append(f"  versions on {where}: {versions or 'not printed'}")
    for transport in job.transports:
        where = _listing(transport.nodes) if transport.nodes else f"{transport.node_count} nodes"
        nics = (
            f", {transport.nics} NIC{'s' if transport.nics != 1 else ''}"
            if transport.nics is not None
            else ""
        )
        quoted = transport.evidence
        lines.append(f"  transport on {where}: {transport.transport}{nics} ({quoted.source}:{quoted.line})")
    if job.outcome:
        quoted = (
            f" ({job.outcome.evidence.source}:{job.outcome.evidence.line})" if job.outcome.evidence else ""
        )
        lines.append(f"  outcome: {job.outcome.outcome}, {job.outcome.why}{quoted}")
    lines += [f"  note: {note}" for note in job.notes]
    if job.resume and job.resume.evidence:
        lines.append(
            f"  resumed: {job.resume.resumed} ({job.resume.evidence.source}:{job.resume.evidence.line})"
        )
    for span in job.rank_times:
        lines.append(
            f"  ranks {span.ranks}: lines from {span.first or '?'} to {span.last or '?'} ({job.time_zone})"
        )
    return lines


def _activity_lines(activity: list[RankActivity]) -> list[str]:
    lines = ["What the culprit was doing (and a rank that waited):"]
    for rank in activity:
        lines.append(
            f"  rank {rank.rank} ({rank.role}) on {rank.node or '?'}, before {rank.source} {rank.until}:"
        )
        shown = sorted(
            [*([rank.last_progress] if rank.last_progress else []), *rank.before], key=lambda x: x.line
        )
        lines += [f"    {line.line}: {line.text}" for line in shown]
        if rank.note:
            lines.append(f"    ({rank.note})")
    return lines


def _rank_state_lines(groups: list[RankStateGroup]) -> list[str]:
    lines = ["NCCL state of every rank:"]
    for group in groups:
        work = ""
        if group.last_enqueued is not None or group.last_completed is not None:
            work = f" (last enqueued {group.last_enqueued}, last completed {group.last_completed})"
        collective = f" {group.op} SeqNum {group.seq}" if group.op and group.seq is not None else ""
        where = f" on {_listing(group.nodes)}" if group.nodes else ""
        lines.append(
            f"  ranks {group.ranks} ({group.count}){where}: {group.state};{collective} watchdog "
            f"{group.watchdog}{work}"
        )
    return lines


def _timeline_line(event: TimelineEvent) -> str:
    """One timeline entry; the cluster timeline also says what it touches and whether its time
    was computed rather than read."""
    touches = [
        f"node {event.node}" if event.node and event.node not in event.source else "",
        f"instance {event.instance_id}"
        if event.instance_id and event.instance_id not in (event.node or "")
        else "",
        f"pod {event.pod}" if event.pod else "",
        f"ranks {event.ranks}" if event.ranks else "",
    ]
    where = ", ".join(part for part in touches if part)
    derived = " (derived)" if event.derived else ""
    return f"  {event.time or '?':<25}{derived} {event.source:<32} {event.event}" + (
        f" [{where}]" if where else ""
    )


def render_text(report: Report, *, color: bool = False) -> str:
    # Redacted, then every string from input made inert: no escape sequence or newline of a log
    # line or file name reaches the terminal; the colours and line breaks below are ours.
    report = printable_model(redact_model(report))
    summary = report.summary
    lines = [
        f"hyperpod-nccl {report.kind}: {summary.files_read} files read, {summary.ranks_seen} ranks seen",
        "",
    ]
    if report.job:
        lines += [*_job_lines(report.job), ""]
    if report.rank_states:
        lines += [*_rank_state_lines(report.rank_states), ""]
    if report.activity:
        lines += [*_activity_lines(report.activity), ""]
    for finding in report.findings:
        lines.extend(_finding_lines(finding, color))
    if report.root_cause:
        cause = report.root_cause
        lines += ["", f"Root cause: {cause.category} (confidence {cause.confidence})", f"  {cause.summary}"]
        if cause.culprit_ranks:
            lines.append(f"  culprit ranks: {compress(cause.culprit_ranks)}")
        if cause.culprit_nodes:
            lines.append(f"  culprit nodes: {_listing(cause.culprit_nodes)}")
        lines += [f"  {step}" for step in cause.chain]
        lines += [f"  ruled out: {item}" for item in cause.ruled_out]
    if report.timeline:
        zone = report.job.time_zone if report.kind == "triage" and report.job else "UTC"
        lines += ["", f"Timeline ({zone}):"]
        lines += [_timeline_line(event) for event in report.timeline]
    if report.skipped:
        lines += ["", "Skipped or partly read inputs:"]
        lines += [f"  {item.source}: {item.reason}" for item in report.skipped]
    if report.omitted:
        lines += ["", "Left out to fit the size budget: " + "; ".join(report.omitted)]
    lines += ["", "=" * 60, f"Issues Found: {summary.issues_found}"]
    for priority in Priority:
        lines.append(f"  {priority} ({PRIORITY_MEANING[priority]}): {getattr(summary, priority.lower())}")
    return "\n".join(lines) + "\n"
