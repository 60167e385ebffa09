"""Log-line builders for the fixture generator, one per format in shared/log-formats.md.

Each builder returns the text a process actually prints, without the launcher prefix (srun
`--label`, torchrun `[defaultN]:`), which the writer adds because it depends on the file layout.
Section numbers (§) point into log-formats.md; source line numbers inside `File.cpp:NNN` are the
ones observed for that PyTorch generation, since real logs carry them (the engine must not rely
on them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# Observed `ProcessGroupNCCL.cpp:{line}` numbers per wording generation (§1, version table).
_PG_LINES = {
    "2.1": {"caught": 464, "state": 0, "ops": 481, "down": 487, "terminated": 852},
    "2.2": {"caught": 523, "state": 0, "ops": 537, "down": 543, "terminated": 1182},
    "2.3": {"caught": 563, "state": 1537, "ops": 577, "down": 583, "terminated": 1418},
    "2.4": {"caught": 607, "state": 1664, "ops": 621, "down": 627, "terminated": 1521},
    "2.5": {"caught": 616, "state": 1785, "ops": 630, "down": 636, "terminated": 1601},
    "2.6": {"caught": 632, "state": 2168, "ops": 681, "down": 695, "terminated": 1895},
}
TORCH_DIST = "/usr/local/lib/python3.12/dist-packages/torch/distributed"


@dataclass(frozen=True)
class Work:
    """A WorkNCCL as the watchdog prints it."""

    seq: int
    op: str
    numel_in: int
    numel_out: int
    timeout_ms: int


def monotonic_ns(when: datetime) -> str:
    """The 9-digit fraction of the ≥2.4 c10 prefix: monotonic nanoseconds, unrelated to the wall-clock
    seconds beside it (§0.1). Derived from the time so that regenerating a log set is byte-identical."""
    return f"{(when.microsecond * 7919 + when.second * 104_729 + when.minute) % 1_000_000_000:09d}"


@dataclass(frozen=True)
class TorchWording:
    """What one PyTorch generation prints: "2.1" … "2.5", or "2.6" for 2.6 and later (current)."""

    generation: str

    @property
    def _lines(self) -> dict[str, int]:
        return _PG_LINES[self.generation]

    @property
    def at_least_2_3(self) -> bool:
        return self.generation not in ("2.1", "2.2")

    @property
    def timestamped(self) -> bool:
        """2.4 and later stamp the c10 prefix and print the INFO banners and the FATAL terminate line."""
        return self.generation in ("2.4", "2.5", "2.6")

    @property
    def has_flight_recorder(self) -> bool:
        return self.at_least_2_3

    def cpp(self, rank: int, severity: str, when: datetime, source: str) -> str:
        """The c10 `MessageLogger` prefix (§0.1)."""
        if self.generation == "2.1":
            return f"[{severity} {source}] "
        if self.generation in ("2.2", "2.3"):
            return f"[rank{rank}]:[{severity} {source}] "
        stamp = f"{when.month}{when:%d %H:%M:%S}.{monotonic_ns(when)}"
        return f"[rank{rank}]:[{severity}{stamp} {source}] "

    def pg(self, rank: int) -> str:
        """`ProcessGroupNCCL::logPrefix()` (§1)."""
        return {
            "2.1": "",
            "2.2": "",
            "2.3": f"[PG 0 Rank {rank}] ",
            "2.4": f"[PG 0 (default_pg) Rank {rank}] ",
            "2.5": f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] ",
            "2.6": f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] ",
        }[self.generation]

    def _pg_cpp(self, rank: int, severity: str, when: datetime, key: str) -> str:
        return self.cpp(rank, severity, when, f"ProcessGroupNCCL.cpp:{self._lines[key]}")

    def work(self, work: Work) -> str:
        if self.generation == "2.1":
            return f"WorkNCCL(SeqNum={work.seq}, OpType={work.op}, Timeout(ms)={work.timeout_ms})"
        return (
            f"WorkNCCL(SeqNum={work.seq}, OpType={work.op}, NumelIn={work.numel_in}, "
            f"NumelOut={work.numel_out}, Timeout(ms)={work.timeout_ms})"
        )

    def watchdog_caught(self, rank: int, when: datetime, work: Work, ran_ms: int) -> str:
        """§1.1."""
        return (
            f"{self._pg_cpp(rank, 'E', when, 'caught')}[Rank {rank}] Watchdog caught collective operation "
            f"timeout: {self.work(work)} ran for {ran_ms} milliseconds before timing out."
        )

    def watchdog_state(self, rank: int, when: datetime, seq: int, enqueued: int, completed: int) -> str:
        """§1.2–1.4: the line with last enqueued / last completed (2.3 and later)."""
        prefix = self._pg_cpp(rank, "E", when, "state") + self.pg(rank)
        if self.generation == "2.3":
            return (
                f"{prefix}Timeout at NCCL work: {seq}, last enqueued NCCL work: {enqueued}, "
                f"last completed NCCL work: {completed}."
            )
        if self.generation in ("2.4", "2.5"):
            return (
                f"{prefix}Exception (either an error or timeout) detected by watchdog at work: {seq}, "
                f"last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}."
            )
        return (
            f"{prefix} failure detected by watchdog at work sequence id: {seq} PG status: "
            f"last enqueued work: {enqueued}, last completed work: {completed}"
        )

    def first_to_signal(self, rank: int, when: datetime) -> str:
        prefix = self.cpp(rank, "E", when, "ProcessGroupNCCL.cpp:1924") + self.pg(rank)
        return f"{prefix}First PG on this rank to signal dumping."

    def observed_signal(self, rank: int, when: datetime) -> str:
        return (
            f"{self.cpp(rank, 'E', when, 'ProcessGroupNCCL.cpp:1922')}{self.pg(rank)}"
            "Observed flight recorder dump signal from another rank via TCPStore."
        )

    def dump_reason(
        self, rank: int, when: datetime, origin: int | None, enqueued: int, completed: int
    ) -> str:
        """§1.10: `from this local rank` or `from  rank N` (double space), and no space in `{m}.This`."""
        source = "this local rank" if origin is None else f" rank {origin}"
        return (
            f"{self.cpp(rank, 'E', when, 'ProcessGroupNCCL.cpp:1987')}{self.pg(rank)}Received a dump signal "
            f"due to a collective timeout from {source} and we will try our best to dump the debug info. "
            f"Last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.This is most likely "
            "caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of "
            "collectives is not same for all ranks or the scheduled collective, for some reason, didn't run. "
            "Additionally, this can be caused by GIL deadlock or other reasons such as network errors or "
            "bugs in the communications library (e.g. NCCL), etc. "
        )

    def preparing_dump(self, rank: int, when: datetime) -> str:
        suffix = "" if self.generation == "2.3" else " Include stack trace: 1"
        if self.generation == "2.6":
            suffix += ", only active collectives: 0"
        return (
            f"{self.cpp(rank, 'E', when, 'ProcessGroupNCCL.cpp:1700')}{self.pg(rank)}"
            f"ProcessGroupNCCL preparing to dump debug info.{suffix}"
        )

    def stack_trace_of_failed_collective(self, rank: int, when: datetime, op: str) -> list[str]:
        """§1.5 (2.6 and later); no PG prefix on these lines."""
        call = {"ALLREDUCE": "all_reduce", "BROADCAST": "broadcast"}.get(op, "all_gather_into_tensor")
        return [
            f"{self.cpp(rank, 'E', when, 'ProcessGroupNCCL.cpp:801')}Stack trace of the failed collective: ",
            f"#0 {call} from {TORCH_DIST}/distributed_c10d.py:3174",
            f"#1 wrapper from {TORCH_DIST}/c10d_logger.py:81",
            "#2 train_step from /workspace/train.py:241",
        ]

    def some_ops_failed(self, rank: int, when: datetime) -> str:
        """§1.6: no `[Rank R]` before 2.3."""
        who = f"[Rank {rank}] " if self.at_least_2_3 else ""
        return (
            f"{self._pg_cpp(rank, 'E', when, 'ops')}{who}Some NCCL operations have failed or timed "
            "out. Due to "
            "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data."
        )

    def taking_down(self, rank: int, when: datetime) -> str:
        who = f"[Rank {rank}] " if self.at_least_2_3 else ""
        return (
            f"{self._pg_cpp(rank, 'E', when, 'down')}{who}To avoid data inconsistency, we are taking the "
            "entire process down."
        )

    def async_error(self, rank: int, when: datetime, work: Work, what: str) -> str:
        """§1.9: the collective failed with an NCCL error instead of timing out."""
        return (
            f"{self._pg_cpp(rank, 'E', when, 'state')}[Rank {rank}] Collective {self.work(work)} raised the "
            f"following async exception: {what}"
        )

    def watchdog_terminated(self, rank: int, when: datetime, what: str) -> list[str]:
        """§1.8, then what the C++ runtime prints on std::terminate."""
        if self.at_least_2_3:
            head = f"{self.pg(rank)}Process group watchdog thread terminated with exception: {what}"
            exception = "c10::DistBackendError"
        else:
            head = f"[Rank {rank}] NCCL watchdog thread terminated with exception: {what}"
            exception = "std::runtime_error"
        return [
            f"{self._pg_cpp(rank, 'E', when, 'terminated')}{head}",
            f"terminate called after throwing an instance of '{exception}'",
            f"  what():  {head}",
            "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            f"{self._lines['caught']} (most recent call first):",
        ]

    def terminating(self, rank: int, when: datetime) -> str | None:
        """§1.11: the FATAL line with the duplicated prefix (2.4 and later)."""
        if not self.timestamped:
            return None
        pg = self.pg(rank)
        return (
            f"{self.cpp(rank, 'F', when, 'ProcessGroupNCCL.cpp:1653')}{pg}{pg}Terminating the process after "
            "attempting to dump debug info, due to collective timeout or exception."
        )

    def init_banner(self, rank: int, when: datetime, world: int, timeout_ms: int, nccl: str) -> list[str]:
        """§1.12 banners, printed at INFO by 2.4 and later with TORCH_CPP_LOG_LEVEL=INFO."""
        if not self.timestamped:
            return []
        cpp = self.cpp(rank, "I", when, "ProcessGroupNCCL.cpp:913")
        return [
            f"{cpp}{self.pg(rank)}ProcessGroupNCCL initialization options: size: {world}, global "
            f"rank: {rank}, "
            f"TIMEOUT(ms): {timeout_ms}, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, "
            "PG Name: 0",
            f"{cpp}{self.pg(rank)}ProcessGroupNCCL environments: NCCL version: {nccl}, "
            "TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 1, "
            "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC: "
            "60000, TORCH_NCCL_DESYNC_DEBUG: 0, TORCH_NCCL_ENABLE_TIMING: 0, TORCH_NCCL_BLOCKING_WAIT: 0, "
            "TORCH_DISTRIBUTED_DEBUG: OFF, TORCH_NCCL_TRACE_BUFFER_SIZE: 2000, TORCH_NCCL_NAN_CHECK: 0",
        ]

    def python_prefix(self, rank: int) -> str:
        """§0.2: `[rankN]: ` before each traceback line (2.3 and later)."""
        return f"[rank{rank}]: " if self.at_least_2_3 else ""

    def oom_exception(self) -> str:
        return "torch.OutOfMemoryError" if self.timestamped else "torch.cuda.OutOfMemoryError"

    def cuda_oom(
        self, gpu: int, tried: str, total: str, free: str, in_use: str, allocated: str, reserved: str
    ) -> str:
        """§5.1: the 2.1 wording carries the upstream typo `capacty`."""
        if self.generation == "2.1":
            return (
                f"{self.oom_exception()}: CUDA out of memory. Tried to allocate {tried}. GPU {gpu} "
                "has a total "
                f"capacty of {total} of which {free} is free. Including non-PyTorch memory, this process has "
                f"{in_use} memory in use. Of the allocated memory {allocated} is allocated by PyTorch, and "
                f"{reserved} is reserved by PyTorch but unallocated. If reserved but unallocated "
                "memory is large "
                "try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory "
                "Management "
                "and PYTORCH_CUDA_ALLOC_CONF"
            )
        return (
            f"{self.oom_exception()}: CUDA out of memory. Tried to allocate {tried}. GPU {gpu} has a total "
            f"capacity of {total} of which {free} is free. Including non-PyTorch memory, this process has "
            f"{in_use} memory in use. Of the allocated memory {allocated} is allocated by PyTorch, "
            f"and {reserved} "
            "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
            "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        )

    def cuda_error_exception(self) -> str:
        return "torch.AcceleratorError" if self.generation == "2.6" else "RuntimeError"


@dataclass(frozen=True)
class NcclWording:
    """What one NCCL release prints (§0.4, §2)."""

    version: str  # e.g. "2.21.5"

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    def info(self, host: str, pid: int, dev: int, message: str) -> str:
        return f"{host}:{pid}:{pid + 110 + dev} [{dev}] NCCL INFO {message}"

    def warn(self, host: str, pid: int, dev: int, when: datetime, where: str, message: str) -> list[str]:
        """A blank line precedes every WARN; 2.26 and later stamp it."""
        stamp = f"[{when:%Y-%m-%d %H:%M:%S}] " if self.minor >= 26 else ""
        return ["", f"{stamp}{host}:{pid}:{pid + 230 + dev} [{dev}] {where} NCCL WARN {message}"]

    def version_line(self, host: str, pid: int, dev: int) -> str:
        """§2.1: a bare stdout line up to 2.21, an INFO line from 2.22."""
        text = f"NCCL version {self.version}+cuda12.4"
        return text if self.minor <= 21 else self.info(host, pid, dev, text)

    def bootstrap(self, host: str, pid: int, dev: int, address: str) -> str:
        colon = "Bootstrap: Using" if self.minor >= 24 else "Bootstrap : Using"
        return self.info(host, pid, dev, f"{colon} enp71s0:{address}<0>")

    def init_complete(self, host: str, pid: int, dev: int, rank: int, world: int, bus: str) -> str:
        """§2.4, by version."""
        comm = f"comm {comm_pointer(rank)}"
        tail = f"rank {rank} nranks {world} cudaDev {dev} nvmlDev {dev} busId {bus} commId 0x2114bc51af4fb978"
        if self.minor >= 21:
            return self.info(host, pid, dev, f"ncclCommInitRank {comm} {tail} - Init COMPLETE")
        return self.info(host, pid, dev, f"{comm} {tail} - Init COMPLETE")

    def error_string(self, kind: str) -> str:
        """§2.11."""
        modern = self.minor >= 18
        return {
            "system": "unhandled system error"
            + (" (run with NCCL_DEBUG=INFO for details)" if modern else ""),
            "cuda": "unhandled cuda error" + (" (run with NCCL_DEBUG=INFO for details)" if modern else ""),
            "remote": "remote process exited or there was a network error",
            "internal": "internal error"
            + (" - please report this issue to the NCCL developers" if modern else ""),
        }[kind]


def comm_pointer(rank: int) -> str:
    """The communicator address NCCL prints for a rank's default communicator."""
    return f"0x{0x55D0_0000_0000 + rank * 0x1F40:x}"


@dataclass(frozen=True)
class OfiWording:
    """aws-ofi-nccl (§3)."""

    version: str  # e.g. "1.13.2"

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    def init_lines(self, provider: str, nics: int, fabric: str) -> list[str]:
        if self.minor >= 14:
            selected = f"NET/OFI Selected provider is {provider}, fabric is {fabric} (found {nics} nics)"
        else:
            selected = f"NET/OFI Selected Provider is {provider} (found {nics} nics)"
        lines = [
            f"NET/OFI Initializing aws-ofi-nccl {self.version}-aws",
            "NET/OFI Using Libfabric version 1.22",
        ]
        if self.minor >= 13:
            lines.append("NET/OFI Using CUDA driver version 12040 with runtime 12040")
        lines += ["NET/OFI Configuring AWS-specific options", selected]
        return lines

    @property
    def network_name(self) -> str:
        return "Libfabric" if self.minor >= 13 else "AWS Libfabric"


def dmesg_t(when: datetime, message: str) -> str:
    """`dmesg -T` (§0.6)."""
    return f"[{when:%a %b} {when.day:>2} {when:%H:%M:%S %Y}] {message}"


def journal(when: datetime, host: str, message: str) -> str:
    """journald / kern.log (§0.6)."""
    return f"{when:%b} {when.day:>2} {when:%H:%M:%S} {host} kernel: {message}"


def torchrun_agent(
    generation: str, when: datetime, level: str, pid: int, module: str, line: int, msg: str
) -> str:
    """torch.distributed.elastic logging (§0.3): dated `[...] logger: [LEVEL]` up to 2.2, glog-style after."""
    if generation in ("2.1", "2.2"):
        logger = module.removesuffix(".py").replace("/", ".")
        names = {"E": "ERROR", "W": "WARNING", "I": "INFO"}
        return f"[{when:%Y-%m-%d %H:%M:%S},{when.microsecond // 1000:03d}] {logger}: [{names[level]}] {msg}"
    usec = f"{when.microsecond // 1000:03d}000"
    return f"{level}{when:%m%d %H:%M:%S}.{usec} {pid} {module}:{line}] {msg}"
