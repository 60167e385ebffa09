"""AIStore daemon logs: the error counters of the periodic stats lines, compared over time.

A target prints `get.n:… err.get.n:… err.getbatch.n:… err.http.write.n:…` every few minutes
(seed 003 §2.2). Counters only grow, so the first and last stats line of each daemon log give
what failed in between; a daemon whose error counters did not move is quiet.
"""

from __future__ import annotations

import re

from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.outcome import Outcome
from hyperpod_nccl.triage.summary import Topology

_COUNTER = re.compile(r"\b(err\.[\w.]+\.n):(\d+)")


def counters(text: str) -> dict[str, int]:
    return {name: int(value) for name, value in _COUNTER.findall(text)}


def ais_counters(incident: Incident) -> Outcome:
    by_daemon: dict[str, list[Event]] = {}
    for event in incident.index.kind("ais_stats"):
        by_daemon.setdefault(event.source, []).append(event)
    topology = incident.topology
    findings = []
    for source, stats in sorted(by_daemon.items()):
        first, last = min(stats, key=lambda e: e.line), max(stats, key=lambda e: e.line)
        before, after = counters(first.text), counters(last.text)
        rises = {
            name: after[name] - before.get(name, 0) for name in after if after[name] > before.get(name, 0)
        }
        if rises:
            findings.append(_finding(source, rises, [first, last], topology))
    return Outcome(findings)


def _finding(source: str, rises: dict[str, int], lines: list[Event], topology: Topology) -> Finding:
    growth = ", ".join(f"{name} +{delta}" for name, delta in sorted(rises.items(), key=lambda item: -item[1]))
    return Finding(
        id="triage.storage.ais_error_counters",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"AIStore error counters rose in {source.rsplit('/', 1)[-1]}: {growth}",
        reference="debugging-guide.md § 14",
        detail="Compared the first and last stats line of the daemon log; err.http.write.n counts client "
        "connections the daemon dropped, err.getbatch.n batch GETs that failed.",
        evidence=[evidence(e, topology) for e in lines],
    )
