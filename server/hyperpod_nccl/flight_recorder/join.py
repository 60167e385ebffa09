"""Flight Recorder dumps and worker logs in one triage.

Dumps are found among the triage's input files by their first bytes (`split_inputs`), read and
matched (`service.analyse_dumps`), and joined through one object, `DumpEvidence`:

- `amend(states, topology)`, before the ranks are compared: a state the logs gave is confirmed,
  its missing fields filled, and where the dump disagrees the disagreement is kept to be said —
  the logs' values stay, quoted as they were read. A rank the logs left no state for (a silent
  rank) takes the one its dump gives, so the logs' verdict can name it. With no state from the
  logs at all (dumps alone, or logs without watchdog lines) nothing is added: the dumps' own
  findings and their per-rank progress say it, with the dump records as evidence.
- `outcome(topology)`: the dumps' findings (with the nodes the logs map their ranks to), the
  disagreement finding, and the root-cause candidate, for the engine to weigh with its own.

It is the incident model's `EvidenceSource`: `amend` runs while the incident is built, and its one
rule returns `outcome` over the same incident. This is the only module of the package that knows
the triage engine's types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

from hyperpod_nccl.flight_recorder.analyze import DEFAULT_GROUP, Group, Progress
from hyperpod_nccl.flight_recorder.discover import choose_dumps, is_dump, read_head
from hyperpod_nccl.flight_recorder.findings import REFERENCE_COVERAGE, Cause, evidence
from hyperpod_nccl.flight_recorder.service import DumpResult, analyse_dumps
from hyperpod_nccl.models import Finding, Priority, SkippedInput, Status
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.discover import InputFile
from hyperpod_nccl.triage.findings import evidence as log_evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rank_state import RankState
from hyperpod_nccl.triage.root_cause import Candidate
from hyperpod_nccl.triage.rules.outcome import Outcome, Rule
from hyperpod_nccl.triage.summary import Topology

_LISTED = 8  # ranks whose disagreement is spelled out; the rest are counted


def split_inputs(files: Sequence[InputFile]) -> tuple[list[InputFile], list[tuple[Path, str]]]:
    """The log files, and the (path, source) of every Flight Recorder dump among the inputs."""
    logs: list[InputFile] = []
    dumps: list[tuple[Path, str]] = []
    for item in files:
        if not item.storage and not item.archive and is_dump(read_head(item.path)):
            dumps.append((item.path, item.source))
        else:
            logs.append(item)
    return logs, dumps


def dump_evidence(dumps: Sequence[tuple[Path, str]]) -> DumpEvidence | None:
    """The dumps read and matched, or None when the input holds none."""
    if not dumps:
        return None
    chosen, skipped = choose_dumps(dumps)
    return DumpEvidence(analyse_dumps(chosen, skipped))


@dataclass
class _Difference:
    rank: int
    fields: list[tuple[str, int, int]]  # (field, from the log, from the dump)
    log_line: RankState
    progress: Progress


@dataclass
class DumpEvidence:
    result: DumpResult
    name: str = "flight_recorder"
    confirmed: list[int] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    differences: list[_Difference] = field(default_factory=list)

    @property
    def files_read(self) -> int:
        return self.result.dumps_read

    @property
    def ranks(self) -> set[int]:
        return set(self.result.analysis.dumped) if self.result.analysis else set()

    @property
    def skipped(self) -> list[SkippedInput]:
        return self.result.skipped

    @property
    def rules(self) -> tuple[Rule, ...]:
        return (self._rule,)

    def _rule(self, incident: Incident) -> Outcome:
        findings, candidates = self.outcome(incident.topology)
        return Outcome(findings, candidates)

    def amend(self, states: dict[int, RankState], topology: Topology) -> None:
        """Confirm, fill in or add each rank's default-group state from its dump."""
        analysis = self.result.analysis
        if analysis is None or not states:
            return
        for rank, progress in analysis.progress.items():
            state = states.get(rank)
            if state is None:
                states[rank] = _state_from(progress, topology)
                self.added.append(rank)
                continue
            differing = []
            for name, from_dump in (("enqueued", progress.enqueued), ("completed", progress.completed)):
                from_log = getattr(state, name)
                if from_log is None and from_dump is not None:
                    setattr(state, name, from_dump)
                elif from_dump is not None and from_log != from_dump:
                    differing.append((name, from_log, from_dump))
            if differing:
                self.differences.append(_Difference(rank, differing, state, progress))
            else:
                self.confirmed.append(rank)

    def outcome(self, topology: Topology) -> tuple[list[Finding], list[Candidate]]:
        """The dumps' findings and root-cause candidate, in the engine's terms."""
        findings = [_with_nodes(f, topology) for f in self.result.findings]
        findings = [self._annotated(f) if f.id == "flight_recorder.coverage" else f for f in findings]
        if self.differences:
            findings.append(self._disagreement(topology))
        cause = self.result.cause
        return findings, [_candidate(cause, topology)] if cause else []

    def _annotated(self, coverage: Finding) -> Finding:
        notes = []
        if self.confirmed:
            notes.append(f"the dumps confirm the watchdog state of {_who(self.confirmed)}")
        if self.added:
            notes.append(f"{_who(self.added)} left no watchdog state in the logs: their dumps gave it")
        if not notes:
            return coverage
        # The join comes first: a report trimmed to its budget shortens details from the end.
        return coverage.model_copy(update={"detail": f"{'; '.join(notes).capitalize()}. {coverage.detail}"})

    def _disagreement(self, topology: Topology) -> Finding:
        shown = "; ".join(
            f"rank {d.rank}: "
            + ", ".join(f"last {name} {log} in the log, {dump} in the dump" for name, log, dump in d.fields)
            for d in self.differences[:_LISTED]
        )
        more = len(self.differences) - _LISTED
        first = self.differences[0]
        lines = [log_evidence(e, topology) for e in [first.log_line.decisive_event] if e]
        group = Group(DEFAULT_GROUP, "default_pg", (), False)
        lines += [evidence(s, group) for s in [first.progress.last] if s]
        ranks = sorted(d.rank for d in self.differences)
        kept = f" (+{more} more)" if more > 0 else ""
        return Finding(
            id="flight_recorder.rank_state_disagrees",
            status=Status.WARN,
            priority=Priority.P2,
            title=f"The dumps and the watchdog lines disagree on the state of {_who(ranks)}",
            reference=REFERENCE_COVERAGE,
            detail=f"{shown}{kept}. The report keeps the watchdog's values; "
            "the dump was written after the line, so work that moved in between shows here. Ranks that "
            "disagree on what ran are not this: they are reported as a mismatch.",
            ranks=ranks[:64],
            nodes=sorted({n for d in self.differences if (n := topology.node_of(d.rank))})[:16],
            evidence=lines,
        )


def _state_from(progress: Progress, topology: Topology) -> RankState:
    """A rank state from a dump alone: how far it got, and the call it waits in if any."""
    last = progress.last
    inside = (
        progress.enqueued is not None
        and progress.completed is not None
        and progress.enqueued > progress.completed
    )
    call = last.calls[0] if last is not None and last.calls else None
    return RankState(
        rank=progress.rank,
        node=topology.node_of(progress.rank),
        pg=DEFAULT_GROUP,
        seq=progress.enqueued if inside else None,
        op=call.op if inside and call else None,
        numel_in=sum(prod(size) for size in call.input_sizes) if inside and call else None,
        numel_out=sum(prod(size) for size in call.output_sizes) if inside and call else None,
        enqueued=progress.enqueued,
        completed=progress.completed,
    )


def _with_nodes(finding: Finding, topology: Topology) -> Finding:
    nodes = sorted({n for r in finding.ranks if (n := topology.node_of(r))})
    evidence = [e.model_copy(update={"node": e.node or topology.node_of(e.rank)}) for e in finding.evidence]
    return (
        finding.model_copy(update={"nodes": nodes[:16], "evidence": evidence})
        if nodes or evidence
        else finding
    )


def _candidate(cause: Cause, topology: Topology) -> Candidate:
    return Candidate(
        category=cause.category,
        weight=cause.weight,
        title=cause.title,
        ranks=list(cause.ranks),
        nodes=sorted({n for r in cause.ranks if (n := topology.node_of(r))}),
        confidence=cause.confidence,
        finding_id=cause.finding_id,
    )


def _who(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {compress(ranks)}"
