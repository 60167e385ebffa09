"""How pasted lines are read (assistant trial 13): pdsh's host prefix names the node, an old PyTorch's
misprinted NCCL version is read as the release it is, the source line under a traceback frame is
code rather than an event, PyTorch's collect_env banner is not a package install, and a world size
the logs only imply counts the missing ranks from below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.triage.patterns import nccl_release
from hyperpod_nccl.triage.prefixes import strip
from tests.triage.test_families import describe, triage


@pytest.mark.parametrize(
    ("line", "host", "message"),
    [
        ("compute-dy-p4d24xlarge-77: RuntimeError: boom", "compute-dy-p4d24xlarge-77", "RuntimeError: boom"),
        (
            "ip-10-0-1-5: [rank3]: Traceback (most recent call last):",
            "ip-10-0-1-5",
            "Traceback (most recent call last):",
        ),
        ("Error: failed to run torchrun on 10.0.0.9", None, "Error: failed to run torchrun on 10.0.0.9"),
        ("rank0: loss 2.31", None, "rank0: loss 2.31"),
        ("top5: 0.91", None, "top5: 0.91"),
        (
            "ml.dmlc.xgboost4j.java.XGBoostError: [12:56:19] updater_gpu_hist.cu:1490: NCCL failure",
            None,
            "ml.dmlc.xgboost4j.java.XGBoostError: [12:56:19] updater_gpu_hist.cu:1490: NCCL failure",
        ),
        ("> [rank8]: TypeError: f() got an unexpected keyword argument 'x'", None, "TypeError: f() got"),
    ],
    ids=["pdsh-host", "pdsh-over-torch-rank", "word-colon", "rank-word", "metric", "java-class", "quoted"],
)
def test_pdshs_host_prefix_is_a_host_and_a_word_with_a_colon_is_not(
    line: str, host: str | None, message: str
) -> None:
    found = strip(line)
    assert found.host == host and found.message.startswith(message)


def test_slurmstepds_own_prefix_is_still_slurmstepds() -> None:
    found = strip("slurmstepd-gpu20-15: error: Detected 1 oom_kill event in StepId=88.0.")
    assert found.host == "gpu20-15"


def test_a_deepspeed_pdsh_paste_names_its_node_and_the_nccl_release(tmp_path: Path) -> None:
    text = (
        "compute-dy-p4d24xlarge-77: RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, "
        "unhandled system error, NCCL version 21.1.4\n"
    )
    report = triage(tmp_path, {"deepspeed.out": text})
    assert report.job is not None and report.job.nodes == 1, describe(report)
    (group,) = report.job.versions
    assert group.nodes == ["compute-dy-p4d24xlarge-77"] and group.nccl == "2.11.4"


@pytest.mark.parametrize(
    ("printed", "release"),
    [("20.9.9", "2.9.9"), ("21.1.4", "2.11.4"), ("21.0.3", "2.10.3"), ("2.18.3", "2.18.3"), ("2.7", "2.7")],
)
def test_old_pytorchs_nccl_version_misprint_is_read_as_the_release(printed: str, release: str) -> None:
    assert nccl_release(printed) == release


def test_the_source_line_under_a_traceback_frame_is_code_not_an_event(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.6/site-packages/deepspeed/launcher/launch.py", line 161, in main\n'
        "    sigkill_handler(signal.SIGTERM, None)  # not coming back\n"
        '  File "/opt/conda/lib/python3.6/site-packages/deepspeed/launcher/launch.py", line 139, in handler\n'
    )
    report = triage(tmp_path, {"launch.log": text})
    assert report.job is not None and report.job.outcome is not None
    # no line says the processes were ended: the code line is not a signal received
    assert (
        report.job.outcome.outcome != "crashed"
        or report.job.outcome.evidence is None
        or ("SIGTERM" not in report.job.outcome.evidence.text)
    ), report.job.outcome


def test_a_traceback_whose_exception_another_pattern_read_is_not_cut(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.6/site-packages/deepspeed/launcher/launch.py", line 139, in handler\n'
        "    raise subprocess.CalledProcessError(returncode=last_return_code, cmd=cmd)\n"
        "subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 1.\n"
    )
    report = triage(tmp_path, {"launch.log": text})
    assert not any(f.id == "triage.software.cut_traceback" for f in report.findings), describe(report)


def test_collect_envs_banner_is_not_a_package_install(tmp_path: Path) -> None:
    text = (
        "Collecting environment information...\n"
        "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED\n"
    )
    report = triage(tmp_path, {"run.log": text})
    assert not any(f.id == "triage.rendezvous.late_setup" for f in report.findings), describe(report)


def test_missing_ranks_counted_from_an_implied_world_say_at_least(tmp_path: Path) -> None:
    text = (
        "[rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600059 "
        "milliseconds before timing out.\n"
    )
    report = triage(tmp_path, {"console.log": text})
    missing = [f for f in report.findings if f.id == "triage.input.missing_ranks"]
    assert missing and missing[0].title.startswith("Logs of at least 1 rank are missing"), describe(report)


def test_an_exception_line_run_into_another_tracebacks_markers_is_read(tmp_path: Path) -> None:
    # Python 3.11's `^^^^` markers from another process's traceback, in the same terminal
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/train.py", line 12, in <module>\n'
        "    build(config)\n"
        "^^^^^^^^^KeyError: ^^'vocab_size'\n"
    )
    report = triage(tmp_path, {"console.log": text})
    assert report.root_cause is not None and report.root_cause.finding == "triage.software.exception", (
        describe(report)
    )


def test_a_launcher_prefix_behind_a_progress_bars_redraw_names_the_rank() -> None:
    found = strip("  0%|          | 0/4 [00:00<?, ?it/s][1,3]<stdout>:25")
    assert (found.rank, found.message) == (3, "25")


def test_a_progress_bar_alone_keeps_its_text() -> None:
    line = " 50%|#####     | 2/4 [00:01<00:01, 1.50it/s]"
    assert strip(line).message == line


def test_node_commands_for_a_pods_hostname_ask_kubernetes_for_its_node(tmp_path: Path) -> None:
    text = (
        "task-646--1-mhpnk:91:123 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got completion from peer "
        "172.17.127.143<49577> with error 12, opcode 1, len 0, vendor err 129\n"
    )
    report = triage(tmp_path, {"worker-1.log": text})
    commands = [c.command for f in report.findings for c in f.suggested_commands]
    assert "kubectl get pod task-646--1-mhpnk -o wide" in commands, commands
    assert not any(c.startswith(("kubectl describe node", "kubectl cordon")) for c in commands), commands
    assert len(commands) == len(set(commands)), commands


_IB_12 = (
    "{host}:91:123 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.7<49577> with error 12, opcode 1, len 0, vendor err 129\n"
)


def test_a_fabric_error_with_nothing_before_it_is_a_low_guess_either_way(tmp_path: Path) -> None:
    report = triage(tmp_path, {"worker-1.log": _IB_12.format(host="gpu-a1")})
    assert report.root_cause is not None and report.root_cause.confidence == "low", describe(report)
    assert "perhaps one bad link" in report.root_cause.summary


def test_a_fabric_error_after_the_jobs_start_before_any_collective_is_the_settings(tmp_path: Path) -> None:
    start = "gpu-a1:91:91 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.6<0>\n"
    report = triage(tmp_path, {"worker-1.log": start + _IB_12.format(host="gpu-a1")})
    assert report.root_cause is not None and report.root_cause.confidence == "medium", describe(report)
    assert "before any collective completed" in report.root_cause.summary
