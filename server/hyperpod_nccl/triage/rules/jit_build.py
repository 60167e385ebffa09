"""A build on the fly that never finished while the others waited.

Megatron's fused kernels, DeepSpeed's ops and any `torch.utils.cpp_extension.load` compile at
start-up, each process taking the build directory's lock in turn. A build that hangs (a lock file
left by a killed run, which the next run waits on for ever; a compiler on a slow shared
filesystem) prints its first line and nothing after it, and the ranks past it wait in the first
collective until the watchdog fires. The line that started the build, with no line saying it
finished, names the step; the rank is whichever printed it.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.findings import evidence, listed
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

JIT_BUILD_HUNG_ID = "triage.software.jit_build_hung"
_WEIGHT = 58  # above a rank busy behind a progress bar (56): the build line names what it was doing
_WAITED = ("wd_timeout", "store_barrier", "rendezvous")


def jit_build_hung(incident: Incident) -> Outcome:
    waited = incident.first(incident.index.kind(*_WAITED))
    if waited is None:
        return Outcome()
    done_in = {e.source: e.line for e in incident.index.kind("jit_build_done")}
    unfinished = [e for e in incident.index.kind("jit_build_start") if done_in.get(e.source, -1) < e.line]
    started = incident.first(unfinished)
    if started is None:
        return Outcome()
    ranks = [started.rank] if started.rank is not None else []
    nodes = [node] if (node := incident.node_of_line(started)) else []
    finding = Finding(
        id=JIT_BUILD_HUNG_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title="A build of C++/CUDA code at start-up (fused kernels, an extension) began and never finished, "
        "while the ranks past it waited in a collective until the timeout",
        reference="debugging-guide.md § 10",
        detail="The processes take the build directory's lock in turn: a lock file a killed run left behind "
        "is waited on for ever, and a compile on a slow shared filesystem can outlast the timeout. Remove "
        "the build directory (Megatron's megatron/fused_kernels/build, ~/.cache/torch_extensions) while no "
        "job uses it, or build once before the launch.",
        ranks=listed(ranks),
        nodes=nodes,
        evidence=[evidence(e, incident.topology) for e in (started, waited)],
    )
    return blamed(
        incident,
        finding,
        category=Category.SOFTWARE,
        weight=_WEIGHT,
        title="A build at start-up (fused kernels, an extension) never finished while the others waited",
        ranks=ranks,
        first=started,
        confidence="medium",
        nodes=nodes,
    )
