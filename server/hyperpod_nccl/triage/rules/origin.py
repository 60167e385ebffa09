"""Where a failure began (issue 16 item 4): culprits name the origin, not everyone affected.

The catalogue proposes, for each meaning, the ranks whose lines carry it. Some families know
better, and each says so here in one small function over the candidate, its events and the
incident:

- a spawned child's truncated start-up pickle is its killed parent's doing, not corrupt data;
- job-wide events (a time limit, a cancellation) blame nobody; node-level ones the whole node;
- a store that timed out blames the ranks still installing packages, or the rank everyone
  waited on for the ncclUniqueId;
- torchrun's ChildFailedError names the first observed failure under "Root Cause": that rank,
  not every rank that was torn down after it;
- PyTorch's collective fingerprints, compared per sequence number, name the minority;
- fabric errors name the node the peers point at (their remote addresses and peer instance
  ids), else the node whose errors came first, not every node that logged one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

from hyperpod_nccl.models import Category
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import JOB_WIDE_IDS, NODE_LEVEL_IDS, exit_code
from hyperpod_nccl.triage.findings import event_ranks
from hyperpod_nccl.triage.model import Group, Incident
from hyperpod_nccl.triage.root_cause import Candidate

Refiner = Callable[[Candidate, Group, Incident], None]

FABRIC_IDS = frozenset(
    {
        "triage.network.transport_error",
        "triage.network.ib_retry_exceeded",
        "triage.network.ib_completion",
        "triage.network.remote_error",
        "triage.config.ib_local_protection",
        "triage.config.net_size_mismatch",
        "triage.config.socket_connect",
    }
)
_FIRST_FAILURE_IDS = frozenset({"triage.host.sigkill", "triage.unknown.segfault", "triage.host.oom_killed"})
_LATE_SETUP = "triage.rendezvous.late_setup"
_CLEARLY_FIRST = timedelta(seconds=1)
# Events that name the other end of a failed connection.
_POINTING_KINDS = ("ib_completion", "socket_closed", "socket_connect", "transport_error", "net_size_mismatch")
_PEER_INSTANCE = re.compile(r"Peer host id: (i-[0-9a-f]+)")
_PEER_ADDRESS = re.compile(r"^\[?(?:::ffff:)?([^<%\]]+?)\]?(?:%\w+)?(?:<\d+>)?$")


def _job_wide(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id in JOB_WIDE_IDS:
        candidate.ranks, candidate.nodes = [], []


def _node_level(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id in NODE_LEVEL_IDS and not candidate.ranks:
        candidate.ranks = sorted(
            r for r, node in incident.topology.rank_node.items() if node in candidate.nodes
        )


def _store(candidate: Candidate, group: Group, incident: Incident) -> None:
    """Ranks still installing packages never reached the store; a rank every other rank waited on
    for the ncclUniqueId never published it."""
    if group.meaning.category != Category.RENDEZVOUS:
        return
    late = incident.groups.get(_LATE_SETUP)
    ranks = sorted(set().union(*(event_ranks(e) for e in late.events))) if late else []
    if not ranks:
        events = [
            e for g in incident.groups.values() if g.meaning.category == Category.RENDEZVOUS for e in g.events
        ]
        ranks = sorted({int(e.fields["root"]) for e in events if "root" in e.fields})
    candidate.ranks = ranks or candidate.ranks
    candidate.nodes = incident.nodes_of(candidate.ranks) or candidate.nodes


def _first_observed(candidate: Candidate, group: Group, incident: Incident) -> None:
    """torchrun lists every failed worker but names the first one under "Root Cause"."""
    if group.meaning.id not in _FIRST_FAILURE_IDS:
        return
    first = {
        r for e in incident.index.kind("worker_exit") if e.fields.get("first_failure") for r in event_ranks(e)
    }
    named = first & set(candidate.ranks)
    if named:
        candidate.ranks = sorted(named)
        candidate.nodes = incident.nodes_of(named) or candidate.nodes


# --- collective fingerprints ---------------------------------------------------------------------

_RUNNING = re.compile(r"Rank (\d+) is running (?:inconsistent )?collective: ")
_SEQ = re.compile(r"SequenceNumber=(\d+)")
_OP = re.compile(r"OpType=(\w+)|^(\w+)")
_SHAPE = re.compile(r"TensorShape=\[([^\]]*)\]")


def fingerprints(text: str) -> dict[int, tuple[str | None, str | None, str | None]]:
    """Rank → (sequence number, op, shape) for every `Rank N is running collective: …` in a line."""
    found = {}
    matches = list(_RUNNING.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        part = text[match.end() : end].removeprefix("CollectiveFingerPrint(")
        seq, op, shape = _SEQ.search(part), _OP.search(part), _SHAPE.search(part)
        found[int(match.group(1))] = (
            seq.group(1) if seq else None,
            (op.group(1) or op.group(2)) if op else None,
            shape.group(1) if shape else None,
        )
    return found


def _fingerprint_minority(candidate: Candidate, group: Group, incident: Incident) -> None:
    """Every rank that reports a mismatch is a witness; the culprits are the ranks whose collective
    differs from what most ranks ran at the same sequence number, when most ranks agree."""
    if group.meaning.id != "triage.nccl.pg_detected_mismatch":
        return
    by_seq: dict[str | None, dict[int, tuple[str | None, str | None]]] = {}
    for event in group.events:
        for rank, (seq, op, shape) in fingerprints(event.text).items():
            by_seq.setdefault(seq, {}).setdefault(rank, (op, shape))
    minority: set[int] = set()
    for ranks in by_seq.values():
        counts = Counter(ranks.values())
        (majority, most), *rest = counts.most_common()
        if rest and most >= 2 and most > rest[0][1]:
            minority |= {r for r, signature in ranks.items() if signature != majority}
    candidate.ranks = sorted(minority)
    candidate.nodes = incident.nodes_of(minority)


# --- fabric: who the peers point at ----------------------------------------------------------------


def peer_node(event: Event, incident: Incident) -> str | None:
    """The node at the other end of a failed connection, when the line names it and it is known."""
    addresses = incident.topology.addr_node
    if instance := _PEER_INSTANCE.search(event.text):
        return addresses.get(instance.group(1))
    peer = event.fields.get("peer")
    if not peer or not (match := _PEER_ADDRESS.match(peer)):
        return None
    address = match.group(1)
    short = address.split(".", 1)[0]
    return addresses.get(address) or (short if short in incident.topology.nodes else None)


def _fabric_origin(candidate: Candidate, group: Group, incident: Incident) -> None:
    """The node most peers point at; else the node whose errors clearly came first."""
    if group.meaning.id not in FABRIC_IDS:
        return
    pointed: dict[str, set[str]] = {}
    for event in incident.index.kind(*_POINTING_KINDS):
        target = peer_node(event, incident)
        reporter = incident.node_of_line(event)
        if target and target != reporter:
            pointed.setdefault(target, set()).add(reporter or f"{event.source}:{event.line}")
    origin = _most_pointed(pointed) or _first_node(group.events, incident)
    if origin is None:
        return
    on_node = {r for e in group.events if incident.node_of_line(e) == origin for r in event_ranks(e)}
    candidate.ranks = sorted(on_node) or sorted(
        r for r, n in incident.topology.rank_node.items() if n == origin
    )
    candidate.nodes = [origin]


def _crashed_peer(candidate: Candidate, group: Group, incident: Incident) -> None:
    """The rank that saw its peer's queue pair vanish survived: the origin is the peer, named by its
    host when the logs map it, else by the instance id the line gives, else unnamed."""
    if group.meaning.id != "triage.network.peer_crashed":
        return
    peers = {peer for e in group.events if (peer := peer_node(e, incident) or peer_instance(e.text))}
    candidate.nodes = sorted(peers)
    candidate.ranks = sorted(r for r, node in incident.topology.rank_node.items() if node in peers)


def peer_instance(text: str) -> str | None:
    """The EC2 instance at the other end of a failed EFA request (`Peer host id: i-…`)."""
    found = _PEER_INSTANCE.search(text)
    return found.group(1) if found else None


def _most_pointed(pointed: dict[str, set[str]]) -> str | None:
    if not pointed:
        return None
    ranked = sorted(pointed.items(), key=lambda item: -len(item[1]))
    best, reporters = ranked[0]
    if len(ranked) > 1 and len(ranked[1][1]) == len(reporters):
        return None  # peers point at several nodes equally: no single origin
    return best


def _first_node(events: list[Event], incident: Incident) -> str | None:
    firsts: dict[str, datetime] = {}
    for event in events:
        node = incident.node_of_line(event)
        moment = incident.at(event)
        if node and moment and (node not in firsts or moment < firsts[node]):
            firsts[node] = moment
    if len(firsts) < 2:
        return None
    (first, at), (_, next_at) = sorted(firsts.items(), key=lambda item: item[1])[:2]
    return first if next_at - at >= _CLEARLY_FIRST else None


# A process started with `spawn` reads its start-up state from its parent through a pipe; when the
# parent is killed mid-write the child sees the pickle end early. That is the kill, not the data.
_CUT_SHORT = ("pickle data was truncated", "Ran out of input")
_SIGKILLED = -9


def _cut_short_by_a_kill(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id != "triage.data.corrupt":
        return
    if not all(any(words in e.text for words in _CUT_SHORT) for e in group.events):
        return
    if any(exit_code(e) == _SIGKILLED for e in incident.index.kind("worker_exit")):
        candidate.weight = 0


ORIGIN_REFINERS: tuple[Refiner, ...] = (
    _cut_short_by_a_kill,
    _job_wide,
    _node_level,
    _store,
    _first_observed,
    _fingerprint_minority,
    _fabric_origin,
    _crashed_peer,
)
