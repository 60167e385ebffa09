from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from hyperpod_nccl.models import (
    BlastRadius,
    Category,
    Evidence,
    Finding,
    Priority,
    Report,
    Status,
    SuggestedCommand,
)


def finding(
    status: Status, priority: Priority | None, finding_id: str = "nccl.watchdog.straggler"
) -> Finding:
    return Finding(
        id=finding_id,
        status=status,
        priority=priority,
        title="Rank 77 never entered the collective that timed out",
        reference="debugging-guide.md § 1" if priority else None,
        ranks=[77],
        nodes=["ip-10-1-2-3"],
        evidence=[Evidence(source="error-1234-9.out", line=4521, text="[rank77]: ...")],
    )


def test_fail_without_priority_is_rejected() -> None:
    with pytest.raises(ValidationError, match="needs a priority"):
        Finding(id="a.b", status=Status.FAIL, title="x", reference="debugging-guide.md § 1")


def test_warn_without_reference_is_rejected() -> None:
    with pytest.raises(ValidationError, match="needs a reference"):
        Finding(id="a.b", status=Status.WARN, priority=Priority.P1, title="x")


def test_malformed_reference_is_rejected() -> None:
    with pytest.raises(ValidationError, match=re.escape("is not '<file>.md § <section>'")):
        Finding(id="a.b", status=Status.WARN, priority=Priority.P1, title="x", reference="guide section 1")


def test_evidence_line_is_one_based() -> None:
    with pytest.raises(ValidationError):
        Evidence(source="a.log", line=0, text="x")


def test_summary_is_derived_from_findings_and_issues_sort_first() -> None:
    report = Report.build(
        "triage",
        [
            Finding(id="x.pass", status=Status.PASS, title="ok"),
            finding(Status.WARN, Priority.P2, "x.warn"),
            finding(Status.FAIL, Priority.P0, "x.fail"),
            Finding(id="x.info", status=Status.INFO, title="fyi"),
        ],
        files_read=128,
        ranks_seen=128,
    )
    assert report.summary.model_dump() == {
        "issues_found": 2,
        "p0": 1,
        "p1": 0,
        "p2": 1,
        "files_read": 128,
        "ranks_seen": 128,
    }
    assert [f.id for f in report.findings][:2] == ["x.fail", "x.warn"]
    assert report.blocking


def test_only_p2_issues_do_not_block() -> None:
    assert not Report.build("triage", [finding(Status.WARN, Priority.P2)]).blocking


def test_report_json_has_the_contract_shape() -> None:
    report = Report.build("diagnose", [finding(Status.FAIL, Priority.P0)])
    data = report.model_dump(mode="json")
    assert data["schema_version"] == 1
    assert set(data) >= {"schema_version", "kind", "summary", "findings", "root_cause", "timeline"}
    assert data["root_cause"] is None
    first = data["findings"][0]
    assert set(first) >= {"id", "status", "priority", "title", "reference", "ranks", "nodes", "evidence"}
    assert first["evidence"][0]["source"] == "error-1234-9.out"
    assert first["evidence"][0]["line"] == 4521


def test_categories_are_exactly_the_contract_table() -> None:
    assert {c.value for c in Category} == {
        "data_loading_stall",
        "collective_mismatch",
        "network",
        "gpu_hardware",
        "gpu_oom",
        "host_oom",
        "storage_io",
        "software",
        "config",
        "rendezvous",
        "infrastructure",
        "data",
        "unknown",
    }


def test_suggested_command_must_state_its_blast_radius() -> None:
    with pytest.raises(ValidationError):
        SuggestedCommand(command="kubectl get pods", why="look")  # type: ignore[call-arg]
    command = SuggestedCommand(command="kubectl get pods", why="look", blast_radius=BlastRadius.READ_ONLY)
    assert command.model_dump(mode="json")["blast_radius"] == "read-only check"
