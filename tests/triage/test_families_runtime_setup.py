"""Families from held-out set 20 (containers, data pipelines, elastic launchers, SageMaker), each
tested in wordings other than the pasted case's: more processes than GPUs in a launcher's own words, a
math library that cannot open its kernel files, an extension built for another torch, and the NVIDIA
container toolkit refusing a container.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.test_families import commands_of, describe, root_finding, triage


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "rank3.log",
            "[1,3]<stderr>:RuntimeError: The number of node-local MPI processes 16cannot be larger than the "
            "device count 8\n",
            ("config", "triage.config.invalid_device"),
        ),
        (
            "server.log",
            "hipblaslt error: Could not load /opt/rocm/lib/hipblaslt/TensileLibrary_lazy_gfx90a.dat\n",
            ("config", "triage.config.library_files"),
        ),
        (
            "train.log",
            "TypeError: __init__(): incompatible constructor arguments. The following argument types are "
            "supported:\n",
            ("software", "triage.software.binding_mismatch"),
        ),
        (
            "agent.log",
            "Error: Rank 2 received an Exception. Detailed message: TCPStore: No constructor defined!\n",
            ("software", "triage.software.binding_mismatch"),
        ),
        (
            "slurm-77.out",
            "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.05-py3\n"
            "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your "
            "driver to a newer version, or use an earlier cuda container\n",
            ("software", "triage.software.image_needs_newer_driver"),
        ),
        (
            "slurm-78.out",
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open "
            "shared object file: no such file or directory\n",
            ("software", "triage.software.container_toolkit"),
        ),
    ],
)
def test_setups_that_fail_before_training(
    tmp_path: Path, name: str, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {name: text})
    assert root_finding(report) == expected, describe(report)
    assert report.blocking


def test_a_math_librarys_missing_files_ask_for_the_open_files_limit(tmp_path: Path) -> None:
    text = "rocblaslt error: Could not load /opt/conda/lib/hipblaslt/library/TensileLibrary_lazy_gfx942.dat\n"
    report = triage(tmp_path, {"worker.log": text})
    assert "ulimit -n" in commands_of(report, "triage.config.library_files")


def test_a_tensile_line_that_is_no_failure_stays_clean(tmp_path: Path) -> None:
    text = "rocBLAS info: Tensile library loaded from /opt/rocm/lib/rocblas/library (lazy loading on)\n"
    report = triage(tmp_path, {"worker.log": text})
    assert report.root_cause is None and not report.blocking, describe(report)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[rank3]: RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:\n"
            "[rank3]: \tsize mismatch for lm_head.weight: copying a param with shape "
            "torch.Size([32000, 4096]) from checkpoint, the shape in current model is torch.Size([0]).\n",
            ("software", "triage.software.sharded_load"),
        ),
        (
            "RuntimeError: Error(s) in loading state_dict for GPT:\n"
            "\tsize mismatch for wte.weight: copying a param with shape torch.Size([50304, 768]) from "
            "checkpoint, the shape in current model is torch.Size([50257, 768]).\n",
            ("config", "triage.config.checkpoint_shape"),
        ),
    ],
)
def test_a_checkpoint_that_does_not_fit_its_model(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"train.log": text})
    assert root_finding(report) == expected, describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "step 1200 | lr 3.0e-04 | loss: nan | grad_norm: inf",
        "{'loss': nan, 'learning_rate': 1.9e-05, 'epoch': 0.42}",
        "RuntimeError: Loss is NaN at iteration 5400",
    ],
)
def test_a_loss_that_turned_nan_is_a_visible_failure(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": f"step 1199 | lr 3.0e-04 | loss: 2.31\n{line}\n"})
    assert root_finding(report) == ("unknown", "triage.unknown.nan_loss"), describe(report)
    assert report.blocking


def test_a_finite_loss_or_a_nan_elsewhere_is_no_failure(tmp_path: Path) -> None:
    text = "step 5 | loss: 2.31 | nan_count: 0\nskip_nan_inf_check=False, loss_scale: 65536\n"
    report = triage(tmp_path, {"train.log": text})
    assert report.root_cause is None and not report.blocking, describe(report)


# --- set-up refusals in other wordings (held-out set 23) ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "W0725 09:33:34.093469 tensorflow/core/common_runtime/gpu/gpu_device.cc:1597] Unable to enable peer "
        "access between device ordinals 0 and 9, status: Internal: failed to enable peer access from 0x7f to "
        "0x7e: CUDA_ERROR_TOO_MANY_PEERS: peer mapping resources exhausted",
        "RuntimeError: CUDA error: peer mapping resources exhausted",
        "cudaDeviceEnablePeerAccess failed: cudaErrorTooManyPeers",
    ],
    ids=["tensorflow", "torch", "runtime-name"],
)
def test_more_peers_than_cuda_allows_is_a_process_driving_too_many_gpus(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"train.log": text + "\n"})
    assert root_finding(report) == ("config", "triage.config.too_many_peers"), describe(report)
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in commands_of(report, "triage.config.too_many_peers")


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
        "[W socket.cpp:697] torch.distributed.DistStoreError: use_libuv was requested but PyTorch was built "
        "without libuv support, run with USE_LIBUV=0 to disable it.",
    ],
    ids=["2.4", "later-wording"],
)
def test_a_store_asked_for_libuv_on_a_build_without_it_is_the_build(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"torchrun.log": text + "\n"})
    assert root_finding(report) == ("software", "triage.software.libuv_missing"), describe(report)
    assert "USE_LIBUV=0" in commands_of(report, "triage.software.libuv_missing")


@pytest.mark.parametrize(
    "text",
    [
        "  what():  [/opt/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:3210: "
        "Connection refused",
        "node-2:812:840 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 127.0.1.1<41239> "
        "failed : Connection refused",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
        "[127.0.1.1]:13421",
    ],
    ids=["gloo-refused", "nccl-bootstrap", "gloo-closed"],
)
def test_a_peer_at_the_hostnames_loopback_alias_is_the_hosts_file(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"node-2.log": text + "\n"})
    assert root_finding(report) == ("config", "triage.config.loopback_peer"), describe(report)
    commands = commands_of(report, "triage.config.loopback_peer")
    assert "hostname -i" in commands
    # Only the variable of the library whose connection failed.
    library = "NCCL" if "NCCL" in text else "GLOO"
    other = {"NCCL": "GLOO", "GLOO": "NCCL"}[library]
    assert f"{library}_SOCKET_IFNAME=" in commands and f"{other}_SOCKET_IFNAME=" not in commands, commands


def test_a_healthy_line_naming_the_loopback_alias_is_not_a_failure(tmp_path: Path) -> None:
    text = "node-2:812:812 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\nhosts: 127.0.1.1 node-2 (ok)\n"
    report = triage(tmp_path, {"node-2.log": text})
    assert not any(f.id == "triage.config.loopback_peer" for f in report.findings), describe(report)


# --- launch and build failures in other wordings (held-out set 24) --------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        ["srun: StepId=88123.0 aborted before step completely launched."],
        ["srun: error: task 0 launch failed: Unspecified error"],
        ["srun: error: tasks 0-7 launch failed: Error configuring interconnect"],
    ],
    ids=["aborted", "task-failed", "tasks-failed"],
)
def test_a_step_srun_could_not_launch_is_the_steps_plugins(tmp_path: Path, lines: list[str]) -> None:
    report = triage(tmp_path, {"slurm-88123.out": "\n".join(lines) + "\n"})
    assert root_finding(report) == ("config", "triage.config.slurm_step_launch"), describe(report)
    assert "srun --mpi=list" in commands_of(report, "triage.config.slurm_step_launch")
    assert report.job.outcome is not None and report.job.outcome.outcome == "never started", report.job


def test_a_held_job_after_a_node_launch_failure_stays_the_nodes(tmp_path: Path) -> None:
    report = triage(
        tmp_path,
        {
            "squeue.txt": "JobState=PENDING Reason=launch_failed_requeued_held\n"
            "Reason: launch failed requeued held\n"
        },
    )
    assert not any(f.id == "triage.config.slurm_step_launch" for f in report.findings), describe(report)


@pytest.mark.parametrize(
    "text",
    [
        "Failed to list *v1.Pod: Get https://10.43.0.1:443/api/v1/namespaces/train/pods?limit=500: dial tcp "
        "10.43.0.1:443: connect: connection refused",
        'E1127 10:00:00.000 reflector.go:138] Get "https://kubernetes.default.svc/api/v1/namespaces/train/'
        'pods": dial tcp 172.20.0.1:443: i/o timeout',
    ],
    ids=["refused", "timeout"],
)
def test_a_pod_that_cannot_reach_the_api_server_is_the_pods_network(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"launcher.log": text + "\n"})
    assert root_finding(report) == ("config", "triage.config.k8s_api_unreachable"), describe(report)
    assert "--show-labels" in commands_of(report, "triage.config.k8s_api_unreachable")


@pytest.mark.parametrize(
    "lines",
    [
        [
            "nvcc fatal   : Value 'c++17' is not defined for option 'std'",
            "ninja: build stopped: subcommand failed.",
        ],
        ["RuntimeError: Error building extension 'fused_adam'"],
        ["[rank1]: RuntimeError: Error building extension 'cpu_adam'"],
    ],
    ids=["nvcc", "torch", "rank"],
)
def test_an_extension_that_did_not_build_is_the_toolchain(tmp_path: Path, lines: list[str]) -> None:
    report = triage(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert root_finding(report) == ("software", "triage.software.extension_build"), describe(report)
    assert "nvcc --version" in commands_of(report, "triage.software.extension_build")


def test_nccls_shared_memory_transport_asking_for_peer_access_is_its_cumem_host_memory(
    tmp_path: Path,
) -> None:
    text = (
        "[2025-09-09 23:51:24] node-1:774:854 [0] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer "
        "access is not supported between these two devices'\n"
    )
    report = triage(tmp_path, {"node-1.log": text})
    assert root_finding(report) == ("software", "triage.software.nccl_shm_peer_access"), describe(report)
    assert "NCCL_CUMEM_HOST_ENABLE=0" in commands_of(report, "triage.software.nccl_shm_peer_access")
    # the same refusal from NCCL's P2P transport is the GPUs' own
    other = triage(tmp_path, {"node-1.log": text.replace("transport/shm.cc:590", "transport/p2p.cc:275")})
    assert root_finding(other)[1] == "triage.config.p2p_unsupported", describe(other)


# --- set 25's families in other wordings ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[rank0]: Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
            "Exiting run.",
            ("config", "triage.config.loss_scale_floor"),
        ),
        (
            "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding.",
            ("config", "triage.config.loss_scale_floor"),
        ),
        (
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (worldConfig.cpp:90)",
            ("config", "triage.config.engine_world_size"),
        ),
        (
            "node-1:1234:1240 [0] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error "
            "Operation not supported",
            ("software", "triage.software.dmabuf_unsupported"),
        ),
        (
            'The application appears to have been direct launched using "srun",\n'
            "but OMPI was not built with SLURM's PMI support and therefore cannot execute.",
            ("config", "triage.config.srun_without_pmi"),
        ),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/home/u/.cache/huggingface/datasets/"
            "json/default-1a2b/0.0.0/cache-00001.arrow'",
            ("config", "triage.config.node_local_cache"),
        ),
        ("Exception: the sampler ran out of shards", ("software", "triage.software.exception")),
    ],
    ids=["deepspeed-floor", "fairseq-floor", "trtllm", "dmabuf", "no-pmi", "cache", "bare-exception"],
)
def test_set_25_families_in_other_wordings(tmp_path: Path, text: str, expected: tuple[str, str]) -> None:
    report = triage(tmp_path, {"train.log": text + "\n"})
    assert root_finding(report) == expected, describe(report)


def test_nvshmems_failed_init_is_its_transport_not_nccl_versions(tmp_path: Path) -> None:
    text = (
        "/ws/nvshmem/src/host/init/init.cu:998: non-zero status: 7 building transport map failed\n"
        "/ws/nvshmem/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem initialization "
        "failed, exiting\n"
        "/ws/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_recv:99: Message truncated : "
        "received 58 bytes instead of 8\n"
    )
    report = triage(tmp_path, {"node-1.log": text})
    assert root_finding(report) == ("config", "triage.config.nvshmem_init"), describe(report)
    assert "grep nvidia_peermem" in commands_of(report, "triage.config.nvshmem_init")
    assert not any(f.id == "triage.software.version_skew_truncated" for f in report.findings)


def test_gpudirect_rdma_off_for_whole_hcas_is_flagged_and_a_per_path_choice_is_not(tmp_path: Path) -> None:
    off = "".join(
        f"learn01:22286:22301 [3] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA {hca} 'mlx5_{hca}'\n"
        for hca in range(4)
    )
    report = triage(tmp_path, {"node.log": off})
    assert root_finding(report) == ("config", "triage.config.gdr_disabled"), describe(report)
    assert "grep nvidia_peermem" in commands_of(report, "triage.config.gdr_disabled")
    per_path = "node1:11:11 [3] NCCL INFO GPU Direct RDMA Disabled for GPU 3 / HCA 1 (distance 5 > 4)\n"
    report = triage(tmp_path, {"node.log": per_path})
    assert not any(f.id == "triage.config.gdr_disabled" for f in report.findings), describe(report)


# --- set 26's families in other wordings ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[rank1]: ValueError: Default process group has not been initialized, please make sure to call "
            "init_process_group.",
            ("config", "triage.config.no_process_group"),
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:2 and cuda:0! (when checking argument for argument mat1 in method wrapper_addmm)",
            ("config", "triage.config.device_mismatch"),
        ),
        (
            "RuntimeError: RPCErr:1:RPC ran for more than set timeout (120000 ms) and will now be marked "
            "with an error",
            ("config", "triage.config.rpc_timeout"),
        ),
        (
            'what():  In listen at tensorpipe/tensorpipe/transport/uv/listener.cc:126 "rv < 0: invalid '
            'argument"',
            ("software", "triage.software.tensorpipe_listen"),
        ),
    ],
    ids=["no-process-group", "device-mismatch", "rpc-timeout", "tensorpipe"],
)
def test_set_26_families_in_other_wordings(tmp_path: Path, text: str, expected: tuple[str, str]) -> None:
    report = triage(tmp_path, {"train.log": text + "\n"})
    assert root_finding(report) == expected, describe(report)


@pytest.mark.parametrize("devices", ["cuda:2 and cpu", "cuda:1 and cuda:2"])
def test_tensors_on_a_gpu_and_the_cpu_or_two_other_gpus_are_the_codes(tmp_path: Path, devices: str) -> None:
    text = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        f"{devices}!\n"
    )
    report = triage(tmp_path, {"train.log": text})
    assert root_finding(report)[0] == "software", describe(report)


@pytest.mark.parametrize(
    "text",
    [
        "AssertionError: CUDA device, driver and/or toolkit version does not support comm+GEMM overlap with "
        "CUDA Multicast. Launch app with UB_SKIPMC=1 to try CUDA IPC instead.",
        "[rank3]: AssertionError: ... does not support comm+GEMM overlap with CUDA Multicast. Launch app "
        "with UB_SKIPMC=1",
    ],
    ids=["bare", "rank"],
)
def test_te_overlap_asking_for_multicast_where_there_is_none_is_the_setting(
    tmp_path: Path, text: str
) -> None:
    report = triage(tmp_path, {"train.log": text + "\n"})
    assert root_finding(report) == ("config", "triage.config.ub_multicast"), describe(report)
    assert "UB_SKIPMC=1" in commands_of(report, "triage.config.ub_multicast")
