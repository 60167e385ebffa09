"""The CloudWatch collector: NCCL / EFA / watchdog / Xid hits per node in the cluster's log group.

A Logs Insights query aggregates server-side by log stream (one stream per node), so the cost does
not grow with the log volume and no log line is downloaded for a node that has no hit. When the
query cannot run (denied, failed, timed out), FilterLogEvents reads the matching events instead and
the same aggregation happens here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_nccl.collect.aws import issue_for, list_all
from hyperpod_nccl.snapshot import CollectionIssue
from hyperpod_nccl.snapshot.aws import CloudWatchScan, StreamMatches

# Pattern name → literal substrings. Literals, not regexes: Insights' strcontains() counts them
# server-side and the fallback matches them the same way here, so both methods agree.
PATTERNS: dict[str, tuple[str, ...]] = {
    "watchdog_timeout": ("Watchdog caught collective operation timeout",),
    "nccl_error": (
        "NCCL error in:",
        "unhandled system error",
        "remote process exited or there was a network error",
        "NCCL communicator was aborted",
    ),
    "nccl_warn": ("NCCL WARN",),
    "efa_error": (
        "completed with error",
        "OFI fi_getinfo() call failed",
        "NET/OFI aws-ofi-nccl initialization failed",
        "Unable to register memory",
    ),
    "tcp_fallback": ("Selected provider is tcp", "Selected Provider is tcp", "Selected provider is sockets"),
    "xid": ("NVRM: Xid", "SXid"),
    "gpu_fell_off_bus": ("fallen off the bus",),
}
_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8,17}\b")
_REGEX_SPECIAL = re.compile(r"([\\.^$*+?()\[\]{}|/])")
_QUERY_DEADLINE_SECONDS = 120.0
_POLL_SECONDS = 1.0
FILTER_EVENT_LIMIT = 20_000  # the fallback downloads events: bound it, and say so when hit


def log_group_name(cluster_name: str, cluster_id: str) -> str:
    return f"/aws/sagemaker/Clusters/{cluster_name}/{cluster_id}"


def find_log_group(logs: Any, prefix: str) -> tuple[str | None, CollectionIssue | None]:
    """The cluster's log group, or None with the reason (absent, or not allowed to look)."""
    listing = list_all(
        logs, "describe_log_groups", "logGroups", "logs:DescribeLogGroups", logGroupNamePrefix=prefix
    )
    names = sorted(group["logGroupName"] for group in listing.items)
    if names:
        return names[0], None
    if listing.issue:
        return None, listing.issue
    message = f"log group {prefix} does not exist: CloudWatch logging is not enabled for this cluster"
    return None, CollectionIssue(source="logs:DescribeLogGroups", kind="not_found", message=message)


def insights_query() -> str:
    alternatives = "|".join(
        _REGEX_SPECIAL.sub(r"\\\1", literal) for group in PATTERNS.values() for literal in group
    )
    counts = ", ".join(
        f"sum({' + '.join(f'strcontains(@message, {_quoted(literal)})' for literal in literals)}) as {name}"
        for name, literals in PATTERNS.items()
    )
    return (
        f"fields @timestamp, @logStream, @message | filter @message like /{alternatives}/ "
        f"| stats {counts}, min(@timestamp) as first_seen, max(@timestamp) as last_seen, "
        "earliest(@message) as sample by @logStream"
    )


def _quoted(literal: str) -> str:
    return '"' + literal.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _insights_time(value: str | None) -> str | None:
    # Insights prints "2026-03-02 11:04:05.123" in UTC.
    return value.replace(" ", "T") + "Z" if value and "T" not in value else value


def _stream_from_row(row: list[dict[str, str]]) -> StreamMatches | None:
    fields = {cell["field"]: cell.get("value") for cell in row}
    stream = fields.get("@logStream")
    if not stream:
        return None
    counts = {name: int(float(fields.get(name) or 0)) for name in PATTERNS}
    return StreamMatches(
        stream=stream,
        instance_id=instance_id_of(stream),
        counts={name: count for name, count in counts.items() if count},
        first_seen=_insights_time(fields.get("first_seen")),
        last_seen=_insights_time(fields.get("last_seen")),
        sample=fields.get("sample"),
    )


def _is_aggregated(row: list[dict[str, str]]) -> bool:
    return any(cell.get("field") in (*PATTERNS, "sample", "first_seen") for cell in row)


def _event_of(row: list[dict[str, str]]) -> dict[str, Any]:
    """A raw Insights row as a FilterLogEvents event: message, stream and epoch milliseconds."""
    fields = {cell.get("field"): cell.get("value") for cell in row}
    return {
        "message": fields.get("@message") or "",
        "logStreamName": fields.get("@logStream") or "",
        "timestamp": _epoch_millis(fields.get("@timestamp")),
    }


def _epoch_millis(value: str | None) -> int:
    if not value:
        return 0
    if value.isdigit():
        return int(value)
    try:  # Insights prints "2026-03-02 11:04:05.123" in UTC
        return int(datetime.fromisoformat(value.replace(" ", "T")).replace(tzinfo=UTC).timestamp() * 1000)
    except ValueError:
        return 0


def instance_id_of(stream: str) -> str | None:
    found = _INSTANCE_ID.search(stream)
    return found.group(0) if found else None


class QueryDidNotComplete(Exception):
    pass


def run_insights(logs: Any, group: str, start: datetime, end: datetime) -> list[StreamMatches]:
    """StartQuery, then GetQueryResults until it completes; raises when it cannot."""
    query_id = logs.start_query(
        logGroupName=group,
        startTime=int(start.timestamp()),
        endTime=int(end.timestamp()),
        queryString=insights_query(),
    )["queryId"]
    deadline = time.monotonic() + _QUERY_DEADLINE_SECONDS
    while True:
        reply = logs.get_query_results(queryId=query_id)
        status = reply.get("status")
        if status == "Complete":
            results = reply.get("results", [])
            if results and not any(_is_aggregated(row) for row in results):
                # Raw rows (what moto's server answers a `stats … by` query with): aggregate here.
                return aggregate(_event_of(row) for row in results)
            rows = (_stream_from_row(row) for row in results)
            return sorted((row for row in rows if row), key=lambda row: row.stream)
        if status not in ("Scheduled", "Running") or time.monotonic() > deadline:
            raise QueryDidNotComplete(f"Logs Insights query {query_id} ended {status or 'without a status'}")
        time.sleep(_POLL_SECONDS)


def classify(message: str) -> list[str]:
    return [name for name, literals in PATTERNS.items() if any(literal in message for literal in literals)]


def _iso_millis(epoch_millis: int) -> str:
    return datetime.fromtimestamp(epoch_millis / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def aggregate(events: Iterable[dict[str, Any]]) -> list[StreamMatches]:
    """FilterLogEvents events → the same per-stream shape the Insights query returns."""
    streams: dict[str, StreamMatches] = {}
    for event in sorted(events, key=lambda item: item.get("timestamp", 0)):
        names = classify(event.get("message", ""))
        if not names:
            continue
        stream = event.get("logStreamName", "")
        when = _iso_millis(event.get("timestamp", 0))
        entry = streams.setdefault(
            stream,
            StreamMatches(
                stream=stream, instance_id=instance_id_of(stream), first_seen=when, sample=event["message"]
            ),
        )
        entry.last_seen = when
        for name in names:
            entry.counts[name] = entry.counts.get(name, 0) + 1
    return sorted(streams.values(), key=lambda entry: entry.stream)


def run_filter(logs: Any, group: str, start: datetime, end: datetime) -> tuple[list[StreamMatches], bool]:
    """FilterLogEvents over the window, every page up to FILTER_EVENT_LIMIT events; raises on call errors."""
    pattern = " ".join(f"?{_quoted(literal)}" for literals in PATTERNS.values() for literal in literals)
    events: list[dict[str, Any]] = []
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=group,
        startTime=int(start.timestamp() * 1000),
        endTime=int(end.timestamp() * 1000),
        filterPattern=pattern,
    )
    for page in pages:
        events.extend(page.get("events", []))
        if len(events) >= FILTER_EVENT_LIMIT:
            return aggregate(events[:FILTER_EVENT_LIMIT]), False
    return aggregate(events), True


def scan_log_group(
    logs: Any, group: str, start: datetime, end: datetime
) -> tuple[CloudWatchScan, list[CollectionIssue]]:
    """Insights first; FilterLogEvents when Insights cannot answer. Never raises for AWS errors."""
    scan = CloudWatchScan(log_group=group, found=True, window_start=_iso(start), window_end=_iso(end))
    issues: list[CollectionIssue] = []
    try:
        scan.streams, scan.method = run_insights(logs, group, start, end), "insights"
        return scan, issues
    except QueryDidNotComplete as error:
        message = f"{error}; searched with FilterLogEvents instead"
        issues.append(CollectionIssue(source="logs:GetQueryResults", kind="skipped", message=message))
    except (ClientError, BotoCoreError) as error:
        issues.append(issue_for("logs:StartQuery", error, what="Logs Insights query; used FilterLogEvents"))
    try:
        (scan.streams, scan.complete), scan.method = run_filter(logs, group, start, end), "filter"
    except (ClientError, BotoCoreError) as error:
        scan.complete = False
        issues.append(issue_for("logs:FilterLogEvents", error, what="CloudWatch log scan"))
    return scan, issues


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
