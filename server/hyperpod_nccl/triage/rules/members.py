"""Logs that stop during initialisation, with nothing after: fewer processes than the world size
announced themselves, or NCCL began setting up its communicator and never said it was done.

Lightning prints one `MEMBER: m/N` line per process as it joins the process group, then waits
until all N have. When the logs hold fewer members than N and no line of any later phase (a
step, a collective, an error), the missing processes never started: a launcher that started one
node's processes only (`sbatch` running `python` without `srun`, `--ntasks` or `num_nodes` not
matching), or nodes that could not start them.

NCCL at INFO level prints its version as it starts and `Init COMPLETE` once the communicator is
up; with the first and not the second, and nothing later, the job hung while connecting: peer
access between GPUs on the node (IOMMU / PCIe ACS, `NCCL_P2P_DISABLE=1` tells) or the network to
the other nodes.

Older NCCL says `Call to connect returned Connection refused, retrying` once per thousand refused
attempts (about a second each): a peer that was not listening yet. A few, then `Init COMPLETE`, is
a normal start; a run of them with no communicator after is a group that never formed because the
address dialled had no listener (nodes launched as separate jobs, an interface whose address every
host shares, or a peer that exited).
"""

from __future__ import annotations

from collections import Counter

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.events import AGAIN, Event
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

MEMBERS_ID = "triage.config.members_missing"
INIT_STALLED_ID = "triage.config.nccl_init_stalled"
FORMING_STALLED_ID = "triage.rendezvous.forming_stalled"
BOOTSTRAP_REFUSED_ID = "triage.config.bootstrap_refused"
_WEIGHT = 52  # below any failure a line names: those say why the others are missing
_LATER_PHASE = ("progress", "wd_timeout", "wd_status", "traceback", "exception", "init_complete")


def members_missing(incident: Incident) -> Outcome:
    members = incident.index.kind("ddp_member")
    if not members:
        return Outcome()
    world = max(int(e.fields["world"]) for e in members)
    joined = {int(e.fields["global_rank"]) for e in members}
    if len(joined) >= world or incident.index.kind(*_LATER_PHASE):
        return Outcome()
    last = max(members, key=lambda e: (e.source, e.line))
    announced = Counter[int]()
    for event in members:
        if AGAIN not in event.fields:  # its count already holds the line kept again
            announced[int(event.fields["global_rank"])] += event.count
    twice = sorted(rank for rank, times in announced.items() if times > 1)
    quoted = [min(members, key=lambda e: (e.source, e.line)), last]
    title = f"Only {len(joined)} of {world} processes joined the process group, and the logs stop there"
    detail = (
        "The others never announced themselves: they were not started (a batch script running "
        "python without srun, --ntasks / num_nodes / devices not matching the world size) or could "
        "not start on their nodes. The processes that did start wait at init until the timeout."
    )
    if twice:
        quoted = sorted(
            (e for e in members if int(e.fields["global_rank"]) == twice[0]), key=lambda e: (e.source, e.line)
        )[:2]
        title = (
            f"Global ranks {compress(twice)} joined twice and {world - len(joined)} of {world} never: "
            "several nodes took the same node rank"
        )
        detail = (
            "Two processes announced each of these global ranks, so the higher ranks were never filled "
            "and every process waits at init. Each node computed node rank 0: the launcher started one "
            "task per node and the framework spawned the local processes itself (srun without "
            "--ntasks-per-node equal to the GPUs per node), or NODE_RANK / --node_rank was not set per node."
        )
    finding = Finding(
        id=MEMBERS_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title=title,
        reference="debugging-guide.md § 7",
        detail=detail,
        evidence=[evidence(e, incident.topology) for e in quoted],
    )
    return blamed(
        incident,
        finding,
        category=Category.CONFIG,
        weight=_WEIGHT,
        title=finding.title,
        ranks=[],
        first=last,
        confidence="medium",
    )


def nccl_init_stalled(incident: Incident) -> Outcome:
    started = incident.index.kind("nccl_version")
    at_info_level = incident.index.kind("net_addr")  # NCCL's bootstrap lines: NCCL_DEBUG=INFO was on
    if not (started and at_info_level) or incident.index.kind(*_LATER_PHASE) or incident.groups:
        return Outcome()
    # Peer access is a property of the machine: a job on one node names it.
    only_node = list(incident.topology.nodes) if len(incident.topology.nodes) == 1 else []
    return _logs_stop_here(
        incident,
        INIT_STALLED_ID,
        "NCCL began setting up its communicator and never logged Init COMPLETE: the logs stop there",
        reference="debugging-guide.md § 19",
        detail="With NCCL_DEBUG=INFO every rank prints `Init COMPLETE` once connected. A hang here is "
        "usually peer access between the GPUs of a node (IOMMU or PCIe ACS: rerun with NCCL_P2P_DISABLE=1 "
        "to tell) or the network to the other nodes.",
        began=incident.first(started),
        last=max(incident.events, key=lambda e: (e.source, e.line)),
        category=Category.CONFIG,
        weight=40,
        nodes=only_node,
    )


def bootstrap_refused(incident: Incident) -> Outcome:
    retries = incident.index.kind("connect_refused_retry")
    refused = [e for e in retries if "refused" in e.fields["why"].lower()]
    if not refused or incident.index.kind("init_complete", "progress", "wd_timeout", "wd_status"):
        return Outcome()
    rounds = sum(e.count for e in refused)
    nodes = sorted({e.node for e in refused if e.node})
    dialling = f" from {', '.join(nodes[:3])}" if nodes else ""
    return _logs_stop_here(
        incident,
        BOOTSTRAP_REFUSED_ID,
        f"NCCL's connections{dialling} were refused for about {rounds} s ({rounds} retry lines) "
        "and the communicator never came up: nothing listened at the address the peers were given",
        reference="debugging-guide.md § 7",
        detail="Each `Call to connect returned Connection refused, retrying` line stands for about a "
        "second of refused attempts. The peer's address answered but nothing listened there: nodes "
        "started as separate jobs (world size or node rank not given per node, so each node forms its own "
        "group), an interface whose address every host shares (docker0, virbr0) chosen for NCCL's "
        "sockets, or a peer that exited. Check that every node starts with the same world size, "
        "MASTER_ADDR and MASTER_PORT and its own node rank, and pin NCCL_SOCKET_IFNAME to the interface "
        "the nodes reach each other on.",
        began=incident.first(refused),
        last=max(refused, key=lambda e: (e.source, e.line)),
        category=Category.CONFIG,
        weight=44,  # above a bare init stall (40): it says why the communicator did not come up
    )


def process_group_stalled(incident: Incident) -> Outcome:
    """The framework began forming the process group and nothing later shows: where a hung job's
    paste ends when the processes never all meet (NCCL at INFO level and Lightning say more, above)."""
    forming = incident.index.kind("pg_forming")
    later = incident.index.kind(*_LATER_PHASE, "ddp_member", "nccl_version", "pg_formed")
    if not forming or later or incident.groups:
        return Outcome()
    return _logs_stop_here(
        incident,
        FORMING_STALLED_ID,
        "The processes began forming the process group and the logs stop there",
        reference="debugging-guide.md § 7",
        detail="Nothing after the process-group setup: if the job hung here, the processes never all met. "
        "Check that every node started its processes and that all use one MASTER_ADDR, one MASTER_PORT "
        "(a port of 0 or one differing per node never meets) and one world size.",
        began=incident.first(forming),
        last=max(forming, key=lambda e: (e.source, e.line)),
        category=Category.RENDEZVOUS,
        weight=36,
    )


def _logs_stop_here(
    incident: Incident,
    id_: str,
    title: str,
    *,
    reference: str,
    detail: str,
    began: Event | None,
    last: Event,
    category: Category,
    weight: int,
    nodes: list[str] | None = None,
) -> Outcome:
    """A phase that began and never ended, where the logs stop: a warning, and a low-confidence
    guess at the cause when nothing else explains the run."""
    finding = Finding(
        id=id_,
        status=Status.WARN,
        priority=Priority.P1,
        title=title,
        reference=reference,
        detail=detail,
        nodes=nodes or [],
        evidence=[evidence(e, incident.topology) for e in _distinct(began, last)],
    )
    return blamed(
        incident,
        finding,
        category=category,
        weight=weight,
        title=title,
        ranks=[],
        first=last,
        confidence="low",
        nodes=nodes,
    )


def _distinct(*events: Event | None) -> list[Event]:
    return [e for i, e in enumerate(events) if e is not None and all(e is not o for o in events[:i])]
