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
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

MEMBERS_ID = "triage.config.members_missing"
INIT_STALLED_ID = "triage.config.nccl_init_stalled"
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
    finding = Finding(
        id=MEMBERS_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Only {len(joined)} of {world} processes joined the process group, and the logs stop there",
        reference="debugging-guide.md § 7",
        detail="The others never announced themselves: they were not started (a batch script running "
        "python without srun, --ntasks / num_nodes / devices not matching the world size) or could "
        "not start on their nodes. The processes that did start wait at init until the timeout.",
        evidence=[
            evidence(e, incident.topology) for e in [min(members, key=lambda e: (e.source, e.line)), last]
        ],
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
    last = max(incident.events, key=lambda e: (e.source, e.line))
    finding = Finding(
        id=INIT_STALLED_ID,
        status=Status.WARN,
        priority=Priority.P1,
        title="NCCL began setting up its communicator and never logged Init COMPLETE: the logs stop there",
        reference="debugging-guide.md § 19",
        detail="With NCCL_DEBUG=INFO every rank prints `Init COMPLETE` once connected. A hang here is "
        "usually peer access between the GPUs of a node (IOMMU or PCIe ACS: rerun with NCCL_P2P_DISABLE=1 "
        "to tell) or the network to the other nodes.",
        evidence=[evidence(e, incident.topology) for e in _distinct(incident.first(started), last)],
    )
    return blamed(
        incident,
        finding,
        category=Category.CONFIG,
        weight=40,
        title=finding.title,
        ranks=[],
        first=last,
        confidence="low",
    )


def _distinct(*events: Event | None) -> list[Event]:
    return [e for i, e in enumerate(events) if e is not None and all(e is not o for o in events[:i])]
