"""Families of wording from held-out sets 13 and 14 (issue 16, logs from threads not in the corpus):
builds that do not fit the machine (an illegal instruction, an NCCL result the library cannot name,
kernels too big for the GPU, a network plugin the loader refuses), the program's own mistakes
(the wrapper used as the model, ranks racing over one rename), a C++ library's fatal check, Horovod's
stall inspector, and what a paste keeps of a traceback it cut short. Each is tested in wordings
other than the pasted case's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.models import Category, Finding, Report, Status
from tests.triage.test_families import cause, describe, root_finding, triage


def _finding(report: Report, finding_id: str) -> Finding:
    found = [f for f in report.findings if f.id == finding_id]
    assert found, describe(report)
    return found[0]


# --- an illegal instruction -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "run.sh.out",
            "Loading extension module cpu_adam...\n./run.sh: line 12:  4242 Illegal instruction     "
            "(core dumped) python train.py\n",
        ),
        (
            "torchrun.log",
            "[E1105 10:00:01.000000 812 torch/distributed/elastic/multiprocessing/api.py:869] failed "
            "(exitcode: -4) local_rank: 2 (pid: 4242) of binary: /usr/bin/python\n",
        ),
        (
            "dmesg.txt",
            "[Tue Nov  5 10:00:01 2024] traps: pt_main_thread[4242] trap invalid opcode ip:7f3a1c2b4d10 "
            "sp:7ffd5e3c2a00 error:0 in libcpu_adam.so[7f3a1c200000+c0000]\n",
        ),
    ],
    ids=["shell", "torchrun-exitcode", "kernel-trap"],
)
def test_an_illegal_instruction_is_a_build_that_does_not_fit(tmp_path: Path, name: str, text: str) -> None:
    report = triage(tmp_path, {name: text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    finding = _finding(report, "triage.software.illegal_instruction")
    commands = " ".join(c.command for c in finding.suggested_commands)
    assert "invalid opcode" in commands and "lscpu" in commands


def test_the_commands_go_to_the_node_whose_line_came_first(tmp_path: Path) -> None:
    text = (
        "  [pool0-7:4242:0:4242] Caught signal 4 (Illegal instruction: illegal operand)\n"
        "srun: error: pool0-3: tasks 0-7: Exited with exit code 132\n"
        "srun: error: pool0-7: tasks 8-15: Exited with exit code 132\n"
    )
    report = triage(tmp_path, {"slurm-881.out": text})
    finding = _finding(report, "triage.software.illegal_instruction")
    assert finding.evidence[0].node == "pool0-7", describe(report)  # UCX's prefix names the host
    assert (
        report.root_cause
        and "one bad machine: the same failure came from 2 nodes" in report.root_cause.ruled_out
    )
    assert all(c.command.startswith("ssh pool0-7 ") for c in finding.suggested_commands), [
        c.command for c in finding.suggested_commands
    ]


# --- NCCL results the printing library cannot name ------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[rank1]: RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
        "unknown result code, NCCL version 2.18.6",
        "2024-02-01 10:00:00.000: E horovod/common/ops/nccl_operations.cc:77] ncclCommInitRank failed: "
        "unknown result code",
    ],
    ids=["pytorch", "horovod"],
)
def test_an_nccl_result_the_library_cannot_name_is_two_nccl_builds(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"worker.log": line + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    _finding(report, "triage.software.nccl_unknown_result")


# --- builds that do not run on this GPU -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "gpu7:2211:2211 [3] NCCL INFO ncclMaxSharedMem 101376 exceeds device/fn maxSharedMem 99328",
        "/opt/conda/lib/python3.11/site-packages/torch/cuda/__init__.py:230: UserWarning: NVIDIA RTX PRO "
        "6000 Blackwell Workstation Edition with CUDA capability sm_120 is not compatible with the current "
        "PyTorch installation.",
    ],
    ids=["nccl-shared-memory", "pytorch-arch"],
)
def test_a_build_without_this_gpu_is_software(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"worker.log": line + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    _finding(report, "triage.software.build_unfit_gpu")


# --- a network plugin the loader refuses, with or without NCCL's prefix ---------------------------------


def test_a_refused_plugin_quoted_without_nccls_prefix_is_still_a_build_mismatch(tmp_path: Path) -> None:
    line = (
        "dlopen failed for /opt/amazon/ofi-nccl/lib/libnccl-net.so: /usr/lib/x86_64-linux-gnu/"
        "libfabric.so.1: version `FABRIC_1.8' not found (required by /opt/amazon/ofi-nccl/lib/libnccl-net.so)"
    )
    report = triage(tmp_path, {"worker.log": line + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    _finding(report, "triage.software.net_plugin_unloadable")


# --- the program's own mistakes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[rank0]: AttributeError: 'FullyShardedDataParallel' object has no attribute 'generate'",
        "AttributeError: 'DataParallel' object has no attribute 'save_pretrained'",
        "ValueError: <class 'torch.nn.parallel.distributed.DistributedDataParallel'> is of type: <class "
        "'torch.nn.parallel.distributed.DistributedDataParallel'>, but should be <class "
        "'transformers.modeling_utils.PreTrainedModel'>",
    ],
    ids=["fsdp-generate", "dataparallel-save", "ddp-type-check"],
)
def test_the_wrapper_used_as_the_model_is_the_codes_bug(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": line + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    finding = _finding(report, "triage.software.wrapper_misuse")
    assert finding.reference == "debugging-guide.md § 18"


def test_a_rename_whose_source_is_gone_is_ranks_racing(tmp_path: Path) -> None:
    text = (
        '[rank3]:   File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 3180, '
        "in save_checkpoint\n"
        "[rank3]:     os.replace(tmp_dir, save_dir)\n"
        "[rank3]: FileNotFoundError: [Errno 2] No such file or directory: '/fsx/ckpt/global_step500.tmp' -> "
        "'/fsx/ckpt/global_step500'\n"
    )
    report = triage(tmp_path, {"train.log": text})
    assert cause(report) == (Category.SOFTWARE, [3], []), describe(report)
    _finding(report, "triage.software.rename_race")


def test_a_file_that_is_not_there_is_still_missing_data(tmp_path: Path) -> None:
    text = "FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/train-00042.arrow'\n"
    report = triage(tmp_path, {"train.log": text})
    assert cause(report)[0] == Category.DATA, describe(report)


def test_a_libraries_fatal_check_is_that_librarys(tmp_path: Path) -> None:
    text = (
        "2023-06-01 10:00:00.123456: F tensorflow/core/nccl/nccl_manager.cc:522] Check failed: "
        "collective->communicator != nullptr\n"
        "Fatal Python error: Aborted\n"
    )
    report = triage(tmp_path, {"worker-1.log": text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    _finding(report, "triage.software.library_check")


# --- Horovod's stall inspector --------------------------------------------------------------------------


def test_horovods_stall_inspector_is_tensors_the_ranks_disagree_on(tmp_path: Path) -> None:
    text = (
        "[2021-03-01 10:00:00.123456: W /tmp/pip-req-build/horovod/common/stall_inspector.cc:107] "
        "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and "
        "are waiting for remainder of ranks for more than 60 seconds. This may indicate that different "
        "ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, "
        "which will cause "
        "deadlock.\n"
        "Missing ranks:\n"
        "1: [DistributedAdamOptimizer_Allreduce/HorovodAllreduce_gradients_dense_1_MatMul_0]\n"
    )
    report = triage(tmp_path, {"horovodrun.log": text})
    assert cause(report)[0] == Category.COLLECTIVE_MISMATCH, describe(report)
    # the inspector's own words allow a rank stuck elsewhere as well
    assert report.root_cause and report.root_cause.confidence == "low"
    finding = _finding(report, "triage.collective.horovod_stall")
    assert any("HOROVOD_TIMELINE=" in c.command for c in finding.suggested_commands)


# --- a traceback cut short ------------------------------------------------------------------------------


def test_a_tracebacks_frames_alone_are_a_visible_failure(tmp_path: Path) -> None:
    text = (
        '(RayTrainWorker, rank=5, pid=812, ip=10.1.2.3)   File "/app/train.py", line 88, in train_loop\n'
        "(RayTrainWorker, rank=5, pid=812, ip=10.1.2.3)     batch = next(iterator)\n"
    )
    report = triage(tmp_path, {"driver.log": text})
    assert report.root_cause is not None and report.blocking, describe(report)
    # frames in the training code: a low guess of an exception there, on the rank that printed them
    assert cause(report)[:2] == (Category.SOFTWARE, [5]), describe(report)
    assert report.root_cause.confidence == "low"
    failure = _finding(report, "triage.software.cut_traceback")
    assert failure.status == Status.FAIL and "exception line cut from the input" in failure.title


def test_a_traceback_cut_before_its_exception_quotes_its_deepest_frame(tmp_path: Path) -> None:
    frames = [
        ("train.py", 28, "<module>"),
        ("workflow.py", 90, "run_sft"),
        ("trainer.py", 2515, "_inner_training_loop"),
    ]
    text = "Traceback (most recent call last):\n" + "".join(
        f'  File "/app/{name}", line {line}, in {function}\n    call()\n' for name, line, function in frames
    )
    report = triage(tmp_path, {"train.log": text})
    failure = _finding(report, "triage.software.cut_traceback")
    quoted = [e.text for e in failure.evidence]
    assert any("_inner_training_loop" in line for line in quoted), quoted
    assert not any("<module>" in line for line in quoted), quoted
    assert report.job is not None and report.job.time_zone == "no times in the input"


def test_a_crash_names_the_library_its_backtrace_faulted_in_past_the_signal_handler(tmp_path: Path) -> None:
    text = (
        "[gpu3:12345] *** Process received signal ***\n"
        "[gpu3:12345] Signal: Segmentation fault (11)\n"
        "[gpu3:12345] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f3a00042520]\n"
        "[gpu3:12345] [ 1] /opt/nccl/lib/libnccl.so.2(ncclProxyProgress+0x1b2)[0x7f3a1005a1b2]\n"
        "[gpu3:12345] [ 2] /lib/x86_64-linux-gnu/libc.so.6(+0x94ac3)[0x7f3a00094ac3]\n"
    )
    report = triage(tmp_path, {"mpirun.out": text})
    finding = _finding(report, "triage.unknown.segfault")
    assert "libnccl.so.2" in finding.detail, finding.detail
    assert any(e.line == 4 for e in finding.evidence), describe(report)


@pytest.mark.parametrize(
    "lines",
    [
        (
            "Caught signal 11 (Segmentation fault: address not mapped to object at address 0x10)",
            "*** SIGSEGV (@0x10) received by PID 4242 (TID 0x7f) from PID 16; stack trace: ***",
        ),
        (
            "Fatal Python error: Segmentation fault",
            "python[4242]: segfault at 10 ip 00007f3a1005a1b2 sp 00007ffd error 4 in libnccl.so.2",
        ),
    ],
)
def test_one_crash_named_in_several_words_is_one_event_seen_again(
    tmp_path: Path, lines: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"train.log": "".join(f"{line}\n" for line in lines)})
    finding = _finding(report, "triage.unknown.segfault")
    assert [e.line for e in finding.evidence] == [1], describe(report)
    assert "Seen 2 times" in finding.detail, finding.detail


# --- a command line the script refuses ------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[rank1]: finetune.py: error: the following arguments are required: --data_path",
        "pretrain_gpt.py: error: argument --micro-batch-size: invalid int value: '4,'",
        "main.py: error: unrecognized arguments: --deepspeed_config ds.json",
        "Error: No such option: --nproc-per-node",
    ],
)
def test_a_script_that_refuses_its_command_line_is_the_launch_command(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"worker.log": f"usage: finetune.py [-h] [--data_path DATA_PATH]\n{line}\n"})
    assert root_finding(report) == ("config", "triage.config.bad_arguments"), describe(report)
    assert _finding(report, "triage.config.bad_arguments").no_command_reason


@pytest.mark.parametrize(
    "line",
    [
        "train.py: error: unrecognized arguments: --local-rank=3",
        "ValueError: Some specified arguments are not used by the HfArgumentParser: ['--local-rank=1']",
        "Error: No such option: --local-rank (Possible options: --local_rank)",
    ],
)
def test_a_local_rank_argument_the_script_does_not_declare_is_a_launcher_of_another_generation(
    tmp_path: Path, line: str
) -> None:
    report = triage(tmp_path, {"worker.log": f"{line}\n"})
    assert root_finding(report) == ("software", "triage.software.local_rank_argument"), describe(report)
    assert _finding(report, "triage.software.local_rank_argument").reference == "debugging-guide.md § 10"


# --- an inference framework's own all-reduce on GPUs without peer access --------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Failed: Cuda error /workspace/sglang/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:318 "
        "'peer access is not supported between these two devices'",
        "[TensorRT-LLM][ERROR] CUDA runtime error in cudaIpcOpenMemHandle: peer access is not supported "
        "between these two devices (customAllReduceKernels.cu:212)",
    ],
)
def test_a_custom_all_reduce_without_peer_access_is_the_frameworks_kernel_not_nccl(
    tmp_path: Path, line: str
) -> None:
    report = triage(tmp_path, {"server.log": f"{line}\n"})
    assert root_finding(report) == ("software", "triage.software.custom_all_reduce_p2p"), describe(report)
    commands = " ".join(
        c.command for c in _finding(report, "triage.software.custom_all_reduce_p2p").suggested_commands
    )
    assert "nvidia-smi topo -p2p r" in commands


def test_nccls_own_peer_access_failure_stays_a_configuration_of_the_gpus(tmp_path: Path) -> None:
    line = (
        "node1:4242:4300 [1] NCCL INFO transport/p2p.cc:240 Cuda failure 'peer access is not supported "
        "between these two devices'\n"
    )
    report = triage(tmp_path, {"node1.log": line})
    assert root_finding(report) == ("config", "triage.config.p2p_unsupported"), describe(report)


# --- a peer's shared-memory segment this rank cannot see --------------------------------------------------


def test_a_peers_segment_not_found_is_dev_shm_not_shared_not_a_full_dev_shm(tmp_path: Path) -> None:
    text = (
        "trainer-worker-1:812:901 [3] NCCL INFO Channel 00 : 3[3] -> 2[2] via SHM/direct/direct\n"
        "trainer-worker-1:812:901 [3] misc/shmutils.cc:87 NCCL WARN Error while attaching to shared memory "
        "segment /dev/shm/nccl-Xy12Ab (size 9637888), error: No such file or directory (2)\n"
        "trainer-worker-1:812:901 [3] NCCL INFO transport/shm.cc:373 -> 2\n"
    )
    report = triage(tmp_path, {"worker-1.log": text})
    assert root_finding(report) == ("config", "triage.config.shm_not_shared"), describe(report)
    commands = [c.command for c in _finding(report, "triage.config.shm_not_shared").suggested_commands]
    assert any("NCCL_SHM_DISABLE=1" in c for c in commands) and not any("remount" in c for c in commands)


def test_a_segment_that_cannot_grow_is_still_a_full_dev_shm(tmp_path: Path) -> None:
    text = (
        "node1:812:901 [0] include/shm.h:28 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-Xy12Ab (size 9637888), error: No space left on device (28)\n"
    )
    report = triage(tmp_path, {"node1.log": text})
    assert root_finding(report) == ("config", "triage.config.shm"), describe(report)


# --- JAX's and TensorFlow's coordination service ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded\n"
            "Additional GRPC error information from remote target coordination_service while calling "
            "/tensorflow.CoordinationService/RegisterTask:\n",
            ("config", "triage.config.coordinator_unreachable"),
        ),
        (
            "E1105 10:00:01.000000 4242 coordination_service_agent.cc:160] Failed to connect to coordination "
            "service: UNAVAILABLE: failed to connect to all addresses\n",
            ("config", "triage.config.coordinator_unreachable"),
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
            "PjRT_Client_Connect. Timed out task names: /job:jax_worker/replica:0/task:3\n",
            ("rendezvous", "triage.rendezvous.coordination_barrier"),
        ),
        (
            "E1105 10:20:01.000000 4242 coordination_service.cc:523] /job:jax_worker/replica:0/task:2 has "
            "stopped sending heartbeats (last heartbeat 100s ago)\n",
            ("unknown", "triage.unknown.coordination_peer_lost"),
        ),
    ],
)
def test_the_coordination_service_is_the_multi_host_rendezvous_not_storage(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"worker0.log": text})
    assert root_finding(report) == expected, describe(report)


def test_a_bare_grpc_status_is_quoted_with_the_coordination_call_it_answered(tmp_path: Path) -> None:
    text = "DEADLINE_EXCEEDED: Deadline Exceeded\nRPC: /tensorflow.CoordinationService/RegisterTask\n"
    report = triage(tmp_path, {"worker-3.log": text})
    (finding,) = [f for f in report.findings if f.id == "triage.config.coordinator_unreachable"]
    assert {(e.line, e.text) for e in finding.evidence} == {
        (1, "DEADLINE_EXCEEDED: Deadline Exceeded"),
        (2, "RPC: /tensorflow.CoordinationService/RegisterTask"),
    }
    far = (
        "DEADLINE_EXCEEDED: Deadline Exceeded\n"
        + "step 1\n" * 4
        + "RPC: /tensorflow.CoordinationService/RegisterTask\n"
    )
    report = triage(tmp_path, {"worker-3.log": far})
    (finding,) = [f for f in report.findings if f.id == "triage.config.coordinator_unreachable"]
    assert [e.line for e in finding.evidence] == [6]  # a status lines away answered another call


def test_a_deadline_is_storage_where_the_line_names_storage(tmp_path: Path) -> None:
    text = "google.api_core.exceptions.DeadlineExceeded: 504 Deadline Exceeded uploading to the bucket\n"
    report = triage(tmp_path, {"worker0.log": text})
    assert any(f.id == "triage.storage.timeout" for f in report.findings), describe(report)


# --- launch settings that do not fit the script, the machine or the checkpoint ---------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "train.log",
            "pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested gpu: [0, 1, 2]\n"
            " But your machine only has: [0, 1]\n",
            ("config", "triage.config.trainer_misconfigured"),
        ),
        (
            "rank0.log",
            "[rank0]: deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a "
            "DP world size of 16 but the current world size is 8. Automatic adjustment of ZeRO's optimizer "
            "state partitioning with a new world size is not currently supported.\n",
            ("config", "triage.config.resume_layout_changed"),
        ),
        (
            "launcher.log",
            "[mpiexec@head] ssh: Could not resolve hostname node-a:8: Name or service not known\n",
            ("software", "triage.software.host_slots_as_name"),
        ),
        (
            "slurm-812.out",
            "1: Error executing job with overrides: ['trainer.devices=8', 'trainer.num_nodes=4']\n",
            ("unknown", "triage.unknown.failure"),
        ),
    ],
)
def test_launch_settings_that_do_not_fit(
    tmp_path: Path, name: str, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {name: text})
    assert root_finding(report) == expected, describe(report)
    assert report.blocking, describe(report)


def test_a_host_name_that_does_not_resolve_stays_an_ssh_reachability_problem(tmp_path: Path) -> None:
    text = "ssh: Could not resolve hostname gpu-node-17: Name or service not known\n"
    report = triage(tmp_path, {"launcher.log": text})
    assert root_finding(report) == ("config", "triage.config.ssh_unreachable"), describe(report)


def test_a_gdb_backtrace_names_the_function_and_library_a_bus_error_hit(tmp_path: Path) -> None:
    text = (
        'Thread 12 "python" received signal SIGBUS, Bus error.\n'
        "[Switching to Thread 0x7f45d7dff640 (LWP 3925)]\n"
        "0x00007f3a1005a1b2 in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) () from "
        "/opt/conda/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2\n"
        "(gdb) bt\n"
    )
    report = triage(tmp_path, {"gdb.txt": text})
    finding = _finding(report, "triage.config.sigbus")
    assert "ncclShmOpen in libnccl.so.2" in finding.detail, finding.detail
    assert [e.line for e in finding.evidence] == [1, 3], describe(report)
    commands = " ".join(c.command for c in finding.suggested_commands)
    assert "df -h /dev/shm" in commands and "--ipc=host" in commands, commands


def test_the_coordination_services_lines_at_a_clean_exit_stay_clean(tmp_path: Path) -> None:
    text = (
        "I1105 10:00:01.000000 4242 coordination_service_agent.cc:400] Coordination agent has successfully "
        "shut down.\n"
        "I1105 10:00:01.000100 4242 coordination_service.cc:700] Shutdown barrier in coordination service "
        "has passed.\n"
    )
    report = triage(tmp_path, {"worker0.log": text})
    assert report.root_cause is None and not report.blocking, describe(report)
