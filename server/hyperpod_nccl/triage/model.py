"""The incident model: everything one triage knows, built once from the scans.

`build_incident` turns the per-file scans into one `Incident`: the job's topology (ranks, nodes,
process ids, GPU buses), the clock that dates every line, each rank's NCCL state and the
cross-rank verdict, an index of events by kind, rank, node and meaning, and what was read and
what could not be. Rules (`triage.rules`) are small functions over this model; none of them walks
the raw event list again, and none of them touches a file.

A second evidence source (Flight Recorder dumps, issue 11) plugs in as an `EvidenceSource`: it
sees the rank states the logs gave before the ranks are compared, may confirm or correct them,
and brings its own rules, whose findings and candidates join the logs' in one list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from hyperpod_nccl.models import SkippedInput
from hyperpod_nccl.triage.classify import Classification, classify
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.fatal import Meaning, meaning_of
from hyperpod_nccl.triage.rank_state import RankState, build_rank_states
from hyperpod_nccl.triage.reading import NODE_LOG_NAMES, Reading, assess_reading
from hyperpod_nccl.triage.summary import Topology, build_topology, node_versions, pci_bus
from hyperpod_nccl.triage.timeline import Clock, collective_start, earliest

if TYPE_CHECKING:
    from hyperpod_nccl.triage.rules import Rule


@dataclass
class Group:
    """Every event of one meaning (one finding id), across ranks and files."""

    meaning: Meaning
    events: list[Event] = field(default_factory=list)


class EventIndex:
    """The events, indexed once: by kind, by rank, by node and by meaning."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.by_kind: dict[str, list[Event]] = {}
        self.by_rank: dict[int, list[Event]] = {}
        self.by_node: dict[str, list[Event]] = {}
        self.by_meaning: dict[str, Group] = {}
        for event in events:
            self.by_kind.setdefault(event.kind, []).append(event)
            if event.rank is not None:
                self.by_rank.setdefault(event.rank, []).append(event)
            if event.node is not None:
                self.by_node.setdefault(event.node, []).append(event)
            meaning = meaning_of(event)
            if meaning is not None:
                self.by_meaning.setdefault(meaning.id, Group(meaning)).events.append(event)

    def kind(self, *kinds: str) -> list[Event]:
        return [event for kind in kinds for event in self.by_kind.get(kind, ())]


class EvidenceSource(Protocol):
    """Facts from outside the logs (e.g. Flight Recorder dumps) joined into the same incident."""

    name: str

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Its own rules, run after the built-in ones over the same incident."""
        ...

    @property
    def files_read(self) -> int:
        """Files it read, counted with the logs read."""
        ...

    @property
    def ranks(self) -> set[int]:
        """Ranks it holds facts about: present in the job even where their logs are silent."""
        ...

    @property
    def skipped(self) -> list[SkippedInput]:
        """Its inputs that could not be used, and why."""
        ...

    def amend(self, states: dict[int, RankState], topology: Topology) -> None:
        """Confirm or correct the rank states the logs gave, before the ranks are compared."""
        ...


@dataclass
class Incident:
    """What the logs say about one job, for the rules to read."""

    scans: list[FileScan]
    index: EventIndex
    topology: Topology
    clock: Clock
    states: dict[int, RankState]
    verdict: Classification
    reading: Reading
    sources: Sequence[EvidenceSource] = ()

    @property
    def events(self) -> list[Event]:
        return self.index.events

    @property
    def groups(self) -> dict[str, Group]:
        return self.index.by_meaning

    @cached_property
    def fired(self) -> Event | None:
        """The first watchdog that fired on its own (not notified by another rank): its `Watchdog
        caught …` line where the rank printed one, the line findings quote for the same event."""
        fired = [s.decisive_event for s in self.states.values() if s.watchdog == "fired" and s.decisive_event]
        first = self.first(fired)
        if first is None:
            return None
        caught = [
            e
            for e in self.index.kind("wd_timeout")
            if e.rank == first.rank and e.source == first.source and e.line <= first.line
        ]
        return max(caught, key=lambda e: e.line, default=first)

    @cached_property
    def ranks_seen(self) -> set[int]:
        """Ranks that left at least one line (or whose host some line names)."""
        from_sources = {rank for source in self.sources for rank in source.ranks}
        # a rank whose prefixed lines were read though none of them was an event
        from_prefixes = {rank for scan in self.scans if not scan.storage for rank in scan.ranks}
        return (
            set(self.index.by_rank)
            | set(self.topology.rank_node)
            | self.reading.unattributed_ranks
            | from_sources
            | from_prefixes
        )

    @cached_property
    def started(self) -> datetime | None:
        """The earliest moment a worker log speaks (node logs such as dmesg reach back before the
        job); the stuck collective was issued while the job ran, so it bounds the start too."""
        worker = [s for s in self.scans if not s.storage and s.source not in self.node_log_sources]
        moments = [m for s in worker if (m := self.clock.at(s.first_dated))]
        moments += [m for e in self.events if e.source not in self.node_log_sources and (m := self.at(e))]
        issued = collective_start(self.at(self.fired), self.verdict.timeout_ms)
        return min([*moments, *([issued] if issued else [])], default=None)

    @cached_property
    def node_log_sources(self) -> set[str]:
        """Kernel logs (dmesg, journal) among the inputs: they keep history from before the job.
        slurmstepd's word of a cgroup OOM kill sits in the job's own output, which is no kernel log."""
        found = {e.source for e in self.index.kind(*NODE_LOG_KINDS) if "slurmstepd" not in e.text}
        return found | {s.source for s in self.scans if s.source.endswith(NODE_LOG_NAMES)}

    def progressed_before(self, moment: datetime | None) -> bool:
        """Whether the job is known to have run collectives before `moment` (or at all): ranks that
        completed work, or a failure well after the job started."""
        done = [s.completed or 0 for s in self.states.values()] + [s.seq or 0 for s in self.states.values()]
        if max(done, default=0) >= _PROGRESS_WORK:
            return True
        return moment is not None and self.started is not None and moment - self.started >= _PROGRESS_TIME

    @cached_property
    def launch(self) -> Event | None:
        """The launch line that asks for the most nodes (`--nnodes=2`, `num_nodes=4`), if any."""
        return max(self.index.kind("launch_nodes"), key=lambda e: int(e.fields["nodes"]), default=None)

    @property
    def launched_nodes(self) -> int:
        return int(self.launch.fields["nodes"]) if self.launch else 0

    @cached_property
    def shared_hostnames(self) -> dict[tuple[str, str], dict[str, Event]]:
        """(hostname, interface) → the addresses NCCL bootstrapped from under that one name, where
        there are several: machines the logs call by one hostname (rules/hosts.py)."""
        addresses: dict[tuple[str, str], dict[str, Event]] = {}
        for event in self.index.kind("net_addr"):
            if event.node and "iface" in event.fields:
                addresses.setdefault((event.node, event.fields["iface"]), {}).setdefault(
                    event.fields["addr"], event
                )
        return {key: found for key, found in addresses.items() if len(found) > 1}

    @cached_property
    def versions(self) -> dict[str, dict[str, str]]:
        return node_versions(self.index.by_kind, self.topology)

    def node_of(self, rank: int | None) -> str | None:
        return self.topology.node_of(rank)

    def nodes_of(self, ranks: Iterable[int]) -> list[str]:
        return sorted({n for r in ranks if (n := self.topology.node_of(r))})

    def node_of_line(self, event: Event) -> str | None:
        return self.topology.node_of_line(event)

    def nodes_of_lines(self, events: Iterable[Event]) -> list[str]:
        return sorted({n for e in events if (n := self.node_of_line(e))})

    def at(self, event: Event | None) -> datetime | None:
        return self.clock.at(event.stamp) if event is not None else None

    def first(self, events: Iterable[Event]) -> Event | None:
        return earliest(events, self.clock)


def build_incident(
    scans: list[FileScan], skipped: list[SkippedInput], sources: Sequence[EvidenceSource] = ()
) -> Incident:
    """Topology, clock, rank states, verdict and index, each computed once."""
    events = [event for scan in scans for event in scan.events]
    _one_machine_local_ranks(scans, events)
    by_kind: dict[str, list[Event]] = {}
    for event in events:
        by_kind.setdefault(event.kind, []).append(event)
    topology = build_topology(scans, by_kind)
    _fill_nodes(events, topology)
    index = EventIndex(events)
    clock = Clock(scans)
    states = build_rank_states(index.kind(*_STATE_KINDS))
    for source in sources:
        source.amend(states, topology)
    seen = set(index.by_rank) | set(topology.rank_node)
    reading = assess_reading(scans, skipped, topology, seen)
    seen |= reading.unattributed_ranks
    for source in sources:  # counted as read and present, but a skipped dump leaves no log unread
        reading.files_read += source.files_read
        reading.skipped += source.skipped
        seen |= source.ranks
    verdict = classify(states, topology.world, seen, unread=reading.unread_ranks, known=topology.world_known)
    return Incident(scans, index, topology, clock, states, verdict, reading, sources)


def _one_machine_local_ranks(scans: list[FileScan], events: list[Event]) -> None:
    """On one machine, a worker's local rank is its global rank (`torch.multiprocessing.spawn`:
    `process 1 terminated with signal SIGKILL`): used only when no line names a global rank, a
    launcher label, a second host or a launch across several nodes."""
    hosts = {host for scan in scans if not scan.storage for host in scan.hosts}
    if len(hosts) > 1 or any(
        e.rank is not None or "task" in e.fields or (e.kind == "launch_nodes" and int(e.fields["nodes"]) > 1)
        for e in events
    ):
        return
    for event in events:
        if "local_rank" in event.fields:
            event.rank = int(event.fields["local_rank"])
            event.fields["rank_from"] = "local_rank"


def rules_of(incident: Incident, base: Sequence[Rule]) -> list[Rule]:
    """The built-in rules, then each evidence source's own."""
    return [*base, *(rule for source in incident.sources for rule in source.rules)]


NODE_LOG_KINDS = ("xid", "sxid", "fell_off_bus", "oom_killed")
_PROGRESS_WORK = 10  # collectives completed: past the barriers of start-up
_PROGRESS_TIME = timedelta(minutes=5)
_STATE_KINDS = (
    "wd_timeout",
    "wd_status",
    "dump_first",
    "dump_observed",
    "dump_received",
    "work_update",
    "async_error",
)


def _fill_nodes(events: list[Event], topology: Topology) -> None:
    """Give every event a node (its rank's host, or a host its path names) and, for node-level
    lines, the rank behind them: the process id an OOM kill or exit names, the GPU bus an Xid names."""
    hosts = sorted(topology.nodes)
    for event in events:
        if event.node is None:
            event.node = topology.node_of(event.rank) or _host_in_path(event.source, hosts)
        if event.rank is None and event.node is not None:
            event.rank = _rank_behind(event, event.node, topology)


def _rank_behind(event: Event, node: str, topology: Topology) -> int | None:
    fields = event.fields
    pid = fields.get("pid") or fields.get("block_pid")
    if pid and pid.isdigit():
        return topology.pid_rank.get((node, int(pid)))
    if "bdf" in fields:
        return topology.bus_rank.get((node, pci_bus(fields["bdf"])))
    return None


def _host_in_path(source: str, hosts: list[str]) -> str | None:
    for part in source.replace("\\", "/").split("/"):
        stem = part.split(".", 1)[0]
        if stem in hosts:
            return stem
        for host in hosts:
            if host in part:
                return host
    return None
