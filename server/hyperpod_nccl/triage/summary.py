"""The job summary: framework, world size, nodes, rank → node map, resume, versions per node.

Identity comes from lines that carry both a rank and a host (NCCL's `host:pid:tid [dev]` prefix
under `[rankN]:` or srun `--label`), NCCL's `Init COMPLETE` line, files written by one rank on one
host, and torchrun's failure report.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hyperpod_nccl.models import JobSummary, VersionGroup
from hyperpod_nccl.rankset import MAX_RANKS, compress, expand
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.patterns import nccl_release

if TYPE_CHECKING:
    from hyperpod_nccl.triage.model import Incident

ByKind = Mapping[str, list[Event]]

_FRAMEWORK_ORDER = (
    "NeMo",
    "Megatron-LM",
    "PyTorch Lightning",
    "DeepSpeed",
    "Horovod",
    "Accelerate",
    "torchrun",
)
_MAP_LINES = 8  # rank-map lines listed before the summary says "and N more"
_NAMED_NODES = 6
_TORCH_WORDING = (  # (text in a watchdog line, PyTorch generation that prints it) — log-formats.md §1
    ("failure detected by watchdog", "≥2.6 (from log wording)"),
    ("Exception (either an error or timeout)", "2.4–2.5 (from log wording)"),
    ("Timeout at NCCL work", "2.3 (from log wording)"),
)


@dataclass
class Topology:
    rank_node: dict[int, str] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    world_size: int | None = None
    world_known: bool = False  # said by a line (process group size, nranks), not inferred from ranks seen
    pid_rank: dict[tuple[str, int], int] = field(default_factory=dict)
    bus_rank: dict[tuple[str, str], int] = field(default_factory=dict)
    addr_node: dict[str, str] = field(default_factory=dict)  # IP address or EC2 instance id → node

    @property
    def world(self) -> list[int]:
        return list(range(self.world_size)) if self.world_size else sorted(self.rank_node)

    def node_of(self, rank: int | None) -> str | None:
        return self.rank_node.get(rank) if rank is not None else None

    def node_of_line(self, event: Event) -> str | None:
        """The node a line came from: the one its own prefix names, else its rank's."""
        return event.node or self.node_of(event.rank)


def build_topology(scans: Iterable[FileScan], by_kind: ByKind) -> Topology:
    topology = Topology()
    hosts: set[str] = set()
    for scan in scans:
        if scan.storage:
            continue
        hosts |= scan.hosts
        for rank, host in scan.rank_hosts.items():
            topology.rank_node.setdefault(rank, host)
        topology.pid_rank.update(scan.pid_ranks)
    sizes = [int(e.fields["size"]) for e in by_kind.get("pg_init", ())]
    sizes += [int(e.fields["nranks"]) for e in by_kind.get("comm_rank", ())]
    sizes += [int(e.fields["expected"]) for e in by_kind.get("rendezvous", ()) if "expected" in e.fields]
    sizes += [int(e.fields["world"]) for e in by_kind.get("ddp_member", ())]  # Lightning's `MEMBER: 3/8`
    sizes += [int(e.fields["world"]) for e in by_kind.get("accelerate_world", ())]
    world = max((size for size in sizes if size <= MAX_RANKS), default=0)
    _learn_from_lines(topology, by_kind, world)
    ranks_seen = {e.rank for events in by_kind.values() for e in events if e.rank is not None}
    ranks_seen = {rank for rank in ranks_seen | set(topology.rank_node) if 0 <= rank < MAX_RANKS}
    topology.world_size = world or (max(ranks_seen) + 1 if ranks_seen else None)
    topology.world_known = bool(world)
    topology.nodes = sorted(hosts | set(topology.rank_node.values()))
    for address, node in addresses_of_hosts(topology.nodes).items():
        topology.addr_node.setdefault(address, node)
    return topology


def _learn_from_lines(topology: Topology, by_kind: ByKind, world: int) -> None:
    """NCCL's Init COMPLETE (rank, host, GPU bus), srun's task lists, and the store's address."""
    for event in by_kind.get("comm_rank", ()):
        fields = event.fields
        if event.node and int(fields["nranks"]) == world:
            rank = int(fields["comm_rank"])
            topology.rank_node.setdefault(rank, event.node)
            topology.bus_rank.setdefault((event.node, pci_bus(fields["bus_id"], nccl=True)), rank)
    for event in by_kind.get("srun_task", ()):
        if "host" in event.fields:
            for rank in srun_tasks(event.fields["tasks"]):
                topology.rank_node.setdefault(rank, event.fields["host"])
    for event in by_kind.get("net_addr", ()):
        if event.node:
            topology.addr_node.setdefault(event.fields["addr"], event.node)
    for event in by_kind.get("transport_error", ()):
        if event.node and (own := _OWN_INSTANCE.search(event.text)):
            topology.addr_node.setdefault(own.group(1), event.node)
    masters = [e.fields["master"] for e in by_kind.get("rendezvous", ()) if "master" in e.fields]
    if masters and 0 not in topology.rank_node:
        topology.rank_node[0] = masters[0].split(".", 1)[0]  # MASTER_ADDR is rank 0's host


_OWN_INSTANCE = re.compile(r"My host id: (i-[0-9a-f]+)")
_EC2_HOST = re.compile(r"^ip-(\d+)-(\d+)-(\d+)-(\d+)$")


def addresses_of_hosts(nodes: Iterable[str]) -> dict[str, str]:
    """EC2 host names carry their private address: `ip-10-1-2-3` is 10.1.2.3."""
    return {".".join(m.groups()): node for node in nodes if (m := _EC2_HOST.match(node))}


def srun_tasks(text: str) -> list[int]:
    """srun's task list (`0-6,8`); empty when it is not one."""
    try:
        return expand(text.replace(" ", ""))
    except ValueError:
        return []


def pci_bus(text: str, *, nccl: bool = False) -> str:
    """The PCI bus of a GPU: NCCL prints `busId a8000`, the driver `0000:a8:00` or `0000:a8:00.0`."""
    if nccl and ":" not in text:
        return text[:-3].lower().zfill(2)
    parts = text.split(":")
    return parts[1].lower() if len(parts) >= 3 else parts[0].lower()


def job_summary(
    incident: Incident,
    job_id: str | None = None,
    culprit_nodes: Iterable[str] = (),
    other_jobs: tuple[str, ...] = (),
) -> JobSummary:
    """Call after the timeline is built: the clock's notes say which stamps were dated. The rank map
    lists the culprits' nodes first, so a trimmed map still shows them."""
    topology = incident.topology
    per_node = _ranks_per_node(topology)
    first = [node for node in culprit_nodes if node in per_node]
    per_node = {node: per_node[node] for node in [*first, *(n for n in per_node if n not in first)]}
    counts = Counter(len(ranks) for ranks in per_node.values())
    shared = incident.shared_hostnames
    return JobSummary(
        framework=_framework(incident.scans, incident.index.by_kind),
        world_size=topology.world_size,
        world_size_stated=topology.world_known if topology.world_size is not None else None,
        nodes=len(topology.nodes) + sum(len(found) - 1 for found in shared.values()),
        ranks_per_node=counts.most_common(1)[0][0] if counts else None,
        rank_map=[f"{node}: {compress(ranks)}" for node, ranks in list(per_node.items())[:_MAP_LINES]],
        rank_map_note=_map_note(per_node),
        versions=version_groups(incident.versions),
        notes=[
            *_several_jobs(other_jobs, job_id),
            *_nodes_not_in_input(incident),
            *_ranks_not_in_input(incident),
            *_machines_behind_one_name(shared),
            *incident.clock.notes(),
        ],
        job_id=job_id,
    )


def _several_jobs(jobs: tuple[str, ...], job_id: str | None) -> list[str]:
    """Files or lines of more than one job: they are triaged as one, which they were not."""
    if not jobs:
        return []
    listed = ", ".join(jobs[:6]) + (", …" if len(jobs) > 6 else "")
    return [
        f"The input holds {len(jobs)} jobs ({listed}) by its file names and lines, read as one "
        f"(job {job_id}): check which job this is, and triage each job's files on their own."
    ]


def _nodes_not_in_input(incident: Incident) -> list[str]:
    """The launcher was told more nodes than the input holds lines from: the others' logs are missing."""
    launch, asked, seen = incident.launch, incident.launched_nodes, len(incident.topology.nodes)
    if launch is None or asked <= max(seen, 1):
        return []
    return [
        f"The launch asks for {asked} nodes ({launch.source}:{launch.line}); the input holds lines from "
        f"{seen or 'no named'} "
        f"node{'s' if seen != 1 else ''}: add the other nodes' logs and triage again."
    ]


def _ranks_not_in_input(incident: Incident) -> list[str]:
    """Ranks of the job's world that left no line: what they did is not in the input. Where ranks
    have NCCL states, the rank-state groups name the absent ones (`classify`); ranks whose files
    were only partly read have the reading's caveat."""
    topology, seen = incident.topology, incident.ranks_seen
    if incident.states or not seen or topology.world_size is None:
        return []
    unread = incident.reading.unread_ranks
    missing = [rank for rank in topology.world if rank not in seen and rank not in unread]
    if not missing:
        return []
    how = "a line states it" if topology.world_known else "inferred from the highest rank seen"
    who = f"Rank {missing[0]}" if len(missing) == 1 else f"Ranks {compress(missing)}"
    return [
        f"{who} of {topology.world_size} ({how}) left no line in the input: add their logs to see what "
        "they did."
    ]


def _machines_behind_one_name(shared: dict[tuple[str, str], dict[str, Event]]) -> list[str]:
    return [
        f"{host} names {len(found)} machines ({iface} {', '.join(found)}): counted as {len(found)} nodes, "
        "whose ranks the logs cannot tell apart."
        for (host, iface), found in sorted(shared.items())
    ]


def _ranks_per_node(topology: Topology) -> dict[str, list[int]]:
    per_node: dict[str, list[int]] = {}
    for rank, node in sorted(topology.rank_node.items()):
        per_node.setdefault(node, []).append(rank)
    return dict(sorted(per_node.items(), key=lambda item: item[1][0]))


def _map_note(per_node: dict[str, list[int]]) -> str | None:
    if len(per_node) <= _MAP_LINES:
        return None
    sizes = {len(ranks) for ranks in per_node.values()}
    contiguous = all(ranks == list(range(ranks[0], ranks[0] + len(ranks))) for ranks in per_node.values())
    layout = (
        f"each node holds {sizes.pop()} contiguous ranks" if contiguous and len(sizes) == 1 else "irregular"
    )
    return f"{len(per_node) - _MAP_LINES} more nodes not listed; {layout}."


def _framework(scans: list[FileScan], by_kind: ByKind) -> str | None:
    found = set().union(*(scan.frameworks for scan in scans)) if scans else set()
    if any("local_rank" in e.fields for events in by_kind.values() for e in events):
        found.add("torchrun")
    if "ddp_member" in by_kind:  # only Lightning announces `GLOBAL_RANK: r, MEMBER: m/N`
        found.add("PyTorch Lightning")
    for name in _FRAMEWORK_ORDER:
        if name in found:
            return name if name != "torchrun" else "PyTorch (torchrun)"
    return "PyTorch" if any(kind in by_kind for kind in ("pg_init", "wd_timeout", "wd_status")) else None


UNNAMED_NODE = ""  # the machine of a paste whose lines name none
_VERSION_KINDS = (
    "nccl_version",
    "nccl_error",
    "remote_exit",
    "ofi_version",
    "torch_version",
    "wd_status",
    "wd_timeout",
)


def node_versions(by_kind: ByKind, topology: Topology) -> dict[str, dict[str, str]]:
    """torch / nccl / aws_ofi_nccl per node, from banners, NCCL errors and the watchdog's wording."""
    versions: dict[str, dict[str, str]] = {}
    unnamed: dict[str, dict[str, str]] = {}  # a paste that names no node at all: its one machine, ""
    for event in (e for kind in _VERSION_KINDS for e in by_kind.get(kind, ())):
        node = topology.node_of_line(event)
        found = versions.setdefault(node, {}) if node is not None else unnamed.setdefault(UNNAMED_NODE, {})
        if event.kind in ("nccl_version", "nccl_error", "remote_exit") and "version" in event.fields:
            found.setdefault("nccl", nccl_release(event.fields["version"]))
        elif event.kind == "ofi_version":
            found.setdefault("aws_ofi_nccl", event.fields["version"].removesuffix("-aws").removesuffix("aws"))
        elif event.kind == "torch_version":
            found["torch"] = event.fields["version"]
        elif event.kind in ("wd_status", "wd_timeout") and "torch" not in found:
            found["torch_wording"] = next((gen for text, gen in _TORCH_WORDING if text in event.text), "")
    if not versions:
        versions = unnamed
    for found in versions.values():
        wording = found.pop("torch_wording", "")
        if "torch" not in found and wording:
            found["torch"] = wording
    return versions


def version_groups(versions: dict[str, dict[str, str]]) -> list[VersionGroup]:
    by_versions: dict[tuple[str | None, ...], list[str]] = {}
    for node, found in sorted(versions.items()):
        key = (found.get("torch"), found.get("nccl"), found.get("aws_ofi_nccl"))
        by_versions.setdefault(key, []).append(node)
    groups = sorted(by_versions.items(), key=lambda item: -len(item[1]))
    return [
        VersionGroup(
            node_count=len(nodes),
            nodes=[n for n in nodes[:_NAMED_NODES] if n != UNNAMED_NODE]
            if index or len(nodes) <= _NAMED_NODES
            else [],
            torch=key[0],
            nccl=key[1],
            aws_ofi_nccl=key[2],
        )
        for index, (key, nodes) in enumerate(groups)
        if any(key)
    ]
