"""Two machines that report one hostname.

NCCL groups ranks by host, and ranks of one host talk through memory they share (CUDA IPC, SHM),
which works inside one machine only. Machines cloned from one image, containers started with one
fixed hostname (`localhost`, the image's name) or `NCCL_HOSTID` set alike can look like one host:
older NCCL builds then connect them through P2P/IPC or SHM and fail (`failed to open CUDA IPC
handle`, `unhandled cuda error`) or hang. The logs show it as one hostname whose NCCL lines
bootstrap from two addresses on the same interface; a `via P2P/IPC` or `via SHM` line on that
hostname says NCCL took them for one machine.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed
from hyperpod_nccl.triage.rules.unknown import abnormal_events

SHARED_HOSTNAME_ID = "triage.config.shared_hostname"
_REFERENCE = "multinode.md § 8"
_CROSSED_WEIGHT = 86  # explains the IPC and CUDA errors that follow it
_SUSPECT_WEIGHT = 45  # only when nothing the lines name explains the failure better


def shared_hostname(incident: Incident) -> Outcome:
    shared = incident.shared_hostnames
    if not shared:
        return Outcome()
    (host, iface), found = min(shared.items())
    witnesses = sorted(found.values(), key=lambda e: (e.source, e.line))[:2]
    crossed = [e for e in incident.index.kind("same_host_transport") if e.node == host]
    primary, following = abnormal_events(incident)
    failed = bool(primary or following)
    listed_addresses = " and ".join(e.fields["addr"] for e in witnesses)
    title = f"Two machines report the same hostname {host} ({iface} {listed_addresses})"
    if crossed:
        title += ", and NCCL connected them as one machine (P2P/IPC or SHM)"
    finding = Finding(
        id=SHARED_HOSTNAME_ID,
        status=Status.FAIL if crossed or failed else Status.WARN,
        priority=Priority.P0 if crossed or failed else Priority.P1,
        title=title,
        reference=_REFERENCE,
        detail="NCCL takes ranks of one hostname for ranks of one machine and connects them through "
        "memory only one machine shares; the report cannot tell these machines apart either. Give every "
        "machine (or container) its own hostname, or set NCCL_HOSTID to a value unique per machine.",
        nodes=[host],
        evidence=[evidence(e, incident.topology) for e in [*witnesses, *crossed[:1]]],
    )
    if not (crossed or failed):
        return Outcome([finding], [])
    return blamed(
        incident,
        finding,
        category=Category.CONFIG,
        weight=_CROSSED_WEIGHT if crossed else _SUSPECT_WEIGHT,
        title=f"Two machines share the hostname {host}, and NCCL treats them as one machine",
        ranks=[],
        first=witnesses[-1],
        confidence="high" if crossed else "low",
        nodes=[host],
    )
