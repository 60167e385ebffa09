"""One entry of the cluster timeline, whatever source it came from.

Every source (HyperPod events and node statuses, Kubernetes events, node conditions and leases,
container terminations, CloudWatch hits, on-node probes, Slurm node reasons, the pod-log triage)
becomes a `TimedEvent`: a UTC time, where it came from, what happened, and what it touches (node,
instance, pod, ranks). `cause` marks the events that could explain a failure if they line up with
it (a node lost, an OOM kill, an Xid); everything else is context or a consequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from hyperpod_nccl.models import Category, TimelineEvent
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.utc import iso_utc


@dataclass(frozen=True)
class TimedEvent:
    time: datetime | None
    source: str
    event: str
    kind: str  # stable, e.g. `node.silent`, `pod.oom_killed`, `collective.started`
    abnormal: bool = False
    node: str | None = None
    instance_id: str | None = None
    pod: str | None = None
    ranks: frozenset[int] = field(default_factory=frozenset)
    derived: bool = False
    cause: Category | None = None  # what it would mean as the trigger; None for context and symptoms

    def touches(self, other: TimedEvent) -> bool:
        """Same node, instance or pod, or a rank in common: the relation the causal chain follows."""
        return bool(
            (self.node and self.node == other.node)
            or (self.instance_id and self.instance_id == other.instance_id)
            or (self.pod and self.pod == other.pod)
            or (self.ranks & other.ranks)
        )

    def where(self) -> str:
        """`node X (i-…), pod ns/p, ranks 8-15`: what the event touches, for sentences."""
        parts = []
        if self.node:
            instance = (
                f" ({self.instance_id})" if self.instance_id and self.instance_id not in self.node else ""
            )
            parts.append(f"node {self.node}{instance}")
        elif self.instance_id:
            parts.append(f"instance {self.instance_id}")
        if self.pod:
            parts.append(f"pod {self.pod}")
        if self.ranks:
            parts.append(f"ranks {compress(self.ranks)}")
        return ", ".join(parts)

    def report(self) -> TimelineEvent:
        return TimelineEvent(
            time=iso_utc(self.time),
            source=self.source,
            event=self.event,
            node=self.node,
            instance_id=self.instance_id,
            pod=self.pod,
            ranks=compress(self.ranks) or None,
            derived=self.derived,
        )
