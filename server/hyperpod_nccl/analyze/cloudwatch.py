"""What the cluster's CloudWatch log streams (one per node) say in the window: Xids, watchdog
timeouts, NCCL and EFA transport errors, TCP fallback. One finding per concern, naming every node
with a hit; a missing log group is INFO with the section on enabling it, never a PASS."""

from __future__ import annotations

from dataclasses import dataclass

from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import CloudWatchScan, StreamMatches

_MAX_EVIDENCE = 20


@dataclass(frozen=True)
class _Concern:
    key: str
    patterns: tuple[str, ...]
    status: Status
    priority: Priority
    reference: str
    title: str


_CONCERNS = (
    _Concern(
        "xid", ("xid", "gpu_fell_off_bus"), Status.FAIL, Priority.P0, "debugging-guide.md § 5", "GPU Xid"
    ),
    _Concern(
        "watchdog",
        ("watchdog_timeout",),
        Status.FAIL,
        Priority.P0,
        "debugging-guide.md § 1",
        "NCCL watchdog collective timeout",
    ),
    _Concern(
        "transport",
        ("efa_error", "nccl_error"),
        Status.FAIL,
        Priority.P0,
        "debugging-guide.md § 3",
        "NCCL / EFA transport error",
    ),
    _Concern(
        "tcp_fallback",
        ("tcp_fallback",),
        Status.WARN,
        Priority.P1,
        "debugging-guide.md § 13",
        "EFA TCP fallback",
    ),
    _Concern(
        "nccl_warn", ("nccl_warn",), Status.WARN, Priority.P2, "debugging-guide.md § 3", "NCCL WARN lines"
    ),
)


def _hits(stream: StreamMatches, concern: _Concern) -> int:
    # One line can match two patterns of a concern (an Xid that says "fallen off the bus"):
    # the largest count is a floor on the lines, where the sum would count some twice.
    return max(stream.counts.get(pattern, 0) for pattern in concern.patterns)


def _evidence(scan: CloudWatchScan, stream: StreamMatches, hits: int) -> Evidence:
    return Evidence(
        source=f"logs:{'StartQuery' if scan.method == 'insights' else 'FilterLogEvents'} {scan.log_group}",
        text=f"{stream.stream}: {hits} hit(s) {stream.first_seen} → {stream.last_seen}; "
        f"first: {stream.sample or ''}",
        instance_id=stream.instance_id,
    )


def _concern_finding(scan: CloudWatchScan, concern: _Concern) -> Finding | None:
    streams = [(stream, hits) for stream in scan.streams if (hits := _hits(stream, concern))]
    if not streams:
        return None
    total = sum(hits for _, hits in streams)
    return Finding(
        id=f"cloudwatch.{concern.key}",
        status=concern.status,
        priority=concern.priority,
        title=f"{concern.title}: {total} line(s) on {len(streams)} node stream(s) in {scan.log_group}",
        reference=concern.reference,
        detail=f"Window {scan.window_start} → {scan.window_end}.",
        # A stream is named after its instance: `instance_ids` names it; `nodes` holds node names.
        instance_ids=sorted({stream.instance_id for stream, _ in streams if stream.instance_id}),
        evidence=[_evidence(scan, stream, hits) for stream, hits in streams[:_MAX_EVIDENCE]],
    )


def _missing(scan: CloudWatchScan) -> Finding:
    return Finding(
        id="cloudwatch.log_group_missing",
        status=Status.INFO,
        title=f"CloudWatch log group {scan.log_group} not found: the CloudWatch scan was skipped",
        reference="operations.md § 4",
        detail="No node logs were searched, which is not the same as no errors. Enable CloudWatch logging.",
    )


def _scan_findings(scan: CloudWatchScan) -> list[Finding]:
    if not scan.found:
        return [_missing(scan)]
    findings = [f for concern in _CONCERNS if (f := _concern_finding(scan, concern))]
    if findings or scan.method is None:
        return findings
    partial = "" if scan.complete else " (partial: the event limit was reached)"
    return [
        Finding(
            id="cloudwatch.no_matches",
            status=Status.INFO,
            title=f"No NCCL / EFA / watchdog / Xid line in {scan.log_group}{partial}",
            detail=f"Searched {scan.window_start} → {scan.window_end} by {scan.method}. Training output "
            "reaches CloudWatch only through a log agent, so this does not clear the job.",
            reference="operations.md § 4",
        )
    ]


def analyze_cloudwatch(snapshot: Snapshot) -> list[Finding]:
    scans = snapshot.aws.cloudwatch if snapshot.aws else None
    return [finding for scan in scans or [] for finding in _scan_findings(scan)]
