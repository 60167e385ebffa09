"""Families of wording found on threads outside the first corpus (issue 16, "Done when": logs from
threads not in the corpus score the same). Each family is tested in wordings other than the pasted
case's: other versions, other frameworks, other launchers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.models import Category
from hyperpod_nccl.triage.prefixes import strip
from tests.triage.test_families import cause, describe, nccl_warn, quotes, root_finding, triage

# --- a write that found the disk or the quota full ---------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # torch.save's zip writer on PyTorch 1.x, when the file system fills mid-write
        "RuntimeError: [enforce fail at inline_container.cc:337] . unexpected pos 4353408 vs 4353296",
        # a home-directory quota on an HPC cluster
        "OSError: [Errno 122] Disk quota exceeded: '/home/u123/runs/ckpt/model_00042.pt'",
        # TensorFlow's checkpoint writer
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: "
        "/ckpt/model.ckpt-120_temp/part-00000; disk quota exceeded [Op:SaveV2]",
    ],
    ids=["torch-unexpected-pos", "errno-122", "tf-savev2"],
)
def test_a_full_disk_or_quota_is_storage_whatever_writes(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank0.log": f"Saving checkpoint to /ckpt\n{line}\n"})
    assert cause(report)[0] == Category.STORAGE_IO, describe(report)
    assert quotes(report, line[:40])


# --- file descriptors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "OSError: [Errno 24] Too many open files: '/data/imagenet/train/n01440764/n01440764_10026.JPEG'",
        nccl_warn("gpu-3", 991, 1, "misc/socket.cc:438", "Call to socket failed : Too many open files"),
    ],
    ids=["python-open", "nccl-socket"],
)
def test_running_out_of_file_descriptors_is_configuration(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": line.lstrip("\n") + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.open_files" for f in report.findings)


# --- NCCL found no usable interface (the socket wording of NCCL ≤ 2.3) ------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "pod-a:77:77 [0] misc/socket.cc:120 NCCL WARN Net : Socket creation failed : Address family not "
        "supported by protocol",
        "pod-a:77:77 [0] include/socket.h:288 WARN Socket creation failed : Permission denied",
    ],
    ids=["nccl-warn", "pre-2.4-warn"],
)
def test_nccl_creating_no_socket_is_the_network_interface_setup(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank0.log": f"NCCL version 2.3.7+cuda9.2\n{line}\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert quotes(report, "Socket creation failed")


def test_pre_2_4_warn_lines_without_nccl_in_them_are_read(tmp_path: Path) -> None:
    report = triage(
        tmp_path, {"rank0.log": "gpu-1:12:40 [2] transport/p2p.cu:512 WARN failed to open CUDA IPC\n"}
    )
    assert report.blocking and quotes(report, "WARN failed to open CUDA IPC"), describe(report)


# --- a CUDA call inside NCCL failed -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # TensorFlow + Horovod
        "tensorflow.python.framework.errors_impl.UnknownError: ncclCommInitRank failed: "
        "unhandled cuda error\n",
        # CuPy (Chainer, early vLLM)
        "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error\n",
        # PyTorch 2.x: the error and the result's name on the next line
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
        "version 2.19.3\n[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n",
    ],
    ids=["tensorflow", "cupy", "pytorch-2"],
)
def test_an_unhandled_cuda_error_alone_points_at_mismatched_builds(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"rank1.log": text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.nccl_cuda_call" for f in report.findings)


@pytest.mark.parametrize(
    ("extra", "category"),
    [
        ("NVRM: Xid (PCI:0000:53:00): 79, pid=4242, GPU has fallen off the bus.\n", Category.GPU_HARDWARE),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", Category.GPU_OOM),
    ],
    ids=["xid-79", "cuda-oom"],
)
def test_a_gpu_fault_beside_an_unhandled_cuda_error_is_the_cause(
    tmp_path: Path, extra: str, category: Category
) -> None:
    text = "RuntimeError: NCCL error: unhandled cuda error, NCCL version 2.10.3\n" + extra
    report = triage(tmp_path, {"rank0.log": text})
    assert cause(report)[0] == category, describe(report)


# --- host memory as Ray and the kernel report it -----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "(TorchTrainer pid=812) ray.exceptions.OutOfMemoryError: Task was killed due to the node running low "
        "on memory.\n",
        "(raylet) [2024-05-01 10:00:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers "
        "(tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons\n",
        "May  1 10:00:00 gpu-7 kernel: python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), "
        "order=0, oom_score_adj=0\n",
    ],
    ids=["ray-exception", "raylet", "kernel"],
)
def test_host_memory_kills_from_ray_and_the_kernel(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"worker.log": text})
    assert cause(report)[0] == Category.HOST_OOM, describe(report)


# --- GPU memory in TensorFlow's and the driver API's words ----------------------------------------


def test_tensorflow_gpu_oom_is_gpu_memory_and_its_cpu_allocator_is_not(tmp_path: Path) -> None:
    gpu = (
        "[1,3]<stderr>:tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[64,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
        "allocator GPU_0_bfc\n"
    )
    assert cause(triage(tmp_path / "gpu", {"a.log": gpu}))[0] == Category.GPU_OOM
    driver = (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 512.00M: "
        "CUDA_ERROR_OUT_OF_MEMORY\n"
    )
    assert cause(triage(tmp_path / "driver", {"a.log": driver}))[0] == Category.GPU_OOM
    cpu = gpu.replace("device:GPU:0 by allocator GPU_0_bfc", "device:CPU:0 by allocator cpu")
    assert cause(triage(tmp_path / "cpu", {"a.log": cpu}))[0] != Category.GPU_OOM


# --- object stores throttling ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the GetObject operation "
        "(reached max retries: 4): Please reduce your request rate.",
        "urllib.error.HTTPError: HTTP Error 503: Slow Down",
        "mount-s3: WARN request failed: AWS_ERROR_S3_SLOW_DOWN",
    ],
    ids=["botocore", "urllib", "mountpoint"],
)
def test_a_throttled_object_store_is_storage(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"loader.log": line + "\n"})
    assert cause(report)[0] == Category.STORAGE_IO, describe(report)
    assert quotes(report, line[:30])


# --- exit statuses that carry a signal --------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "category"),
    [
        ("Process finished with exit code 137 (interrupted by signal 9: SIGKILL)", Category.HOST_OOM),
        ("command terminated with exit code 137", Category.HOST_OOM),
        (
            "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' returned non-zero exit "
            "status -9.",
            Category.HOST_OOM,
        ),
        ("zsh: killed     python train.py --config big.yaml", Category.HOST_OOM),
        ("      Exit Code:    139", Category.UNKNOWN),  # SIGSEGV: a crash, cause not established
    ],
    ids=["ide", "kubectl-exec", "called-process", "zsh", "container-139"],
)
def test_a_status_of_128_plus_n_or_minus_n_is_signal_n(tmp_path: Path, line: str, category: Category) -> None:
    report = triage(tmp_path, {"launcher.log": line + "\n"})
    assert cause(report)[0] == category, describe(report)


def test_an_exit_code_of_zero_is_not_a_failure(tmp_path: Path) -> None:
    report = triage(tmp_path, {"launcher.log": "Process finished with exit code 0\nexited with status 0\n"})
    assert report.root_cause is None and not report.blocking, describe(report)


# --- a log store's row around each line ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "| 2024-05-01 10:00:00.000 | Killed |",
        "2024-05-01T10:00:00.000+00:00\tKilled",
    ],
    ids=["insights-table", "events-view"],
)
def test_a_cloudwatch_row_is_peeled_and_dates_the_line(line: str) -> None:
    found = strip(line)
    assert found.message.startswith("Killed") and found.stamp == "2024-05-01T10:00:00"


# --- started without the launcher --------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "MASTER_ADDR expected, but not set",
        "RuntimeError: env:// rendezvous: WORLD_SIZE not set",  # PyTorch 1.0
        "    local_rank = int(os.environ['LOCAL_RANK'])\nKeyError: 'LOCAL_RANK'",
    ],
    ids=["master-addr", "pytorch-1.0", "script-reads-local-rank"],
)
def test_a_process_started_without_the_launcher_is_configuration(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": f"Traceback (most recent call last):\n{line}\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.launcher_env" for f in report.findings)


# --- host memory refused outside shared memory ------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 30.5 GiB for an array with shape "
        "(4096, 1000000) and data type float64",
        "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc",
        "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
        "OSError: [Errno 12] Cannot allocate memory",
    ],
    ids=["numpy", "cpp", "errno-12"],
)
def test_host_memory_refused_is_host_oom(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": line + "\n"})
    assert cause(report)[0] == Category.HOST_OOM, describe(report)


def test_enomem_on_shared_memory_stays_the_shm_family(tmp_path: Path) -> None:
    line = "RuntimeError: unable to mmap 4096 bytes from file </torch_881_2>: Cannot allocate memory (12)"
    report = triage(tmp_path, {"train.log": line + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)


# --- a launcher that starts ranks over ssh and could not reach a node --------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # DeepSpeed's runner through pdsh
        "10.0.0.12: Permission denied (publickey,password).\n"
        "pdsh@node-0: 10.0.0.12: ssh exited with exit code 255\n",
        # Open MPI
        "ssh: connect to host node-3 port 22: Connection refused\n"
        "ORTE was unable to reliably start one or more daemons.\n",
        # DeepSpeed's own check before it launches anything
        "RuntimeError: Using hostfile at /job/hostfile but host=worker-2 was not reachable via ssh. If you "
        "are running with a single node please remove /job/hostfile or setup passwordless ssh.\n",
    ],
    ids=["pdsh", "mpirun", "deepspeed-check"],
)
def test_a_node_the_launcher_cannot_reach_over_ssh_is_configuration(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"launcher.log": text})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.ssh_unreachable" for f in report.findings)


# --- PyTorch 1.8-2.0's store-based barrier: how many workers arrived ---------------------------------

_BARRIER = (
    "RuntimeError: Timed out initializing process group in store based barrier on rank: {rank}, for key: "
    "store_based_barrier_key:1 (world_size={world}, worker_count={count}, timeout=0:30:00)"
)


@pytest.mark.parametrize(
    ("world", "count", "category"),
    [(8, 6, Category.RENDEZVOUS), (2, 4, Category.CONFIG), (4, 16, Category.CONFIG)],
    ids=["some-never-arrived", "twice-over", "four-times-over"],
)
def test_the_store_barrier_counts_say_missing_workers_or_a_shared_store(
    tmp_path: Path, world: int, count: int, category: Category
) -> None:
    lines = [f"[rank{r}]: " + _BARRIER.format(rank=r, world=world, count=count) for r in range(2)]
    report = triage(tmp_path, {"console.log": "\n".join(lines) + "\n"})
    assert cause(report)[0] == category, describe(report)


# --- a checkpoint file cut short or corrupted --------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: PytorchStreamReader failed reading file data/3: invalid header or archive is "
        "corrupted",
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
    ],
    ids=["torch-load", "safetensors"],
)
def test_a_truncated_checkpoint_is_data(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"resume.log": f"Loading checkpoint from /ckpt/step_1200\n{line}\n"})
    assert cause(report)[0] == Category.DATA, describe(report)


# --- a program the job starts that a node could not run -------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # DeepSpeed's runner: the remote login shell does not have the conda environment
        "pdsh@node-0: node-1: bash: deepspeed: command not found\n"
        "pdsh@node-0: node-1: ssh exited with exit code 127\n",
        # an interpreter built against a library the node lacks
        "[1,3]<stderr>:python3: error while loading shared libraries: libpython3.10.so.1.0: cannot open "
        "shared object file: No such file or directory\n",
        # the container's command is not in the image
        "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: "
        'runc create failed: unable to start container process: exec: "torchrun": executable file not found '
        "in $PATH: unknown\n",
        # Open MPI when the program is missing on a node
        "mpirun was unable to find the specified executable file, and therefore\n"
        "did not launch the job.  This error was first reported for process\n",
    ],
    ids=["pdsh-deepspeed", "shared-library", "container-exec", "open-mpi"],
)
def test_a_program_a_node_cannot_run_is_configuration(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"launcher.log": text})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.missing_program" for f in report.findings), describe(report)


def test_a_prolog_tool_not_found_is_not_a_failure(tmp_path: Path) -> None:
    text = (
        "/var/spool/slurmd/job1234/slurm_script: line 9: module: command not found\n"
        "epoch 1 step 100 loss 2.31\n"
        "epoch 1 step 200 loss 2.05\n"
        "Training completed.\n"
    )
    report = triage(tmp_path, {"slurm-1234.out": text})
    assert not report.blocking, describe(report)


# --- Slurm could not start the job on a node for reasons of its own ------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # a node whose clock or munge key went wrong after a reboot
        "srun: error: Task launch for StepId=4471.0 failed on node gpu-st-p4d-7: Job credential expired\n"
        "srun: error: Application launch failed: Job credential expired\n",
        # slurmd's spool mounted noexec
        "slurmstepd: error: execve(): /var/spool/slurmd/job4471/slurm_script: Permission denied\n",
        # squeue's reason after a launch failure
        "  4471   gpu  pretrain  alice PD  0:00  2 (launch failed requeued held)\n",
    ],
    ids=["credential", "spool-noexec", "held"],
)
def test_slurm_failing_to_start_the_job_on_a_node_is_infrastructure(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"slurm-4471.out": text})
    assert cause(report)[0] == Category.INFRASTRUCTURE, describe(report)
    assert any(f.id == "triage.infra.slurm_launch" for f in report.findings), describe(report)


def test_a_program_slurm_cannot_execute_is_not_the_scheduler(tmp_path: Path) -> None:
    line = "slurmstepd: error: execve(): torchrun: No such file or directory\n"
    report = triage(tmp_path, {"slurm-9.out": line})
    assert not any(f.id == "triage.infra.slurm_launch" for f in report.findings), describe(report)
    assert cause(report)[0] == Category.CONFIG, describe(report)


# --- two ranks on one GPU ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        nccl_warn(
            "gpu-1",
            4410,
            1,
            "init.cc:801",
            "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 41000",
        ),
        # Horovod under mpirun, the WARN text alone on stderr
        "[1,1]<stderr>:Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3b000\n",
    ],
    ids=["nccl-warn", "mpirun"],
)
def test_two_ranks_on_one_gpu_is_the_device_selection(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"rank1.log": text.lstrip("\n")})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.duplicate_gpu" for f in report.findings), describe(report)


# --- a port that went down, a NIC that failed -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "node"),
    [
        # NCCL ≥ 2.19 names the device; the peer on another node then times out
        (
            "step 41200 | loss 1.84 | 312 TFLOPS\n"
            + nccl_warn(
                "gpu-st-12", 7781, 3, "net_ib.cc:121", "NET/IB : mlx5_3:1 Got async event : port error"
            )
            + nccl_warn(
                "gpu-st-30",
                5120,
                3,
                "net_ib.cc:1696",
                "NET/IB : Got completion from peer 10.1.4.12<41233> with status=12 opcode=0 len=0 "
                "vendor err 129",
            ),
            "gpu-st-12",
        ),
        # the HCA itself died
        (
            nccl_warn(
                "gpu-st-7",
                2201,
                0,
                "transport/net_ib.cc:84",
                "NET/IB : Got async event : local catastrophic error",
            )
            + nccl_warn("gpu-st-7", 2201, 0, "misc/ibvwrap.cc:231", "Call to ibv_get_async_event failed"),
            "gpu-st-7",
        ),
    ],
    ids=["port-error", "catastrophic"],
)
def test_a_port_down_or_a_dead_nic_is_the_network_on_that_node(tmp_path: Path, text: str, node: str) -> None:
    report = triage(tmp_path, {"job.log": text.lstrip("\n") + "\n"})
    assert cause(report)[0] == Category.NETWORK, describe(report)
    assert node in report.root_cause.culprit_nodes, describe(report)


def test_the_kernel_saying_a_link_went_down_is_the_network(tmp_path: Path) -> None:
    text = (
        "[Tue May  7 03:12:44 2024] mlx5_core 0000:41:00.0 enp65s0f0np0: Link down\n"
        "[Tue May  7 03:12:45 2024] mlx5_core 0000:41:00.0 enp65s0f0np0: Link up\n"
    )
    report = triage(tmp_path, {"dmesg.txt": text})
    assert cause(report)[0] == Category.NETWORK, describe(report)


# --- NCCL's shared memory removed under the job --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        nccl_warn(
            "gpu-2",
            8812,
            0,
            "misc/shmutils.cc:95",
            "unlink shared memory /dev/shm/nccl-d5rTd0 failed, error: No such file or directory",
        ),
        "[1,0]<stderr>:unlink shared memory /dev/shm/nccl-Zq81Pa failed, error: No such file or directory\n",
    ],
    ids=["nccl-warn", "mpirun"],
)
def test_shared_memory_removed_by_systemd_is_configuration(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"rank0.log": text.lstrip("\n")})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.shm_removed" for f in report.findings), describe(report)


# --- a system call inside NCCL failed ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # PyTorch 1.x, the result's description on the same line
        "RuntimeError: NCCL error in: /opt/pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled "
        "system error, NCCL version 2.7.8\n"
        "ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n",
        # TensorFlow + Horovod
        "tensorflow.python.framework.errors_impl.UnknownError: ncclCommInitRank failed: "
        "unhandled system error\n",
        # CuPy
        "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error\n",
    ],
    ids=["pytorch-1", "tensorflow", "cupy"],
)
def test_an_unhandled_system_error_alone_points_at_shared_memory(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"rank0.log": text})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.config.nccl_system_call")
    assert finding.reference.startswith("debugging-guide.md § 17")
    assert report.root_cause and report.root_cause.confidence == "low", "a guess from the result code alone"


def test_the_warn_line_naming_the_failed_call_outweighs_the_system_error(tmp_path: Path) -> None:
    text = (
        nccl_warn("gpu-1", 77, 1, "transport/net_ib.cc:480", "Call to ibv_create_qp failed") + "\n"
        "RuntimeError: NCCL error: unhandled system error, NCCL version 2.18.1\n"
    )
    report = triage(tmp_path, {"rank1.log": text})
    assert cause(report)[0] == Category.UNKNOWN, describe(report)
    assert quotes(report, "Call to ibv_create_qp failed")
    assert not any(f.id == "triage.config.nccl_system_call" for f in report.findings)


# --- the store's address never answered --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # PyTorch ≤ 1.13's TCPStore
        "RuntimeError: connect() timed out. Original timeout was 60000 ms.\n",
        # torchelastic's rendezvous handler
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d "
        "store has failed. See inner exception for details.\n",
    ],
    ids=["tcpstore-connect", "elastic-rendezvous"],
)
def test_a_store_connection_that_timed_out_is_an_unreachable_address(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"worker.log": "Starting elastic_operator with launch configs\n" + text})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.store_unreachable" for f in report.findings)


# --- a node that died or was taken away under the job ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "node"),
    [
        (
            "(raylet) The node with node id: 5d0c2e and address: 10.0.4.17 and node name: 10.0.4.17 has been "
            "marked dead because the detector has missed too many heartbeats from it.\n",
            None,
        ),
        ("ray.exceptions.ActorDiedError: The actor died because its node has died. Node Id: 8a1f\n", None),
        (
            "ray.exceptions.NodeDiedError: Task failed because the node it was running on is dead or "
            "unavailable.\n",
            None,
        ),
        (
            "(autoscaler +12m3s) Instance k-7f01 (node IP: 10.2.9.41) will be terminated soon (reason: "
            "spot-preemption).\n",
            "10.2.9.41",
        ),
    ],
    ids=["gcs-heartbeats", "actor-node-died", "task-node-dead", "autoscaler-termination"],
)
def test_a_node_lost_under_ray_is_infrastructure(tmp_path: Path, text: str, node: str | None) -> None:
    report = triage(tmp_path, {"driver.log": "Started training\n" + text + "RuntimeError: worker failed\n"})
    assert cause(report)[0] == Category.INFRASTRUCTURE, describe(report)
    if node:  # the finding names the node; a preemption blames no node as the culprit
        assert node in report.findings[0].nodes, describe(report)


# --- memory limits, driver states, libraries -----------------------------------------------------------


def test_a_container_killed_for_memory_before_it_started_is_host_memory(tmp_path: Path) -> None:
    line = (
        "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: "
        "runc create failed: unable to start container process: container init was OOM-killed (memory "
        "limit too low?): unknown\n"
    )
    report = triage(tmp_path, {"describe.txt": line})
    assert cause(report)[0] == Category.HOST_OOM, describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000063)",
        "NVRM: Xid (PCI:0000:b3:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
        "(GPU Reset Required)",
        "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x56:1474)",
        "NVRM: GPU at PCI:0000:18:00: GPU-3f1c NV_ERR_GPU_IS_LOST",
    ],
    ids=["gsp-assert", "xid-154", "rm-init-adapter", "gpu-is-lost"],
)
def test_a_driver_state_only_a_reset_clears_is_gpu_hardware(tmp_path: Path, line: str) -> None:
    report = triage(
        tmp_path,
        {
            "train.log": "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n",
            "node-logs/gpu-3.dmesg": f"[12345.6789] {line}\n",
        },
    )
    assert cause(report)[0] == Category.GPU_HARDWARE, describe(report)


@pytest.mark.parametrize("symbol", ["ncclCommRegister", "ncclMemFree", "ncclCommInitRankConfig"])
def test_an_undefined_nccl_symbol_is_two_nccl_builds(tmp_path: Path, symbol: str) -> None:
    library = "/opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"
    line = f"OSError: {library}: undefined symbol: {symbol}"
    report = triage(tmp_path, {"import.log": line + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.nccl_symbol" for f in report.findings)


def test_nvls_failing_in_its_own_source_file_is_the_nvls_family(tmp_path: Path) -> None:
    line = nccl_warn("node7", 31, 2, "transport/nvls.cc:160", "Cuda failure 801 'operation not supported'")
    report = triage(tmp_path, {"rank2.log": line.lstrip("\n") + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.nvls" for f in report.findings)


@pytest.mark.parametrize(
    "what",
    [
        ("transport/nvls.cc:223", "Cuda failure 999 'unknown error'"),
        ("transport/nvls.cc:154", "Cuda failure 1 'invalid argument'"),
        (
            "transport/nvls.cc:379",
            "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the "
            "operation cannot be performed in the present state'",
        ),
    ],
)
def test_nvls_failing_any_other_way_is_the_nodes_nvswitch_fabric(
    tmp_path: Path, what: tuple[str, str]
) -> None:
    line = nccl_warn("gpu47", 4962, 1, *what)
    report = triage(tmp_path, {"gpu47.log": line.lstrip("\n") + "\n"})
    assert cause(report) == (Category.GPU_HARDWARE, [], ["gpu47"]), describe(report)
    fabric = next(f for f in report.findings if f.id == "triage.gpu.nvls_fabric")
    assert any("nvidia-fabricmanager" in c.command for c in fabric.suggested_commands)


@pytest.mark.parametrize(
    "line",
    [
        "gloo::IoException: [/tmp/horovod/third_party/gloo/gloo/rendezvous/http_store.cc:53] Wait timeout "
        "for key(s): 12",
        "RuntimeError: Wait timeout after 60 seconds for key(s): 3. You may want to increase the timeout via "
        "HOROVOD_GLOO_TIMEOUT_SECONDS",
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
        "no error",
    ],
    ids=["horovod-http-store", "horovod-timeout-hint", "torch-gloo-mesh"],
)
def test_gloo_rendezvous_timeouts_are_rendezvous(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"worker.log": line + "\n"})
    assert cause(report)[0] == Category.RENDEZVOUS, describe(report)


# --- logs that stop during initialisation ------------------------------------------------------------


@pytest.mark.parametrize("word", ["initializing ddp", "Initializing distributed"])
def test_fewer_members_than_the_world_and_nothing_after_is_configuration(tmp_path: Path, word: str) -> None:
    lines = [f"{word}: GLOBAL_RANK: {r}, MEMBER: {r + 1}/16" for r in range(8)]
    report = triage(tmp_path, {"slurm-77.out": "\n".join(lines) + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert report.findings[0].title.startswith("Only 8 of 16 processes")


def test_every_member_present_is_not_a_missing_member(tmp_path: Path) -> None:
    lines = [f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4" for r in range(4)]
    report = triage(tmp_path, {"slurm-78.out": "\n".join(lines) + "\n"})
    assert not any(f.id == "triage.config.members_missing" for f in report.findings)


def _nccl_init(complete: bool) -> str:
    lines = [
        "gpu-1:901:901 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
        "gpu-1:901:901 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "NCCL version 2.18.5+cuda12.2",
        "gpu-1:901:930 [1] NCCL INFO Setting affinity for GPU 1 to ff00ff",
        "gpu-1:901:930 [1] NCCL INFO Channel 00/02 :    0   1",
    ]
    if complete:
        lines.append(
            "gpu-1:901:930 [1] NCCL INFO comm 0x5581 rank 1 nranks 2 cudaDev 1 busId 3000 - Init COMPLETE"
        )
    return "\n".join(lines) + "\n"


def test_nccl_init_that_never_completed_is_named_and_a_missing_verbs_library_is_not(tmp_path: Path) -> None:
    report = triage(tmp_path / "hung", {"run.log": _nccl_init(complete=False)})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert report.root_cause and report.root_cause.confidence == "low"
    assert not any("libibverbs" in e.text for f in report.findings for e in f.evidence)
    done = triage(tmp_path / "done", {"run.log": _nccl_init(complete=True)})
    assert not any(f.id == "triage.config.nccl_init_stalled" for f in done.findings), describe(done)


def test_open_mpis_first_failed_process_banner_names_the_rank(tmp_path: Path) -> None:
    banner = (
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[40321,1],13]\n"
        "  Exit code:    1\n"
    )
    report = triage(tmp_path, {"mpirun.out": banner})
    exits = [e for f in report.findings for e in f.evidence if "Process name" in e.text]
    assert exits and exits[0].rank == 13, describe(report)


@pytest.mark.parametrize("family", [0, 1, 33022])
def test_an_address_that_is_no_address_is_two_nccl_builds_unless_an_interface_was_named(
    tmp_path: Path, family: int
) -> None:
    warn = nccl_warn(
        "gpu-a",
        517,
        1,
        "misc/socket.cc:717",
        f"ncclSocketInit: connecting to address with family {family} is neither AF_INET(2) nor AF_INET6(10)",
    )
    report = triage(tmp_path / "builds", {"rank1.log": warn.lstrip("\n") + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.peer_address_layout" for f in report.findings)
    named = "gpu-a:517:517 [1] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens9\n"
    report = triage(tmp_path / "named", {"rank1.log": named + warn.lstrip("\n") + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert report.root_cause is not None and "NCCL_SOCKET_IFNAME=ens9" in report.root_cause.summary


@pytest.mark.parametrize(
    "message",
    [
        "Failed to find reverse path from remNode 0/5f000 nlinks 4 to node 0/cb000",
        "Failed to find reverse path from remNode id 2 type 1 nlinks 3 to node id 0 type 0",
    ],
    ids=["type-id", "id-type"],
)
def test_a_topology_search_with_no_way_back_is_an_nccl_that_does_not_know_the_machine(
    tmp_path: Path, message: str
) -> None:
    lines = [
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, internal error",
        "ncclInternalError: Internal check failed.",
        "Last error:",
        message,
    ]
    report = triage(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.nccl_topology" for f in report.findings)


@pytest.mark.parametrize(
    "banner",
    [
        "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)",
        "/opt/train/run.sh: line 12:  4242 Bus error               (core dumped) python train.py",
        "Fatal Python error: Bus error",
    ],
    ids=["ucx-banner", "shell-core-dumped", "python-faulthandler"],
)
def test_a_process_bus_error_banner_is_shared_memory_like_exit_code_minus_7(
    tmp_path: Path, banner: str
) -> None:
    report = triage(tmp_path, {"rank0.log": banner + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.sigbus" for f in report.findings)


# --- a peer whose EFA queue pair vanished: the peer crashed ------------------------------------

_PEER_GONE = (
    "{host}:211:275 [3] process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f0a completed with error. "
    "RC: {rc}. Error: {what} My EFA addr: fi_addr_efa://[fe80::1]:0:1 My host id: i-0aaa1111bbbb2222c "
    "Peer EFA addr: fi_addr_efa://[fe80::2]:0:2 Peer host id: i-0ccc3333dddd4444e. Completed length: 0"
)


@pytest.mark.parametrize(
    ("rc", "what"),
    [
        ("5", "Invalid receiver queue pair number (QPN). This error is typically caused by a crashed peer."),
        ("8", "Receiver connection aborted"),
    ],
    ids=["qpn", "aborted"],
)
def test_a_peer_queue_pair_gone_blames_the_peer_host_not_the_link_or_the_reporter(
    tmp_path: Path, rc: str, what: str
) -> None:
    line = _PEER_GONE.format(host="train-worker-1", rc=rc, what=what)
    report = triage(tmp_path, {"worker-1.log": line + "\n"})
    assert cause(report) == (Category.UNKNOWN, [], ["i-0ccc3333dddd4444e"]), describe(report)
    finding = next(f for f in report.findings if f.id == "triage.network.peer_crashed")
    kernel = [c for c in finding.suggested_commands if "killed process" in c.command]
    assert kernel and "i-0ccc3333dddd4444e" in kernel[0].why, finding.suggested_commands


def test_the_peers_own_oom_kill_explains_its_vanished_queue_pair(tmp_path: Path) -> None:
    line = _PEER_GONE.format(host="train-worker-1", rc="5", what="Invalid receiver queue pair number (QPN)")
    kill = "[Tue Mar  3 10:02:11 2026] Out of memory: Killed process 4242 (pt_main_thread) total-vm:9kB"
    report = triage(tmp_path, {"worker-1.log": line + "\n", "dmesg-worker-2.txt": kill + "\n"})
    assert cause(report)[0] == Category.HOST_OOM, describe(report)


# --- NCCL's return trace at INFO level ---------------------------------------------------------------------


def _trace(host: str, pid: int, dev: int, frames: list[str], code: int) -> str:
    return "".join(f"{host}:{pid}:{pid + 300} [{dev}] NCCL INFO {frame} -> {code}\n" for frame in frames)


@pytest.mark.parametrize(
    ("frames", "code", "expected"),
    [
        (
            ["misc/socket.cc:567", "misc/socket.cc:618", "bootstrap.cc:270", "init.cc:1350"],
            2,
            ("config", "triage.config.bootstrap_socket"),
        ),
        (["bootstrap.cc:96", "init.cc:1112"], 2, ("config", "triage.config.bootstrap_socket")),
        (
            ["transport/p2p.cc:201", "transport.cc:183", "init.cc:1160"],
            1,
            ("software", "triage.software.nccl_cuda_call"),
        ),
        (["init.cc:720", "init.cc:1405"], 5, ("software", "triage.software.nccl_invalid_usage")),
        (["proxy.cc:1120", "transport/net.cc:650"], 6, ("unknown", "triage.unknown.failure")),
    ],
    ids=["socket-bootstrap", "bootstrap", "cuda", "invalid-usage", "remote"],
)
def test_nccls_return_trace_is_a_failure_named_by_its_deepest_call(
    tmp_path: Path, frames: list[str], code: int, expected: tuple[str, str]
) -> None:
    text = "gpu-3:2330:2330 [2] NCCL INFO NCCL version 2.18.5+cuda12.2\n" + _trace(
        "gpu-3", 2330, 2, frames, code
    )
    report = triage(tmp_path, {"node.log": text})
    category, finding = root_finding(report)
    assert (category, finding) == expected, describe(report)
    assert quotes(report, f"NCCL INFO {frames[0]} -> {code}")


def test_a_bootstrap_that_failed_in_nccls_socket_code_names_the_interface_it_went_over(
    tmp_path: Path,
) -> None:
    text = "gpu-3:2330:2330 [2] NCCL INFO Bootstrap : Using ibp75s0:192.168.0.103<0>\n" + _trace(
        "gpu-3", 2330, 2, ["misc/socket.cc:567", "bootstrap.cc:270"], 2
    )
    report = triage(tmp_path, {"node.log": text})
    assert report.root_cause is not None and "ibp75s0 192.168.0.103" in report.root_cause.summary
    (finding,) = [f for f in report.findings if f.id == "triage.config.bootstrap_socket"]
    commands = [c.command for c in finding.suggested_commands]
    assert commands == ["ip -br addr", "export 'NCCL_SOCKET_IFNAME=<interface>'"], commands
    assert "192.168.0.103" in finding.suggested_commands[1].why


def test_nccls_in_progress_code_and_ring_arrows_are_not_failures(tmp_path: Path) -> None:
    text = (
        "gpu-3:2330:2330 [2] NCCL INFO Channel 00/02 : 0 -> 1 -> 2 -> 3\n"
        "gpu-3:2330:2330 [2] NCCL INFO Ring 00 : 3 -> 4 [send] via NET/IB/0\n"
        + _trace("gpu-3", 2330, 2, ["init.cc:1533"], 7)
    )
    report = triage(tmp_path, {"node.log": text})
    assert report.root_cause is None and not report.blocking, describe(report)


# --- torchrun's error block, shortened in a paste --------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        ["exitcode: -9", "Signal 9 (SIGKILL)"],
        ["  exitcode  : -9 (pid: 4242)", "  traceback : Signal 9 (SIGKILL) received by PID 4242"],
        ["Signal 9 (SIGKILL)"],
    ],
    ids=["shortened", "full", "signal-alone"],
)
def test_a_sigkilled_worker_in_any_shortening_of_the_error_block_is_host_memory(
    tmp_path: Path, lines: list[str]
) -> None:
    report = triage(tmp_path, {"train.log": "step 10 loss 2.1\n" + "\n".join(lines) + "\n"})
    assert root_finding(report) == ("host_oom", "triage.host.sigkill"), describe(report)
