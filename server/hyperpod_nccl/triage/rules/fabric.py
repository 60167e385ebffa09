"""A fabric that never worked is a configuration, not a broken link (issue 16 item 2).

Transport errors — IB/RoCE completions, libfabric/EFA completions — on the fabric's first use,
before any collective is known to have completed, mean the nodes could never talk over it: a RoCE
GID index or routing, a security group without its self-referencing rule, GPUDirect RDMA or a
provider setting. Seen on every node at once, that is all the more certain. The same errors after
the job had been running are a link, a NIC or a switch.

A job across nodes whose NCCL gave up before any collective completed, with no line saying why
(only the watchdog taking the process down: NCCL_DEBUG was off), failed at first contact between
the nodes too: the transport NCCL picked does not work there (verbs probed on hosts without a
usable IB/RoCE fabric, the socket interface). A guess, labelled one.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Group, Incident
from hyperpod_nccl.triage.root_cause import Candidate
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed
from hyperpod_nccl.triage.rules.unknown import abnormal_events

_FABRIC_ERRORS = frozenset(
    {"triage.network.transport_error", "triage.network.ib_retry_exceeded", "triage.network.ib_completion"}
)


def never_worked(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id not in _FABRIC_ERRORS or incident.progressed_before(candidate.when):
        return
    nodes = set(incident.nodes_of_lines(group.events))
    everywhere = len(nodes) >= 2 and nodes >= set(incident.topology.nodes)
    # A paste that starts at the error shows nothing of the job before it: first use is then a guess.
    first = candidate.first
    shown_before = first is not None and any(
        e.source == first.source and e.line < first.line for e in incident.index.events
    )
    settings = (
        "the nodes never talked over the fabric (RoCE GID index or routing, MTUs that differ between nodes, "
        "security group self rule, GPUDirect RDMA or provider settings)"
    )
    candidate.category = Category.CONFIG
    if shown_before or everywhere:
        candidate.title = (
            f"{group.meaning.title}{' on every node' if everywhere else ''} before any collective completed: "
            f"{settings}, not one bad link"
        )
        candidate.confidence = "medium"
    else:
        candidate.title = (
            f"{group.meaning.title}, with nothing before it in the input: perhaps {settings}, perhaps one "
            "bad link or NIC: the lines before it (did a collective complete?) and the other nodes' logs tell"
        )
        candidate.confidence = "low"
    candidate.ranks, candidate.nodes = [], []  # a setting shared by the job, not one node's fault


FIRST_CONTACT_ID = "triage.config.first_contact"
_SAYS_NOTHING = frozenset({"take_down", "nccl_aborted", "wd_frame", "sigterm", "worker_exit"})
_FIRST_CONTACT_WEIGHT = 30  # below anything a line names


def failed_at_first_contact(incident: Incident) -> Outcome:
    primary, following = abnormal_events(incident)
    if primary or not following or any(e.kind not in _SAYS_NOTHING for e in following):
        return Outcome()
    first = incident.first(following)
    across_nodes = incident.launched_nodes > 1 or len(incident.topology.nodes) > 1
    trained = incident.index.kind("progress") or incident.progressed_before(incident.at(first))
    if first is None or not across_nodes or trained:
        return Outcome()
    witnesses = [e for e in (incident.launch, first) if e is not None]
    finding = Finding(
        id=FIRST_CONTACT_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title="NCCL gave up before any collective completed in a job across nodes, and no line says why",
        reference="multinode.md § 2",
        detail="A failure at first contact between nodes is most often the transport NCCL picked: verbs "
        "probed on hosts without a usable IB/RoCE fabric (a rerun with NCCL_IB_DISABLE=1 that works tells), "
        "or a socket interface the other nodes cannot reach. Rerun with NCCL_DEBUG=INFO to see which.",
        evidence=[evidence(e, incident.topology) for e in witnesses],
    )
    return blamed(
        incident,
        finding,
        category=Category.CONFIG,
        weight=_FIRST_CONTACT_WEIGHT,
        title="NCCL failed at first contact between nodes (most often an IB/RoCE fabric NCCL cannot use, or "
        "the socket interface); no line names the call",
        ranks=[],
        first=first,
        confidence="low",
        nodes=[],
    )
