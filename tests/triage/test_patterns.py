"""The line catalogue parses every wording of log-formats.md and leaves look-alikes alone."""

from __future__ import annotations

import pytest

from hyperpod_nccl.triage.patterns import (
    EVENT_PATTERNS,
    FACT_PATTERNS,
    STORAGE_PATTERNS,
    Dispatcher,
    anchors_of,
)
from hyperpod_nccl.triage.prefilter import build_hit_finder, choose_leads
from hyperpod_nccl.triage.prefixes import strip

EVENTS = Dispatcher(EVENT_PATTERNS)
FACTS = Dispatcher(FACT_PATTERNS)


def test_every_pattern_compiles() -> None:
    """Patterns compile on first use, so a broken one would otherwise show only on a line of its own."""
    for pattern in (*EVENT_PATTERNS, *FACT_PATTERNS, *STORAGE_PATTERNS):
        assert pattern.expression is None or pattern.regex is not None, pattern.kind


def first_event(line: str) -> tuple[str, dict[str, str]] | None:
    message = strip(line).message
    for pattern in EVENTS.candidates(message):
        fields = pattern.match(message)
        if fields is not None:
            return pattern.kind, fields
    return None


@pytest.mark.parametrize(
    ("line", "seq", "enqueued", "completed"),
    [
        (
            "[rank7]:[E816 01:45:40.184373931 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 7] "
            "Exception "
            "(either an error or timeout) detected by watchdog at work: 80078, last enqueued NCCL work: "
            "80078, "
            "last completed NCCL work: 80077.",
            "80078",
            "80078",
            "80077",
        ),
        (
            "[rank0]:[E709 17:05:38.162814866 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 0]  "
            "failure detected by watchdog at work sequence id: 20585 PG status: last enqueued work: 20589, "
            "last completed work: -1",
            "20585",
            "20589",
            "-1",
        ),
        (
            "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 1] Timeout at "
            "NCCL work: "
            "158046, last enqueued NCCL work: 158046, last completed NCCL work: 158045.",
            "158046",
            "158046",
            "158045",
        ),
    ],
    ids=["2.4", "2.6", "2.3"],
)
def test_watchdog_status_is_parsed_in_every_generation(
    line: str, seq: str, enqueued: str, completed: str
) -> None:
    kind, fields = first_event(line) or ("", {})
    assert kind == "wd_status"
    assert (fields["seq"], fields["enqueued"], fields["completed"]) == (seq, enqueued, completed)


def test_watchdog_timeout_without_numel_is_parsed_for_old_pytorch() -> None:
    line = (
        "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=469508, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out."
    )
    kind, fields = first_event(line) or ("", {})
    assert kind == "wd_timeout"
    assert fields == {"seq": "469508", "op": "ALLREDUCE", "timeout_ms": "1800000", "ran_ms": "1802212"}


def test_dump_signal_names_the_origin_across_the_double_space() -> None:
    line = (
        "[rank6]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank "
        "6] Received "
        "a dump signal due to a collective timeout from  rank 7 and we will try our best to dump the debug "
        "info. "
        "Last enqueued NCCL work: 56116, last completed NCCL work: 56116.This is most likely caused by "
        "incorrect"
    )
    kind, fields = first_event(line) or ("", {})
    assert (kind, fields["origin"], fields["enqueued"], fields["completed"]) == (
        "dump_received",
        "7",
        "56116",
        "56116",
    )


def test_cuda_oom_of_pytorch_2_1_keeps_its_figures_despite_the_capacty_typo() -> None:
    line = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.37 GiB. GPU 0 has a total "
        "capacty of "
        "79.11 GiB of which 2.93 GiB is free. Including non-PyTorch memory, this process has 76.17 GiB "
        "memory in use. "
        "Of the allocated memory 68.61 GiB is allocated by PyTorch, and 5.63 GiB is reserved by PyTorch"
    )
    kind, fields = first_event(line) or ("", {})
    assert kind == "cuda_oom"
    assert fields["tried"] == "6.37 GiB" and fields["total"] == "79.11 GiB" and fields["free"] == "2.93 GiB"
    assert fields["in_use"] == "76.17 GiB" and fields["by_pytorch"] == "68.61 GiB"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has "
            "fallen off the bus.",
            "xid",
        ),
        ("include/alloc.h:316 NCCL WARN Cuda failure 'out of memory'", "nccl_cuda_oom"),
        (
            "[2026-01-01 12:08:32] h:1:2 [0] bootstrap.cc:77 (bootstrapRecv) NCCL WARN Message truncated : "
            "received 172 "
            "bytes instead of 64",
            "msg_truncated",
        ),
        (
            "slurmstepd: error: *** STEP 557341.0 ON c4-n12 CANCELLED AT 2025-03-11T13:26:25 DUE TO "
            "PREEMPTION ***",
            "slurm_cancel",
        ),
        (
            "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:6000 (errno: 98 - "
            "Address already in "
            "use).",
            "addr_in_use",
        ),
        (
            "h:1:2 [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is 172.31.32.0/20 (found 1 nics)",
            "tcp_fallback",
        ),
        (
            "misc/ibvwrap.cc:153 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
            "memreg",
        ),
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=45791123.batch. Some of the step tasks "
            "have been OOM "
            "Killed.",
            "oom_killed",
        ),
        (
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
            "shared memory (shm).",
            "shm_exhausted",
        ),
        (
            "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 7/8 "
            "clients joined.",
            "rendezvous",
        ),
        ("srun: error: curie-gpu003: task 1: Out Of Memory", "srun_task"),
    ],
)
def test_fatal_lines_are_named(line: str, kind: str) -> None:
    assert (first_event(line) or ("",))[0] == kind


def test_a_watchdog_warning_about_corrupted_data_is_not_corrupt_training_data() -> None:
    line = (
        "[rank1]:[E1218 20:27:21.484959605 ProcessGroupNCCL.cpp:681] [Rank 1] Some NCCL operations have "
        "failed or "
        "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data."
    )
    assert first_event(line) is None


def test_a_recovered_reset_is_a_reset_and_an_exhausted_retry_is_not() -> None:
    recovered = (
        "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
        "status=None))"
        " after connection broken by 'ProtocolError('Connection aborted.', ConnectionResetError(104, "
        "'Connection "
        "reset by peer'))': /v1/objects/shard-1.tar"
    )
    assert (first_event(recovered) or ("",))[0] == "connection_reset"
    assert (first_event("loader: retrying 5/5 GET shard-9.tar") or ("",))[0] == "retries_exhausted"


def test_world_communicator_line_gives_rank_world_and_gpu_bus() -> None:
    line = (
        "x3203c0s25b1n0:322638:323016 [0] NCCL INFO comm 0x55df01b24dd0 rank 24 nranks 32 cudaDev 0 "
        "nvmlDev 0 "
        "busId 7000 commId 0x2114bc51af4fb978 - Init COMPLETE"
    )
    message = strip(line).message
    facts = {p.kind: p.match(message) for p in FACTS.candidates(message)}
    assert facts["comm_rank"] == {"comm_rank": "24", "nranks": "32", "bus_id": "7000"}


def test_hit_finder_flags_anchor_lines_and_skips_training_chatter() -> None:
    find = build_hit_finder([anchor.encode() for anchor in anchors_of(EVENT_PATTERNS + FACT_PATTERNS)])
    noise = b"[2026-03-02 10:00:20,123] [INFO] [train.py:241] [rank 3] step=5 loss=2.1 tokens/s=152103\n" * 50
    hit = b"3: [rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout\n"
    lowercase = b"  exitcode  : -9 (pid: 208585)\n"
    block = noise + hit + noise + lowercase
    starts = {block.rfind(b"\n", 0, offset) + 1 for offset, _ in find(block)}
    lines = {block[s : block.find(b"\n", s)] for s in starts}
    assert hit.rstrip() in lines and lowercase.rstrip() in lines
    assert len([line for line in lines if b"step=" in line]) <= 1  # at most the one dated line sampled


def test_every_anchor_is_found_by_exactly_one_lead_byte() -> None:
    anchors = [a.encode() for a in anchors_of(EVENT_PATTERNS + FACT_PATTERNS)]
    by_lead = choose_leads(anchors)
    tails = [tail for found in by_lead.values() for tail in found]
    assert len(tails) == len(anchors)
    assert all(any(tail in anchor for tail in tails) for anchor in anchors)
