"""Timeline entries from the pod-log triage, read through its public Report.

The triage timeline names its log files and the host names in the log lines; here they become
the pods, nodes, instance ids and ranks the rest of the cluster timeline uses. The stuck
collective's start is marked derived: it is the watchdog's time minus its Timeout(ms).
"""

from __future__ import annotations

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.pod_logs import JobLogs, log_source
from hyperpod_nccl.analyze.triage_reading import StuckCollective, stuck_collective
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.models import TimelineEvent
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.utc import parse_utc


def _source(entry: TimelineEvent, job_logs: JobLogs) -> tuple[str, str | None, str | None]:
    """(source, pod, node) of a triage timeline entry, its file named as the pod log it was."""
    name, _, line = entry.source.rpartition(":")
    log = job_logs.by_file.get(name) if line.isdigit() else job_logs.by_file.get(entry.source)
    if log is None:
        return entry.source, None, None
    where = f"{log_source(log)}:{line}" if line.isdigit() else log_source(log)
    return where, f"{log.namespace}/{log.pod}", log.node


def _entry(
    entry: TimelineEvent, job_logs: JobLogs, topology: Topology, stuck: StuckCollective | None
) -> TimedEvent:
    source, pod, node = _source(entry, job_logs)
    host_node, host_pod = topology.resolve_host(entry.node)
    pod, node = pod or host_pod, node or host_node
    kind, ranks, derived = "log.event", {entry.rank} if entry.rank is not None else set(), False
    if stuck is not None and entry is stuck.started_entry:
        kind, derived = "collective.started", True
        ranks = set(stuck.waiting | stuck.never_joined)
        pod = node = None  # every rank's collective, not the one log line that dated it
    elif stuck is not None and entry is stuck.fired_entry:
        kind, ranks = "watchdog.fired", set(stuck.waiting)
    elif not ranks and pod in topology.pods:
        ranks = set(topology.pods[pod].ranks)
    text = f"{entry.event} [pod-log triage of {job_logs.job}]"
    if kind == "collective.started" and stuck is not None:
        op = (
            f"{stuck.op} SeqNum {stuck.seq}" if stuck.op and stuck.seq is not None else "the stuck collective"
        )
        missing = f"; ranks {compress(stuck.never_joined)} never joined it" if stuck.never_joined else ""
        dated = f"watchdog time − Timeout(ms)={stuck.timeout_ms}"
        text = f"{op} issued ({dated}){missing} [pod-log triage of {job_logs.job}]"
    return TimedEvent(
        time=parse_utc(entry.time, naive_is_utc=True),
        source=source,
        event=text,
        kind=kind,
        abnormal=True,
        node=node,
        instance_id=topology.instance_of(node),
        pod=pod,
        ranks=frozenset(ranks),
        derived=derived,
    )


def pod_log_entries(triaged: list[JobLogs], topology: Topology) -> list[TimedEvent]:
    found = []
    for job_logs in triaged:
        stuck = stuck_collective(job_logs.report)
        found += [_entry(entry, job_logs, topology, stuck) for entry in job_logs.report.timeline]
    return found
