"""The rules: small functions over the incident model, each returning findings and candidates.

A rule reads the `Incident` (its index of events by kind, rank, node and meaning; the rank
states and the cross-rank verdict; the topology and the clock) and returns an `Outcome`: the
findings the report lists and the root-cause candidates it proposes. Every rule is registered
here, in `RULES`. When no rule proposed a cause, the failure the input shows is reported as
`unknown` (never silent); when the input shows none, the report says what was looked for.

A new family of wording is one pattern (`patterns.py`), one meaning (`fatal.py`) — which the
catalogue rule already turns into a finding and a candidate — and one test; a rule of its own
only when naming the origin takes more than the lines themselves (who points at whom, what every
node shares, which pid was which rank).
"""

from __future__ import annotations

from hyperpod_nccl.triage.model import Incident, rules_of
from hyperpod_nccl.triage.rules.catalogue import catalogue
from hyperpod_nccl.triage.rules.cut_traceback import cut_traceback
from hyperpod_nccl.triage.rules.diverged import diverged_after_training
from hyperpod_nccl.triage.rules.exits import silent_exit
from hyperpod_nccl.triage.rules.fabric import failed_at_first_contact
from hyperpod_nccl.triage.rules.hosts import shared_hostname
from hyperpod_nccl.triage.rules.jit_build import jit_build_hung
from hyperpod_nccl.triage.rules.members import (
    bootstrap_refused,
    members_missing,
    nccl_init_stalled,
    process_group_stalled,
)
from hyperpod_nccl.triage.rules.nccl import nccl_verdict
from hyperpod_nccl.triage.rules.outcome import Outcome, Rule
from hyperpod_nccl.triage.rules.progress import busy_outside_nccl, ranks_drifted_apart
from hyperpod_nccl.triage.rules.storage import ais_counters
from hyperpod_nccl.triage.rules.unknown import clean_statement, unexplained_failure
from hyperpod_nccl.triage.rules.versions import obsolete_nccl, version_skew

RULES: tuple[Rule, ...] = (
    catalogue,
    nccl_verdict,
    version_skew,
    obsolete_nccl,
    silent_exit,
    busy_outside_nccl,
    jit_build_hung,
    ranks_drifted_apart,
    diverged_after_training,
    ais_counters,
    members_missing,
    nccl_init_stalled,
    bootstrap_refused,
    process_group_stalled,
    shared_hostname,
    failed_at_first_contact,
    cut_traceback,
)

__all__ = ["RULES", "Outcome", "Rule", "run_rules"]


def run_rules(incident: Incident) -> Outcome:
    """Every rule once (the built-in ones, then each evidence source's); findings and candidates
    each end up in one list, so later passes (commands, consequences) walk them once."""
    outcome = Outcome()
    for rule in rules_of(incident, RULES):
        outcome.extend(rule(incident))
    if not outcome.candidates:
        outcome.extend(unexplained_failure(incident))
    if not outcome.candidates and not any(finding.is_issue for finding in outcome.findings):
        outcome.findings.append(clean_statement(incident))
    return outcome
