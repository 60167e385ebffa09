"""HyperPod cluster events: infrastructure state (provisioning, health checks, reboots,
replacements, capacity). They never carry NCCL timeouts, Xids or pod failures, so the report says
plainly that "no events" is expected for a training-time failure and proves nothing."""

from __future__ import annotations

from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.aws import ClusterEvent

_SOURCE = "sagemaker:ListClusterEvents"
_MAX_EVIDENCE = 20
NO_EVENTS_MEANING = (
    "Cluster events carry infrastructure state only (lifecycle, bootstrap, health checks, capacity, "
    "reboot, replacement). NCCL timeouts, GPU Xid/ECC and pod failures never appear here, so no "
    "events during a training-time NCCL failure is expected, not a clean bill of health."
)


def _evidence(event: ClusterEvent) -> Evidence:
    where = event.instance_id or event.instance_group or event.resource_type
    return Evidence(
        source=_SOURCE,
        text=f"{event.event_time} [{event.level or 'Info'}] {where}: {event.description}",
        instance_id=event.instance_id,
    )


# Node-level disruptions that end the ranks on a node even when the event is logged at Info.
_DISRUPTIONS = ("fail", "replac", "reboot", "unhealthy", "terminat", "insufficient capacity")


def is_problem(event: ClusterEvent) -> bool:
    text = event.description.lower()
    return event.level in ("Warn", "Error") or any(word in text for word in _DISRUPTIONS)


def _problem_events(events: list[ClusterEvent]) -> Finding | None:
    problems = [event for event in events if is_problem(event)]
    if not problems:
        return None
    errors = [event for event in problems if event.level == "Error"]
    ids = sorted({event.instance_id for event in problems if event.instance_id})
    return Finding(
        id="hyperpod.events.infrastructure",
        status=Status.WARN,
        priority=Priority.P1 if errors else Priority.P2,
        title=f"{len(problems)} infrastructure event(s) in the window: failures, reboots or replacements"
        + (f" on {len(ids)} node(s)" if ids else ""),
        reference="debugging-guide.md § 16",
        detail="A node rebooted, replaced or failing a health check during the run ends the ranks on it.",
        instance_ids=ids,
        evidence=[_evidence(event) for event in problems[:_MAX_EVIDENCE]],
    )


def analyze_cluster_events(snapshot: Snapshot) -> list[Finding]:
    aws = snapshot.aws
    if aws is None or aws.events is None:
        return []
    events = aws.events
    partial = "" if aws.events_complete else " (partial: the listing stopped early)"
    summary = Finding(
        id="hyperpod.events.summary",
        status=Status.INFO,
        title=f"{len(events)} cluster event(s) in the window{partial}",
        detail=NO_EVENTS_MEANING,
        evidence=[_evidence(event) for event in events[:3]],
    )
    problems = _problem_events(events)
    return [summary, problems] if problems else [summary]
