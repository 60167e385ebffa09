"""Dumps in, findings out: read every dump (bounded, isolated), match the ranks, say what it means."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hyperpod_nccl.flight_recorder.analyze import Analysis, Matcher
from hyperpod_nccl.flight_recorder.findings import Cause, dump_findings
from hyperpod_nccl.flight_recorder.reader import DumpFile, Unreadable, read_dumps
from hyperpod_nccl.models import Finding, SkippedInput


@dataclass
class DumpResult:
    analysis: Analysis | None  # None when no dump could be used
    findings: list[Finding] = field(default_factory=list)
    cause: Cause | None = None
    skipped: list[SkippedInput] = field(default_factory=list)

    @property
    def dumps_read(self) -> int:
        return len(self.analysis.dumped) if self.analysis else 0


def analyse_dumps(files: Sequence[DumpFile], skipped: Sequence[SkippedInput] = ()) -> DumpResult:
    if not files:
        return DumpResult(None, skipped=list(skipped))
    matcher = Matcher()
    unreadable: list[Unreadable] = []
    for result in read_dumps(files):
        if isinstance(result, Unreadable):
            unreadable.append(result)
        else:
            matcher.add(result)
    analysis = matcher.result() if matcher.ranks else None
    findings, cause = dump_findings(analysis, unreadable)
    return DumpResult(
        analysis,
        findings,
        cause,
        [*skipped, *(SkippedInput(source=u.source, reason=u.reason) for u in unreadable)],
    )
