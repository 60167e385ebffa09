"""Timeline entries from the AWS side: HyperPod cluster events, node statuses and CloudWatch hits."""

from __future__ import annotations

import re

from hyperpod_nccl.analyze.cluster_events import is_problem
from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.models import Category
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import CloudWatchScan, StreamMatches
from hyperpod_nccl.utc import earlier_by, parse_utc

_GPU_WORDS = re.compile(r"\b(gpu|xid|dcgm|ecc|nvlink|nvswitch)\b", re.IGNORECASE)
_TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)")
# CloudWatch pattern names (collect/cloudwatch.py) and what a hit means as a trigger.
_PATTERN_CAUSES = (
    (("xid", "gpu_fell_off_bus"), Category.GPU_HARDWARE),
    (("efa_error", "nccl_error"), Category.NETWORK),
)


def hyperpod_events(snapshot: Snapshot, topology: Topology) -> list[TimedEvent]:
    found = []
    for event in (snapshot.aws.events if snapshot.aws else None) or []:
        problem = is_problem(event)
        cause = None
        if problem and event.instance_id:
            gpu = _GPU_WORDS.search(event.description)
            cause = Category.GPU_HARDWARE if gpu else Category.INFRASTRUCTURE
        found.append(
            TimedEvent(
                time=parse_utc(event.event_time),
                source="sagemaker:ListClusterEvents",
                event=f"HyperPod [{event.level or 'Info'}]: {event.description}",
                kind="hyperpod.event",
                abnormal=problem,
                node=topology.node_of_instance(event.instance_id),
                instance_id=event.instance_id,
                cause=cause,
            )
        )
    return found


def hyperpod_nodes(snapshot: Snapshot, topology: Topology) -> list[TimedEvent]:
    """Launch times, and any node not Running as HyperPod listed it when the snapshot was taken
    (an observation at collection time: it says nothing about when the node went bad)."""
    aws = snapshot.aws
    found = []
    for node in (aws.nodes if aws else None) or []:
        where = {"node": topology.node_of_instance(node.instance_id), "instance_id": node.instance_id}
        described = topology.describe_instance(node.instance_id)
        if node.launch_time:
            found.append(
                TimedEvent(
                    parse_utc(node.launch_time),
                    "sagemaker:ListClusterNodes",
                    f"launched {described}",
                    "hyperpod.launched",
                    **where,
                )
            )
        if node.status != "Running":
            message = f": {node.message}" if node.message else ""
            found.append(
                TimedEvent(
                    parse_utc(snapshot.collected_at),
                    "sagemaker:ListClusterNodes",
                    f"HyperPod lists {node.instance_id} as {node.status}{message} (at collection)",
                    "hyperpod.status",
                    abnormal=True,
                    **where,
                )
            )
    return found


def _cause(stream: StreamMatches) -> Category | None:
    for patterns, category in _PATTERN_CAUSES:
        if any(stream.counts.get(pattern) for pattern in patterns):
            return category
    return None


def _stream_events(scan: CloudWatchScan, stream: StreamMatches, topology: Topology) -> list[TimedEvent]:
    first = parse_utc(stream.first_seen, naive_is_utc=True)
    counts = ", ".join(f"{name} {count}" for name, count in sorted(stream.counts.items()) if count)
    node = topology.node_of_instance(stream.instance_id)
    where = {"node": node, "instance_id": stream.instance_id}
    source = f"CloudWatch {scan.log_group}"
    cause = _cause(stream)
    watchdog_only = cause is None and stream.counts.get("watchdog_timeout")
    kind = "watchdog.fired" if watchdog_only else f"cloudwatch.{(cause or 'warning')}"
    entry = TimedEvent(
        first,
        source,
        f"first of {counts} on {stream.stream}: {stream.sample or ''}".strip(),
        kind,
        abnormal=True,
        cause=cause,
        **where,
    )
    timeout = _TIMEOUT_MS.search(stream.sample or "")
    started = earlier_by(first, int(timeout.group(1))) if timeout and first else None
    if not (watchdog_only and timeout and started):
        return [entry]
    text = f"stuck collective issued (watchdog time − {timeout.group(1)} ms timeout, from {stream.stream})"
    return [
        entry,
        TimedEvent(started, source, text, "collective.started", abnormal=True, derived=True, **where),
    ]


def cloudwatch_hits(snapshot: Snapshot, topology: Topology) -> list[TimedEvent]:
    scans = (snapshot.aws.cloudwatch if snapshot.aws else None) or []
    return [
        event for scan in scans for stream in scan.streams for event in _stream_events(scan, stream, topology)
    ]
