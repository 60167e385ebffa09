"""Realistic multi-rank training-log generator: a job, its file layout, its noise, its incident.

A `Job` says how the run was launched (world size, hosts, PyTorch / NCCL / aws-ofi-nccl
versions, which launcher wrote which files). A `LogSet` writes lines from ranks, launchers and
node kernels into that layout, in time order, and remembers where each *marked* line landed
(file, 1-based line), so a scenario can state the evidence it planted without ever hard-coding
a line number. The phases below (startup, training noise, watchdog cascade, launcher exits) are
the building blocks the scenarios in `scenarios.py` compose.
"""

from __future__ import annotations

import gzip
import io
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path

from tests.triage.formats import (
    NcclWording,
    OfiWording,
    TorchWording,
    Work,
    comm_pointer,
    dmesg_t,
    journal,
    torchrun_agent,
)

# The PCI bus of each GPU on a p5.48xlarge, as NCCL prints it (`busId 53000`) and NVRM (`0000:53:00`).
P5_GPU_BUSES = ("53", "64", "75", "86", "97", "a8", "b9", "ca")
COLLECTIVES_PER_STEP = 3  # DDP gradient all-reduce, a loss all-reduce, a per-step broadcast from rank 0
STEP_OPS = ("ALLREDUCE", "ALLREDUCE", "BROADCAST")
GRAD_NUMEL = 9_801_523


class Layout(StrEnum):
    """Which launcher wrote which files."""

    SLURM_NODE = "slurm-node"  # error-<job>-<node>.out, all ranks of a node interleaved, srun --label `3: `
    PER_RANK = (
        "per-rank"  # train-<job>-<rank>.out (sbatch --output=%x-%j-%t.out), srun lines in slurm-<job>.out
    )
    TORCHRUN = "torchrun"  # torchrun-<host>.log per node, worker lines prefixed `[default3]:`
    KUBECTL = "kubectl"  # `kubectl logs` of each PyTorchJob worker pod, torchrun inside (`[default3]:`)


class KernelLog(StrEnum):
    DMESG = "dmesg"  # node-logs/<host>.dmesg, `dmesg -T`
    JOURNAL = "journal"  # node-logs/<host>/kern.log, journald


@dataclass(frozen=True)
class Job:
    hosts: tuple[str, ...]
    ranks_per_node: int = 8
    torch: str = "2.6"
    nccl: str = "2.21.5"
    ofi: str = "1.13.2"
    layout: Layout = Layout.SLURM_NODE
    kernel_log: KernelLog = KernelLog.DMESG
    job_id: int = 4242
    name: str = "llama3-8b"
    start: datetime = datetime(2026, 3, 2, 10, 0, 0, tzinfo=UTC)
    timeout_ms: int = 1_800_000
    gzip_nodes: frozenset[int] = frozenset()
    nccl_by_node: tuple[tuple[int, str], ...] = ()  # version skew: (node, NCCL version) overrides
    provider_by_node: tuple[tuple[int, str], ...] = ()  # aws-ofi-nccl provider overrides (e.g. tcp)
    step_seconds: float = 0.45
    nccl_debug: str = "INFO"  # "WARN": no INFO chatter, only the bare version line and warnings
    kubectl_timestamps: bool = False  # `kubectl logs --timestamps`: RFC 3339 time before every line

    @property
    def world_size(self) -> int:
        return len(self.hosts) * self.ranks_per_node

    @property
    def wording(self) -> TorchWording:
        return TorchWording(self.torch)

    def node_of(self, rank: int) -> int:
        return rank // self.ranks_per_node

    def local(self, rank: int) -> int:
        return rank % self.ranks_per_node

    def host_of(self, rank: int) -> str:
        return self.hosts[self.node_of(rank)]

    def ranks_on(self, node: int) -> range:
        return range(node * self.ranks_per_node, (node + 1) * self.ranks_per_node)

    def pid(self, rank: int) -> int:
        return 41_000 + self.node_of(rank) * 977 + self.local(rank) * 13

    def agent_pid(self, node: int) -> int:
        return 40_000 + node * 977

    def address(self, node: int) -> str:
        return f"10.1.{node // 200}.{10 + node % 200}"

    def bus(self, rank: int) -> str:
        return P5_GPU_BUSES[self.local(rank) % len(P5_GPU_BUSES)]

    def nccl_on(self, node: int) -> NcclWording:
        return NcclWording(dict(self.nccl_by_node).get(node, self.nccl))

    def provider_on(self, node: int) -> str:
        return dict(self.provider_by_node).get(node, "efa")


@dataclass(frozen=True)
class EvidenceLine:
    """A line the generator wrote: file relative to the log directory, 1-based line, a substring of it."""

    file: str
    line: int
    contains: str


@dataclass(frozen=True)
class Planted:
    """What a scenario planted, as the triage report should find it.

    `evidence` holds the decisive line, or equivalent statements of the same decisive fact (the
    last retry and the exception it raised): a report that cites any one of them is honest.
    """

    name: str
    log_dir: Path
    category: str | None  # a CONTRACT root-cause category, None for a healthy run
    culprit_ranks: tuple[int, ...]
    culprit_nodes: tuple[str, ...]
    evidence: tuple[EvidenceLine, ...]
    story: str
    torch: str
    layout: Layout
    world_size: int
    storage_dir: Path | None = None
    collective_issued_at: datetime | None = None  # when the collective that timed out was issued


@dataclass(frozen=True)
class Mark:
    """Remember where a line of an emission lands, under `key`.

    The line is number `index` of the emission, or by default the first one holding `contains`.
    """

    key: str
    contains: str
    index: int | None = None


Marks = Mark | Sequence[Mark] | None


@dataclass
class _Emission:
    when: datetime
    order: int
    file: str
    prefix: str
    lines: list[str]
    marks: tuple[Mark, ...]


@dataclass
class _Sink:
    """One file being written. Gzip streams stay open; plain files are opened only to append what
    has gathered, since a job with a log per rank has more files than a process may keep open."""

    path: Path
    handle: io.TextIOBase | None = None
    compressed_file: io.BufferedWriter | None = None  # GzipFile leaves the file it wraps open
    lines: int = 0
    _gathered: list[str] = field(default_factory=list)
    _gathered_chars: int = 0
    _started: bool = False

    def write(self, text: str) -> None:
        if self.handle is not None:
            self.handle.write(text)
            return
        self._gathered.append(text)
        self._gathered_chars += len(text)
        if self._gathered_chars >= _GATHER_CHARS:
            self._append()

    def _append(self) -> None:
        with self.path.open("a" if self._started else "w", encoding="utf-8") as out:
            out.write("".join(self._gathered))
        self._gathered.clear()
        self._gathered_chars = 0
        self._started = True

    def close(self) -> None:
        if self.handle is None:
            self._append()
            return
        self.handle.close()
        if self.compressed_file is not None:
            self.compressed_file.close()


_GATHER_CHARS = 16 * 1024


@dataclass
class LogSet:
    """Writes one job's logs under `root`, in time order, tracking where marked lines land."""

    root: Path
    job: Job
    marks: dict[str, EvidenceLine] = field(default_factory=dict)
    _pending: list[_Emission] = field(default_factory=list)
    _sinks: dict[str, _Sink] = field(default_factory=dict)
    _order: int = 0

    # --- where lines go -------------------------------------------------------------------
    def rank_file(self, rank: int) -> str:
        job = self.job
        node = job.node_of(rank)
        name = {
            Layout.SLURM_NODE: f"error-{job.job_id}-{node}.out",
            Layout.PER_RANK: f"train-{job.job_id}-{rank}.out",
            Layout.TORCHRUN: f"torchrun-{job.hosts[node]}.log",
            Layout.KUBECTL: f"{job.name}-worker-{node}.log",
        }[job.layout]
        return self._maybe_gz(name, node)

    def agent_file(self, node: int) -> str:
        """Where a node's launcher (slurmstepd, the torchrun agent) writes."""
        if self.job.layout is Layout.PER_RANK:
            return f"slurm-{self.job.job_id}.out"
        return self.rank_file(self.job.ranks_on(node)[0])

    def srun_file(self) -> str:
        """srun runs on the batch host: node 0's file, or the batch output when each task has its own."""
        return self.agent_file(0)

    def kernel_file(self, node: int) -> str:
        host = self.job.hosts[node]
        if self.job.kernel_log is KernelLog.DMESG:
            return f"node-logs/{host}.dmesg"
        return f"node-logs/{host}/kern.log"

    def _maybe_gz(self, name: str, node: int) -> str:
        return f"{name}.gz" if node in self.job.gzip_nodes else name

    def _launcher_prefix(self, rank: int) -> str:
        return {
            Layout.SLURM_NODE: f"{rank}: ",
            Layout.PER_RANK: "",
            Layout.TORCHRUN: f"[default{self.job.local(rank)}]:",
            Layout.KUBECTL: f"[default{self.job.local(rank)}]:",
        }[self.job.layout]

    # --- emitting ---------------------------------------------------------------------------
    def rank(self, rank: int, when: datetime, lines: str | Sequence[str], mark: Marks = None) -> None:
        prefix = self._container_time(when) + self._launcher_prefix(rank)
        self._queue(when, self.rank_file(rank), prefix, lines, mark)

    def agent(self, node: int, when: datetime, lines: str | Sequence[str], mark: Marks = None) -> None:
        self._queue(when, self.agent_file(node), self._container_time(when), lines, mark)

    def _container_time(self, when: datetime) -> str:
        """The container runtime's receive time, nanoseconds and `Z`, that `--timestamps` prepends."""
        if self.job.layout is Layout.KUBECTL and self.job.kubectl_timestamps:
            return f"{when:%Y-%m-%dT%H:%M:%S.%f}{when.second * 7 % 1000:03d}Z "
        return ""

    def srun(self, when: datetime, lines: str | Sequence[str], mark: Marks = None) -> None:
        self._queue(when, self.srun_file(), "", lines, mark)

    def kernel(self, node: int, when: datetime, message: str, mark: Marks = None) -> None:
        host = self.job.hosts[node]
        line = (
            dmesg_t(when, message) if self.job.kernel_log is KernelLog.DMESG else journal(when, host, message)
        )
        self._queue(when, self.kernel_file(node), "", [line], mark)

    def _queue(self, when: datetime, file: str, prefix: str, lines: str | Sequence[str], mark: Marks) -> None:
        self._order += 1
        batch = [lines] if isinstance(lines, str) else list(lines)
        marks = () if mark is None else (mark,) if isinstance(mark, Mark) else tuple(mark)
        self._pending.append(_Emission(when, self._order, file, prefix, batch, marks))

    def flush(self) -> None:
        """Write everything queued, oldest first (ties keep emission order)."""
        for emission in sorted(self._pending, key=lambda e: (e.when, e.order)):
            sink = self._sink(emission.file)
            for mark in emission.marks:
                self._record(emission, mark, sink.lines)
            sink.write("".join(f"{emission.prefix}{line}\n" for line in emission.lines))
            sink.lines += len(emission.lines)
        self._pending.clear()

    def _record(self, emission: _Emission, mark: Mark, lines_before: int) -> None:
        if mark.index is None:
            index = next((i for i, text in enumerate(emission.lines) if mark.contains in text), None)
            if index is None:
                raise ValueError(f"mark {mark.key!r}: no line holds {mark.contains!r}")
        else:
            index = mark.index % len(emission.lines)
            if mark.contains not in emission.lines[index]:
                raise ValueError(f"mark {mark.key!r}: {mark.contains!r} is not in {emission.lines[index]!r}")
        self.marks.setdefault(mark.key, EvidenceLine(emission.file, lines_before + 1 + index, mark.contains))

    def _sink(self, file: str) -> _Sink:
        if file not in self._sinks:
            path = self.root / file
            path.parent.mkdir(parents=True, exist_ok=True)
            if file.endswith(".gz"):
                # mtime=0 and no embedded name: regenerating a log set gives identical bytes.
                target = path.open("wb")
                raw = gzip.GzipFile(filename="", mode="wb", fileobj=target, compresslevel=6, mtime=0)
                text = io.TextIOWrapper(raw, encoding="utf-8")
                self._sinks[file] = _Sink(path, text, compressed_file=target)
            else:
                self._sinks[file] = _Sink(path)
        return self._sinks[file]

    def close(self) -> None:
        self.flush()
        for sink in self._sinks.values():
            sink.close()

    def evidence(self, *keys: str) -> tuple[EvidenceLine, ...]:
        return tuple(self.marks[key] for key in keys)

    def planted(
        self,
        name: str,
        category: str | None,
        culprit_ranks: Iterable[int],
        culprit_nodes: Iterable[int],
        evidence_keys: Sequence[str],
        story: str,
        storage_dir: Path | None = None,
    ) -> Planted:
        self.close()
        return Planted(
            name=name,
            log_dir=self.root,
            category=category,
            culprit_ranks=tuple(sorted(culprit_ranks)),
            culprit_nodes=tuple(self.job.hosts[n] for n in sorted(culprit_nodes)),
            evidence=self.evidence(*evidence_keys),
            story=story,
            torch=self.job.torch,
            layout=self.job.layout,
            world_size=self.job.world_size,
            storage_dir=storage_dir,
        )


def seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


# --- phases ---------------------------------------------------------------------------------


def write_startup(ls: LogSet, marks: dict[int, Mark] | None = None) -> datetime:
    """Launcher banners, then every rank's NCCL / aws-ofi-nccl / ProcessGroupNCCL init lines."""
    job = ls.job
    for node in range(len(job.hosts)):
        _launcher_banner(ls, node, job.start)
    for rank in range(job.world_size):
        when = job.start + seconds(8 + (rank % 97) * 0.011)
        ls.rank(rank, when, _nccl_init_lines(job, rank), (marks or {}).get(rank))
        nccl = job.nccl_on(job.node_of(rank)).version
        ls.rank(
            rank,
            when + seconds(0.4),
            job.wording.init_banner(rank, when, job.world_size, job.timeout_ms, nccl),
        )
        ls.rank(rank, when + seconds(1.2), STARTUP_WARNINGS)
    ls.flush()
    return job.start + seconds(20)


# Harmless Python warnings every rank prints once; they mention "freeze" and "deprecated" on purpose.
STARTUP_WARNINGS = (
    "/usr/local/lib/python3.12/dist-packages/torch/utils/data/dataloader.py:617: UserWarning: This "
    "DataLoader will create 16 worker processes in total. Our suggested max number of worker in current "
    "system is 12, which is smaller than what this DataLoader is going to create. Please be aware that "
    "excessive worker creation might get DataLoader running slow or even freeze, lower the worker number "
    "to avoid potential slowness/freeze if necessary.",
    "  warnings.warn(",
    "/workspace/train.py:154: FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
    "`torch.amp.GradScaler('cuda', args...)` instead.",
    "  scaler = torch.cuda.amp.GradScaler()",
)


def _launcher_banner(ls: LogSet, node: int, when: datetime) -> None:
    """torchrun's OMP_NUM_THREADS warning, the first lines of every torchrun log."""
    job = ls.job
    if job.layout not in (Layout.TORCHRUN, Layout.KUBECTL):
        return
    stars = "*" * 49
    omp = (
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
        "system being overloaded, please further tune the variable for optimal performance in your "
        "application as needed. "
    )
    pid = job.agent_pid(node)
    ls.agent(
        node,
        when,
        [
            torchrun_agent(job.torch, when, "W", pid, "torch/distributed/run.py", 793, m)
            for m in ("", stars, omp, stars)
        ],
    )


def _nccl_init_lines(job: Job, rank: int) -> list[str]:
    node, local = job.node_of(rank), job.local(rank)
    host, pid, nccl = job.hosts[node], job.pid(rank), job.nccl_on(node)
    ofi = OfiWording(job.ofi)
    provider = job.provider_on(node)
    fabric = "efa" if provider == "efa" else f"172.31.{node}.0/20"
    nics = 32 if provider == "efa" else 1
    if job.nccl_debug == "WARN":
        return [f"NCCL version {nccl.version}+cuda12.4"]
    lines = [
        nccl.bootstrap(host, pid, local, job.address(node)),
        nccl.version_line(host, pid, local),
        nccl.info(host, pid, local, "cudaDriverVersion 12040"),
    ]
    lines += [nccl.info(host, pid, local, text) for text in ofi.init_lines(provider, nics, fabric)]
    if provider != "efa":
        lines.append(nccl.info(host, pid, local, "NET/OFI Need to force simple protocol: GDR not supported"))
    lines += [
        nccl.info(host, pid, local, f"Using network {ofi.network_name}"),
        nccl.info(host, pid, local, "NCCL_SOCKET_IFNAME set by environment to ^lo,docker"),
        nccl.info(
            host,
            pid,
            local,
            f"comm {comm_pointer(rank)} rank {rank} nRanks {job.world_size} "
            f"nNodes {len(job.hosts)} localRanks {job.ranks_per_node} localRank {local} MNNVL 0",
        ),
        nccl.info(host, pid, local, f"Setting affinity for GPU {local} to ffffffff,00000000"),
    ]
    peer = (rank + job.ranks_per_node) % job.world_size
    for channel in range(2):
        lines.append(
            nccl.info(
                host,
                pid,
                local,
                f"Channel {channel:02d}/0 : {rank}[{local}] -> {peer}[{local}] [send] via "
                f"NET/{ofi.network_name}/{local}/GDRDMA",
            )
        )
    lines += [
        nccl.info(host, pid, local, "Connected all rings"),
        nccl.info(host, pid, local, "Connected all trees"),
        nccl.init_complete(host, pid, local, rank, job.world_size, f"{job.bus(rank)}000"),
    ]
    return lines


def write_training(
    ls: LogSet,
    steps: range,
    start: datetime,
    *,
    reset_rate: float = 0.004,
    rng: random.Random | None = None,
    ranks: Sequence[int] | None = None,
) -> datetime:
    """Every rank's per-step log line, with connection resets that recover on the first retry."""
    job = ls.job
    rng = rng or random.Random(job.job_id)
    active = range(job.world_size) if ranks is None else ranks
    when = start
    for step in steps:
        when = start + seconds((step - steps.start) * job.step_seconds)
        loss = 2.9 - step * 0.0004 + rng.random() * 0.05
        for rank in active:
            at = when + seconds((rank % 13) * 0.003)
            ls.rank(rank, at, step_line(at, rank, step, loss))
            if rng.random() < reset_rate:
                ls.rank(rank, at + seconds(0.05), recovered_reset(rng))
        ls.flush()
    return when + seconds(job.step_seconds)


def step_line(when: datetime, rank: int, step: int, loss: float) -> str:
    return (
        f"[{when:%Y-%m-%d %H:%M:%S},{when.microsecond // 1000:03d}] [INFO] [train.py:241] [rank {rank}] "
        f"step={step} loss={loss:.4f} lr=3.00e-04 grad_norm=0.8{step % 10} step_time=0.43s tokens/s=152103"
    )


def shard_url(rng: random.Random) -> str:
    return f"/v1/objects/train-shards/shard-{rng.randrange(100_000):06d}.tar?provider=ais"


def urllib3_retry(total: int, url: str) -> str:
    """urllib3's warning when a pooled keep-alive connection was reset and the request is retried."""
    return (
        f"WARNING:urllib3.connectionpool:Retrying (Retry(total={total}, connect=None, read=None, "
        "redirect=None, "
        "status=None)) after connection broken by 'ProtocolError('Connection aborted.', "
        f"ConnectionResetError(104, 'Connection reset by peer'))': {url}"
    )


def recovered_reset(rng: random.Random) -> str:
    """A reset on a stale keep-alive connection, retried once and never again: noise (seed 003)."""
    return urllib3_retry(4, shard_url(rng))


def stuck_work(job: Job, completed_steps: int, numel: int = GRAD_NUMEL, op: str | None = None) -> Work:
    """The collective right after `completed_steps` full steps."""
    seq = completed_steps * COLLECTIVES_PER_STEP + 1
    return Work(seq, op or STEP_OPS[0], numel, numel, job.timeout_ms)


def write_watchdog_fired(
    ls: LogSet, rank: int, when: datetime, work: Work, enqueued: int, completed: int, mark: Mark | None = None
) -> None:
    """The cascade of a rank whose own watchdog fired on `work` (§1.1–1.11)."""
    w = ls.job.wording
    ran_ms = work.timeout_ms + 20 + rank % 60
    lines = [w.watchdog_caught(rank, when, work, ran_ms)]
    if w.has_flight_recorder:
        lines += [
            w.watchdog_state(rank, when, work.seq, enqueued, completed),
            w.first_to_signal(rank, when),
            w.dump_reason(rank, when, None, enqueued, completed),
            w.preparing_dump(rank, when),
        ]
    if w.generation == "2.6":
        lines += w.stack_trace_of_failed_collective(rank, when, work.op)
    lines += [w.some_ops_failed(rank, when), w.taking_down(rank, when)]
    lines += w.watchdog_terminated(
        rank,
        when,
        f"[Rank {rank}] Watchdog caught collective operation timeout: "
        f"{w.work(work)} ran for {ran_ms} milliseconds before timing out.",
    )
    fatal = w.terminating(rank, when + seconds(1))
    if fatal:
        lines.append(fatal)
    ls.rank(rank, when, lines, mark)


def write_async_failure(ls: LogSet, rank: int, when: datetime, work: Work, what: str) -> None:
    """A rank whose collective failed with an NCCL error (a peer vanished) rather than a timeout."""
    w = ls.job.wording
    lines = [
        w.async_error(rank, when, work, what),
        w.some_ops_failed(rank, when),
        w.taking_down(rank, when),
        *w.watchdog_terminated(rank, when, what),
    ]
    fatal = w.terminating(rank, when + seconds(1))
    ls.rank(rank, when, [*lines, *([fatal] if fatal else [])])


def write_notified(
    ls: LogSet,
    rank: int,
    when: datetime,
    origin: int,
    enqueued: int,
    completed: int,
    mark: Mark | None = None,
) -> None:
    """A rank with no timed-out work of its own that observed another rank's dump signal (§1.10)."""
    w = ls.job.wording
    lines = [
        w.observed_signal(rank, when),
        w.dump_reason(rank, when, origin, enqueued, completed),
        w.preparing_dump(rank, when),
    ]
    ls.rank(rank, when, lines, mark)


def write_collective_timeout(
    ls: LogSet,
    stuck_at: datetime,
    work_of: dict[int, Work],
    completed_of: dict[int, int],
    enqueued_of: dict[int, int] | None = None,
    marks: dict[int, Mark] | None = None,
) -> datetime:
    """Every rank in `work_of` times out on its work; returns when the first watchdog fired."""
    job = ls.job
    first = stuck_at + timedelta(milliseconds=job.timeout_ms) + seconds(0.02)
    for rank, work in work_of.items():
        when = first + seconds(_watchdog_lag(rank))
        enqueued = (enqueued_of or {}).get(rank, work.seq)
        write_watchdog_fired(ls, rank, when, work, enqueued, completed_of[rank], (marks or {}).get(rank))
    ls.flush()
    return first


def _watchdog_lag(rank: int) -> float:
    """Watchdogs poll on their own schedule, so ranks notice the same timeout a little apart."""
    return (rank * 7 % 23) * 0.013


def first_to_fire(ranks: Iterable[int]) -> int:
    """The rank whose watchdog notices a shared timeout first (the dump signal's origin)."""
    return min(ranks, key=lambda rank: (_watchdog_lag(rank), rank))


def write_launcher_exits(
    ls: LogSet,
    when: datetime,
    exitcodes: dict[int, int],
    *,
    root_rank: int | None = None,
    root_marks: Marks = None,
) -> None:
    """How each launcher reports its workers dying (exit code < 0 is a signal, torchrun-style).

    `root_marks` mark lines of torchrun's report on `root_rank`'s node.
    """
    if ls.job.layout in (Layout.SLURM_NODE, Layout.PER_RANK):
        _srun_exits(ls, when, exitcodes)
    else:
        _torchrun_exits(ls, when, exitcodes, root_rank, root_marks)
    ls.flush()


_SIGNALS = {
    -6: ("SIGABRT", "Aborted (core dumped)"),
    -9: ("SIGKILL", "Killed"),
    -11: ("SIGSEGV", "Segmentation fault (core dumped)"),
    -15: ("SIGTERM", "Terminated"),
}


def _srun_status(code: int) -> str:
    return _SIGNALS[code][1] if code < 0 else f"Exited with exit code {code}"


def task_list(ranks: Sequence[int]) -> str:
    """srun's compressed task ids: `0-6,8`."""
    parts: list[str] = []
    ordered = sorted(ranks)
    start = prev = ordered[0]
    for rank in [*ordered[1:], None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        if rank is not None:
            start = prev = rank
    return ",".join(parts)


def _srun_exits(ls: LogSet, when: datetime, exitcodes: dict[int, int]) -> None:
    job = ls.job
    for node, host in enumerate(job.hosts):
        by_status: dict[str, list[int]] = {}
        for rank in job.ranks_on(node):
            if rank in exitcodes:
                by_status.setdefault(_srun_status(exitcodes[rank]), []).append(rank)
        for status, ranks in by_status.items():
            noun = "task" if len(ranks) == 1 else "tasks"
            ls.srun(when + seconds(node * 0.01), f"srun: error: {host}: {noun} {task_list(ranks)}: {status}")


def _torchrun_exits(
    ls: LogSet, when: datetime, exitcodes: dict[int, int], root_rank: int | None, root_marks: Marks
) -> None:
    job = ls.job
    for node, host in enumerate(job.hosts):
        failed = [r for r in job.ranks_on(node) if r in exitcodes]
        if not failed:
            continue
        first = root_rank if root_rank in failed else failed[0]
        assert first is not None
        apid = job.agent_pid(node)
        api = "torch/distributed/elastic/multiprocessing/api.py"
        lines = [
            torchrun_agent(
                job.torch,
                when,
                "E",
                apid,
                api,
                869,
                f"failed (exitcode: {exitcodes[first]}) local_rank: {job.local(first)} "
                f"(pid: {job.pid(first)}) of binary: /usr/bin/python3",
            )
        ]
        lines += [
            torchrun_agent(
                job.torch, when, "W", apid, api, 897, f"Sending process {job.pid(r)} closing signal SIGTERM"
            )
            for r in job.ranks_on(node)
            if r != first
        ]
        lines += child_failed_error(job, when, host, first, exitcodes[first])
        ls.agent(node, when, lines, root_marks if first == root_rank else None)


def child_failed_error(job: Job, when: datetime, host: str, rank: int, code: int) -> list[str]:
    """torchrun's final ChildFailedError report (§4.1)."""
    if code < 0:
        name = _SIGNALS[code][0]
        traceback = f"Signal {-code} ({name}) received by PID {job.pid(rank)}"
    else:
        traceback = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "train.py FAILED",
        "-" * 60,
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "-" * 60,
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {when:%Y-%m-%d_%H:%M:%S}",
        f"  host      : {host}.ec2.internal" if host.startswith("ip-") else f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {job.local(rank)})",
        f"  exitcode  : {code} (pid: {job.pid(rank)})",
        "  error_file: <N/A>",
        f"  traceback : {traceback}",
        "=" * 60,
    ]


def slurm_cancelled(job: Job, node: int, when: datetime, reason: str = "") -> str:
    """slurmstepd's cancellation banner (§8.1), ≤ 24.11 wording."""
    due = f" DUE TO {reason}" if reason else ""
    step = f"STEP {job.job_id}.0 ON {job.hosts[node]}"
    return f"slurmstepd: error: *** {step} CANCELLED AT {when:%Y-%m-%dT%H:%M:%S}{due} ***"


def write_kernel_noise(ls: LogSet, nodes: Iterable[int]) -> None:
    """Boot-time driver lines every node's kernel log has, so the files are never empty of noise."""
    job = ls.job
    for node in nodes:
        when = job.start - seconds(3600)
        ls.kernel(
            node,
            when,
            "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024",
        )
        ls.kernel(
            node, when + seconds(2), "efa 0000:a0:00.0: Setup irq:0x7fd6 name:efa-mgmnt@pci:0000:a0:00.0"
        )
        ls.kernel(node, when + seconds(9), "IPv6: ADDRCONF(NETDEV_CHANGE): enp71s0: link becomes ready")
    ls.flush()


def python_traceback(prefix: str, frames: Sequence[tuple[str, int, str, str]], exception: str) -> list[str]:
    """A Python traceback with `prefix` (e.g. `[rank5]: `) on every line (§0.2)."""
    lines = [f"{prefix}Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines += [f'{prefix}  File "{path}", line {line}, in {func}', f"{prefix}    {code}"]
    lines.append(f"{prefix}{exception}")
    return lines


TRAIN_FRAMES = (
    ("/workspace/train.py", 318, "<module>", "main()"),
    ("/workspace/train.py", 296, "main", "loss = train_step(model, batch, optimizer)"),
)
LOADER_FRAMES = (
    ("/workspace/train.py", 318, "<module>", "main()"),
    ("/workspace/train.py", 288, "main", "batch = next(data_iter)"),
    (
        "/usr/local/lib/python3.12/dist-packages/torch/utils/data/dataloader.py",
        708,
        "__next__",
        "data = self._next_data()",
    ),
)


DATA_UTILS = "/usr/local/lib/python3.12/dist-packages/torch/utils/data/_utils"


def dataloader_worker_failure(
    prefix: str, worker: int, exception: str, frames: Sequence[tuple[str, int, str, str]]
) -> list[str]:
    """A DataLoader worker's exception as the main process re-raises it (`Caught X in DataLoader worker
    process N.`), followed by the worker's original traceback."""
    name = exception.split(":", 1)[0]
    caught = f"{name}: Caught {name.rsplit('.', 1)[-1]} in DataLoader worker process {worker}."
    original = [
        f"{prefix}Original Traceback (most recent call last):",
        f'{prefix}  File "{DATA_UTILS}/worker.py", line 349, in _worker_loop',
        f"{prefix}    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
    ]
    for path, line, func, code in frames:
        original += [f'{prefix}  File "{path}", line {line}, in {func}', f"{prefix}    {code}"]
    return [*python_traceback(prefix, LOADER_FRAMES, caught), *original, f"{prefix}{exception}"]
