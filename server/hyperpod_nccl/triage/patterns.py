"""The line catalogue: what to look for, as literal anchors plus a regex that parses the match.

Formats come from shared/log-formats.md (PyTorch 2.1 → current, NCCL 2.18 → 2.30, aws-ofi-nccl,
libfabric, torchrun, Slurm, Kubernetes, the NVIDIA driver, the kernel). Nothing anchors on a
source line number. Each pattern names literal anchors: a line is only parsed when one of them
occurs in it, and the prefilter (`prefilter.build_hit_finder`) finds anchors for whole chunks at once, so
the vast majority of lines (training progress, NCCL INFO chatter) never reach Python code.

Event patterns are tried in order and the first match names the line; fact patterns (versions,
topology, providers) are all applied, because one line can carry several facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from hyperpod_nccl.triage.lines import HitFinder
from hyperpod_nccl.triage.prefilter import SOME_LITERAL, build_hit_finder, hyperscan_matcher

# The words a crash line names its signal with, and the signal each means.
CRASH_SIGNALS = (
    ("segmentation fault", "SIGSEGV"),
    ("segfault at", "SIGSEGV"),
    ("sigsegv", "SIGSEGV"),
    ("illegal instruction", "SIGILL"),
    ("sigill", "SIGILL"),
    ("trap invalid opcode", "SIGILL"),
    ("bus error", "SIGBUS"),
    ("sigbus", "SIGBUS"),
    ("check failed", "CHECK"),
    ("check failure", "CHECK"),
    # glibc's heap checks aborting the process (`free(): corrupted unsorted chunks`)
    ("double free or corruption", "HEAP"),
    ("free(): ", "HEAP"),
    ("malloc(): ", "HEAP"),
    ("munmap_chunk()", "HEAP"),
    ("corrupted size vs", "HEAP"),
    ("corrupted double-linked list", "HEAP"),
)


@dataclass(frozen=True)
class Pattern:
    kind: str
    anchors: tuple[str, ...]
    expression: str | None = None  # compiled on first use: most patterns never meet a line of theirs
    key: str = ""  # a regex group whose value separates events of one kind on one rank
    # The regex reads the message lower-cased: a case-blind search written as `(?i)` makes the
    # regex engine try every position, while a lower-case literal lets it jump. Its groups come
    # out lower-cased too, so only patterns whose groups are digits use it.
    lowered: bool = False
    # The regex can only match a message holding one of these words: substring tests that fail
    # cost a fraction of a search that fails (used where a regex scans the whole line for them).
    needs_any: tuple[str, ...] = ()
    # Words the key's group may hold, each with the one name its events fold under (lower-cased).
    key_names: tuple[tuple[str, str], ...] = ()

    @cached_property
    def regex(self) -> re.Pattern[str] | None:
        return re.compile(self.expression) if self.expression else None

    def match(self, message: str) -> dict[str, str] | None:
        if not any(anchor in message for anchor in self.anchors):
            return None
        return self.parse(message)

    def parse(self, message: str) -> dict[str, str] | None:
        """`match` for a message known to hold one of the anchors (the dispatcher found it there)."""
        if self.regex is None:
            return {}
        if self.needs_any and not any(word in message for word in self.needs_any):
            return None
        found = self.regex.search(message.lower() if self.lowered else message)
        if found is None:
            return None
        fields = {name: value for name, value in found.groupdict().items() if value is not None}
        if self.key_names and self.key in fields:
            fields[self.key] = dict(self.key_names).get(fields[self.key].lower(), fields[self.key])
        return fields


def _p(
    kind: str,
    anchors: str | tuple[str, ...],
    regex: str | None = None,
    key: str = "",
    lowered: bool = False,
    needs_any: tuple[str, ...] = (),
    key_names: tuple[tuple[str, str], ...] = (),
) -> Pattern:
    anchor_tuple = (anchors,) if isinstance(anchors, str) else anchors
    return Pattern(kind, anchor_tuple, regex, key, lowered, needs_any, key_names)


_PG = r"(?:\[PG (?:ID )?(?P<pg>\d+)[^\]]{0,200}Rank \d+\]\s*)?"
_ENQ_COMP = (
    r"last enqueued (?:NCCL )?work: (?P<enqueued>-?\d+), last completed (?:NCCL )?work: (?P<completed>-?\d+)"
)
_SIZE = r"[\d.]+ ?[KMGT]?i?B|\d+ bytes"
# PyTorch before 1.5 reported CUDA errors its own way: `THCudaCheck FAIL file=…/THCStorage.cu line=58
# error=2 : out of memory`, then `RuntimeError: cuda runtime error (2) : out of memory at …:58`.
_OLD_CUDA_CHECKS = ("THCudaCheck FAIL", "cuda runtime error (")

NCCL_STATE = (
    # torch.distributed.monitored_barrier (Gloo; TORCH_DISTRIBUTED_DEBUG=DETAIL runs one at init):
    # rank 0 names the ranks that never arrived, or a rank names the peer whose send/recv failed.
    _p(
        "monitored_barrier",
        ("failed to pass monitoredBarrier", "received errors while waiting for send/recv from rank"),
        r"Ranks? (?P<late>\d+(?:, ?\d+)*) failed to pass monitoredBarrier"
        r"|waiting for send/recv from rank (?P<peer>\d+)",
    ),
    _p(
        "wd_timeout",
        "Watchdog caught collective operation timeout",
        # The WorkNCCL(...) part may sit on the next line (a wrapped or abbreviated paste).
        r"^(?:.*?WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?OpType=(?P<op>\w+)"
        r"(?:, NumelIn=(?P<numel_in>-?\d+))?(?:, NumelOut=(?P<numel_out>-?\d+))?, "
        r"Timeout\(ms\)=(?P<timeout_ms>\d+)\) ran for (?P<ran_ms>\d+))?",
    ),
    _p(
        "wd_frame",
        ("WorkNCCL::checkTimeout", "raised from ncclCommWatchdog", "raised from checkTimeout"),
    ),
    _p(
        "wd_status",
        "PG status: last enqueued",
        _PG + r"failure detected by watchdog at work "
        r"sequence id: (?P<seq>\d+) PG status: " + _ENQ_COMP,
    ),
    _p(
        "wd_status",
        "Exception (either an error or timeout)",
        _PG + r"Exception \(either an error or timeout\) "
        r"detected by watchdog at work: (?P<seq>\d+), " + _ENQ_COMP,
    ),
    _p("wd_status", "Timeout at NCCL work", _PG + r"Timeout at NCCL work: (?P<seq>\d+), " + _ENQ_COMP),
    _p("dump_first", "First PG on this rank to signal dumping", _PG + "First PG"),
    _p("dump_observed", "Observed flight recorder dump signal", _PG + "Observed"),
    _p(
        "dump_received",
        "Received a dump signal",
        _PG + r"Received a dump signal due to a collective timeout from"
        r"\s+(?:this local rank|rank (?P<origin>\d+)).*?Last enqueued NCCL work: (?P<enqueued>-?\d+), "
        r"last completed NCCL work: (?P<completed>-?\d+)",
    ),
    _p(
        "work_update",
        "NCCL Work update periodically",
        _PG
        + r"NCCL Work update periodically: "
        + _ENQ_COMP.replace("last enqueued (?:NCCL )?work", "last enqueued NCCL work"),
    ),
    _p("heartbeat", ("ProcessGroupNCCL's watchdog got stuck", "Heartbeat monitor timed out")),
    # PyTorch ≥ 2.0 prints it on a line of its own; 1.x ended the `Some NCCL operations have failed`
    # line with `To avoid this inconsistency, we are taking the entire process down.`
    # ...and the heartbeat monitor's own (`Terminating the process after attempting to dump debug info,
    # due to ProcessGroupNCCL watchdog hang.`)
    _p(
        "take_down",
        ("To avoid data inconsistency", "taking the entire process down", "Terminating the process after"),
    ),
    _p(
        "async_error",
        "WorkNCCL(",
        r"SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+).*raised the following async exception: (?P<what>.*)",
    ),
)

# Ranks that issued different collectives, as PyTorch and NCCL report it themselves.
COLLECTIVES = (
    _p(
        "pg_mismatch",
        "Detected mismatch between collectives",
        r"Detected mismatch between collectives on ranks\.?\s*(?P<what>.*)",
        key="what",
    ),
    _p("nccl_mismatch", "Mismatched collective detected", r"^(?:.*?around rank (?P<around>\d+))?"),
    _p(
        "collective_shape",
        (
            "must be equal to world_size times",
            "same size as output size times world size",
            "All tensor operands to scatter/gather",
            "Tensor list input to scatter/gather must match",
            # TensorFlow's collectives (MultiWorkerMirroredStrategy): `Shape mismatch in the collective
            # instance 106. Op at device … expected shape [49] but another member in the group expected
            # shape [64]`
            "Shape mismatch in the collective instance",
            "different input shapes at different members of the collective",
            # accelerate's own check before gathering (`Cannot apply desired operation due to shape
            # mismatches. All Shapes across devices must be valid. Input shapes: -Process 0:[16,174]…`)
            "due to shape mismatches",
        ),
    ),
    # Horovod's stall inspector: tensors some ranks submitted and the others never did, by name.
    # `One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks
    # and are waiting for remainder of ranks for more than 60 seconds.`, then each stalled op with
    # `[ready ranks: 1]` (older) or `Missing ranks:` and `0: [tensor, …]` (newer).
    _p(
        "horovod_stall",
        ("by subset of ranks and are waiting for remainder of ranks", "[ready ranks:"),
        r"(?:\[ready ranks: (?P<ready>\d{1,7}(?:, ?\d{1,7}){0,4096})\]|waiting for remainder of ranks for "
        r"more than (?P<seconds>\d+) seconds)",
    ),
    # Horovod on the ranks still calling collectives after another rank raised or left its loop: `Horovod
    # has been shut down. This was caused by an exception on one of the ranks or an attempt to
    # allreduce, allgather or broadcast a tensor after one of the ranks finished execution.`
    _p("horovod_shutdown", "Horovod has been shut down"),
    _p(
        "net_size_mismatch",
        "collective mismatch error",
        r"(?:peer (?P<peer>\S+) )?collective mismatch error,? local size (?P<local>\d+),? remote(?: size)? "
        r"(?P<remote>\d+)",
    ),
)

# Transformer Engine's userbuffers (TP communication overlap, Megatron's `--tp-comm-overlap`): a call
# failing in its own sources while it bootstraps (`Failed, NCCL error
# …/userbuffers/userbuffers-host.cpp:223 ''`, a CUDA or MPI call there), or one of its kernels giving
# up on a barrier a peer GPU never reached (`NVONLY RSBAR:SM 1 [7]:expecting 67547 got 67546`). Tried
# before the CUDA and NCCL results, which would name only the call that reported it.
COMM_OVERLAP = (
    _p(
        "comm_overlap",
        ("userbuffers", "comm_gemm_overlap", "BAR:SM "),
        r"(?i:fail|error)[^\n]{0,200}?(?P<where>(?:userbuffers|comm_gemm_overlap)[\w./-]{0,200}?:\d+)"
        r"|(?P<barrier>[A-Z]{0,12}BAR):SM \d+ \[\d+\]: ?expecting (?P<expected>-?\d+) got (?P<got>-?\d+)",
    ),
)

GPU = (
    # A process asked for a GPU the node does not have: CUDA's `invalid device ordinal`, and launchers'
    # own checks (`The number of node-local MPI processes 8cannot be larger than the device count 4`).
    _p("invalid_device", ("invalid device ordinal", "cannot be larger than the device count")),
    # Builds that do not run on this GPU: NCCL's kernels asking more shared memory than the GPU
    # gives (`ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856`, NCCL 2.25.1 on sm_120),
    # PyTorch's warning that its wheel lacks the GPU's architecture (`NVIDIA GeForce RTX 5090 with
    # CUDA capability sm_120 is not compatible with the current PyTorch installation.`).
    _p(
        "build_unfit_gpu",
        ("exceeds device/fn maxSharedMem", "is not compatible with the current PyTorch installation"),
        r"ncclMaxSharedMem (?P<needed>\d+) exceeds device/fn maxSharedMem (?P<available>\d+)"
        r"|CUDA capability (?P<arch>sm_\d+) is not compatible",
    ),
    _p(
        "cuda_oom",
        "CUDA out of memory",
        rf"Tried to allocate (?P<tried>{_SIZE})(?:.*?GPU (?P<gpu>\d+)(?: has a total capac\w* of |; )"
        rf"(?P<total>{_SIZE}))?(?:.*?(?P<free>{_SIZE}) (?:is )?free)?"
        rf"(?:.*?this process has (?P<in_use>{_SIZE}) memory in use)?"
        rf"(?:.*?(?P<by_pytorch>{_SIZE}) is allocated by PyTorch)?",
    ),
    _p(
        "nccl_cuda_oom",
        ("Cuda failure", "CUDA failure", "Failed to CUDA calloc"),
        r"(?i)cuda failure\s*(?:\d+\s*)?'?out of memory|failed to cuda calloc",
    ),
    _p("cuda_oom", ("CUDA error", "Cuda failure", *_OLD_CUDA_CHECKS), "out of memory"),
    # TensorFlow's allocator and the CUDA driver API name GPU exhaustion their own way; TF says
    # which device, and a CPU allocator running out is host memory, not the GPU.
    _p(
        "cuda_oom",
        (
            "OOM when allocating",
            "ResourceExhaustedError: OOM",
            "Resource exhausted: OOM",
            "CUDA_ERROR_OUT_OF_MEMORY",
            "cudaErrorMemoryAllocation",
        ),
        r"^(?!.*(?:device:CPU|allocator cpu))",
    ),
    _p(
        "cudnn_not_initialized",
        ("CUDNN_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_NOT_INITIALIZED"),
    ),
    # cudaErrorSystemNotReady: on NVSwitch systems, the fabric manager is not running.
    _p("fabric_manager", ("system not yet initialized", "Fabric Manager")),
    _p("gpu_busy", "busy or unavailable"),
    # The same CUDA errors by the driver API's and the runtime's names (`CUDA_ERROR_ILLEGAL_ADDRESS`,
    # `cudaErrorLaunchFailure`), as JAX, CuPy, TensorFlow and C++ applications print them.
    _p(
        "ecc",
        ("ECC error", "ECC_UNCORRECTABLE", "ECCUncorrectable"),
        r"uncorrectable ECC error|ECC_UNCORRECTABLE|ECCUncorrectable",
    ),
    _p(
        "illegal_address",
        (
            "CUDA error",
            "Cuda failure",
            "CUDA failure",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "cudaErrorIllegalAddress",
            *_OLD_CUDA_CHECKS,
        ),
        "illegal memory access|ILLEGAL_ADDRESS|IllegalAddress",
    ),
    _p(
        "launch_failure",
        (
            "CUDA error",
            "Cuda failure",
            "CUDA failure",
            "CUDA_ERROR_LAUNCH_FAILED",
            "cudaErrorLaunchFailure",
            *_OLD_CUDA_CHECKS,
        ),
        "unspecified launch failure|LAUNCH_FAILED|LaunchFailure",
    ),
    _p("nvlink_error", "NVLink", "uncorrectable NVLink error"),
    _p(
        "no_gpu",
        ("No CUDA GPUs are available", "CUDA-capable device", "couldn't communicate with the NVIDIA driver"),
    ),
    _p("cuda_error", "CUDA error: ", r"CUDA error: (?P<what>[^.\n]*)"),
    _p(
        "cuda_error",
        _OLD_CUDA_CHECKS,
        r"(?:error=\d+|cuda runtime error \(\d+\)) : (?P<what>[^\n]*?)(?: at \S+)?$",
    ),
    _p(
        "cuda_error",
        ("CUDA_ERROR_", "cudaError"),
        r"(?P<what>CUDA_ERROR_\w+|cudaError(?!Memory|PeerAccessAlreadyEnabled|NotReady)\w+)",
    ),
    # `Cuda failure 'x'` (NCCL), `Cuda failure 1 'x'` (NCCL ≥ 2.19), `Test CUDA failure common.cu:941 'x'`
    # (nccl-tests), `Failed: Cuda error nccl.cu:60 'x'` (applications built on NCCL's example macros).
    # NVLS setup failing in NCCL's own source file, whatever CUDA error it reports.
    _p("nvls", "nvls.cc:", r"transport/nvls\.cc:\d+ NCCL WARN"),
    # The kernel's PCIe error reporting (AER) giving up on a device: `PCIe Bus Error:
    # severity=Uncorrected (Fatal)`, `nvidia 0000:03:00.0: AER: can't recover`, `AER: device recovery
    # failed`. A corrected error is not one: the link retried and carried on.
    _p(
        "pcie_fatal",
        ("Uncorrected (Fatal)", "AER: can't recover", "AER: device recovery failed"),
        r"(?P<device>\b(?:nvidia|mlx5_core|efa|ena|pcieport)\b)?.{0,80}?(?P<what>Uncorrected \(Fatal\)|AER: "
        r"can't recover|AER: device recovery failed)",
        key="what",  # the fatal error itself is quoted, not only the recovery that failed after it
    ),
    # The driver or its GSP firmware in a state only a GPU reset or a reboot clears.
    _p(
        "gpu_reset_required",
        (
            "NV_ERR_RESET_REQUIRED",
            "GPU Reset Required",
            "NV_ERR_GPU_IS_LOST",
            "RmInitAdapter failed",
            "GPU marked for reset",
            "Node Reboot Required",
        ),
    ),
    _p(
        "cuda_error",
        ("Cuda failure", "CUDA failure", "Cuda error ", "CUDA error "),
        r"(?i)cuda (?:failure|error)\s*(?:\d+\s+)?(?:[\w./-]+:\d+\s*)?'(?P<what>[^']*)'",
    ),
    _p(
        "p2p_unsupported",
        (
            "via P2P or IB",
            "peer access is not supported",
            "P2P is not supported",
            # CUDA's limit of peers per GPU (cudaErrorTooManyPeers, 711) in its API's and runtime's words
            "TOO_MANY_PEERS",
            "TooManyPeers",
            "peer mapping resources exhausted",
        ),
    ),
    # The IOMMU refusing a device's DMA, in the kernel's words: Intel VT-d (`DMAR: [DMA Write]
    # Request device [02:00.0] fault addr … [fault reason 05] PTE Write access is not set`, newer
    # kernels add `NO_PASID`) and AMD-Vi (`Event logged [IO_PAGE_FAULT device=41:00.0 …]`). Between
    # GPUs it is peer-to-peer traffic the IOMMU translates and blocks: a hang, not an error, in NCCL.
    _p(
        "iommu_fault",
        ("DMAR: [DMA ", "IO_PAGE_FAULT"),
        r"(?:DMAR: \[DMA (?:Read|Write)[^\]]*\] Request device \[|IO_PAGE_FAULT device=)"
        r"(?P<bdf>[0-9a-fA-F:.]+)",
        key="bdf",  # one event per faulting device, whichever vendor's words name it
    ),
    _p(
        "xid",
        "NVRM: Xid",
        r"NVRM: Xid \(PCI:(?P<bdf>[0-9a-fA-F:]+)[^)]*\): (?P<code>\d+),\s*(?P<what>.*)",
        key="code",
    ),
    _p(
        "sxid",
        "SXid",
        r"SXid \(PCI:(?P<bdf>[^)]+)\): (?P<code>\d+), (?P<severity>Fatal|Non-fatal)",
        key="code",
    ),
    _p("fell_off_bus", ("GPU has fallen", "NVRM"), r"(?:GPU (?P<bdf>[0-9a-fA-F:.]+): )?GPU has fallen off"),
    # nvidia-smi once a GPU has fallen off the bus or hangs.
    _p("fell_off_bus", "Unable to determine the device handle for GPU", r"for GPU (?P<bdf>[0-9a-fA-F:.]+)"),
    _p("nvls", "Failed to bind NVLink SHARP"),
)

PROCESS = (
    # Open MPI refusing a call the program made out of order: `The MPI_Barrier() function was called
    # before MPI_INIT was invoked.` (or after MPI_FINALIZE): the program's own bug.
    _p(
        "mpi_misuse",
        ("before MPI_INIT was invoked", "after MPI_FINALIZE was invoked"),
        r"(?P<call>MPI_\w+)\(\) function was called (?P<when>before MPI_INIT|after MPI_FINALIZE)",
    ),
    _p("oom_killed", "Killed process", r"Killed process (?P<pid>\d+) \((?P<comm>[^)]*)\)", key="pid"),
    _p("oom_killed", "Detected", r"Detected (?P<events>\d+) oom[_-]kill event"),
    _p("oom_killed", "OOMKilled"),
    # runc's `container init was OOM-killed (memory limit too low?)`: the limit cannot hold even the start.
    _p("oom_killed", ("OOM-killed", "OOM killed")),
    # Ray's memory monitor (`Workers (tasks / actors) killed due to memory pressure (OOM)`,
    # `OutOfMemoryError: Task was killed due to the node running low on memory`) and the kernel's
    # own `python invoked oom-killer` / `oom-kill:constraint=…` lines.
    _p(
        "oom_killed",
        ("killed due to memory pressure", "running low on memory", "invoked oom-killer", "oom-kill:"),
    ),
    # The shell's report of a child killed by SIGKILL: `Killed`, `bash: line 1: 4242 Killed  python …`.
    _p("shell_killed", "Killed", r"^\s*(?:\S+: line \d+:\s+\d+\s+)?Killed(?:\s+\S.*)?$"),
    # Other shells and job control: `zsh: killed  python …`, `[1]+  Killed  python …`, fish's
    # `terminated by signal SIGKILL (Forced quit)`, macOS's `Killed: 9`.
    _p(
        "shell_killed",
        ("zsh: killed", "Killed ", "Killed: 9", "by signal SIGKILL"),
        r"^\s*(?:zsh: killed\b|\[\d+\][+-]?\s+Killed\b|Killed: 9\b)|terminated by signal SIGKILL\b",
    ),
    _p(
        "host_alloc",
        ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory"),
    ),
    # Host memory refused outside shared memory and RDMA registration (those have their own
    # families): ENOMEM from fork() or mmap, Python's MemoryError, C++'s std::bad_alloc.
    _p(
        "host_alloc",
        ("Errno 12]", "Cannot allocate memory", "MemoryError", "std::bad_alloc"),
        r"^(?!.*(?:/dev/shm|torch_\d|shm|ibv_|reg_mr|[Rr]egist|[Ll]ibfabric))"
        r"(?=.*(?:Errno 12\]|Cannot allocate memory|(?<!OutOf)MemoryError|std::bad_alloc))",
    ),
    _p(
        "srun_task",
        "srun: error:",
        r"srun: error: (?P<host>[^:\s]+): tasks? (?P<tasks>[\d,\- ]+): (?P<status>.+)$",
        key="host",
    ),
    _p(
        "worker_exit",
        "exitcode",
        r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local_rank>\d+)(?: \(pid: (?P<pid>\d+)\))?"
        r"|exitcode\s*: ?(?P<block_code>-?\d+)(?: \(pid: (?P<block_pid>\d+))?",
    ),
    # The error block's `traceback : Signal 9 (SIGKILL) received by PID 4242`, or its first words alone
    # where a paste was shortened.
    _p(
        "worker_exit",
        "Signal ",
        r"Signal (?P<signal>\d+) \((?P<signal_name>SIG\w+|<N/A>)\)(?: received by PID|\s*$)",
    ),
    _p(
        "failure_field",
        ("(local_rank: ", "host      : ", "time      : "),
        r"^\s*(?P<field>rank|host|time)\s+: (?P<value>\S+)(?: \(local_rank: (?P<local_rank>\d+)\))?",
    ),
    # torchrun's ChildFailedError lists other failures first, then the first observed one.
    _p(
        "failure_section",
        ("Root Cause (first observed failure)", "Failures:"),
        r"^\s*(?P<section>Root Cause|Failures)",
    ),
    # `kubectl describe pod`: a container's exit code, 128 + N when signal N ended it.
    _p("worker_exit", "Exit Code:", r"Exit Code:\s+(?P<status_code>[1-9]\d*)\b"),
    # Other launchers: PyTorch Lightning, torch.multiprocessing.spawn, DeepSpeed, Open MPI.
    # Lightning's `Child process with PID 652 terminated with code 1`, as pasted also with the pid
    # shortened (`Child process ... terminated with code -9`).
    _p(
        "worker_exit",
        "Child process ",
        r"Child process (?:with PID (?P<pid>\d+)|[^\s]{1,20}) terminated with code (?P<code>-?\d+)",
    ),
    _p(
        "worker_exit",
        ("terminated with signal", "terminated with exit code"),
        r"process (?P<local_rank>\d+) terminated with "
        r"(?:exit code (?P<code>\d+)|signal (?P<signal_name>SIG\w+))",
    ),
    _p("worker_exit", "exits with return code", r"exits with return code = (?P<code>-?\d+)"),
    # Python's subprocess (Accelerate, DeepSpeed's runner, custom launchers): a negative status is
    # the signal that killed the child.
    _p("worker_exit", "non-zero exit status", r"non-zero exit status (?P<code>-?\d+)"),
    _p("worker_exit", "KILLED BY SIGNAL:", r"KILLED BY SIGNAL: (?P<signal>\d+)"),
    _p("worker_exit", "EXIT STRING:", r"EXIT STRING: .*\(signal (?P<signal>\d+)\)"),
    # Open MPI's banner for the first process to exit non-zero: `Process name: [[11192,1],8]`, the
    # job and the global rank (the exit code follows on its own line).
    _p("worker_exit", "Process name: [[", r"(?P<nonzero>)Process name: \[\[\d+,\d+\],(?P<mpi_rank>\d+)\]"),
    _p(
        "worker_exit",
        "exited on signal",
        r"process rank (?P<mpi_rank>\d+) with PID \d+ on node (?P<host>\S+) exited on signal (?P<signal>\d+)",
    ),
)

CONFIG = (
    # A PyTorch built without libuv whose store was asked for it (`use_libuv was requested but PyTorch
    # was build without libuv support`, raised as the store's DistStoreError): torchrun's default from
    # 2.4, on Windows wheels without libuv.
    _p("libuv_missing", ("without libuv support",)),
    # NCCL's refusal to put two ranks of one communicator on one GPU, however it is framed (a bare
    # WARN text, PyTorch's exception, a title).
    _p(
        "duplicate_gpu",
        ("Duplicate GPU detected", "both on CUDA device"),
        r"(?:rank (?P<first>\d+) and rank (?P<second>\d+) )?both on CUDA device|Duplicate GPU detected",
    ),
    _p(
        "shm_exhausted",
        (
            "Unexpected bus error",
            "Error: failed to extend",
            "shared memory segment",
            "Call to posix_fallocate failed",
            "Call to shm_open failed",
            "unable to open shared memory object",
            "unable to allocate shared memory",
            "killed by signal: Bus error",
            "out of shared memory",
        ),
    ),
    # UCX's shared-memory transport (Open MPI, UCX-based plugins) that could not map its FIFO or segment
    # in /dev/shm: a container's default 64 MB (`mm_iface failed to allocate receive FIFO`, often followed
    # by a segfault), or `mm_posix.c:233  UCX  ERROR shm_open(…) failed`.
    _p(
        "shm_exhausted",
        ("failed to allocate receive FIFO", "mm_posix.c", "mm_sysv.c"),
        r"failed to allocate receive FIFO|mm_(?:posix|sysv)\.c:\d+\s+UCX\s+ERROR",
    ),
    # A container that cannot reach the node's GPU driver or devices: NVML not loadable (the NVIDIA
    # runtime not the container's runtime), `Failed to initialize NVML: Unknown Error` and device nodes
    # refused (`open("/dev/nvidiactl", O_RDWR) = -1 EPERM`: its device permissions lost, as kubelet's
    # static CPU manager or a systemd daemon-reload under cgroup v1 do). Not a driver/library mismatch.
    _p(
        "container_gpu_access",
        ("could not load NVML library", "Failed to initialize NVML", "NVML library not found", "/dev/nvidia"),
        r"could not load NVML library|NVML library not found"
        r"|Failed to initialize NVML: (?:Unknown Error|Insufficient Permissions)"
        r"|/dev/nvidia(?:ctl|-uvm|\d{1,3})\b.{0,80}?(?:EPERM|Operation not permitted|Permission denied)",
    ),
    # Host limits on processes and threads (`ulimit -u`, a container's pids limit): a fork or a thread
    # the kernel refused (`fork: retry: No child processes`, `can't start new thread`, `pthread_create
    # failed: Resource temporarily unavailable`).
    _p(
        "process_limit",
        ("fork: retry", "fork: Resource temporarily", "can't start new thread", "pthread_create failed"),
        r"fork: (?:retry: (?:No child processes|Resource temporarily unavailable)|Resource temporarily "
        r"unavailable)|can't start new thread|pthread_create failed",
    ),
    # A torch checkpoint whose zip lacks what its index names (`[enforce fail at inline_container.cc:209].
    # file not found: archive/data/3259494704`) or whose storages disagree (`storage has wrong size:
    # expected -4721614612255084527 got 1`): a file several processes wrote at once.
    _p(
        "checkpoint_torn",
        ("inline_container.cc", "storage has wrong size"),
        r"inline_container\.cc.{0,40}?file not found: \S{0,200}/data/\d|storage has wrong size",
    ),
    # GPUDirect Storage that could not be used: cuFile's own errors (`cuFile error at: … internal
    # error`, `GPUDirect Storage not supported on current file`) and the nvidia-fs kernel module's
    # (`nvidia-fs:rw_verify_area failed with -14`).
    _p(
        "gds_unusable",
        (
            "cuFile error",
            "CUfileException",
            "GPUDirect Storage not supported",
            "nvidia-fs:",
            "cuFileDriverOpen",
        ),
        r"(?P<module>nvidia-fs:)?.{0,80}?(?:fail|error|not supported|Exception)",
    ),
    # SHARP / CollNet (NCCL's in-network reductions) that would not set up: `SHARP coll init error`,
    # `Failed to lock SAT tree`, `Streaming Tree lock failed`, `Cannot initialize CollNet, using
    # point-to-point network instead`. NCCL carries on without it.
    _p(
        "collnet_unavailable",
        ("SHARP coll init error", "lock SAT tree", "Streaming Tree lock failed", "Cannot initialize CollNet"),
    ),
    # A model placed with transformers' `device_map` in a run where the launcher owns placement: an 8-bit
    # or 4-bit model loaded on another GPU than the rank trains on (`loaded in 8-bit precision on a
    # different device than the one you're training on`), a `device_map` under ZeRO-3 (`DeepSpeed Zero-3
    # is not compatible with … passing a `device_map``).
    _p(
        "device_map_distributed",
        ("on a different device than the one you're training on", "passing a `device_map`"),
    ),
    # oneCCL (Intel's collectives, the `ccl`/`xccl` backend) without its launcher's environment: `could
    # not get local_idx/count from environment variables`, then `getenv_local_coord` failing.
    _p(
        "ccl_launcher_env",
        ("could not get local_idx/count", "getenv_local_coord"),
        r"(?P<what>could not get local_idx/count|getenv_local_coord)",
        key="what",  # the warning and the error that follows it are both quoted
    ),
    # oneCCL listing the GPUs from a device directory the container lacks (`init_device_fds: EXCEPTION:
    # opendir failed: could not open device directory`): /dev/dri passed with --device has no by-path links.
    _p(
        "device_directory", ("could not open device directory", "opendir failed"), r"init_device_fds|/dev/dri"
    ),
    # A collective on a tensor of another GPU than the one the process group was bound to
    # (`init_process_group(device_id=…)`, or the device a tensor-parallel API chose): the process never
    # set its own GPU (`torch.cuda.set_device(local_rank)`) before it built the group.
    _p("group_device_mismatch", "not on device passed to init_process_group"),
    # PyTorch's own invariant broken (`RuntimeError: tensors.size() > 0 INTERNAL ASSERT FAILED at
    # …/reducer.cpp:672, please report a bug to PyTorch.`): a bug in it, or a use it does not check
    # for, raised as an exception rather than glog's abort.
    _p("internal_assert", "INTERNAL ASSERT FAILED"),
    # TensorFlow without NCCL's kernels (Windows, a build without NCCL) asked for MirroredStrategy's
    # default all-reduce: `No OpKernel was registered to support Op 'NcclAllReduce'`.
    _p("tf_without_nccl", "No OpKernel was registered to support Op 'Nccl"),
    # An Istio (Envoy) sidecar handling the job's own ports, by its cluster names (direction|port|subset|
    # host: `membership update for TLS cluster inbound|23456||`, an access log's
    # `outbound|29500||master-0.default.svc.cluster.local`): the rendezvous store and
    # NCCL's connections pass through a proxy that may not be up yet, or that speaks TLS to them.
    _p(
        "mesh_sidecar",
        ("inbound|", "outbound|"),
        r"\b(?:in|out)bound\|(?P<port>\d+)\|\|",
    ),
    # Open MPI asked for CUDA support its build lacks (`The user requested CUDA support with the --mca
    # mpi_cuda_support 1 flag but the library was not compiled with any support.`): GPU buffers handed to
    # it then crash the processes.
    _p("mpi_without_cuda", "requested CUDA support with the --mca"),
    # A parallel layout that does not divide (`AssertionError: 4 is not divisible by 8` from DeepSpeed's
    # expert groups, `num_attention_heads must be divisible by tensor_model_parallel_size`, a world size
    # not divisible by TP × PP): the sizes the run was launched with do not fit its GPUs or its model.
    _p(
        "layout_indivisible",
        "divisible by",
        r"(?i)(?:is not|isn't|not|must be|should be|needs to be|has to be) (?:evenly )?divisible by",
    ),
    # nn.DataParallel gathering its replicas' outputs of different shapes (`Input tensor at index 3 has
    # invalid shape [32, 32], but expected [32, 34]`; before PyTorch 1.5, `Gather got an input of invalid
    # size`): one process drove every visible GPU, each replica padding its slice of the batch its own way.
    _p(
        "dataparallel_gather",
        ("has invalid shape", "Gather got an input of invalid size"),
        r"Input tensor at index \d+ has invalid shape|Gather got an input of invalid size",
    ),
    # The kernel refusing one process another's file descriptor (`pidfd_getfd: Operation not permitted`):
    # Yama's ptrace_scope, or a container without CAP_SYS_PTRACE. PyTorch's CUDA IPC (tensors shared
    # between processes) and NCCL's cuMem buffers shared within a node pass descriptors this way.
    _p("fd_sharing_denied", "pidfd_getfd", r"pidfd_getfd.{0,200}?(?:not permitted|EPERM)"),
    # ...and a kernel without that call at all (Linux before 5.6: `The kernel on this machine does not
    # support the pidfd_getfd syscall needed to use IPC for CUDA tensors when expandable_segments:True
    # is set`, `pidfd_getfd: Function not implemented`).
    _p(
        "fd_sharing_unsupported",
        "pidfd_getfd",
        r"(?i)(?:does not support|doesn't support|not supported).{0,40}pidfd_getfd"
        r"|pidfd_getfd.{0,200}?(?:not supported|not implemented|ENOSYS)",
    ),
    # NCCL's socket transport on an InfiniBand interface (`NET/Socket : Using [0]ib0:10.0.0.5<0>`): NCCL
    # uses the first network whose set-up works, so IB verbs did not (no libibverbs in the image,
    # NCCL_IB_DISABLE, no /dev/infiniband in the container): TCP over IPoIB, a fraction of the bandwidth.
    _p(
        "socket_over_ib", "NET/Socket : Using", r"NET/Socket : Using (?:\[\d+\]\S+ )*?\[\d+\](?P<iface>ib\w*)"
    ),
    # NCCL's listening socket read a first word that is not its magic (`socketFinalizeAccept: wrong magic
    # 74656d2f20544547 != 7970663b906d70b9`): something other than this job's NCCL connected to it.
    _p("foreign_connection", "wrong magic", r"wrong magic (?:0x)?(?P<got>[0-9a-fA-F]{1,16})\b"),
    # A traceback frame inside Python's or torch's shared-memory code: an errno raised right below it
    # (`[Errno 28] No space left on device` from `_multiprocessing.SemLock(`) is /dev/shm that is full,
    # not a disk (scanner.py joins the two).
    _p(
        "shm_frame",
        (
            "SemLock",
            "multiprocessing/synchronize.py",
            "multiprocessing/heap.py",
            "multiprocessing/shared_memory.py",
            "multiprocessing/reductions.py",
            "_share_filename_",
            "_share_fd_",
            "share_memory_(",
        ),
    ),
    # systemd-logind (RemoveIPC=yes) deleting NCCL's segments under a job whose user is not logged in.
    _p("shm_removed", ("unlink shared memory", "RemoveIPC")),
    _p(
        "shm_exhausted",
        ("No space left on device", "unable to mmap", "unable to write to file", "Cannot allocate memory"),
        r"/dev/shm|</?torch_\d+|shm",
    ),
    # A write that found the disk or the quota full, as the OS, torch.save's zip writer
    # (`PytorchStreamWriter failed writing file …: file write failed`, `unexpected pos N vs M`) and
    # TensorFlow (`disk quota exceeded [Op:SaveV2]`) word it.
    _p(
        "disk_full",
        (
            "No space left on device",
            "Disk quota exceeded",
            "disk quota exceeded",
            "Errno 28]",
            "Errno 122]",
            "ENOSPC",
            "EDQUOT",
            "PytorchStreamWriter failed writing",
            "file write failed",
            "unexpected pos ",
            "not enough space on the disk",
        ),
        r"^(?!.*(?:/dev/shm|torch_\d|shm))",
    ),
    # torch.save's zip writer failing to open its file (`RuntimeError: File ckpt/step_0.pt cannot be
    # opened.`): only the writer words it so; a missing or read-only directory, or a full volume.
    _p("checkpoint_unwritable", "cannot be opened", r"File (?P<path>.{1,1024}?) cannot be opened\.?$"),
    # A write the storage cut short without saying why (`write error: wrote 39776036 blocks instead of
    # 41251350`, `short write`): a volume that filled up or a device that is failing.
    _p("short_write", ("blocks instead of", "short write", "Short write")),
    # EMFILE: the process's file-descriptor limit (DataLoader workers passing tensors as file
    # descriptors, NCCL's sockets and shared-memory handles).
    _p("open_files", ("Too many open files", "Errno 24]", "EMFILE")),
    # A math library that could not open its own kernel files (`rocblaslt error: Could not load
    # …/TensileLibrary_lazy_gfx942.dat`): loaded lazily, one process per GPU, they run into the
    # open-files limit long before anything else says so.
    _p(
        "library_files",
        ("blaslt error: Could not load", "rocblas error: Could not load", "Tensile"),
        r"(?:rocblas|hipblaslt|rocblaslt|[Tt]ensile)\w*[^\n]{0,40}"
        r"(?:[Cc]ould not load|[Cc]annot read|failed to open)",
    ),
    _p(
        "socket_iface",
        (
            "no socket interface found",
            "No usable listening interface found",
            "NET/Socket : no interface found",
            "no device found matching",
            # NCCL ≤ 2.3 when a container has no usable IP interface (EAFNOSUPPORT).
            "Socket creation failed",
            "Address family not supported by protocol",
        ),
    ),
    # A process started without the launcher's environment: PyTorch's env:// rendezvous (1.0:
    # `env:// rendezvous: WORLD_SIZE not set`; ≥ 1.1: `… environment variable RANK expected, but not
    # set`) and scripts reading the variables torchrun / srun would have set.
    _p(
        "launcher_env",
        (
            "env:// rendezvous",
            "KeyError: 'LOCAL_RANK'",
            "KeyError: 'RANK'",
            "KeyError: 'WORLD_SIZE'",
            "KeyError: 'MASTER_ADDR'",
            "KeyError: 'MASTER_PORT'",
            "KeyError: 'LOCAL_WORLD_SIZE'",
        ),
        r"(?:expected, but not set|not set|KeyError: ')",
    ),
    _p("dataloader_killed", "is killed by signal: Killed"),
    _p("dataloader_exit", "DataLoader worker (pid"),
    _p("addr_in_use", ("Address already in use", "EADDRINUSE", "Tried to launch distributed communication")),
    # PyTorch 1.8–2.0's store-based barrier after init: how many workers reached the key.
    _p(
        "store_barrier",
        "in store based barrier",
        r"Timed out initializing process group in store based barrier.*?world_size=(?P<expected>\d+), "
        r"worker_count=(?P<joined>\d+)",
    ),
    _p(
        "rendezvous",
        (
            "DistStoreError",
            "The client socket has timed out",
            "RendezvousTimeoutError",
            "RendezvousClosedError",
            "NCCL communicator and retrieving",
            "TCP client failed to connect",
            "Socket Timeout",
            # Gloo's rendezvous store (Horovod's http_store, torch's gloo backend)
            "Wait timeout for key(s)",
            "Wait timeout after",
            "connectFullMesh failed",
            "HOROVOD_GLOO_TIMEOUT_SECONDS",
        ),
        # Bounded repeats: `\d+` after `.*?` backtracked quadratically over a 64 KiB run of digits.
        r"^(?=(?:.*?connect to \((?P<master>[^,\s]{1,253}), (?P<port>\d{1,5})\))?)"
        r"(?=(?:.*?(?<!\d)(?P<joined>\d{1,9})/(?P<expected>\d{1,9}) clients joined)?)"
        r"(?=(?:.*?ncclUniqueId from \[(?P<root>\d{1,9})\])?)",
    ),
    # A program the job starts that a node could not run: a launcher's remote daemon or the
    # interpreter not on the non-interactive PATH (`bash: orted: command not found`), a shared library
    # the loader cannot find, a container command not in $PATH, Open MPI's "could not find / access
    # the executable", slurmstepd's execve() of a missing program. Bare `command not found` is
    # limited to launchers and interpreters: prologs print it for harmless tools (`module: …`).
    # libtorch built against a newer NCCL than the libnccl the loader found.
    _p("nccl_symbol", "undefined symbol: nccl"),
    # A peer's connection handle read in another layout: `connecting to address with family 0 (or
    # 33022) is neither AF_INET(2) nor AF_INET6(10)` when ranks load different NCCL or net-plugin
    # builds; family 1 (AF_UNIX) from a transport bug. A job that named NCCL_SOCKET_IFNAME points at
    # that interface instead (rules/peer_address.py).
    _p("peer_address_layout", "is neither AF_INET"),
    # NCCL's topology search finding a link with no way back (graph/paths.cc) or a device it had
    # listed and then could not find (`Could not find NET with id 0`, graph/topo.h): an NCCL older
    # than the machine's GPUs / NVSwitch or with a topology bug, devices hidden unevenly
    # (CUDA_/HIP_VISIBLE_DEVICES), or an NCCL_TOPO_FILE that describes another machine.
    _p(
        "nccl_topology",
        ("Failed to find reverse path", "Could not find NET with id", "Could not find GPU with id"),
    ),
    # A topology that lacks an attribute this NCCL reads (graph/xml.h: `Attribute arch of node cpu
    # not found`): a static topology file from an older network plugin (aws-ofi-nccl before 1.11
    # shipped p4d/p5 files), read with only some of the GPUs visible or by a newer NCCL.
    _p(
        "topology_attribute",
        " of node ",
        r"Attribute (?P<attribute>\S+) of node (?P<node_kind>\S+) (?:not found|is not an int)",
    ),
    # A graph or topology file injected through NCCL_GRAPH_FILE / NCCL_TOPO_FILE (often from
    # /etc/nccl.conf) that describes another machine (`XML Import Channel : dev 1 not found`), or
    # that NCCL cannot open or parse (graph/xml.cc).
    _p(
        "nccl_injected_topology",
        (
            "XML Import Channel",
            "Could not open XML topology file",
            "XML Topology has wrong version",
            "XML Parse",
            "XML Mismatch",
            "XML parser is limited",
        ),
    ),
    _p(
        "missing_program",
        (
            ": command not found",
            "error while loading shared libraries",
            "executable file not found in $PATH",
            "was unable to find the specified executable",
            "could not access or execute an executable",
            "execve(): ",
        ),
        r"(?:(?:^|[\s:/])(?:orted|prted|pdsh|pdcp|mpirun|mpiexec|srun|torchrun|deepspeed|accelerate|horovodrun"
        r"|hydra_pmi_proxy|pmi_proxy|ray|python[\d.]*): command not found|error while loading shared"
        r"|not found in \$PATH|unable to find the specified executable|could not access or execute"
        r"|execve\(\): (?!\S*/slurm_script:)\S+: No such file)",
    ),
    # An MPI launcher's host:slots entry that reached ssh whole (`ssh: Could not resolve hostname
    # localhost:4`): a name with a port-like suffix never resolves; the launcher did not split it.
    _p(
        "host_slots_as_name",
        "Could not resolve hostname",
        r"Could not resolve hostname [\w.-]+:\d+\s*:",
    ),
    # Launchers that start ranks over ssh (DeepSpeed's runner and pdsh, mpirun / ORTE) and could not
    # reach a node: keys, host keys, a port or a name that does not resolve.
    _p(
        "ssh_unreachable",
        (
            "not reachable via ssh",
            "ssh exited with exit code",
            "Permission denied (publickey",
            "Host key verification failed",
            "ssh: connect to host",
            "ssh: Could not resolve hostname",
            "unable to reliably start one or more daemons",
        ),
    ),
    _p("master_addr", ("Name or service not known", "Temporary failure in name resolution")),
    # A PyTorch without NCCL asked for it: Windows and macOS wheels, CPU builds (`Distributed package
    # doesn't have NCCL built in`), or a process that sees no GPU (`ProcessGroupNCCL is only supported
    # with GPUs, no GPUs found!`).
    _p(
        "nccl_unavailable",
        ("doesn't have NCCL", "ProcessGroupNCCL is only supported with GPUs"),
        r"^(?:.*?(?P<no_gpu>no GPUs found))?",
    ),
    # A C++/CUDA extension compiled on the fly that did not build (DeepSpeed's ops, apex, Megatron's
    # fused kernels, a torch.utils.cpp_extension load): ninja's and nvcc's last words, and PyTorch's.
    _p(
        "extension_build",
        ("ninja: build stopped", "Error building extension", "nvcc fatal", "FAILED: "),
        r"(?:Error building extension '(?P<name>[\w.-]+)'|ninja: build stopped|nvcc fatal\s*:\s*(?P<why>.*)"
        # ninja's line for the object that did not compile (`FAILED: fused_adam.cuda.o`)
        r"|^\s*FAILED: (?P<object>[\w./+-]+\.o)\s*$)",
    ),
    # A shared library the loader could not find (`ImportError: libcudart.so.11.0: cannot open shared
    # object file`, Paddle's `Failed to find dynamic library: libnccl.so`). NCCL's INFO lines about an
    # optional plugin it then goes without say the same words and are no failure; the container
    # toolkit's own (`nvidia-container-cli: … load library failed`) is its family.
    _p(
        "library_not_found",
        ("cannot open shared object file", "Failed to find dynamic library"),
        r"^(?!.*(?:NCCL INFO|[Pp]lugin|NET/|nvidia-container-cli))"
        r"(?:.*?(?P<library>lib[\w+-]{1,80}\.so[\d.]*))?",
        key="library",
    ),
    # Cray MPICH told to use GPU buffers (MPICH_GPU_SUPPORT_ENABLED=1) by a program not linked with its
    # GPU transport library: `MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not
    # linked` (a pip-installed mpi4py, a binary built without the Cray compiler wrappers).
    _p("mpi_gtl_not_linked", "GTL library is not linked"),
    # A library made for one GPU that saw several (`Unsloth currently does not work on multi GPU setups`).
    _p(
        "single_gpu_library",
        ("multi GPU setups", "multi-GPU setups", "multiple GPUs"),
        r"(?i)(?:does not|doesn't|do not|cannot|can't) (?:work|run|support)\w* "
        r"(?:on|with)? ?multi(?:ple)?[- ]GPU",
    ),
    # PaddlePaddle's launcher waiting for the other nodes' trainers (`server not ready, wait 3 sec to
    # retry...`, `not ready endpoints:['10.36.10.40:6070', …]`): they were never started there, or their
    # ports cannot be reached.
    _p("peers_not_ready", "not ready endpoints"),
    # One rank claimed twice when the group formed (`more than one node have assigned same rank`): a
    # file:// init file left by an earlier run, or processes launched with the same RANK.
    _p("rank_claimed_twice", ("have assigned same rank", "assigned the same rank")),
    # An on-the-fly build of C++/CUDA code starting (Megatron's `> compiling and loading fused kernels
    # ...`, torch.utils.cpp_extension's `Using <dir> as PyTorch extensions root...` and `Building
    # extension module fused_adam...`) and finishing (`>>> done with compiling and loading fused
    # kernels`, `Loading extension module fused_adam...`, DeepSpeed's `Time to load fused_adam op`). The
    # finish comes first: Megatron's line for it holds the start's words too.
    _p("jit_build_done", ("done with compiling and loading", "Loading extension module", "Time to load ")),
    _p(
        "jit_build_start",
        ("compiling and loading fused kernels", "as PyTorch extensions root", "Building extension module"),
    ),
    # A collective or DDP without a process group (`Default process group has not been initialized,
    # please make sure to call init_process_group.`): the script sets one up only under the launcher
    # or scheduler variables it expects (RANK and WORLD_SIZE, SLURM_PROCID), which this launch lacked.
    _p("no_process_group", ("Default process group has not been initialized",)),
    # Each rank's module on cuda:0 while its inputs sit on its own GPU (`Expected all tensors to be on
    # the same device, but found at least two devices, cuda:0 and cuda:3!`): the process never set its
    # device from LOCAL_RANK, or the launcher (mpirun) set no LOCAL_RANK.
    _p(
        "device_mismatch",
        "Expected all tensors to be on the same device",
        r"found at least two devices, (?:cuda:0 and cuda:[1-9]\d*|cuda:[1-9]\d* and cuda:0)\b",
    ),
    # torch.distributed.rpc: a call that ran past its timeout (`RPCErr:1:RPC ran for more than 60000
    # milliseconds and timed out.`, `RPC ran for more than set timeout`), and TensorPipe's transport
    # that could not listen on the address the hostname gave (`transport/uv/listener.cc:126 "rv < 0:
    # invalid argument"`: an IPv6 link-local address without its interface).
    _p("rpc_timeout", ("RPC ran for more than",)),
    _p("tensorpipe_listen", ("tensorpipe/transport/uv/listener.cc",)),
    # Transformer Engine's comm+GEMM overlap (userbuffers) asking for CUDA Multicast where the GPU,
    # driver or toolkit has none: `does not support comm+GEMM overlap with CUDA Multicast. Launch app
    # with UB_SKIPMC=1 to try CUDA IPC instead.`
    _p("ub_multicast", ("overlap with CUDA Multicast", "UB_SKIPMC=1")),
    # A data type the backend has no reduction for: PyTorch's `Input tensor data type is not supported
    # for NCCL process group: BFloat16` (NCCL before 2.10 has no bf16), NCCL's own `Unsupported datatype`.
    # (gloo's `Invalid scalar type` for bf16 is left to the exception rule: other ops raise it too.)
    _p(
        "dtype_unsupported",
        ("data type is not supported for NCCL process group", "Unsupported datatype"),
        r"(?:not supported for NCCL process group: (?P<dtype>\w+)|Unsupported datatype)",
        needs_any=("NCCL",),  # other libraries say `Unsupported datatype` of their own types
    ),
    # A precision or kernel the GPU cannot run, refused at start: bf16 before Ampere (transformers' `Your
    # setup doesn't support bf16/gpu`, vLLM's `Bfloat16 is only supported on GPUs with compute
    # capability of at least 8.0`, PyTorch's `Current CUDA Device does not support bfloat16`,
    # accelerate's `bf16 mixed precision requires …`), FlashAttention's `only supports Ampere GPUs or
    # newer`.
    _p(
        "precision_unsupported",
        (
            "doesn't support bf16",
            "does not support bf16",
            "does not support bfloat16",
            "Bfloat16 is only supported on GPUs",
            "bf16 mixed precision requires",
            "only supports Ampere GPUs or newer",
        ),
    ),
    # fp16's dynamic loss scaler giving up (DeepSpeed, apex, fairseq: `Current loss scale already at
    # minimum - cannot decrease scale anymore`, `Minimum loss scale reached`): gradients overflowed at
    # every scale.
    _p(
        "loss_scale_floor",
        ("loss scale already at minimum", "Minimum loss scale reached", "minimum loss scale reached"),
    ),
    # An engine built for another number of GPUs than the processes launched (TensorRT-LLM:
    # `Assertion failed: mpiSize == tp * pp`).
    _p("engine_world_size", ("mpiSize == tp * pp", "mpiSize == tp*pp")),
    # ...and its Python runtime's words: `AssertionError: Engine world size (2) != Runtime world size (1)`.
    _p("engine_world_size", "Engine world size", r"Engine world size \(\d+\) != Runtime world size \(\d+\)"),
    # A compiled extension without the constructor or signature this Python code calls (pybind11's
    # `No constructor defined!`, `__init__(): incompatible constructor arguments`): a package built
    # for another torch than the one it runs with.
    _p(
        "binding_mismatch",
        ("No constructor defined!", "incompatible constructor arguments"),
    ),
    # The NVIDIA container toolkit setting up a container's GPUs (`nvidia-container-cli: mount error:
    # …`, `requirement error: unsatisfied condition: cuda>=12.4`, `initialization error: …`).
    _p(
        "container_gpu_setup",
        "nvidia-container-cli: ",
        r"nvidia-container-cli: (?P<stage>[\w ]{1,40}) error: (?P<what>.{0,200})",
    ),
    # Open MPI's daemon on another node, of another version than mpirun's, refusing what mpirun passed
    # it (`Error: unknown option "--hnp-topo-sig"`).
    _p(
        "mpi_version_skew",
        "unknown option",
        r"unknown option \W{0,2}--(?:hnp|orte|prte|pmix|tree-spawn)",
    ),
    # JAX's and TensorFlow's coordination service, the rendezvous of `jax.distributed.initialize` and
    # of MultiWorkerMirroredStrategy: a task that could not register with the coordinator (`RPC:
    # /tensorflow.CoordinationService/RegisterTask` after `DEADLINE_EXCEEDED`), a barrier some tasks
    # never reached (`Barrier timed out. Barrier_id: PjRT_Client_Connect`), a task whose heartbeats
    # stopped, the service reporting a task's fatal error. Its lines at a clean exit (`Coordination
    # agent has successfully shut down.`) match nothing here.
    _p(
        "coordination",
        (
            "CoordinationService/",
            "coordination service",
            "Coordination service",
            "Barrier timed out",
            "PjRT_Client_Connect",
            "stopped sending heartbeats",
        ),
        r"(?P<what>Barrier timed out|RegisterTask|PjRT_Client_Connect|[Ff]ailed to connect to (?:the )?"
        r"coordination service|stopped sending heartbeats|[Hh]eartbeat (?:timeout|timed out)|detected fatal "
        r"errors)",
        key="what",
    ),
    # A TCP connect to the store that never completed: errno 110 / 113 mean the address is
    # unreachable (wrong MASTER_ADDR, traffic blocked); 111 means nothing listened there yet.
    # PyTorch ≤ 1.13 words the same as `connect() timed out`; torchelastic as a RendezvousConnectionError.
    _p(
        "store_connect",
        ("socket has failed to connect to", "connect() timed out", "connection to the C10d store has failed"),
        r"failed to connect to (?P<target>\S+?)\.?(?: \(errno: (?P<errno>\d+)| |$)|connect\(\) timed out"
        r"|connection to the C10d store has failed",
    ),
    _p(
        "msg_truncated",
        "Message truncated",
        r"^(?!.*nvshmem).*?received (?P<got>[\d,]+) bytes instead of (?P<expected>[\d,]+)",
    ),
    # NVSHMEM (DeepEP's and other expert-parallel kernels' transport) that could not set itself up:
    # `building transport map failed`, `nvshmem initialization failed`. Its GPUDirect RDMA transport
    # needs nvidia-peermem; its bootstrap errors after that are peers leaving.
    _p(
        "nvshmem_init",
        ("building transport map failed", "nvshmem initialization failed", "nvshmemi_init_thread"),
    ),
    _p(
        "memreg",
        (
            "Unable to register memory",
            "Call to ibv_reg",
            "Unable to register MR",
            "Failed to allocate pd",
            # libfabric's EFA provider, pinning its own receive buffers (`Libfabric error: (-12) Cannot
            # allocate memory`, then `EFA internal error: (4112) Failure to post internal receive buffers`)
            "Failure to post internal receive buffers",
            "Libfabric error: (-12)",
        ),
        r"^(?:.*?(?P<type>type = 2))?(?P<dmabuf>.*?dmabuf)?(?:.*?(?P<why>Cannot allocate memory"
        r"|Invalid argument|Bad address|Operation not supported|RC: -\d+|err -\d+))?",
    ),
    # The EFA device plugin (a DaemonSet) on a node with no EFA device (`Error to get IB device: %v. No
    # valid EFA devices found`): scheduled onto an instance type without EFA, or the node's EFA driver not
    # loaded. It crash-loops; pods asking for vpc.amazonaws.com/efa stay Pending where it should serve.
    _p("efa_plugin_no_device", "No valid EFA devices found"),
    _p(
        "ofi_init_failed",
        (
            "OFI fi_getinfo() call failed",
            "Unable to find a protocol that worked",
            "NET/OFI aws-ofi-nccl initialization failed",
            "NET/OFI Initializing plugin failed",
            "Couldn't open AV",
            "Failed to initialize any NET plugin",
        ),
    ),
    # The plugin is there but the dynamic loader refused it: a library it was built against is
    # older or missing here (`dlerror=…libfabric.so.1: version `FABRIC_1.7' not found`, an undefined
    # symbol), with or without NCCL's `NET/Plugin` prefix as long as the line names the plugin
    # (`libnccl-net.so`). NCCL then runs on its internal sockets, which the next line says and
    # nothing fails.
    _p(
        "net_plugin_unloadable",
        ("NET/Plugin", "nccl-net"),
        r"^(?=.*(?:NET/Plugin|nccl-net))"
        r".*?(?P<what>version `[^'\n]{1,100}' not found|undefined symbol: ?\S+)",
    ),
    _p(
        "efa_connect",
        (
            "into address vector",
            "Couldn't bind EP-AV",
            "Could not create address vector",
            "CM connect failed",
            "preparing for connection failed",
            "Caught exception in plugin connect",
        ),
    ),
    _p(
        "ofi_libfabric_skew",
        ("Couldn't set FI_OPT", "Could not set FI_OPT", "requires at least libfabric version"),
    ),
    # NCCL on IB/RoCE without GPUDirect RDMA for a whole HCA (`NET/IB : GPU Direct RDMA Disabled for HCA 0
    # 'mlx5_0'`): GPU memory staged through the host, a fraction of the bandwidth. The per-path form
    # (`for GPU 3 / HCA 1 (distance 5 > 4)`) is topology NCCL chose, not a missing module.
    _p("gdr_disabled", "GPU Direct RDMA Disabled for HCA", r"Disabled for HCA (?P<hca>\d+)"),
    _p(
        "tcp_fallback",
        (
            "Selected provider is tcp",
            "Selected Provider is tcp",
            "Selected provider is sockets",
            "Selected Provider is sockets",
            "No eligible providers were found",
        ),
    ),
)

TRANSPORT = (
    # Gloo, the CPU backend (and PyTorch's second group beside NCCL): a collective that waited out its
    # timeout (`Timed out waiting 1800000ms for recv operation to complete`), the counterpart of NCCL's
    # watchdog; and an interface name it cannot find (`Unable to find address for: ^lo`: GLOO_SOCKET_IFNAME
    # takes one name, not NCCL's exclusion list).
    _p(
        "gloo_timeout",
        ("for recv operation to complete", "for send operation to complete"),
        r"Timed out waiting (?P<ms>\d{1,12})ms for (?P<op>recv|send) operation",
    ),
    # A connection to 127.0.1.1 that failed (gloo's `connect [127.0.1.1]:3210: Connection refused`,
    # NCCL's bootstrap): the loopback alias Debian and Ubuntu map the hostname to in /etc/hosts, which a
    # peer advertised as its address and no other node can reach.
    _p(
        "loopback_peer",
        "127.0.1.1",
        r"127\.0\.1\.1\b",
        needs_any=("refused", "timed out", "timeout", "unreachable", "failed", "reset", "rror", "closed"),
    ),
    _p(
        "gloo_no_address",
        "Unable to find address for",
        r"Unable to find address for:? ?(?P<interface>\S{0,100})",
    ),
    # Open MPI's TCP transport reaching a process it did not expect (`received unexpected process
    # identifier`, `… cannot find a corresponding process entry`) or no process at all: an interface
    # that does not tell the hosts apart (docker0, virbr0) or does not route between them.
    _p(
        "mpi_tcp_interface",
        (
            "received unexpected process identifier",
            "cannot find a corresponding process entry",
            "mca_btl_tcp_endpoint_complete_connect",
        ),
    ),
    # UCX's and UCC's own log lines (`ucc_context.c:817  UCC  DEBUG ctx create epilog for mlx5 failed:
    # Unhandled error`, `ib_iface.c:1010 UCX  ERROR …`): an error, or a transport that failed to set up.
    _p(
        "ucx_error",
        ("UCX  ERROR", "UCC  ERROR", "UCX  WARN", "UCC  WARN", "UCX  DEBUG", "UCC  DEBUG", "UCC  DIAG"),
        r"\b(?P<library>UCX|UCC)  (?:ERROR\s+(?P<message>.{0,300})"
        r"|\w+\s+(?P<failed>.{0,200}\bfailed\b.{0,100}))",
    ),
    # Setting up an IB/RoCE connection (`Call to ibv_modify_qp failed with 19 No such device`, `… with
    # error Invalid argument`, `Call to ibv_create_ah failed …`): what the verbs call said decides
    # between an address NCCL picked that cannot work (GID index, RoCE version) and a peer that
    # never answered.
    _p(
        "ib_setup",
        "Call to ibv_",
        r"Call to (?P<call>ibv_(?:modify_qp|create_ah|create_qp|query_gid|query_port|open_device)) failed"
        r"(?: with (?:error )?(?:(?P<errno>\d+) )?(?P<why>[A-Za-z][\w ]*[a-z]))?",
    ),
    _p(
        "transport_error",
        ("NET/OFI Request", "Remote write completed", "Fatal: rx buffer", "Fatal: Bounce buffer"),
        r"(?P<what>(?:Request|Remote write|rx buffer|Bounce buffer).*completed with error.*)",
        needs_any=("completed with error",),  # else every request word would scan the rest of the line
    ),
    _p("transport_error", "<warn>", r"libfabric:\d+:\d+:[^:]*:(?P<provider>\w+):(?P<subsystem>\w+):"),
    # A libfabric provider failing inside itself, as its callers print it: `Unable to write to EQ: …
    # err: Input/output error (5) prov_errno: Unknown error -114 (-114) prov/rxr/src/rxr.h:1042`.
    _p("provider_error", "prov_errno", r"(?P<what>.*prov_errno.*)"),
    _p(
        "ib_completion",
        "Got completion",
        r"Got completion (?:from peer (?P<peer>\S+) )?with (?:error |status=(?:\w+\()?)(?P<status>\d+)"
        r"(?:.*?vendor[ _]err[= ]?(?P<vendor>\d+))?",
        key="status",
    ),
    # A port that went down or a NIC that failed, as NCCL's async-event thread (`Got async event : port
    # error`, ≥ 2.19 with the device: `mlx5_0:1 Got async event : …`), verbs' event names and the
    # kernel's link messages report it: a physical fault on that node, never a setting.
    _p(
        "port_fault",
        ("Got async event", "IBV_EVENT_PORT_ERR", "IBV_EVENT_DEVICE_FATAL", "NIC Link is Down", "Link down"),
        r"Got async event\s*:\s*(?P<what>port error|local catastrophic error)"
        r"|IBV_EVENT_(?:PORT_ERR|DEVICE_FATAL)|NIC Link is Down|mlx\d_core \S+(?: \S+)?: Link down",
    ),
    _p("transport_error", "Got async event"),
    # NCCL's socket transport and bootstrap could not connect to a peer's address (2.2 → current).
    _p(
        "socket_connect",
        (
            "Call to connect failed",
            "failed : ",
            "socketPollConnect: Connect to",
            "socketPollConnect to",
            "exceeded retries",
            "exceeded timeouts",
        ),
        r"(?:Connect(?:ion)? to (?P<peer>\S+<\d+>).*?(?:failed(?: with error)? :?|returned \d+\()\s*"
        r"(?P<why>[A-Za-z][A-Za-z ]+)|Call to connect failed : (?P<plain>[A-Za-z ]+)|(?P<retries>exceeded "
        r"(?:retries|timeouts)))",
    ),
    # A socket given an address it cannot use (`Cannot assign requested address`, errno 99,
    # EADDRNOTAVAIL). On a bind or listen the IP is not one of this node's: MASTER_ADDR, a server
    # address in a config file or a `--host` names another machine. On a connect, no local port or
    # source address was left to use. After NCCL's and the store's own connect lines, which say more.
    _p(
        "address_unavailable",
        (
            "Cannot assign requested address",
            "cannot assign requested address",
            "EADDRNOTAVAIL",
            "errno=99",
            "errno: 99",
            "Errno 99]",
        ),
        r"(?:\b(?P<op>bind|listen|connect)[^\n]{0,300}?)?(?:cannot assign requested address|eaddrnotavail"
        r"|errno[=:] ?99\b|errno 99\])",
        lowered=True,
    ),
    # NCCL ≤ 2.x's connect loop, once per thousand refused attempts (about a second): a peer that
    # does not listen yet. A few then `Init COMPLETE` is a normal start; a run of them is not.
    _p(
        "connect_refused_retry",
        "Call to connect returned",
        r"Call to connect returned (?P<why>[A-Za-z ]+), retrying",
    ),
    _p(
        "socket_closed",
        (
            "Connection closed by remote peer",
            "Call to recv from",
            "Call to send to",
            "Failed to execute operation",
        ),
        r"^(?:.*?(?:peer |from |to )(?P<peer>[\w.:%\[\]-]+<\d+>))?",
    ),
    _p(
        "remote_exit",
        ("remote process exited or there was a network error", "ncclRemoteError"),
        r"^(?:.*?, NCCL version (?P<version>\d+\.\d+\.\d+))?",
    ),
    _p(
        "nccl_error",
        "NCCL error in:",
        r"NCCL error in: (?P<where>[^,]+), (?P<what>.*?)(?:, NCCL version (?P<version>\d+\.\d+\.\d+))?$",
    ),
    _p("nccl_aborted", "NCCL communicator was aborted"),
    _p("nccl_failure", "NCCL failure ", r"NCCL failure \S+ ?'(?P<what>[^']*)'"),
)

SCHEDULER = (
    # srun's refusal to start a step the allocation cannot hold (memory, GPUs, CPUs per task).
    _p("slurm_step_refused", "Unable to create step for job", r"Unable to create step for job (?P<job>\d+)"),
    _p(
        "slurm_cancel",
        "CANCELLED AT",
        r"\*\*\* (?:JOB|STEP) (?P<job>[\w.]+) (?:ON (?P<host>\S+) )?CANCELLED AT (?P<time>\S+)"
        r"(?: DUE (?:TO|to) (?P<reason>[A-Za-z ]+?))?(?:,[^*]*)? \*\*\*",
        key="host",
    ),
    _p("slurm_failed", "FAILED (non-zero exit code"),
    # Slurm could not start the job on a node for reasons of its own: slurmd's copy of the batch
    # script (its spool) missing or not executable, a job credential expired or rejected (clock skew,
    # munge), the node's prolog failed, the job held after a launch failure.
    _p(
        "slurm_launch",
        (
            "/slurm_script: ",
            "Job credential expired",
            "Invalid job credential",
            "Job prolog failed",
            "Slurmd could not execve job",
            "launch failed requeued held",
        ),
        r"(?:execve\(\): \S*/slurm_script: |[Cc]redential|rolog failed|could not execve|launch failed)"
        r"(?:.*?failed on node (?P<host>[\w.-]+))?",
    ),
    # srun could not start the step's tasks (`srun: StepId=123.0 aborted before step completely
    # launched.`, `srun: error: task 0 launch failed: Unspecified error`): the step's --mpi plugin or a
    # container plugin (pyxis) failing on the node, not the job's allocation.
    _p(
        "slurm_step_launch",
        (
            "aborted before step completely launched",
            " launch failed: ",
            # Open MPI started by srun without a PMI it can use
            "not built with SLURM's PMI support",
            'direct launched using "srun"',
        ),
        r"aborted before step completely launched|tasks? (?P<tasks>[\d,\- ]+) launch failed: (?P<why>.*)"
        r"|(?P<no_pmi>not built with SLURM's PMI support|direct launched using \"srun\")",
    ),
    # A pod that could not reach the Kubernetes API server (`Get https://10.43.0.1:443/api/v1/namespaces/…:
    # dial tcp 10.43.0.1:443: connect: connection refused`): an MPIJob launcher's kubectl, an operator's
    # client. A service-mesh proxy that has not started holds the pod's traffic; or a NetworkPolicy.
    _p(
        "k8s_api_unreachable",
        ("/api/v1/", "kubernetes.default"),
        r"/api/v1/|kubernetes\.default",
        needs_any=(
            "connection refused",
            "i/o timeout",
            "no route to host",
            "connection reset",
            "TLS handshake timeout",
        ),
    ),
    _p("evicted", ("Evicted", "The node was low on resource", "TaintManagerEviction")),
    _p("node_failure", ("NodeNotReady", "Kubelet stopped posting node status")),
    _p("node_failure", "Node failure on", r"Node failure on (?P<host>[\w.-]+)", key="host"),
    # Ray's words for a node that died under its workers: the GCS missed its heartbeats, or an
    # actor / task died with it (`… and ip: 10.0.0.3 has been marked dead because the detector has
    # missed too many heartbeats`, `The actor died because its node has died`).
    _p(
        "node_failure",
        ("missed too many heartbeats", "because its node has died", "node it was running on is dead"),
        r"^(?:.*?\bip: (?P<host>\d{1,3}(?:\.\d{1,3}){3}))?",
    ),
    _p("preempted", "Preempted"),
    # An autoscaler or cloud taking a node away: KubeRay / Ray's `Instance … (node IP: 10.1.2.3) will
    # be terminated soon (reason: kubernetes-pod-termination)`, a spot reclaim, an actor whose node
    # was preempted.
    _p(
        "preempted",
        (
            "will be terminated soon",
            "node was preempted",
            "Spot Instance interruption",
            "spot instance interruption",
        ),
        r"^(?:.*?node IP: (?P<host>\d{1,3}(?:\.\d{1,3}){3}))?",
    ),
    _p(
        "sigterm",
        ("SIGTERM", "SignalException", "Received "),
        # The launcher told to stop: torchrun's `Received 1 death signal` and its `SignalException:
        # Process 4123 got signal: 15` (the number says which: 1 a closed terminal, 15 a kill); a
        # daemon or framework saying it got one (Ray's raylet `received SIGTERM`, Lightning's
        # `Received SIGTERM: 15`). Not a launcher sending one (`Sending process 12 closing signal SIGTERM`).
        r"^(?=.*(?:SIGTERM|SignalException|death signal))"
        r"(?:.*?(?P<death>(?:Received (?:(?P<signum>\d+)|Signals\.(?P<signame>SIG\w+)) )?death signal"
        r"|got signal: (?P<got>\d+)|(?:[Rr]eceived|[Cc]aught) SIGTERM\b))?",
    ),
)

STORAGE_CLIENT = (
    _p("storage_error", ("AISBatchLoaderError", "BatchLoaderError")),
    # Not a network library's word for its own failure (libfabric's `err: Input/output error (5)
    # prov_errno: …`): that is a transport error, above.
    _p(
        "io_error",
        ("Input/output error", "Transport endpoint is not connected"),
        r"^(?!.*(?:prov_errno|prov/|libfabric|NET/OFI))",
    ),
    _p("stale_handle", "Stale file handle"),
    _p(
        "lustre_evicted",
        ("This client was evicted", "LustreError", "Lustre: "),
        r"evicted|was lost|LustreError",
    ),
    _p(
        "dataloader_caught",
        "in DataLoader worker process",
        r"Caught (?P<cls>\w+) in DataLoader worker process",
    ),
    # S3 and S3-compatible stores refusing requests for rate (HTTP 503 SlowDown), as botocore,
    # the AWS CLI, the CRT (`AWS_ERROR_S3_SLOW_DOWN`) and plain HTTP clients report it.
    _p(
        "storage_throttled",
        ("SlowDown", "Slow Down", "SLOW_DOWN", "reduce your request rate", "ThrottlingException"),
    ),
    # A model or dataset hub refusing requests for rate (HTTP 429 Too Many Requests): many ranks or jobs
    # downloading at once (`HTTP Error 429 thrown while requesting GET https://huggingface.co/…`,
    # `429 Client Error: Too Many Requests for url: …`). Only where the line names a download, a hub or
    # a dataset: an API the training code calls is not the job's data.
    _p(
        "hub_rate_limited",
        ("HTTP Error 429", "429 Client Error", "Too Many Requests", "status code 429", "429 Too Many"),
        r"(?i:huggingface|hf\.co|\bhub\b|dataset|download|bucket|storage|\bs3\b|\bgcs\b|blob)",
    ),
    # huggingface_hub's own back-off on a 429, which names no host: `Rate limited. Waiting 196.0s before
    # retry [Retry 1/5].`
    _p("hub_rate_limited", "Rate limited. Waiting", r"Rate limited\. Waiting [\d.]+s before retry"),
    _p("retry_last_attempt", "Retry(total=0"),
    _p(
        "retries_exhausted",
        ("retrying", "Retrying"),
        r"retr(?:y|ying|ies)\D{0,12}(\d+)\s*/\s*\1\b",
        lowered=True,
    ),
    _p("retries_exhausted", ("Max retries exceeded", "reached max retries")),
    _p(
        "connection_reset",
        (
            "Connection reset",
            "Connection aborted",
            "Connection broken",
            "Retrying (Retry(",
            "retrying",
            "Retrying",
        ),
    ),
    # A gRPC deadline is storage's only where the line says so: JAX's and TensorFlow's coordination
    # service answer a task that never registered with the same `DEADLINE_EXCEEDED`.
    _p(
        "storage_timeout",
        ("ReadTimeoutError", "DEADLINE_EXCEEDED", "Deadline Exceeded", "Read timed out"),
        r"ReadTimeoutError|Read timed out|(?i:storage|bucket|\bgcs\b|\bs3\b|blob|upload|download|object)",
    ),
    # A gRPC status line that names no service (`DEADLINE_EXCEEDED: Deadline Exceeded`): the line
    # after it says which call failed; it is kept to be quoted with that call (scanner.py).
    _p("grpc_status", ("DEADLINE_EXCEEDED", "UNAVAILABLE:"), r"^(?:DEADLINE_EXCEEDED|UNAVAILABLE)\b"),
)

DATA = (
    _p(
        "data_error",
        (
            "UnpicklingError",
            "UnidentifiedImageError",
            "OSError: image file is truncated",
            "CRC check failed",
            "Error -3 while decompressing",
            "Not a gzip file",
            "BadZipFile",
            "JSONDecodeError",
            "ArrowInvalid",
            "SafetensorError",
            "HeaderTooLarge",
            "corrupt",
            "Corrupt",
            "UnicodeDecodeError",
            "EOFError: Ran out of input",
            "ReadError: unexpected end of data",
            "ReadError: truncated",
            "DecodeError",
            # a checkpoint or weights file cut short or corrupted (torch.load, safetensors)
            "PytorchStreamReader failed reading",
            "failed finding central directory",
            "MetadataIncompleteBuffer",
        ),
        r"^(?!.*(?:corrupted/incomplete data|memory corruption|double free|malloc\(\)|free\(\)|corrupted size"
        r"|double-linked))",
    ),
)

MISSING = (
    # os.rename / os.replace / shutil.move finding its source gone (`FileNotFoundError: [Errno 2] No
    # such file or directory: '/ckpt/tmp-checkpoint-100' -> '/ckpt/checkpoint-100'`): another process
    # moved it first, or it was never written. Before the generic missing file, which reads it as data.
    _p(
        "rename_race",
        "No such file or directory: '",
        r"No such file or directory: '(?P<source>[^'\n]{1,500})' -> '",
    ),
    _p(
        "missing_file",
        ("No such file or directory", " not found", "does not exist", "doesn't exist"),
        r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):\s"
        r"(?!.*(?:shared object|\.so\b|/dev/shm|[Mm]odule|command))"
        r".*(?:No such file or directory|not found|does not exist|doesn't exist)",
    ),
)

FRAMEWORK = (
    # A Dask worker reporting a task of its own that failed (`distributed.worker - ERROR - Compute
    # Failed`, `… WARNING - Run Failed` for a function run on every worker, as RAPIDS' comms set-up is).
    _p(
        "task_failed",
        ("Compute Failed", "Run Failed"),
        r"distributed\.\w+ - (?:WARNING|ERROR) - (?:Compute|Run) Failed",
    ),
    # The script refused its own command line: argparse's `train.py: error: unrecognized arguments:
    # --local-rank=2` (and its other complaints), click's `Error: No such option: --foo`, Hugging Face's
    # `Some specified arguments are not used by the HfArgumentParser: ['--local-rank=0']`.
    _p(
        "bad_arguments",
        (
            ": error: unrecognized arguments:",
            ": error: the following arguments are required:",
            ": error: argument ",
            ": error: ambiguous option:",
            "Error: No such option:",
            "Error: Missing option",
            "Error: Got unexpected extra argument",
            "arguments are not used by the HfArgumentParser",
        ),
        r"[Ee]rror: (?:unrecognized arguments|the following arguments are required"
        r"|argument \S+: |ambiguous option|No such option|Missing option|Got unexpected extra argument"
        r"|Some specified arguments are not used by the HfArgumentParser)(?P<args>.{0,300})",
    ),
    # A resume on another layout than the save's: DeepSpeed's `The checkpoint being loaded used a DP
    # world size of 32 but the current world size is 128. Automatic adjustment of ZeRO's optimizer state
    # partitioning with a new world size is not currently supported.`; Megatron-LM's check of the
    # arguments a checkpoint was saved with (`tensor_model_parallel_size value from checkpoint (1) is not
    # equal to the input argument value (2).`), which names the argument.
    _p(
        "resume_layout",
        (
            "used a DP world size of",
            "partitioning with a new world size",
            "saved with a different world size",
            "value from checkpoint (",
        ),
        r"^(?:.*?\b(?P<arg>\w+) value from checkpoint \((?P<saved>[^)]{0,40})\) is not equal to the input "
        r"argument value \((?P<now>[^)]{0,40})\))?",
    ),
    # A checkpoint that does not fit the model it is loaded into (`size mismatch for
    # model.layers.3.mlp.up_proj.weight: copying a param with shape torch.Size([11008, 4096]) from
    # checkpoint, the shape in current model is torch.Size([0])`): shape [0] is a ZeRO-3 / FSDP
    # partitioned parameter, loaded with a plain load_state_dict.
    _p(
        "checkpoint_shape",
        "from checkpoint, the shape in current model is",
        r"^(?:.*?the shape in current model is torch\.Size\(\[(?P<current>[\d, ]{0,40})\]\))?",
    ),
    # The loss turned NaN (`averaged_loss = nan`, `loss: nan`, `Loss is NaN`): a visible failure of its
    # own, whatever made it.
    _p(
        "nan_loss",
        ("loss = nan", "loss=nan", "loss: nan", "loss is nan", "Loss is NaN", "loss is NaN", "loss': nan"),
        r"(?i)loss(?:'?\s*[:=]\s*| is )nan\b",
    ),
    # DDP's check that every rank built the same model, before the first step: `DDP expects same model
    # across all ranks, but Rank 2 has 363 params, while rank 0 has inconsistent 0 params.`, and
    # per parameter `params[3] in this process with sizes [64, 3] appears not to match sizes of the
    # same param in process 0.` A count of 0 from a peer is what the check's all-gather returns when
    # nothing arrived over the transport.
    _p(
        "ddp_model_differs",
        ("DDP expects same model across all ranks", "appears not to match"),
        r"DDP expects same model across all ranks"
        r"(?:.*?has (?P<count>\d+) params, while rank (?P<peer>\d+) has inconsistent "
        r"(?P<peer_count>\d+) params)?"
        r"|(?P<param>params\[\d+\]) in this process with (?:sizes|strides) .{0,200}? appears not to match",
    ),
    # The code reached the model through its data-parallel wrapper: `'DistributedDataParallel' object
    # has no attribute 'generate'`, `… is of type: <class '…DistributedDataParallel'>, but should be
    # <class '…ModelMixin'>` (a pipeline built from the wrapped model), FSDP's and DataParallel's alike.
    _p(
        "wrapper_misuse",
        ("DataParallel' object has no attribute", "DataParallel'>, but should be"),
        r"DataParallel'(?: object has no attribute '(?P<attr>[^'\n]{1,100})'|>, but should be)",
    ),
    _p(
        "ddp_reducer",
        (
            "Expected to have finished reduction in the prior iteration",
            "parameters that were not used in producing loss",
            "Expected to mark a variable ready only once",
        ),
    ),
)

# A tqdm bar: what a rank busy outside NCCL (tokenising, indexing a dataset, generating for an
# evaluation) prints. A fact, not an event: a console paste glues the next message to the bar's last
# update (`… 497/499 [18:29:58<05:20, 160.10s/it][E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog …`),
# and that message, another process's, is read as well (`glued`).
PROGRESS = (
    _p(
        "progress",
        # `%|` alone is a two-byte literal that slows the whole prefilter; the regex wants a digit first.
        tuple(f"{digit}%|" for digit in range(10)),
        r"^.*(?<!\d)(?P<pct>\d{1,3})%\|[^|]*\|\s*(?P<done>[\d.]+\w?)/(?P<total>[\d.]+\w?)\s*"
        r"\[(?P<elapsed>[\d:]+)<[^\],]*(?:,\s*(?P<rate>[\d.]+)(?P<unit>s/it|it/s))?[^\]]*\]"
        r"(?:\s*(?P<glued>\[[A-Z]|\[rank|\w+Error|Traceback))?",
    ),
)

# NCCL's result codes however the caller frames them: PyTorch 1.x (`NCCL error: unhandled system
# error, NCCL version 2.7.8`, `NCCL Error 2: unhandled system error`), the `ncclSystemError: …`
# line PyTorch adds, TensorFlow and Horovod (`ncclCommInitRank failed: unhandled cuda error`), CuPy
# (`NCCL_ERROR_UNHANDLED_CUDA_ERROR`), JAX/XLA and programs using NCCL's example macros
# (`Failed, NCCL error nccl.cu:60 'internal error'`). The text names the result; `fatal.nccl_result`
# reads it.
NCCL_RESULTS = (
    _p(
        "nccl_error",
        (
            "unhandled cuda error",
            "unhandled system error",
            "internal error",
            "invalid usage",
            "invalid argument",
            "unknown result code",
            "ncclUnhandledCudaError",
            "ncclSystemError",
            "ncclInternalError",
            "ncclInvalidArgument",
            "ncclInvalidUsage",
            "NCCL_ERROR_",
        ),
        r"(?i)^(?!.*NCCL WARN)(?=.*nccl)(?:.*?\b(?P<what>unhandled (?:cuda|system) error|internal error"
        r"|invalid usage|invalid argument|unknown result code)\b"
        r"|.*?\bnccl(?:_error_|_?)(?P<name>unhandled_?cuda_?error"
        r"|system_?error|internal_?error|invalid_?argument|invalid_?usage)\b)",
    ),
    # NCCL's return trace at INFO level (`NCCL INFO misc/socket.cc:567 -> 2`, then one line per caller
    # up to `init.cc:1350 -> 2`): the result code a failed call returned, 1 to 6 (7 is "in progress").
    # A rank's first line is the deepest call.
    _p(
        "nccl_return",
        (" -> 1", " -> 2", " -> 3", " -> 4", " -> 5", " -> 6"),
        r"^(?:\[\d+\] )?(?:NCCL INFO )?(?P<where>[\w./-]+\.(?:cc|cu|h|cpp)):\d+ -> (?P<code>[1-6])(?:\s|$)",
    ),
    # The example macros' line whatever its text, an empty one included (a library that calls
    # ncclGetErrorString on a code it did not get from NCCL prints `''`).
    _p("nccl_error", "NCCL error ", r"Failed[,:] NCCL error (?P<where>[\w./-]+:\d+) '(?P<what>[^']*)'"),
)

# A Python exception's class name, dotted module path allowed (`torch.distributed.DistBackendError`).
EXCEPTION_NAME = r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Interrupt)|Exception)"
_EXCEPTION_CLASS = rf"(?P<cls>{EXCEPTION_NAME})(?:\([\w.]+\))?"
_EXCEPTION_ANCHORS = ("Error", "Exception", "KeyboardInterrupt")
_EXCEPTION_WHAT = r"(?::\s*(?P<what>.*))?$"

PYTHON = (
    _p(
        "crash",
        (
            "Segmentation fault",
            "segmentation fault",
            "terminate called",
            "Fatal Python error",
            # glibc, the kernel's and Open MPI's reports of a process a signal ended
            "core dumped",
            "SIGSEGV",
            "SIGABRT",
            "Process received signal",
            "Illegal instruction",
            "Floating point exception",
            "double free or corruption",
            "free(): invalid",
            "free(): corrupted",
            "malloc(): ",
            "corrupted size vs",
            "corrupted double-linked list",
            "munmap_chunk()",
            "SIGBUS",
            "SIGILL",
            # the kernel's line for it: `traps: python[4242] trap invalid opcode ip:… in libfoo.so[…]`
            "trap invalid opcode",
            "SIGFPE",
            "Bus error",
            # the kernel's line for a user process that faulted (`python[812]: segfault at 0 ip …`)
            "segfault at ",
            # Jupyter
            "The kernel appears to have died",
            "stack smashing detected",
            # glog's fatal checks (TensorFlow, XLA, PyTorch's C++ core)
            "Check failed:",
            "Check failure stack trace",
        ),
        # The signal a line names, when it names one: Open MPI's `*** Process received signal ***`
        # and its `Signal: Segmentation fault (11)` are two events, so the second one says what ended it.
        r"^(?:.*?(?P<signal>[Ss]egmentation fault|segfault at|SIGSEGV|Illegal instruction|SIGILL"
        r"|trap invalid opcode|Bus error|SIGBUS|Check failed|Check failure|double free or corruption"
        r"|free\(\): |malloc\(\): |munmap_chunk\(\)|corrupted size vs|corrupted double-linked list))?",
        key="signal",
        # ...and one crash's `Segmentation fault` and `SIGSEGV` lines are one event, seen twice.
        key_names=CRASH_SIGNALS,
    ),
    # Hydra's banner before the traceback of a job it ran (NeMo, fairseq, any `@hydra.main` script):
    # `Error executing job with overrides: ['trainer.devices=-1', …]`.
    _p(
        "traceback", ("Traceback (most recent call last)", "Exception in thread ", "Error executing job with")
    ),
    # A traceback's frame (`  File "/opt/megatron/core/datasets/gpt_dataset.py", line 111, in __init__`):
    # what a paste cut short keeps of a traceback when neither its header nor its exception made it.
    _p("traceback_frame", 'File "', r'(?:^|\s)File "[^"\n]{1,500}", line \d+, in \S'),
    # torchelastic's error_handler JSON: `"message": "RendezvousConnectionError: The connection …",`
    _p(
        "exception",
        '"message": "',
        r'"message": "' + _EXCEPTION_CLASS + r'(?::\s*(?P<what>[^"]*))?',
    ),
    # pip at work (`Collecting torch==2.3.0`, `Building wheel for flash-attn`); not PyTorch's collect_env
    # banner (`Collecting environment information...`).
    _p(
        "setup_activity",
        ("Building wheel for", "Collecting ", "Installing collected packages"),
        r"Building wheel for|Installing collected packages|Collecting (?!environment information)\S",
    ),
    # After a logger's level word (`… - ERROR - KeyError: 'x'`) or at the start of the message. The
    # same regex serves both; a line without a level word, most of them, takes the one anchored at
    # the start, which fails at once where this one would scan the line for a level word first.
    _p(
        "exception",
        _EXCEPTION_ANCHORS,
        r"^(?:.*?\b(?:ERROR|CRITICAL|FATAL)\b[\]:|\s-]*)?\s*" + _EXCEPTION_CLASS + _EXCEPTION_WHAT,
        needs_any=("ERROR", "CRITICAL", "FATAL"),
    ),
    # Python 3.11's location markers (`^^^^`, `~~~`) from other processes' tracebacks, written into the
    # same terminal, may run into the exception line (`^^^^^^^^^ValueError: …`).
    _p("exception", _EXCEPTION_ANCHORS, r"^[\s^~]*" + _EXCEPTION_CLASS + _EXCEPTION_WHAT),
    # Not the WARNs NCCL prints when an optional part is absent and it carries on without it (no
    # verbs library: no IB, sockets instead; no net plugin): the transport lines say what it used.
    _p(
        "nccl_warn",
        "NCCL WARN",
        r" NCCL WARN (?!Failed to open libibverbs|NET/Plugin ?: ?(?:No plugin found|Failed to find))"
        r"(?P<what>.*)$",
    ),
    # NCCL ≤ 2.3 printed `host:pid:tid [dev] file.cu:61 WARN …`, without `NCCL`.
    _p("nccl_warn", " WARN ", r"^[\w./-]+:\d+ WARN (?P<what>.*)$"),
    # NCCL's WARN texts pasted without their prefix (a title, a quote): a verbs call that failed, the
    # proxy's failed calls to a peer, a ring that does not close.
    _p(
        "nccl_warn",
        (
            "Call to ibv_",
            "Proxy Call to rank",
            "Socket recv failed while polling",
            "Failed to execute operation",
            "does not loop back to start",
        ),
        r"(?P<what>(?:Call to ibv_\w+ failed|Proxy Call to rank|Socket recv failed"
        r"|Failed to execute operation|ring \d+ does not loop back).*)$",
    ),
)

# Last: lines that show a failure in any framing, for the never-silent fallback (rules/unknown.py)
# when nothing more specific named them. A non-zero exit code or status from any launcher, shell or
# scheduler (`Exit code:    3`, `exited with code 1`, `exit status 139`, `returncode=-11`), MPI's and
# Kubernetes' reports of a failed job, Slurm's own errors.
VISIBLE = (
    _p(
        "worker_exit",
        (
            "exit code",
            "Exit code",
            "EXIT CODE",
            "exit status",
            "Exit status",
            "exit_code",
            "return code",
            "returncode",
            "xited with code",
            "xited with status",
            "xit with status code",  # Horovod: `Process 1 exit with status code 1.`
        ),
        r"(?i)(?:exit(?:ed)?(?: with)?[ _](?:status code|code|status)|return[ _]?code)\s*(?:[:=]\s*)?\(?"
        r"(?P<status_code>-?[1-9]\d*)\b",
    ),
    _p(
        "worker_exit",
        (
            "non-zero exit",
            # mpirun's `exited with non-zero status`; a library's `non-zero status: -6` is a return code
            "with non-zero status",
            "nonzero exit",
            "MPI_ABORT was invoked",
            # Open MPI: `Your MPI job will now abort.` (after an error in an MPI call, or an MPI
            # call made before MPI_Init), `*** An error occurred in MPI_Allreduce`
            "Your MPI job will now abort",
            "An error occurred in MPI_",
            "CrashLoopBackOff",
            "Back-off restarting failed container",
            # MPICH / Intel MPI (hydra)
            "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
            # Kubernetes: an image that could not be pulled, a pod that could not be scheduled, a Job
            # out of retries
            "Failed to pull image",
            "ErrImagePull",
            "ImagePullBackOff",
            "FailedScheduling",
            "BackoffLimitExceeded",
            "has reached the specified backoff limit",
            # Ray: `A worker died or was killed while executing a task`, `The actor is dead because …`
            "worker died or was killed",
            "The actor is dead",
            "actor died",
            # Ray Tune / Train: `Trials did not complete: [TorchTrainer_…]`, `Number of errored trials: 1`
            "Trials did not complete",
            "errored trials",
            # Horovod: `Terminating remaining workers after failure of Process 1.`
            "after failure of Process",
        ),
        r"^(?P<nonzero>)(?:.*?MPI_ABORT was invoked on rank (?P<mpi_rank>\d+))?",
    ),
    # `kubectl describe pod`: a pod or container that failed
    _p(
        "worker_exit",
        ("Reason:", "Status:"),
        r"^\s*(?:Reason:\s+(?:Error|ContainerCannotRun|StartError|DeadlineExceeded)|Status:\s+Failed)\s*$"
        r"(?P<nonzero>)",
    ),
    _p(
        "slurm_error",
        ("slurmstepd: error", "srun: error", "sbatch: error", "salloc: error", "Job step aborted"),
        r"(?P<what>(?:error: |Job step aborted).*)$",
    ),
)

# A log whose last lines say it failed in a wording no pattern above knows (`train.py: error:
# unrecognized arguments`, `Error: unknown option`, `rocblaslt error: Could not load …`, `raise
# RuntimeError(…)`): read only in a file's last non-blank lines, and only for the never-silent
# fallback. A line at a log level below error, a count of no errors and a metric are not failures.
LAST_WORDS_LINES = 5
LAST_WORDS_FAILURE = re.compile(
    r"\b(?:\w+Error|\w*Exception|[Ee]rror|ERROR|FATAL|[Ff]atal|[Ff]ailed|FAILED|[Aa]borted|ABORTED|"
    r"[Tt]raceback)\b"
)
LAST_WORDS_BENIGN = re.compile(
    r"\b(?:INFO|DEBUG|TRACE|WARN|WARNING|[Ww]arning|[Nn]otice)\b|\w+Warning\b"
    r"|(?i:(?<![-\w])(?:no|0|zero|without|ignor\w*)\s+(?:\w+\s+)?(?:errors?|failures?)\b|\berrors?\s*[=:]\s*0\b"
    r"|\b\w*errors?[_ ]?(?:rate|count|bar)\b|\b\w*_?error\s*[=:]\s*-?[\d.])"
)

EVENT_PATTERNS: tuple[Pattern, ...] = (
    NCCL_STATE
    + COLLECTIVES
    + COMM_OVERLAP
    + GPU
    + PROCESS
    + CONFIG
    + TRANSPORT
    + SCHEDULER
    + STORAGE_CLIENT
    + DATA
    + MISSING
    + FRAMEWORK
    + NCCL_RESULTS
    + PYTHON
    + VISIBLE
)


def nccl_release(version: str) -> str:
    """NCCL's release as it is: PyTorch 1.8–1.9 split NCCL ≥ 2.9's version code (20909) as if it
    were an older one's (2909), printing `20.9.9` for 2.9.9 and `21.1.4` for 2.11.4."""
    parts = version.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts) or int(parts[0]) < 20:
        return version
    code = int(parts[0]) * 1000 + int(parts[1]) * 100 + int(parts[2])
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


def elapsed_seconds(fields: dict[str, str]) -> int:
    """A progress bar's elapsed time, `29:55` or `1:02:03`, in seconds."""
    seconds = 0
    for part in fields.get("elapsed", "0").split(":"):
        seconds = seconds * 60 + int(part or 0)
    return seconds


def _seconds_per_step(fields: dict[str, str]) -> float | None:
    try:
        rate = float(fields.get("rate") or 0)
    except ValueError:
        return None
    if rate <= 0:
        return None
    return rate if fields.get("unit") == "s/it" else 1 / rate


_APART_STEPS = 2  # ranks in one collective per step wait for each other: a step apart at most


def bars_apart(one: dict[str, str], other: dict[str, str]) -> tuple[int, int] | None:
    """Two bars of one loop (same total) that stood at least two steps apart at the same moment, by
    their elapsed times and step rate: processes at different steps, not one that stopped earlier
    (whose bar would be older by about the steps it is behind)."""
    done = one.get("done", ""), other.get("done", "")
    if one.get("total") != other.get("total") or not all(d.isdigit() for d in done):
        return None
    low, high = sorted(int(d) for d in done)
    step = _seconds_per_step(one) or _seconds_per_step(other)
    if step is None or high - low < _APART_STEPS:
        return None
    if abs(elapsed_seconds(one) - elapsed_seconds(other)) * 2 >= (high - low) * step:
        return None
    return low, high


FACT_PATTERNS: tuple[Pattern, ...] = (
    *PROGRESS,
    # A native backtrace's frame as glibc, UCX and Open MPI print it (`   4  /usr/lib/…/ep.so(+0x204c2)`,
    # `/lib/libnccl.so.2(ncclGroupEnd+0x1c)[0x7f…]`): which library a crash happened in. One per library.
    _p(
        "crash_frame",
        (".so(", ".so."),
        r"(?P<library>/[^\s()\[\]]{1,300}?\.so(?:\.[\d.]{1,20})?)\((?P<function>[^)+\s]{1,200})?[^)\s]{0,200}\)",
        key="library",
    ),
    # gdb's frames: `#0  0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, …) () from
    # /usr/local/lib/python3.10/dist-packages/jaxlib/xla_extension.so`.
    _p(
        "crash_frame",
        ") from /",
        r"\bin (?P<function>[\w:~]{1,200})\s?\(.{0,500}\) from "
        r"(?P<library>/\S{1,300}?\.so(?:\.[\d.]{1,20})?)\s*$",
        key="library",
    ),
    # NCCL without the verbs library (`NET/IB : Failed to open libibverbs.so[.1]`): on a host without IB
    # it is how NCCL finds none; beside sockets on an IB interface it is why (catalogue.py joins them).
    _p("verbs_missing", "Failed to open libibverbs"),
    # Gloo's warning that the hostname resolves to no local address, so it uses the loopback: fine on one
    # machine, the cause when gloo's connections between nodes then fail (catalogue.py joins them).
    _p("gloo_loopback", "Unable to resolve hostname to a (local) address"),
    # accelerate's state banner, once per process: `Num processes: 4` is the world it launched, and
    # `Device: cuda:0` the GPU it gave the process (the same one twice in a file: two processes, one GPU).
    _p("accelerate_world", "Num processes: ", r"^Num processes: (?P<world>\d+)\s*$", key="world"),
    _p("launcher_device", "Device: cuda:", r"^Device: cuda:(?P<device>\d+)\s*$", key="device"),
    _p(
        "pg_init",
        "ProcessGroupNCCL initialization options",
        r"size: (?P<size>\d+), global rank: (?P<global_rank>\d+), TIMEOUT\(ms\): (?P<timeout_ms>\d+)",
    ),
    _p(
        "nccl_version",
        ("NCCL version", "compiled with NCCL"),
        r"(?:NCCL version:?|compiled with NCCL) (?P<version>\d+\.\d+(?:\.\d+)?)",
        key="version",
    ),
    _p("training_done", ("Trainer.fit` stopped", "Training completed. Do not forget")),
    # Lightning announces each process joining the world: `initializing ddp: GLOBAL_RANK: 3, MEMBER: 4/8`
    # (≤ 1.5), `Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/8` (≥ 1.6).
    _p(
        "ddp_member",
        ("initializing ddp:", "Initializing distributed:"),
        r"(?i)initializing (?:ddp|distributed): GLOBAL_RANK: (?P<global_rank>\d+), MEMBER: (?P<member>\d+)/"
        r"(?P<world>\d+)",
        key="global_rank",
    ),
    _p(
        "ofi_version",
        ("NET/OFI Initializing aws", "NET/OFI Using aws"),
        r"aws-ofi-nccl (?P<version>\d+\.\d+\.\d+[\w.-]*)",
        key="version",
    ),
    _p(
        "torch_version",
        ("torch==", "PyTorch version", "Torch version"),
        r"(?i)(?:torch==|torch version:? |torch_version[=:] ?)v?(?P<version>\d+\.\d+\.\d+[\w.+]*)",
        key="version",
    ),
    # A framework starting to form the process group: DeepSpeed's `init_distributed`, torch's
    # store-based barrier (≤ 2.0) waiting for every rank's key.
    _p(
        "pg_forming",
        (
            "Initializing TorchBackend in DeepSpeed",
            "store_based_barrier_key",
            "Waiting in store based barrier",
        ),
    ),
    # … and every rank's key arrived: `Rank 0: Completed store-based barrier for key:store_based_barrier_key:1
    # with 2 nodes.` The group formed; a paste that stops after it stopped somewhere else.
    _p("pg_formed", "Completed store-based barrier"),
    # Any NCCL's word that a communicator is up (the line's layout changed across versions).
    _p("init_complete", "Init COMPLETE"),
    _p(
        "comm_rank",
        "Init COMPLETE",
        r"rank (?P<comm_rank>\d+) nranks (?P<nranks>\d+) .*?busId (?P<bus_id>[0-9a-fA-F]+).*Init COMPLETE",
        key="comm_rank",
    ),
    _p(
        "provider",
        ("Selected provider is", "Selected Provider is"),
        r"Selected [Pp]rovider is (?P<provider>\w+)",
        key="provider",
    ),
    _p("network", "Using network", r"Using network (?P<network>\S(?:.*\S)?)", key="network"),
    # The interface a job named for NCCL's sockets (`NCCL_SOCKET_IFNAME set by environment to eth2`).
    _p(
        "socket_ifname",
        "NCCL_SOCKET_IFNAME set",
        r"NCCL_SOCKET_IFNAME set (?:by environment )?to (?P<ifname>\S+)",
        key="ifname",
    ),
    # The address a node's NCCL bootstraps and connects from: peers' errors name it. NCCL 2.0–2.3
    # wrote `NET : Using interface eth1:10.0.0.5<0>`.
    _p(
        "net_addr",
        ("Bootstrap", "NET/Socket : Using", "; OOB ", "NET : Using interface"),
        r"(?:Using|OOB) (?:interface )?(?:\[\d+\])?(?P<iface>[\w.-]+):"
        r"(?P<addr>[\d.]+|[0-9a-fA-F:]+[0-9a-fA-F])(?:%\w+)?<",
        key="addr",
    ),
    # NCCL connecting two ranks through memory it believes they share: only ranks of one host can.
    _p("same_host_transport", ("via P2P/IPC", "via SHM", "via P2P/direct", "via P2P/CUMEM")),
    _p(
        "resumed",
        ("checkpoint", "Restor", "Resum", "Loading checkpoint", "Loaded checkpoint"),
        r"(?i)resum\w{0,24} (?:training )?from|restor\w{0,24} (?:states |training )?from"
        # A Python name for a value (`trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)`,
        # source code a traceback echoes) says nothing about whether a checkpoint was passed.
        r"|load(?:ed|ing) checkpoint"
        # a script's own words for it (`load model: checkpoint/start_ckpt.pt`, `loading weights from
        # ckpt/step_1000.pt`)
        r"|\bload(?:ed|ing)? (?:model|weights|state)(?: from)?:? \S*(?:ckpt|checkpoint)"
        r"|resume_from_checkpoint['\"]?\s*[=:]\s*(?!None|null|False|(?!True\b)[a-z_][\w.]{0,80}\s*[,)])\S",
    ),
)

STORAGE_PATTERNS: tuple[Pattern, ...] = (
    _p("ais_stats", "err.get.n:", r"^I (?P<clock>\d\d:\d\d:\d\d)", key="clock"),
    _p("ais_lost_objects", "out-of-bounds index"),
    _p("ais_stream_broken", ("broken pipe", "Broken pipe")),
    _p("ais_dropped", "dropping recv"),
    _p("ais_pressure", ("load=critical", "dsk=critical", "resource pressure", "free mem", "oom:")),
    _p("ais_error", "E ", r"^E "),
)

FRAMEWORK_WORDS = (
    ("NeMo", ("nemo", "NeMo")),
    ("Megatron-LM", ("megatron", "Megatron")),
    ("PyTorch Lightning", ("lightning", "Lightning")),
    ("DeepSpeed", ("deepspeed", "DeepSpeed")),
    ("Horovod", ("horovod", "Horovod")),
    # accelerate's state banner (`Distributed environment: MULTI_GPU  Backend: nccl`) and launcher
    ("Accelerate", ("Distributed environment: ", "accelerate launch")),
    ("torchrun", ("torchrun", "torch.distributed.run", "torch.distributed.elastic", "torch/distributed/run")),
)


# A shell prompt in a pasted terminal session (`[root@cl3-ac-us-hgx1 ~]# kubectl logs …`,
# `ubuntu@ip-10-0-1-17:~$ torchrun …`): the host the commands ran on. Read on a file's head lines
# only: its short literals (`]#`, `~$`) would slow the scan of every byte as anchors.
SHELL_PROMPT = re.compile(
    r"^(?:\(\S{1,40}\) )?\[?[a-z_][\w.-]{0,31}@(?P<host>(?!localhost\b)[A-Za-z][\w.-]{0,62})"
    r"(?::[^\s#$]{0,200}| [^\]\s]{1,200}\])[#$](?: |$)"
)

# A `kubectl get pods` row whose container failed (`launcher-mkjgm   0/1   Error   0   5s`), read on a
# file's head lines (a pasted table): its words are too common to look for in every line. OOMKilled,
# Evicted and image pulls are read by their own patterns, everywhere.
POD_ROW = re.compile(
    r"^(?:(?P<namespace>[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\s+)?"  # `kubectl get pods -A` adds NAMESPACE
    r"(?P<pod>[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?)\s+\d+/\d+\s+(?P<status>(?:Init:)?(?:Error|CrashLoopBackOff)"
    r"|ContainerStatusUnknown|CreateContainerConfigError|RunContainerError)\s+(?P<restarts>\d+)\b"
)
POD_FAILED = Pattern("pod_failed", ("kubectl get pods",), key="pod")

# Storage daemon logs are small: glog's `E ` severity at a line start is enough to flag a line.
STORAGE_PREFILTER = [a for p in STORAGE_PATTERNS[:-1] for a in p.anchors] + ["\nE "]


def anchors_of(patterns: tuple[Pattern, ...]) -> list[str]:
    return sorted({anchor for pattern in patterns for anchor in pattern.anchors})


_REMEMBERED_ANCHOR_SETS = 4096  # lines of one log hold few distinct sets of anchors


class Dispatcher:
    """Which patterns can match a line: one regex pass over the line finds its anchors, so only
    the few patterns that own one of them run their (slower) parsing regex."""

    def __init__(self, patterns: tuple[Pattern, ...]) -> None:
        self._patterns = patterns
        anchors = anchors_of(patterns)
        self._owners: dict[str, list[int]] = {}
        for index, pattern in enumerate(patterns):
            for anchor in pattern.anchors:
                self._owners.setdefault(anchor, []).append(index)
        self._anchors = anchors
        self._inside: dict[str, tuple[str, ...]] = {}  # matched text → anchors it contains
        self._by_found: dict[frozenset[int], list[Pattern]] = {}  # anchors found → their owners
        self._accelerated = hyperscan_matcher([anchor.encode() for anchor in anchors])
        self._by_line: dict[frozenset[int], list[tuple[str, list[int]]]] = {}

    @cached_property
    def _finder(self) -> re.Pattern[str]:
        """Every anchor in one regex, longest first: the line search where hyperscan is not installed."""
        return re.compile("|".join(re.escape(a) for a in sorted(self._anchors, key=len, reverse=True)))

    @cached_property
    def find_hits(self) -> HitFinder:
        """The block scan that selects the lines to parse, and says which anchors each one holds."""
        return build_hit_finder([anchor.encode() for anchor in self._anchors])

    def candidates(self, message: str, found: frozenset[int] | None = None) -> list[Pattern]:
        """The patterns owning an anchor the message holds, in catalogue order. `found` is what
        `find_hits` found in the line the message came from, when that is known."""
        if found is not None and SOME_LITERAL not in found:
            # Found in the whole line: an anchor inside a prefix does not count.
            owners = self._owners_of(found)
            if len(owners) == 1:
                anchor, indices = owners[0]
                return [self._patterns[i] for i in indices] if anchor in message else []
            held = {i for anchor, indices in owners if anchor in message for i in indices}
            return [self._patterns[i] for i in sorted(held)]
        if self._accelerated is not None:
            # Every occurrence of every anchor, overlaps included: the owners of all of them.
            found = frozenset(index for _, index in self._accelerated(message.encode()))
            known = self._by_found.get(found)
            if known is None:
                owners = {owner for index in found for owner in self._owners[self._anchors[index]]}
                known = [self._patterns[index] for index in sorted(owners)]
                if len(self._by_found) < _REMEMBERED_ANCHOR_SETS:
                    self._by_found[found] = known
            return known
        matched = {found.group() for found in self._finder.finditer(message)}
        if not matched:
            return []
        owners: set[int] = set()
        for text in matched:
            for anchor in self._contained(text):
                owners.update(self._owners[anchor])
        return [self._patterns[index] for index in sorted(owners)]

    def _owners_of(self, found: frozenset[int]) -> list[tuple[str, list[int]]]:
        """(anchor, the indices of the patterns owning it) for each anchor found."""
        known = self._by_line.get(found)
        if known is None:
            known = [(self._anchors[i], self._owners[self._anchors[i]]) for i in sorted(found) if i >= 0]
            if len(self._by_line) < _REMEMBERED_ANCHOR_SETS:
                self._by_line[found] = known
        return known

    def _contained(self, text: str) -> tuple[str, ...]:
        """Anchors inside a matched text: a longer anchor hides the shorter ones it contains."""
        if text not in self._inside:
            self._inside[text] = tuple(anchor for anchor in self._anchors if anchor in text)
        return self._inside[text]
