"""The cluster timeline: every source's events in one UTC order.

`build_timeline` gathers what each source dated (aws.py, kubernetes.py, nodes.py for probes and
Slurm, logs.py for the pod-log triage) into `TimedEvent`s; `cause.py` picks the trigger from
them and `for_report` chooses the entries the report shows.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.pod_logs import JobLogs
from hyperpod_nccl.diagnose.timeline import aws, kubernetes, logs, nodes
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.models import TimelineEvent
from hyperpod_nccl.snapshot import Snapshot

__all__ = ["TimedEvent", "build_timeline", "for_report"]

# What the report shows; the whole timeline of a large cluster would drown the decisive entries.
REPORT_LIMIT = 40
_NEVER = datetime.max.replace(tzinfo=UTC)


def _order(event: TimedEvent) -> tuple[datetime, str, str]:
    return (event.time or _NEVER, event.source, event.event)


def build_timeline(snapshot: Snapshot, topology: Topology, triaged: list[JobLogs]) -> list[TimedEvent]:
    """Every dated event of every source, oldest first; undated ones last."""
    found = [
        *aws.hyperpod_events(snapshot, topology),
        *aws.hyperpod_nodes(snapshot, topology),
        *aws.cloudwatch_hits(snapshot, topology),
        *kubernetes.kubernetes_entries(snapshot, topology),
        *nodes.probe_entries(snapshot, topology),
        *nodes.slurm_entries(snapshot, topology),
        *logs.pod_log_entries(triaged, topology),
    ]
    return sorted(dict.fromkeys(found), key=_order)


def for_report(
    timeline: list[TimedEvent], decisive: list[TimedEvent], topology: Topology, limit: int = REPORT_LIMIT
) -> tuple[list[TimelineEvent], int]:
    """The entries the report shows, in time order, and how many were left out.

    The trigger and its chain come first, then abnormal entries that touch the job's nodes,
    pods or ranks, then other abnormal entries, then the rest."""
    job_nodes, job_pods, job_ranks = topology.job_nodes(), set(topology.pods), topology.all_ranks()

    def rank(event: TimedEvent) -> int:
        if event in decisive:
            return 0
        on_job = event.node in job_nodes or event.pod in job_pods or bool(event.ranks & job_ranks)
        return (1 if on_job else 2) if event.abnormal else 3

    chosen = sorted(timeline, key=lambda event: (rank(event), _order(event)))[:limit]
    return [event.report() for event in sorted(chosen, key=_order)], max(0, len(timeline) - limit)
