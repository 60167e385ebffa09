"""Console pastes, the origin of a failure, and honesty about input that could not be read (issue 16
items 3–5): hand-written log sets in the formats of shared/log-formats.md, through `run_triage`."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

from hyperpod_nccl.models import Category, Report
from hyperpod_nccl.triage.engine import run_triage
from tests.triage.test_families import cause, describe, quotes, triage

TIMEOUT = (
    "[rank{r}]:[E626 06:24:44.90388191{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
    "Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
)
STATUS = (
    "[rank{r}]:[E626 06:24:44.90645762{r} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank "
    "{r}] "
    "Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: "
    "808, last "
    "completed NCCL work: 807."
)


def waiting(rank: int) -> list[str]:
    return [TIMEOUT.format(r=rank), STATUS.format(r=rank)]


# --- 3. console pastes ------------------------------------------------------------------------------


def test_a_rank_whose_lines_carry_no_prefix_is_present_and_silent_not_missing(tmp_path: Path) -> None:
    """One terminal, four ranks: ranks 1-3 time out, rank 0 prints unprefixed dataset preparation."""
    lines = [
        "Loading checkpoint shards: 100%|██████████| 4/4 [00:12<00:00,  3.01s/it]",
        "Generating train split: 1200000 examples [02:11, 9120.55 examples/s]",
        *[line for r in (1, 2, 3) for line in waiting(r)],
        "Filtering dataset: 48%|████▊     | 576000/1200000 [04:55<05:20, 1948.12 examples/s]",
    ]
    report = triage(tmp_path, {"terminal.txt": "\n".join(lines) + "\n"})
    assert cause(report)[:2] == (Category.DATA_LOADING_STALL, [0]), describe(report)
    states = {g.ranks: g.state for g in report.rank_states}
    assert "not in the input" not in states.get("0", ""), states


def test_srun_labels_under_torchrun_are_launchers_and_the_rank_prefix_inside_wins(tmp_path: Path) -> None:
    """`srun --label` over one torchrun per node: `1: [default3]:` is node 1's local rank 3, i.e.
    global rank 7, never rank 1."""
    lines = []
    for node, host in enumerate(("gpu-a", "gpu-b")):
        for local in range(4):
            rank = node * 4 + local
            lines.append(
                f"{node}: [default{local}]:{host}:{5000 + rank}:{5010 + rank} [{local}] NCCL INFO comm 0x1 "
                f"rank {rank} "
                f"nranks 8 cudaDev {local} busId {local + 1}000 commId 0x21 - Init COMPLETE"
            )
    lines += [
        "1: [default3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
        "total "
        "capacity of 79.11 GiB of which 1.38 GiB is free.",
        "0: [default2]:[rank2]: Traceback (most recent call last):",
    ]
    report = triage(tmp_path, {"slurm-4242.out": "\n".join(lines) + "\n"})
    assert cause(report) == (Category.GPU_OOM, [7], ["gpu-b"]), describe(report)


def test_a_one_node_terminal_paste_is_triaged_like_per_rank_files(tmp_path: Path) -> None:
    lines = [
        "W0813 08:21:01.000000 1245483 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment "
        "variable",
        "[rank5]: Traceback (most recent call last):",
        '[rank5]:   File "train.py", line 88, in <module>',
        "[rank5]: KeyError: 'input_ids'",
        "E0813 08:21:22.980000 1245483 torch/distributed/elastic/multiprocessing/api.py:984] failed "
        "(exitcode: 1) "
        "local_rank: 5 (pid: 1246013) of binary: /usr/bin/python3",
    ]
    report = triage(tmp_path, {"out.txt": "\n".join(lines) + "\n"})
    assert cause(report)[:2] == (Category.SOFTWARE, [5]), describe(report)


# --- 4. the origin, not everyone affected ----------------------------------------------------------


def child_failed(
    failures: list[tuple[int, int, int, int]], root: tuple[int, int, int, int], host: str
) -> list[str]:
    """torchrun's ChildFailedError; each failure is (rank, local rank, exit code, pid)."""

    def block(index: int, rank: int, local: int, code: int, pid: int) -> list[str]:
        signal = {-9: "SIGKILL", -6: "SIGABRT", -15: "SIGTERM"}[code]
        return [
            f"[{index}]:",
            "  time      : 2026-03-02_10:40:47",
            f"  host      : {host}.cluster.local",
            f"  rank      : {rank} (local_rank: {local})",
            f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>",
            f"  traceback : Signal {-code} ({signal}) received by PID {pid}",
        ]

    lines = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "train.py FAILED",
        "-" * 60,
        "Failures:",
    ]
    for index, failure in enumerate(failures, 1):
        lines += block(index, *failure)
    lines += ["-" * 60, "Root Cause (first observed failure):", *block(0, *root), "=" * 60]
    return lines


def test_torchrun_names_the_first_observed_failure_among_the_killed(tmp_path: Path) -> None:
    text = child_failed([(9, 1, -9, 7001), (10, 2, -9, 7002)], (11, 3, -9, 7003), host="node-2")
    report = triage(tmp_path, {"torchrun-node-2.log": "\n".join(text) + "\n"})
    assert cause(report)[:2] == (Category.HOST_OOM, [11]), describe(report)


def test_a_kernel_oom_kill_is_joined_to_the_rank_that_had_that_pid(tmp_path: Path) -> None:
    files = {
        "torchrun-node-x.log": "\n".join(child_failed([], (4, 0, -9, 208585), host="node-x")) + "\n",
        "node-logs/node-x.dmesg": "[Mon Mar  2 10:40:45 2026] Out of memory: Killed process 208585 (python) "
        "total-vm:2623712kB, anon-rss:506500kB, file-rss:1268kB, shmem-rss:0kB\n",
    }
    report = triage(tmp_path, files)
    assert cause(report) == (Category.HOST_OOM, [4], ["node-x"]), describe(report)
    assert quotes(report, "Killed process 208585")


def test_the_rank_that_could_not_bind_its_port_is_the_culprit_not_its_node(tmp_path: Path) -> None:
    lines = [
        "[rank3]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network "
        "address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
    ]
    report = triage(tmp_path, {"console.log": "\n".join(lines) + "\n"})
    assert cause(report)[:2] == (Category.CONFIG, [3]), describe(report)


# --- 5. honest about what could not be read -----------------------------------------------------------


def per_rank_job(root: Path, silent: int | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rank in range(4):
        lines = [f"[rank{rank}]: step=1 loss=2.0"] + ([] if rank == silent else waiting(rank))
        (root / f"train-77-{rank}.out").write_text("\n".join(lines) + "\n")


def test_a_nul_hole_in_a_rank_log_is_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    oom = (
        "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB. GPU 2 has a "
        "total "
        "capacity of 79.11 GiB of which 140.38 MiB is free."
    )
    (tmp_path / "rank-2.log").write_bytes(
        b"[rank2]: step=1 loss=2.0\n" + b"\x00" * 50_000 + f"\n{oom}\n".encode()
    )
    report = run_triage([tmp_path])
    assert cause(report)[:2] == (Category.GPU_OOM, [2]), describe(report)
    assert any("NUL bytes" in s.reason for s in report.skipped), report.skipped
    assert quotes(report, "CUDA out of memory")


def test_a_gzip_cut_short_keeps_every_line_decompressed_before_the_cut(tmp_path: Path) -> None:
    """The decisive line sits in the last megabyte decompressed before the cut, which a reader that
    drops the failing read's output would lose."""
    rng = __import__("random").Random(7)
    filler = "".join(
        f"step={i} loss={rng.random():.6f} tokens={rng.randrange(10**9)}\n" for i in range(60_000)
    )
    oom = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    data = (filler + oom + "\n" + filler).encode()
    whole = gzip.compress(data, mtime=0)
    cut = whole[: len(whole) * 3 // 4]
    assert oom.encode() in gzip.decompress(whole)[: len(data) * 3 // 4]
    (tmp_path / "rank-1.log.gz").write_bytes(cut)
    report = run_triage([tmp_path])
    assert cause(report)[:2] == (Category.GPU_OOM, [1]), describe(report)
    assert any("truncated" in s.reason for s in report.skipped)


def test_a_skipped_rank_file_is_never_absent_and_never_makes_a_neighbour_the_culprit(tmp_path: Path) -> None:
    per_rank_job(tmp_path, silent=2)
    (tmp_path / "train-77-2.out").write_bytes(bytes(range(256)) * 64)  # rank 2's log is binary garbage
    report = run_triage([tmp_path])
    assert report.root_cause is not None
    assert report.root_cause.culprit_ranks == [], describe(report)
    assert report.root_cause.confidence == "low"
    assert any("could not be read wholly" in step for step in report.root_cause.chain)
    groups = {g.ranks: g.state for g in report.rank_states}
    assert "2" in groups and "not in the input" not in groups["2"], groups


def test_a_rank_log_cut_short_before_its_watchdog_lines_is_not_a_silent_culprit(tmp_path: Path) -> None:
    per_rank_job(tmp_path)
    head = "[rank3]: step=1 loss=2.0\n" * 30_000 + "\n".join(waiting(3)) + "\n"
    whole = gzip.compress(head.encode(), mtime=0)
    (tmp_path / "train-77-3.out").unlink()
    (tmp_path / "train-77-3.out.gz").write_bytes(whole[: len(whole) // 3])
    report = run_triage([tmp_path])
    assert report.root_cause is not None and 3 not in report.root_cause.culprit_ranks, describe(report)
    assert report.root_cause.confidence != "high"


def test_a_directory_where_nothing_could_be_read_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "core.1").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "core.2").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8)
    result = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "triage", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stdout
    assert "no file could be read" in result.stderr and "binary" in result.stderr


def test_every_quoted_line_is_in_the_input(tmp_path: Path) -> None:
    per_rank_job(tmp_path, silent=1)
    report: Report = run_triage([tmp_path])
    text = "".join(p.read_text() for p in tmp_path.iterdir())
    assert all(e.text.rstrip("…") in text for f in report.findings for e in f.evidence)


def test_the_single_rank_whose_storage_requests_failed_not_the_node_around_it(tmp_path: Path) -> None:
    """Ranks 1 and 2 share a node and both left no watchdog line; only rank 2's reads failed."""
    failed = (
        "[rank2]: urllib3.exceptions.MaxRetryError: HTTPConnectionPool(host='ais-proxy', port=51080): Max "
        "retries "
        "exceeded with url: /v1/objects/train/shard-000017.tar"
    )
    lines = [
        f"[rank{r}]:gpu-a:{4000 + r}:{4010 + r} [{r}] NCCL INFO comm 0x1 rank {r} nranks 4 cudaDev {r} "
        f"busId {r + 1}000 commId 0x21 - Init COMPLETE"
        for r in range(4)
    ]
    lines += [failed, *waiting(0), *waiting(3)]
    report = triage(tmp_path, {"gpu-a.log": "\n".join(lines) + "\n"})
    assert cause(report) == (Category.STORAGE_IO, [2], ["gpu-a"]), describe(report)


def test_srun_labels_are_not_ranks_once_a_rank_prefix_inside_disagrees(tmp_path: Path) -> None:
    """`1: [rank5]:` shows label 1 is node 1's launcher: an unprefixed `1:` line is not rank 1's."""
    lines = [
        "0: [rank2]:[W302 10:00:01.000000000 ProcessGroupNCCL.cpp:1538] Warning: step 10",
        "1: [rank5]:[W302 10:00:01.000000000 ProcessGroupNCCL.cpp:1538] Warning: step 10",
        "1: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    report = triage(tmp_path, {"slurm-4242.out": "\n".join(lines) + "\n"})
    category, ranks, _ = cause(report)
    assert category == Category.GPU_OOM and 1 not in ranks, describe(report)


def test_srun_labels_are_ranks_when_one_task_runs_per_rank(tmp_path: Path) -> None:
    lines = [
        "0: [rank0]: step=10",
        "3: [rank3]: step=10",
        "3: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    report = triage(tmp_path, {"slurm-4242.out": "\n".join(lines) + "\n"})
    assert cause(report)[:2] == (Category.GPU_OOM, [3]), describe(report)


def test_a_file_that_ends_inside_a_line_says_so_and_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("[rank0]: RuntimeError: boom\n[rank0]: Traceback (most rec")
    report = run_triage([tmp_path])
    (note,) = [s for s in report.skipped if "ends inside this line" in s.reason]
    assert note.source == "rank0.log" and "rank0.log:2:" in note.reason
    assert report.root_cause is not None  # what was read still counts
    (tmp_path / "rank0.log").write_text("[rank0]: RuntimeError: boom\n")
    assert not run_triage([tmp_path]).skipped


def test_a_file_named_for_a_rank_whose_lines_name_none_is_that_ranks(tmp_path: Path) -> None:
    (tmp_path / "train_rank2.log").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    (tmp_path / "train_rank3.log").write_text("[rank1]: RuntimeError: late\n")  # its own lines say rank 1
    report = run_triage([tmp_path])
    exception = next(f for f in report.findings if f.id == "triage.software.exception")
    assert {(e.source, e.rank) for e in exception.evidence} == {
        ("train_rank2.log", 2),
        ("train_rank3.log", 1),
    }


def test_files_of_two_jobs_are_said_to_be_two_jobs(tmp_path: Path) -> None:
    (tmp_path / "slurm-4411.out").write_text("srun: error: n1: task 0: Exited with exit code 132\n")
    (tmp_path / "slurm-4502.out").write_text("RuntimeError: boom\n")
    notes = run_triage([tmp_path]).job.notes
    assert any(note.startswith("The input holds 2 jobs (4411, 4502)") for note in notes), notes
    (tmp_path / "slurm-4502.out").unlink()
    assert not any("jobs (" in note for note in run_triage([tmp_path]).job.notes)


def test_a_pyxis_container_of_another_job_than_the_file_name_is_said(tmp_path: Path) -> None:
    def failed_mount(job: str) -> str:
        return (
            f"nvidia-container-cli: mount error: file creation failed: /raid/enroot-data/user-1/pyxis_{job}.0"
            "/run/x: no such device or address\n"
        )

    (tmp_path / "slurm-4471.out").write_text(failed_mount("59"))
    job = run_triage([tmp_path]).job
    assert job.job_id == "59"  # what the step's own container says
    assert any(note.startswith("The input holds 2 jobs (59, 4471)") for note in job.notes), job.notes
    (tmp_path / "slurm-4471.out").write_text(failed_mount("4471"))
    job = run_triage([tmp_path]).job
    assert job.job_id == "4471" and not any("jobs (" in note for note in job.notes)
