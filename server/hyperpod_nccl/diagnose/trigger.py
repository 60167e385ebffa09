"""The trigger: the earliest abnormal event that explains the failure and lines up with it.

The failure is dated by the logs: the moment the stuck collective was issued (the watchdog's time
minus its Timeout(ms)), else the first watchdog, else the first container of the job that died.
An event lines up when it falls within `LINES_UP` of that moment and touches the job (runs on one
of its nodes, or is one of its pods or ranks). Of those, the earliest is the trigger. The chain
follows only events that touch each other, from the trigger to the end; every other candidate is
named in `ruled_out` with the reason it was not the trigger.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.pod_logs import JobLogs
from hyperpod_nccl.analyze.triage_reading import stuck_collective
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.models import Category, RootCause
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.utc import human_span

# An event lines up with the failure when it is at most this far from the moment the stuck
# collective was issued: the kubelet renews its lease every 10 s, the node controller marks a
# silent node NotReady 40-50 s later, and a training step rarely outlasts a minute.
LINES_UP = timedelta(minutes=2)
_WINDOW = human_span(LINES_UP.total_seconds())
_CHAIN_LIMIT = 8
_RULED_OUT_LIMIT = 12
_ANCHORS = ("collective.started", "watchdog.fired")


@dataclass
class JobScope:
    """What belongs to the job: its pods and ranks, and every node its pods ran on."""

    nodes: set[str]
    pods: set[str]
    ranks: set[int]
    instances: set[str]

    @property
    def known(self) -> bool:
        return bool(self.pods)

    def touches(self, event: TimedEvent) -> bool:
        if not self.known:
            return True  # without Kubernetes nothing says which nodes ran the job: all may have
        return bool(
            (event.node and event.node in self.nodes)
            or (event.instance_id and event.instance_id in self.instances)
            or (event.pod and event.pod in self.pods)
            or (event.ranks & self.ranks)
        )


def job_scope(timeline: list[TimedEvent], topology: Topology) -> JobScope:
    pods = set(topology.pods)
    # A pod recreated elsewhere no longer names the node it ran on; its events still do.
    nodes = topology.job_nodes() | {e.node for e in timeline if e.pod in pods and e.node}
    instances = {i for node in nodes if (i := topology.instance_of(node))}
    return JobScope(nodes, pods, topology.all_ranks(), instances)


def find_anchor(timeline: list[TimedEvent], scope: JobScope) -> TimedEvent | None:
    """The moment the job failed, as precisely as the sources date it."""
    timed = [e for e in timeline if e.time is not None and scope.touches(e)]
    for kind in _ANCHORS:
        found = [e for e in timed if e.kind == kind]
        if found:
            return min(found, key=lambda e: e.time)  # type: ignore[arg-type, return-value]
    died = [e for e in timed if e.kind in ("container.terminated", "pod.oom_killed") and e.abnormal]
    return min(died, key=lambda e: e.time) if died else None  # type: ignore[arg-type, return-value]


def _gap(event: TimedEvent, anchor: TimedEvent) -> timedelta:
    assert event.time is not None and anchor.time is not None
    return event.time - anchor.time


def _lines_up(event: TimedEvent, anchor: TimedEvent | None) -> bool:
    return anchor is not None and event.time is not None and abs(_gap(event, anchor)) <= LINES_UP


def _group(event: TimedEvent) -> tuple[str, str]:
    return (str(event.cause), event.node or event.instance_id or event.pod or event.source)


@dataclass
class Culprit:
    nodes: list[str]
    instance_ids: list[str]
    pods: list[str]
    ranks: list[int]

    def describe(self, topology: Topology) -> str:
        parts = []
        for node, instance in zip(self.nodes, self.instance_ids, strict=False):
            parts.append(f"node {node} (instance {topology.describe_instance(instance)})")
        if not self.nodes and self.instance_ids:
            parts.append(f"instance {topology.describe_instance(self.instance_ids[0])}")
        if self.pods:
            parts.append(f"pod {', '.join(self.pods)}")
        if self.ranks:
            parts.append(f"ranks {compress(self.ranks)}")
        return ", ".join(parts)


def culprit_of(event: TimedEvent, topology: Topology) -> Culprit:
    node = event.node or topology.node_of_instance(event.instance_id)
    instance = event.instance_id or topology.instance_of(node)
    places = [topology.pods[event.pod]] if event.pod in topology.pods else topology.pods_on(node)
    ranks = sorted(event.ranks) if event.ranks else sorted({r for place in places for r in place.ranks})
    # Without a node name (no Kubernetes or Slurm view), HyperPod's instance id is the node's name.
    nodes = [node] if node else ([instance] if instance else [])
    return Culprit(nodes, [instance] if instance else [], [place.pod for place in places], ranks)


def _line(event: TimedEvent, prefix: str = "→") -> str:
    when = f"{event.time:%Y-%m-%d %H:%M:%SZ}" if event.time else "(no time)"
    where = event.where()
    derived = " (derived)" if event.derived else ""
    return f"{prefix} {when}{derived} {where + ': ' if where else ''}{event.event} [{event.source}]"


def chain_events(
    trigger: TimedEvent, anchor: TimedEvent | None, timeline: list[TimedEvent], culprit: Culprit | None = None
) -> list[TimedEvent]:
    """The trigger, then each later abnormal event that touches one already in the chain (same
    node, instance or pod, or a rank in common), one event per kind. The trigger touches its
    culprit's ranks, and the failure's moment (the stuck collective) touches every rank in it."""
    reach = replace(trigger, ranks=trigger.ranks | frozenset(culprit.ranks if culprit else ()))
    linked, touching = [trigger], [reach] + ([anchor] if anchor is not None else [])
    for event in timeline:
        later = event.time is not None and trigger.time is not None and event.time >= trigger.time
        if event is trigger or not event.abnormal or not later:
            continue
        new_kind = event.kind not in {e.kind for e in linked}
        if (new_kind or event is anchor) and any(event.touches(other) for other in touching):
            linked.append(event)
            touching.append(event)
    if anchor is not None and anchor not in linked and _after(anchor, trigger):
        linked.append(anchor)
    linked.sort(key=lambda e: e.time)  # type: ignore[arg-type, return-value]
    return linked[:_CHAIN_LIMIT]


def _after(event: TimedEvent, other: TimedEvent) -> bool:
    return event.time is not None and other.time is not None and event.time >= other.time


@dataclass
class Choice:
    """The failure's moment, the candidates that line up with it (the trigger first), the chain."""

    anchor: TimedEvent | None
    scope: JobScope
    lined_up: list[TimedEvent]
    candidates: list[TimedEvent]

    @property
    def trigger(self) -> TimedEvent | None:
        return self.lined_up[0] if self.lined_up else None


def choose(timeline: list[TimedEvent], topology: Topology) -> Choice:
    scope = job_scope(timeline, topology)
    anchor = find_anchor(timeline, scope)
    candidates = [e for e in timeline if e.cause is not None and e.time is not None]
    lined_up = sorted(
        (e for e in candidates if scope.touches(e) and _lines_up(e, anchor)),
        key=lambda e: e.time,  # type: ignore[arg-type, return-value]
    )
    return Choice(anchor, scope, lined_up, candidates)


def anchor_phrase(anchor: TimedEvent) -> str:
    if anchor.kind == "collective.started":
        return "the stuck collective was issued"
    if anchor.kind == "watchdog.fired":
        return "the first watchdog fired"
    return "the job's first container failed"


def _when(event: TimedEvent) -> str:
    return f"{event.time:%Y-%m-%d %H:%M:%SZ}" if event.time else "(no time)"


def _ready_again(event: TimedEvent, timeline: list[TimedEvent]) -> str:
    back = [e for e in timeline if e.kind == "node.ready" and e.node == event.node and _after(e, event)]
    return f"; Ready again at {_when(back[0])}" if back else ""


def why_not(event: TimedEvent, choice: Choice, timeline: list[TimedEvent]) -> str:
    """Why a candidate that is not the trigger was ruled out."""
    what = f"{event.event} ({event.where() or event.source}, {_when(event)})"
    if not choice.scope.touches(event):
        return f"{what}: none of the job's pods ran there"
    anchor = choice.anchor
    if anchor is None:
        return f"{what}: the logs date no failure to line it up with"
    gap = _gap(event, anchor)
    span = human_span(gap.total_seconds())
    if abs(gap) <= LINES_UP:
        return f"{what}: lines up too, but later than the trigger"
    if gap < timedelta(0):
        return (
            f"{what}: {span} before {anchor_phrase(anchor)} ({_when(anchor)}), outside the "
            f"{_WINDOW} that would tie it to the failure{_ready_again(event, timeline)}"
        )
    return f"{what}: {span} after {anchor_phrase(anchor)}: a consequence, not the trigger"


def _same_place(event: TimedEvent, other: TimedEvent) -> bool:
    return bool(
        (event.node and event.node == other.node)
        or (event.instance_id and event.instance_id == other.instance_id)
        or (event.pod and event.pod == other.pod)
    )


def ruled_out_candidates(choice: Choice, timeline: list[TimedEvent]) -> list[tuple[TimedEvent, str]]:
    """One reason per other candidate (the earliest of each kind and place), the trigger's own
    node, pod and ranks excluded: those events are its chain, not alternatives."""
    trigger = choice.trigger
    earliest: dict[tuple[str, str], TimedEvent] = {}
    for event in choice.candidates:
        if trigger is not None and _same_place(event, trigger):
            continue
        earliest.setdefault(_group(event), event)
    return [(event, why_not(event, choice, timeline)) for event in earliest.values()][:_RULED_OUT_LIMIT]


def stuck_sentence(triaged: list[JobLogs], culprit: Culprit) -> str:
    for job_logs in triaged:
        stuck = stuck_collective(job_logs.report)
        if stuck is None:
            continue
        op = f"{stuck.op} SeqNum {stuck.seq}" if stuck.op and stuck.seq is not None else "the collective"
        absent = sorted(set(culprit.ranks) - stuck.waiting) or sorted(stuck.never_joined)
        who = f"Ranks {compress(absent)} never joined {op}; the" if absent else "The"
        return (
            f" {who} {len(stuck.waiting)} waiting ranks' watchdog fired at {stuck.fired:%Y-%m-%d %H:%M:%SZ} "
            f"after Timeout(ms)={stuck.timeout_ms}."
        )
    return ""


def trigger_summary(choice: Choice, culprit: Culprit, topology: Topology, triaged: list[JobLogs]) -> str:
    trigger, anchor = choice.trigger, choice.anchor
    assert trigger is not None and anchor is not None
    gap = _gap(trigger, anchor)
    relation = "before" if gap <= timedelta(0) else "after"
    return (
        f"{culprit.describe(topology) or trigger.where()}: {trigger.event} at {_when(trigger)} "
        f"({trigger.source}), {human_span(gap.total_seconds())} {relation} {anchor_phrase(anchor)}"
        f"{' (derived)' if anchor.derived else ''} at {_when(anchor)}.{stuck_sentence(triaged, culprit)}"
    )


def trigger_root_cause(
    choice: Choice, topology: Topology, triaged: list[JobLogs], timeline: list[TimedEvent]
) -> RootCause:
    trigger, anchor = choice.trigger, choice.anchor
    assert trigger is not None and trigger.cause is not None
    culprit = culprit_of(trigger, topology)
    chain = chain_events(trigger, anchor, timeline, culprit)
    groups = {_group(e) for e in choice.lined_up}
    never_joined = {
        r for job_logs in triaged if (s := stuck_collective(job_logs.report)) for r in s.never_joined
    }
    agrees = not never_joined or not culprit.ranks or never_joined <= set(culprit.ranks)
    precise = anchor is not None and anchor.derived
    return RootCause(
        category=trigger.cause,
        summary=trigger_summary(choice, culprit, topology, triaged),
        culprit_ranks=culprit.ranks,
        culprit_nodes=culprit.nodes,
        culprit_instance_ids=culprit.instance_ids,
        culprit_pods=culprit.pods,
        chain=[_line(chain[0], "trigger:"), *(_line(event) for event in chain[1:])],
        confidence="high" if precise and len(groups) == 1 and agrees else "medium",
        ruled_out=[reason for _, reason in ruled_out_candidates(choice, timeline)],
    )


def unknown_root_cause(choice: Choice, timeline: list[TimedEvent]) -> RootCause:
    """Failures were seen and nothing lines up: say so, and show the earliest abnormal event."""
    abnormal = [e for e in timeline if e.abnormal and e.time is not None and choice.scope.touches(e)]
    read = [e for e in abnormal if not e.derived]  # the failure's computed moment is not an event
    first = (read or abnormal or [None])[0]
    summary = "Failures were seen but nothing in the cluster lines up with the failure"
    if choice.anchor is not None:
        summary += f" ({anchor_phrase(choice.anchor)} at {_when(choice.anchor)})"
    if first is not None:
        summary += (
            f"; the earliest abnormal event: {first.event} ({first.where() or first.source}, {_when(first)})"
        )
    return RootCause(
        category=Category.UNKNOWN,
        summary=summary + ".",
        chain=[_line(first, "first:")] if first else [],
        confidence="low",
        ruled_out=[reason for _, reason in ruled_out_candidates(choice, timeline)],
    )
