"""Rerun diff: fixed, still failing and new, over hand-built reports and through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hyperpod_nccl.cli import build_parser
from hyperpod_nccl.compare import UnusableReport, diff_reports
from hyperpod_nccl.models import Priority, Report, SkippedInput, Status, TimelineEvent
from tests.skill.fixtures import finding, incident_report

CLI = [sys.executable, "-m", "hyperpod_nccl"]


def rerun(*findings_kept_or_added) -> Report:
    return Report.build("diagnose", list(findings_kept_or_added))


def test_a_fix_is_fixed_a_remaining_issue_still_fails_and_a_new_one_is_new() -> None:
    previous = incident_report()
    current = rerun(
        finding("efa.tcp_fallback", priority=Priority.P0, instance_ids=["i-0ccc3333dddd44445"]),
        finding("pods.oom_killed", priority=Priority.P1, pods=["llama-worker-3"]),
    )
    comparison = diff_reports(previous, current)
    assert [change.id for change in comparison.fixed] == ["nccl.watchdog.straggler"]
    assert comparison.fixed[0].scope == [
        "instance:i-0abc123def4567890",
        "node:ip-10-1-2-3",
        "pod:llama-worker-9",
        "rank:77",
    ]
    [still] = comparison.still_failing
    assert (still.id, still.previous_priority, still.priority, still.priority_change) == (
        "efa.tcp_fallback",
        Priority.P1,
        Priority.P0,
        "worse",
    )
    assert still.scope_cleared == ["instance:i-0aaa1111bbbb22223"]
    assert [change.id for change in comparison.new] == ["pods.oom_killed"]
    assert comparison.summary.model_dump() == {
        "fixed": 1,
        "unconfirmed": 0,
        "still_failing": 1,
        "new": 1,
        "priority_changed": 1,
        "verdict": "regressed",
    }


def test_the_same_check_on_a_different_rank_is_a_new_problem_not_the_old_one() -> None:
    previous = rerun(finding("nccl.watchdog.straggler", ranks=[77]))
    current = rerun(finding("nccl.watchdog.straggler", ranks=[12]))
    comparison = diff_reports(previous, current)
    assert [c.scope for c in comparison.fixed] == [["rank:77"]]
    assert [c.scope for c in comparison.new] == [["rank:12"]]
    assert comparison.still_failing == []


def test_a_passing_check_is_neither_new_nor_still_failing_and_warn_counts_as_an_issue() -> None:
    previous = rerun(finding("net.sg.self_reference", Status.WARN, Priority.P1))
    current = rerun(finding("net.sg.self_reference", Status.PASS, None))
    comparison = diff_reports(previous, current)
    assert [c.id for c in comparison.fixed] == ["net.sg.self_reference"]
    assert comparison.new == comparison.still_failing == []
    assert comparison.summary.verdict == "all_fixed"


def test_reports_of_different_diagnostics_are_refused() -> None:
    with pytest.raises(
        UnusableReport, match="previous report comes from diagnose and the current one from triage"
    ):
        diff_reports(incident_report(), Report.build("triage", []))


def test_an_issue_the_rerun_could_not_see_because_it_skipped_input_is_unconfirmed() -> None:
    previous = Report.build("triage", [finding("triage.nccl.straggler", ranks=[3])], files_read=8)
    current = Report.build(
        "triage", [], files_read=7, skipped=[SkippedInput(source="rank-3.log", reason="unreadable")]
    )
    comparison = diff_reports(previous, current)
    assert comparison.summary.verdict == "inconclusive" and comparison.fixed == []
    [unseen] = comparison.unconfirmed
    assert unseen.id == "triage.nccl.straggler" and "skipped 1 input(s) (rank-3.log)" in unseen.unconfirmed


def _save(path: Path, report: Report) -> str:
    path.write_text(report.model_dump_json(), encoding="utf-8")
    return str(path)


def test_compare_command_prints_the_diff_and_exits_1_while_issues_remain(tmp_path: Path) -> None:
    previous = _save(tmp_path / "before.json", incident_report())
    current = _save(tmp_path / "after.json", rerun(finding("efa.tcp_fallback", priority=Priority.P1)))
    text = subprocess.run([*CLI, "compare", previous, current], capture_output=True, text=True, check=False)
    assert text.returncode == 1
    assert "1 fixed, 1 still failing, 0 new" in text.stdout
    assert "[FIXED] P0 nccl.watchdog.straggler" in text.stdout
    as_json = subprocess.run([*CLI, "compare", previous, current, "--json"], capture_output=True, text=True)
    assert json.loads(as_json.stdout)["summary"]["verdict"] == "improved"
    clean = _save(tmp_path / "clean.json", rerun())
    assert subprocess.run([*CLI, "compare", previous, clean], capture_output=True).returncode == 0


def test_a_file_that_is_not_a_report_is_exit_2_and_says_why(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"kind": "diagnose"}')
    result = subprocess.run([*CLI, "compare", str(bogus), str(bogus)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "is not a hyperpod-nccl report: summary" in result.stderr


def _a_day_earlier(report: Report) -> list[TimelineEvent]:
    def earlier(time: str | None) -> str | None:
        return (datetime.fromisoformat(time) - timedelta(days=1)).isoformat() if time else None

    return [event.model_copy(update={"time": earlier(event.time)}) for event in report.timeline]


def _subcommand_with_compare(name: str) -> None:
    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    if name not in choices:
        pytest.skip(f"`{name}` has not landed yet: --compare is wired when it does")
    if not any("--compare" in action.option_strings for action in choices[name]._actions):
        pytest.fail(f"`{name}` exists but takes no --compare: add add_compare_argument / print_comparison")


EXAMPLE_LOGS = Path(__file__).parents[2] / "examples" / "training-hang" / "logs"


def test_triage_compare_prints_the_report_then_the_diff(tmp_path: Path) -> None:
    _subcommand_with_compare("triage")
    if not EXAMPLE_LOGS.is_dir():
        pytest.skip("examples/training-hang/logs has not landed yet")
    first = subprocess.run([*CLI, "triage", str(EXAMPLE_LOGS), "--json"], capture_output=True, text=True)
    assert first.returncode in (0, 1), first.stderr
    report = Report.model_validate_json(first.stdout)
    assert report.findings, "the example should produce findings to compare"
    # The "fix": the previous run, a day earlier, had one more issue than the rerun will find.
    extra = finding("test.removed_by_fix", priority=Priority.P1, pods=["gone-pod"])
    previous = _save(
        tmp_path / "before.json",
        report.model_copy(update={"findings": [*report.findings, extra], "timeline": _a_day_earlier(report)}),
    )
    text = subprocess.run(
        [*CLI, "triage", str(EXAMPLE_LOGS), "--compare", previous], capture_output=True, text=True
    )
    assert "[FIXED] P1 test.removed_by_fix" in text.stdout
    assert "0 new" in text.stdout
    as_json = subprocess.run(
        [*CLI, "triage", str(EXAMPLE_LOGS), "--json", "--compare", previous], capture_output=True, text=True
    )
    Report.model_validate_json(as_json.stdout)  # stdout stays one report
    assert "[FIXED] P1 test.removed_by_fix" in as_json.stderr


def test_diagnose_compare_replays_a_bundle_and_prints_the_diff(tmp_path: Path) -> None:
    _subcommand_with_compare("diagnose")
    from tests.skill.fixtures import incident_snapshot

    bundle = tmp_path / "bundle"
    incident_snapshot().save(bundle)
    previous = _save(tmp_path / "before.json", rerun(finding("test.removed_by_fix", priority=Priority.P1)))
    result = subprocess.run(
        [*CLI, "diagnose", "--bundle", str(bundle), "--compare", previous], capture_output=True, text=True
    )
    assert result.returncode in (0, 1), result.stderr
    assert "Compared with the previous report: 1 fixed" in result.stdout


def test_a_bad_previous_report_stops_triage_before_it_reads_any_log(tmp_path: Path) -> None:
    _subcommand_with_compare("triage")
    bogus = tmp_path / "bogus.json"
    bogus.write_text("not json")
    result = subprocess.run(
        [*CLI, "triage", str(tmp_path / "no-such-logs"), "--compare", str(bogus)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "is not JSON" in result.stderr and "save a report with --json" in result.stderr


def test_run_diagnostic_answers_compare_like_diagnose_reports() -> None:
    from hyperpod_nccl.compare import report_from_data
    from hyperpod_nccl.diagnose.tool import DiagnosticResult

    def answer(report: Report) -> dict:
        # Only the fields the answer has, so this follows DiagnosticResult as it grows.
        data = {**report.model_dump(mode="json"), "source": "live", "passed": []}
        known = {key: value for key, value in data.items() if key in DiagnosticResult.model_fields}
        return DiagnosticResult.model_validate(known).model_dump(mode="json")

    before = report_from_data(answer(incident_report()))
    after = report_from_data(answer(rerun(finding("efa.tcp_fallback", priority=Priority.P1))))
    assert before.kind == "diagnose"
    assert [change.id for change in diff_reports(before, after).fixed] == ["nccl.watchdog.straggler"]
