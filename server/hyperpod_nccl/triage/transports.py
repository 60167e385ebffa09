"""The network transport each node's NCCL selected (issue 14 item 3), healthy nodes included, so a
single node on TCP among EFA nodes shows.

NCCL says it at init, once per rank, in lines the scanner already routes as facts: aws-ofi-nccl's
`NET/OFI Selected provider is efa, fabric is efa (found 32 nics)`, NCCL's `Using network IB` /
`Socket` / `Libfabric`, and the interface list of `NET/IB : Using [0]mlx5_0:1/IB [1]…` or
`NET/Socket : Using [0]eth0:…`. Nodes that agree (transport and NIC count) are one group; the
largest group is counted, the others (the outliers) are named.
"""

from __future__ import annotations

import re

from hyperpod_nccl.models import TransportGroup
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.run import log_line

MAX_GROUPS = 4
_NAMED_NODES = 8
_NICS_FOUND = re.compile(r"\(found (\d+) nics?\)")
_INTERFACES = re.compile(r"\[\d+\]\S+")
_PROVIDERS = {
    "efa": "EFA (aws-ofi-nccl)",
    "tcp": "TCP (aws-ofi-nccl, libfabric tcp provider)",
    "sockets": "TCP (aws-ofi-nccl, libfabric sockets provider)",
}
_NETWORKS = {
    "IB": "InfiniBand / RoCE (NCCL IB)",
    "Socket": "TCP sockets (NCCL Socket, no net plugin)",
}


def node_transports(incident: Incident) -> list[TransportGroup]:
    chosen: dict[str, tuple[str, int | None, Event]] = {}
    for node, events in sorted(incident.index.by_node.items()):
        found = _transport(events)
        if found is not None:
            chosen[node] = found
    groups: dict[tuple[str, int | None], list[str]] = {}
    for node, (transport, nics, _) in chosen.items():
        groups.setdefault((transport, nics), []).append(node)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    return [
        TransportGroup(
            transport=transport,
            nics=nics,
            node_count=len(nodes),
            nodes=nodes[:_NAMED_NODES] if index else [],  # the outliers are named, the majority counted
            evidence=log_line(chosen[nodes[0]][2], incident, 160),
        )
        for index, ((transport, nics), nodes) in enumerate(ordered[:MAX_GROUPS])
    ]


def _transport(events: list[Event]) -> tuple[str, int | None, Event] | None:
    """The provider line first (it says EFA or TCP); else the network NCCL uses, with its NICs."""
    providers = [e for e in events if e.kind == "provider"]
    if providers:
        event = min(providers, key=lambda e: (e.source, e.line))
        provider = event.fields.get("provider", "").lower()
        nics = _NICS_FOUND.search(event.text)
        name = _PROVIDERS.get(provider, f"{provider} (aws-ofi-nccl)")
        return name, int(nics.group(1)) if nics else None, event
    networks = [e for e in events if e.kind == "network"]
    if not networks:
        return None
    event = min(networks, key=lambda e: (e.source, e.line))
    network = event.fields.get("network", "")
    name = _NETWORKS.get(network, f"{network} (net plugin, provider not printed)")
    return name, _interface_count(events, network), event


def _interface_count(events: list[Event], network: str) -> int | None:
    """NICs in the `NET/IB : Using [0]… [1]…` or `NET/Socket : Using [0]…` line of the same node."""
    marker = {"IB": "NET/IB", "Socket": "NET/Socket"}.get(network)
    for event in events:
        if marker and event.kind == "net_addr" and marker in event.text:
            used = event.text.split(" : Using", 1)[-1].split("; OOB", 1)[0]
            return len(_INTERFACES.findall(used)) or None
    return None
