"""Peer and bootstrap addresses: which cause an unreadable one has, and which interface a failed
bootstrap went over.

An unreadable peer address: which of its two causes the logs point at.

`ncclSocketInit: connecting to address with family N is neither AF_INET nor AF_INET6` says a rank
was handed an address that is no address. Either the job named an interface for NCCL's sockets
that the host does not have (the address was never filled in), or ranks load different NCCL or
network-plugin builds and read each other's handles in another layout. A run that set
NCCL_SOCKET_IFNAME makes the first the one to check; otherwise the builds are.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category
from hyperpod_nccl.triage.model import Group, Incident
from hyperpod_nccl.triage.root_cause import Candidate

_PEER_ADDRESS = "triage.software.peer_address_layout"
_BOOTSTRAP_SOCKET = "triage.config.bootstrap_socket"


def named_interface(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id != _PEER_ADDRESS:
        return
    named = sorted({e.fields["ifname"] for e in incident.index.by_kind.get("socket_ifname", ())})
    if not named:
        return
    candidate.category = Category.CONFIG
    candidate.title = (
        f"A peer's address was never filled in, and the job set NCCL_SOCKET_IFNAME={','.join(named[:3])}: "
        "that interface is missing on a host (or the ranks load different NCCL builds)"
    )
    candidate.confidence = "medium"


def bootstrap_interface(candidate: Candidate, group: Group, incident: Incident) -> None:
    """A bootstrap that failed in NCCL's socket code: the interface NCCL chose, where a line says."""
    if group.meaning.id != _BOOTSTRAP_SOCKET:
        return
    nodes = set(candidate.nodes)
    chosen = sorted(
        {
            f"{e.fields['iface']} {e.fields['addr']}"
            for e in incident.index.kind("net_addr")
            if "iface" in e.fields and (not nodes or e.node in nodes)
        }
    )
    if chosen:
        candidate.title = f"{group.meaning.title}; NCCL bootstrapped over {', '.join(chosen[:3])}"
