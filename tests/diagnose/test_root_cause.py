"""The diagnose report's root cause: the most fundamental blocking finding, never a symptom."""

from __future__ import annotations

from hyperpod_nccl.diagnose.cause import diagnose_root_cause
from hyperpod_nccl.models import Category, Finding, Priority, Status

NODE = "i-0123456789abcdef0"


def fail(finding_id: str, priority: Priority = Priority.P0, **fields: object) -> Finding:
    return Finding(
        id=finding_id,
        status=Status.FAIL,
        priority=priority,
        title=finding_id,
        reference="operations.md § 8",
        **fields,
    )


def test_no_failure_no_root_cause() -> None:
    warning = Finding(
        id="a.b", status=Status.WARN, priority=Priority.P1, title="t", reference="operations.md § 8"
    )
    assert diagnose_root_cause([warning]) is None


def test_a_watchdog_timeout_alone_is_a_symptom_with_an_unknown_cause() -> None:
    cause = diagnose_root_cause([fail("cloudwatch.watchdog")])
    assert (cause.category, cause.confidence) == (Category.UNKNOWN, "low")
    assert cause.chain == ["cloudwatch.watchdog"]


def test_the_gpu_that_fell_off_the_bus_is_the_cause_of_the_watchdog_timeout() -> None:
    cause = diagnose_root_cause([fail("cloudwatch.watchdog"), fail("cloudwatch.xid", instance_ids=[NODE])])
    assert (cause.category, cause.culprit_nodes, cause.confidence) == (
        Category.GPU_HARDWARE,
        [NODE],
        "medium",
    )
    assert cause.chain == ["trigger: cloudwatch.xid", "→ cloudwatch.watchdog"]


def test_a_second_kind_of_blocking_cause_lowers_confidence_and_is_named() -> None:
    findings = [
        fail("aws.security_group.self_reference_missing"),
        fail("cloudwatch.xid", instance_ids=[NODE]),
    ]
    cause = diagnose_root_cause(findings)
    assert (cause.category, cause.confidence) == (Category.GPU_HARDWARE, "low")
    assert "aws.security_group.self_reference_missing" in cause.summary


def test_p0_failures_outrank_p1_ones() -> None:
    findings = [fail("hyperpod.nodes.failed", Priority.P1), fail("aws.security_group.self_reference_missing")]
    assert diagnose_root_cause(findings).category == Category.CONFIG
