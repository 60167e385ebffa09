"""Never silent on a visible failure, on input nobody here has seen (issue 16 item 1).

The failures are generated, not pasted: each is a way some software reports that a process or a
collective failed (NCCL's result codes in every framing, Python exceptions, crashes, non-zero exits
and signals from any launcher, Slurm's errors, kills), and each is wrapped in every launcher or
logger framing a paste can carry. Whatever the combination, the report must block (exit 1) with a
root cause. A healthy run's lines, in the same framings, must stay clean (exit 0): the net is wide,
not indiscriminate.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hyperpod_nccl.triage.engine import run_triage

# What a process or a collective failing looks like, one entry per wording (several lines where
# the software prints several).
FAILURES: dict[str, list[str]] = {
    # NCCL's result codes, with and without a framework's framing
    "torch1-nccl-error": ["RuntimeError: NCCL error: unhandled system error, NCCL version 2.7.8"],
    "torch1-nccl-error-n": ["RuntimeError: NCCL Error 2: unhandled system error"],
    "torch-result-name": [
        "ncclInternalError: Internal check failed. This is either a bug in NCCL or memory corruption"
    ],
    "tf-comm-init": [
        "tensorflow.python.framework.errors_impl.UnknownError: ncclCommInitRank failed: internal error"
    ],
    "cupy-constant": [
        "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error"
    ],
    "example-macro": ["Failed, NCCL error allreduce.cu:57 'unhandled system error'"],
    "example-macro-no-text": ["Failed: NCCL error csrc/comm/bootstrap-host.cpp:223 ''"],
    "open-mpi-abort": ["*** An error occurred in MPI_Allreduce", "*** Your MPI job will now abort."],
    "xla": [
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: nccl_utils.cc:297: NCCL operation "
        "ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled cuda error"
    ],
    "remote-exited": ["NCCL call failed: remote process exited or there was a network error"],
    "nccl-tests-nccl": ["# nThread 1 nGpus 8", "Test NCCL failure common.cu:1119 'invalid usage'"],
    "nccl-tests-cuda": [
        "Test CUDA failure common.cu:1045 'CUDA driver version is insufficient for CUDA runtime version'"
    ],
    "nccl-warn": ["gpu-7:4411:4470 [3] transport/net.cc:1041 NCCL WARN Something unexpected happened"],
    "nccl-warn-old": ["gpu-7:4411:4470 [3] transport/p2p.cu:512 WARN failed to open CUDA IPC handle"],
    "nccl-warn-text": ["Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000"],
    "nccl-warn-verbs": ["Call to ibv_create_qp failed"],
    "nccl-warn-proxy": ["Proxy Call to rank 14 failed (Connect)"],
    # Python exceptions that ended a process
    "traceback": ["Traceback (most recent call last):", '  File "train.py", line 3', "ValueError: bad"],
    "bare-exception": ["KeyError: 'input_ids'"],
    "dist-backend": [
        "torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving"
    ],
    "logger-level": ["2024-05-01 10:00:00,123 - trainer - ERROR - AssertionError: shapes differ"],
    "elastic-json": [
        "ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{",
        '  "message": {',
        '    "message": "RendezvousConnectionError: The connection to the C10d store has failed.",',
    ],
    # crashes
    "segfault": ["Segmentation fault (core dumped)"],
    "abort": ["Aborted (core dumped)"],
    "python-fatal": ["Fatal Python error: Segmentation fault"],
    "mpi-signal": ["[node3:02773] *** Process received signal ***", "[node3:02773] Signal: Aborted (6)"],
    "illegal-instruction": ["Illegal instruction (core dumped)"],
    "fpe": ["Floating point exception (core dumped)"],
    "cpp-terminate": ["terminate called after throwing an instance of 'c10::Error'"],
    "glog-check": ["F0501 10:00:00.000000 4242 nccl_manager.cc:88] Check failed: status.ok()"],
    "heap": ["double free or corruption (!prev)"],
    "heap-glibc": ["*** Error in `python3': malloc(): memory corruption: 0x00007f3c2c0008f0 ***"],
    "cpp-terminate-bare": ["terminate called without an active exception"],
    "worker-segfault": ["ERROR: Unexpected segmentation fault encountered in worker."],
    "kernel-segfault": ["python[81234]: segfault at 0 ip 00007f2a3c1b2e10 sp 00007ffd error 4 in libc.so.6"],
    "sigbus": ["*** SIGBUS received at time=1714557600 on cpu 3 ***"],
    "thread-exception": ["Exception in thread Thread-7 (_pin_memory_loop):"],
    "ray-task-error": [
        "ray.exceptions.RayTaskError(DistBackendError): ray::RayTrainWorker._RayTrainWorker__execute()"
    ],
    "cuda-driver-name": ["jax._src.lib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_ILLEGAL_ADDRESS"],
    "cuda-runtime-name": ["cudaErrorLaunchFailure: unspecified launch failure"],
    "no-driver": ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."],
    "take-down-old": [
        "[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the asynchronous "
        "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid "
        "this inconsistency, we are taking the entire process down."
    ],
    # non-zero exits and signals, from every launcher
    "torchrun": ["failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3"],
    "subprocess": [
        "subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 1."
    ],
    "pycharm": ["Process finished with exit code 137 (interrupted by signal 9: SIGKILL)"],
    "deepspeed": ["[launch.py:324:sigkill_handler] ['python', 'train.py'] exits with return code = 1"],
    "mpirun-signal": [
        "mpirun noticed that process rank 3 with PID 1234 on node n1 exited on "
        "signal 11 (Segmentation fault)."
    ],
    "mpirun-nonzero": [
        "Primary job  terminated normally, but 1 process returned",
        "a non-zero exit code. Per user-direction, the job has been aborted.",
    ],
    "mpirun-detected": [
        "mpirun detected that one or more processes exited with non-zero status, thus causing"
    ],
    "orte-exit-code": ["  Process name: [[44912,1],3]", "  Exit code:    3"],
    "mpi-abort": ["MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD"],
    "kubectl-describe": [
        "    Last State:     Terminated",
        "      Reason:       Error",
        "      Exit Code:    1",
    ],
    "kubectl-exec": ["command terminated with exit code 137"],
    "kubectl-pod-failed": ["Status:           Failed"],
    "k8s-image": ['Warning  Failed  12s  kubelet  Failed to pull image "registry.local/trainer:v3": no such'],
    "k8s-unschedulable": [
        "Warning  FailedScheduling  41s  default-scheduler  0/8 nodes are available: 8 Insufficient "
        "vpc.amazonaws.com/efa."
    ],
    "k8s-job": ["Warning  BackoffLimitExceeded  2m  job-controller  Job has reached the specified backoff"],
    "mpich-signal": [
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
        "=   RANK 3 PID 81234 RUNNING AT gpu-4",
        "=   KILLED BY SIGNAL: 11 (Segmentation fault)",
    ],
    "mpich-exit": ["=   EXIT CODE: 134"],
    "backoff": ["Warning  BackOff  3m  kubelet  Back-off restarting failed container trainer in pod job-0"],
    "exited-with-status": ["worker-3 exited with status 2"],
    "returncode": ["launcher: child returncode=-11"],
    "ray-worker": [
        "(raylet) A worker died or was killed while executing a task by an unexpected system error."
    ],
    # kills
    "killed": ["Killed"],
    "bash-killed": ["/var/spool/slurmd/job01/slurm_script: line 12:  4242 Killed   python train.py"],
    "zsh-killed": ["zsh: killed     python train.py"],
    "job-control": ["[1]+  Killed                  python train.py"],
    "fish": ["fish: Job 1, 'python train.py' terminated by signal SIGKILL (Forced quit)"],
    # Slurm
    "slurm-cancel": ["slurmstepd: error: *** JOB 1234 ON node1 CANCELLED AT 2024-05-01T10:00:00 ***"],
    "srun-task": ["srun: error: node1: task 0: Exited with exit code 1"],
    "srun-error": [
        "srun: error: Unable to create step for job 1234: Memory required by task is not available"
    ],
    "step-aborted": ["srun: Job step aborted: Waiting up to 32 seconds for job step to finish."],
    # out of memory
    "cuda-oom": ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"],
    "tf-oom": ["ResourceExhaustedError: OOM when allocating tensor with shape[8192,1000]"],
    "ray-oom": ["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."],
}

# How a paste frames each line: launchers, loggers and log stores.
FRAMINGS: dict[str, Callable[[int, str], str]] = {
    "bare": lambda _, line: line,
    "torch-rank": lambda i, line: f"[rank{i}]:{line}",
    "torchrun-local": lambda i, line: f"[default{i}]:{line}",
    "srun-label": lambda i, line: f"{i}: {line}",
    "mpirun": lambda i, line: f"[1,{i}]<stderr>:{line}",
    "kubectl": lambda _, line: f"2024-05-01T10:00:0{_ % 10}.123456789Z {line}",
    "ray": lambda i, line: f"(RayTrainWorker pid={4000 + i}, ip=10.0.0.{i}) {line}",
    "cloudwatch-table": lambda _, line: f"| 2024-05-01 10:00:00.000 | {line} |",
    "cloudwatch-events": lambda _, line: f"2024-05-01T10:00:00.000+00:00\t{line}",
}

HEALTHY = [
    "NCCL version 2.21.5+cuda12.4",
    "gpu-7:4411:4411 [3] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal",
    "[2024-05-01 10:00:00,123] [INFO] [train.py:241] [rank 3] step=120 loss=2.3456 lr=3.00e-04",
    "Epoch 1: 100%|██████████| 100/100 [00:10<00:00, loss=0.1]",
    "Process finished with exit code 0",
    "worker-3 exited with status 0",
    "srun: job 1234 queued and waiting for resources",
    "Training completed. Do not forget to share your model on huggingface.co/models =)",
]


def _triage(tmp_path: Path, lines: list[str]) -> tuple[int, str | None]:
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines) + "\n")
    report = run_triage([log])
    cause = report.root_cause
    return (1 if report.blocking else 0), (cause.category.value if cause else None)


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_visible_failure_in_any_framing_is_never_answered_exit_0(
    tmp_path: Path, failure: str, framing: str
) -> None:
    frame = FRAMINGS[framing]
    lines = [frame(3, line) for line in FAILURES[failure]]
    status, category = _triage(tmp_path, lines)
    shown = "\n".join(lines)
    assert status == 1 and category is not None, f"{failure} framed as {framing} answered exit 0:\n{shown}"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_healthy_run_in_any_framing_stays_clean(tmp_path: Path, framing: str) -> None:
    lines = [FRAMINGS[framing](3, line) for line in HEALTHY]
    assert _triage(tmp_path, lines) == (0, None), "\n".join(lines)


_BARE_NCCL_ERROR = (
    "RuntimeError: ncclCommInitRank failed: internal error - please report this issue to the NCCL developers"
)


@pytest.mark.parametrize("with_info", [False, True], ids=["nccl-debug-off", "nccl-debug-info"])
def test_an_unexplained_nccl_error_asks_for_nccls_own_words_only_when_it_printed_none(
    tmp_path: Path, with_info: bool
) -> None:
    lines = (["gpu1:77:77 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"] if with_info else []) + [
        _BARE_NCCL_ERROR
    ]
    log = tmp_path / "serve.log"
    log.write_text("\n".join(lines) + "\n")
    report = run_triage([log])
    (failure,) = [f for f in report.findings if f.id == "triage.unknown.failure"]
    asks = any("NCCL_DEBUG=INFO" in c.command for c in failure.suggested_commands)
    assert asks is not with_info, failure.suggested_commands
    assert with_info is (failure.no_command_reason is not None)
    # the error is the unknown failure's own first line: no second finding quotes it again
    assert [f.id for f in report.findings] == ["triage.unknown.failure"], [f.id for f in report.findings]


# A log that ends saying it failed, in wordings no rule knows: the last lines are read for them.
LAST_WORDS = {
    "tool-error": "hipblaslt error: Could not initialise the handle for device 3",
    "cli-error": "Error: invalid value for '--mesh': expected 2 axes",
    "fatal": "FATAL: stage 2 refused to start (no peers)",
    "failed-colon": "ctx create epilog for mlx5 failed: Unhandled status",
    "cut-traceback": '    raise PipelineSetupError(f"stage {stage} has no inputs")',
    "aborted": "Aborted (core not written)",
    "non-zero": "E0502 15:08:43.208417 gpu_compiler.cc:1592] nvlink exited with non-zero error code 256",
}
# Lines that end healthy logs and say "error" or "failed" without anything having failed.
BENIGN_LAST_WORDS = [
    "wandb: Synced 5 W&B file(s), 0 media file(s), 0 error(s)",
    "eval: epoch=3 mean_error=0.031 val_error: 0.027",
    "validation error rate 0.12 after 40 steps",
    "gpu-7:4411:4411 [3] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
    "UserWarning: loading the optimizer state failed over to the CPU copy",
    "[2024-05-01 10:00:00,123] [WARNING] [engine.py:88] checkpoint tag lookup failed, using latest",
    "Training finished with no errors",
]


@pytest.mark.parametrize("framing", ["bare", "torch-rank", "srun-label", "kubectl"])
@pytest.mark.parametrize("wording", LAST_WORDS)
def test_a_log_that_ends_saying_it_failed_in_an_unknown_wording_is_a_failure(
    tmp_path: Path, wording: str, framing: str
) -> None:
    frame = FRAMINGS[framing]
    lines = [frame(3, line) for line in HEALTHY[:4]] + [frame(3, LAST_WORDS[wording]), frame(3, "")]
    log = tmp_path / "paste.log"
    log.write_text("\n".join(lines))
    report = run_triage([log])
    assert report.blocking and report.root_cause is not None, "\n".join(lines)
    assert report.root_cause.category.value == "unknown" and report.root_cause.confidence == "low"
    (failure,) = [f for f in report.findings if f.id == "triage.unknown.failure"]
    assert [(e.line, e.text) for e in failure.evidence] == [(5, lines[4])]
    if framing in ("torch-rank", "srun-label"):
        assert failure.ranks == [3]


@pytest.mark.parametrize("ending", BENIGN_LAST_WORDS)
def test_a_healthy_log_that_ends_on_benign_error_words_stays_clean(tmp_path: Path, ending: str) -> None:
    assert _triage(tmp_path, [*HEALTHY, ending]) == (0, None), ending


def test_only_the_last_lines_are_read_for_unknown_failure_words(tmp_path: Path) -> None:
    """An unknown error line deep inside a run that went on is not the run's end: the net stays at the end."""
    early = LAST_WORDS["tool-error"]
    assert _triage(tmp_path, [early, *HEALTHY[2:4] * 3]) == (0, None)
    assert _triage(tmp_path, [*HEALTHY[2:4] * 3, early])[0] == 1


def test_the_last_lines_reach_past_a_final_line_without_a_newline(tmp_path: Path) -> None:
    """A paste's last line has no newline: the lines before it are among the last lines still."""
    log = tmp_path / "paste.log"
    log.write_text(f"{HEALTHY[2]}\n{LAST_WORDS['tool-error']}\nstep 12 loss 1.9")
    report = run_triage([log])
    (failure,) = [f for f in report.findings if f.id == "triage.unknown.failure"]
    assert [e.line for e in failure.evidence] == [2]


def test_of_several_unknown_error_lines_at_the_end_the_earliest_is_quoted(tmp_path: Path) -> None:
    """The earliest abnormal line is the one named: the ones after it are often its echo."""
    log = tmp_path / "launch.log"
    first = "Error: failed to run worker.sh on 10.0.0.8, exception: stream closed"
    log.write_text(f"{HEALTHY[2]}\n{first}\n{first.replace('10.0.0.8', '10.0.0.9')}\n")
    report = run_triage([log])
    (failure,) = [f for f in report.findings if f.id == "triage.unknown.failure"]
    assert [e.line for e in failure.evidence] == [2]
