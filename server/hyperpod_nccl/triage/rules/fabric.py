"""A fabric that never worked is a configuration, not a broken link (issue 16 item 2).

Transport errors — IB/RoCE completions, libfabric/EFA completions — on the fabric's first use,
before any collective is known to have completed, mean the nodes could never talk over it: a RoCE
GID index or routing, a security group without its self-referencing rule, GPUDirect RDMA or a
provider setting. Seen on every node at once, that is all the more certain. The same errors after
the job had been running are a link, a NIC or a switch.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category
from hyperpod_nccl.triage.model import Group, Incident
from hyperpod_nccl.triage.root_cause import Candidate

_FABRIC_ERRORS = frozenset(
    {"triage.network.transport_error", "triage.network.ib_retry_exceeded", "triage.network.ib_completion"}
)


def never_worked(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id not in _FABRIC_ERRORS or incident.progressed_before(candidate.when):
        return
    nodes = {e.node or incident.node_of(e.rank) for e in group.events} - {None}
    everywhere = len(nodes) >= 2 and nodes >= set(incident.topology.nodes)
    candidate.category = Category.CONFIG
    candidate.title = (
        f"{group.meaning.title}{' on every node' if everywhere else ''} before any collective completed: "
        "the nodes never talked over the fabric (RoCE GID index or routing, MTUs that differ between nodes, "
        "security group self rule, GPUDirect RDMA or provider settings), not one bad link"
    )
    candidate.confidence = "medium"
    candidate.ranks, candidate.nodes = [], []  # a setting shared by the job, not one node's fault
