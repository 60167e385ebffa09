"""The catalogue rule: every meaning the lines carry (`fatal.py`) is one finding, and each meaning
that can start a failure is one origin candidate, refined by its family's origin rule."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from hyperpod_nccl.models import Category, Finding, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import (
    CUDA_AFTER_TRANSPORT,
    GLOO_LOOPBACK,
    HOROVOD_SHUT_DOWN_AFTER,
    NCCL_RAISED,
    ONE_DEVICE_FOR_ALL,
    Meaning,
    cuda_oom_figures,
    retried,
)
from hyperpod_nccl.triage.findings import decisive, event_ranks, listed, quoted, scope
from hyperpod_nccl.triage.model import Group, Incident
from hyperpod_nccl.triage.root_cause import Candidate
from hyperpod_nccl.triage.rules.fabric import never_worked
from hyperpod_nccl.triage.rules.frames import CRASH_IDS, faulting_frame, library_name
from hyperpod_nccl.triage.rules.horovod import SHUTDOWN_ID, first_failure_named, rank_not_in_input
from hyperpod_nccl.triage.rules.origin import ORIGIN_REFINERS, Refiner
from hyperpod_nccl.triage.rules.outcome import Outcome
from hyperpod_nccl.triage.rules.peer_address import bootstrap_interface, named_interface

_KILL_IDS = frozenset({"triage.host.sigkill"})
# Guesses from an NCCL result code alone: an NCCL WARN line (or a failed verbs call) names the call
# that really failed, and with one in the logs the guess is withdrawn (the earliest abnormal line is
# quoted instead).
_GUESSES_WITHOUT_WARN = frozenset({"triage.config.nccl_system_call"})
_NCCL_WARN_ID = "triage.nccl.warn"
# CUDA errors that follow a transport failure in the same process are its aftermath.
_CUDA_ERROR_IDS = frozenset(
    {"triage.cuda.illegal_address", "triage.cuda.error", "triage.software.nccl_cuda_call"}
)
_TRANSPORT_FAILURE_KINDS = ("ib_completion", "ib_setup", "transport_error")
_NCCL_CUDA_CALL_ID = "triage.software.nccl_cuda_call"
# NCCL WARNs read as their own families: each names the call an error code came back from.
_NAMED_BY_A_WARN = ("collnet_unavailable", "foreign_connection")
_CUDA_FAILURE_KINDS = (
    "cuda_error",
    "nccl_cuda_oom",
    "illegal_address",
    "launch_failure",
    "nvls",
    "p2p_unsupported",
)
# NCCL's missing verbs library (a fact: alone it says nothing) says why it used sockets on an IB interface.
_SOCKET_OVER_IB_ID = "triage.config.socket_over_ib"
_DUPLICATE_GPU_ID = "triage.software.duplicate_gpu"
# Connections that fail when the other nodes were told the loopback address (gloo's fallback warning).
_PEERS_UNREACHED_IDS = frozenset(
    {"triage.rendezvous.timeout", "triage.unknown.gloo_timeout", "triage.config.loopback_peer"}
)
_FLUSHED = "5"  # work requests flushed after an earlier error: not a failure of its own
# After a candidate is proposed: who began the failure (origin.py), whether a fabric error means a
# fabric that never worked (fabric.py), which cause an unreadable peer address has and which
# interface a failed bootstrap went over (peer_address.py), and whether the rank Horovod lost is in
# the input (horovod.py).
REFINERS: tuple[Refiner, ...] = (
    *ORIGIN_REFINERS,
    never_worked,
    named_interface,
    bootstrap_interface,
    rank_not_in_input,
)


def catalogue(incident: Incident) -> Outcome:
    outcome = Outcome()
    for group in _regrouped(incident):
        outcome.findings.append(catalogue_finding(group, incident))
        found = _catalogue_candidate(group, incident)
        if found is not None:
            outcome.candidates.append(found)
    return outcome


def _regrouped(incident: Incident) -> list[Group]:
    """The incident's groups, guesses withdrawn and aftermath relabelled; groups that now share a
    meaning (two kinds of CUDA error after one transport failure) are one."""
    merged: dict[str, Group] = {}
    for group in incident.groups.values():
        if group.meaning.id == _SOCKET_OVER_IB_ID:
            group = Group(group.meaning, group.events + incident.index.kind("verbs_missing"))
        if group.meaning.id in _PEERS_UNREACHED_IDS and (fallback := incident.index.kind("gloo_loopback")):
            group = Group(GLOO_LOOPBACK, fallback + group.events)
        if group.meaning.id == _DUPLICATE_GPU_ID and (shared := _one_device_for_several(incident)):
            group = Group(ONE_DEVICE_FOR_ALL, group.events + shared)
        group = _without_withdrawn_guess(group, incident)
        if (kept := merged.get(group.meaning.id)) is not None:
            group = Group(kept.meaning, kept.events + group.events)
        merged[group.meaning.id] = group
    return list(merged.values())


def _without_withdrawn_guess(group: Group, incident: Incident) -> Group:
    named_call = _NCCL_WARN_ID in incident.groups or incident.index.kind(
        *_TRANSPORT_FAILURE_KINDS, *_NAMED_BY_A_WARN
    )
    if group.meaning.id in _GUESSES_WITHOUT_WARN and named_call:
        return Group(NCCL_RAISED, group.events)
    if group.meaning.id == _NCCL_CUDA_CALL_ID and _cuda_failure_named(incident):
        return Group(NCCL_RAISED, group.events)  # NCCL's return trace of the CUDA call its WARN names
    if group.meaning.id in _CUDA_ERROR_IDS and _after_transport_failure(group.events, incident):
        return Group(CUDA_AFTER_TRANSPORT, group.events)
    if group.meaning.id == SHUTDOWN_ID and first_failure_named(incident):
        # the shutdown followed the failure of the rank the launcher named
        return Group(HOROVOD_SHUT_DOWN_AFTER, group.events)
    return group


def _one_device_for_several(incident: Incident) -> list[Event]:
    """A launcher banner that named one device for two or more processes of one file."""
    return [e for e in incident.index.kind("launcher_device") if e.count > 1]


def _cuda_failure_named(incident: Incident) -> bool:
    """NCCL naming the CUDA call that failed: its WARN (`init.cc:426 NCCL WARN Cuda failure '…'`), or the
    `Last error:` PyTorch's exception quotes from it (`Cuda failure 'initialization error'`)."""
    return any(
        "NCCL WARN" in e.text or "Cuda failure" in e.text for e in incident.index.kind(*_CUDA_FAILURE_KINDS)
    )


def _after_transport_failure(events: list[Event], incident: Incident) -> bool:
    """Every line came after a transport failure of the same file (below it, or later on the same node
    when both are dated): the process's NCCL communicator had already failed."""
    first_line: dict[str, int] = {}
    first_time: dict[str | None, datetime] = {}
    for failure in incident.index.kind(*_TRANSPORT_FAILURE_KINDS):
        if retried(failure) or (failure.kind == "ib_completion" and failure.fields.get("status") == _FLUSHED):
            continue
        first_line[failure.source] = min(failure.line, first_line.get(failure.source, failure.line))
        if (failed_at := incident.at(failure)) is not None:
            first_time[failure.node] = min(failed_at, first_time.get(failure.node, failed_at))

    def after(event: Event) -> bool:
        if event.line > first_line.get(event.source, event.line):
            return True
        moment, failed_at = incident.at(event), first_time.get(event.node)
        return moment is not None and failed_at is not None and failed_at < moment

    return bool(first_line) and all(after(e) for e in events)


def catalogue_finding(group: Group, incident: Incident) -> Finding:
    meaning, events = group.meaning, group.events
    ranks = sorted({e.rank for e in events if e.rank is not None})
    nodes = incident.nodes_of_lines(events)
    lines = sum(e.count for e in events)
    detail = f"Seen {lines} time{'s' if lines > 1 else ''}" + (
        f" on {scope(ranks, nodes)}" if ranks or nodes else ""
    )
    if lines > len(events):
        detail += " (the first line of each rank and kind is quoted)"
    first = incident.first(events)
    if meaning.id == "triage.gpu.cuda_oom" and first is not None and "tried" in first.fields:
        detail += f"; {cuda_oom_figures(first)}"
    if meaning.id == _SOCKET_OVER_IB_ID and any(e.kind == "verbs_missing" for e in events):
        detail += "; NCCL could not open libibverbs: the image or host lacks the IB verbs library"
    if meaning.category is None and meaning.status == Status.INFO:
        detail += ". A consequence or noise, not the cause."
    evidence = quoted(decisive(events, incident.clock), incident.topology)
    if meaning.id in CRASH_IDS and (frame := faulting_frame(events, incident)) is not None:
        function = f"{frame.fields['function']} in " if frame.fields.get("function") else ""
        detail += (
            f"; the backtrace's first frame outside the signal handler is {function}{library_name(frame)}"
        )
        evidence[1:1] = quoted([frame], incident.topology)  # beside the crash line, before any trimming
    return Finding(
        id=meaning.id,
        status=meaning.status,
        priority=meaning.priority,
        title=meaning.title,
        reference=meaning.reference,
        detail=detail + ("" if detail.endswith(".") else "."),
        ranks=listed(ranks),
        nodes=nodes[:16],
        evidence=evidence,
    )


def _catalogue_candidate(group: Group, incident: Incident) -> Candidate | None:
    meaning, events = group.meaning, group.events
    if meaning.category is None or meaning.weight == 0:
        return None
    if meaning.id in _GUESSES_WITHOUT_WARN and any(
        g.meaning.id == _NCCL_WARN_ID for g in incident.groups.values()
    ):
        return None
    verdict = incident.verdict
    suspects = set(verdict.culprits) if verdict.verdict in ("straggler", "silent") else set()
    ranks = set().union(*(event_ranks(e) for e in events))
    if meaning.id in _KILL_IDS and verdict.waiting:
        # SIGKILL also ends survivors; it only marks the origin on a rank that never entered.
        ranks &= suspects
        if not ranks:
            return None
        events = [e for e in events if event_ranks(e) & ranks]
    found = candidate_of(meaning, events, ranks, incident)
    for refiner in REFINERS:
        refiner(found, group, incident)
    return found


def candidate_of(
    meaning: Meaning, events: list[Event], ranks: Iterable[int], incident: Incident
) -> Candidate:
    """A candidate blaming `ranks` (and the nodes of the events) for `meaning`, dated by its first line."""
    first = incident.first(events)
    nodes = {e.node for e in events if e.node} | set(incident.nodes_of(ranks))
    return Candidate(
        category=meaning.category or Category.UNKNOWN,
        weight=meaning.weight,
        title=meaning.title,
        ranks=sorted(set(ranks)),
        nodes=sorted(nodes),
        first=first,
        when=incident.at(first),
        confidence="high" if meaning.weight >= 75 else "medium" if meaning.weight >= 50 else "low",
        finding_id=meaning.id,
    )
