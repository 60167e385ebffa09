"""What the dumps say, as report findings and a root-cause candidate.

Every finding quotes the dump file and record id of the calls it compares, and the user-code
frame that issued them (`callsite`). The candidate is plain data; the triage engine weighs it
against what the logs say.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hyperpod_nccl.flight_recorder.analyze import Analysis, Disagreement, Group, Issued, Kind, Sighting
from hyperpod_nccl.flight_recorder.callsite import describe
from hyperpod_nccl.flight_recorder.reader import Unreadable
from hyperpod_nccl.models import Category, Evidence, Finding, Priority, Status
from hyperpod_nccl.rankset import compress

MAX_LISTED_RANKS = 64
_GUIDE = "debugging-guide.md § "
REFERENCE_MISSING = _GUIDE + "22.1"
REFERENCE_MISMATCH = _GUIDE + "22.2"
REFERENCE_STATE = _GUIDE + "22.3"
REFERENCE_P2P = _GUIDE + "22.4"
REFERENCE_BEHIND = _GUIDE + "22.5"
REFERENCE_COVERAGE = _GUIDE + "22.6"

Confidence = Literal["high", "medium", "low"]


@dataclass
class Cause:
    """A root-cause candidate from the dumps, for the engine to weigh against the logs."""

    category: Category
    weight: int
    title: str
    ranks: list[int]
    confidence: Confidence
    finding_id: str


# Candidate weights sit just above the log-based verdicts they confirm (triage/candidates.py), so
# a decisive log line (an OOM, an Xid) still names the trigger and the dumps say where it hit.
_MISMATCH_WEIGHT = 90
_MISSING_WEIGHT = 58
_STATE_WEIGHT = 45
_ALL_INSIDE_WEIGHT = 40
_BEHIND_WEIGHT = 55


def dump_findings(
    analysis: Analysis | None, unreadable: list[Unreadable]
) -> tuple[list[Finding], Cause | None]:
    """Findings for every disagreement, the coverage and its limits; the candidate of the first one."""
    findings: list[Finding] = [_refused(u) for u in unreadable if u.carries_code]
    if analysis is None:
        return findings, None
    findings += [_disagreement(d) for d in analysis.disagreements]
    named = {r for d in analysis.disagreements for r in d.culprits}
    behind = [r for r in analysis.behind_everywhere if r not in named]
    if behind:
        findings.append(_behind(behind, analysis))
    findings += [_all_inside(group, seq, ranks, analysis) for group, seq, ranks in analysis.all_inside]
    findings.append(_coverage(analysis, unreadable))
    return findings, _cause(analysis, behind)


def _who(ranks: tuple[int, ...] | list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {compress(ranks)}"


def _listed(ranks: tuple[int, ...] | list[int]) -> list[int]:
    return sorted(set(ranks))[:MAX_LISTED_RANKS]


def evidence(sighting: Sighting, group: Group) -> Evidence:
    shapes = " + ".join(call.shape for call in sighting.calls)
    return Evidence(
        source=sighting.source,
        text=f"{shapes} #{sighting.seq} in {group.label}, {sighting.state.label}; issued by "
        f"{describe(sighting.stack, full=True)}",
        rank=sighting.rank,
        record_id=sighting.record_id,
    )


def _sides(disagreement: Disagreement) -> list[Evidence]:
    """One sighting of what the culprits did, one of what the others did."""
    culprit = [s for issued in disagreement.found for s in issued.sightings[:1]]
    others = list(disagreement.expected.sightings[:1])
    return [evidence(s, disagreement.group) for s in culprit[:2] + others]


def _op(issued: Issued) -> str:
    return "/".join(dict.fromkeys(call.op for call in issued.calls)) or "nothing"


def _site(issued: Issued) -> str:
    return describe(issued.sightings[0].stack) if issued.sightings else "no record"


def _disagreement(d: Disagreement) -> Finding:
    where = f"#{d.seq} in {d.group.label}"
    expected = d.expected
    if d.kind == Kind.MISSING:
        last = "; ".join(
            f"{_who(i.ranks)} last issued {i.shape} #{i.sightings[0].seq} ({i.state.label}) from {_site(i)}"
            for i in d.found[:2]
            if i.sightings
        )
        return _finding(
            d,
            "flight_recorder.missing_rank",
            f"{_who(d.culprits).capitalize()} never issued {_op(expected)} {where}; {_who(d.others)} did",
            f"{_who(d.others).capitalize()} issued {expected.shape} {where} from {_site(expected)}. "
            + (f"{last[0].upper()}{last[1:]}. " if last else "No call of the group is left in its dump. ")
            + "It skipped the call (a code path the others did not take) or is stuck outside it "
            "(data loading, an exception, a Python hang).",
            REFERENCE_MISSING,
        )
    if d.kind in (Kind.OP, Kind.SIZE, Kind.DTYPE):
        theirs = "; ".join(f"{_who(i.ranks)}: {i.shape} from {_site(i)}" for i in d.found[:3])
        what = {Kind.OP: _op, Kind.SIZE: _shape, Kind.DTYPE: _shape}[d.kind]
        return _finding(
            d,
            f"flight_recorder.{d.kind.value}_mismatch",
            f"{_who(d.culprits).capitalize()} issued {what(d.found[0])} where {_who(d.others)} issued "
            f"{what(expected)} ({where})",
            f"{theirs}; {_who(expected.ranks)}: {expected.shape} from {_site(expected)}. Ranks that "
            "disagree on what to run wait for each other until the timeout: a code or configuration bug, "
            "not a slow rank.",
            REFERENCE_MISMATCH,
        )
    if d.kind == Kind.STATE:
        states = ", ".join(f"{_who(i.ranks)} {i.state.label}" for i in d.found[:3])
        return _finding(
            d,
            "flight_recorder.state_mismatch",
            f"{_who(d.culprits).capitalize()} had not {expected.state.label} {_op(expected)} {where} that "
            f"{_who(d.others)} had",
            f"{states}; {_who(expected.ranks)} {expected.state.label}. {expected.shape} from "
            f"{_site(expected)}. A rank whose kernel never started was still busy with earlier GPU "
            "work, or its host thread stalled before the launch.",
            REFERENCE_STATE,
        )
    sender = expected.sightings[0]
    verb = "receive" if sender.calls[0].op == "send" else "send"
    return _finding(
        d,
        "flight_recorder.p2p_unmatched",
        f"{_who(d.culprits).capitalize()} never posted the {verb} matching rank {sender.rank}'s "
        f"{sender.calls[0].op} #{d.seq} in {d.group.label}",
        f"Rank {sender.rank} issued {expected.shape} from {_site(expected)}; its peer has no matching call "
        "in its dump. A pipeline schedule that differs between the two stages, or a stage stuck elsewhere.",
        REFERENCE_P2P,
    )


def _shape(issued: Issued) -> str:
    return issued.shape


def _finding(d: Disagreement, finding_id: str, title: str, detail: str, reference: str) -> Finding:
    return Finding(
        id=finding_id,
        status=Status.FAIL,
        priority=Priority.P0,
        title=title,
        reference=reference,
        detail=detail,
        ranks=_listed(d.culprits),
        evidence=_sides(d),
    )


def _behind(ranks: list[int], analysis: Analysis) -> Finding:
    last = [p.last for r in ranks if (p := analysis.progress.get(r)) and p.last]
    return Finding(
        id="flight_recorder.behind_everywhere",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{_who(ranks).capitalize()} is behind the others on every process group it belongs to",
        reference=REFERENCE_BEHIND,
        detail="No group shows a disagreement at a call it issued, but on each of its groups the others went "
        "further: the rank stopped issuing work (stuck outside NCCL, or slow) and the others waited for it.",
        ranks=_listed(ranks),
        evidence=[evidence(s, _group_named(analysis, "0")) for s in last[:2]],
    )


def _group_named(analysis: Analysis, name: str) -> Group:
    return next((g for g in analysis.groups if g.name == name), Group(name, "", (), True))


def _all_inside(group: Group, seq: int, ranks: list[int], analysis: Analysis) -> Finding:
    progress = [p.last for r in ranks[:1] if (p := analysis.progress.get(r)) and p.last]
    return Finding(
        id="flight_recorder.all_inside",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"All {len(ranks)} dumped ranks of {group.label} started #{seq} and none completed it",
        reference=_GUIDE + "3",
        detail="Every member issued the same call and its kernel started everywhere: nobody is missing and "
        "nobody disagrees. The collective itself could not complete (fabric, NIC or transport).",
        ranks=[],
        evidence=[evidence(s, group) for s in progress],
    )


def _refused(unreadable: Unreadable) -> Finding:
    return Finding(
        id="flight_recorder.refused_dump",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"A dump was refused: it carries code, not plain data ({unreadable.source})",
        reference=REFERENCE_COVERAGE,
        detail=f"{unreadable.reason}. PyTorch never writes such a pickle: treat the file as hostile.",
        ranks=[unreadable.rank] if unreadable.rank is not None else [],
        evidence=[Evidence(source=unreadable.source, text=unreadable.reason[:300], rank=unreadable.rank)],
    )


def _coverage(analysis: Analysis, unreadable: list[Unreadable]) -> Finding:
    groups = "; ".join(
        f"{g.label}: ranks {compress(g.members)}{' (inferred)' if g.inferred else ''}"
        for g in analysis.groups[:6]
    )
    parts = [f"{len(analysis.dumped)} dump{'s' if len(analysis.dumped) != 1 else ''} read ({groups})"]
    progress = _progress_summary(analysis)
    if progress:
        parts.append(f"default group progress: {progress}")
    if analysis.missing_dumps:
        parts.append(f"no dump from {_who(analysis.missing_dumps)}: nothing is known of their calls")
    if unreadable:
        parts.append(f"{len(unreadable)} unusable (see skipped)")
    parts += analysis.limits[:6]
    if not analysis.disagreements and not analysis.all_inside:
        parts.append("the ranks agree on every call the dumps hold")
    return Finding(
        id="flight_recorder.coverage",
        status=Status.INFO,
        title="What the Flight Recorder dumps cover, and what they cannot say",
        reference=REFERENCE_COVERAGE,
        detail=". ".join(parts) + ".",
    )


def _progress_summary(analysis: Analysis, shown: int = 4) -> str:
    """`ranks 0-1,3 inside #8 (completed 7); rank 2 idle after #7`: each rank's default-group
    progress, ranks that got as far grouped together."""
    by_state: dict[str, list[int]] = {}
    for rank, p in analysis.progress.items():
        if p.enqueued is None:
            continue
        if p.completed is None:
            label = f"enqueued #{p.enqueued}"
        elif p.enqueued > p.completed + 1:
            label = f"#{p.completed + 1}-#{p.enqueued} in flight"
        elif p.enqueued > p.completed:
            label = f"inside #{p.enqueued}"
        else:
            label = f"idle after #{p.enqueued}"
        by_state.setdefault(label, []).append(rank)
    ordered = sorted(by_state.items(), key=lambda item: len(item[1]))
    text = "; ".join(f"{_who(ranks)} {label}" for label, ranks in ordered[:shown])
    return text + (f"; +{len(ordered) - shown} other states" if len(ordered) > shown else "")


def _cause(analysis: Analysis, behind: list[int]) -> Cause | None:
    first = analysis.decisive
    if first is not None:
        return _cause_of(first, analysis)
    if analysis.all_inside:
        group, seq, _ = analysis.all_inside[0]
        return Cause(
            Category.NETWORK,
            _ALL_INSIDE_WEIGHT,
            f"Every rank of {group.label} was inside #{seq} and it could not complete (Flight Recorder)",
            [],
            "medium",
            "flight_recorder.all_inside",
        )
    if behind:
        return Cause(
            Category.DATA_LOADING_STALL,
            _BEHIND_WEIGHT,
            "Behind the others on every process group (Flight Recorder): stuck outside NCCL",
            behind,
            "medium",
            "flight_recorder.behind_everywhere",
        )
    return None


def _cause_of(d: Disagreement, analysis: Analysis) -> Cause:
    culprits = list(d.culprits)
    where = f"#{d.seq} in {d.group.label}"
    if d.kind in (Kind.OP, Kind.SIZE, Kind.DTYPE):
        found = d.found[0]
        return Cause(
            Category.COLLECTIVE_MISMATCH,
            _MISMATCH_WEIGHT,
            f"Ranks issued different collectives at {where}: {found.shape} from {_site(found)} against "
            f"{d.expected.shape} (Flight Recorder)",
            culprits,
            "high",
            f"flight_recorder.{d.kind.value}_mismatch",
        )
    if d.kind == Kind.STATE:
        return Cause(
            Category.UNKNOWN,
            _STATE_WEIGHT,
            f"Had not {d.expected.state.label} {_op(d.expected)} {where} that the others had "
            "(Flight Recorder)",
            culprits,
            "medium",
            "flight_recorder.state_mismatch",
        )
    if d.kind == Kind.P2P_UNMATCHED:
        return Cause(
            Category.COLLECTIVE_MISMATCH,
            _MISSING_WEIGHT,
            f"Never posted the point-to-point call its peer waited in at {where} (Flight Recorder)",
            culprits,
            "medium",
            "flight_recorder.p2p_unmatched",
        )
    moved_on = _moved_on(d, analysis)
    if moved_on:
        return Cause(
            Category.COLLECTIVE_MISMATCH,
            _MISSING_WEIGHT,
            f"Skipped {_op(d.expected)} {where} that the others waited in, and went on to {moved_on} "
            "(Flight Recorder)",
            culprits,
            "medium",
            "flight_recorder.missing_rank",
        )
    last = next((i for i in d.found if i.sightings), None)
    after = f"; its last call there: {last.shape} #{last.sightings[0].seq} from {_site(last)}" if last else ""
    return Cause(
        Category.DATA_LOADING_STALL,
        _MISSING_WEIGHT,
        f"Never issued {_op(d.expected)} {where} that the others waited in: stuck outside NCCL or skipped "
        f"it{after} (Flight Recorder)",
        culprits,
        "medium",
        "flight_recorder.missing_rank",
    )


def _moved_on(d: Disagreement, analysis: Analysis) -> str | None:
    """What the culprit issued after the others entered the call it never issued, if anything:
    a rank that went on to other calls skipped this one; one that went quiet is stuck."""
    entered = d.created_ns
    if entered is None:
        return None
    for rank in d.culprits:
        progress = analysis.progress.get(rank)
        last = progress.last if progress else None
        if last is not None and last.created_ns is not None and last.created_ns > entered:
            shapes = " + ".join(call.shape for call in last.calls)
            return f"{shapes} #{last.seq} from {describe(last.stack)}"
    return None
