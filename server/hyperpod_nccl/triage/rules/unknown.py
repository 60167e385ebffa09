"""Never silent on a visible failure (issue 16 item 1).

When the input shows a failure — a traceback, an NCCL error or WARN, a watchdog line, a non-zero
exit, a kill — and no rule established its cause, the root cause is `unknown` (confidence low),
naming the earliest abnormal event with its evidence, and a FAIL finding says what was seen and
which references fit. When the input shows no failure signature at all, a PASS finding says what
was looked for, so "nothing is wrong" never reads like "a failure I did not understand".
"""

from __future__ import annotations

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import exit_code, nccl_result, retried
from hyperpod_nccl.triage.findings import evidence, listed
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed
from hyperpod_nccl.triage.timeline import order_key

UNKNOWN_ID = "triage.unknown.failure"
CLEAN_ID = "triage.clean"
_UNKNOWN_WEIGHT = 1  # any established cause wins over "a failure was seen"
_MAX_WITNESSES = 4

# Kind → (what it is, the reference that fits). Lines that may start a failure come first: the
# earliest of them is named before the earliest consequence (a SIGTERM, the watchdog abort).
_PRIMARY: dict[str, tuple[str, str]] = {
    "nccl_warn": ("an NCCL WARN line", "debugging-guide.md § 3"),
    "nccl_error": ("an NCCL call that returned an error", "debugging-guide.md § 3"),
    "remote_exit": ("NCCL: remote process exited or network error", "debugging-guide.md § 3"),
    "transport_error": ("a transport error", "debugging-guide.md § 3"),
    "ib_setup": ("a failed IB/RoCE verbs call", "debugging-guide.md § 3"),
    "exception": ("a Python exception", "debugging-guide.md § 15"),
    "traceback": ("a Python traceback", "debugging-guide.md § 15"),
    "traceback_frame": (
        "the frames of a Python traceback (its exception line is not in the input)",
        "debugging-guide.md § 15",
    ),
    "cuda_error": ("a CUDA error", "debugging-guide.md § 20"),
    "async_error": ("an NCCL async error on a collective", "debugging-guide.md § 3"),
    "heartbeat": ("the watchdog's heartbeat monitor", "debugging-guide.md § 1"),
    "nccl_failure": ("an NCCL call that failed (nccl-tests)", "performance-testing.md § 5"),
    "crash": ("a process crash (abort or segmentation fault)", "debugging-guide.md § 15"),
    "store_connect": ("a failed connection to the c10d store", "debugging-guide.md § 7"),
    "pod_failed": ("a pod whose container failed (a `kubectl get pods` row)", "debugging-guide.md § 9"),
    "task_failed": ("a task a Dask worker ran that failed", "debugging-guide.md § 15"),
    "last_words": (
        "an error line among the log's last lines, in a wording no rule knows",
        "debugging-guide.md § 15",
    ),
}
_CONSEQUENCES: dict[str, tuple[str, str]] = {
    "wd_timeout": ("a watchdog collective timeout", "debugging-guide.md § 1"),
    "wd_status": ("a watchdog failure report", "debugging-guide.md § 1"),
    "wd_frame": ("the watchdog's C++ stack after a collective timeout", "debugging-guide.md § 1"),
    "dump_first": ("a watchdog dump signal", "debugging-guide.md § 1"),
    "take_down": ("the watchdog taking the process down", "debugging-guide.md § 1"),
    "nccl_aborted": ("an aborted NCCL communicator", "debugging-guide.md § 3"),
    "socket_closed": ("NCCL connections closed by a peer", "debugging-guide.md § 3"),
    "nccl_return": ("NCCL's return trace of a failed call (`file.cc:N -> code`)", "debugging-guide.md § 3"),
    "worker_exit": (
        "a worker exit with an error code or signal",
        "debugging-guide.md § 1",
    ),
    "srun_task": ("an srun task that failed", "debugging-guide.md § 16"),
    "slurm_cancel": ("a Slurm cancellation", "debugging-guide.md § 16"),
    "slurm_failed": ("a Slurm step that failed", "debugging-guide.md § 16"),
    "slurm_error": ("a Slurm error", "debugging-guide.md § 16"),
    "sigterm": ("a termination signal", "debugging-guide.md § 1"),
    "dataloader_exit": ("a DataLoader worker that exited", "debugging-guide.md § 17"),
}
LOOKED_FOR = (
    "watchdog timeouts and dump signals, NCCL errors (any framing of NCCL's result codes) and WARN lines, "
    "transport errors (EFA, libfabric, IB, sockets), Python tracebacks and exceptions, CUDA errors and "
    "out-of-memory, GPU Xid / ECC / fallen-off-the-bus lines, OOM kills and SIGKILL, crashes (segmentation "
    "faults, aborts, core dumps), non-zero exits and signals from any launcher, srun task failures, Dask "
    "task failures, Slurm errors and cancellations, rendezvous and store timeouts, storage and data errors, "
    "and error lines among each file's last lines"
)


def abnormal_events(incident: Incident) -> tuple[list[Event], list[Event]]:
    """(lines that may start a failure, lines that follow one) among everything read."""
    primary = [e for e in incident.index.kind(*_PRIMARY) if _failed(e)]
    following = [e for e in incident.index.kind(*_CONSEQUENCES) if _failed(e)]
    return primary, following


def _failed(event: Event) -> bool:
    if event.kind == "ib_setup":
        return not retried(event)
    if event.kind == "worker_exit":
        return "nonzero" in event.fields or (exit_code(event) or 0) != 0
    if event.kind == "srun_task":
        status = event.fields.get("status", "")
        return not status.endswith("exit code 0")
    return True


# NCCL's `internal error` with no WARN line saying which check failed (NCCL_DEBUG off) has causes of
# every kind, seen in equal measure in public threads: no one of them is the likelier.
_INTERNAL_ERROR_CAUSES = (
    "NCCL said only that an internal check failed (no WARN line names it: NCCL_DEBUG was off). Known "
    "causes: an interface NCCL_SOCKET_IFNAME names that one host lacks (multinode.md § 2), a topology "
    "file NCCL cannot read (debugging-guide.md § 19), a network plugin built for another NCCL or NCCL "
    "builds that differ between nodes (debugging-guide.md § 10), an NCCL bug; a rerun with "
    "NCCL_DEBUG=INFO names the check in a WARN line and shows the network plugin each rank loaded."
)
_INTERNAL_ERROR_REFERENCES = ("multinode.md § 2", "debugging-guide.md § 19", "debugging-guide.md § 10")


def _internal_error_alone(primary: list[Event]) -> bool:
    if any(e.kind == "nccl_warn" for e in primary):
        return False
    return any(e.kind == "nccl_error" and nccl_result(e).startswith("internal error") for e in primary)


def unexplained_failure(incident: Incident) -> Outcome:
    primary, following = abnormal_events(incident)
    # torchrun ("Root Cause (first observed failure)") and Open MPI ("The first process to do so
    # was: Process name: [[…],N]") name the worker whose failure came first: look there first.
    named = [
        e
        for e in incident.index.kind("worker_exit")
        if (e.fields.get("first_failure") or "mpi_rank" in e.fields) and e.rank is not None
    ]
    first = incident.first(named) or incident.first(primary) or incident.first(following)
    if first is None:
        return Outcome()
    stop = stopped_first(incident, first, named=bool(named))
    if stop is not None:
        return _stopped_from_outside(incident, stop)
    if primary and all(e.kind == "heartbeat" for e in primary):
        return _watchdog_hung(incident, primary)
    what, reference = (_PRIMARY | _CONSEQUENCES)[first.kind]
    witnesses = _witnesses(incident, first, primary + following)
    ranks = [first.rank] if first.rank is not None else []
    nodes = [node] if (node := incident.node_of_line(first)) else []
    seen = _what_was_seen(primary + following)
    references = {(_PRIMARY | _CONSEQUENCES)[e.kind][1] for e in witnesses}
    known_causes = ""
    if _internal_error_alone(primary):
        known_causes = f" {_INTERNAL_ERROR_CAUSES}"
        references |= set(_INTERNAL_ERROR_REFERENCES)
        reference = _INTERNAL_ERROR_REFERENCES[-1]  # the section that lists them
    finding = Finding(
        id=UNKNOWN_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"A failure was seen but its cause is not established; the earliest sign is {what}",
        reference=reference,
        detail=f"Seen: {seen}. No rule recognised the origin; the earliest abnormal line is quoted first."
        f"{known_causes} References that fit: {', '.join(sorted(references))}.",
        ranks=listed(ranks),
        nodes=nodes,
        evidence=[evidence(e, incident.topology) for e in witnesses],
    )
    return blamed(
        incident,
        finding,
        category=Category.UNKNOWN,
        weight=_UNKNOWN_WEIGHT,
        title=f"Cause not established; the earliest sign of the failure is {what}",
        ranks=ranks,
        first=first,
        confidence="low",
        nodes=nodes,
    )


def stopped_first(incident: Incident, first: Event | None, *, named: bool = False) -> Event | None:
    """The line saying a process of the job was told to stop (torchrun's death signal, a daemon's
    `received SIGTERM`), when it came before `first`, the earliest abnormal line: what failed after
    it is the shutting down (torchrun's own traceback), not a cause. None when a launcher named the
    worker that failed first (`named`)."""
    stop = incident.first(e for e in incident.index.kind("sigterm") if "death" in e.fields)
    if stop is None or first is None:
        return None
    return stop if stop is first or (not named and _precedes(incident, stop, first)) else None


def _precedes(incident: Incident, one: Event, other: Event) -> bool:
    """`one` happened before `other`: earlier in the same file, or earlier by the clock."""
    if one.source == other.source:
        return one.line < other.line
    at_one, at_other = incident.clock.at(one.stamp), incident.clock.at(other.stamp)
    return at_one is not None and at_other is not None and at_one < at_other


_SCHEDULER = (
    "look at the scheduler (scancel, time limit, preemption) or Kubernetes (pod deleted, evicted, node "
    "drained) for who sent it, or at the job's own tooling (a launcher that cleans up the processes its "
    "script left running when the script returned)."
)
# The signal a launcher reports, and who usually sends it.
_SENDERS = {
    "1": (
        "SIGHUP",
        "the terminal or SSH session that started it closed (nohup alone does not shield torchrun: start it "
        "with sbatch, under tmux or screen, or with setsid).",
    ),
    "2": ("SIGINT", "someone pressed Ctrl-C, or a wrapper forwarded an interrupt."),
    "15": ("SIGTERM", _SCHEDULER),
}
_NUMBER_OF = {name: number for number, (name, _) in _SENDERS.items()}
_HANGUP = "1"
_SCHEDULER_SECTION = "debugging-guide.md § 16"
HANGUP_ID = "triage.config.terminal_hangup"
TERMINATED_ID = "triage.infra.terminated"


def _stopped_from_outside(incident: Incident, signal: Event) -> Outcome:
    """The launcher itself was sent SIGTERM before anything failed: someone or something outside the
    job stopped it (scancel, a pod deleted or evicted, a preemption, a time limit)."""
    named = _NUMBER_OF.get(signal.fields.get("signame", ""))
    number = signal.fields.get("signum") or signal.fields.get("got") or named or "15"
    name, sender = _SENDERS.get(number, (f"signal {number}", _SCHEDULER))
    # A hang-up is how the job was started (a terminal it still hung from), not the cluster acting on it.
    hangup = number == _HANGUP
    finding_id = HANGUP_ID if hangup else TERMINATED_ID
    # torchrun's words are about itself; a daemon's (Ray's raylet) or a framework's about its process
    launcher = "death signal" in signal.fields["death"] or "got signal" in signal.fields["death"]
    receiver = "its launcher" if launcher else "a process of the job"
    finding = Finding(
        id=finding_id,
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"The job was stopped from outside: {receiver} received {name} before any failure showed",
        reference=_SCHEDULER_SECTION,
        detail=f"Nothing in the logs failed before {receiver} was told to shut down: {sender}",
        nodes=[node] if (node := incident.node_of_line(signal)) else [],
        evidence=[evidence(signal, incident.topology)],
    )
    return blamed(
        incident,
        finding,
        category=Category.CONFIG if hangup else Category.INFRASTRUCTURE,
        weight=_UNKNOWN_WEIGHT,
        title=f"Stopped from outside ({receiver} received {name}) before any failure showed",
        ranks=[],
        first=signal,
        confidence="low",
        nodes=[],
    )


WATCHDOG_HUNG_ID = "triage.software.watchdog_hung"


def _watchdog_hung(incident: Incident, heartbeats: list[Event]) -> Outcome:
    """The watchdog's heartbeat monitor is the only failure: no collective timed out, no NCCL, CUDA or
    GPU error came first. The watchdog thread itself was stuck in a NCCL or CUDA call, which in public
    threads is mostly the process groups' teardown at exit (never destroyed, or destroyed in another
    order on each rank, which NCCL 2.23 and later no longer tolerate)."""
    first = incident.first(heartbeats) or heartbeats[0]
    ranks = sorted({e.rank for e in heartbeats if e.rank is not None})
    nodes = incident.nodes_of_lines(heartbeats)
    finding = Finding(
        id=WATCHDOG_HUNG_ID,
        status=Status.FAIL,
        priority=Priority.P0,
        title="The NCCL watchdog itself hung in a NCCL or CUDA call, with no collective timed out and no "
        "error before it: most often process groups torn down at exit in another order on each rank, or "
        "not destroyed before exit",
        reference="debugging-guide.md § 1",
        detail="Only the heartbeat monitor fired. Where the job had finished its work (a last step, a "
        "saved model) the teardown hung: every rank should call destroy_process_group() once, after its "
        "last collective, and destroy any sub-groups in the same order. Where it had not, a GPU or driver "
        "that stopped answering does the same; the node's Xid lines tell.",
        ranks=listed(ranks),
        nodes=nodes,
        evidence=[evidence(e, incident.topology) for e in _witnesses(incident, first, heartbeats)],
    )
    return blamed(
        incident,
        finding,
        category=Category.SOFTWARE,
        weight=_UNKNOWN_WEIGHT,
        title="The NCCL watchdog hung in a NCCL or CUDA call with nothing failing before it (most often the "
        "process groups' teardown at exit)",
        ranks=ranks,
        first=first,
        confidence="low",
        nodes=nodes,
    )


def _witnesses(incident: Incident, first: Event, events: list[Event]) -> list[Event]:
    """The first abnormal line, then the first line of each other kind, earliest first."""
    chosen = [first]
    kinds = {first.kind}
    for event in sorted(events, key=lambda e: order_key(e, incident.clock)):
        if event.kind not in kinds and len(chosen) < _MAX_WITNESSES:
            chosen.append(event)
            kinds.add(event.kind)
    return chosen


def _what_was_seen(events: list[Event]) -> str:
    counts: dict[str, int] = {}
    for event in events:
        counts[event.kind] = counts.get(event.kind, 0) + event.count
    names = _PRIMARY | _CONSEQUENCES
    return "; ".join(
        f"{names[kind][0]} ×{count}" for kind, count in sorted(counts.items(), key=lambda i: -i[1])
    )


def clean_statement(incident: Incident) -> Finding:
    reading = incident.reading
    return Finding(
        id=CLEAN_ID,
        status=Status.PASS,
        title="No failure signature in the logs",
        reference="debugging-guide.md § 1",
        detail=f"Read {reading.lines_read} lines in {reading.files_read} files and looked for {LOOKED_FOR}: "
        "none was found.",
    )
