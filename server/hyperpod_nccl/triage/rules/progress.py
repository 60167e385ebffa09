"""A rank busy outside NCCL: its progress bar was still running when the collective timed out.

Console pastes show it. The other ranks' watchdogs fire after the NCCL timeout while one rank's
tqdm bar — tokenising, indexing or mapping a dataset — has been running about as long and is not
finished. That rank never entered the collective: a data-loading stall, whichever rank printed
the bar (bars usually carry no rank prefix).

A paste cut before the timeout line still shows it when the bar itself was cut by the failure: an
unfinished bar that had run just under a default timeout (PyTorch's 10 minutes for NCCL; the
30 minutes of Gloo, the c10d store and Hugging Face's `ddp_timeout`) when a traceback followed.
That is a guess, and says so.

Bars of one loop that stood two or more steps apart at the same elapsed time (closer than the
steps between them take) are not a rank busy elsewhere: ranks in a loop with a collective per step
cannot drift apart, unless they no longer call the same collectives (a per-rank decision to skip a
batch or stop, data split unevenly). Each process's bar counts from its own start, so bars started
that many steps' time apart read the same: a guess, labelled one.
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Evidence, Finding, Priority, Status
from hyperpod_nccl.triage.events import APART, Event
from hyperpod_nccl.triage.findings import evidence, listed, quoted
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.patterns import bars_apart, elapsed_seconds
from hyperpod_nccl.triage.root_cause import Confidence
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

BUSY_ID = "triage.nccl.busy_outside_nccl"
DRIFTED_ID = "triage.collective.ranks_drifted_apart"
_DRIFTED_WEIGHT = 60  # above a rank busy outside NCCL, which the same bars would otherwise suggest
_WEIGHT = 56  # above "silent ranks" (whose culprits it keeps), below a straggler's own watchdog state
_LONG_ENOUGH = 0.5  # of the timeout: a bar that ran this long was no short pause
_OUTLASTED = 0.9
_DEFAULT_TIMEOUTS_S = (600, 1800)
# A bar's last redraw comes up to one item before the timeout: 80 % of it, or a minute past it.
_NEAR_BELOW, _NEAR_ABOVE_S = 0.8, 60
_GUESS_WEIGHT = 30  # any cause a line names wins over this guess
_FAILURE_AFTER = ("traceback", "exception", "crash")


def _elapsed(event: Event) -> int:
    return elapsed_seconds(event.fields)


def _own_rank(event: Event) -> int | None:
    """The rank the line itself names; a rank lent by the file it sits in, or named by a message glued
    after the bar, may be another process's."""
    return None if "rank_lent" in event.fields or "glued" in event.fields else event.rank


def _unfinished(event: Event) -> bool:
    """tqdm rounds its percentage: `100%` over `497/499` is a bar two items short."""
    done, total = event.fields.get("done", ""), event.fields.get("total", "")
    if done.isdigit() and total.isdigit():
        return int(done) < int(total)
    return int(event.fields.get("pct", "100")) < 100


def ranks_drifted_apart(incident: Incident) -> Outcome:
    if not incident.index.kind("wd_timeout"):
        return Outcome()
    found = _drifted(incident)
    if found is None:
        return Outcome()
    (low, high), bars = found
    total = bars[0].fields.get("total", "?")
    witness = incident.first(incident.index.kind("wd_timeout"))
    finding = Finding(
        id=DRIFTED_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Progress bars of one loop stood {high - low} steps apart at the same elapsed time ({low} and "
        f"{high} of {total}): probably ranks that ran different numbers of steps, so they no longer called "
        "the same collectives, and one timed out",
        reference="debugging-guide.md § 2",
        detail="Ranks that call a collective every step wait for each other and stay within a step. Steps "
        "apart mean a rank decided on its own to skip a batch or leave the loop, or the data was split "
        "unevenly: make such decisions on every rank alike (all-reduce the flag), and give every rank the "
        "same number of batches (drop_last, an even sampler). Each bar's clock starts with its own "
        "process, so bars started that many steps' time apart read the same: every rank's full log, "
        "with times, tells the two apart.",
        ranks=listed(r for e in bars if (r := _own_rank(e)) is not None),
        evidence=[*_bar_lines(bars, incident), *quoted([witness] if witness else [], incident.topology)],
    )
    return blamed(
        incident,
        finding,
        category=Category.COLLECTIVE_MISMATCH,
        weight=_DRIFTED_WEIGHT,
        title=f"Probably ranks drifted {high - low} steps apart in one loop ({low} and {high} of {total}) "
        "and then waited in different collectives",
        ranks=[],
        first=bars[0],
        confidence="low",
    )


def _bar_lines(bars: list[Event], incident: Incident) -> list[Evidence]:
    """The bars' lines, with a rank only where the line names it: bars steps apart are two processes,
    so the rank a file lends its unprefixed lines belongs to at most one of them."""
    lines = quoted(bars, incident.topology)
    if all(_own_rank(bar) is not None for bar in bars):
        return lines
    return [line.model_copy(update={"rank": None}) for line in lines]


def _drifted(incident: Incident) -> tuple[tuple[int, int], list[Event]] | None:
    """Steps apart: marked on a bar that folded others (one file's unprefixed bars), or between the
    bars of two ranks."""
    bars = incident.index.kind("progress")
    for bar in bars:
        if APART in bar.fields:
            low, high = bar.fields[APART].split("/")
            return (int(low), int(high)), [bar]
    by_total: dict[str, list[Event]] = {}
    for bar in bars:
        if bar.rank is not None:
            by_total.setdefault(bar.fields.get("total", ""), []).append(bar)
    for group in by_total.values():
        for i, one in enumerate(group):
            for other in group[i + 1 :]:
                if (apart := bars_apart(one.fields, other.fields)) is not None:
                    return apart, [one, other]
    return None


def busy_outside_nccl(incident: Incident) -> Outcome:
    if _drifted(incident) is not None:
        return Outcome()  # bars steps apart are ranks on different steps, not one busy elsewhere
    verdict = incident.verdict
    timeout_ms = verdict.timeout_ms or max(
        (int(e.fields["timeout_ms"]) for e in incident.index.kind("wd_timeout") if "timeout_ms" in e.fields),
        default=0,
    )
    waiting = set(verdict.waiting) | {r for r, s in incident.states.items() if s.watchdog == "fired"}
    if not timeout_ms:
        return _bar_cut_by_failure(incident)
    if not waiting:
        return Outcome()
    bars = [
        e
        for e in incident.index.kind("progress")
        if _unfinished(e) and _own_rank(e) not in waiting and _elapsed(e) >= _LONG_ENOUGH * timeout_ms / 1000
    ]
    if not bars:
        return Outcome()
    bar = max(bars, key=_elapsed)
    ranks = sorted({r for e in bars if (r := _own_rank(e)) is not None})
    if not ranks and verdict.verdict in ("silent", "straggler"):
        ranks = list(verdict.culprits)
    minutes, timeout_min = _elapsed(bar) / 60, timeout_ms / 60_000
    outlasted = _elapsed(bar) >= _OUTLASTED * timeout_ms / 1000
    witness = incident.first(
        e for r in waiting if r in incident.states for e in incident.states[r].witness_events
    )
    return _busy(
        incident,
        title=f"A rank was still busy outside NCCL ({minutes:.0f} min into an unfinished progress bar) when "
        f"the collective timed out after {timeout_min:.0f} min",
        detail="The other ranks waited inside the collective while this work ran outside it (dataset "
        "tokenisation, indexing or mapping; an evaluation or generation pass one rank runs longer than the "
        "others): do it before the process group's first collective, on every rank or cached, split it "
        "evenly, or raise the NCCL timeout for that phase.",
        cause="Still busy outside NCCL (a long step with a progress bar) while the others waited",
        ranks=ranks,
        shown=[bar, witness],
        weight=_WEIGHT,
        confidence="high" if outlasted else "medium",
    )


def _busy(
    incident: Incident,
    *,
    title: str,
    detail: str,
    cause: str,
    ranks: list[int],
    shown: list[Event | None],
    weight: int,
    confidence: Confidence,
) -> Outcome:
    """The finding and candidate of a rank busy outside NCCL; `shown[0]` is its progress bar."""
    bar = shown[0]
    finding = Finding(
        id=BUSY_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title=title,
        reference="debugging-guide.md § 1",
        detail=detail,
        ranks=listed(ranks),
        nodes=incident.nodes_of(ranks),
        evidence=[evidence(e, incident.topology) for e in shown if e is not None],
    )
    return blamed(
        incident,
        finding,
        category=Category.DATA_LOADING_STALL,
        weight=weight,
        title=cause,
        ranks=ranks,
        first=bar,
        confidence=confidence,
    )


def _default_timeout_near(seconds: int) -> int | None:
    near = (t for t in _DEFAULT_TIMEOUTS_S if _NEAR_BELOW * t <= seconds <= t + _NEAR_ABOVE_S)
    return next(near, None)


def _bar_cut_by_failure(incident: Incident) -> Outcome:
    """No timeout line was read: an unfinished bar near a default timeout, with a traceback after it."""
    failures = incident.index.kind(*_FAILURE_AFTER)
    bars = [
        e
        for e in incident.index.kind("progress")
        if _unfinished(e)
        and _default_timeout_near(_elapsed(e))
        and any(f.source == e.source and f.line >= e.line for f in failures)
    ]
    if not bars:
        return Outcome()
    bar = max(bars, key=_elapsed)
    ran = _elapsed(bar)
    timeout_min = (_default_timeout_near(ran) or 0) // 60
    side = "just under" if ran < timeout_min * 60 else "just past"
    ran_for = f"{ran // 60}:{ran % 60:02d}"
    failure = incident.first(f for f in failures if f.source == bar.source and f.line > bar.line)
    ranks = [rank] if (rank := _own_rank(bar)) is not None else []
    return _busy(
        incident,
        title=f"A progress bar had run {ran_for}, {side} the default {timeout_min} min timeout, when a "
        "traceback cut it: the other ranks likely timed out waiting for this work",
        detail="No timeout line was read (the paste may stop before it), so this is a guess from the bar's "
        "time: PyTorch's NCCL timeout defaults to 10 min, Gloo's, the c10d store's and Hugging Face's "
        "ddp_timeout to 30 min. The error after the bar says which; if it is a timeout, do this work before "
        "the process group's first collective (cached, or on every rank) or raise the timeout for it.",
        cause=f"Probably busy outside NCCL for {ran_for} (a progress bar), {side} the default {timeout_min} "
        "min timeout, when the failure came (a guess: no timeout line was read)",
        ranks=ranks,
        shown=[bar, failure],
        weight=_GUESS_WEIGHT,
        confidence="low",
    )
