"""Families of wording around start-up (issue 16, logs from threads not in the corpus): an errno
raised from shared-memory code, processes that took one node rank, a process group that began
forming and a paste that stops there, NCCL stalled before Init COMPLETE on a one-node job."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.models import Category, Status
from tests.triage.test_families import cause, describe, triage

_SEMLOCK = """\
  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__
    sl = self._semlock = _multiprocessing.SemLock(
OSError: [Errno 28] No space left on device
"""
_TORCH_SHARING = """\
  File "/opt/conda/lib/torch/multiprocessing/reductions.py", line 568, in reduce_storage
    fd, size = storage._share_fd_cpu_()
RuntimeError: unable to write to file </torch_1234_567_8>: No space left on device (28)
"""
_SHARED_MEMORY = """\
  File "/usr/lib/python3.12/multiprocessing/shared_memory.py", line 115, in __init__
    os.ftruncate(self._fd, size)
OSError: [Errno 28] No space left on device
"""


@pytest.mark.parametrize("trace", [_SEMLOCK, _TORCH_SHARING, _SHARED_MEMORY], ids=["semlock", "torch", "shm"])
def test_no_space_raised_from_shared_memory_code_is_dev_shm(tmp_path: Path, trace: str) -> None:
    report = triage(tmp_path, {"train.log": "Traceback (most recent call last):\n" + trace})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert report.root_cause and "Shared memory" in report.root_cause.summary
    finding = next(f for f in report.findings if f.id == "triage.config.shm")
    if "/dev/shm" not in trace and "torch_" not in trace:  # the error line does not say it itself
        frames = {line.strip() for line in trace.splitlines()[:2]}
        assert any(e.text.strip() in frames for e in finding.evidence), finding.evidence
    commands = [c.command for c in finding.suggested_commands]
    assert commands[0] == "df -h /dev/shm" and any(c.startswith("docker run --ipc=host") for c in commands)


def test_no_space_far_below_a_shared_memory_frame_is_still_the_disk(tmp_path: Path) -> None:
    filler = "".join(f"step={n} loss=1.0\n" for n in range(20))
    text = _SEMLOCK.replace("OSError: [Errno 28] No space left on device\n", "") + filler
    text += "OSError: [Errno 28] No space left on device: '/fsx/ckpt/step_20.pt'\n"
    report = triage(tmp_path, {"train.log": text})
    assert cause(report)[0] == Category.STORAGE_IO, describe(report)


def _lightning(announced: list[int], world: int) -> str:
    return "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}\n" for r in announced)


def test_global_ranks_announced_twice_name_the_node_rank_both_nodes_took(tmp_path: Path) -> None:
    report = triage(tmp_path, {"console.txt": _lightning([1, 1, 2, 2, 3, 3, 0, 0], world=8)})
    finding = next(f for f in report.findings if f.id == "triage.config.members_missing")
    assert finding.title.startswith("Global ranks 0-3 joined twice and 4 of 8 never"), finding.title
    assert cause(report)[0] == Category.CONFIG
    assert [e.line for e in finding.evidence] == [7, 8], "both announcements of rank 0 are quoted"
    assert report.job and report.job.world_size == 8 and report.job.framework == "PyTorch Lightning"


def test_on_slurm_the_missing_members_get_one_task_per_gpu(tmp_path: Path) -> None:
    report = triage(tmp_path, {"slurm-8812.out": _lightning([0, 1, 2, 3], world=8)})
    finding = next(f for f in report.findings if f.id == "triage.config.members_missing")
    commands = [c.command for c in finding.suggested_commands]
    assert commands == [
        "sacct -j 8812 --format=JobID,State,Start,Elapsed,NodeList",
        "sbatch '--ntasks-per-node=<gpus-per-node>' '<job-script>'",
    ]


def test_fewer_members_each_announced_once_are_processes_never_started(tmp_path: Path) -> None:
    report = triage(tmp_path, {"console.txt": _lightning([0, 1, 2, 3], world=8)})
    finding = next(f for f in report.findings if f.id == "triage.config.members_missing")
    assert finding.title.startswith("Only 4 of 8 processes joined"), finding.title


_FORMING = [
    "[2024-06-11 00:23:36,254] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed "
    "with backend nccl",
    "INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 3",
    "Waiting in store based barrier to initialize process group for rank: 5, key: store_based_barrier_key:1 "
    "(world_size=8, worker_count=6, timeout=0:30:00)",
]


@pytest.mark.parametrize("line", _FORMING, ids=["deepspeed", "barrier-key", "barrier-wait"])
def test_a_paste_that_stops_while_the_process_group_forms_is_a_low_confidence_rendezvous(
    tmp_path: Path, line: str
) -> None:
    report = triage(tmp_path, {"train.log": "Loading model\n" + line + "\n"})
    assert cause(report)[0] == Category.RENDEZVOUS, describe(report)
    assert report.root_cause and report.root_cause.confidence == "low"
    assert any(f.id == "triage.rendezvous.forming_stalled" for f in report.findings)


def test_a_process_group_that_formed_and_trained_is_not_stalled(tmp_path: Path) -> None:
    text = _FORMING[0] + "\n" + "Epoch 1:  40%|████      | 40/100 [00:20<00:30,  2.00it/s]\n"
    report = triage(tmp_path, {"train.log": text})
    assert not any(f.id == "triage.rendezvous.forming_stalled" for f in report.findings), describe(report)


def test_a_store_barrier_every_rank_completed_is_not_stalled(tmp_path: Path) -> None:
    text = (
        _FORMING[1]
        + "\nINFO:torch.distributed.distributed_c10d:Rank 3: Completed store-based barrier for key:"
        "store_based_barrier_key:1 with 4 nodes.\n"
    )
    report = triage(tmp_path, {"train.log": text})
    assert [f.status for f in report.findings] == [Status.PASS], describe(report)


def test_nccl_stalled_before_init_complete_on_one_node_names_that_node(tmp_path: Path) -> None:
    lines = [
        "gpubox:15833:15833 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>",
        "gpubox:15833:15833 [0] NCCL INFO Setting affinity for GPU 0 to ff00ff",
        "NCCL version 2.4.8+cuda10.0",
    ]
    report = triage(tmp_path, {"nccl-tests.out": "\n".join(lines) + "\n"})
    assert cause(report) == (Category.CONFIG, [], ["gpubox"]), describe(report)
    finding = next(f for f in report.findings if f.id == "triage.config.nccl_init_stalled")
    assert finding.status in (Status.FAIL, Status.WARN)
    commands = [c.command for c in finding.suggested_commands]
    assert any("iommu" in c for c in commands) and "export NCCL_P2P_DISABLE=1" in commands, commands


@pytest.mark.parametrize(
    "path", ["my_out/checkpoints/checkpoint_0.pt", "/fsx/run 7/ckpt/step_1200.pt"], ids=["relative", "spaces"]
)
def test_a_checkpoint_file_torch_save_could_not_create_is_storage(tmp_path: Path, path: str) -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    torch.save(state, path)\n"
        f"RuntimeError: File {path} cannot be opened.\n"
    )
    report = triage(tmp_path, {"train.log": trace})
    assert cause(report)[0] == Category.STORAGE_IO, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.storage.checkpoint_unwritable")
    assert [c.command for c in finding.suggested_commands] == ["df -h"]


@pytest.mark.parametrize(
    ("line", "category", "ranks"),
    [
        (
            "[E ProcessGroupGloo.cpp:138] Rank 1 successfully reached monitoredBarrier, but received errors "
            "while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.",
            Category.UNKNOWN,
            [0],
        ),
        (
            "RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms",
            Category.DATA_LOADING_STALL,
            [1, 3],
        ),
        (
            "RuntimeError: [Rank 0]: Rank 5 failed to pass monitoredBarrier in 1800000 ms",
            Category.DATA_LOADING_STALL,
            [5],
        ),
    ],
    ids=["peer-failed", "two-late", "one-late"],
)
def test_a_monitored_barrier_names_the_ranks_it_waited_for_not_the_one_reporting(
    tmp_path: Path, line: str, category: Category, ranks: list[int]
) -> None:
    report = triage(tmp_path, {"train.log": line + "\n"})
    assert cause(report)[:2] == (category, ranks), describe(report)


@pytest.mark.parametrize(
    "why",
    ["Memory required by task is not available", "Requested node configuration is not available"],
)
def test_a_step_slurm_refused_is_configuration_with_the_jobs_allocation_to_read(
    tmp_path: Path, why: str
) -> None:
    report = triage(tmp_path, {"train.out": f"srun: error: Unable to create step for job 1234: {why}\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.config.slurm_step_refused")
    assert [c.command for c in finding.suggested_commands] == ["scontrol show job 1234"]


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        (
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4123 got signal: 1",
            "SIGHUP",
        ),
        (
            "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down "
            "workers",
            "SIGHUP",
        ),
        (
            "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGHUP death signal, "
            "shutting down workers",
            "SIGHUP",
        ),
        (
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 77 got signal: 15",
            "SIGTERM",
        ),
    ],
    ids=["exception-1", "received-1", "received-sighup", "exception-15"],
)
def test_a_launcher_stopped_from_outside_says_which_signal_and_who_sends_it(
    tmp_path: Path, line: str, signal: str
) -> None:
    report = triage(tmp_path, {"console.log": line + "\n"})
    # a hang-up is how the job was started (a terminal that closed), a SIGTERM the cluster acting on it
    hangup = signal == "SIGHUP"
    assert cause(report)[0] == (Category.CONFIG if hangup else Category.INFRASTRUCTURE), describe(report)
    finding_id = "triage.config.terminal_hangup" if hangup else "triage.infra.terminated"
    finding = next(f for f in report.findings if f.id == finding_id)
    assert f"received {signal} " in finding.title, finding.title
    assert ("terminal" in finding.detail) == (signal == "SIGHUP"), finding.detail


def _refused(host: str, device: int, times: int) -> list[str]:
    return [
        f"{host}:{200 + device}:{300 + device} [{device}] NCCL INFO Call to connect returned Connection "
        "refused, retrying"
    ] * times


def test_bootstrap_connects_refused_until_the_log_ends_are_a_group_that_never_formed(tmp_path: Path) -> None:
    lines = [
        "node-b:201:201 [1] NCCL INFO Bootstrap : Using eth0:10.0.3.7<0>",
        "NCCL version 2.7.8+cuda11.0",
        *_refused("node-b", 1, 5),
        *_refused("node-b", 3, 4),
    ]
    report = triage(tmp_path, {"worker-1.log": "\n".join(lines) + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.config.bootstrap_refused")
    assert "about 9 s" in finding.title and "node-b" in finding.title, finding.title
    commands = [c.command for c in finding.suggested_commands]
    assert "ip -br addr" in commands and any("NCCL_SOCKET_IFNAME" in c for c in commands), commands


def test_refused_connects_that_then_complete_are_a_peer_starting_late(tmp_path: Path) -> None:
    lines = [
        *_refused("node-b", 0, 2),
        "node-b:200:300 [0] NCCL INFO comm 0x5581 rank 4 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE",
        "Epoch 1:  40%|████      | 40/100 [00:20<00:30,  2.00it/s]",
    ]
    report = triage(tmp_path, {"worker-1.log": "\n".join(lines) + "\n"})
    assert not any(f.id == "triage.config.bootstrap_refused" for f in report.findings), describe(report)
    assert report.root_cause is None, describe(report)


@pytest.mark.parametrize(
    ("bar", "minutes", "side"),
    [
        (
            "Map (num_proc=8):  61%|██████    | 61000/100000 [09:41<06:11, 105.0 examples/s]",
            10,
            "9:41, just under",
        ),
        (
            "Grouping texts in chunks of 2048 #3:  40%|████      | 4/10 [29:20<44:00, 440.0s/ba]",
            30,
            "29:20, just under",
        ),
        (
            "Running tokenizer on dataset:  47%|████▊     | 1695000/3634744 [30:09<33:25, 967.30 examples/s]",
            30,
            "30:09, just past",
        ),
    ],
    ids=["map-10min", "group-30min", "tokenizer-past-30min"],
)
def test_an_unfinished_bar_cut_by_a_traceback_near_a_default_timeout_is_a_guessed_stall(
    tmp_path: Path, bar: str, minutes: int, side: str
) -> None:
    text = f'{bar}\nTraceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
    report = triage(tmp_path, {"console.txt": text})
    assert cause(report)[0] == Category.DATA_LOADING_STALL, describe(report)
    assert report.root_cause and report.root_cause.confidence == "low"
    finding = next(f for f in report.findings if f.id == "triage.nccl.busy_outside_nccl")
    assert f"default {minutes} min" in finding.title and side in finding.title, finding.title
    assert report.root_cause.summary.startswith("Probably"), report.root_cause.summary


@pytest.mark.parametrize(
    "bar",
    [
        "Map:  61%|██████    | 61000/100000 [03:41<02:11, 275.0 examples/s]",  # far from any default
        "Map: 100%|██████████| 100000/100000 [29:41<00:00, 56.0 examples/s]",  # finished
    ],
    ids=["short", "finished"],
)
def test_a_bar_far_from_a_timeout_or_finished_is_not_blamed_for_a_traceback(tmp_path: Path, bar: str) -> None:
    text = f"{bar}\nTraceback (most recent call last):\nValueError: bad label 7\n"
    report = triage(tmp_path, {"console.txt": text})
    assert cause(report)[0] != Category.DATA_LOADING_STALL, describe(report)


# --- progress bars of one loop, steps apart ----------------------------------------------------------------

_TIMEOUT = (
    "[rank0]:[E1102 03:04:14.692188080 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=129457, OpType=ALLREDUCE, NumelIn=5253, NumelOut=5253, "
    "Timeout(ms)=600000) ran for 600002 milliseconds before timing out.\n"
)


def _bar(done: int, elapsed: str, rate: str = "25.13s/it", prefix: str = "") -> str:
    return f"{prefix} 7%|▋         | {done}/7151 [{elapsed}<46:27:09, {rate}]\n"


@pytest.mark.parametrize(
    "bars",
    [
        [_bar(499, "3:38:58"), _bar(496, "3:38:58"), _bar(497, "3:39:23")],  # a console paste, unprefixed
        [_bar(499, "3:38:58"), _bar(496, "3:38:50")],  # the second bar a little older than the first
        [_bar(499, "3:38:58", prefix="[rank0]:"), _bar(496, "3:39:05", prefix="[rank1]:")],
        [_bar(1210, "10:00", "3.10it/s"), _bar(1190, "10:01", "3.02it/s")],  # fast steps, 20 apart
    ],
    ids=["console", "older-second", "ranks", "fast-steps"],
)
def test_bars_of_one_loop_steps_apart_at_one_moment_are_ranks_that_drifted(
    tmp_path: Path, bars: list[str]
) -> None:
    report = triage(tmp_path, {"train.log": "".join(bars) + _TIMEOUT})
    assert cause(report)[0] == Category.COLLECTIVE_MISMATCH, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.collective.ranks_drifted_apart")
    assert len([e for e in finding.evidence if "/7151" in e.text]) == 2
    assert not any(f.id == "triage.nccl.busy_outside_nccl" for f in report.findings)


@pytest.mark.parametrize(
    "bars",
    [
        # one rank stopped three steps back: its bar is older by about those steps (25 s each)
        [_bar(496, "3:37:43"), _bar(499, "3:38:58")],
        # one bar redrawn as it advanced
        [_bar(496, "3:37:43"), _bar(497, "3:38:08"), _bar(498, "3:38:33")],
        # a step apart: ranks waiting in the same collective
        [_bar(499, "3:38:58"), _bar(498, "3:38:58")],
    ],
    ids=["stalled", "redrawn", "one-step"],
)
def test_bars_a_stalled_rank_or_one_redrawn_bar_leave_are_not_a_drift(
    tmp_path: Path, bars: list[str]
) -> None:
    report = triage(tmp_path, {"train.log": "".join(bars) + _TIMEOUT})
    assert not any(f.id == "triage.collective.ranks_drifted_apart" for f in report.findings), describe(report)
