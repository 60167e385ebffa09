"""From the symptoms back to the origin: pick the trigger, name its culprits, write the chain.

Candidates come from two places: catalogue lines that can start a failure (an OOM, an Xid, a
Python exception, a port in use, …) and the cross-rank NCCL verdict (straggler, mismatch, every
rank inside). The most decisive candidate wins, unless another decisive one happened clearly
earlier — a trigger must precede its consequences. Culprits are the origin, not every rank that
was affected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from hyperpod_nccl.models import Category, RootCause
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.classify import Classification
from hyperpod_nccl.triage.events import Event

Confidence = Literal["high", "medium", "low"]
_DECISIVE = 50  # below this weight a candidate is only blamed when nothing stronger exists
_CLEARLY_EARLIER = timedelta(minutes=10)


@dataclass
class Candidate:
    category: Category
    weight: int
    title: str
    ranks: list[int] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    first: Event | None = None
    when: datetime | None = None
    when_derived: bool = False  # `when` is computed (watchdog time − timeout), not read off `first`
    confidence: Confidence = "high"
    finding_id: str = ""


@dataclass
class Context:
    """What the chain and the ruled-out list need to know about the rest of the run."""

    verdict: Classification
    collective: str | None  # "ALLREDUCE SeqNum 808"
    started: datetime | None
    fired: Event | None
    fired_at: datetime | None
    fired_ranks: int
    final: Event | None
    noise_count: int
    hardware_logs_seen: bool
    kernel_oom_seen: bool
    hardware_fault_seen: bool
    job_started: datetime | None = None
    stale: list[str] = field(default_factory=list)
    caveat: str | None = None  # what the triage could not read, which makes it less sure


def choose(candidates: list[Candidate]) -> Candidate | None:
    """The most decisive candidate, unless a decisive one clearly came first (a trigger precedes
    its consequences); among candidates of the same moment the more decisive wins."""
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda c: -c.weight)
    top = ranked[0]
    if top.when is None:
        return top
    earlier = [
        c
        for c in ranked
        if c.weight >= _DECISIVE and c.when is not None and c.when < top.when - _CLEARLY_EARLIER
    ]
    return min(earlier, key=lambda c: (c.when or datetime.max, -c.weight)) if earlier else top


def drop_stale(
    candidates: list[Candidate], job_started: datetime | None
) -> tuple[list[Candidate], list[str]]:
    """Node logs keep history: what happened well before the job started did not cause its failure."""
    if job_started is None:
        return candidates, []
    stale = [c for c in candidates if c.when is not None and c.when < job_started - _CLEARLY_EARLIER]
    notes = [
        f"{c.title} on {', '.join(c.nodes) or 'a node'}{_at(c.when)}: before this job started" for c in stale
    ]
    return [c for c in candidates if c not in stale], notes


def date_by_the_stall(candidates: list[Candidate], suspects: set[int], stalled_at: datetime | None) -> None:
    """A crash line without a time (a Python traceback) on a rank that never entered the stuck
    collective happened when that collective was issued."""
    for candidate in candidates:
        if candidate.when is None and stalled_at and candidate.ranks and set(candidate.ranks) <= suspects:
            candidate.when = stalled_at


_LESS_SURE: dict[Confidence, Confidence] = {"high": "medium", "medium": "low", "low": "low"}


def root_cause(top: Candidate, context: Context, culprit_nodes: list[str]) -> RootCause:
    chain = _chain(top, context)
    confidence = top.confidence
    if context.caveat:
        confidence = _LESS_SURE[confidence]
        chain.append(f"confidence lowered to {confidence}: {context.caveat}")
    return RootCause(
        category=top.category,
        summary=_summary(top, culprit_nodes),
        culprit_ranks=sorted(top.ranks),
        culprit_nodes=culprit_nodes,
        chain=chain,
        confidence=confidence,
        ruled_out=_ruled_out(top, context),
    )


def _who(ranks: list[int], nodes: list[str]) -> str:
    parts = [f"rank {compress(ranks)}"] if len(ranks) == 1 else [f"ranks {compress(ranks)}"] if ranks else []
    if nodes:
        parts.append(f"on {', '.join(nodes[:4])}" + (f" (+{len(nodes) - 4})" if len(nodes) > 4 else ""))
    return " ".join(parts)


def _summary(top: Candidate, nodes: list[str]) -> str:
    who = _who(top.ranks, nodes)
    return f"{top.title}: {who}." if who else f"{top.title}."


def _at(moment: datetime | None) -> str:
    return f" at {moment:%Y-%m-%d %H:%M:%S}" if moment else ""


def _where(event: Event | None) -> str:
    return f" ({event.source}:{event.line})" if event else ""


def _ranks(count: int) -> str:
    return f"{count} rank{'' if count == 1 else 's'}"


def _chain(top: Candidate, context: Context) -> list[str]:
    who = _who(top.ranks, top.nodes)
    when = _at(top.when) + (" (derived: watchdog time − timeout)" if top.when and top.when_derived else "")
    chain = [f"trigger: {top.title}{', ' + who if who else ''}{when}{_where(top.first)}"]
    verdict = context.verdict
    if context.collective and verdict.waiting:
        chain.append(
            f"→ {_ranks(len(verdict.waiting))} waited inside {context.collective}"
            f"{' issued ≈' + context.started.strftime('%H:%M:%S') + ' (derived)' if context.started else ''}"
            f" for the {verdict.timeout_ms or '?'} ms timeout"
        )
    if context.fired:
        chain.append(
            f"→ watchdog fired on {_ranks(context.fired_ranks)}{_at(context.fired_at)} and took the "
            f"processes down{_where(context.fired)}"
        )
    if context.final:
        final = context.final
        bystander = top.nodes and final.node and final.node not in top.nodes and final != top.first
        how = " (how the job ended, on a node that only waited)" if bystander else ""
        chain.append(f"→ final: {final.text.strip()[:160]}{_where(final)}{how}")
    return chain


def _ruled_out(top: Candidate, context: Context) -> list[str]:
    verdict = context.verdict
    out: list[str] = []
    if verdict.verdict in ("straggler", "silent") and top.category != Category.NETWORK:
        out.append(
            "network / NCCL transport: the waiting ranks were blocked on ranks that never entered the "
            "collective, not on the fabric"
        )
    # Ranks whose logs are absent or unread may have issued another collective, or none (one that left
    # the loop early): only the ranks read can rule a mismatch out.
    unseen = verdict.absent or verdict.unread
    if (
        verdict.waiting
        and not verdict.mismatched
        and not unseen
        and top.category != Category.COLLECTIVE_MISMATCH
    ):
        out.append("collective mismatch: every rank that timed out issued the same OpType and sizes")
    if top.category == Category.SOFTWARE and len(top.nodes) > 1:
        out.append(f"one bad machine: the same failure came from {len(top.nodes)} nodes")
    if verdict.verdict == "mismatch":
        out.append(
            f"straggler / network: every rank reached {context.collective or 'the collective'}; they "
            "disagreed on what to run"
        )
    if verdict.verdict == "all_inside":
        out.append("straggler: every rank was inside the collective and none was missing")
    out += [f"{note} (stale)" for note in context.stale]
    if context.noise_count:
        out.append(f"connection resets: {context.noise_count} recovered on the first retry (noise)")
    if (
        context.hardware_logs_seen
        and not context.hardware_fault_seen
        and top.category != Category.GPU_HARDWARE
    ):
        out.append("GPU hardware: the node logs hold no hardware Xid, ECC or fallen-off-the-bus line")
    if context.hardware_logs_seen and not context.kernel_oom_seen and top.category != Category.HOST_OOM:
        out.append("host OOM: the node logs hold no OOM-killer line")
    return out
