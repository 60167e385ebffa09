"""How the run went (issue 14 item 4) and the job summary's node count: the outcome and its evidence
line, resume state, per-rank times, and the machines behind one hostname."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.test_families import describe, nccl_warn, triage

_WATCHDOG = (
    "[rank{rank}]:[E302 10:31:27.496407714 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=451, OpType=ALLREDUCE, NumelIn=98, NumelOut=98, "
    "Timeout(ms)=600000) "
    "ran for 600020 milliseconds before timing out."
)


def test_a_failure_the_launcher_ended_is_crashed_with_the_launchers_line(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "[2026-03-02 10:00:08] step=1 loss=2.1",
            _WATCHDOG.format(rank=0),
            "srun: error: ip-10-1-0-17: tasks 0-7: Aborted (core dumped)",
        ]
    )
    job = triage(tmp_path, {"slurm-51877.out": text + "\n"}).job
    assert job.outcome.outcome == "crashed", job.outcome
    assert job.outcome.evidence and "Aborted" in job.outcome.evidence.text


@pytest.mark.parametrize(
    "last",
    [
        "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, "
        "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
        "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 79.10 GiB of which 1.20 GiB is free.",
    ],
    ids=["bind", "backend-error", "cuda-oom"],
)
def test_an_error_no_code_caught_ended_its_process(tmp_path: Path, last: str) -> None:
    text = 'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n' + last + "\n"
    job = triage(tmp_path, {"train.log": text}).job
    assert job.outcome.outcome == "crashed", job.outcome
    assert job.outcome.evidence and job.outcome.evidence.line == 3


def test_an_error_a_logger_printed_is_no_proof_the_process_ended(tmp_path: Path) -> None:
    text = nccl_warn("node-1", 4100, 0, "net.cc:120", "NET/Socket : recv failed")[1:] + "\n"
    text += "2026-03-02 10:00:09 ERROR retrying: RuntimeError: connection reset\n"
    job = triage(tmp_path, {"train.log": text}).job
    assert job.outcome.outcome == "still running or cut short", job.outcome


def test_a_finished_run_and_a_run_that_stops_without_an_end(tmp_path: Path) -> None:
    done = triage(
        tmp_path / "done", {"train.log": "step=10 loss=1.0\n`Trainer.fit` stopped: `max_epochs=1` reached.\n"}
    )
    assert done.job.outcome.outcome == "completed", done.job.outcome
    running = triage(tmp_path / "running", {"train.log": "step=10 loss=1.0\nstep=11 loss=0.9\n"})
    assert running.job.outcome.outcome == "still running or cut short", running.job.outcome
    assert running.root_cause is None, describe(running)


def test_resume_from_a_checkpoint_is_read_from_the_line_that_says_so(tmp_path: Path) -> None:
    report = triage(
        tmp_path, {"train.log": "Resuming training from checkpoint /fsx/ckpt/step_1200\nstep=1201\n"}
    )
    assert report.job.resume.resumed == "yes" and report.job.resumed_from_checkpoint is True
    assert report.job.resume.evidence and report.job.resume.evidence.line == 1
    fresh = triage(tmp_path / "fresh", {"train.log": "step=1 loss=2.0\n"})
    assert fresh.job.resume.resumed == "not detected" and fresh.job.resumed_from_checkpoint is None


@pytest.mark.parametrize(
    ("line", "resumed"),
    [
        ("resume_from_checkpoint=/fsx/ckpt/checkpoint-500,", "yes"),
        ("'resume_from_checkpoint': True,", "yes"),
        # source code a traceback echoes: a name, not a checkpoint
        ("    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)", "not detected"),
        ("    train_result = trainer.train(resume_from_checkpoint=checkpoint)", "not detected"),
    ],
    ids=["path", "true", "dotted-name", "bare-name"],
)
def test_a_resume_setting_counts_only_with_a_value(tmp_path: Path, line: str, resumed: str) -> None:
    report = triage(tmp_path, {"train.log": line + "\nstep=1 loss=2.0\n"})
    assert report.job.resume.resumed == resumed, report.job.resume


def test_a_rank_whose_log_stopped_early_stands_apart_in_the_rank_times(tmp_path: Path) -> None:
    files = {}
    for rank in range(4):
        end = "10:05:00" if rank == 2 else "10:31:00"
        files[f"rank{rank}.log"] = (
            f"{rank}: [2026-03-02 10:00:00] node-1:4{rank}:4{rank} [{rank}] NCCL INFO cudaDriverVersion 1\n"
            f"{rank}: [2026-03-02 {end}] step=2 loss=1.0\n"
        )
    spans = triage(tmp_path, files).job.rank_times
    assert [(s.ranks, s.last) for s in spans] == [
        ("0-1,3", "2026-03-02T10:31:00"),
        ("2", "2026-03-02T10:05:00"),
    ]


def test_one_hostname_on_two_addresses_is_counted_as_two_nodes(tmp_path: Path) -> None:
    lines = [
        "gpuhost:18225:18239 [0] INFO NET : Using interface eth1:10.2.0.11<0>",
        "gpuhost:22670:22794 [0] INFO NET : Using interface eth1:10.2.0.12<0>",
    ]
    job = triage(tmp_path, {"mpirun.out": "\n".join(lines) + "\n"}).job
    assert job.nodes == 2
    assert any("gpuhost names 2 machines" in note for note in job.notes), job.notes


_SPAWN_KILL = "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL\n"


def test_on_one_machine_a_spawned_process_index_is_its_rank(tmp_path: Path) -> None:
    report = triage(tmp_path, {"train.log": "Traceback (most recent call last):\n" + _SPAWN_KILL})
    assert report.root_cause and report.root_cause.culprit_ranks == [1], describe(report)


def test_a_local_rank_is_no_global_rank_in_a_launch_across_nodes(tmp_path: Path) -> None:
    launch = "torchrun --nnodes=2 --nproc_per_node=4 --node_rank=1 train.py\n"
    report = triage(tmp_path, {"train.log": launch + _SPAWN_KILL})
    assert report.root_cause and report.root_cause.culprit_ranks == [], describe(report)


def test_a_dated_failure_reads_the_kernel_journal_around_it_not_one_boots_dmesg(tmp_path: Path) -> None:
    text = (
        "slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.\n"
        "srun: error: gpu20-15: task 0: Out Of Memory\n"
        "slurmstepd-gpu20-15: error: *** STEP 9411285.0 ON gpu20-15 CANCELLED AT 2022-05-17T17:58:10 ***\n"
    )
    report = triage(tmp_path, {"slurm-9411285.out": text})
    commands = [c.command for f in report.findings for c in f.suggested_commands]
    journal = [c for c in commands if "journalctl" in c]
    assert journal and journal[0].startswith(
        "ssh gpu20-15 sudo journalctl -k --since '2022-05-17 17:43' --until '2022-05-17 18:03' | grep"
    ), commands
    assert not any("dmesg" in c for c in commands), commands


def test_an_undated_failure_reads_dmesg(tmp_path: Path) -> None:
    report = triage(tmp_path, {"train.log": "Traceback (most recent call last):\n" + _SPAWN_KILL})
    commands = [c.command for f in report.findings for c in f.suggested_commands]
    assert any(c.startswith("sudo dmesg -T | grep") for c in commands), commands
