"""`run_triage`: discover → scan every file once (in parallel when it pays) → analyse → Report.

Only discovery and scanning touch files; `analyse` is a pure function of the scans, so the
scenario tests and the MCP tool get exactly what the CLI prints.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from multiprocessing import get_context
from pathlib import Path

from hyperpod_nccl.models import Category, Finding, Report, RootCause, SkippedInput
from hyperpod_nccl.triage.budget import fit_to_budget
from hyperpod_nccl.triage.candidates import (
    catalogue_candidates,
    nccl_candidate,
    silent_exit_candidate,
    silent_exits,
)
from hyperpod_nccl.triage.classify import Classification, classify
from hyperpod_nccl.triage.discover import InputFile, discover
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.fatal import Meaning, meaning_of
from hyperpod_nccl.triage.findings import (
    catalogue_finding,
    decisive,
    evidence,
    nccl_findings,
    rank_state_groups,
    silent_exit_finding,
)
from hyperpod_nccl.triage.rank_state import RankState, build_rank_states
from hyperpod_nccl.triage.root_cause import (
    Candidate,
    Context,
    choose,
    date_by_the_stall,
    drop_stale,
    root_cause,
)
from hyperpod_nccl.triage.scanner import scan_input
from hyperpod_nccl.triage.storage import counter_findings
from hyperpod_nccl.triage.summary import Topology, build_topology, job_summary, node_versions, pci_bus
from hyperpod_nccl.triage.timeline import Clock, build_timeline, collective_start, earliest
from hyperpod_nccl.triage.versions import version_skew

PARALLEL_MIN_BYTES = 64 << 20  # below this, starting worker processes costs more than it saves
MAX_WORKERS = 4
ORIGIN_EVIDENCE = 16
_FINAL_KINDS = frozenset({"take_down", "sigterm"})
_LAUNCHER_EXIT_KINDS = frozenset({"worker_exit", "srun_task", "slurm_cancel"})  # how a job's end is reported
_NODE_LOG_KINDS = frozenset({"xid", "sxid", "fell_off_bus", "oom_killed"})
_NODE_LOG_NAMES = (".dmesg", "kern.log", "dmesg.log", "syslog", "messages")


def run_triage(
    log_paths: Sequence[Path],
    storage_paths: Sequence[Path] = (),
    *,
    follow_links: bool = False,
    boundaries: Sequence[Path] | None = None,
) -> Report:
    """Triage worker logs (and optional storage daemon logs) into one report (kind="triage").
    Symlinks out of the input (or out of `boundaries`) are skipped unless `follow_links`."""
    found = discover(log_paths, storage_paths, follow_links=follow_links, boundaries=boundaries)
    scans = scan_all(found.files)
    return analyse(scans, found.skipped)


def scan_all(files: list[InputFile]) -> list[FileScan]:
    """Scan every file once, across processes when the input is big enough to pay for them."""
    workers = _worker_count(files)
    if workers < 2:
        return [scan_input(item) for item in files]
    biggest_first = sorted(files, key=lambda f: -f.size)
    try:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
            scans = list(pool.map(scan_input, biggest_first))
    except BrokenProcessPool:  # a worker died (e.g. the OOM killer): the serial path still answers
        scans = [scan_input(item) for item in biggest_first]
    return sorted(scans, key=lambda scan: scan.source)


def _worker_count(files: list[InputFile]) -> int:
    """Processes are forked, which is only safe from a single-threaded process (the CLI, not the
    MCP server's worker thread); forking keeps start-up cheap and never re-runs the entry point."""
    if threading.active_count() > 1 or sum(f.size for f in files) < PARALLEL_MIN_BYTES:
        return 1
    return min(os.cpu_count() or 1, MAX_WORKERS, len(files))


def analyse(scans: list[FileScan], skipped: list[SkippedInput]) -> Report:
    events = [event for scan in scans for event in scan.events]
    topology = build_topology(scans, events)
    _fill_nodes(events, topology)
    clock = Clock(scans)
    states = build_rank_states(events)
    seen = {e.rank for e in events if e.rank is not None} | set(topology.rank_node)
    verdict = classify(states, topology.world, seen)
    groups = _group_by_meaning(events)
    fired = earliest(
        [s.decisive_event for s in states.values() if s.watchdog == "fired" and s.decisive_event], clock
    )
    findings, candidates = _findings_and_candidates(events, states, verdict, groups, fired, topology, clock)
    context = _context(scans, verdict, states, events, groups, fired, clock)
    cause, origin = _root_cause(candidates, verdict, context, topology)
    if origin is not None and origin.finding_id in groups:
        _widen_evidence(findings, groups[origin.finding_id][1], origin.finding_id, topology, clock)
    culprits = cause.culprit_ranks if cause else verdict.culprits
    timeline = build_timeline(groups, states, verdict, fired, culprits, clock)
    report = Report.build(
        "triage",
        findings,
        files_read=sum(1 for scan in scans if scan.lines_read),
        ranks_seen=len({e.rank for e in events if e.rank is not None} | set(topology.rank_node)),
        root_cause=cause,
        timeline=timeline,
        skipped=skipped + [SkippedInput(source=s.source, reason=p) for s in scans for p in s.problems],
        job=job_summary(
            scans, events, topology, clock.notes()
        ),  # after the timeline: notes say what was dated
        rank_states=rank_state_groups(states, verdict, topology),
    )
    return fit_to_budget(report, protected=origin.finding_id if origin else None)


def _findings_and_candidates(
    events: list[Event],
    states: dict[int, RankState],
    verdict: Classification,
    groups: dict[str, tuple[Meaning, list[Event]]],
    fired: Event | None,
    topology: Topology,
    clock: Clock,
) -> tuple[list[Finding], list[Candidate]]:
    """Every finding the report lists, and every origin the root cause can choose from."""
    findings = nccl_findings(verdict, states, topology, clock)
    findings += [catalogue_finding(meaning, found, topology, clock) for meaning, found in groups.values()]
    findings += counter_findings(events, topology)
    candidates = catalogue_candidates(groups, verdict, topology, clock)
    candidates += [c for c in [nccl_candidate(verdict, states, fired, topology, clock)] if c]
    skew = version_skew(events, node_versions(events, topology), topology, clock)
    if skew:
        findings.append(skew.finding)
        candidates.append(skew.candidate)
    exits = silent_exits(events, verdict)
    if exits:
        findings.append(silent_exit_finding(exits, topology, clock))
        candidates += [c for c in [silent_exit_candidate(exits, verdict, topology, clock)] if c]
    return findings, candidates


def _fill_nodes(events: list[Event], topology: Topology) -> None:
    """Give every event a node (its rank's host, or a host its path names) and, for node-level
    lines, the rank behind them: the process id an OOM kill or exit names, the GPU bus an Xid names."""
    by_token = {node: node for node in topology.nodes}
    for event in events:
        if event.node is None:
            event.node = topology.node_of(event.rank) or _host_in_path(event.source, by_token)
        if event.rank is None and event.node is not None:
            event.rank = _rank_behind(event, event.node, topology)


def _rank_behind(event: Event, node: str, topology: Topology) -> int | None:
    fields = event.fields
    pid = fields.get("pid") or fields.get("block_pid")
    if pid and pid.isdigit():
        return topology.pid_rank.get((node, int(pid)))
    if "bdf" in fields:
        return topology.bus_rank.get((node, pci_bus(fields["bdf"])))
    return None


def _host_in_path(source: str, hosts: dict[str, str]) -> str | None:
    for part in source.replace("\\", "/").split("/"):
        stem = part.split(".", 1)[0]
        if stem in hosts:
            return hosts[stem]
        for host in hosts:
            if host in part:
                return host
    return None


def _group_by_meaning(events: list[Event]) -> dict[str, tuple[Meaning, list[Event]]]:
    groups: dict[str, tuple[Meaning, list[Event]]] = {}
    for event in events:
        meaning = meaning_of(event)
        if meaning is not None:
            groups.setdefault(meaning.id, (meaning, []))[1].append(event)
    return groups


def _context(
    scans: list[FileScan],
    verdict: Classification,
    states: dict[int, RankState],
    events: list[Event],
    groups: dict[str, tuple[Meaning, list[Event]]],
    fired: Event | None,
    clock: Clock,
) -> Context:
    signature = verdict.stuck_signature
    collective = None
    if verdict.stuck_seq is not None:
        collective = (
            f"{signature[0] if signature and signature[0] else 'collective'} SeqNum {verdict.stuck_seq}"
        )
    launcher = [e for e in events if e.kind in _LAUNCHER_EXIT_KINDS]
    finals = launcher or [e for e in events if e.kind in _FINAL_KINDS]
    noise = groups.get("triage.noise.connection_resets")
    kernel_sources = {
        e.source for e in events if e.kind in _NODE_LOG_KINDS or e.source.endswith(_NODE_LOG_NAMES)
    }
    return Context(
        verdict=verdict,
        collective=collective,
        started=collective_start(clock.at(fired.stamp) if fired else None, verdict.timeout_ms),
        fired=fired,
        fired_at=clock.at(fired.stamp) if fired else None,
        fired_ranks=sum(1 for s in states.values() if s.watchdog == "fired"),
        final=_latest(finals, clock),
        noise_count=sum(e.count for e in noise[1]) if noise else 0,
        hardware_logs_seen=bool(kernel_sources),
        kernel_oom_seen="triage.host.oom_killed" in groups,
        hardware_fault_seen=any(m.category == Category.GPU_HARDWARE for m, _ in groups.values()),
        job_started=_job_started(scans, events, kernel_sources, clock, fired, verdict),
    )


def _latest(events: list[Event], clock: Clock) -> Event | None:
    def key(event: Event) -> tuple[bool, datetime, int]:
        moment = clock.at(event.stamp)
        return (moment is not None, moment or datetime.min, event.line)

    return max(events, key=key, default=None)


def _job_started(
    scans: list[FileScan],
    events: list[Event],
    node_logs: set[str],
    clock: Clock,
    fired: Event | None,
    verdict: Classification,
) -> datetime | None:
    """The earliest time a worker log speaks (node logs such as dmesg reach back before the job);
    the stuck collective was issued while the job ran, so it bounds the start too."""
    moments = [m for e in events if e.source not in node_logs and (m := clock.at(e.stamp))]
    moments += [m for s in scans if s.source not in node_logs and (m := clock.at(s.first_dated))]
    moments += [
        m for m in [collective_start(clock.at(fired.stamp) if fired else None, verdict.timeout_ms)] if m
    ]
    return min(moments, default=None)


def _widen_evidence(
    findings: list[Finding], events: list[Event], finding_id: str, topology: Topology, clock: Clock
) -> None:
    """The origin's finding quotes every witness rank (up to a limit), not just the first two."""
    for finding in findings:
        if finding.id == finding_id:
            finding.evidence = [evidence(e, topology) for e in decisive(events, clock, ORIGIN_EVIDENCE)]


def _root_cause(
    candidates: list[Candidate], verdict: Classification, context: Context, topology: Topology
) -> tuple[RootCause | None, Candidate | None]:
    suspects = verdict.culprits if verdict.verdict in ("straggler", "silent") else []
    candidates, context.stale = drop_stale(candidates, context.job_started)
    date_by_the_stall(candidates, set(suspects), context.started)
    top = choose(candidates)
    if top is None:
        return None, None
    if suspects and (not top.ranks or top.category == Category.STORAGE_IO):
        on_nodes = [r for r in suspects if not top.nodes or topology.node_of(r) in top.nodes]
        top.ranks = on_nodes or (suspects if top.category == Category.STORAGE_IO else top.ranks)
    if top.finding_id == "triage.network.transport_error" and verdict.verdict == "all_inside":
        top.confidence = "high"  # transport errors, and every rank was inside the collective
    nodes = sorted({n for r in top.ranks if (n := topology.node_of(r))}) or top.nodes
    return root_cause(top, context, nodes), top
