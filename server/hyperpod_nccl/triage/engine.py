"""`run_triage`: discover → scan every file once (in parallel when it pays) → analyse → Report.

Only discovery and scanning touch files; `analyse` is a pure function of the scans: it builds the
incident model once (`model.build_incident`), runs every rule over it (`rules.run_rules`) and
chooses the origin among their candidates, so the scenario tests and the MCP tool get exactly
what the CLI prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from hyperpod_nccl.flight_recorder.join import dump_evidence, split_inputs
from hyperpod_nccl.models import Category, Finding, Report, RootCause, SkippedInput, Status
from hyperpod_nccl.next_steps import attach
from hyperpod_nccl.triage.activity import WindowReader, rank_activity
from hyperpod_nccl.triage.budget import fit_to_budget
from hyperpod_nccl.triage.causality import order_by_cause
from hyperpod_nccl.triage.discover import InputFile, discover
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.facts import finding_facts, job_facts
from hyperpod_nccl.triage.findings import decisive, quoted, quoted_lines, rank_state_groups
from hyperpod_nccl.triage.model import EvidenceSource, Incident, build_incident
from hyperpod_nccl.triage.parallel import scan_all
from hyperpod_nccl.triage.root_cause import (
    Candidate,
    Context,
    choose,
    date_by_the_stall,
    drop_stale,
    root_cause,
)
from hyperpod_nccl.triage.rules import run_rules
from hyperpod_nccl.triage.run import describe_run
from hyperpod_nccl.triage.scanner import read_before
from hyperpod_nccl.triage.summary import job_summary
from hyperpod_nccl.triage.timeline import Clock, build_timeline, collective_start
from hyperpod_nccl.triage.transports import node_transports

ORIGIN_EVIDENCE = 16
_FINAL_KINDS = ("take_down", "sigterm")
_LAUNCHER_EXIT_KINDS = ("worker_exit", "srun_task", "slurm_cancel")  # how a job's end is reported


def run_triage(
    log_paths: Sequence[Path],
    storage_paths: Sequence[Path] = (),
    *,
    follow_links: bool = False,
    boundaries: Sequence[Path] | None = None,
) -> Report:
    """Triage worker logs (and optional storage daemon logs) into one report (kind="triage").
    Flight Recorder dumps among the inputs are read as dumps, not as logs, and joined in. Symlinks
    out of the input (or out of `boundaries`) are skipped unless `follow_links`."""
    found = discover(log_paths, storage_paths, follow_links=follow_links, boundaries=boundaries)
    logs, dumps = split_inputs(found.files)
    scans = scan_all(logs)
    sources = [evidence for evidence in [dump_evidence(dumps)] if evidence]
    return analyse(scans, found.skipped, sources, reader=window_reader(logs))


def window_reader(files: list[InputFile]) -> WindowReader:
    """Re-reads a few lines before a quoted one (what a culprit wrote before it failed)."""
    by_source = {item.source: item for item in files}

    def read(source: str, offset: int, size: int) -> bytes | None:
        item = by_source.get(source)
        return read_before(item, offset, size) if item else None

    return read


def nothing_read(report: Report) -> str | None:
    """Why a triage that found files could read none of them (exit 2), or None when it read some."""
    if report.summary.files_read or not report.skipped:
        return None
    reasons = "; ".join(f"{s.source}: {s.reason}" for s in report.skipped[:3])
    more = f" (+{len(report.skipped) - 3} more)" if len(report.skipped) > 3 else ""
    return f"no file could be read: {reasons}{more}"


def analyse(
    scans: list[FileScan],
    skipped: list[SkippedInput],
    sources: Sequence[EvidenceSource] = (),
    *,
    reader: WindowReader | None = None,
) -> Report:
    """The incident model, built once; every rule over it; the origin among their candidates.
    `reader` re-reads the few lines before a culprit's first abnormal one (what it was doing)."""
    incident = build_incident(scans, skipped, sources)
    outcome = run_rules(incident)
    context = _context(incident)
    cause, origin = _root_cause(outcome.candidates, incident, context)
    if origin is not None and origin.finding_id in incident.groups:
        _widen_evidence(
            outcome.findings, incident.groups[origin.finding_id].events, origin.finding_id, incident
        )
    culprits = cause.culprit_ranks if cause else incident.verdict.culprits
    root_id = origin.finding_id if origin else None
    if cause is not None:
        cause.finding = root_id
    findings = order_by_cause(outcome.findings, origin, incident)
    job = job_facts(incident)
    attach(findings, lambda finding: finding_facts(finding, job, incident))
    report = Report.build(
        "triage",
        findings,
        lead=root_id,
        files_read=incident.reading.files_read,
        ranks_seen=len(incident.ranks_seen),
        root_cause=cause,
        timeline=build_timeline(incident, culprits),
        skipped=incident.reading.skipped,
        # after the timeline: the clock's notes say what was dated
        job=describe_run(
            job_summary(incident, job.job_id, cause.culprit_nodes if cause else (), job.other_jobs),
            incident,
            any(f.status == Status.FAIL for f in findings),  # a run that only degraded did not fail
            context.final,
        ),
        rank_states=rank_state_groups(incident),
        activity=rank_activity(incident, culprits, reader),
    )
    if report.job is not None:
        report.job.transports = node_transports(incident)
    return fit_to_budget(report, protected=root_id)


def _context(incident: Incident) -> Context:
    verdict, index, fired = incident.verdict, incident.index, incident.fired
    signature = verdict.stuck_signature
    collective = None
    if verdict.stuck_seq is not None:
        collective = (
            f"{signature[0] if signature and signature[0] else 'collective'} SeqNum {verdict.stuck_seq}"
        )
    finals = index.kind(*_LAUNCHER_EXIT_KINDS) or index.kind(*_FINAL_KINDS)
    noise = incident.groups.get("triage.noise.connection_resets")
    return Context(
        verdict=verdict,
        collective=collective,
        started=collective_start(incident.at(fired), verdict.timeout_ms),
        fired=fired,
        fired_at=incident.at(fired),
        fired_ranks=sum(1 for s in incident.states.values() if s.watchdog == "fired"),
        final=_latest(finals, incident.clock),
        noise_count=sum(e.count for e in noise.events) if noise else 0,
        hardware_logs_seen=bool(incident.node_log_sources),
        kernel_oom_seen="triage.host.oom_killed" in incident.groups,
        hardware_fault_seen=any(
            g.meaning.category == Category.GPU_HARDWARE for g in incident.groups.values()
        ),
        job_started=incident.started,
        caveat=incident.reading.caveat(),
    )


def _latest(events: list[Event], clock: Clock) -> Event | None:
    def key(event: Event) -> tuple[bool, datetime, int]:
        moment = clock.at(event.stamp)
        return (moment is not None, moment or datetime.min, event.line)

    return max(events, key=key, default=None)


def _widen_evidence(
    findings: list[Finding], events: list[Event], finding_id: str, incident: Incident
) -> None:
    """The origin's finding quotes every witness rank (up to a limit), not just the first two; a line
    its rule added beside them (a crash's faulting frame) keeps its place after the first."""
    for finding in findings:
        if finding.id == finding_id:
            widened = quoted(decisive(events, incident.clock, ORIGIN_EVIDENCE), incident.topology)
            witnesses = quoted_lines(events)
            added = [e for e in finding.evidence if (e.source, e.line) not in witnesses]
            finding.evidence = widened[:1] + added + widened[1:]


def _root_cause(
    candidates: list[Candidate], incident: Incident, context: Context
) -> tuple[RootCause | None, Candidate | None]:
    verdict, topology = incident.verdict, incident.topology
    suspects = verdict.culprits if verdict.verdict in ("straggler", "silent") else []
    candidates, context.stale = drop_stale(candidates, context.job_started)
    date_by_the_stall(candidates, set(suspects), context.started)
    top = choose(candidates)
    if top is None:
        return None, None
    if suspects and (not top.ranks or top.category == Category.STORAGE_IO):
        # The rank whose own requests failed, when it is a suspect; else the suspects on its nodes.
        own = [r for r in suspects if r in top.ranks]
        on_nodes = [r for r in suspects if not top.nodes or topology.node_of(r) in top.nodes]
        top.ranks = own or on_nodes or (suspects if top.category == Category.STORAGE_IO else top.ranks)
    if top.finding_id == "triage.network.transport_error" and verdict.verdict == "all_inside":
        top.confidence = "high"  # transport errors, and every rank was inside the collective
    nodes = sorted({n for r in top.ranks if (n := topology.node_of(r))}) or top.nodes
    return root_cause(top, context, nodes), top
