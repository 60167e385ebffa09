"""Families of wording from held-out sets 45 and later (issue 16, logs from threads not in the corpus):
a process that could not start CUDA, a kernel without pidfd_getfd, and PyTorch's internal assertions.
Each is tested in wordings other than the pasted case's, with the near misses that must stay what
they are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.test_families import commands_of, describe, root_finding, triage


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: initialization error",
        "worker-3: misc/cudawrap.cc:188 NCCL WARN Cuda failure 3 'initialization error'",
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: cudaErrorInitializationError on device 0",
    ],
)
def test_cuda_that_could_not_start_is_the_process_environment(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank0.log": line + "\n"})
    assert root_finding(report) == ("config", "triage.config.cuda_init"), describe(report)
    commands = commands_of(report, "triage.config.cuda_init")
    assert "nvidia-smi -L" in commands and "CUDA_VISIBLE_DEVICES" not in commands, commands


def test_the_driver_apis_not_initialized_is_the_librarys_own_order(tmp_path: Path) -> None:
    text = (
        "CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:90: operation "
        "gpuDeviceGetAttribute(&major, GPU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) failed: "
        "CUDA_ERROR_NOT_INITIALIZED\n"
    )
    report = triage(tmp_path, {"proc0.log": text})
    assert "triage.config.cuda_init" not in {f.id for f in report.findings}, describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: The kernel on this machine does not support the pidfd_getfd syscall needed to use IPC "
        "for CUDA tensors when expandable_segments:True is set.",
        "[rank1]: RuntimeError: pidfd_getfd: Function not implemented",
    ],
)
def test_a_kernel_without_pidfd_getfd_is_the_allocator_setting(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank1.log": line + "\n"})
    assert root_finding(report) == ("config", "triage.config.fd_sharing_unsupported"), describe(report)
    commands = commands_of(report, "triage.config.fd_sharing_unsupported")
    assert "uname -r" in commands and "expandable_segments:False" in commands, commands


def test_pidfd_getfd_refused_is_still_the_permission(tmp_path: Path) -> None:
    text = "[rank0]: RuntimeError: pidfd_getfd: Operation not permitted\n"
    report = triage(tmp_path, {"rank0.log": text})
    assert root_finding(report) == ("config", "triage.config.fd_sharing_denied"), describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: tensors.size() > 0 INTERNAL ASSERT FAILED at pytorch/torch/csrc/distributed/c10d/"
        "reducer.cpp:672, please report a bug to PyTorch.",
        '[rank2]: RuntimeError: !grad_accumulator_.expired() INTERNAL ASSERT FAILED at "../torch/csrc/'
        'autograd/function.h:532", please report a bug to PyTorch.',
    ],
)
def test_pytorchs_internal_assertion_is_a_library_invariant(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank2.log": "Traceback (most recent call last):\n" + line + "\n"})
    assert root_finding(report) == ("software", "triage.software.internal_assert"), describe(report)


def test_an_assertion_of_the_training_code_is_not_pytorchs(tmp_path: Path) -> None:
    text = "Traceback (most recent call last):\nAssertionError: assert failed: batch size must be even\n"
    report = triage(tmp_path, {"rank0.log": text})
    assert "triage.software.internal_assert" not in {f.id for f in report.findings}, describe(report)


@pytest.mark.parametrize(
    "text",
    [
        "usage: generate.py [-h] [--model MODEL] [--max-tokens MAX_TOKENS]\n"
        "generate.py: error: unrecognized arguments: --local_rank=1\n",
        "[default0]:run_clm.py: error: unrecognized arguments: --local_rank=0\n",
    ],
)
def test_the_old_local_rank_spelling_refused_is_a_script_for_torchrun_under_another_launcher(
    tmp_path: Path, text: str
) -> None:
    report = triage(tmp_path, {"launcher.out": text})
    assert root_finding(report) == ("config", "triage.config.local_rank_not_taken"), describe(report)


def test_the_new_local_rank_spelling_refused_is_still_an_old_script(tmp_path: Path) -> None:
    text = "train.py: error: unrecognized arguments: --local-rank=0\n"
    report = triage(tmp_path, {"launcher.out": text})
    assert root_finding(report) == ("software", "triage.software.local_rank_argument"), describe(report)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : "
            "out of memory\nRuntimeError: cuda runtime error (2) : out of memory at "
            "/pytorch/aten/src/THC/generic/THCStorage.cu:58\n",
            ("gpu_oom", "triage.gpu.cuda_oom"),
        ),
        (
            "THCudaCheck FAIL file=/opt/conda/work/torch/csrc/cuda/Module.cpp line=159 error=77 : an illegal "
            "memory access was encountered\n",
            ("software", "triage.cuda.illegal_address"),
        ),
        (
            "RuntimeError: cuda runtime error (3) : initialization error at "
            "/pytorch/aten/src/THC/THCGeneral.cpp:51\n",
            ("config", "triage.config.cuda_init"),
        ),
    ],
)
def test_old_pytorchs_cuda_checks_read_like_the_new_ones(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"rank0.log": text})
    assert root_finding(report) == expected, describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "[rank4]:[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] [PG ID 12 PG GUID "
        "99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4] ProcessGroupNCCL's watchdog got stuck for 480 seconds "
        "without making progress in monitoring enqueued collectives.",
        "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 5 Rank 0] Heartbeat monitor timed out! Process will be "
        "terminated after dumping debug info. workMetaList_.size()=3",
    ],
)
def test_the_watchdog_hung_alone_is_the_teardown_at_low_confidence(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank.log": "[rank0]: saving model to /ckpt/final\n" + line + "\n"})
    assert root_finding(report) == ("software", "triage.software.watchdog_hung"), describe(report)
    assert report.root_cause is not None and report.root_cause.confidence == "low"
    assert "destroy_process_group" in next(
        f.detail for f in report.findings if f.id == "triage.software.watchdog_hung"
    )


def test_the_watchdog_hung_after_a_gpu_error_is_the_gpu(tmp_path: Path) -> None:
    text = (
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! Process will be "
        "terminated after dumping debug info.\n"
    )
    report = triage(tmp_path, {"rank0.log": text})
    assert "triage.software.watchdog_hung" not in {f.id for f in report.findings}, describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "2022-07-19T18:01:59.211667Z\tdebug\tenvoy upstream\tmembership update for TLS cluster "
        "inbound|23456|| added 0 removed 1",
        '[2024-03-01T10:00:00.000Z] "- - -" 0 UF,URX - - "-" 0 0 10001 - "-" "-" "-" "-" '
        '"10.0.3.7:29500" outbound|29500||master-0.training.svc.cluster.local - 10.0.3.7:29500 istio-proxy',
    ],
)
def test_a_mesh_sidecar_on_the_jobs_ports_is_the_pod_set_up(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"istio-proxy.log": line + "\n"})
    assert root_finding(report) == ("config", "triage.config.mesh_sidecar"), describe(report)
    assert "istio-injection" in commands_of(report, "triage.config.mesh_sidecar")


def test_a_pipe_table_is_not_a_mesh_sidecar(tmp_path: Path) -> None:
    text = "| direction | port |\n| inbound|23456| allowed |\n"
    report = triage(tmp_path, {"notes.log": text})
    assert "triage.config.mesh_sidecar" not in {f.id for f in report.findings}, describe(report)


_FIRST_COLLECTIVE_TIMED_OUT = (
    "[rank1]:[E829 16:32:30.656674606 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    "ran for 600062 milliseconds before timing out.\n"
)


@pytest.mark.parametrize(
    "started",
    [
        "> compiling and loading fused kernels ...",
        "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
    ],
)
def test_a_build_that_never_finished_before_the_first_timeout_is_the_build(
    tmp_path: Path, started: str
) -> None:
    report = triage(tmp_path, {"train.log": started + "\n" + _FIRST_COLLECTIVE_TIMED_OUT})
    assert root_finding(report) == ("software", "triage.software.jit_build_hung"), describe(report)
    assert "-name lock" in commands_of(report, "triage.software.jit_build_hung")


def test_a_build_that_finished_is_not_the_cause(tmp_path: Path) -> None:
    text = (
        "> compiling and loading fused kernels ...\n"
        ">>> done with compiling and loading fused kernels. Compilation time: 2.1 seconds\n"
        + _FIRST_COLLECTIVE_TIMED_OUT
    )
    report = triage(tmp_path, {"train.log": text})
    assert "triage.software.jit_build_hung" not in {f.id for f in report.findings}, describe(report)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "RuntimeError: more than one node have assigned same rank at /opt/pytorch/torch/lib/THD/"
            "process_group/General.cpp:17",
            ("rendezvous", "triage.rendezvous.rank_claimed_twice"),
        ),
        (
            "accelerate.utils.operations.DistributedOperationException: Cannot apply desired operation "
            "due to shape mismatches. All Shapes across devices must be valid. Input shapes: - Process 0: "
            "[8, 512] - Process 1: [8, 498]",
            ("collective_mismatch", "triage.nccl.collective_shape"),
        ),
        ("[rank: 1] Child process ... terminated with code -9", ("host_oom", "triage.host.sigkill")),
    ],
)
def test_start_up_claims_shapes_and_lightning_children(
    tmp_path: Path, line: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"console.log": line + "\n"})
    assert root_finding(report) == expected, describe(report)


def test_registration_refused_for_memory_asks_for_the_limit_and_then_the_kernel(tmp_path: Path) -> None:
    text = "NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n"
    report = triage(tmp_path, {"node1.log": text})
    assert root_finding(report) == ("config", "triage.config.memlock"), describe(report)
    commands = commands_of(report, "triage.config.memlock")
    assert "ulimit -l" in commands and "uname -r" in commands and "/dev/shm" not in commands, commands


def test_nccls_quoted_cuda_failure_names_the_call_it_returned_from(tmp_path: Path) -> None:
    text = (
        "worker-1: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled "
        "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3\n"
        "worker-1: ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "worker-1: Last error:\n"
        "worker-1: Cuda failure 'initialization error'\n"
    )
    report = triage(tmp_path, {"launcher.log": text})
    assert root_finding(report) == ("config", "triage.config.cuda_init"), describe(report)
    assert "triage.software.nccl_cuda_call" not in {f.id for f in report.findings}, describe(report)


def test_the_heartbeat_monitors_own_termination_ends_the_run(tmp_path: Path) -> None:
    text = (
        "[E930 15:23:00.059980974 ProcessGroupNCCL.cpp:1487] [PG ID 4 PG GUID  Rank 2] ProcessGroupNCCL's "
        "watchdog got stuck for 10 seconds without making progress in monitoring enqueued collectives.\n"
        "[F930 15:23:07.686401350 ProcessGroupNCCL.cpp:1309] [PG ID 6 PG GUID  Rank 0] Terminating the "
        "process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang.\n"
    )
    report = triage(tmp_path, {"mpirun.log": text})
    assert report.job is not None and report.job.outcome is not None
    assert report.job.outcome.outcome == "crashed", describe(report)


def test_an_engine_for_two_gpus_run_as_one_process_is_the_launch(tmp_path: Path) -> None:
    text = "AssertionError: Engine world size (4) != Runtime world size (1)\n"
    report = triage(tmp_path, {"run.log": text})
    assert root_finding(report) == ("config", "triage.config.engine_world_size"), describe(report)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
            ("software", "triage.software.library_version_not_found"),
        ),
        (
            "OSError: libnccl.so: cannot open shared object file: No such file or directory",
            ("config", "triage.config.library_not_found"),
        ),
        (
            "EnforceNotMet: Failed to find dynamic library: libnccl.so ( libnccl.so: cannot open shared "
            "object file: No such file or directory )",
            ("config", "triage.config.library_not_found"),
        ),
        (
            "MPICH ERROR [Rank 3] [job id 1234] [x1000c0s1b0n0] - Abort(-1) (rank 3 in comm 0): "
            "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked",
            ("config", "triage.config.mpi_gtl_not_linked"),
        ),
        (
            "RuntimeError: This trainer does not work on multi-GPU setups yet.",
            ("config", "triage.config.single_gpu_library"),
        ),
        (
            "not ready endpoints:['10.0.0.2:6070', '10.0.0.2:6071']",
            ("rendezvous", "triage.rendezvous.peers_not_ready"),
        ),
    ],
)
def test_environments_builds_and_launches_that_do_not_fit(
    tmp_path: Path, line: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"console.log": line + "\n"})
    assert root_finding(report) == expected, describe(report)


def test_nccls_optional_plugin_it_goes_without_is_no_missing_library(tmp_path: Path) -> None:
    text = (
        "node1:155:155 [0] NCCL INFO NET/Plugin: Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: "
        "cannot open shared object file: No such file or directory\n"
    )
    report = triage(tmp_path, {"node1.log": text})
    assert "triage.config.library_not_found" not in {f.id for f in report.findings}, describe(report)


def test_a_missing_module_under_torch_extensions_is_the_build_that_never_made_it(tmp_path: Path) -> None:
    text = (
        "[rank1]: ImportError: /home/u/.cache/torch_extensions/py310_cu121/cpu_adam/cpu_adam.so: cannot "
        "open shared object file: No such file or directory\n"
    )
    report = triage(tmp_path, {"rank1.log": text})
    assert root_finding(report) == ("software", "triage.software.extension_build"), describe(report)
