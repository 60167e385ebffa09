"""Ranks that diverged after training: a collective timed out once the training loop had ended.

When the framework says training finished (`Trainer.fit` stopped, Training completed) and a
rank then times out in a collective, the ranks took different code paths: the ones that timed
out issued a collective (a rank-0-only checkpoint, evaluation or barrier) the others never did.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.findings import evidence, listed
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed
from hyperpod_nccl.triage.timeline import order_key

DIVERGED_ID = "triage.nccl.diverged_after_training"
_WEIGHT = 60  # above a stall verdict: the order of events says the others were done, not stuck


def diverged_after_training(incident: Incident) -> Outcome:
    done = incident.first(incident.index.kind("training_done"))
    fired = [s.decisive_event for s in incident.states.values() if s.watchdog == "fired" and s.decisive_event]
    after = [e for e in fired if done is not None and _after(done, e, incident)]
    if done is None or not after:
        return Outcome()
    ranks = sorted({e.rank for e in after if e.rank is not None})
    first = incident.first(after)
    finding = Finding(
        id=DIVERGED_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Training had finished when rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} "
        "timed out in a collective the others never issued",
        reference="debugging-guide.md § 2",
        detail="A step after the training loop ran collectives on some ranks only (a rank-0-only checkpoint, "
        "evaluation or barrier): run it on every rank, or outside the process group.",
        ranks=listed(ranks),
        nodes=incident.nodes_of(ranks),
        evidence=[evidence(e, incident.topology) for e in [done, first] if e is not None],
    )
    return blamed(
        incident,
        finding,
        category=Category.COLLECTIVE_MISMATCH,
        weight=_WEIGHT,
        title="Issued a collective after training that the other ranks never issued",
        ranks=ranks,
        first=first,
        confidence="medium",
    )


def _after(done: Event, timeout: Event, incident: Incident) -> bool:
    """The timeout came after training ended: by time where both are dated, else by position."""
    done_at, timeout_at = incident.at(done), incident.at(timeout)
    if done_at and timeout_at:
        return timeout_at >= done_at
    return done.source == timeout.source and order_key(timeout, incident.clock) > order_key(
        done, incident.clock
    )
