"""The in-repo corpora, as users get them: every FAIL and WARN of every report says what to run
next, from its section, with the values the input holds; the root cause's finding comes first."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.triage.engine import run_triage
from tests.next_steps.check import next_step_problems
from tests.realworld.corpus import load_cases
from tests.realworld.score import triage_case

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "training-hang" / "logs"
BUNDLE = Path(__file__).resolve().parents[2] / "examples" / "eks-cluster-bundle"
CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_every_real_world_issue_says_what_to_run_next(case) -> None:  # type: ignore[no-untyped-def]
    report = triage_case(case)
    assert next_step_problems(report) == []
    if report.root_cause is not None:
        assert report.findings[0].id == report.root_cause.finding


def test_the_example_fills_in_the_job_id_node_and_pid_its_logs_hold() -> None:
    report = run_triage([EXAMPLE])
    assert next_step_problems(report) == []
    straggler = report.findings[0]
    assert straggler.id == "triage.nccl.straggler"
    commands = [c.command for c in straggler.suggested_commands]
    assert "sacct -j 51877 --format=JobID,State,ExitCode,Elapsed,NodeList" in commands
    # The job ended (srun reports the tasks aborted): rank 43's pid names nothing now, so the next
    # hang's pid is asked for instead of this run's.
    assert "ssh ip-10-1-0-15 sudo py-spy dump --pid '<pid-of-rank-43>'" in commands


def test_a_hang_still_running_names_the_culprits_pid() -> None:
    from hyperpod_nccl.next_steps import Facts
    from hyperpod_nccl.next_steps.catalogue import py_spy

    running = Facts(slurm=True, nodes=("ip-10-1-0-15",), ranks=(43,), pids={43: 45924})
    assert py_spy(running).command == "ssh ip-10-1-0-15 sudo py-spy dump --pid 45924"
    ended = Facts(slurm=True, nodes=("ip-10-1-0-15",), ranks=(43,), pids={43: 45924}, ended=True)
    assert "45924" not in py_spy(ended).command


def test_the_cluster_example_bundle_says_what_to_run_next() -> None:
    from hyperpod_nccl.diagnose.service import diagnose
    from hyperpod_nccl.snapshot import Snapshot

    report = diagnose(Snapshot.load(BUNDLE))
    assert next_step_problems(report) == []
    assert any(f.is_issue for f in report.findings)
