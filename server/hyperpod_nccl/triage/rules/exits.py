"""Ranks that exited with an error code and printed no reason while the others waited for them."""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import exit_code
from hyperpod_nccl.triage.findings import decisive, event_ranks, evidence, listed
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

SILENT_EXIT_ID = "triage.nccl.silent_exit"
_SILENT_EXIT_WEIGHT = 53  # just above a silent stall: an error exit says the rank died, not stalled


def silent_exit(incident: Incident) -> Outcome:
    verdict = incident.verdict
    if verdict.verdict != "silent":
        return Outcome()
    silent = set(verdict.culprits)
    exits = [
        e
        for e in incident.index.kind("worker_exit", "srun_task")
        if _error_exit(e) and event_ranks(e) & silent
    ]
    if not exits:
        return Outcome()
    ranks = sorted(set().union(*(event_ranks(e) for e in exits)) & silent)
    first = incident.first(exits)
    finding = _finding(exits, incident)
    return blamed(
        incident,
        finding,
        category=Category.UNKNOWN,
        weight=_SILENT_EXIT_WEIGHT,
        title="Exited with an error code and printed no reason; the others then timed out waiting",
        ranks=ranks,
        first=first,
        confidence="low",
    )


def _error_exit(event: Event) -> bool:
    if event.kind == "srun_task":
        status = event.fields.get("status", "")
        return status.startswith("Exited with exit code") and not status.endswith(" 0")
    return (exit_code(event) or 0) > 0


def _finding(exits: list[Event], incident: Incident) -> Finding:
    ranks = sorted({r for e in exits for r in event_ranks(e)})
    return Finding(
        id=SILENT_EXIT_ID,
        status=Status.WARN,
        priority=Priority.P1,
        title=f"Rank {compress(ranks)} exited with an error code and printed no reason",
        reference="debugging-guide.md § 1",
        detail="It left no watchdog line and no error message; the others timed out waiting for it. "
        "Its own stderr, core dumps or the node's kernel log may say why.",
        ranks=listed(ranks),
        nodes=incident.nodes_of(ranks)[:16],
        evidence=[evidence(e, incident.topology) for e in decisive(exits, incident.clock)],
    )
