"""The fatal-error catalogue (issue 3 item 4): what each matched line means.

Every event kind maps to a `Meaning`: the finding it feeds, the CONTRACT category it points to
when it is the origin, how decisive it is as an origin (`weight`), and the reference section.
A `None` category marks a consequence (the watchdog taking the process down, a peer reporting
"remote process exited", torchrun's SIGTERM to the survivors): reported, never blamed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from hyperpod_nccl.models import Category, Priority, Status
from hyperpod_nccl.triage.events import Event


@dataclass(frozen=True)
class Meaning:
    id: str
    title: str
    category: Category | None
    weight: int  # how strongly the line marks the origin of the failure; 0 for consequences
    reference: str
    status: Status = Status.FAIL
    priority: Priority = Priority.P0


# Job-wide events blame no rank or node: the host that prints a cancellation is not its cause.
JOB_WIDE_IDS = frozenset(
    {
        "triage.infra.time_limit",
        "triage.infra.preempted",
        "triage.infra.node_failure",
        "triage.infra.requeue",
        "triage.infra.cancelled",
        # printed by every rank but the one that left
        "triage.collective.horovod_shutdown",
    }
)
# Node-level events blame every rank of the node they name.
NODE_LEVEL_IDS = frozenset({"triage.infra.node_not_ready", "triage.infra.evicted"})


def _fail(id_: str, title: str, category: Category, weight: int, reference: str) -> Meaning:
    return Meaning(id_, title, category, weight, reference)


def _warn(id_: str, title: str, category: Category | None, weight: int, reference: str) -> Meaning:
    return Meaning(id_, title, category, weight, reference, Status.WARN, Priority.P1)


def _consequence(id_: str, title: str, reference: str) -> Meaning:
    return Meaning(id_, title, None, 0, reference, Status.INFO, Priority.P2)


C = Category
_SIMPLE: dict[str, Meaning] = {
    "cuda_oom": _fail("triage.gpu.cuda_oom", "CUDA out of memory", C.GPU_OOM, 90, "debugging-guide.md § 11"),
    "nccl_cuda_oom": _fail(
        "triage.gpu.nccl_oom", "NCCL could not allocate GPU memory", C.GPU_OOM, 88, "debugging-guide.md § 11"
    ),
    "cudnn_not_initialized": _fail(
        "triage.gpu.cudnn_not_initialized",
        "cuDNN could not initialise (usually GPU memory already exhausted)",
        C.GPU_OOM,
        80,
        "debugging-guide.md § 20",
    ),
    "ecc": _fail("triage.gpu.ecc", "Uncorrectable ECC error", C.GPU_HARDWARE, 100, "debugging-guide.md § 5"),
    "nvlink_error": _fail(
        "triage.gpu.nvlink", "Uncorrectable NVLink error", C.GPU_HARDWARE, 98, "debugging-guide.md § 5"
    ),
    "fell_off_bus": _fail(
        "triage.gpu.fell_off_bus", "GPU fell off the bus", C.GPU_HARDWARE, 100, "debugging-guide.md § 5"
    ),
    "no_gpu": _fail("triage.gpu.missing", "No usable CUDA GPU", C.GPU_HARDWARE, 85, "debugging-guide.md § 5"),
    "launch_failure": _fail(
        "triage.gpu.launch_failure",
        "CUDA unspecified launch failure (often a GSP / context-switch Xid)",
        C.GPU_HARDWARE,
        62,
        "debugging-guide.md § 5",
    ),
    "illegal_address": _fail(
        "triage.cuda.illegal_address",
        "CUDA illegal memory access",
        C.SOFTWARE,
        60,
        "debugging-guide.md § 20",
    ),
    "cuda_error": _fail("triage.cuda.error", "CUDA runtime error", C.SOFTWARE, 58, "debugging-guide.md § 20"),
    "nvls": _fail(
        "triage.config.nvls",
        "NVLink SHARP (NVLS) is not supported here (no NVSwitch multicast for this driver, VM or GPU): "
        "NCCL_NVLS_ENABLE=0",
        C.CONFIG,
        70,
        "debugging-guide.md § 19",
    ),
    "oom_killed": _fail(
        "triage.host.oom_killed",
        "Killed for host memory (OOM killer)",
        C.HOST_OOM,
        95,
        "debugging-guide.md § 4",
    ),
    "shm_exhausted": _fail(
        "triage.config.shm",
        "Shared memory (/dev/shm) too small or full",
        C.CONFIG,
        80,
        "debugging-guide.md § 17",
    ),
    "device_map_distributed": _fail(
        "triage.config.device_map_distributed",
        "A model placed with transformers' device_map in a distributed run: each rank must load it on its "
        "own GPU (`device_map={'': local_rank}`, or none under ZeRO-3 and FSDP, which place it themselves)",
        C.CONFIG,
        80,
        "debugging-guide.md § 18",
    ),
    "group_device_mismatch": _fail(
        "triage.config.group_device_mismatch",
        "A collective ran on a tensor on another GPU than the one its process group was bound to: the "
        "process did not select its own GPU (torch.cuda.set_device(local_rank)) before init_process_group",
        C.CONFIG,
        80,
        "debugging-guide.md § 2",
    ),
    "tf_without_nccl": _fail(
        "triage.config.tf_without_nccl",
        "TensorFlow has no NCCL kernels here (`No OpKernel was registered to support Op 'NcclAllReduce'`: "
        "Windows, or a build without NCCL), yet MirroredStrategy's default all-reduce asked for them",
        C.CONFIG,
        80,
        "debugging-guide.md § 10",
    ),
    "mpi_without_cuda": _fail(
        "triage.software.mpi_without_cuda",
        "Open MPI was asked for CUDA support its build lacks (`not compiled with any support`): GPU buffers "
        "handed to MPI then crash the processes; an Open MPI (and UCX) built with CUDA is needed",
        C.SOFTWARE,
        82,
        "debugging-guide.md § 10",
    ),
    "efa_plugin_no_device": _fail(
        "triage.config.efa_plugin_no_device",
        "The EFA device plugin found no EFA device on its node (`No valid EFA devices found`) and "
        "crash-loops: its DaemonSet reaches instance types without EFA (its node selector), or the node's "
        "EFA driver is not loaded; pods asking for vpc.amazonaws.com/efa cannot run where it should serve",
        C.CONFIG,
        78,
        "debugging-guide.md § 6",
    ),
    "device_directory": _fail(
        "triage.config.container_device_directory",
        "The GPU runtime could not open the device directory it lists GPUs from (oneCCL's `init_device_fds: "
        "opendir failed`): a container given the devices one by one (`--device /dev/dri`) has no "
        "/dev/dri/by-path; bind-mount /dev/dri into the container instead",
        C.CONFIG,
        80,
        "debugging-guide.md § 10",
    ),
    "ccl_launcher_env": _fail(
        "triage.config.ccl_launcher_env",
        "oneCCL could not find its launcher's environment (local rank and size): started by another launcher "
        "than mpirun, it needs CCL_PROCESS_LAUNCHER=none with CCL_LOCAL_RANK and CCL_LOCAL_SIZE, or "
        "CCL_ZE_IPC_EXCHANGE=sockets",
        C.CONFIG,
        80,
        "debugging-guide.md § 10",
    ),
    "process_limit": _fail(
        "triage.config.process_limit",
        "The kernel refused a new process or thread (`fork: retry: No child processes`, `can't start new "
        "thread`): the user's process limit (`ulimit -u`) or the container's pids limit, reached by "
        "DataLoader workers, Ray or tokenizer threads times the ranks on the node",
        C.CONFIG,
        78,
        "debugging-guide.md § 17",
    ),
    "checkpoint_torn": _fail(
        "triage.software.checkpoint_torn",
        "A checkpoint whose file does not hold what its index names (`file not found: archive/…`, `storage "
        "has wrong size`): most often several processes saved to the same path at once; save from one rank "
        "only (rank 0, is_main_process) and let the others wait at a barrier",
        C.SOFTWARE,
        74,
        "debugging-guide.md § 14",
    ),
    "collnet_unavailable": _warn(
        "triage.config.collnet_unavailable",
        "SHARP / CollNet (in-network reductions) would not set up (`SHARP coll init error`, `Failed to lock "
        "SAT tree`, `Cannot initialize CollNet`): a fabric or subnet manager without SHARP, or SHARP's own "
        "settings; NCCL carries on point-to-point",
        C.CONFIG,
        58,
        "debugging-guide.md § 19",
    ),
    "container_gpu_access": _fail(
        "triage.config.container_gpu_access",
        "The container cannot reach the node's GPU driver or devices (NVML not loadable, /dev/nvidia* "
        "refused): the NVIDIA container runtime not the one the container runs under (Docker's "
        "default-runtime, a Kubernetes runtimeClass), or its device permissions lost (kubelet's static CPU "
        "manager, a systemd daemon-reload under cgroup v1)",
        C.CONFIG,
        82,
        "debugging-guide.md § 10",
    ),
    "layout_indivisible": _fail(
        "triage.config.layout_indivisible",
        "The parallel layout does not divide (`… is not divisible by …`): the tensor, pipeline, expert or "
        "data-parallel sizes the run was launched with do not fit its GPU count or its model (layers, "
        "attention heads); a library that changed what it accepts says the same",
        C.CONFIG,
        72,
        "debugging-guide.md § 18",
    ),
    "fd_sharing_denied": _fail(
        "triage.config.fd_sharing_denied",
        "The kernel refused one process another's file descriptor (`pidfd_getfd: Operation not permitted`): "
        "Yama's ptrace_scope or a container without CAP_SYS_PTRACE blocks CUDA memory shared between "
        "processes (PyTorch's CUDA IPC, NCCL's cuMem buffers)",
        C.CONFIG,
        80,
        "debugging-guide.md § 17",
    ),
    "fd_sharing_unsupported": _fail(
        "triage.config.fd_sharing_unsupported",
        "The node's kernel has no pidfd_getfd (Linux before 5.6), which PyTorch needs to share CUDA memory "
        "between processes with expandable_segments:True: turn expandable segments off for this job, or "
        "run it on a newer kernel",
        C.CONFIG,
        80,
        "debugging-guide.md § 17",
    ),
    "library_not_found": _fail(
        "triage.config.library_not_found",
        "A shared library the process needs is not where the loader looks (`cannot open shared object "
        "file`): not installed in this environment or image, or its directory missing from LD_LIBRARY_PATH",
        C.CONFIG,
        62,
        "debugging-guide.md § 10",
    ),
    "mpi_gtl_not_linked": _fail(
        "triage.config.mpi_gtl_not_linked",
        "Cray MPICH was told to use GPU buffers (MPICH_GPU_SUPPORT_ENABLED=1) by a program not linked with "
        "its GPU transport library (GTL): build it (mpi4py, the application) with the Cray compiler wrappers "
        "and the GPU modules loaded, or link libmpi_gtl_cuda",
        C.CONFIG,
        82,
        "debugging-guide.md § 10",
    ),
    "single_gpu_library": _fail(
        "triage.config.single_gpu_library",
        "A library made for one GPU saw several and refused: give its process one GPU "
        "(CUDA_VISIBLE_DEVICES=0), or use a library or edition that supports several",
        C.CONFIG,
        80,
        "debugging-guide.md § 10",
    ),
    "peers_not_ready": _fail(
        "triage.rendezvous.peers_not_ready",
        "The launcher waited for other nodes' endpoints that never came up (PaddlePaddle's `not ready "
        "endpoints`): the launch was not started on those nodes, or their ports cannot be reached from here",
        C.RENDEZVOUS,
        70,
        "debugging-guide.md § 7",
    ),
    "rank_claimed_twice": _fail(
        "triage.rendezvous.rank_claimed_twice",
        "Two processes claimed the same rank when the process group formed: a file:// init file an earlier "
        "run left (it still holds that run's ranks), or every process launched with the same RANK",
        C.RENDEZVOUS,
        80,
        "debugging-guide.md § 7",
    ),
    "mesh_sidecar": _warn(
        "triage.config.mesh_sidecar",
        "A service-mesh sidecar (Istio's Envoy) carries the job's own ports: the rendezvous store and "
        "NCCL's connections pass through a proxy that starts after the training container, and that "
        'torch.distributed does not expect; training pods run without it (sidecar.istio.io/inject: "false")',
        C.CONFIG,
        50,
        "debugging-guide.md § 12",
    ),
    "internal_assert": _fail(
        "triage.software.internal_assert",
        "An internal assertion of PyTorch failed (`INTERNAL ASSERT FAILED`): a bug in it, or a use it does "
        "not check for; the condition, its source file and the call that led there say which",
        C.SOFTWARE,
        60,
        "debugging-guide.md § 15",
    ),
    "socket_over_ib": _warn(
        "triage.config.socket_over_ib",
        "NCCL moved data over TCP sockets on an InfiniBand interface: IB verbs did not set up (no "
        "libibverbs / rdma-core in the image, NCCL_IB_DISABLE set, or no /dev/infiniband in the container)",
        C.CONFIG,
        62,
        "debugging-guide.md § 13",
    ),
    "shm_removed": _fail(
        "triage.config.shm_removed",
        "NCCL's shared-memory segment was removed under the job (systemd-logind's RemoveIPC cleans /dev/shm "
        "for users not logged in): set RemoveIPC=no in logind.conf",
        C.CONFIG,
        80,
        "debugging-guide.md § 17",
    ),
    "dataparallel_gather": _fail(
        "triage.config.dataparallel_gather",
        "nn.DataParallel could not gather its GPUs' outputs (the replicas returned tensors of different "
        "shapes, each padding its slice of the batch): one process drove every visible GPU, a script for one "
        "GPU run on a multi-GPU machine or a Trainer started without torchrun",
        C.CONFIG,
        80,
        "debugging-guide.md § 18",
    ),
    "addr_in_use": _fail(
        "triage.config.address_in_use", "Address already in use", C.CONFIG, 82, "debugging-guide.md § 8"
    ),
    "master_addr": _fail(
        "triage.config.master_addr",
        "MASTER_ADDR could not be resolved",
        C.CONFIG,
        82,
        "debugging-guide.md § 12",
    ),
    "rendezvous": _fail(
        "triage.rendezvous.timeout",
        "Rendezvous / store timed out: the process group never formed",
        C.RENDEZVOUS,
        70,
        "debugging-guide.md § 7",
    ),
    "msg_truncated": _fail(
        "triage.software.message_truncated",
        "NCCL bootstrap 'Message truncated' (NCCL versions differ across ranks)",
        C.SOFTWARE,
        76,
        "debugging-guide.md § 10",
    ),
    "ofi_init_failed": _fail(
        "triage.config.efa_plugin",
        "aws-ofi-nccl / EFA initialisation failed",
        C.CONFIG,
        74,
        "debugging-guide.md § 6",
    ),
    "gdr_disabled": _warn(
        "triage.config.gdr_disabled",
        "NCCL runs without GPUDirect RDMA on the HCAs: GPU memory goes through the host, at a fraction of "
        "the bandwidth (the nvidia-peermem module not loaded, or an NCCL up to 2.22 that only looks for "
        "nv_peer_mem)",
        C.CONFIG,
        50,
        "debugging-guide.md § 17",
    ),
    "tcp_fallback": _warn(
        "triage.config.tcp_fallback",
        "aws-ofi-nccl fell back to the TCP provider instead of EFA",
        C.CONFIG,
        62,
        "debugging-guide.md § 13",
    ),
    "transport_error": _fail(
        "triage.network.transport_error",
        "Transport errors inside the collective (EFA / libfabric / IB)",
        C.NETWORK,
        45,
        "debugging-guide.md § 3",
    ),
    # A peer closing its connections is what every survivor sees when another rank dies or the
    # watchdog takes a process down: reported, never blamed (transport errors are).
    "socket_closed": _consequence(
        "triage.network.connection_closed", "NCCL connections closed by peers", "debugging-guide.md § 3"
    ),
    "evicted": _fail("triage.infra.evicted", "Pod evicted", C.INFRASTRUCTURE, 85, "debugging-guide.md § 16"),
    "node_failure": _fail(
        "triage.infra.node_not_ready",
        "Node stopped responding",
        C.INFRASTRUCTURE,
        88,
        "debugging-guide.md § 16",
    ),
    "gpu_reset_required": _fail(
        "triage.gpu.reset_required",
        "The GPU driver or its GSP firmware needs a GPU reset or a reboot",
        C.GPU_HARDWARE,
        93,
        "debugging-guide.md § 5",
    ),
    "nccl_symbol": _fail(
        "triage.software.nccl_symbol",
        "PyTorch loaded a different libnccl than it was built with (undefined NCCL symbol): two NCCL "
        "packages installed, or LD_LIBRARY_PATH picks another",
        C.SOFTWARE,
        80,
        "debugging-guide.md § 10",
    ),
    "peer_address_layout": _fail(
        "triage.software.peer_address_layout",
        "A peer's address arrived in a layout this NCCL does not read (not an IPv4/IPv6 family): the "
        "ranks load different NCCL or network-plugin builds",
        C.SOFTWARE,
        78,
        "debugging-guide.md § 10",
    ),
    "nccl_topology": _fail(
        "triage.software.nccl_topology",
        "NCCL's topology search failed: an NCCL older than this machine's GPUs or NVSwitch, devices "
        "hidden unevenly (CUDA_VISIBLE_DEVICES), or an NCCL_TOPO_FILE written for another machine",
        C.SOFTWARE,
        78,
        "debugging-guide.md § 19",
    ),
    "topology_attribute": _fail(
        "triage.software.topology_attribute",
        "NCCL read a topology without an attribute it needs: a static topology file from the network "
        "plugin (aws-ofi-nccl before 1.11 loads one for p4d/p5) read with only some GPUs visible or by "
        "a newer NCCL; upgrade the plugin, or unset NCCL_TOPO_FILE if the job sets it",
        C.SOFTWARE,
        78,
        "debugging-guide.md § 19",
    ),
    "nccl_injected_topology": _fail(
        "triage.config.nccl_injected_topology",
        "NCCL read a graph or topology file that does not match this machine or that it cannot "
        "parse (NCCL_GRAPH_FILE or NCCL_TOPO_FILE, set in the environment or in /etc/nccl.conf)",
        C.CONFIG,
        78,
        "debugging-guide.md § 19",
    ),
    "preempted": _fail(
        "triage.infra.preempted", "Workload preempted", C.INFRASTRUCTURE, 85, "debugging-guide.md § 16"
    ),
    "storage_error": _fail(
        "triage.storage.batch_loader",
        "Storage batch loader failed",
        C.STORAGE_IO,
        66,
        "debugging-guide.md § 14",
    ),
    "retries_exhausted": _fail(
        "triage.storage.retries_exhausted",
        "Storage requests failed after exhausting their retries",
        C.STORAGE_IO,
        66,
        "debugging-guide.md § 14",
    ),
    "hub_rate_limited": _fail(
        "triage.storage.hub_rate_limited",
        "A model or dataset hub refused the job's requests for rate (HTTP 429 Too Many Requests): many ranks "
        "or jobs downloading at once; download once to shared storage before the launch and load from that "
        "path",
        C.STORAGE_IO,
        72,
        "debugging-guide.md § 14",
    ),
    "storage_throttled": _fail(
        "triage.storage.throttled",
        "The object store throttled requests (S3 SlowDown / 503) beyond what the client's retries absorbed",
        C.STORAGE_IO,
        68,
        "debugging-guide.md § 14",
    ),
    "retry_last_attempt": _warn(
        "triage.storage.last_retry",
        "Storage request retried down to its last attempt",
        C.STORAGE_IO,
        40,
        "debugging-guide.md § 14",
    ),
    "setup_activity": _consequence(
        "triage.rendezvous.late_setup",
        "Ranks still installing packages at start-up",
        "debugging-guide.md § 7",
    ),
    "io_error": _fail(
        "triage.storage.io_error",
        "Reads from storage failed (I/O error)",
        C.STORAGE_IO,
        68,
        "debugging-guide.md § 14",
    ),
    # ESTALE: another client removed or replaced the file this one held — caches, lock files or
    # checkpoints shared by several nodes on NFS-like storage, not the storage service failing.
    "stale_handle": _fail(
        "triage.software.stale_file_handle",
        "A file on a shared filesystem was removed or replaced by another node while in use (Stale file "
        "handle): a cache, lock or checkpoint directory shared across nodes",
        C.SOFTWARE,
        66,
        "debugging-guide.md § 14",
    ),
    "lustre_evicted": _fail(
        "triage.storage.lustre_evicted",
        "The node's Lustre client was evicted or lost its server",
        C.STORAGE_IO,
        70,
        "debugging-guide.md § 14",
    ),
    "storage_timeout": _warn(
        "triage.storage.timeout", "Storage requests timed out", C.STORAGE_IO, 40, "debugging-guide.md § 14"
    ),
    "data_error": _fail(
        "triage.data.corrupt", "Corrupt or unreadable training data", C.DATA, 78, "debugging-guide.md § 15"
    ),
    "connection_reset": Meaning(
        "triage.noise.connection_resets",
        "Connection resets that recovered on the first retry (noise, not a cause)",
        None,
        0,
        "debugging-guide.md § 21",
        Status.INFO,
        Priority.P2,
    ),
    "nccl_warn": _consequence("triage.nccl.warn", "Other NCCL warnings", "debugging-guide.md § 3"),
    "dataloader_exit": _consequence(
        "triage.consequence.dataloader_exit", "DataLoader worker exited", "debugging-guide.md § 17"
    ),
    "heartbeat": _consequence(
        "triage.consequence.heartbeat", "Watchdog heartbeat monitor fired", "debugging-guide.md § 1"
    ),
    "ais_lost_objects": _fail(
        "triage.storage.ais_lost_objects",
        "AIStore batch GET lost objects (out-of-bounds index)",
        C.STORAGE_IO,
        64,
        "debugging-guide.md § 14",
    ),
    "ais_stream_broken": _fail(
        "triage.storage.ais_stream_broken",
        "AIStore inter-target stream broke",
        C.STORAGE_IO,
        64,
        "debugging-guide.md § 14",
    ),
    "ais_dropped": _fail(
        "triage.storage.ais_dropped",
        "AIStore dropped objects of an aborted batch",
        C.STORAGE_IO,
        62,
        "debugging-guide.md § 14",
    ),
    "ais_pressure": _warn(
        "triage.storage.ais_pressure",
        "AIStore target under resource pressure",
        C.STORAGE_IO,
        50,
        "debugging-guide.md § 14",
    ),
    "ais_error": _warn(
        "triage.storage.ais_error", "AIStore daemon errors", C.STORAGE_IO, 30, "debugging-guide.md § 14"
    ),
    "pg_mismatch": _fail(
        "triage.nccl.pg_detected_mismatch",
        "PyTorch detected ranks running different collectives (TORCH_DISTRIBUTED_DEBUG=DETAIL)",
        C.COLLECTIVE_MISMATCH,
        90,
        "debugging-guide.md § 2",
    ),
    "nccl_mismatch": _fail(
        "triage.nccl.nccl_detected_mismatch",
        "NCCL detected mismatched collective calls across ranks",
        C.COLLECTIVE_MISMATCH,
        85,
        "debugging-guide.md § 2",
    ),
    "collective_shape": _fail(
        "triage.nccl.collective_shape",
        "A collective's tensor sizes do not fit the other ranks' (shapes differ across ranks: code or data "
        "that differs by rank, or workers running different code or environments)",
        C.COLLECTIVE_MISMATCH,
        72,
        "debugging-guide.md § 2",
    ),
    "net_size_mismatch": _fail(
        "triage.config.net_size_mismatch",
        "Peers disagreed on NET/IB message sizes (NCCL settings differ between nodes, or forced PCIe "
        "relaxed ordering)",
        C.CONFIG,
        70,
        "debugging-guide.md § 3",
    ),
    "invalid_device": _fail(
        "triage.config.invalid_device",
        "A process asked for a GPU the node does not have (more processes than GPUs, or "
        "CUDA_VISIBLE_DEVICES)",
        C.CONFIG,
        80,
        "debugging-guide.md § 20",
    ),
    "provider_error": _fail(
        "triage.network.provider_error",
        "The libfabric provider (EFA) failed inside itself (prov_errno): a provider or aws-ofi-nccl bug, "
        "or a use it does not support (DataLoader workers forked after the provider started)",
        C.NETWORK,
        62,
        "debugging-guide.md § 6",
    ),
    "short_write": _fail(
        "triage.storage.short_write",
        "A write stopped short: the volume filled up or its device is failing (free space first, then the "
        "device's errors in the kernel log)",
        C.STORAGE_IO,
        70,
        "debugging-guide.md § 14",
    ),
    "slurm_step_refused": _fail(
        "triage.config.slurm_step_refused",
        "Slurm refused to start the job step: it asks for more memory, GPUs or CPUs than the allocation "
        "or the nodes hold",
        C.CONFIG,
        80,
        "debugging-guide.md § 16",
    ),
    "checkpoint_unwritable": _fail(
        "triage.storage.checkpoint_unwritable",
        "torch.save could not create its file: the directory is missing or not writable, or the volume "
        "is full",
        C.STORAGE_IO,
        70,
        "debugging-guide.md § 14",
    ),
    "disk_full": _fail(
        "triage.storage.disk_full",
        "A write failed: the disk or volume is full (No space left on device / quota)",
        C.STORAGE_IO,
        72,
        "debugging-guide.md § 14",
    ),
    "ssh_unreachable": _fail(
        "triage.config.ssh_unreachable",
        "The launcher could not reach a node over ssh (passwordless keys, host keys, the ssh port, or a "
        "hostname that does not resolve)",
        C.CONFIG,
        78,
        "debugging-guide.md § 12",
    ),
    "slurm_launch": _fail(
        "triage.infra.slurm_launch",
        "Slurm could not start the job on a node (its spool copy of the batch script, an expired or invalid "
        "job credential, a failed prolog): a node-side scheduler fault for the cluster's admins; drain the "
        "node and resubmit",
        C.INFRASTRUCTURE,
        74,
        "debugging-guide.md § 16",
    ),
    "port_fault": _fail(
        "triage.network.port_fault",
        "A network port on this node went down or its NIC failed (port error, catastrophic error, link "
        "down): a cable, transceiver, switch port or NIC fault; drain the node and check its link counters",
        C.NETWORK,
        82,
        "debugging-guide.md § 3",
    ),
    "duplicate_gpu": _fail(
        "triage.software.duplicate_gpu",
        "Two ranks of one communicator on the same GPU (Duplicate GPU): each process must select its own "
        "device (`torch.cuda.set_device(LOCAL_RANK)`); look for a hard-coded device or a "
        "CUDA_VISIBLE_DEVICES that leaves every rank one GPU",
        C.SOFTWARE,
        70,
        "debugging-guide.md § 2",
    ),
    "missing_program": _fail(
        "triage.config.missing_program",
        "A node could not run a program the job starts (`command not found`, a shared library the loader "
        "cannot find, an executable not in $PATH): install it there, or set PATH / LD_LIBRARY_PATH for "
        "non-interactive shells (Open MPI: `--prefix`)",
        C.CONFIG,
        80,
        "debugging-guide.md § 12",
    ),
    "launcher_env": _fail(
        "triage.config.launcher_env",
        "The process was started without the distributed launcher's environment (RANK / WORLD_SIZE / "
        "MASTER_ADDR / LOCAL_RANK not set): start it with torchrun, srun or mpirun, or set them",
        C.CONFIG,
        80,
        "debugging-guide.md § 12",
    ),
    "open_files": _fail(
        "triage.config.open_files",
        "A process ran out of file descriptors (Too many open files): raise `ulimit -n`, or fewer DataLoader "
        "workers / the file_system sharing strategy",
        C.CONFIG,
        72,
        "debugging-guide.md § 17",
    ),
    "socket_iface": _fail(
        "triage.config.socket_interface",
        "NCCL found no usable network interface (NCCL_SOCKET_IFNAME names one the host lacks?)",
        C.CONFIG,
        78,
        "multinode.md § 2",
    ),
    "efa_connect": _fail(
        "triage.config.efa_connect",
        "EFA connection setup failed (address vector / connect): traffic between the nodes is blocked or "
        "the EFA device is unusable",
        C.CONFIG,
        76,
        "debugging-guide.md § 6",
    ),
    "ofi_libfabric_skew": _fail(
        "triage.software.libfabric_skew",
        "aws-ofi-nccl expects a newer libfabric than the one it runs with (built and run against different "
        "versions)",
        C.SOFTWARE,
        74,
        "debugging-guide.md § 10",
    ),
    "k8s_api_unreachable": _fail(
        "triage.config.k8s_api_unreachable",
        "A pod could not reach the Kubernetes API server: a service-mesh proxy not yet running (Istio holds "
        "a pod's traffic until its sidecar starts, after the init containers), a NetworkPolicy, or the API "
        "server itself",
        C.CONFIG,
        66,
        "debugging-guide.md § 9",
    ),
    "extension_build": _fail(
        "triage.software.extension_build",
        "A C++/CUDA extension built on the fly (DeepSpeed's ops, apex, a cpp_extension load) did not "
        "compile: the toolchain (nvcc, gcc) does not fit the PyTorch build (an older CUDA toolkit, a C++ "
        "standard it lacks) or headers are missing; the compiler's first error names which",
        C.SOFTWARE,
        72,
        "debugging-guide.md § 10",
    ),
    "dtype_unsupported": _fail(
        "triage.software.dtype_unsupported",
        "NCCL has no collective for this tensor's data type (bf16 needs NCCL 2.10 or later): a newer NCCL, "
        "or the tensor cast before the collective",
        C.SOFTWARE,
        72,
        "debugging-guide.md § 10",
    ),
    "precision_unsupported": _fail(
        "triage.config.precision_unsupported",
        "The run asked for a precision or kernel this GPU does not have (bf16 or FlashAttention before "
        "Ampere: compute capability below 8.0): fp16 and the default attention on these GPUs, or GPUs of "
        "Ampere or newer",
        C.CONFIG,
        74,
        "debugging-guide.md § 10",
    ),
    "libuv_missing": _fail(
        "triage.software.libuv_missing",
        "This PyTorch build has no libuv, yet its store was asked for one (torchrun's default from 2.4; "
        "Windows wheels lack it): set USE_LIBUV=0 for the launcher, or run under WSL or Linux",
        C.SOFTWARE,
        82,
        "debugging-guide.md § 10",
    ),
    # Weighed below any exception: where the rank that raised is in the input, its exception is the cause.
    "horovod_shutdown": _fail(
        "triage.collective.horovod_shutdown",
        "Horovod shut down while the ranks that print this still called collectives: another rank left its "
        "training loop early (early stopping or evaluation decided on one rank, uneven data) or raised an "
        "exception; the ranks that print this only waited",
        C.COLLECTIVE_MISMATCH,
        30,
        "debugging-guide.md § 2",
    ),
    "horovod_stall": _fail(
        "triage.collective.horovod_stall",
        "Horovod's stall inspector: some ranks submitted tensors the others never did (different tensor "
        "names across ranks, or ranks on another code path)",
        C.COLLECTIVE_MISMATCH,
        48,  # low: the inspector's own words allow a rank stuck elsewhere as well
        "debugging-guide.md § 2",
    ),
    "build_unfit_gpu": _fail(
        "triage.software.build_unfit_gpu",
        "A build that does not run on this GPU: NCCL's kernels need more shared memory than it gives, or "
        "PyTorch lacks its architecture; upgrade to a release that supports the GPU",
        C.SOFTWARE,
        70,
        "debugging-guide.md § 10",
    ),
    "bad_arguments": _fail(
        "triage.config.bad_arguments",
        "The training script refused its command line (an argument it does not declare, a required one "
        "missing, a bad value): the launch command and the script do not fit",
        C.CONFIG,
        76,
        "debugging-guide.md § 15",
    ),
    "host_slots_as_name": _fail(
        "triage.software.host_slots_as_name",
        "The launcher handed a host:slots entry (`localhost:4`) to ssh as a host name: this launcher "
        "version does not read that syntax (an old Open MPI under horovodrun or mpirun -H)",
        C.SOFTWARE,
        76,
        "debugging-guide.md § 10",
    ),
    "gloo_timeout": _fail(
        "triage.unknown.gloo_timeout",
        "A gloo collective timed out waiting for a peer (gloo's counterpart of NCCL's watchdog timeout): a "
        "peer stalled, died or never reached it; its own log holds the cause",
        C.UNKNOWN,
        42,
        "debugging-guide.md § 1",
    ),
    "loopback_peer": _fail(
        "triage.config.loopback_peer",
        "A connection to 127.0.1.1 failed: a node's hostname resolves to the loopback alias in /etc/hosts, "
        "so it advertised an address no other node can reach (name the interface for gloo and NCCL, or "
        "map the hostname to the routable address)",
        C.CONFIG,
        78,
        "multinode.md § 2",
    ),
    "gloo_no_address": _fail(
        "triage.config.gloo_interface",
        "Gloo cannot find the network interface it was given (GLOO_SOCKET_IFNAME names one interface this "
        "host has; NCCL's `^lo,docker` exclusion list is not read)",
        C.CONFIG,
        80,
        "multinode.md § 2",
    ),
    "mpi_tcp_interface": _fail(
        "triage.config.mpi_tcp_interface",
        "Open MPI's TCP transport connected over an interface that does not tell the hosts apart or does "
        "not route between them (docker0, virbr0, a second subnet): pin it with btl_tcp_if_include",
        C.CONFIG,
        74,
        "multinode.md § 2",
    ),
    "mpi_version_skew": _fail(
        "triage.software.mpi_version_skew",
        "Open MPI's daemon on another node is another version than mpirun's (it refused an option mpirun "
        "passed): one Open MPI on every node",
        C.SOFTWARE,
        78,
        "debugging-guide.md § 10",
    ),
    "library_files": _fail(
        "triage.config.library_files",
        "A math library (hipBLASLt / rocBLAS / Tensile) could not load its kernel files: with one process "
        "per GPU the open-files limit (`ulimit -n`, often 1024) runs out first; else an incomplete install",
        C.CONFIG,
        70,
        "debugging-guide.md § 17",
    ),
    "binding_mismatch": _fail(
        "triage.software.binding_mismatch",
        "A compiled extension lacks the constructor or signature the Python code calls (pybind11): the "
        "package was built for another version of torch (or of itself) than the one it runs with",
        C.SOFTWARE,
        72,
        "debugging-guide.md § 10",
    ),
    "ub_multicast": _fail(
        "triage.config.ub_multicast",
        "Transformer Engine's comm+GEMM overlap asked for CUDA Multicast, which this GPU, driver or toolkit "
        "lacks (it needs Hopper with NVSwitch): UB_SKIPMC=1 uses CUDA IPC instead",
        C.CONFIG,
        80,
        "debugging-guide.md § 19",
    ),
    "no_process_group": _fail(
        "triage.config.no_process_group",
        "A collective or DDP ran without a process group: the script initialises one only under the "
        "variables it expects (torchrun's RANK and WORLD_SIZE, Slurm's SLURM_PROCID), which this launch did "
        "not set",
        C.CONFIG,
        76,
        "debugging-guide.md § 7",
    ),
    "device_mismatch": _fail(
        "triage.config.device_mismatch",
        "A rank's module sits on cuda:0 while its inputs are on its own GPU: the process did not set its "
        "device from LOCAL_RANK (torch.cuda.set_device), or the launcher set no LOCAL_RANK (mpirun)",
        C.CONFIG,
        64,
        "debugging-guide.md § 15",
    ),
    "rpc_timeout": _fail(
        "triage.config.rpc_timeout",
        "A torch.distributed.rpc call ran past its timeout (60 s by default): large transfers need a longer "
        "rpc_timeout, or the peer it waited for was stuck",
        C.CONFIG,
        56,
        "debugging-guide.md § 7",
    ),
    "tensorpipe_listen": _fail(
        "triage.software.tensorpipe_listen",
        "TensorPipe (torch.distributed.rpc) could not listen on the address the hostname resolves to (an "
        "IPv6 link-local address lost its interface in older releases): TP_SOCKET_IFNAME names the "
        "interface, or a PyTorch with the fix",
        C.SOFTWARE,
        72,
        "debugging-guide.md § 7",
    ),
    "loss_scale_floor": _fail(
        "triage.config.loss_scale_floor",
        "fp16's loss scaler gave up: the gradients overflowed at every scale (fp16's range for a model "
        "pretrained in bf16, a learning rate too high, a run that diverged): train in bf16, or lower the "
        "learning rate",
        C.CONFIG,
        70,
        "debugging-guide.md § 15",
    ),
    "engine_world_size": _fail(
        "triage.config.engine_world_size",
        "The engine was built for another number of GPUs than the processes launched (its tensor × "
        "pipeline parallel size): launch exactly that many processes (mpirun -n)",
        C.CONFIG,
        80,
        "debugging-guide.md § 15",
    ),
    "nvshmem_init": _fail(
        "triage.config.nvshmem_init",
        "NVSHMEM could not set up its transports (DeepEP and other expert-parallel kernels): its GPUDirect "
        "RDMA transport needs the nvidia-peermem module loaded on every node, and the NICs reachable; "
        "its bootstrap errors after that are peers leaving",
        C.CONFIG,
        70,  # medium: the module is the usual cause, not one a line names
        "debugging-guide.md § 17",
    ),
    "nan_loss": _fail(
        "triage.unknown.nan_loss",
        "The loss became NaN: a numeric fault (learning rate, precision, a bad batch) or data corrupted "
        "between GPUs (NaN appearing on one GPU right after a peer-to-peer copy: PCIe ACS or the IOMMU)",
        C.UNKNOWN,
        40,
        "debugging-guide.md § 15",
    ),
    "wrapper_misuse": _fail(
        "triage.software.wrapper_misuse",
        "The code used the data-parallel wrapper (DDP, FSDP, DataParallel) where the model inside it was "
        "meant: model.module or accelerator.unwrap_model(model)",
        C.SOFTWARE,
        72,
        "debugging-guide.md § 18",
    ),
    "rename_race": _fail(
        "triage.software.rename_race",
        "A rename found its source gone: another rank renamed it first (ranks racing over one checkpoint "
        "directory) or it was never written",
        C.SOFTWARE,
        62,
        "debugging-guide.md § 15",
    ),
    "comm_overlap": _fail(
        "triage.software.comm_overlap",
        "Transformer Engine's userbuffers (TP communication overlap, `--tp-comm-overlap`) failed: its "
        "bootstrap, or a barrier between the tensor-parallel GPUs that a peer never reached; the overlap "
        "setup or its Transformer Engine version, not the network",
        C.SOFTWARE,
        70,
        "debugging-guide.md § 18",
    ),
    "ddp_reducer": _fail(
        "triage.software.ddp_unused_parameters",
        "DDP: some parameters took no part in the loss (a forward that skips modules, or outputs left out of "
        "the loss)",
        C.SOFTWARE,
        75,
        "debugging-guide.md § 15",
    ),
    "fabric_manager": _fail(
        "triage.config.fabric_manager",
        "CUDA reports the system not yet initialized: on NVSwitch nodes the NVIDIA Fabric Manager is not "
        "running",
        C.CONFIG,
        84,
        "multinode.md § 1",
    ),
    "gpu_busy": _fail(
        "triage.config.gpu_busy",
        "A GPU was busy or unavailable (exclusive-process compute mode, or another process holds it)",
        C.CONFIG,
        78,
        "debugging-guide.md § 20",
    ),
    "host_alloc": _fail(
        "triage.host.cpu_allocation",
        "The process could not allocate host memory (DefaultCPUAllocator)",
        C.HOST_OOM,
        85,
        "debugging-guide.md § 4",
    ),
    "dataloader_killed": _fail(
        "triage.host.dataloader_killed",
        "A DataLoader worker was killed with SIGKILL (usually the host OOM killer)",
        C.HOST_OOM,
        84,
        "debugging-guide.md § 4",
    ),
    "p2p_unsupported": _fail(
        "triage.config.p2p_unsupported",
        "GPU peer-to-peer transfers are not supported here (consumer GPUs, or PCIe / IOMMU settings)",
        C.CONFIG,
        75,
        "debugging-guide.md § 19",
    ),
    "net_plugin_unloadable": _fail(
        "triage.software.net_plugin_unloadable",
        "NCCL found its network plugin but the loader refused it (a library version it was built "
        "against is missing here: the plugin and libfabric/EFA builds do not fit); NCCL fell back to "
        "its internal sockets",
        C.SOFTWARE,
        72,
        "debugging-guide.md § 13",
    ),
    "mpi_misuse": _fail(
        "triage.software.mpi_misuse",
        "The program called MPI before MPI_Init (or after MPI_Finalize); Open MPI aborts the job",
        C.SOFTWARE,
        80,
        "debugging-guide.md § 15",
    ),
    "iommu_fault": _fail(
        "triage.config.iommu_fault",
        "The IOMMU refused the devices' DMA (VT-d DMAR / AMD-Vi faults): GPU peer-to-peer or GPUDirect "
        "traffic blocked, which NCCL waits on forever",
        C.CONFIG,
        74,
        "debugging-guide.md § 19",
    ),
    "missing_file": _fail(
        "triage.data.missing_file",
        "A file the job reads does not exist (dataset, checkpoint or config path)",
        C.DATA,
        70,
        "debugging-guide.md § 15",
    ),
    # A peer's failure as a surviving rank sees it: the remote process died, or the network did.
    # Any rank's own crash explains it better (heavier candidates win); alone, it points at the fabric.
    "remote_exit": Meaning(
        "triage.network.remote_error",
        "A peer's connection failed: the remote process exited or the network failed",
        C.NETWORK,
        35,
        "debugging-guide.md § 3",
        Status.FAIL,
        Priority.P0,
    ),
}

_SIGKILL = _fail(
    "triage.host.sigkill",
    "Worker killed with SIGKILL (exit -9 / 137)",
    C.HOST_OOM,
    50,
    "debugging-guide.md § 4",
)
_SEGFAULT = _fail(
    "triage.unknown.segfault",
    "Worker crashed with SIGSEGV and printed no reason",
    C.UNKNOWN,
    54,  # above a silent stall: the rank is known to have died
    "debugging-guide.md § 15",
)
_EXCEPTION = _fail(
    "triage.software.exception",
    "Python exception in the training code",
    C.SOFTWARE,
    55,
    "debugging-guide.md § 15",
)
_SIGBUS = -7
_SIGILL = -4
_BUS_ERROR = _fail(
    "triage.config.sigbus",
    "Worker killed by SIGBUS (bus error): usually /dev/shm too small for DataLoader workers or NCCL",
    C.CONFIG,
    60,
    "debugging-guide.md § 17",
)
# SIGILL: the CPU met an instruction it does not have. A binary or extension built for another CPU
# (AVX-512 code on a CPU without it, a wheel compiled on the build host with -march=native), or a
# library's deliberate trap on a setup it refuses (`__builtin_trap`, `ud2`): a build that does not
# fit the machine, the same on every node that runs it.
_ILLEGAL_INSTRUCTION = _fail(
    "triage.software.illegal_instruction",
    "A process died on an illegal instruction (SIGILL): a binary or extension built for another CPU, or "
    "a library trapping on a setup it does not support",
    C.SOFTWARE,
    62,
    "debugging-guide.md § 10",
)
# glog's fatal CHECK (`F0105 23:50:34 nccl_all_reduce_thunk.cc:175] Check failed: …`): a C++
# library (XLA, TensorFlow, PyTorch's core) found its own invariant broken and aborted: its bug, or a
# setup it does not support. The file and condition name it.
_LIBRARY_CHECK = _fail(
    "triage.software.library_check",
    "A library's internal check failed and aborted the process (glog `Check failed:`): a bug in that "
    "library or a setup it does not support",
    C.SOFTWARE,
    58,
    "debugging-guide.md § 15",
)
# glibc's heap checks (`free(): corrupted unsorted chunks`, `double free or corruption`): native code
# wrote outside its memory. In a job that ran elsewhere that is a library that does not fit: a NCCL or
# CUDA build older than the GPU, two copies of one library in the process, an extension built for
# another torch; or a bug a later release fixed.
_HEAP_CORRUPTION = _fail(
    "triage.software.heap_corruption",
    "The C library found the heap corrupted and aborted the process (`free(): …`, `double free or "
    "corruption`): native code wrote outside its memory — a library that does not fit the GPU or the "
    "others (a NCCL older than the GPU, two copies of one library, an extension built for another torch) "
    "or a bug fixed in a later release",
    C.SOFTWARE,
    57,
    "debugging-guide.md § 10",
)
_CRASH_MEANINGS = {
    "SIGSEGV": _SEGFAULT,
    "SIGILL": _ILLEGAL_INSTRUCTION,
    "SIGBUS": _BUS_ERROR,
    "CHECK": _LIBRARY_CHECK,
    "HEAP": _HEAP_CORRUPTION,
}
_SLURM_OOM = _fail(
    "triage.host.slurm_oom", "Slurm task ran out of memory", C.HOST_OOM, 93, "debugging-guide.md § 4"
)
_WORKER_EXIT = _consequence(
    "triage.consequence.worker_exit", "Processes exited after the failure", "debugging-guide.md § 1"
)
HOROVOD_SHUT_DOWN_AFTER = _consequence(
    "triage.consequence.horovod_shutdown",
    "Horovod shut down on the other ranks after the rank named first failed",
    "debugging-guide.md § 2",
)
# A CUDA error NCCL or the program hit after the transport failed in the same process: the aborted
# communicator's kernels and buffers, not a fault of their own.
CUDA_AFTER_TRANSPORT = _consequence(
    "triage.consequence.cuda_after_transport",
    "CUDA errors after the network transport failed (NCCL's communicator aborted under running kernels)",
    "debugging-guide.md § 3",
)
NCCL_RAISED = _consequence(
    "triage.consequence.nccl_error", "NCCL calls that returned an error", "debugging-guide.md § 3"
)

# Xid → (what it means, whether it is a hardware fault). From the driver's nverror.h mnemonics and
# NVIDIA's Xid catalogue; 13/31/43 are usually the application's own fault.
XID_MEANINGS: dict[int, tuple[str, bool]] = {
    13: ("graphics engine exception (usually an application error)", False),
    31: ("GPU memory page fault (usually an application illegal address)", False),
    43: ("GPU stopped processing (application error)", False),
    45: ("channel removed after a previous Xid", False),
    48: ("uncorrectable double-bit ECC error", True),
    61: ("internal micro-controller breakpoint", True),
    62: ("internal micro-controller halt", True),
    63: ("row remapping / page retirement event: reset the GPU", True),
    64: ("row remapping / page retirement failure", True),
    74: ("NVLink error", True),
    79: ("GPU has fallen off the bus", True),
    92: ("excessive single-bit ECC errors", True),
    94: ("contained uncorrectable ECC error", True),
    95: ("uncontained uncorrectable error: GPU reset required", True),
    109: ("context-switch timeout", True),
    119: ("GSP RPC timeout", True),
    120: ("GSP error", True),
    154: ("GPU recovery action: reset or reboot required", True),
}

_CONSEQUENCE_CLASSES = frozenset(
    {
        "ChildFailedError",
        "SignalException",
        "ProcessExitedException",
        "ProcessRaisedException",
        "KeyboardInterrupt",
        "DistBackendError",
        "DistNetworkError",
        "DistStoreError",
        "CalledProcessError",
    }
)
_CONSEQUENCE_WORDS = re.compile(
    r"NCCL|ProcessGroup|[Ww]atchdog|communicator|DataLoader worker|c10d|TCPStore|[Tt]imed out|[Cc]onnection"
    r"|[Bb]roken pipe|SIGTERM|[Tt]erminated|exitcode"
    # gloo's transport, quoted in the exception its failure raised (`RuntimeError: [enforce fail at
    # …/gloo/transport/tcp/device.cc:84]`, `[…/gloo/transport/tcp/pair.cc:598] Connection closed`)
    r"|\bgloo/"
)


def meaning_of(event: Event) -> Meaning | None:
    """What one event means; None for lines that only feed the rank state or the job summary."""
    special = _SPECIAL.get(event.kind)
    return special(event) if special else _SIMPLE.get(event.kind)


# ibv_wc_status values (ibverbs) NCCL prints in `Got completion … with error N` / `status=…(N)`.
_IB_LOCAL_PROTECTION, _IB_FLUSHED, _IB_RETRY_EXCEEDED, _IB_RNR_RETRY_EXCEEDED = 4, 5, 12, 13


def _ib_completion(event: Event) -> Meaning:
    status = int(event.fields.get("status", "-1"))
    ref = "debugging-guide.md § 3"
    if status == _IB_LOCAL_PROTECTION:
        return _fail(
            "triage.config.ib_local_protection",
            "IB/RoCE local protection error (status 4): the NIC could not access GPU memory (GPUDirect RDMA, "
            "PCIe ACS or IOMMU settings)",
            C.CONFIG,
            78,
            ref,
        )
    if status == _IB_FLUSHED:
        return _consequence(
            "triage.network.ib_flushed",
            "IB/RoCE work requests flushed after an earlier error (status 5)",
            ref,
        )
    if status in (_IB_RETRY_EXCEEDED, _IB_RNR_RETRY_EXCEEDED):
        return _fail(
            "triage.network.ib_retry_exceeded",
            f"IB/RoCE retry exceeded (status {status}): the peer never acknowledged (link, switch, or RoCE "
            "GID / routing)",
            C.NETWORK,
            48,
            ref,
        )
    return _fail(
        "triage.network.ib_completion", f"IB/RoCE completion error (status {status})", C.NETWORK, 46, ref
    )


# What a verbs call answered when NCCL set up a connection: the address it picked cannot work.
_UNUSABLE_ADDRESS = ("No such device", "Invalid argument", "Network is unreachable", "No data available")


def retried(event: Event) -> bool:
    """NCCL ≥ 2.23 retries a refused modify_qp at INFO level: only the failure it gives up on counts."""
    return event.kind == "ib_setup" and "retrying" in event.text


def _ib_setup(event: Event) -> Meaning | None:
    if retried(event):
        return None
    why = event.fields.get("why", "")
    call = event.fields.get("call", "a verbs call")
    if why.startswith("Cannot allocate memory"):
        return _MEMLOCK
    if any(why.startswith(text) for text in _UNUSABLE_ADDRESS):
        return _fail(
            "triage.config.ib_setup_address",
            f"IB/RoCE connection setup failed ({call}: {why}): the port or GID NCCL picked cannot reach the "
            "peer (NCCL_IB_GID_INDEX, RoCE v1 against v2, a RoCE interface without an IP address, or "
            "NCCL_IB_HCA naming the wrong port)",
            C.CONFIG,
            76,
            "debugging-guide.md § 3",
        )
    # A QP that never reaches RTR is a connection NCCL set up but the fabric could not carry: far more
    # often NCCL's choice (a GID index or RoCE version the switches do not route, a NIC paired with
    # another rail's on a rail-only fabric, the wrong HCA) than a link down, which NCCL's port
    # checks report before any connection.
    if "timed out" in why:
        return _fail(
            "triage.config.ib_setup_timeout",
            f"IB/RoCE connection setup timed out ({call}: {why}): the GID, NIC pair or HCA NCCL chose does "
            "not reach the peer (NCCL_IB_GID_INDEX, NCCL_CROSS_NIC=0 on a rail-only fabric, NCCL_IB_HCA), "
            "or a link on the path is down",
            C.CONFIG,
            60,
            "debugging-guide.md § 3",
        )
    return None  # a call that failed for a reason not read here: the never-silent fallback quotes it


_MEMLOCK = _fail(
    "triage.config.memlock",
    "RDMA memory registration failed (the memlock limit; where it is unlimited, the kernel or driver)",
    C.CONFIG,
    78,
    "debugging-guide.md § 17",
)


def _memory_registration(event: Event) -> Meaning:
    """Why registration failed decides the fix: ENOMEM is the memlock limit; EINVAL on GPU memory
    (type 2) is a provider that cannot register CUDA memory (a libfabric / driver version issue);
    EFAULT is GPUDirect RDMA missing (nvidia-peermem not loaded); DMA-BUF registration refused is a
    driver stack without DMA-BUF."""
    why = event.fields.get("why", "")
    if "dmabuf" in event.fields:
        return _fail(
            "triage.software.dmabuf_unsupported",
            "GPU memory could not be registered through DMA-BUF (ibv_reg_dmabuf_mr): the IB driver stack or "
            "kernel is too old for it; NCCL_DMABUF_ENABLE=0 returns to nvidia-peermem, or an NCCL whose "
            "fallback works",
            C.SOFTWARE,
            78,
            "debugging-guide.md § 17",
        )
    if why in ("Invalid argument", "RC: -22", "err -22") and event.fields.get("type"):
        return _fail(
            "triage.software.gpu_memory_registration",
            "GPU memory could not be registered with the fabric provider (a libfabric / EFA installer or "
            "driver version that mishandles CUDA memory)",
            C.SOFTWARE,
            78,
            "debugging-guide.md § 10",
        )
    if why == "Bad address":
        return _fail(
            "triage.config.gpudirect_rdma",
            "GPU memory could not be registered with the NIC (GPUDirect RDMA unavailable: nvidia-peermem not "
            "loaded?)",
            C.CONFIG,
            78,
            "debugging-guide.md § 17",
        )
    return _MEMLOCK


# cudaGetErrorString texts that mean builds do not match (the GPU, the driver, CUDA, NCCL, PyTorch).
_MISMATCHED_BUILDS = (
    "invalid resource handle",
    "invalid device function",
    "no kernel image",
    "PTX",
    "unsupported toolchain",
    "driver version is insufficient",
    "named symbol not found",
)


# cudaErrorPeerAccessUnsupported (217) in any of CUDA's framings: the GPUs cannot reach each other's memory.
_PEER_ACCESS = ("peer access is not supported", "PeerAccessUnsupported", "PEER_ACCESS_UNSUPPORTED")
_TOO_MANY_PEERS = ("TOO_MANY_PEERS", "TooManyPeers", "peer mapping resources exhausted")


def _coordination(event: Event) -> Meaning | None:
    """JAX's and TensorFlow's multi-host rendezvous: the coordinator unreachable from this task, a
    barrier some tasks never reached, or a peer task that stopped (its own log holds the cause)."""
    what = event.fields.get("what", "")
    if what == "Barrier timed out":
        return _fail(
            "triage.rendezvous.coordination_barrier",
            "Some tasks never reached the coordination service's barrier (JAX / TensorFlow multi-host): "
            "they started too late, never started, or could not reach the coordinator",
            C.RENDEZVOUS,
            72,
            "debugging-guide.md § 7",
        )
    if what in ("RegisterTask", "PjRT_Client_Connect") or "connect" in what:
        return _fail(
            "triage.config.coordinator_unreachable",
            "This task could not register with the JAX / TensorFlow coordination service: the coordinator's "
            "address or port is wrong, it was not started, or traffic to its port is blocked",
            C.CONFIG,
            72,
            "debugging-guide.md § 7",
        )
    if what:
        return _fail(
            "triage.unknown.coordination_peer_lost",
            "The coordination service lost a task of the job (its heartbeats stopped, or it reported a "
            "fatal error): that task's own log holds the cause",
            C.UNKNOWN,
            46,
            "debugging-guide.md § 7",
        )
    return None


# NVLS set-up failing with CUDA's "not supported": the system does not offer NVLink SHARP (no NVSwitch
# multicast, a driver or VM without it); NCCL_NVLS_ENABLE=0 is the setting. Any other failure
# (`unknown error` 999, `invalid argument`, 401 `cannot be performed in the present state`) is the
# node's NVSwitch fabric, typically a fabric manager restarted without a GPU reset: the node's state.
_NVLS_UNSUPPORTED = ("not supported", "Cuda failure 801", "CUDA error 801")


def _nvls(event: Event) -> Meaning:
    if any(words in event.text for words in _NVLS_UNSUPPORTED):
        return _SIMPLE["nvls"]
    return _fail(
        "triage.gpu.nvls_fabric",
        "NVLink SHARP (NVLS) setup failed on this node: its NVSwitch fabric is in a bad state (the fabric "
        "manager restarted without a GPU reset, or in error); reset the GPUs and fabric manager",
        C.GPU_HARDWARE,
        74,
        "multinode.md § 1",
    )


def _slurm_step_launch(event: Event) -> Meaning:
    if "no_pmi" in event.fields:
        return _fail(
            "triage.config.srun_without_pmi",
            "Open MPI was started by srun without a PMI it supports: launch with srun --mpi=pmix (or pmi2, "
            "whichever srun --mpi=list offers and Open MPI was built with), or with mpirun",
            C.CONFIG,
            78,
            "debugging-guide.md § 16",
        )
    return _fail(
        "triage.config.slurm_step_launch",
        "srun could not launch the step's tasks: the MPI plugin the step asked for (--mpi=pmix, pmi2) or a "
        "container plugin (pyxis, enroot) failed on the node; the allocation itself was granted",
        C.CONFIG,
        70,
        "debugging-guide.md § 16",
    )


def _missing_file(event: Event) -> Meaning:
    if "/.cache/" in event.text:
        return _fail(
            "triage.config.node_local_cache",
            "A file in a per-user cache (~/.cache: Hugging Face datasets, torch extensions) is missing on "
            "this node: another node wrote it to its own local disk; put the cache on storage every node "
            "shares (HF_HOME, HF_DATASETS_CACHE), or prepare it on every node",
            C.CONFIG,
            74,
            "debugging-guide.md § 14",
        )
    return _SIMPLE["missing_file"]


def _nccl_unavailable(event: Event) -> Meaning:
    if event.fields.get("no_gpu") is not None:
        return _fail(
            "triage.config.nccl_without_gpu",
            "The NCCL backend was asked for by a process that sees no GPU (CUDA_VISIBLE_DEVICES empty, a "
            "node or container without GPUs): NCCL needs one GPU per rank",
            C.CONFIG,
            80,
            "debugging-guide.md § 10",
        )
    return _fail(
        "triage.config.nccl_not_built",
        "This PyTorch has no NCCL (Windows and macOS wheels, CPU builds): use the gloo backend there, or a "
        "Linux CUDA build for NCCL",
        C.CONFIG,
        82,
        "debugging-guide.md § 10",
    )


# UCX or UCC failing to set up a transport (`ctx create epilog for mlx5 failed`, `failed to open
# … device`): that rank's collectives cannot run on it, and the ranks that could wait for it.
_UCX_SETUP = re.compile(r"create|init|open|epilog|context|load|tl_", re.IGNORECASE)


def _ucx_error(event: Event) -> Meaning | None:
    failed = event.fields.get("failed")  # a line below ERROR level that says something failed
    said = failed if failed is not None else event.fields.get("message", "")
    setup = "failed" in said and _UCX_SETUP.search(said) is not None
    if failed is not None and not setup:
        return None  # a debug line about something that failed and was retried or is harmless
    if setup:
        return _fail(
            "triage.software.ucx_setup",
            "UCX / UCC could not set up one of its transports on this rank (its log names which): the "
            "ranks that set it up wait for this one; turn that transport off or fix its library",
            C.SOFTWARE,
            62,
            "debugging-guide.md § 3",
        )
    return _fail(
        "triage.network.ucx_error",
        "UCX reported an error in a transfer (the communication library under Open MPI, UCC and some "
        "NCCL plugins)",
        C.NETWORK,
        50,
        "debugging-guide.md § 3",
    )


def _checkpoint_shape(event: Event) -> Meaning:
    if event.fields.get("current", "").strip() == "0":
        return _fail(
            "triage.software.sharded_load",
            "A checkpoint was loaded with a plain load_state_dict into a model whose parameters are "
            "partitioned across ranks (ZeRO-3 or FSDP: shape [0] on each rank): load it through the "
            "framework's own loader, or gather the parameters first",
            C.SOFTWARE,
            74,
            "debugging-guide.md § 18",
        )
    return _fail(
        "triage.config.checkpoint_shape",
        "The checkpoint does not fit the model it is loaded into (another size, vocabulary or parallel "
        "split): the model's configuration or the checkpoint path is not the one it was saved with",
        C.CONFIG,
        70,
        "debugging-guide.md § 18",
    )


_RESUME_LAYOUT = _fail(
    "triage.config.resume_layout_changed",
    "The checkpoint was saved with another parallel layout than this run's (another data-parallel world "
    "size: a different node or GPU count; or other tensor or pipeline parallel sizes): its sharded state "
    "cannot be loaded as it is",
    C.CONFIG,
    78,
    "debugging-guide.md § 18",
)


def _resume_layout(event: Event) -> Meaning:
    """Megatron-LM names the argument that differs: a parallel size is the layout; any other (layers,
    hidden size, vocabulary) is a model configured unlike the checkpoint."""
    arg = event.fields.get("arg")
    if arg is None:
        return _RESUME_LAYOUT
    now, saved = event.fields.get("now", "?"), event.fields.get("saved", "?")
    differs = f"{arg} is {now} in this run and {saved} in the checkpoint"
    if "parallel" in arg or "world" in arg:
        return replace(_RESUME_LAYOUT, title=f"{_RESUME_LAYOUT.title} ({differs})")
    return _fail(
        "triage.config.checkpoint_shape",
        f"The run's arguments do not fit the checkpoint it loads ({differs}): launch with the arguments "
        "the checkpoint was saved with, or load another checkpoint",
        C.CONFIG,
        74,
        "debugging-guide.md § 18",
    )


# DDP compares every rank's parameters before the first step. A count of 0 from a peer is what the
# comparison's all-gather returns when nothing came over the transport (a socket interface or an
# InfiniBand GID the nodes cannot reach each other on), not a model without parameters.
_DDP_MODEL_DIFFERS = _fail(
    "triage.software.ddp_model_differs",
    "The ranks built different models (DDP compares their parameters before the first step): code or "
    "configuration that depends on the rank or the node (a layer added on rank 0, another config file or "
    "checkpoint, another library version)",
    C.SOFTWARE,
    72,
    "debugging-guide.md § 18",
)
_DDP_MODEL_NOTHING_ARRIVED = _fail(
    "triage.config.ddp_model_check_empty",
    "DDP's check of the ranks' models got 0 parameters from a peer: most likely nothing arrived over the "
    "transport (NCCL on an interface or InfiniBand GID the nodes cannot reach each other on, when the two "
    "ranks are on different nodes), rather than a model without parameters",
    C.CONFIG,
    60,
    "multinode.md § 2",
)


def _ddp_model_differs(event: Event) -> Meaning:
    counts = (event.fields.get("count"), event.fields.get("peer_count"))
    return _DDP_MODEL_NOTHING_ARRIVED if "0" in counts else _DDP_MODEL_DIFFERS


def _container_gpu_setup(event: Event) -> Meaning:
    """The NVIDIA container toolkit could not give the container its GPUs: an image asking for a newer
    driver than the node's, or the toolkit against the node's driver and OS."""
    if "unsatisfied condition" in event.fields.get("what", ""):
        return _fail(
            "triage.software.image_needs_newer_driver",
            "The container image needs a newer NVIDIA driver than the node has (nvidia-container-cli: "
            "unsatisfied condition): an image built for a newer CUDA, or a node left on an old driver",
            C.SOFTWARE,
            84,
            "debugging-guide.md § 10",
        )
    return _fail(
        "triage.software.container_toolkit",
        "The NVIDIA container toolkit could not set up the container's GPUs (nvidia-container-cli): its "
        "version against the node's driver and OS, or a node service it mounts from (persistenced)",
        C.SOFTWARE,
        70,
        "debugging-guide.md § 10",
    )


# PyTorch 2.0's launcher passes `--local-rank=N`; scripts written before it declare `--local_rank` (and
# a few written since declare only the new spelling for an old launcher). The old spelling refused is
# mostly a script written for torchrun, taking none, under a launcher that appends one (DeepSpeed's,
# torch.distributed.launch before 2.0).
_LOCAL_RANK_ARGUMENT = re.compile(r"--local(?P<separator>[-_])rank\b")


# `Error while attaching to shared memory segment /dev/shm/nccl-… (size N), error: No such file or
# directory (2)`: the segment a peer on "this host" created is not in this rank's /dev/shm.
_SEGMENT_NOT_FOUND = re.compile(r"attaching to shared memory segment.*(?:No such file or directory|\(2\))")


def _shared_memory(event: Event) -> Meaning:
    if _SEGMENT_NOT_FOUND.search(event.text):
        return _fail(
            "triage.config.shm_not_shared",
            "A rank could not find the shared-memory segment its peer created: ranks NCCL took for one host "
            "do not share /dev/shm (separate containers or pods, one host identity on two machines), or "
            "an NCCL release that mishandles it",
            C.CONFIG,
            72,
            "debugging-guide.md § 17",
        )
    return _SIMPLE["shm_exhausted"]


def _bad_arguments(event: Event) -> Meaning:
    local_rank = _LOCAL_RANK_ARGUMENT.search(event.fields.get("args", ""))
    if local_rank and local_rank["separator"] == "_":
        return _fail(
            "triage.config.local_rank_not_taken",
            "The launcher appended --local_rank (DeepSpeed's launcher, torch.distributed.launch before "
            "PyTorch 2.0) and the script does not take it: a script written for torchrun, which passes none "
            "and sets LOCAL_RANK instead",
            C.CONFIG,
            80,
            "debugging-guide.md § 10",
        )
    if local_rank:
        return _fail(
            "triage.software.local_rank_argument",
            "The launcher passed --local-rank (PyTorch 2.0 and later; --local_rank before) and the script "
            "declares the other spelling: a launcher and a script of different PyTorch generations",
            C.SOFTWARE,
            82,
            "debugging-guide.md § 10",
        )
    return _SIMPLE["bad_arguments"]


# vLLM's, SGLang's and TensorRT-LLM's own all-reduce kernel writes straight into the peer GPUs'
# memory: on GPUs without peer access (consumer cards, PCIe through the host bridge) the framework
# should have left it off; NCCL would have worked.
_CUSTOM_ALL_REDUCE = ("custom_all_reduce", "CustomAllreduce", "custom_ar", "customAllReduce")


def _peer_access(event: Event) -> Meaning:
    if "shm.cc" in event.text:
        return _fail(
            "triage.software.nccl_shm_peer_access",
            "NCCL's shared-memory transport asked for GPU peer access these GPUs lack (NCCL 2.27's cuMem "
            "host memory on GPUs without P2P, such as L4 or T4): NCCL_CUMEM_HOST_ENABLE=0, or an NCCL "
            "release with the fix",
            C.SOFTWARE,
            78,
            "debugging-guide.md § 19",
        )
    if any(words in event.text for words in _TOO_MANY_PEERS):
        return _fail(
            "triage.config.too_many_peers",
            "One process enabled peer access to more GPUs than CUDA allows (8 peers per GPU): a process "
            "driving more than 8 GPUs (TensorFlow's MirroredStrategy, a single-process DataParallel); run "
            "one process per GPU, or at most 8 GPUs per process",
            C.CONFIG,
            76,
            "debugging-guide.md § 19",
        )
    if any(name in event.text for name in _CUSTOM_ALL_REDUCE):
        return _fail(
            "triage.software.custom_all_reduce_p2p",
            "The inference framework's own all-reduce kernel (vLLM, SGLang, TensorRT-LLM) needs GPU peer "
            "access these GPUs lack: turn it off (--disable-custom-all-reduce); NCCL works",
            C.SOFTWARE,
            78,
            "debugging-guide.md § 19",
        )
    return _SIMPLE["p2p_unsupported"]


# CUDA's `operation not supported` inside NCCL: the platform does not offer a feature this NCCL release
# uses at start (memory pools and cuMem, multicast). NVLS's own case is read by `_nvls`.
_CUDA_FEATURE_UNSUPPORTED = _fail(
    "triage.config.cuda_feature_unsupported",
    "NCCL asked CUDA for a feature this platform does not offer (`operation not supported`): a virtual GPU "
    "without unified memory (vGPU with UVM off), WSL, MIG, or a driver older than the memory features "
    "this NCCL release uses",
    C.CONFIG,
    66,
    "debugging-guide.md § 19",
)


# The runtime's `initialization error` (cudaErrorInitializationError): the driver would not start for
# this process. Its environment is the usual cause: no GPU visible to it (CUDA_VISIBLE_DEVICES, a
# container without the devices, a launcher that did not pass the variables on to remote workers), or
# CUDA first used in a parent that then forked. The driver API's `CUDA_ERROR_NOT_INITIALIZED` is not
# this: it means the library called the driver before cuInit, its own bug.
_CUDA_INIT_FAILED = _fail(
    "triage.config.cuda_init",
    "CUDA could not start in this process (`initialization error`): it sees no usable GPU (its "
    "CUDA_VISIBLE_DEVICES, a container without the devices, an environment the launcher did not pass on) "
    "or CUDA was used before the process forked",
    C.CONFIG,
    66,
    "debugging-guide.md § 20",
)


# A versioned name the loader cannot find (`libcudart.so.11.0`): something was built against a release
# of that library the environment does not have.
_VERSIONED_LIBRARY = re.compile(r"\.so\.\d")
_LIBRARY_VERSION_NOT_FOUND = _fail(
    "triage.software.library_version_not_found",
    "A library asks for a release of a shared library that is not here (`libcudart.so.11.0: cannot open "
    "shared object file`): a build made for another CUDA or library release than the one installed",
    C.SOFTWARE,
    62,
    "debugging-guide.md § 10",
)


def _library_not_found(event: Event) -> Meaning:
    """A module under torch's extensions root that is not there is the on-the-fly build's output: the
    build failed, whatever the environment. A versioned name is a build for another release; an
    unversioned one, a library not installed or not on the loader's path."""
    if "torch_extensions" in event.text:
        return _SIMPLE["extension_build"]
    if _VERSIONED_LIBRARY.search(event.fields.get("library", "")):
        return _LIBRARY_VERSION_NOT_FOUND
    return _SIMPLE["library_not_found"]


def _cuda_error(event: Event) -> Meaning:
    what = event.fields.get("what", "")
    if "operation not supported" in what and "NCCL" in event.text:
        return _CUDA_FEATURE_UNSUPPORTED
    if any(text in what for text in _PEER_ACCESS + _TOO_MANY_PEERS):
        return _peer_access(event)
    if "initialization error" in what or "InitializationError" in what:
        return _CUDA_INIT_FAILED
    if any(text in what for text in _MISMATCHED_BUILDS):
        return _fail(
            "triage.software.cuda_build_mismatch",
            "A CUDA call failed in a way that points at mismatched builds (GPU, driver, CUDA, NCCL and "
            "PyTorch versions)",
            C.SOFTWARE,
            64,
            "debugging-guide.md § 10",
        )
    return _SIMPLE["cuda_error"]


def _gds_unusable(event: Event) -> Meaning:
    """The nvidia-fs kernel module failing I/O is its release (a DKMS package that broke); cuFile's own
    refusals are the set-up: the filesystem or its mount options, a container without the host's
    /run/udev, GDS not configured."""
    if event.fields.get("module"):
        return _fail(
            "triage.software.gds_module",
            "The nvidia-fs kernel module (GPUDirect Storage) failed I/O on a filesystem GDS supports: its "
            "release against the kernel and driver (a DKMS package that regressed)",
            C.SOFTWARE,
            70,
            "debugging-guide.md § 14",
        )
    return _fail(
        "triage.config.gds_setup",
        "GPUDirect Storage could not be used (cuFile refused the file or the driver): the filesystem or its "
        "mount options (ext4 needs data=ordered), a container without the host's /run/udev, or GDS not "
        "set up; compatibility mode reads through the host instead",
        C.CONFIG,
        70,
        "debugging-guide.md § 14",
    )


def _pcie_fatal(event: Event) -> Meaning:
    """A fatal PCIe error the kernel could not recover from: the device's link (slot, riser, cable) or
    the device. A NIC's is the network's hardware; a GPU's, or a port's whose device the lines do not
    name, the GPU's."""
    if event.fields.get("device") in ("mlx5_core", "efa", "ena"):
        return _fail(
            "triage.network.nic_pcie_fatal",
            "A fatal (uncorrected) PCIe error on a NIC's link that the kernel could not recover from: the "
            "slot, riser or the NIC itself; the node needs a hardware check",
            C.NETWORK,
            90,
            "debugging-guide.md § 5",
        )
    return _fail(
        "triage.gpu.pcie_fatal",
        "A fatal (uncorrected) PCIe error on a GPU's link that the kernel could not recover from (a "
        "completion timeout, a surprise link down): the slot, riser, cable or the GPU itself; the node "
        "needs a hardware check",
        C.GPU_HARDWARE,
        92,
        "debugging-guide.md § 5",
    )


def _foreign_connection(event: Event) -> Meaning:
    """The word NCCL read instead of its magic, as the bytes a peer sent (little-endian): printable text
    is another protocol (`GET /met`: an HTTP request, a metrics scraper or health probe)."""
    got = event.fields.get("got", "")
    sent = bytes.fromhex(got.zfill(16))[::-1].rstrip(b"\0") if len(got) % 2 == 0 else b""
    if len(sent) >= 4 and all(32 <= byte < 127 for byte in sent):
        who = f"an outside program (the bytes read `{sent.decode()}`: a scraper, health probe or scanner)"
    else:
        who = "an outside program (a port scanner) or a peer's NCCL of another release"
    return _warn(  # a suspect for a hang that follows it, not a failure by itself
        "triage.software.foreign_connection",
        f"Something other than this job's NCCL connected to NCCL's listening socket (`wrong magic`): {who}; "
        "NCCL releases that retry such a connection can hang on it",
        C.SOFTWARE,
        60,
        "debugging-guide.md § 10",
    )


def _socket_connect(event: Event) -> Meaning:
    """Refused: nothing listened at the peer's address (it had died, or not started): a peer's
    failure as this rank sees it. Unreachable or timed out: the address NCCL chose for the peer does
    not route between the nodes (the wrong interface, or a firewall)."""
    why = event.fields.get("why") or event.fields.get("plain") or event.fields.get("retries") or ""
    if "refused" in why or why == "exceeded retries":  # NCCL retries refused connections, then gives up
        return _SIMPLE["remote_exit"]
    return _fail(
        "triage.config.socket_connect",
        "NCCL could not connect to a peer's address (the interface it chose does not route between the "
        "nodes — NCCL_SOCKET_IFNAME — or a firewall drops the traffic)",
        C.CONFIG,
        68,
        "multinode.md § 2",
    )


def _pod_failed(event: Event) -> Meaning | None:
    """A `kubectl get pods` row: a container the kubelet could not create from the pod's spec is the
    spec's (a Secret or ConfigMap it names is missing, runAsNonRoot with an image that runs as root);
    any other failed container's own log holds its cause (the unknown rule quotes the row)."""
    if event.fields.get("status") != "CreateContainerConfigError":
        return None
    return _fail(
        "triage.config.container_config",
        "The kubelet could not create a container from its pod's spec (CreateContainerConfigError): a Secret "
        "or ConfigMap the spec names is missing, or runAsNonRoot is set for an image that runs as root",
        C.CONFIG,
        76,
        "debugging-guide.md § 9",
    )


def _address_unavailable(event: Event) -> Meaning:
    """errno 99 (EADDRNOTAVAIL) means one thing on a bind and another on a connect."""
    if event.fields.get("op") == "connect":
        title = (
            "A connection found no local address or port to use (`Cannot assign requested address` on a "
            "connect): the node ran out of ephemeral ports (many short-lived connections left in TIME_WAIT), "
            "or the source address chosen is not usable here"
        )
    elif event.fields.get("op"):
        title = (
            "A process was told to bind or listen on an address that is not one of its node's "
            "(`Cannot assign requested address`, errno 99): MASTER_ADDR, a server IP in a config file or a "
            "--host argument names another machine, or the interface had no address yet"
        )
    else:
        title = (
            "A socket could not use its address (`Cannot assign requested address`, errno 99): on a bind, "
            "the IP is not one of this node's (MASTER_ADDR, a server IP in a config file or a --host naming "
            "another machine); on a connect, the node ran out of local ports"
        )
    return _fail("triage.config.address_unavailable", title, C.CONFIG, 80, "debugging-guide.md § 8")


def _async_error(event: Event) -> Meaning | None:
    """`Collective WorkNCCL(...) raised the following async exception: NCCL error: …`: what failed."""
    if "remote process exited" in event.fields.get("what", ""):
        return _SIMPLE["remote_exit"]
    return None


# EFA completion statuses that say the receiver's queue pair is gone: libfabric itself adds "typically
# caused by a crashed peer". The process at the other end died; the link did not.
_PEER_GONE = re.compile(r"Invalid receiver queue pair number|Receiver connection aborted")
PEER_CRASHED = _fail(
    "triage.network.peer_crashed",
    "The peer's EFA queue pair is gone (invalid receiver QPN / receiver connection aborted): the process at "
    "the other end crashed or was killed there (a crash, an OOM kill), the link is not the cause",
    C.UNKNOWN,
    48,
    "debugging-guide.md § 3",
)


def _transport_error(event: Event) -> Meaning:
    return PEER_CRASHED if _PEER_GONE.search(event.text) else _SIMPLE["transport_error"]


_CONNECTION_REFUSED = "111"


def _store_connect(event: Event) -> Meaning:
    if event.fields.get("errno") == _CONNECTION_REFUSED:
        return _SIMPLE["rendezvous"]  # the store's host answered, nothing listened: it was not up yet
    return _fail(
        "triage.config.store_unreachable",
        "The c10d store's address could not be reached (MASTER_ADDR / MASTER_PORT wrong, or traffic blocked)",
        C.CONFIG,
        72,
        "debugging-guide.md § 12",
    )


def _store_barrier(event: Event) -> Meaning:
    """Fewer workers than the world size reached the barrier: some never started or never got there.
    More than the world size: the same store key was joined twice over — another job on the same
    MASTER_PORT or init file, or the process group initialised more than once."""
    if int(event.fields.get("joined", "0")) > int(event.fields.get("expected", "0")):
        return _fail(
            "triage.config.store_shared",
            "More workers than the world size joined the store-based barrier: another job uses the same "
            "MASTER_PORT / init file, or the process group was initialised more than once",
            C.CONFIG,
            74,
            "debugging-guide.md § 7",
        )
    return _SIMPLE["rendezvous"]


# A crash line that names no signal in words may give its number: `Signal: 11`, `Caught signal 7`.
_SIGNAL_NUMBER = re.compile(r"[Ss]ignal:? (\d+)\b")


def _crash(event: Event) -> Meaning | None:
    """What the signal the crash pattern named (or numbered) means: a segfault, an illegal
    instruction, a bus error (a process's own `Bus error (core dumped)` banner, the fault a launcher
    reports as exit code -7) or a library's fatal check; an abort with none of these is generic."""
    signal = event.fields.get("signal")
    if signal is None and (number := _SIGNAL_NUMBER.search(event.text)):
        signal = _SIGNAL_NAMES.get(number.group(1))
    return _CRASH_MEANINGS.get(signal or "")


def _xid(event: Event) -> Meaning:
    code = int(event.fields.get("code", "0"))
    what, hardware = XID_MEANINGS.get(code, ("driver-reported GPU error", True))
    title = f"Xid {code}: {what}"
    if code == 45:
        return _consequence("triage.gpu.xid_45", title, "debugging-guide.md § 5")
    if hardware:
        weight = 100 if code in (48, 64, 74, 79, 95, 119, 120) else 92
        return _fail(f"triage.gpu.xid_{code}", title, C.GPU_HARDWARE, weight, "debugging-guide.md § 5")
    return _warn(f"triage.gpu.xid_{code}", title, C.SOFTWARE, 45, "debugging-guide.md § 20")


def _sxid(event: Event) -> Meaning:
    title = f"NVSwitch SXid {event.fields.get('code')} ({event.fields.get('severity')})"
    if event.fields.get("severity") == "Fatal":
        return _fail("triage.gpu.sxid", title, C.GPU_HARDWARE, 99, "debugging-guide.md § 5")
    return _consequence("triage.gpu.sxid_nonfatal", title, "debugging-guide.md § 5")


_SIGNALLED = 128  # shells and container runtimes report signal N as status 128 + N
_LAST_SIGNAL = 64


def exit_code(event: Event) -> int | None:
    """The exit code, negative for the signal that ended the process (as Python reports it)."""
    fields = event.fields
    for name in ("code", "block_code"):
        if fields.get(name, "").lstrip("-").isdigit():
            return int(fields[name])
    status = fields.get("status_code", "")
    if status.lstrip("-").isdigit():
        value = int(status)
        return -(value - _SIGNALLED) if _SIGNALLED < value <= _SIGNALLED + _LAST_SIGNAL else value
    if fields.get("signal", "").isdigit():
        return -int(fields["signal"])
    if fields.get("signal_name") in _SIGNAL_NUMBERS:
        return -_SIGNAL_NUMBERS[fields["signal_name"]]
    return None


_SIGNAL_NUMBERS = {"SIGILL": 4, "SIGABRT": 6, "SIGBUS": 7, "SIGKILL": 9, "SIGSEGV": 11, "SIGTERM": 15}
_SIGNAL_NAMES = {str(number): name for name, number in _SIGNAL_NUMBERS.items()}


def _monitored_barrier(event: Event) -> Meaning:
    return _BARRIER_PEER_FAILED if "peer" in event.fields else _BARRIER_MISSED


_BARRIER_MISSED = _fail(
    "triage.nccl.barrier_missed",
    "Ranks never reached the monitored barrier while the others waited (stuck outside the collective, "
    "or dead): their own logs say where",
    C.DATA_LOADING_STALL,
    58,
    "debugging-guide.md § 1",
)
_BARRIER_PEER_FAILED = _fail(
    "triage.nccl.barrier_peer_failed",
    "A rank's connection failed at the monitored barrier: the rank it names exited or failed first",
    C.UNKNOWN,
    56,
    "debugging-guide.md § 1",
)


def _worker_exit(event: Event) -> Meaning:
    code = exit_code(event)
    if code == -9:
        return _SIGKILL
    if code == -11:
        return _SEGFAULT
    if code == _SIGILL:
        return _ILLEGAL_INSTRUCTION
    if code == _SIGBUS:
        return _BUS_ERROR
    return _WORKER_EXIT


def _srun_task(event: Event) -> Meaning:
    status = event.fields.get("status", "")
    if "Out Of Memory" in status:
        return _SLURM_OOM
    if status.startswith("Killed"):
        return _SIGKILL
    if status.startswith("Segmentation fault"):
        return _SEGFAULT
    # a task killed by SIGILL, as srun says it or as the shell that ran it reported it (128 + 4)
    shell_status = f"Exited with exit code {_SIGNALLED - _SIGILL}"
    if status.startswith("Illegal instruction") or status.rstrip() == shell_status:
        return _ILLEGAL_INSTRUCTION
    return _WORKER_EXIT


def _slurm_cancel(event: Event) -> Meaning:
    reason = (event.fields.get("reason") or "").strip().upper()
    ref = "debugging-guide.md § 16"
    if reason.startswith("TIME LIMIT"):
        return _fail(
            "triage.infra.time_limit", "Slurm cancelled the job: time limit", C.INFRASTRUCTURE, 30, ref
        )
    if reason.startswith("PREEMPTION"):
        return _fail("triage.infra.preempted", "Slurm preempted the job", C.INFRASTRUCTURE, 85, ref)
    if reason.startswith("NODE FAILURE"):
        return _fail(
            "triage.infra.node_failure", "Slurm cancelled the job: node failure", C.INFRASTRUCTURE, 86, ref
        )
    if reason.startswith("JOB REQUEUE"):
        return _fail("triage.infra.requeue", "Slurm requeued the job", C.INFRASTRUCTURE, 60, ref)
    if reason.startswith("TASK FAILURE"):
        return _consequence(
            "triage.consequence.task_failure", "Slurm ended the step after a task failed", ref
        )
    return _fail(
        "triage.infra.cancelled", "The job was cancelled (scancel or signal)", C.INFRASTRUCTURE, 25, ref
    )


def _exception(event: Event) -> Meaning | None:
    name = event.fields.get("cls", "").rsplit(".", 1)[-1]
    what = event.fields.get("what", "")
    if name in _CONSEQUENCE_CLASSES or _CONSEQUENCE_WORDS.search(what) or _CONSEQUENCE_WORDS.search(name):
        return None
    if "OutOfMemory" in name:
        return _SIMPLE["cuda_oom"]
    if name == "MisconfigurationException":
        return _TRAINER_MISCONFIGURED
    return _EXCEPTION


# Lightning refusing the Trainer's arguments (`You requested gpu: [1] But your machine only has: [0]`,
# a strategy or precision this machine or version cannot run): settings that do not fit.
_TRAINER_MISCONFIGURED = _fail(
    "triage.config.trainer_misconfigured",
    "Lightning refused the Trainer's configuration (MisconfigurationException): devices, strategy or "
    "precision settings that do not fit this machine or each other",
    C.CONFIG,
    74,
    "debugging-guide.md § 15",
)


_DATA_CLASSES = (
    "ReadError",
    "UnpicklingError",
    "UnidentifiedImageError",
    "DecodeError",
    "JSONDecodeError",
    "BadZipFile",
)


def _dataloader_caught(event: Event) -> Meaning | None:
    """`Caught OSError in DataLoader worker process 2.`: the wrapped class says what failed."""
    name = event.fields.get("cls", "")
    if name in ("OSError", "IOError"):
        return _SIMPLE["io_error"]
    if name.endswith(_DATA_CLASSES):
        return _SIMPLE["data_error"]
    return _exception(Event("exception", event.source, event.line, event.text, fields={"cls": name}))


_NCCL_RESULT_NAMES = {
    "unhandledcudaerror": "unhandled cuda error",
    "systemerror": "unhandled system error",
    "internalerror": "internal error",
    "invalidargument": "invalid argument",
    "invalidusage": "invalid usage",
}


def nccl_result(event: Event) -> str:
    """The ncclGetErrorString text a line carries, from the text itself or from the result's name
    (`ncclSystemError`, `NCCL_ERROR_UNHANDLED_CUDA_ERROR`)."""
    name = event.fields.get("name")
    if name:
        return _NCCL_RESULT_NAMES.get(name.replace("_", "").lower(), "")
    return event.fields.get("what", "").strip().lower()


# Gloo's connections failing after it warned that this host's name resolves to no address of its own
# (`Unable to resolve hostname to a (local) address. Using the loopback address as fallback`): the
# other nodes were told 127.0.0.1. Harmless on one machine, which is why the warning alone is no finding.
GLOO_LOOPBACK = _fail(
    "triage.config.gloo_loopback",
    "Gloo's connections failed after it fell back to the loopback address (127.0.0.1): this host's name "
    "resolves to no address of its own (hostNetwork pods, an /etc/hosts without it), so no other node could "
    "reach it; name the interface the nodes share (GLOO_SOCKET_IFNAME) or make the hostname resolve",
    C.CONFIG,
    80,
    "multinode.md § 2",
)
# NCCL's duplicate-GPU refusal where the launcher's own banner gave several processes one device
# (accelerate's `Device: cuda:0` for every process): the launch, not the training code.
ONE_DEVICE_FOR_ALL = _fail(
    "triage.config.one_device_for_all",
    "The launcher gave several processes one GPU (its banner names the same device for each), so NCCL "
    "refused two ranks on one device: more processes than the node's GPUs (num_processes, "
    "nproc_per_node), or one CUDA_VISIBLE_DEVICES for every process",
    C.CONFIG,
    86,
    "debugging-guide.md § 2",
)
# ncclInvalidUsage with no WARN saying why: most often two ranks of one communicator on one GPU
# (more ranks per node than GPUs, CUDA_VISIBLE_DEVICES, set_device(RANK) for LOCAL_RANK), which
# NCCL ≥ 2.7 refuses; otherwise a rank or world size the ranks disagree on, or builds that do not fit.
# Public threads settle it in the code or the builds more often than in the launch: software.
_NCCL_INVALID_USAGE = _fail(
    "triage.software.nccl_invalid_usage",
    "NCCL rejected a call (invalid usage / argument): most often two ranks on one GPU (more ranks per "
    "node than GPUs, CUDA_VISIBLE_DEVICES, set_device(RANK) where LOCAL_RANK belongs) or ranks that "
    "disagree on the world size; rerun with NCCL_DEBUG=WARN to see which",
    C.SOFTWARE,
    50,
    "debugging-guide.md § 2",
)
# ncclUnhandledCudaError: a CUDA call inside NCCL failed. Without a GPU fault beside it (an Xid, ECC
# or out-of-memory line outweighs it), that is builds that do not fit the GPU or the driver: an old
# PyTorch/NCCL on a newer GPU, a CUDA runtime newer than the driver.
_NCCL_CUDA_CALL = _fail(
    "triage.software.nccl_cuda_call",
    "A CUDA call inside NCCL failed (unhandled cuda error): usually CUDA, driver and NCCL/PyTorch builds "
    "that do not fit the GPU or each other",
    C.SOFTWARE,
    45,
    "debugging-guide.md § 10",
)


# `unknown result code`: ncclGetErrorString's text for a number it has no name for. The program was
# built against one NCCL and runs with another (a result a newer NCCL added, read by an older one:
# PyTorch's bundled NCCL shadowing the one TensorRT-LLM or a plugin was built with), or it handed
# NCCL's string function a code that never came from NCCL.
_NCCL_UNKNOWN_RESULT = _fail(
    "triage.software.nccl_unknown_result",
    "NCCL returned a result the library printing it has no name for (`unknown result code`): the program "
    "was built against one NCCL and loaded another",
    C.SOFTWARE,
    55,
    "debugging-guide.md § 10",
)
# ncclSystemError: a system call inside NCCL failed. Its WARN line (a failed socket call, an shm
# segment it could not extend) outweighs this; alone, the usual reason is a container's shared
# memory (Docker's 64 MB /dev/shm, no host IPC), which NCCL's intra-node transport needs.
_NCCL_SYSTEM_CALL = _fail(
    "triage.config.nccl_system_call",
    "A system call inside NCCL failed (unhandled system error): most often too little shared memory "
    "in the container (/dev/shm, host IPC); rerun with NCCL_DEBUG=WARN to see which call",
    C.CONFIG,
    40,
    "debugging-guide.md § 17",
)


def _nccl_error(event: Event) -> Meaning:
    return _nccl_result_meaning(nccl_result(event))


def _nccl_result_meaning(what: str) -> Meaning:
    """What an NCCL result says, by ncclGetErrorString's text."""
    if what.startswith(("invalid usage", "invalid argument")):
        return _NCCL_INVALID_USAGE
    if what.startswith("unhandled cuda error"):
        return _NCCL_CUDA_CALL
    if what.startswith("unhandled system error"):
        return _NCCL_SYSTEM_CALL
    if what.startswith("unknown result code"):
        return _NCCL_UNKNOWN_RESULT
    return NCCL_RAISED


# ncclResult_t's values, as NCCL's return trace prints them.
_NCCL_RESULT_CODES = {
    "1": "unhandled cuda error",
    "2": "unhandled system error",
    "3": "internal error",
    "4": "invalid argument",
    "5": "invalid usage",
}
_REMOTE_ERROR = "6"
_ECHO_WEIGHT = 20
# A system error whose trace starts in NCCL's socket code on the way to its bootstrap: the out-of-band
# TCP connections every rank makes at start, over the interface NCCL_SOCKET_IFNAME names.
_BOOTSTRAP_SOCKET = _fail(
    "triage.config.bootstrap_socket",
    "NCCL's bootstrap failed in its socket code (a system error returned through bootstrap.cc): the "
    "socket interface NCCL chose does not reach the other ranks (NCCL_SOCKET_IFNAME: an InfiniBand or "
    "container interface, a name some hosts lack), or a firewall drops the traffic",
    C.CONFIG,
    44,
    "multinode.md § 2",
)


def _nccl_return(event: Event) -> Meaning | None:
    """The deepest line of NCCL's return trace: what the failed call returned, and where. Weighed
    below every line that says why (a WARN before the trace), which it only echoes. A remote error
    means nothing more than that the other end went away: the never-silent fallback names it."""
    code, where = event.fields.get("code", ""), event.fields.get("where", "")
    if code == _REMOTE_ERROR:
        return None
    if code == "2" and where.rsplit("/", 1)[-1] in ("socket.cc", "bootstrap.cc"):
        meaning = _BOOTSTRAP_SOCKET
    else:
        meaning = _nccl_result_meaning(_NCCL_RESULT_CODES[code])
    return replace(meaning, weight=min(meaning.weight, _ECHO_WEIGHT))


def cuda_oom_figures(event: Event) -> str:
    """`tried 6.37 GiB on GPU 0 (79.11 GiB total, 2.93 GiB free; this process 76.17 GiB)`."""
    f = event.fields
    parts = [f"tried to allocate {f['tried']}"] if "tried" in f else []
    if "gpu" in f:
        parts.append(f"on GPU {f['gpu']}")
    capacity = [f"{f['total']} total"] if "total" in f else []
    capacity += [f"{f['free']} free"] if "free" in f else []
    capacity += [f"this process uses {f['in_use']}"] if "in_use" in f else []
    capacity += [f"{f['by_pytorch']} allocated by PyTorch"] if "by_pytorch" in f else []
    text = " ".join(parts)
    return f"{text} ({', '.join(capacity)})" if capacity else text


# Kinds whose meaning depends on what the line says (defined last: the readers are above).
_SPECIAL: dict[str, Callable[[Event], Meaning | None]] = {
    "xid": _xid,
    "sxid": _sxid,
    "worker_exit": _worker_exit,
    "monitored_barrier": _monitored_barrier,
    "srun_task": _srun_task,
    "slurm_cancel": _slurm_cancel,
    "exception": _exception,
    "nccl_error": _nccl_error,
    "nccl_failure": _nccl_error,
    "nccl_return": _nccl_return,
    "slurm_step_launch": _slurm_step_launch,
    "missing_file": _missing_file,
    "dataloader_caught": _dataloader_caught,
    "nccl_aborted": lambda _: NCCL_RAISED,
    "ib_completion": _ib_completion,
    "store_connect": _store_connect,
    "memreg": _memory_registration,
    "shell_killed": lambda _: _SIGKILL,
    "socket_connect": _socket_connect,
    "address_unavailable": _address_unavailable,
    "pod_failed": _pod_failed,
    "transport_error": _transport_error,
    "async_error": _async_error,
    "cuda_error": _cuda_error,
    "library_not_found": _library_not_found,
    "ib_setup": _ib_setup,
    "crash": _crash,
    "store_barrier": _store_barrier,
    "bad_arguments": _bad_arguments,
    "coordination": _coordination,
    "nvls": _nvls,
    "nccl_unavailable": _nccl_unavailable,
    "ucx_error": _ucx_error,
    "container_gpu_setup": _container_gpu_setup,
    "checkpoint_shape": _checkpoint_shape,
    "resume_layout": _resume_layout,
    "ddp_model_differs": _ddp_model_differs,
    "shm_exhausted": _shared_memory,
    "p2p_unsupported": _peer_access,
    "foreign_connection": _foreign_connection,
    "gds_unusable": _gds_unusable,
    "pcie_fatal": _pcie_fatal,
}
