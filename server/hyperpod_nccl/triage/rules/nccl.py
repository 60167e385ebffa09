"""The cross-rank NCCL rule: the verdict of comparing every rank's watchdog state (`classify`) as
one finding and one origin candidate — the straggler, the silent ranks, the minority of a
collective mismatch, every rank inside, or ranks whose logs are missing."""

from __future__ import annotations

from collections.abc import Callable

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.classify import Classification
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.findings import MAX_EVIDENCE, evidence, listed
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.root_cause import Candidate, Confidence
from hyperpod_nccl.triage.rules.outcome import Outcome
from hyperpod_nccl.triage.timeline import collective_start

_STALL_WEIGHT, _SILENT_WEIGHT, _MISMATCH_WEIGHT, _ALL_INSIDE_WEIGHT = 57, 52, 88, 40

# Verdict → (category, weight, title, confidence, finding id) of the cross-rank NCCL candidate.
_VERDICTS: dict[str, tuple[Category, int, str, Confidence, str]] = {
    "mismatch": (
        Category.COLLECTIVE_MISMATCH,
        _MISMATCH_WEIGHT,
        "Ranks issued different collectives",
        "high",
        "triage.nccl.collective_mismatch",
    ),
    "straggler": (
        Category.DATA_LOADING_STALL,
        _STALL_WEIGHT,
        "Stuck outside NCCL (data loading / training loop) while the others waited",
        "high",
        "triage.nccl.straggler",
    ),
    "silent": (
        Category.DATA_LOADING_STALL,
        _SILENT_WEIGHT,
        "Left no watchdog line while the others waited (stuck outside NCCL, or died silently)",
        "medium",
        "triage.nccl.silent_ranks",
    ),
    "incomplete": (
        Category.UNKNOWN,
        20,
        "The ranks the others waited for left no line in the input, or their logs could not be read",
        "low",
        "triage.input.missing_ranks",
    ),
    "all_inside": (
        Category.NETWORK,
        _ALL_INSIDE_WEIGHT,
        "Every rank was inside the collective and it could not complete",
        "medium",
        "triage.nccl.all_inside",
    ),
}


def nccl_verdict(incident: Incident) -> Outcome:
    verdict = incident.verdict
    builder = _FINDINGS.get(verdict.verdict)
    outcome = Outcome()
    if builder is not None:
        outcome.findings.append(builder(incident))
    if verdict.rank0_ahead and 0 in incident.states:
        outcome.findings.append(_rank0_ahead(incident))
    candidate = _candidate(incident)
    if candidate is not None:
        outcome.candidates.append(candidate)
    return outcome


def _candidate(incident: Incident) -> Candidate | None:
    verdict = incident.verdict
    if verdict.verdict not in _VERDICTS:
        return None
    category, weight, title, confidence, finding_id = _VERDICTS[verdict.verdict]
    culprits = verdict.culprits
    node = _the_one_node(incident) if verdict.verdict == "all_inside" else None
    if node is not None:
        category, title, confidence = Category.CONFIG, _one_node_title(node), "low"
        finding_id = ONE_NODE_ID
    if verdict.verdict == "silent":  # ranks that ran at some point, rather than never-started ones
        culprits = [r for r in culprits if incident.node_of(r)] or culprits
    if _busy_rank_guess(verdict):
        category, title = Category.DATA_LOADING_STALL, _only_waiters_title(verdict)
    states, fired = incident.states, incident.fired
    return Candidate(
        category=category,
        weight=weight,
        title=title,
        ranks=culprits,
        nodes=[node] if node else incident.nodes_of(culprits),
        first=next((e for r in culprits if r in states for e in states[r].witness_events), fired),
        when=collective_start(incident.at(fired), verdict.timeout_ms),
        when_derived=True,
        confidence=confidence,
        finding_id=finding_id,
    )


def _busy_rank_guess(verdict: Classification) -> bool:
    """Only waiting ranks in the input, every log read, at a collective ranks meet at around work one
    rank does alone: a 1-element all-reduce (a barrier, a flag) or a broadcast (rank 0 handing out what
    it prepared). Gradient-sized all-reduces, gathers and all-to-alls that time out this way are as
    often ranks that ran different steps."""
    if verdict.verdict != "incomplete" or verdict.unread or verdict.stuck_signature is None:
        return False
    op, numel_in, _ = verdict.stuck_signature
    return numel_in == 1 or (op or "").upper() == "BROADCAST"


def _synchronising_note(verdict: Classification) -> str:
    if not _busy_rank_guess(verdict):
        return ""
    return (
        " Until then: ranks that time out at a barrier or a broadcast usually waited for one rank doing "
        "work alone (evaluation, saving, data preparation on rank 0); that rank's log shows how far it got, "
        "and a process-group timeout longer than that work (init_process_group(timeout=…)) lets it finish."
    )


def _only_waiters_title(verdict: Classification) -> str:
    """Every rank in the input waited at a synchronisation point and none says why: the threads that
    end this way are mostly one rank busy outside NCCL past the timeout, the guess it stays."""
    barrier = verdict.stuck_signature is not None and verdict.stuck_signature[1] == 1
    where = (
        "a 1-element all-reduce (a barrier or a flag the ranks synchronise on)"
        if barrier
        else collective_name(verdict)
    )
    return (
        f"The ranks in the input waited inside {where} for ranks whose logs are not here, and no line "
        "shows a fault: most often a rank busy outside NCCL past the timeout (evaluation or generation, "
        "a checkpoint save, tokenizing or building an index on one rank), else one that died with its "
        "log elsewhere"
    )


def collective_name(verdict: Classification) -> str:
    signature = verdict.stuck_signature
    op = signature[0] if signature and signature[0] else "collective"
    return f"{op} SeqNum {verdict.stuck_seq}" if verdict.stuck_seq is not None else op


def _who(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {compress(ranks)}"


def _issued(signature: tuple[str | None, int | None, int | None]) -> str:
    op, numel_in, numel_out = signature
    sizes = f" NumelIn={numel_in} NumelOut={numel_out}" if numel_in is not None else ""
    return f"{op}{sizes}"


def _waiting_witness(incident: Incident) -> list[Event]:
    for rank in incident.verdict.waiting:
        state = incident.states[rank]
        event = state.timeout_event or state.decisive_event
        if event is not None:
            return [event]
    return []


def _nodes(ranks: list[int], incident: Incident) -> list[str]:
    return incident.nodes_of(ranks)[:16]


def _straggler(incident: Incident) -> Finding:
    verdict, topology = incident.verdict, incident.topology
    culprits = verdict.culprits
    lines = [e for r in culprits for e in incident.states[r].witness_events][:MAX_EVIDENCE]
    return Finding(
        id="triage.nccl.straggler",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Rank {compress(culprits)} never entered {collective_name(verdict)}; {len(verdict.waiting)} "
        "ranks waited for it",
        reference="debugging-guide.md § 1",
        detail="Its last enqueued work equals its last completed work: nothing was in flight, it was stuck "
        "outside NCCL (data loading or the training loop) while the others waited inside the collective.",
        ranks=listed(culprits),
        nodes=_nodes(culprits, incident),
        evidence=[evidence(e, topology) for e in lines + _waiting_witness(incident)],
    )


def _silent(incident: Incident) -> Finding:
    verdict = incident.verdict
    silent = verdict.culprits
    return Finding(
        id="triage.nccl.silent_ranks",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{len(silent)} rank{'s' if len(silent) > 1 else ''} left no watchdog line while "
        f"{len(verdict.waiting)} timed out in {collective_name(verdict)}",
        reference="debugging-guide.md § 1",
        detail=f"Silent ranks: {compress(silent)}. They were killed, crashed, never started, or were stuck "
        "outside NCCL on a PyTorch too old to report it.",
        ranks=listed(silent),
        nodes=_nodes(silent, incident),
        evidence=[evidence(e, incident.topology) for e in _waiting_witness(incident)],
    )


def _incomplete(incident: Incident) -> Finding:
    verdict = incident.verdict
    parts = []
    if verdict.absent:
        parts.append(f"Absent from the input: {_who(verdict.absent)}")
    if verdict.unread:
        parts.append(f"Ranks whose logs could not be read wholly: {compress(verdict.unread)}")
    missing = len(verdict.absent) + len(verdict.unread)
    if not parts:
        parts.append("The other ranks of the job left no line in the input (its size is not known)")
    # A world size the logs only imply (the highest rank seen) counts the missing from below.
    at_least = "" if incident.topology.world_known else "at least "
    whose = (
        f"Logs of {at_least}{missing} rank{'s' if missing > 1 else ''} are"
        if missing
        else "The other ranks' logs are"
    )
    waiting = f"{len(verdict.waiting)} rank{'s' if len(verdict.waiting) > 1 else ''}"
    return Finding(
        id="triage.input.missing_ranks",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{whose} missing or unreadable, and {waiting} timed out waiting in {collective_name(verdict)}",
        reference="debugging-guide.md § 1",
        detail=f"{'; '.join(parts)}. The rank that never entered the collective may be among them: add "
        "every node's log files (readable) and run the triage again." + _synchronising_note(verdict),
        evidence=[evidence(e, incident.topology) for e in _waiting_witness(incident)],
    )


def _mismatch(incident: Incident) -> Finding:
    verdict = incident.verdict
    groups = sorted(verdict.mismatched.items(), key=lambda item: len(item[1]))
    shown = "; ".join(f"{_who(ranks)}: {_issued(signature)}" for signature, ranks in groups[:4])
    witnesses = [incident.states[ranks[0]].timeout_event for _, ranks in groups[:MAX_EVIDENCE]]
    return Finding(
        id="triage.nccl.collective_mismatch",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Ranks issued different collectives at SeqNum {verdict.stuck_seq}",
        reference="debugging-guide.md § 2",
        detail=f"{shown}. A code or configuration bug, not a slow rank.",
        ranks=listed(verdict.culprits),
        nodes=_nodes(verdict.culprits, incident),
        evidence=[evidence(e, incident.topology) for e in witnesses if e],
    )


ONE_NODE_ID = "triage.nccl.all_inside_one_node"


def _the_one_node(incident: Incident) -> str | None:
    """The node, when every rank of the job is on one node and nothing says the job had others (a
    launcher asking for more nodes, a world larger than the ranks on it): its collectives ran over
    the node's own GPU links, so a collective that never completes is not the network's."""
    topology = incident.topology
    if len(topology.nodes) != 1 or incident.launched_nodes > 1:
        return None
    node = topology.nodes[0]
    if any(topology.node_of(rank) != node for rank in topology.world):
        return None
    return node


def _one_node_title(node: str) -> str:
    return (
        f"Every rank, all on {node}, was inside the collective and it could not complete: the GPUs' own "
        "links (IOMMU or PCIe ACS, NVLink, fabric manager), not a network"
    )


def _all_inside(incident: Incident) -> Finding:
    # Two literal declarations, not one with conditional fields: tests read each finding's id and
    # reference from the source (tests/next_steps/emitted.py).
    verdict = incident.verdict
    witness = [evidence(e, incident.topology) for e in _waiting_witness(incident)]
    node = _the_one_node(incident)
    if node is not None:
        return Finding(
            id=ONE_NODE_ID,
            status=Status.FAIL,
            priority=Priority.P0,
            title=f"All {len(verdict.waiting)} ranks on {node} were inside {collective_name(verdict)} "
            "and none was missing",
            reference="debugging-guide.md § 19",
            detail="No straggler and no silent rank, and every rank on one node: the collective ran over "
            "the node's own GPU links (P2P, shared memory, NVLink) and could not complete. A rerun with "
            "NCCL_P2P_DISABLE=1 that completes says peer access hung. If the job had other nodes whose "
            "logs are not here, add them: then it is § 3.",
            nodes=[node],
            evidence=witness,
        )
    return Finding(
        id="triage.nccl.all_inside",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"All {len(verdict.waiting)} ranks were inside {collective_name(verdict)} and none was missing",
        reference="debugging-guide.md § 3",
        detail="No straggler and no silent rank: the collective itself could not complete (fabric, NIC or "
        "transport).",
        evidence=witness,
    )


def _rank0_ahead(incident: Incident) -> Finding:
    root = incident.states[0]
    return Finding(
        id="triage.nccl.rank0_ahead",
        status=Status.INFO,
        priority=Priority.P2,
        title="Rank 0 is ahead of the others (broadcast root finished its send side)",
        reference="debugging-guide.md § 1",
        detail=f"Rank 0 completed work {root.completed}; it is the root, not a culprit.",
        ranks=[0],
        evidence=[evidence(e, incident.topology) for e in [root.decisive_event] if e],
    )


_FINDINGS: dict[str, Callable[[Incident], Finding]] = {
    "straggler": _straggler,
    "silent": _silent,
    "incomplete": _incomplete,
    "mismatch": _mismatch,
    "all_inside": _all_inside,
}
