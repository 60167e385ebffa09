"""A rerun comparison that knows when runs differ, on reports the triage engine wrote from real
log sets: another job, other nodes, missing kernel logs, the same run twice, reports swapped,
reports of different diagnostics, an oversized file, and the size of what it prints."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl.compare import BUDGET_BYTES, UnusableReport, diff_reports, load_report
from hyperpod_nccl.models import Evidence, Priority, Report, SkippedInput
from hyperpod_nccl.render import json_text
from hyperpod_nccl.triage.engine import run_triage
from tests.skill.fixtures import finding
from tests.triage import scenarios
from tests.triage.loggen import Job, Layout, LogSet

CLI = [sys.executable, "-m", "hyperpod_nccl"]
CLAIMS_A_FIX = {"all_fixed", "improved", "clean"}
# Runs argv[1:], passes its stderr and exit status on, and prints its peak memory in KiB.
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)"
)


def _healthy_run(root: Path, hosts: tuple[str, ...], job_id: int, day: int, *, kernel_logs: bool) -> Path:
    """A job that trained and finished without incident, on `hosts`, on 2026-03-`day`."""
    start = datetime(2026, 3, day, 10, 0, 0, tzinfo=UTC)
    job = Job(
        hosts, torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE, job_id=job_id, start=start
    )
    logs = LogSet(root, job)
    scenarios._train(logs)
    logs.flush()
    logs.close()
    if not kernel_logs:
        shutil.rmtree(root / "node-logs")
    return root


@pytest.fixture(scope="module")
def host_oom(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """Job 4242 on gpu-st-p5-0..3: the kernel OOM killer took rank 10 (kern.log), srun saw SIGKILL."""
    root = tmp_path_factory.mktemp("oom")
    return run_triage([scenarios.host_oom_then_network_looking_errors_current_slurm(root).log_dir])


def _ids(changes) -> list[str]:  # type: ignore[no-untyped-def]
    return [change.id for change in changes]


def test_the_previous_report_found_the_oom_in_the_kernel_log_and_the_kill_in_srun_output(
    host_oom: Report,
) -> None:
    """One kill, seen by the kernel and by srun: one finding quoting both."""
    issues = {f.id: f for f in host_oom.findings if f.is_issue}
    oom = issues["triage.host.oom_killed"]
    assert "triage.host.sigkill" not in issues and oom.also_reported_as == ["triage.host.sigkill"]
    assert oom.evidence[0].source.endswith("kern.log")
    assert any("task 10: Killed" in e.text for e in oom.evidence)


def test_another_job_on_other_nodes_without_kernel_logs_is_never_fixed(
    host_oom: Report, tmp_path: Path
) -> None:
    other = _healthy_run(tmp_path, scenarios.ec2_hosts(4), 5151, day=3, kernel_logs=False)
    rerun = run_triage([other])
    assert not rerun.blocking
    comparison = diff_reports(host_oom, rerun)
    assert comparison.summary.verdict not in CLAIMS_A_FIX
    assert comparison.summary.verdict == "inconclusive"
    assert comparison.fixed == []
    assert "triage.host.oom_killed" in _ids(comparison.unconfirmed)
    assert any(reason.startswith("no node in common: gpu-st-p5-0") for reason in comparison.reasons)
    oom = next(c for c in comparison.unconfirmed if c.id == "triage.host.oom_killed")
    assert "seen only in kernel logs" in (oom.unconfirmed or "")
    assert (comparison.previous_run.job_ids, comparison.current_run.job_ids) == (["4242"], ["5151"])
    assert comparison.current_run.inputs_shown == ["worker logs"]


def test_another_job_of_another_size_on_other_nodes_is_not_comparable(
    host_oom: Report, tmp_path: Path
) -> None:
    other = _healthy_run(tmp_path, scenarios.ec2_hosts(2), 6262, day=3, kernel_logs=True)
    comparison = diff_reports(host_oom, run_triage([other]))
    assert comparison.summary.verdict == "not_comparable"
    assert comparison.fixed == []
    assert comparison.reasons == [
        "another job: jobs 4242 and 6262, world size 32 vs 16 and no node in common"
    ]


def test_a_rerun_on_the_same_nodes_fixes_what_its_logs_could_show_and_leaves_the_kernel_oom_open(
    host_oom: Report, tmp_path: Path
) -> None:
    rerun = run_triage([_healthy_run(tmp_path, scenarios.slurm_hosts(4), 4243, day=3, kernel_logs=True)])
    comparison = diff_reports(host_oom, rerun)
    # What worker logs show (the connection closures the kill caused on the peers) is fixed.
    assert "triage.network.remote_error" in _ids(comparison.fixed)
    assert all(not finding_id.startswith("triage.host.oom") for finding_id in _ids(comparison.fixed))
    # A clean report cites no line, so it cannot show its kernel logs were read: say so, never "fixed".
    assert _ids(comparison.unconfirmed) == ["triage.host.oom_killed"]
    assert comparison.summary.verdict == "inconclusive"


def test_the_same_run_twice_and_swapped_reports_are_not_comparable(host_oom: Report) -> None:
    same = diff_reports(host_oom, host_oom)
    assert same.summary.verdict == "not_comparable"
    assert same.reasons[0].startswith("the same run twice: both reports span 2026-03-02T10:")
    assert host_oom.job is not None

    def three_days_later(moment: str | None) -> str | None:
        return moment.replace("03-02", "03-05") if moment else moment

    later = host_oom.model_copy(
        update={
            "timeline": [
                e.model_copy(update={"time": three_days_later(e.time)}) for e in host_oom.timeline if e.time
            ],
            "job": host_oom.job.model_copy(
                update={
                    "rank_times": [
                        span.model_copy(
                            update={
                                "first": three_days_later(span.first),
                                "last": three_days_later(span.last),
                            }
                        )
                        for span in host_oom.job.rank_times
                    ]
                }
            ),
        }
    )
    swapped = diff_reports(later, host_oom)
    assert swapped.summary.verdict == "not_comparable"
    assert (
        "before the previous one began" in swapped.reasons[0]
        and "pass the older report as previous" in swapped.reasons[0]
    )


def test_an_undated_report_compared_with_itself_is_the_same_input_twice(tmp_path: Path) -> None:
    (tmp_path / "slurm-4411.out").write_text(
        "Caught signal 4 (Illegal instruction: illegal operand)\n"
        "srun: error: n1: task 0: Exited with exit code 132\n"
    )
    report = run_triage([tmp_path])
    same = diff_reports(report, report)
    assert same.summary.verdict == "not_comparable"
    assert same.reasons[0].startswith("the same input twice: the logs carry no dates"), same.reasons


def test_reports_of_different_diagnostics_are_refused_by_the_cli_and_the_tool(
    host_oom: Report, tmp_path: Path
) -> None:
    triage, diagnose = tmp_path / "triage.json", tmp_path / "diagnose.json"
    triage.write_text(host_oom.model_dump_json())
    diagnose.write_text(Report.build("diagnose", []).model_dump_json())
    with pytest.raises(
        UnusableReport, match="compare a diagnose report with the diagnose report of the run before"
    ):
        diff_reports(host_oom, Report.build("diagnose", []))
    refused = subprocess.run([*CLI, "compare", str(triage), str(diagnose)], capture_output=True, text=True)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "previous report comes from triage" in refused.stderr


@pytest.mark.anyio
async def test_compare_reports_refuses_different_diagnostics_in_one_line(host_oom: Report) -> None:
    server = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "serve"])
    async with Client(server) as client:
        result = await client.call_tool(
            "compare_reports",
            {
                "previous": host_oom.model_dump(mode="json"),
                "current": Report.build("diagnose", []).model_dump(mode="json"),
            },
        )
    assert result.is_error
    [content] = result.content
    assert content.text.startswith("the previous report comes from triage and the current one from diagnose")
    assert "\n" not in content.text


def test_a_300_mb_previous_report_is_refused_in_one_line_without_reading_it(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(300 * 1000 * 1000)  # sparse: 300 MB by size, nothing on disk
    with pytest.raises(UnusableReport, match=r"huge.json is 300 MB; a report is at most 16 MiB"):
        load_report(huge)
    # Started from a small parent: a child forked from this (large) test process would report
    # this process's memory as its own peak.
    measured = subprocess.run(
        [sys.executable, "-c", _PEAK_OF_CHILD, *CLI, "triage", str(tmp_path), "--compare", str(huge)],
        capture_output=True,
        text=True,
        check=False,
    )
    # argparse's usage lines, then the reason on one line.
    assert measured.returncode == 2 and "Traceback" not in measured.stderr, measured.stderr
    assert "--compare: " in measured.stderr.splitlines()[-1]
    assert "is 300 MB; a report is at most 16 MiB" in measured.stderr.splitlines()[-1]
    peak_kib = int(measured.stdout)
    assert peak_kib < 200 * 1024, f"{peak_kib} KiB at peak: the file was read"


def test_a_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(UnusableReport, match="is not a regular file"):
        load_report(fifo)
    piped = subprocess.run(
        [*CLI, "compare", "/dev/stdin", "/dev/stdin"], capture_output=True, text=True, input=""
    )
    assert piped.returncode == 2 and "is not a regular file" in piped.stderr


def test_the_comparison_fits_8_kb_as_printed_and_says_what_its_lists_left_out() -> None:
    def many(prefix: str, count: int) -> list:  # type: ignore[type-arg]
        return [
            finding(
                f"test.{prefix}_{i}", priority=Priority.P1, ranks=list(range(i, i + 40)), nodes=[f"node-{i}"]
            )
            for i in range(count)
        ]

    previous = Report.build("diagnose", many("gone", 120) + many("kept", 60))
    current = Report.build("diagnose", many("kept", 60) + many("fresh", 90))
    comparison = diff_reports(previous, current)
    printed = json_text(comparison)
    assert len(printed.encode()) <= BUDGET_BYTES
    summary = comparison.summary
    assert (summary.fixed, summary.still_failing, summary.new) == (120, 60, 90)
    assert any(note.startswith("fixed: +") and note.endswith("more not listed") for note in comparison.notes)
    scopes = [change.scope for change in comparison.fixed]
    assert scopes and all(scope[-1] == "+33 more" and len(scope) == 9 for scope in scopes)
    json.loads(printed)


def _cluster_report(*findings) -> Report:  # type: ignore[no-untyped-def]
    return Report.build("diagnose", list(findings))


def _xid(cluster_id: str):  # type: ignore[no-untyped-def]
    group = f"/aws/sagemaker/Clusters/ml-cluster/{cluster_id}"
    return finding(
        "cloudwatch.xid",
        instance_ids=["i-0abc123def4567890"],
        evidence=[Evidence(source=f"logs:StartQuery {group}", text="NVRM: Xid (PCI:0000:53:00): 79")],
    )


def test_a_cluster_rerun_that_could_not_read_cloudwatch_leaves_the_xid_unconfirmed() -> None:
    denied = SkippedInput(
        source="logs:StartQuery", reason="access_denied: access denied; grant logs:StartQuery"
    )
    comparison = diff_reports(
        _cluster_report(_xid("k7x2m9p4q1zt")), Report.build("diagnose", [], skipped=[denied])
    )
    assert comparison.summary.verdict == "inconclusive"
    [xid] = comparison.unconfirmed
    assert xid.unconfirmed == (
        "the rerun could not read CloudWatch "
        "(logs:StartQuery: access_denied: access denied; grant logs:StartQuery)"
    )


def test_a_report_of_another_cluster_is_not_comparable() -> None:
    comparison = diff_reports(
        _cluster_report(_xid("k7x2m9p4q1zt")),
        _cluster_report(_xid("aaaa1111bbbb")),
    )
    assert comparison.summary.verdict == "not_comparable"
    assert comparison.reasons == ["different clusters: k7x2m9p4q1zt before, aaaa1111bbbb now"]


def test_a_report_whose_only_date_is_a_ranks_first_line_compared_with_itself_is_the_same_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "worker1.log").write_text(
        "[2023-09-18 08:36:08,272] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.10.1\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: boom\n"
    )
    report = run_triage([tmp_path])
    assert not any(event.time for event in report.timeline)  # the failure lines carry no time
    same = diff_reports(report, report)
    assert same.summary.verdict == "not_comparable"
    assert same.reasons[0].startswith("the same run twice: both reports span 2023-09-18T08:36:08"), (
        same.reasons
    )


def test_two_pastes_nothing_ties_to_one_job_are_never_fixed(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "engine.log").write_text(
        "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find "
        "address for: ^lo\n"
    )
    (after / "engine.log").write_text("INFO: started server process\nINFO: application startup complete\n")
    comparison = diff_reports(run_triage([before]), run_triage([after]))
    assert comparison.summary.verdict == "inconclusive" and comparison.fixed == [], comparison.summary
    assert "nothing ties the rerun to the previous run" in comparison.unconfirmed[0].unconfirmed


def test_a_new_issue_in_a_paste_nothing_ties_to_the_previous_run_is_not_a_regression(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "engine.log").write_text("INFO: started server process\n")
    (after / "engine.log").write_text(
        "RuntimeError: use_libuv was requested but PyTorch was build without libuv\n"
    )
    comparison = diff_reports(run_triage([before]), run_triage([after]))
    assert comparison.summary.verdict == "inconclusive", comparison.summary
    assert any("nothing ties the rerun" in reason for reason in comparison.reasons), comparison.reasons
    # the same two runs, tied by their ranks' dates: the new issue is a regression
    (before / "engine.log").write_text("[rank0]: 2026-11-20 10:00:00 INFO: started server process\n")
    (after / "engine.log").write_text(
        "[rank0]: 2026-11-21 10:00:00 RuntimeError: use_libuv was requested but PyTorch was build without "
        "libuv\n"
    )
    assert diff_reports(run_triage([before]), run_triage([after])).summary.verdict == "regressed"
