"""The incident corpus: each scenario writes one realistic job's logs and says what it planted.

Every function takes an empty directory and returns a `Planted`: the CONTRACT category, the
culprit ranks and nodes, and the decisive line(s) as the generator wrote them. Scenarios vary the
PyTorch wording generation (2.1 … current), the NCCL release and the file layout on purpose.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.triage.formats import Work, comm_pointer
from tests.triage.loggen import (
    COLLECTIVES_PER_STEP,
    GRAD_NUMEL,
    LOADER_FRAMES,
    P5_GPU_BUSES,
    TRAIN_FRAMES,
    Job,
    KernelLog,
    Layout,
    LogSet,
    Mark,
    Planted,
    dataloader_worker_failure,
    first_to_fire,
    python_traceback,
    recovered_reset,
    seconds,
    shard_url,
    slurm_cancelled,
    stuck_work,
    urllib3_retry,
    write_async_failure,
    write_collective_timeout,
    write_kernel_noise,
    write_launcher_exits,
    write_notified,
    write_startup,
    write_training,
)

STEPS = 120
DECISIVE = "decisive"
# The main process's re-raise names the worker's exception type: an honest citation of the same fact.
CAUGHT_IN_WORKER = Mark("caught in worker", "in DataLoader worker process")


def slurm_hosts(count: int) -> tuple[str, ...]:
    return tuple(f"gpu-st-p5-{i}" for i in range(count))


def ec2_hosts(count: int) -> tuple[str, ...]:
    return tuple(f"ip-10-1-{i // 200}-{10 + i % 200}" for i in range(count))


def _train(ls: LogSet, steps: int = STEPS, reset_rate: float = 0.004) -> datetime:
    """Kernel boot noise, startup and `steps` healthy steps; returns when the next step starts."""
    write_kernel_noise(ls, range(len(ls.job.hosts)))
    started = write_startup(ls)
    return write_training(ls, range(1, steps + 1), started, reset_rate=reset_rate)


def _everyone_else_times_out(
    ls: LogSet, stuck_at: datetime, missing: set[int], completed_steps: int = STEPS
) -> datetime:
    """The ranks still alive enter the next collective and wait for `missing` until the timeout."""
    job = ls.job
    work = stuck_work(job, completed_steps)
    waiting = {r: work for r in range(job.world_size) if r not in missing}
    done = {r: work.seq - 1 for r in waiting}
    return write_collective_timeout(ls, stuck_at + seconds(0.3), waiting, done)


def _sockets_close_as_peers_abort(ls: LogSet, when: datetime, ranks: Sequence[int]) -> None:
    """Once the first processes abort, their peers' NCCL sockets see the other end close: aftermath."""
    job = ls.job
    for rank in ranks:
        peer = (rank + job.ranks_per_node) % job.world_size
        closed = f"socketProgress: Connection closed by remote peer {job.host_of(peer)}<{41_000 + peer}>"
        warn = job.nccl_on(job.node_of(rank)).warn(
            job.host_of(rank), job.pid(rank), job.local(rank), when, "misc/socket.cc:50", closed
        )
        ls.rank(rank, when + seconds(rank * 0.001), warn)


def _aborts(job: Job, ranks: set[int] | range, code: int = -6) -> dict[int, int]:
    return dict.fromkeys(ranks, code)


def _crash_then_timeout(ls: LogSet, culprit: int, stuck_at: datetime, exit_code: int) -> None:
    """`culprit` died at `stuck_at`; under torchrun its node's agent takes down its neighbours at once,
    under srun the others run on; every remaining rank times out in the next collective."""
    job = ls.job
    node_ranks = set(job.ranks_on(job.node_of(culprit)))
    if job.layout in (Layout.TORCHRUN, Layout.KUBECTL):
        write_launcher_exits(
            ls,
            stuck_at + seconds(2),
            {culprit: exit_code, **_aborts(job, node_ranks - {culprit}, -15)},
            root_rank=culprit,
        )
        gone = node_ranks
    else:
        gone = {culprit}
    fired = _everyone_else_times_out(ls, stuck_at, gone)
    others = set(range(job.world_size)) - gone
    exits = _aborts(job, others)
    if job.layout in (Layout.SLURM_NODE, Layout.PER_RANK):
        exits[culprit] = exit_code
    write_launcher_exits(ls, fired + seconds(5), exits)


# --- data_loading_stall ----------------------------------------------------------------------


def _straggler(
    root: Path,
    job: Job,
    stragglers: Sequence[int],
    name: str,
    *,
    steps: int = STEPS,
    rank0_ahead: bool = False,
    before: Callable[[LogSet], None] | None = None,
) -> Planted:
    """Ranks stuck outside NCCL (enqueued == completed) while all others wait inside.

    `before` writes unrelated history (e.g. an old kernel message) ahead of the job.
    """
    ls = LogSet(root, job)
    if before:
        before(ls)
    stuck_at = _train(ls, steps)
    base = steps * COLLECTIVES_PER_STEP
    op, numel = ("BROADCAST", 131_072_000) if rank0_ahead else ("ALLREDUCE", GRAD_NUMEL)
    stuck = Work(base + 1, op, numel, numel, job.timeout_ms)
    waiting = {r: stuck for r in range(job.world_size) if r not in stragglers}
    completed = {r: base for r in waiting}
    enqueued = {r: stuck.seq for r in waiting}
    if rank0_ahead and 0 not in stragglers:
        # The broadcast root finished its send and is already waiting in the next all-reduce.
        waiting[0] = Work(base + 2, "ALLREDUCE", GRAD_NUMEL, GRAD_NUMEL, job.timeout_ms)
        completed[0], enqueued[0] = base + 1, base + 2
    issued = stuck_at + seconds(0.3)
    fired = write_collective_timeout(ls, issued, waiting, completed, enqueued)
    first = first_to_fire(waiting)
    state = f"Last enqueued NCCL work: {base}, last completed NCCL work: {base}."
    keys = [f"{DECISIVE} rank {rank}" for rank in stragglers]
    for rank, key in zip(stragglers, keys, strict=True):
        write_notified(ls, rank, fired + seconds(1.7), first, base, base, Mark(key, state, 1))
    _sockets_close_as_peers_abort(ls, fired + seconds(2.5), sorted(waiting)[:: max(1, len(waiting) // 6)])
    ls.flush()
    exits = {**_aborts(job, set(waiting)), **_aborts(job, set(stragglers), -15)}
    write_launcher_exits(ls, fired + seconds(6), exits, root_rank=first)
    who = ", ".join(map(str, stragglers))
    story = (
        f"Rank(s) {who} stalled in data loading after step {steps}: enqueued == completed == {base}, "
        "they only observed the dump signal, every other rank timed out inside the collective."
    )
    nodes = {job.node_of(rank) for rank in stragglers}
    planted = ls.planted(name, "data_loading_stall", stragglers, nodes, keys, story)
    return replace(planted, collective_issued_at=issued)


def straggler_current_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(8), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE)
    return _straggler(root, job, (43,), "straggler_current_slurm")


def straggler_2_4_per_rank(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.20.5", layout=Layout.PER_RANK)
    return _straggler(root, job, (17,), "straggler_2_4_per_rank")


def straggler_2_3_torchrun_broadcast_root_ahead(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.3", nccl="2.20.5", layout=Layout.TORCHRUN, timeout_ms=600_000)
    return _straggler(root, job, (26,), "straggler_2_3_torchrun_broadcast_root_ahead", rank0_ahead=True)


def straggler_2_5_kubectl_gzipped(root: Path) -> Planted:
    job = Job(ec2_hosts(6), torch="2.5", nccl="2.21.5", layout=Layout.KUBECTL, gzip_nodes=frozenset({0, 4}))
    return _straggler(root, job, (35,), "straggler_2_5_kubectl_gzipped")


def straggler_nccl_debug_warn_current_slurm(root: Path) -> Planted:
    """NCCL_DEBUG=WARN, as most production jobs run: no NCCL INFO lines to map ranks to hosts."""
    job = Job(
        slurm_hosts(4), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE, nccl_debug="WARN"
    )
    return _straggler(root, job, (21,), "straggler_nccl_debug_warn_current_slurm")


def straggler_kubectl_timestamps_2_4(root: Path) -> Planted:
    """`kubectl logs --timestamps` dumps: an RFC 3339 time before the torchrun prefix of every line."""
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.KUBECTL, kubectl_timestamps=True)
    return _straggler(root, job, (30,), "straggler_kubectl_timestamps_2_4")


def straggler_with_stale_xid_in_dmesg_current_slurm(root: Path) -> Planted:
    """dmesg keeps history: an Xid 31 from a previous job, hours before this one started, is not the cause."""
    job = Job(slurm_hosts(4), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE)

    def stale_xid(ls: LogSet) -> None:
        ls.kernel(
            1,
            job.start - timedelta(hours=3),
            f"NVRM: Xid (PCI:0000:{P5_GPU_BUSES[4]}:00): 31, pid=18822, name=python, Ch 0000000a, intr "
            "00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_7 faulted @ 0x7f3a_c4000000. Fault is "
            "of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
        )

    return _straggler(root, job, (29,), "straggler_with_stale_xid_in_dmesg_current_slurm", before=stale_xid)


def two_stragglers_on_two_nodes_current_per_rank(root: Path) -> Planted:
    """Every outlier must be named: two ranks on different nodes never entered the collective."""
    job = Job(ec2_hosts(6), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=Layout.PER_RANK)
    return _straggler(root, job, (12, 45), "two_stragglers_on_two_nodes_current_per_rank")


def straggler_at_scale(
    root: Path, nodes: int = 128, steps: int = 12, layout: Layout = Layout.SLURM_NODE
) -> Planted:
    """1,024 ranks by default: the report must stay small and still name the one straggler."""
    job = Job(slurm_hosts(nodes), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=layout)
    return _straggler(root, job, (777 % job.world_size,), "straggler_at_scale", steps=steps)


# --- collective_mismatch -----------------------------------------------------------------------


def _mismatch(
    root: Path, job: Job, odd: int, odd_work: Callable[[Work], Work], contains: str, name: str
) -> Planted:
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    normal = stuck_work(job, STEPS)
    works = {r: odd_work(normal) if r == odd else normal for r in range(job.world_size)}
    done = {r: normal.seq - 1 for r in works}
    fired = write_collective_timeout(
        ls, stuck_at + seconds(0.3), works, done, marks={odd: Mark(DECISIVE, contains)}
    )
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, range(job.world_size)), root_rank=0)
    story = (
        f"Rank {odd} issued a different collective at SeqNum {normal.seq} ({contains}); all ranks timed out."
    )
    return ls.planted(name, "collective_mismatch", [odd], [job.node_of(odd)], [DECISIVE], story)


def mismatch_optype_2_1_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(4), torch="2.1", nccl="2.18.5", ofi="1.7.4", layout=Layout.SLURM_NODE)
    return _mismatch(
        root,
        job,
        11,
        lambda w: replace(w, op="_ALLGATHER_BASE"),
        "OpType=_ALLGATHER_BASE",
        "mismatch_optype_2_1_slurm",
    )


def mismatch_numel_current_kubectl(root: Path) -> Planted:
    job = Job(ec2_hosts(6), torch="2.6", nccl="2.23.4", ofi="1.13.2", layout=Layout.KUBECTL)
    return _mismatch(
        root,
        job,
        40,
        lambda w: replace(w, numel_in=4_194_304, numel_out=4_194_304),
        "NumelIn=4194304",
        "mismatch_numel_current_kubectl",
    )


# --- network ---------------------------------------------------------------------------------------


def _fabric_failure(
    root: Path,
    job: Job,
    bad_node: int,
    warn: Callable[[LogSet, int, datetime], list[str]],
    index: int,
    contains: str,
    name: str,
) -> Planted:
    """Every rank enters the collective; the ranks of one node log fabric errors; all time out."""
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    bad = job.ranks_on(bad_node)
    for offset, rank in enumerate(bad):
        mark = Mark(DECISIVE, contains, index) if offset == 0 else None
        ls.rank(rank, stuck_at + seconds(0.5 + offset * 0.01), warn(ls, rank, stuck_at + seconds(0.5)), mark)
    ls.flush()
    fired = _everyone_else_times_out(ls, stuck_at, set())
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, range(job.world_size)), root_rank=0)
    story = (
        f"The fabric on {job.hosts[bad_node]} failed mid-collective; every rank was inside the collective."
    )
    return ls.planted(name, "network", bad, [bad_node], [DECISIVE], story)


def _ofi_unresponsive_receiver(ls: LogSet, rank: int, when: datetime) -> list[str]:
    job = ls.job
    node = job.node_of(rank)
    nccl = job.nccl_on(node)
    where = "int cm_req_handle_error_entry(nccl_net_ofi_context_t*, fid_cq*, fi_cq_err_entry*, uint16_t):46"
    message = (
        f"NET/OFI Request 0x7f456c2{rank:05x} completed with error. RC: 103. Error: 4126 "
        "(Unresponsive receiver "
        "(reachable by EFA device but handshake failed) My EFA addr: fi_addr_efa://[fe80::c55:2eff:fe44:db5]:0:"
        f"142160333 My host id: i-07792e0f955a9{node:04d} Peer EFA addr: fi_addr_efa://[fe80::454:14ff:fedd:d5b3]"
        ":0:825957744 Peer host id: N/A). Completed length: 0"
    )
    return nccl.warn(job.hosts[node], job.pid(rank), job.local(rank), when, where, message)


def efa_unresponsive_current_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(8), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE)
    return _fabric_failure(
        root,
        job,
        5,
        _ofi_unresponsive_receiver,
        1,
        "completed with error. RC: 103",
        "efa_unresponsive_current_slurm",
    )


def _ofi_remote_unresponsive(ls: LogSet, rank: int, when: datetime) -> list[str]:
    job = ls.job
    node = job.node_of(rank)
    nccl = job.nccl_on(node)
    message = (
        f"NET/OFI Request 0x7fbb9447{rank:04x} completed with error. RC: 13. Error: 13 (Unresponsive remote "
        "(was previously responsive)). Completed length: 0, Request: { buffer_index: 255, dev: 1, size: 0, "
        "state: CREATED, direction: SEND }"
    )
    lines = nccl.warn(job.hosts[node], job.pid(rank), job.local(rank), when, "ofi_process_cq:1039", message)
    return [*lines, nccl.info(job.hosts[node], job.pid(rank), job.local(rank), "transport/net.cc:1080 -> 6")]


def efa_remote_2_2_per_rank(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.2", nccl="2.19.3", ofi="1.9.1", layout=Layout.PER_RANK)
    return _fabric_failure(
        root,
        job,
        2,
        _ofi_remote_unresponsive,
        1,
        "Unresponsive remote (was previously responsive)",
        "efa_remote_2_2_per_rank",
    )


# --- gpu_hardware --------------------------------------------------------------------------------


def _gpu_fault(
    root: Path,
    job: Job,
    culprit: int,
    kernel_lines: list[str],
    user_lines: Callable[[LogSet], list[str]],
    contains: str,
    name: str,
    fault: str,
    exit_code: int,
) -> Planted:
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    node = job.node_of(culprit)
    for i, line in enumerate(kernel_lines):
        ls.kernel(
            node, stuck_at + seconds(0.1 + i * 0.001), line, Mark(DECISIVE, contains) if i == 0 else None
        )
    ls.rank(culprit, stuck_at + seconds(0.4), user_lines(ls))
    ls.flush()
    _crash_then_timeout(ls, culprit, stuck_at + seconds(0.5), exit_code)
    story = f"The GPU of rank {culprit} on {job.hosts[node]} failed ({fault}); the others waited for it."
    return ls.planted(name, "gpu_hardware", [culprit], [node], [DECISIVE], story)


def xid79_2_4_torchrun(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.TORCHRUN, kernel_log=KernelLog.DMESG)
    culprit = 29
    bus = job.bus(culprit)
    kernel = [
        f"NVRM: Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.",
        f"NVRM: GPU 0000:{bus}:00.0: GPU serial number is 1653723052734.",
    ]

    def user(ls: LogSet) -> list[str]:
        w = ls.job.wording
        when = ls.job.start + seconds(STEPS * ls.job.step_seconds + 20)
        return w.watchdog_terminated(culprit, when, "CUDA error: unknown error")

    return _gpu_fault(
        root, job, culprit, kernel, user, "): 79, pid=", "xid79_2_4_torchrun", "Xid 79, fell off the bus", -6
    )


def ecc_current_kubectl_journal(root: Path) -> Planted:
    job = Job(
        ec2_hosts(8),
        torch="2.6",
        nccl="2.23.4",
        layout=Layout.KUBECTL,
        kernel_log=KernelLog.JOURNAL,
        gzip_nodes=frozenset({2, 6}),
    )
    culprit = 50
    bus = job.bus(culprit)
    kernel = [
        f"NVRM: Xid (PCI:0000:{bus}:00): 48, pid={job.pid(culprit)}, name=pt_main_thread, An "
        "uncorrectable double bit "
        "error (DBE) has been detected on GPU in the framebuffer at physAddr 0x18f31d80 partition "
        "16, subpartition 3.",
        f"NVRM: Xid (PCI:0000:{bus}:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
        "(0x0000000018f31d80) marked for remapping, reset gpu to activate.",
    ]

    def user(ls: LogSet) -> list[str]:
        w = ls.job.wording
        prefix = w.python_prefix(culprit)
        error = f"{w.cuda_error_exception()}: CUDA error: uncorrectable ECC error encountered"
        return [
            *python_traceback(prefix, TRAIN_FRAMES, error),
            f"{prefix}Search for `cudaErrorECCUncorrectable' in https://docs.nvidia.com/cuda/"
            "cuda-runtime-api/group__CUDART__TYPES.html for more information.",
            f"{prefix}CUDA kernel errors might be asynchronously reported at some other API call, "
            "so the stacktrace below might be incorrect.",
            f"{prefix}For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        ]

    return _gpu_fault(
        root,
        job,
        culprit,
        kernel,
        user,
        "): 48, pid=",
        "ecc_current_kubectl_journal",
        "Xid 48, uncorrectable ECC",
        1,
    )


# --- gpu_oom -------------------------------------------------------------------------------------


def _rank_raises(
    root: Path,
    job: Job,
    culprit: int,
    lines: Callable[[LogSet], list[str]],
    index: int,
    contains: str,
    category: str,
    name: str,
    story: str,
    exit_code: int = 1,
    equivalent: Mark | None = None,
) -> Planted:
    """`culprit` prints `lines` (an exception) and exits; everyone else times out waiting for it."""
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    marks = [Mark(DECISIVE, contains, index), *([equivalent] if equivalent else [])]
    ls.rank(culprit, stuck_at + seconds(0.2), lines(ls), marks)
    ls.flush()
    _crash_then_timeout(ls, culprit, stuck_at + seconds(0.3), exit_code)
    keys = [mark.key for mark in marks]
    return ls.planted(name, category, [culprit], [job.node_of(culprit)], keys, story)


def cuda_oom_current_torchrun(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=Layout.TORCHRUN)
    culprit = 13

    def lines(ls: LogSet) -> list[str]:
        w = ls.job.wording
        oom = w.cuda_oom(5, "3.38 GiB", "79.11 GiB", "1.02 GiB", "78.07 GiB", "74.12 GiB", "2.61 GiB")
        return python_traceback(w.python_prefix(culprit), TRAIN_FRAMES, oom)

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        -1,
        "CUDA out of memory. Tried to allocate 3.38 GiB",
        "gpu_oom",
        "cuda_oom_current_torchrun",
        "Rank 13 ran out of GPU memory in the forward pass.",
    )


def cuda_oom_2_1_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(2), torch="2.1", nccl="2.18.5", ofi="1.7.4", layout=Layout.SLURM_NODE)
    culprit = 6

    def lines(ls: LogSet) -> list[str]:
        oom = ls.job.wording.cuda_oom(
            6, "6.37 GiB", "79.11 GiB", "2.93 GiB", "76.17 GiB", "68.61 GiB", "5.63 GiB"
        )
        return python_traceback("", TRAIN_FRAMES, oom)

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        -1,
        "total capacty of 79.11 GiB",
        "gpu_oom",
        "cuda_oom_2_1_slurm",
        "Rank 6 ran out of GPU memory (PyTorch 2.1 wording, `capacty`).",
    )


def nccl_cuda_oom_2_4_per_rank(root: Path) -> Planted:
    job = Job(ec2_hosts(2), torch="2.4", nccl="2.21.5", layout=Layout.PER_RANK)
    culprit = 3

    def lines(ls: LogSet) -> list[str]:
        j = ls.job
        nccl, host, pid = j.nccl_on(0), j.host_of(culprit), j.pid(culprit)
        when = j.start + seconds(STEPS * j.step_seconds + 20)
        prefix = j.wording.python_prefix(culprit)
        warn = nccl.warn(host, pid, 3, when, "include/alloc.h:316", "Cuda failure 'out of memory'")
        warn += nccl.warn(host, pid, 3, when, "include/alloc.h:324", "Failed to CUDA calloc 2097152 bytes")
        exc = (
            f"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            f"ProcessGroupNCCL.cpp:2251, {nccl.error_string('cuda')}, NCCL version {nccl.version}"
        )
        tail = [
            f"{prefix}ncclUnhandledCudaError: Call to CUDA function failed.",
            f"{prefix}Last error:",
            f"{prefix}Cuda failure 'out of memory'",
        ]
        return warn + python_traceback(prefix, TRAIN_FRAMES, exc) + tail

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        1,
        "NCCL WARN Cuda failure 'out of memory'",
        "gpu_oom",
        "nccl_cuda_oom_2_4_per_rank",
        "NCCL could not allocate GPU memory on rank 3.",
    )


def cudnn_not_initialized_2_2_per_rank(root: Path) -> Planted:
    """Seed 004: cuDNN initialises lazily, so a full GPU shows up as CUDNN_STATUS_NOT_INITIALIZED."""
    job = Job(slurm_hosts(2), torch="2.2", nccl="2.19.3", layout=Layout.PER_RANK)
    culprit = 9

    def lines(ls: LogSet) -> list[str]:
        frames = (*TRAIN_FRAMES, ("/workspace/model/conv.py", 61, "forward", "return self.conv(x)"))
        return python_traceback("", frames, "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        -1,
        "CUDNN_STATUS_NOT_INITIALIZED",
        "gpu_oom",
        "cudnn_not_initialized_2_2_per_rank",
        "Rank 9's GPU was full when cuDNN initialised lazily.",
    )


def cuda_oom_then_late_host_oom_kill_2_4_slurm(root: Path) -> Planted:
    """Two fatal errors: rank 6's CUDA OOM comes first; the OOM killer takes rank 27 only while the job
    is already dying (its checkpoint-on-failure handler loads the model to host memory)."""
    job = Job(
        slurm_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.SLURM_NODE, kernel_log=KernelLog.JOURNAL
    )
    first, late = 6, 27
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    w = job.wording
    oom = w.cuda_oom(6, "2.00 GiB", "79.11 GiB", "1.12 GiB", "77.98 GiB", "74.40 GiB", "2.03 GiB")
    ls.rank(
        first,
        stuck_at + seconds(0.2),
        python_traceback(w.python_prefix(first), TRAIN_FRAMES, oom),
        Mark(DECISIVE, "CUDA out of memory. Tried to allocate 2.00 GiB"),
    )
    ls.srun(
        stuck_at + seconds(0.4), f"srun: error: {job.host_of(first)}: task {first}: Exited with exit code 1"
    )
    ls.flush()
    fired = _everyone_else_times_out(ls, stuck_at, {first})
    pid = job.pid(late)
    ls.kernel(
        job.node_of(late),
        fired + seconds(3),
        f"Out of memory: Killed process {pid} (pt_main_thread) "
        "total-vm:2062598656kB, anon-rss:1995614208kB, file-rss:1126400kB, shmem-rss:524288kB, UID:0 "
        "pgtables:3981312kB oom_score_adj:0",
    )
    exits = {**_aborts(job, set(range(job.world_size)) - {first, late}), late: -9}
    write_launcher_exits(ls, fired + seconds(5), exits)
    return ls.planted(
        "cuda_oom_then_late_host_oom_kill_2_4_slurm",
        "gpu_oom",
        [first],
        [job.node_of(first)],
        [DECISIVE],
        "Rank 6 ran out of GPU memory first; the host OOM kill of rank 27 came "
        "30 minutes later, during the teardown.",
    )


# --- host_oom --------------------------------------------------------------------------------------


def host_oom_kernel_2_4_torchrun(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.TORCHRUN, kernel_log=KernelLog.JOURNAL)
    return _host_oom_kernel(root, job, 10, "host_oom_kernel_2_4_torchrun")


def _host_oom_kernel(root: Path, job: Job, culprit: int, name: str) -> Planted:
    """The kernel OOM killer picks `culprit` by pid; the launcher sees SIGKILL."""
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    pid, node = job.pid(culprit), job.node_of(culprit)
    kernel = [
        "pt_main_thread invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
        "order=0, oom_score_adj=0",
        f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
        f"task_memcg=/kubepods.slice,task=pt_main_thread,pid={pid},uid=0",
        f"Out of memory: Killed process {pid} (pt_main_thread) total-vm:2062598656kB, anon-rss:1995614208kB, "
        "file-rss:1126400kB, shmem-rss:524288kB, UID:0 pgtables:3981312kB oom_score_adj:0",
        f"oom_reaper: reaped process {pid} (pt_main_thread), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    ]
    for i, line in enumerate(kernel):
        ls.kernel(
            node,
            stuck_at + seconds(0.1 + i * 0.01),
            line,
            Mark(DECISIVE, f"Killed process {pid}") if i == 2 else None,
        )
    ls.flush()
    _crash_then_timeout(ls, culprit, stuck_at + seconds(0.3), -9)
    story = (
        f"The kernel OOM killer killed rank {culprit} (pid {pid}) for host memory; it exited with SIGKILL."
    )
    return ls.planted(name, "host_oom", [culprit], [node], [DECISIVE], story)


def host_oom_then_network_looking_errors_current_slurm(root: Path) -> Planted:
    """The OOM killer takes rank 10; seconds later every other rank reports 'remote process exited or
    there was a network error' and its peers' sockets close. The network errors are the aftermath."""
    job = Job(
        slurm_hosts(4),
        torch="2.6",
        nccl="2.27.3",
        ofi="1.14.2",
        layout=Layout.SLURM_NODE,
        kernel_log=KernelLog.JOURNAL,
    )
    culprit = 10
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    node, pid = job.node_of(culprit), job.pid(culprit)
    ls.kernel(
        node,
        stuck_at + seconds(0.1),
        f"Out of memory: Killed process {pid} (pt_main_thread) "
        "total-vm:2062598656kB, anon-rss:1995614208kB, file-rss:1126400kB, shmem-rss:524288kB, UID:0 "
        "pgtables:3981312kB oom_score_adj:0",
        Mark(DECISIVE, f"Killed process {pid}"),
    )
    ls.srun(stuck_at + seconds(0.3), f"srun: error: {job.hosts[node]}: task {culprit}: Killed")
    work = stuck_work(job, STEPS)
    nccl = job.nccl_on(0)
    what = f"NCCL error: {nccl.error_string('remote')}, NCCL version {nccl.version}"
    for rank in range(job.world_size):
        if rank == culprit:
            continue
        when = stuck_at + seconds(4 + rank * 0.01)
        peer_host = job.hosts[node]
        closed = f"socketProgress: Connection closed by remote peer {peer_host}<{41_000 + rank}>"
        ls.rank(
            rank,
            when,
            job.nccl_on(job.node_of(rank)).warn(
                job.host_of(rank), job.pid(rank), job.local(rank), when, "misc/socket.cc:50", closed
            ),
        )
        write_async_failure(ls, rank, when + seconds(0.2), work, what)
    ls.flush()
    exits = _aborts(job, set(range(job.world_size)) - {culprit})
    write_launcher_exits(ls, stuck_at + seconds(8), exits)
    return ls.planted(
        "host_oom_then_network_looking_errors_current_slurm",
        "host_oom",
        [culprit],
        [node],
        [DECISIVE],
        "Rank 10 was OOM-killed; the 'network error' on the others came after.",
    )


def host_oom_slurm_cgroup_2_3(root: Path) -> Planted:
    job = Job(slurm_hosts(4), torch="2.3", nccl="2.20.5", layout=Layout.SLURM_NODE)
    culprit = 21
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    node = job.node_of(culprit)
    ls.agent(
        node,
        stuck_at + seconds(0.2),
        f"slurmstepd: error: Detected 1 oom_kill event in StepId={job.job_id}.0. "
        "Some of the step tasks have been OOM Killed.",
    )
    ls.srun(
        stuck_at + seconds(0.4),
        f"srun: error: {job.hosts[node]}: task {culprit}: Out Of Memory",
        Mark(DECISIVE, f"task {culprit}: Out Of Memory"),
    )
    ls.flush()
    fired = _everyone_else_times_out(ls, stuck_at, {culprit})
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, set(range(job.world_size)) - {culprit}))
    return ls.planted(
        "host_oom_slurm_cgroup_2_3",
        "host_oom",
        [culprit],
        [node],
        [DECISIVE],
        "Slurm's cgroup OOM killer killed task 21; the others timed out.",
    )


# --- storage_io ------------------------------------------------------------------------------------


def storage_retries_exhausted_current_per_rank(root: Path) -> Planted:
    job = Job(ec2_hosts(6), torch="2.6", nccl="2.23.4", layout=Layout.PER_RANK)
    culprit = 37
    rng = random.Random(7)
    url = shard_url(rng)

    def lines(ls: LogSet) -> list[str]:
        prefix = ls.job.wording.python_prefix(culprit)
        retries = [urllib3_retry(total, url) for total in (4, 3, 2, 1, 0)]
        exc = (
            "requests.exceptions.ConnectionError: HTTPConnectionPool(host='ais-proxy.ais.svc', "
            "port=51080): Max "
            f"retries exceeded with url: {url} (Caused by ProtocolError('Connection aborted.', "
            "ConnectionResetError(104, 'Connection reset by peer')))"
        )
        return retries + python_traceback(prefix, LOADER_FRAMES, exc)

    planted = _rank_raises(
        root / "workers",
        job,
        culprit,
        lines,
        -1,
        "Max retries exceeded with url",
        "storage_io",
        "storage_retries_exhausted_current_per_rank",
        "The storage service kept resetting rank 37's shard reads until retries were exhausted.",
        equivalent=Mark("last retry", "Retry(total=0,"),
    )
    storage = root / "ais-logs"
    _write_ais_target_log(storage, job.start)
    return replace(planted, storage_dir=storage)


def fsx_lustre_eviction_2_4_slurm(root: Path) -> Planted:
    """The FSx for Lustre client on one node is evicted by an OST: reads in flight fail with EIO."""
    job = Job(
        slurm_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.SLURM_NODE, kernel_log=KernelLog.JOURNAL
    )
    culprit = 13
    node = job.node_of(culprit)
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    osc = "fsx-OST0003-osc-ffff9a2b3c4d5000"
    ls.kernel(
        node,
        stuck_at - seconds(25),
        f"Lustre: {osc}: Connection to fsx-OST0003 (at 10.2.3.4@tcp) was lost; "
        "in progress operations using this service will wait for recovery to complete",
    )
    ls.kernel(
        node,
        stuck_at - seconds(1),
        f"LustreError: 167-0: {osc}: This client was evicted by fsx-OST0003; in "
        "progress operations using this service will fail.",
        Mark("evicted", "This client was evicted"),
    )
    frames = (("/workspace/data/shards.py", 88, "read_shard", "data = handle.read()"),)
    error = "OSError: [Errno 5] Input/output error: '/fsx/data/shards/shard-004211.tar'"
    lines = dataloader_worker_failure(job.wording.python_prefix(culprit), 2, error, frames)
    marks = [Mark(DECISIVE, "[Errno 5] Input/output error", -1), CAUGHT_IN_WORKER]
    ls.rank(culprit, stuck_at + seconds(0.2), lines, marks)
    ls.flush()
    _crash_then_timeout(ls, culprit, stuck_at + seconds(0.3), 1)
    return ls.planted(
        "fsx_lustre_eviction_2_4_slurm",
        "storage_io",
        [culprit],
        [node],
        [DECISIVE, CAUGHT_IN_WORKER.key, "evicted"],
        "gpu-st-p5-1's Lustre client was evicted by an OST; rank 13's shard read failed with EIO.",
    )


def _write_ais_target_log(storage: Path, start: datetime) -> None:
    """An AIStore target log (glog style) around the failure window, as `ais log get cluster` saves it."""
    storage.mkdir(parents=True, exist_ok=True)
    lines = [f"Started up at {start:%Y/%m/%d %H:%M:%S}, host ais-target-3, go1.22.3 for linux/amd64"]
    for minute in range(0, 6, 3):
        t = start + timedelta(minutes=minute)
        lines.append(
            f"I {t:%H:%M:%S}.104512 stats:201 get.n:{18000 + minute * 90} err.get.n:{2 + minute} "
            f"getbatch.n:{400 + minute} err.getbatch.n:{minute} err.http.write.n:{minute * 4}"
        )
    t = start + seconds(75)
    lines += [
        f"W {t:%H:%M:%S}.318772 lcache:112 hk: dsk=critical, skipping",
        f"E {t:%H:%M:%S}.412345 shared-dm: terminated: write tcp 10.2.0.7:51081->10.2.0.9:40412: broken pipe",
        f"E {t:%H:%M:%S}.412977 x-get-batch[gb-Xk3s9]: out-of-bounds index 17 (recv'd len=0)",
    ]
    (storage / "aistarget.ais-target-3.INFO.0302-095500.1").write_text(
        "\n".join(lines) + "\n", encoding="utf-8"
    )


# --- software ----------------------------------------------------------------------------------------


def illegal_memory_access_xid31_current_torchrun(root: Path) -> Planted:
    """An Xid in dmesg that is not a hardware fault: Xid 31 is the GPU page fault of a buggy kernel."""
    job = Job(ec2_hosts(4), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=Layout.TORCHRUN)
    culprit = 19
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    node = job.node_of(culprit)
    ls.kernel(
        node,
        stuck_at + seconds(0.1),
        f"NVRM: Xid (PCI:0000:{job.bus(culprit)}:00): 31, pid={job.pid(culprit)}, name=pt_main_thread, Ch "
        "0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_7 faulted @ 0x2b57_b3000000. "
        "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
    )
    prefix = job.wording.python_prefix(culprit)
    frames = (
        *TRAIN_FRAMES,
        ("/workspace/kernels/fused_rope.py", 77, "apply", "out = _rope_cuda.forward(q, k)"),
    )
    error = f"{job.wording.cuda_error_exception()}: CUDA error: an illegal memory access was encountered"
    lines = [
        *python_traceback(prefix, frames, error),
        f"{prefix}Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
        f"{prefix}Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]
    ls.rank(
        culprit, stuck_at + seconds(0.2), lines, Mark(DECISIVE, "an illegal memory access was encountered")
    )
    ls.flush()
    _crash_then_timeout(ls, culprit, stuck_at + seconds(0.3), 1)
    return ls.planted(
        "illegal_memory_access_xid31_current_torchrun",
        "software",
        [culprit],
        [node],
        [DECISIVE],
        "A custom CUDA kernel on rank 19 wrote out of bounds (Xid 31 page fault): a code bug, not the GPU.",
    )


def nccl_version_skew_2_4_torchrun(root: Path) -> Planted:
    job = Job(ec2_hosts(8), torch="2.4", nccl="2.21.5", layout=Layout.TORCHRUN, nccl_by_node=((7, "2.20.5"),))
    ls = LogSet(root, job)
    write_kernel_noise(ls, range(len(job.hosts)))
    odd_node = 7
    started = write_startup(ls, {job.ranks_on(odd_node)[0]: Mark(DECISIVE, "NCCL version 2.20.5+cuda12.4")})
    when = started + seconds(1)
    nccl = job.nccl_on(0)
    for rank in job.ranks_on(0):
        text = nccl.warn(
            job.hosts[0],
            job.pid(rank),
            job.local(rank),
            when,
            "bootstrap.cc:77",
            "Message truncated : received 172 bytes instead of 64",
        )
        prefix = job.wording.python_prefix(rank)
        exc = (
            f"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            f"ProcessGroupNCCL.cpp:2251, {nccl.error_string('internal')}, NCCL version {nccl.version}"
        )
        ls.rank(
            rank,
            when,
            text
            + python_traceback(prefix, TRAIN_FRAMES, exc)
            + [
                f"{prefix}ncclInternalError: Internal check failed.",
                f"{prefix}Last error:",
                f"{prefix}Message truncated : received 172 bytes instead of 64",
            ],
        )
    ls.flush()
    write_launcher_exits(
        ls, when + seconds(2), {r: 1 if r < 8 else -15 for r in range(job.world_size)}, root_rank=0
    )
    return ls.planted(
        "nccl_version_skew_2_4_torchrun",
        "software",
        job.ranks_on(odd_node),
        [odd_node],
        [DECISIVE],
        "Node 7 runs NCCL 2.20.5 while the rest run 2.21.5: bootstrap 'Message truncated'.",
    )


def python_exception_current_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(4), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=Layout.SLURM_NODE)
    culprit = 5

    def lines(ls: LogSet) -> list[str]:
        frames = (
            *TRAIN_FRAMES,
            ("/workspace/model/attention.py", 88, "forward", "bsz, seqlen = mask.size()"),
        )
        return python_traceback(
            ls.job.wording.python_prefix(culprit),
            frames,
            "AttributeError: 'NoneType' object has no attribute 'size'",
        )

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        -1,
        "AttributeError: 'NoneType' object has no attribute 'size'",
        "software",
        "python_exception_current_slurm",
        "A bug in the model code crashed rank 5.",
    )


# --- config ------------------------------------------------------------------------------------------


def port_in_use_2_2_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(4), torch="2.2", nccl="2.19.3", layout=Layout.SLURM_NODE)
    ls = LogSet(root, job)
    write_kernel_noise(ls, range(len(job.hosts)))
    when = job.start + seconds(6)
    bind = "The server socket has failed to bind to {} (errno: 98 - Address already in use)."
    listen = "The server socket has failed to listen on any local network address."
    ls.rank(
        0,
        when,
        [
            f"[W socket.cpp:426] [c10d] {bind.format('[::]:29500')}",
            f"[W socket.cpp:426] [c10d] {bind.format('0.0.0.0:29500')}",
            f"[E socket.cpp:462] [c10d] {listen}",
            *python_traceback(
                "",
                TRAIN_FRAMES[:1],
                f"RuntimeError: {listen} {bind.format('[::]:29500')} {bind.format('0.0.0.0:29500')}",
            ),
        ],
        Mark(DECISIVE, "errno: 98 - Address already in use"),
    )
    timed_out = job.start + seconds(1806)
    for rank in range(1, job.world_size):
        msg = (
            f"The client socket has timed out after 1800s while trying to connect to ({job.hosts[0]}, 29500)."
        )
        ls.rank(
            rank,
            timed_out,
            [
                f"[E socket.cpp:957] [c10d] {msg}",
                *python_traceback("", TRAIN_FRAMES[:1], f"torch.distributed.DistNetworkError: {msg}"),
            ],
        )
    ls.flush()
    write_launcher_exits(ls, timed_out + seconds(1), dict.fromkeys(range(job.world_size), 1))
    return ls.planted(
        "port_in_use_2_2_slurm",
        "config",
        [0],
        [0],
        [DECISIVE],
        "MASTER_PORT 29500 was already taken on the master node; nobody could join the store.",
    )


def dev_shm_bus_error_2_4_torchrun(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.TORCHRUN)
    culprit = 22

    def lines(ls: LogSet) -> list[str]:
        prefix = ls.job.wording.python_prefix(culprit)
        return [
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
            "memory (shm).",
            *python_traceback(
                prefix, LOADER_FRAMES, "RuntimeError: DataLoader worker (pid(s) 61234) exited unexpectedly"
            ),
        ]

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        0,
        "insufficient shared memory (shm)",
        "config",
        "dev_shm_bus_error_2_4_torchrun",
        "The container's /dev/shm was too small for DataLoader workers.",
    )


def tcp_fallback_current_kubectl(root: Path) -> Planted:
    job = Job(
        ec2_hosts(4),
        torch="2.6",
        nccl="2.23.4",
        ofi="1.14.2",
        layout=Layout.KUBECTL,
        provider_by_node=((3, "tcp"),),
    )
    ls = LogSet(root, job)
    write_kernel_noise(ls, range(len(job.hosts)))
    started = write_startup(ls, {job.ranks_on(3)[0]: Mark(DECISIVE, "Selected provider is tcp")})
    stuck_at = write_training(ls, range(1, STEPS + 1), started, reset_rate=0.0)
    fired = _everyone_else_times_out(ls, stuck_at, set())
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, range(job.world_size)), root_rank=0)
    return ls.planted(
        "tcp_fallback_current_kubectl",
        "config",
        job.ranks_on(3),
        [3],
        [DECISIVE],
        "Node 3 has no EFA device and aws-ofi-nccl fell back to TCP; the collective could not "
        "complete within the timeout.",
    )


def memlock_too_small_2_4_torchrun(root: Path) -> Planted:
    """One node's container runs with a small memlock limit: EFA cannot register NCCL's buffers."""
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.TORCHRUN)
    bad_node = 2
    ls = LogSet(root, job)
    write_kernel_noise(ls, range(len(job.hosts)))
    started = write_startup(ls)
    when = started + seconds(1)
    for rank in job.ranks_on(bad_node):
        host, pid, local = job.hosts[bad_node], job.pid(rank), job.local(rank)
        nccl = job.nccl_on(bad_node)
        prefix = job.wording.python_prefix(rank)
        register = (
            f"NET/OFI Unable to register memory (type = 2) for device {local}. RC: -12, Error: Cannot "
            "allocate memory"
        )
        exc = (
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            f"ProcessGroupNCCL.cpp:2027, {nccl.error_string('system')}, NCCL version {nccl.version}"
        )
        lines = [
            *nccl.warn(host, pid, local, when, "nccl_net_ofi_reg_mr:1164", register),
            *python_traceback(prefix, TRAIN_FRAMES, exc),
            f"{prefix}ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
            "device error. ",
            f"{prefix}Last error:",
            f"{prefix}{register}",
        ]
        mark = Mark(DECISIVE, "Unable to register memory") if rank == job.ranks_on(bad_node)[0] else None
        ls.rank(rank, when + seconds(local * 0.01), lines, mark)
    ls.flush()
    failed = set(job.ranks_on(bad_node))
    write_launcher_exits(ls, when + seconds(2), dict.fromkeys(failed, 1), root_rank=min(failed))
    # The other ranks wait in the very first collective for peers that never connect.
    fired = _everyone_else_times_out(ls, started, failed, completed_steps=0)
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, set(range(job.world_size)) - failed))
    return ls.planted(
        "memlock_too_small_2_4_torchrun",
        "config",
        job.ranks_on(bad_node),
        [bad_node],
        [DECISIVE],
        "The memlock limit on ip-10-1-0-12 was too small for EFA memory registration.",
    )


# --- rendezvous ---------------------------------------------------------------------------------------


def store_clients_missing_current_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(8), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=Layout.SLURM_NODE)
    ls = LogSet(root, job)
    write_kernel_noise(ls, range(len(job.hosts)))
    late = 7
    for i, rank in enumerate(job.ranks_on(late)):
        ls.rank(
            rank,
            job.start + seconds(5 + i),
            ["Collecting flash-attn==2.6.3", "  Building wheel for flash-attn (setup.py): started"],
        )
    joined = job.world_size - job.ranks_per_node
    failed = job.start + seconds(1806)
    exc = (
        f"torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
        f"{joined}/{job.world_size} clients joined."
    )
    ls.rank(
        0,
        failed,
        python_traceback("", TRAIN_FRAMES[:1], exc),
        Mark(DECISIVE, f"{joined}/{job.world_size} clients joined"),
    )
    # The clients that had joined lose the store when rank 0 exits.
    lost = (
        "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. "
        "Did the remote server shutdown or crash?"
    )
    for rank in range(1, joined):
        ls.rank(rank, failed + seconds(0.5), python_traceback("", TRAIN_FRAMES[:1], lost))
    ls.flush()
    write_launcher_exits(ls, failed + seconds(1), {0: 1, **_aborts(job, set(range(1, job.world_size)), -15)})
    return ls.planted(
        "store_clients_missing_current_slurm",
        "rendezvous",
        job.ranks_on(late),
        [late],
        [DECISIVE],
        "Node 7 was still compiling flash-attn when the store gave up: 56/64 clients joined.",
    )


def nccl_unique_id_never_published_current_per_rank(root: Path) -> Planted:
    """Rank 0 is still loading a checkpoint when the others ask the store for the ncclUniqueId."""
    job = Job(slurm_hosts(2), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.PER_RANK)
    ls = LogSet(root, job)
    write_kernel_noise(ls, range(len(job.hosts)))
    t = job.start + seconds(9)
    ls.rank(
        0,
        t,
        f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [checkpoint.py:77] [rank 0] "
        "loading checkpoint from /fsx/ckpt/llama3-8b/iter_0004000 (412 shards)",
    )
    failed = t + seconds(600)
    keys = []
    for rank in range(1, job.world_size):
        prefix = job.wording.python_prefix(rank)
        error = (
            f"torch.distributed.DistBackendError: [{rank}] is setting up NCCL communicator and retrieving "
            "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait "
            "timeout after 600000ms. This may indicate a possible application crash on rank 0 or a network "
            "set up issue."
        )
        keys.append(f"{DECISIVE} rank {rank}")
        ls.rank(
            rank,
            failed + seconds(rank * 0.01),
            python_traceback(prefix, TRAIN_FRAMES, error),
            Mark(keys[-1], "retrieving ncclUniqueId from [0]"),
        )
    ls.flush()
    write_launcher_exits(ls, failed + seconds(2), {0: -15, **dict.fromkeys(range(1, job.world_size), 1)})
    return ls.planted(
        "nccl_unique_id_never_published_current_per_rank",
        "rendezvous",
        [0],
        [0],
        keys,
        "Rank 0 never published the ncclUniqueId (still loading a checkpoint); the group never formed.",
    )


# --- infrastructure -------------------------------------------------------------------------------------


def slurm_time_limit_2_4_per_rank(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.PER_RANK)
    story = "The job hit its Slurm time limit in the middle of healthy training."
    return _slurm_cancelled_everywhere(root, job, "TIME LIMIT", "slurm_time_limit_2_4_per_rank", story)


def slurm_preempted_2_6_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(4), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE)
    story = "A higher-priority job preempted this one in the middle of healthy training."
    return _slurm_cancelled_everywhere(root, job, "PREEMPTION", "slurm_preempted_2_6_slurm", story)


def _slurm_cancelled_everywhere(root: Path, job: Job, reason: str, name: str, story: str) -> Planted:
    """The scheduler ended a healthy job: no rank or node is the origin."""
    ls = LogSet(root, job)
    ended = _train(ls)
    for node in range(len(job.hosts)):
        mark = Mark(DECISIVE, f"DUE TO {reason}") if node == 0 else None
        ls.agent(node, ended + seconds(node * 0.01), slurm_cancelled(job, node, ended, reason), mark)
    ls.srun(
        ended + seconds(0.5),
        [
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
            "srun: got SIGCONT",
            "srun: forcing job termination",
        ],
    )
    ls.flush()
    write_launcher_exits(ls, ended + seconds(33), _aborts(job, range(job.world_size), -15))
    return ls.planted(name, "infrastructure", [], [], [DECISIVE], story)


def slurm_node_failure_current(root: Path) -> Planted:
    job = Job(slurm_hosts(8), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.SLURM_NODE)
    ls = LogSet(root, job)
    lost = 5
    write_kernel_noise(ls, range(len(job.hosts)))
    started = write_startup(ls)
    survivors = [r for r in range(job.world_size) if job.node_of(r) != lost]
    died = write_training(ls, range(1, 81), started)
    stalled = write_training(ls, range(81, STEPS + 1), died, ranks=survivors)
    cancelled = stalled + seconds(300)
    ls.srun(
        cancelled,
        f"srun: error: Node failure on {job.hosts[lost]}",
        Mark(DECISIVE, f"Node failure on {job.hosts[lost]}"),
    )
    for node in range(len(job.hosts)):
        if node != lost:
            reason = "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS"
            ls.agent(node, cancelled + seconds(0.1), slurm_cancelled(job, node, cancelled, reason))
    ls.flush()
    write_launcher_exits(ls, cancelled + seconds(2), _aborts(job, survivors, -15))
    return ls.planted(
        "slurm_node_failure_current",
        "infrastructure",
        job.ranks_on(lost),
        [lost],
        [DECISIVE],
        "gpu-st-p5-5 stopped responding mid-run; Slurm cancelled the job for node failure.",
    )


# --- data --------------------------------------------------------------------------------------------


def corrupt_shard_current_torchrun(root: Path) -> Planted:
    job = Job(ec2_hosts(8), torch="2.6", nccl="2.26.2", ofi="1.14.2", layout=Layout.TORCHRUN)
    culprit = 44

    def lines(ls: LogSet) -> list[str]:
        frames = (
            ("/usr/lib/python3.12/tarfile.py", 2367, "next", 'raise ReadError("unexpected end of data")'),
        )
        prefix = ls.job.wording.python_prefix(culprit)
        return dataloader_worker_failure(prefix, 3, "tarfile.ReadError: unexpected end of data", frames)

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        -1,
        "tarfile.ReadError: unexpected end of data",
        "data",
        "corrupt_shard_current_torchrun",
        "A truncated training shard crashed rank 44's DataLoader.",
        equivalent=CAUGHT_IN_WORKER,
    )


def malformed_manifest_json_2_4_kubectl(root: Path) -> Planted:
    job = Job(ec2_hosts(4), torch="2.4", nccl="2.21.5", layout=Layout.KUBECTL)
    culprit = 21

    def lines(ls: LogSet) -> list[str]:
        frames = (
            ("/workspace/data/manifest.py", 41, "__getitem__", "record = json.loads(line)"),
            ("/usr/lib/python3.12/json/__init__.py", 346, "loads", "return _default_decoder.decode(s)"),
        )
        error = "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 8191 (char 8190)"
        return dataloader_worker_failure(ls.job.wording.python_prefix(culprit), 1, error, frames)

    return _rank_raises(
        root,
        job,
        culprit,
        lines,
        -1,
        "JSONDecodeError: Expecting ',' delimiter",
        "data",
        "malformed_manifest_json_2_4_kubectl",
        "A manifest record cut short at 8 KiB broke rank 21's DataLoader.",
        equivalent=CAUGHT_IN_WORKER,
    )


# --- unknown -----------------------------------------------------------------------------------------


def silent_exit_2_3_slurm(root: Path) -> Planted:
    job = Job(slurm_hosts(2), torch="2.3", nccl="2.20.5", layout=Layout.SLURM_NODE)
    culprit = 7
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    ls.srun(
        stuck_at + seconds(0.2),
        f"srun: error: {job.hosts[0]}: task {culprit}: Exited with exit code 1",
        Mark(DECISIVE, f"task {culprit}: Exited with exit code 1"),
    )
    ls.flush()
    fired = _everyone_else_times_out(ls, stuck_at, {culprit})
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, set(range(job.world_size)) - {culprit}))
    return ls.planted(
        "silent_exit_2_3_slurm",
        "unknown",
        [culprit],
        [0],
        [DECISIVE],
        "Rank 7 exited with code 1 and printed nothing; the others timed out waiting for it.",
    )


def segfault_without_a_trace_current_torchrun(root: Path) -> Planted:
    """Rank 11 dies of SIGSEGV and prints nothing: a failure whose cause the logs cannot establish."""
    job = Job(ec2_hosts(2), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.TORCHRUN)
    culprit = 11
    ls = LogSet(root, job)
    stuck_at = _train(ls)
    node_ranks = set(job.ranks_on(job.node_of(culprit)))
    exits = {culprit: -11, **_aborts(job, node_ranks - {culprit}, -15)}
    marks = [Mark(DECISIVE, "failed (exitcode: -11)"), Mark("signal", "Signal 11 (SIGSEGV)")]
    write_launcher_exits(ls, stuck_at + seconds(1), exits, root_rank=culprit, root_marks=marks)
    fired = _everyone_else_times_out(ls, stuck_at, node_ranks)
    write_launcher_exits(ls, fired + seconds(5), _aborts(job, set(range(job.world_size)) - node_ranks))
    return ls.planted(
        "segfault_without_a_trace_current_torchrun",
        "unknown",
        [culprit],
        [job.node_of(culprit)],
        [DECISIVE, "signal"],
        "Rank 11 died of SIGSEGV with no message; nothing says why.",
    )


# --- healthy -----------------------------------------------------------------------------------------


def healthy_with_noise(root: Path) -> Planted:
    """A finished run full of noise: recovered connection resets, NCCL INFO chatter, a shutdown warning."""
    job = Job(ec2_hosts(2), torch="2.6", nccl="2.27.3", ofi="1.14.2", layout=Layout.TORCHRUN)
    ls = LogSet(root, job)
    ended = _train(ls, steps=200, reset_rate=0.03)
    rng = random.Random(3)
    for rank in range(job.world_size):
        node, local = job.node_of(rank), job.local(rank)
        nccl, host, pid = job.nccl_on(node), job.hosts[node], job.pid(rank)
        ls.rank(
            rank,
            ended + seconds(1),
            [
                recovered_reset(rng),
                nccl.info(host, pid, local, "[Service thread] Connection closed by localRank 0"),
                nccl.info(
                    host,
                    pid,
                    local,
                    f"comm {comm_pointer(rank)} rank {rank} nranks "
                    f"{job.world_size} cudaDev {local} busId {job.bus(rank)}000 - Destroy COMPLETE",
                ),
            ],
        )
    ls.rank(
        0,
        ended + seconds(2),
        f"{job.wording.cpp(0, 'W', ended, 'ProcessGroupNCCL.cpp:1538')}Warning: WARNING: "
        "destroy_process_group() was not called before program exit, which can leak resources. For "
        "more info, "
        "please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
    )
    for node in range(len(job.hosts)):
        ls.agent(
            node,
            ended + seconds(3),
            f"I{ended:%m%d %H:%M:%S}.000000 {job.agent_pid(node)} "
            "torch/distributed/elastic/agent/server/api.py:879] [default] worker group successfully "
            "finished. "
            "Waiting 300 seconds for other agents to finish.",
        )
    return ls.planted(
        "healthy_with_noise", None, [], [], [], "A healthy run: every connection reset recovered."
    )


INCIDENTS: tuple[Callable[[Path], Planted], ...] = (
    straggler_current_slurm,
    straggler_2_4_per_rank,
    straggler_2_3_torchrun_broadcast_root_ahead,
    straggler_2_5_kubectl_gzipped,
    two_stragglers_on_two_nodes_current_per_rank,
    straggler_with_stale_xid_in_dmesg_current_slurm,
    straggler_nccl_debug_warn_current_slurm,
    straggler_kubectl_timestamps_2_4,
    mismatch_optype_2_1_slurm,
    mismatch_numel_current_kubectl,
    efa_unresponsive_current_slurm,
    efa_remote_2_2_per_rank,
    xid79_2_4_torchrun,
    ecc_current_kubectl_journal,
    cuda_oom_current_torchrun,
    cuda_oom_2_1_slurm,
    nccl_cuda_oom_2_4_per_rank,
    cudnn_not_initialized_2_2_per_rank,
    cuda_oom_then_late_host_oom_kill_2_4_slurm,
    host_oom_kernel_2_4_torchrun,
    host_oom_then_network_looking_errors_current_slurm,
    host_oom_slurm_cgroup_2_3,
    storage_retries_exhausted_current_per_rank,
    fsx_lustre_eviction_2_4_slurm,
    nccl_version_skew_2_4_torchrun,
    python_exception_current_slurm,
    illegal_memory_access_xid31_current_torchrun,
    port_in_use_2_2_slurm,
    dev_shm_bus_error_2_4_torchrun,
    tcp_fallback_current_kubectl,
    memlock_too_small_2_4_torchrun,
    store_clients_missing_current_slurm,
    nccl_unique_id_never_published_current_per_rank,
    slurm_time_limit_2_4_per_rank,
    slurm_preempted_2_6_slurm,
    slurm_node_failure_current,
    corrupt_shard_current_torchrun,
    malformed_manifest_json_2_4_kubectl,
    silent_exit_2_3_slurm,
    segfault_without_a_trace_current_torchrun,
)


# --- the demo ----------------------------------------------------------------------------------------


def training_hang_example(root: Path) -> Planted:
    """examples/training-hang: 64 ranks on 8 nodes, rank 43 stalls in data loading, resets recover."""
    job = Job(
        ec2_hosts(8),
        torch="2.6",
        nccl="2.27.3",
        ofi="1.14.2",
        layout=Layout.SLURM_NODE,
        job_id=51877,
        gzip_nodes=frozenset({1, 3, 5, 7}),
    )
    return _straggler(root, job, (43,), "training_hang_example", steps=150)


# --- the same incidents across wordings and layouts ----------------------------------------------------
# Small jobs with the culprit moved around, so that an engine tuned to the named scenarios above
# is still checked against every PyTorch generation and every file layout.

NCCL_OF_TORCH = {
    "2.1": "2.18.5",
    "2.2": "2.19.3",
    "2.3": "2.20.5",
    "2.4": "2.21.5",
    "2.5": "2.21.5",
    "2.6": "2.27.3",
}
FLIGHT_RECORDER_TORCH = ("2.3", "2.4", "2.5", "2.6")


HOST_NAMINGS = (
    lambda i: f"gpu-st-p5-{i}",
    lambda i: f"ip-172-31-{40 + i}-{117 + i}",
    lambda i: f"node{i + 1:03d}",
    lambda i: f"a100-80g-{i}",
)


# The c10 prefix prints the month unpadded and no year (`E116 00:30:08`, `E1206 …`): start the variants
# in January just before midnight (the watchdog fires the next day), in December and in March.
START_TIMES = (
    datetime(2026, 1, 16, 23, 59, 30, tzinfo=UTC),
    datetime(2025, 12, 6, 8, 15, 0, tzinfo=UTC),
    datetime(2026, 3, 2, 10, 0, 0, tzinfo=UTC),
)


def variant_job(torch: str, layout: Layout, kernel_log: KernelLog = KernelLog.DMESG) -> Job:
    """Two nodes of eight GPUs; host naming and start date change with the generation and layout."""
    generation = sorted(NCCL_OF_TORCH).index(torch)
    naming = HOST_NAMINGS[generation % len(HOST_NAMINGS)]
    start = START_TIMES[(generation + list(Layout).index(layout)) % len(START_TIMES)]
    return Job(
        (naming(0), naming(1)),
        torch=torch,
        nccl=NCCL_OF_TORCH[torch],
        layout=layout,
        kernel_log=kernel_log,
        start=start,
    )


def straggler_variant(root: Path, torch: str, layout: Layout, straggler: int) -> Planted:
    job = variant_job(torch, layout)
    return _straggler(root, job, (straggler,), f"straggler[{torch},{layout}]", steps=40)


def cuda_oom_variant(root: Path, torch: str, layout: Layout, culprit: int) -> Planted:
    job = variant_job(torch, layout)

    def lines(ls: LogSet) -> list[str]:
        w = ls.job.wording
        gpu = ls.job.local(culprit)
        oom = w.cuda_oom(gpu, "1.50 GiB", "79.11 GiB", "412.00 MiB", "78.69 GiB", "75.20 GiB", "1.93 GiB")
        return python_traceback(w.python_prefix(culprit), TRAIN_FRAMES, oom)

    contains = "CUDA out of memory. Tried to allocate 1.50 GiB"
    story = f"Rank {culprit} ran out of GPU memory."
    return _rank_raises(
        root, job, culprit, lines, -1, contains, "gpu_oom", f"cuda_oom[{torch},{layout}]", story
    )


def mismatch_variant(root: Path, torch: str, layout: Layout, odd: int) -> Planted:
    job = variant_job(torch, layout)
    name = f"mismatch[{torch},{layout}]"
    return _mismatch(root, job, odd, lambda w: replace(w, op="BROADCAST"), "OpType=BROADCAST", name)


def host_oom_variant(root: Path, torch: str, layout: Layout, culprit: int) -> Planted:
    job = variant_job(torch, layout, KernelLog.JOURNAL)
    return _host_oom_kernel(root, job, culprit, f"host_oom[{torch},{layout}]")


Variant = tuple[str, Callable[[Path], Planted]]


def _variant(
    maker: Callable[[Path, str, Layout, int], Planted], torch: str, layout: Layout, culprit: int
) -> Variant:
    return f"{maker.__name__.removesuffix('_variant')}-{torch}-{layout}-r{culprit}", (
        lambda root: maker(root, torch, layout, culprit)
    )


def variants() -> list[Variant]:
    """Every generation × layout for the straggler and the CUDA OOM; a spread for the others."""
    made: list[Variant] = []
    for i, (torch, layout) in enumerate((t, lay) for t in FLIGHT_RECORDER_TORCH for lay in Layout):
        made.append(_variant(straggler_variant, torch, layout, (5 * i + 3) % 16))
    for i, (torch, layout) in enumerate((t, lay) for t in NCCL_OF_TORCH for lay in Layout):
        made.append(_variant(cuda_oom_variant, torch, layout, (7 * i + 2) % 16))
    for i, torch in enumerate(NCCL_OF_TORCH):
        made.append(_variant(mismatch_variant, torch, (Layout.PER_RANK, Layout.TORCHRUN)[i % 2], 9 + i))
    for i, layout in enumerate(Layout):
        made.append(_variant(host_oom_variant, ("2.2", "2.6")[i % 2], layout, 4 + 3 * i))
    return made
