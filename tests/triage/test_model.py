"""The incident model: built once, indexed, and open to a second evidence source (issue 16 item 7)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperpod_nccl.models import Category, Finding, Priority, SkippedInput, Status
from hyperpod_nccl.triage.engine import analyse
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.model import Incident, build_incident
from hyperpod_nccl.triage.rank_state import RankState
from hyperpod_nccl.triage.rules import RULES, Outcome, run_rules
from hyperpod_nccl.triage.summary import Topology


def timed_out(rank: int) -> list[Event]:
    fields = {"seq": "808", "op": "ALLREDUCE", "numel_in": "9", "numel_out": "9", "timeout_ms": "600000"}
    status = {"pg": "0", "seq": "808", "enqueued": "808", "completed": "807"}
    return [
        Event(
            "wd_timeout",
            f"rank-{rank}.log",
            10,
            "[Rank] Watchdog caught collective operation timeout",
            rank=rank,
            fields=fields,
        ),
        Event("wd_status", f"rank-{rank}.log", 11, "failure detected by watchdog", rank=rank, fields=status),
    ]


def job(silent: int) -> list[FileScan]:
    """Four ranks; `silent` left lines but no watchdog line."""
    scans = []
    for rank in range(4):
        events = [
            Event(
                "pg_init",
                f"rank-{rank}.log",
                1,
                "ProcessGroupNCCL initialization options",
                rank=rank,
                fields={"size": "4", "global_rank": str(rank), "timeout_ms": "600000"},
            )
        ]
        if rank != silent:
            events += timed_out(rank)
        scans.append(FileScan(f"rank-{rank}.log", lines_read=20, events=events, ranks={rank}))
    return scans


def test_the_index_answers_by_kind_rank_node_and_meaning() -> None:
    incident = build_incident(job(silent=3), [])
    assert len(incident.index.kind("wd_timeout")) == 3
    assert {e.kind for e in incident.index.by_rank[0]} == {"pg_init", "wd_timeout", "wd_status"}
    assert incident.verdict.verdict == "silent" and incident.verdict.culprits == [3]
    assert incident.reading.files_read == 4 and incident.topology.world_known


def test_every_rule_is_registered_once_and_returns_findings_and_candidates() -> None:
    assert len(set(RULES)) == len(RULES)
    outcome = run_rules(build_incident(job(silent=3), []))
    assert {c.finding_id for c in outcome.candidates} >= {"triage.nccl.silent_ranks"}
    assert all(isinstance(f, Finding) for f in outcome.findings)


@dataclass
class DumpSource:
    """A stand-in for Flight Recorder dumps: rank 3's dump shows it idle, outside the collective."""

    name: str = "flight_recorder"
    files_read: int = 1
    ranks: set[int] = field(default_factory=lambda: {3})
    skipped: list[SkippedInput] = field(default_factory=list)

    def amend(self, states: dict[int, RankState], topology: Topology) -> None:
        states[3] = RankState(rank=3, enqueued=807, completed=807)

    @property
    def rules(self) -> tuple:  # type: ignore[type-arg]
        return (self.dump_finding,)

    def dump_finding(self, incident: Incident) -> Outcome:
        finding = Finding(
            id="triage.flight_recorder.idle_rank",
            status=Status.WARN,
            priority=Priority.P1,
            title="Rank 3's dump shows nothing in flight",
            reference="debugging-guide.md § 1",
            ranks=[3],
        )
        return Outcome([finding], [])


def test_a_second_evidence_source_corrects_rank_states_and_adds_its_own_rules() -> None:
    without = analyse(job(silent=3), [])
    with_dumps = analyse(job(silent=3), [], sources=[DumpSource()])
    assert without.root_cause is not None and with_dumps.root_cause is not None
    assert "Left no watchdog line" in without.root_cause.summary
    assert (with_dumps.root_cause.category, with_dumps.root_cause.culprit_ranks) == (
        Category.DATA_LOADING_STALL,
        [3],
    )
    assert "Stuck outside NCCL" in with_dumps.root_cause.summary  # the straggler verdict, from the dump
    assert any(f.id == "triage.flight_recorder.idle_rank" for f in with_dumps.findings)
