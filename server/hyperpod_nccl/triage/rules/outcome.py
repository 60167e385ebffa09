"""What a rule returns, and what a rule is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hyperpod_nccl.models import Finding
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.root_cause import Candidate


@dataclass
class Outcome:
    """The findings a rule adds to the report and the root-cause candidates it proposes."""

    findings: list[Finding] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)

    def extend(self, other: Outcome) -> None:
        self.findings += other.findings
        self.candidates += other.candidates


Rule = Callable[[Incident], Outcome]
