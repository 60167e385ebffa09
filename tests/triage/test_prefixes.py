"""Launcher and logger prefixes peeled off, with the rank, host and time they carry (log-formats §0)."""

from __future__ import annotations

import pytest

from hyperpod_nccl.triage.prefixes import strip

WATCHDOG = "[Rank 3] Watchdog caught collective operation timeout"


@pytest.mark.parametrize(
    ("line", "rank", "local_rank", "message_start"),
    [
        (f"3: [rank3]:[E ProcessGroupNCCL.cpp:563] {WATCHDOG}", 3, None, "[Rank 3]"),  # srun --label, 2.3
        (f"[default3]:[rank11]:[E ProcessGroupNCCL.cpp:563] {WATCHDOG}", 11, 3, "[Rank 3]"),  # torchrun
        ("[1,23]<stdout>:ip-172-32-45-165:72593:73427 [7] NCCL INFO x", 23, None, "NCCL INFO"),  # mpirun
        ("[rank5]: torch.OutOfMemoryError: CUDA out of memory.", 5, None, "torch.OutOfMemoryError"),
        ("[rank3]: [rank3]: RuntimeError: boom", 3, None, "RuntimeError"),  # nested excepthooks
        (f"[E ProcessGroupNCCL.cpp:464] {WATCHDOG}", 3, None, "[Rank 3]"),  # 2.1: rank from the message
        ("(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1537] x", 1, None, "x"),
        # an actor's own repr naming its rank, and one actor's process inside another's
        ('(worker6, rank=6, pid=8930, ip=10.42.3.242)   File "/opt/x.py", line 1, in f', 6, None, "  File"),
        ("(LLMRayActor pid=585804) (EngineCore_DP0 pid=586112) ERROR 03-05 00:25:45 x", None, None, "ERROR"),
    ],
)
def test_rank_comes_from_the_innermost_prefix_that_names_one(
    line: str, rank: int, local_rank: int | None, message_start: str
) -> None:
    found = strip(line)
    assert (found.rank, found.local_rank) == (rank, local_rank)
    assert found.message.startswith(message_start)


def test_a_sub_group_rank_is_not_taken_for_a_global_rank() -> None:
    assert strip("[PG ID 2 PG GUID 5 Rank 1] Observed flight recorder dump signal").rank is None


def test_torch_2_4_stamp_has_no_year_and_an_unpadded_month() -> None:
    found = strip("[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught")
    assert found.stamp == "0000-06-26T06:24:44"


def test_nccl_warn_with_timestamp_and_function_gives_host_pid_and_full_date() -> None:
    line = (
        "[2026-01-01 12:08:32] llama-3-8b-node-0-0:194:710 [0] transport/nvls.cc:379 (nvlsAllocateMem) "
        "NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory"
    )
    found = strip(line)
    assert (found.host, found.pid, found.stamp) == ("llama-3-8b-node-0-0", 194, "2026-01-01T12:08:32")
    assert "NCCL WARN" in found.message


@pytest.mark.parametrize(
    ("line", "stamp", "host"),
    [
        (
            "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>'",
            "2024-08-30T11:43:09",
            None,
        ),
        (
            "Aug 30 11:43:09 gpu-7 kernel: Out of memory: Killed process 1 (python3)",
            "0000-08-30T11:43:09",
            "gpu-7",
        ),
        ("[430954.509105] NVRM: Xid (PCI:0000:52:00): 48, pid='<unknown>'", None, None),
        ("2024-05-01T10:00:00.123456789Z [rank0]: RuntimeError: x", "2024-05-01T10:00:00Z", None),
        (
            "E0813 08:21:22.980000 1245483 torch/distributed/elastic/multiprocessing/api.py:984] failed",
            "0000-08-13T08:21:22",
            None,
        ),
        (
            "[2024-07-25 06:36:18,293] torch.distributed.elastic.multiprocessing.api: [WARNING] x",
            "2024-07-25T06:36:18",
            None,
        ),
    ],
)
def test_kernel_kubectl_and_torchrun_stamps_are_normalised(
    line: str, stamp: str | None, host: str | None
) -> None:
    found = strip(line)
    assert (found.stamp, found.host) == (stamp, host)


@pytest.mark.parametrize(
    ("line", "stamp", "message"),
    [
        (
            "ERROR 05-30 22:22:26 [pynccl.py:153] ncclCommInitRank failed",
            "0000-05-30T22:22:26",
            "ncclCommInitRank",
        ),
        (
            "INFO 11-18 03:39:17 llm_engine.py:72] Initializing an LLM engine",
            "0000-11-18T03:39:17",
            "Initializing",
        ),
        (
            "(EngineCore_DP2 pid=598582) WARNING 03-26 20:21:53.120 [core.py:99] slow",
            "0000-03-26T20:21:53",
            "slow",
        ),
    ],
    ids=["vllm-v1", "vllm-v0", "behind-ray"],
)
def test_vllms_logger_dates_the_line(line: str, stamp: str, message: str) -> None:
    found = strip(line)
    assert (found.stamp, found.message.startswith(message)) == (stamp, True), found


@pytest.mark.parametrize(
    ("line", "host", "rank"),
    [
        (
            "[gpu-07][[4711,1],12][btl_tcp_endpoint.c:803:mca_btl_tcp_endpoint_complete_connect] x",
            "gpu-07",
            12,
        ),
        (
            "[1,3]<stderr>:[node2.cluster][[812,1],7][btl_tcp.c:559:mca_btl_tcp_recv_blocking] y",
            "node2.cluster",
            3,
        ),
    ],
)
def test_open_mpis_process_name_gives_its_host_and_rank_unless_a_launcher_named_one(
    line: str, host: str, rank: int
) -> None:
    found = strip(line)
    assert (found.host, found.rank) == (host, rank)
    assert found.message.startswith("[btl_tcp")
