"""What a rule returns, and what a rule is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hyperpod_nccl.models import Category, Finding
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.root_cause import Candidate, Confidence


@dataclass
class Outcome:
    """The findings a rule adds to the report and the root-cause candidates it proposes."""

    findings: list[Finding] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)

    def extend(self, other: Outcome) -> None:
        self.findings += other.findings
        self.candidates += other.candidates


Rule = Callable[[Incident], Outcome]


def blamed(
    incident: Incident,
    finding: Finding,
    *,
    category: Category,
    weight: int,
    title: str,
    ranks: list[int],
    first: Event | None,
    confidence: Confidence,
    nodes: list[str] | None = None,
) -> Outcome:
    """A rule's usual answer: its finding, and the candidate that blames `ranks` (on their nodes
    unless told otherwise) from the moment of `first`."""
    candidate = Candidate(
        category=category,
        weight=weight,
        title=title,
        ranks=ranks,
        nodes=incident.nodes_of(ranks) if nodes is None else nodes,
        first=first,
        when=incident.at(first),
        confidence=confidence,
        finding_id=finding.id,
    )
    return Outcome([finding], [candidate])
