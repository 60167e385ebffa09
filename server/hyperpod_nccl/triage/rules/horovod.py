"""Horovod's `Horovod has been shut down`: printed by every rank but the one that left.

The message names two causes: an exception on one rank, or a rank that finished its loop while the
others still called collectives (early stopping decided on one rank, uneven data). A launcher that
names the first process to fail with an error exit says which: the shutdown followed that rank's
failure. With every rank's log in the input and no exception among them, the rank left its loop:
the ranks ran different collectives. With ranks missing from the input, the exception may be in
their logs: the cause is not established.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.fatal import exit_code
from hyperpod_nccl.triage.model import Group, Incident
from hyperpod_nccl.triage.root_cause import Candidate

SHUTDOWN_ID = "triage.collective.horovod_shutdown"


def first_failure_named(incident: Incident) -> bool:
    """mpirun's `The first process to do so was: Process name: [[…],N]` or torchrun's Root Cause
    block: a rank that exited with an error before the others."""
    return any(
        (e.fields.get("first_failure") or "mpi_rank" in e.fields) and (exit_code(e) or "nonzero" in e.fields)
        for e in incident.index.kind("worker_exit")
    )


def rank_not_in_input(candidate: Candidate, group: Group, incident: Incident) -> None:
    if group.meaning.id != SHUTDOWN_ID:
        return
    seen = incident.ranks_seen
    missing = [rank for rank in incident.topology.world if rank not in seen]
    if seen and not missing:
        return
    absent = f"ranks {compress(missing)} left no line" if missing else "no line names a rank"
    candidate.category = Category.UNKNOWN
    candidate.title = (
        "Horovod shut down after a rank raised an exception or left its loop early, and that rank's log is "
        f"not in the input ({absent}): its own log says which"
    )
