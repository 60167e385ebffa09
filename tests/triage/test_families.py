"""Families of wording (issue 16): each failure as several versions of the software print it.

Every case is a small log set written from what PyTorch, NCCL, aws-ofi-nccl, libfabric, torchrun
and the kernel print (shared/log-formats.md and their sources), run through `run_triage` as the
CLI does. Each asserts the category, the culprit where the logs show one, and that the report
quotes the decisive line verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperpod_nccl.models import Category, Report, Status
from hyperpod_nccl.triage.engine import run_triage


def triage(tmp_path: Path, files: dict[str, str]) -> Report:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return run_triage([tmp_path])


def root_finding(report: Report) -> tuple[str | None, str | None]:
    """The root cause's category and the id of the finding it came from."""
    found = report.root_cause
    return (found.category, found.finding) if found else (None, None)


def commands_of(report: Report, finding_id: str) -> str:
    """Every suggested command of the finding, as one string."""
    return " ".join(c.command for f in report.findings if f.id == finding_id for c in f.suggested_commands)


def cause(report: Report) -> tuple[Category | None, list[int], list[str]]:
    found = report.root_cause
    return (found.category, found.culprit_ranks, found.culprit_nodes) if found else (None, [], [])


def quotes(report: Report, text: str) -> bool:
    """Some FAIL/WARN finding quotes a line holding `text`, verbatim."""
    return any(
        text in e.text for f in report.findings if f.status in (Status.FAIL, Status.WARN) for e in f.evidence
    )


def describe(report: Report) -> str:
    return (
        json.dumps(report.model_dump(mode="json")["root_cause"], indent=1)
        + "\n"
        + "\n".join(f"{f.status} {f.id}: {f.title}" for f in report.findings)
    )


def nccl_warn(host: str, pid: int, dev: int, where: str, message: str, stamp: str = "") -> str:
    """NCCL ≤ 2.25 (`stamp` empty) or ≥ 2.26 (`[YYYY-MM-DD HH:MM:SS] `) WARN line."""
    return f"\n{stamp}{host}:{pid}:{pid + 40} [{dev}] {where} NCCL WARN {message}"


# --- 1. never silent on a visible failure --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # A watchdog abort with no line saying why (PyTorch 2.2 wording).
        "[rank0]:[E ProcessGroupNCCL.cpp:852] [Rank 0] NCCL watchdog thread terminated with exception: "
        "unknown\nterminate called after throwing an instance of 'std::runtime_error'\n",
        # An NCCL error raised to Python, no WARN line and nothing else (PyTorch ≤ 2.0 wording).
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, internal "
        "error, NCCL version 2.10.3\n",
        # nccl-tests failing.
        "# nThread 1 nGpus 8\nTest NCCL failure common.cu:958 'internal error - please report this issue "
        "to the NCCL developers'\n",
    ],
    ids=["watchdog-terminated", "nccl-internal-error", "nccl-tests"],
)
def test_a_failure_no_rule_explains_is_unknown_with_its_earliest_sign_and_blocks(
    tmp_path: Path, text: str
) -> None:
    report = triage(tmp_path, {"console.log": text})
    assert report.root_cause is not None, describe(report)
    assert (report.root_cause.category, report.root_cause.confidence) == (Category.UNKNOWN, "low")
    assert report.blocking
    (unknown,) = [f for f in report.findings if f.id == "triage.unknown.failure"]
    assert unknown.status == Status.FAIL and unknown.evidence and "Seen:" in unknown.detail
    assert unknown.evidence[0].text in text
    assert "References that fit" in unknown.detail


def test_a_clean_log_says_what_it_looked_for_and_does_not_block(tmp_path: Path) -> None:
    lines = [f"[2026-03-02 10:00:{i:02d},123] [INFO] [train.py:241] step={i} loss=2.{i}" for i in range(40)]
    report = triage(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert report.root_cause is None and not report.blocking
    (clean,) = [f for f in report.findings if f.id == "triage.clean"]
    assert clean.status == Status.PASS and "watchdog timeouts" in clean.detail and "40 lines" in clean.detail


# --- 2. collective mismatch as PyTorch and NCCL report it -----------------------------------------

_FP = (
    "CollectiveFingerPrint(SequenceNumber={seq}, OpType={op}, TensorShape=[{shape}], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
    "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))"
)


def _mismatch_line(rank: int, other: int, mine: tuple[str, str], theirs: tuple[str, str]) -> str:
    return (
        f"[rank{rank}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {rank} is running "
        f"collective: {_FP.format(seq=21, op=mine[0], shape=mine[1])}, but Rank {other} is running "
        "collective: "
        f"{_FP.format(seq=21, op=theirs[0], shape=theirs[1])}.Collectives differ in the following aspects: "
        f"  Op type: {mine[0]}vs {theirs[0]}"
    )


def test_pytorch_fingerprints_compared_per_sequence_number_name_the_minority(tmp_path: Path) -> None:
    majority, odd = ("ALLREDUCE", "25"), ("BROADCAST", "1")
    lines = [_mismatch_line(rank, 3, majority, odd) for rank in (0, 1, 2)]
    lines.append(_mismatch_line(3, 0, odd, majority))
    report = triage(tmp_path, {"console.log": "\n".join(lines) + "\n"})
    assert cause(report)[:2] == (Category.COLLECTIVE_MISMATCH, [3]), describe(report)
    assert quotes(report, "Detected mismatch between collectives on ranks")


@pytest.mark.parametrize(
    "line",
    [
        # 1.10–1.12: only the local rank's fingerprint.
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running inconsistent "
        "collective: CollectiveFingerPrint(OpType=BROADCAST, TensorShape=[34112], TensorDtypes=Float, "
        "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
        "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))",
        # 1.13: the other rank's op type only.
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], TensorDtypes=Float), but Rank 1 is "
        "running collective: REDUCE.",
        # NCCL's own check (2.4–2.7).
        "\nnode-1:39719:39719 [3] init.cc:1247 NCCL WARN Mismatched collective detected, please check your "
        "collective calls at and around rank 11. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to "
        "see "
        "the collective logs",
        # The collective's own size check.
        "[rank5]: ValueError: output tensor size must be equal to world_size times input tensor size",
    ],
    ids=["pytorch-1.10", "pytorch-1.13", "nccl-2.7", "all-gather-size"],
)
def test_collective_mismatch_in_every_wording(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"console.log": line + "\n"})
    assert cause(report)[0] == Category.COLLECTIVE_MISMATCH, describe(report)
    assert quotes(report, line.strip()[:60])


# --- 3. shared memory, whatever the errno -----------------------------------------------------------

_LAST_ERROR = (
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
    "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
    "error.\n[rank1]: Last error:\n"
)


@pytest.mark.parametrize(
    ("text", "decisive"),
    [
        (  # NCCL ≤ 2.11: the SYSCHECK wording, then the segment
            nccl_warn(
                "gpu-a",
                4242,
                3,
                "include/shm.h:28",
                "Call to posix_fallocate failed : No space left on device",
            )
            + nccl_warn(
                "gpu-a",
                4242,
                3,
                "include/shm.h:48",
                "Error while creating shared memory segment nccl-shm-recv-1 (size 9637888)",
            ),
            "Call to posix_fallocate failed",
        ),
        (  # NCCL 2.12–2.21
            nccl_warn(
                "gpu-a",
                4242,
                3,
                "misc/shmutils.cc:72",
                "Error: failed to extend /dev/shm/nccl-AbCdEf to 9637892 bytes",
            ),
            "Error: failed to extend /dev/shm/nccl-AbCdEf",
        ),
        (  # NCCL ≥ 2.22 with the errno
            nccl_warn(
                "gpu-a",
                4242,
                3,
                "misc/shmutils.cc:75",
                "Error: failed to extend /dev/shm/nccl-AbCdEf to 9637892 "
                "bytes, error: No space left on device (28)",
                stamp="[2026-03-02 10:00:01] ",
            ),
            "error: No space left on device (28)",
        ),
        (  # inside a DistBackendError's "Last error:" block, no WARN prefix
            _LAST_ERROR
            + "[rank1]: Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)",
            "Error while creating shared memory segment /dev/shm/nccl-vzIpS6",
        ),
        (  # shm_open refused (permissions), NCCL ≤ 2.11
            nccl_warn("gpu-a", 4242, 3, "include/shm.h:27", "Call to shm_open failed : Permission denied"),
            "Call to shm_open failed : Permission denied",
        ),
        (  # PyTorch's own shared memory (DataLoader workers)
            "RuntimeError: unable to open shared memory object </torch_4242_2714559211_8> in read-write "
            "mode: "
            "Permission denied (13)",
            "unable to open shared memory object",
        ),
        (
            "RuntimeError: unable to write to file </torch_4242_2714559211_8>: No space left on device (28)",
            "unable to write to file </torch_",
        ),
    ],
    ids=[
        "nccl-2.10",
        "nccl-2.18",
        "nccl-2.22",
        "last-error-block",
        "shm-open-eacces",
        "torch-eacces",
        "torch-enospc",
    ],
)
def test_shared_memory_whatever_the_errno_is_configuration(tmp_path: Path, text: str, decisive: str) -> None:
    report = triage(tmp_path, {"rank-1.log": text + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert "shm" in (report.root_cause.summary if report.root_cause else "").lower() or any(
        f.id == "triage.config.shm" for f in report.findings
    )
    assert quotes(report, decisive)


def test_a_full_disk_elsewhere_is_storage_not_shared_memory(tmp_path: Path) -> None:
    line = "[rank0]: OSError: [Errno 28] No space left on device: '/fsx/checkpoints/step_1200/optim.pt'"
    report = triage(tmp_path, {"rank-0.log": line + "\n"})
    assert cause(report)[:2] == (Category.STORAGE_IO, [0]), describe(report)


# --- 4. EFA: connection setup is configuration, completions are the fabric ------------------------


@pytest.mark.parametrize(
    "message",
    [
        "NET/OFI Unable to insert remote address into address vector for device 0. RC: -22",  # sendrecv
        "NET/OFI CM: Unable to insert remote address into address vector for device 1",  # rdma CM
        "NET/OFI Couldn't bind EP-AV. RC: -22, ERROR: Invalid argument",
        "NET/OFI CM connect failed: Connection refused",
    ],
    ids=["av-insert", "cm-av-insert", "bind-ep-av", "cm-connect"],
)
def test_efa_connection_setup_failures_are_configuration(tmp_path: Path, message: str) -> None:
    text = nccl_warn("ip-10-1-0-7", 881, 2, "nccl_net_ofi_rdma.cpp:1996", message)
    report = triage(tmp_path, {"ip-10-1-0-7.log": text + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert quotes(report, message[:40])


# --- 5. InfiniBand / RoCE completions by status ---------------------------------------------------


def _ib(status: int, version: str, peer: str = "10.0.0.2<54862>") -> str:
    return {
        "2.7": f"NET/IB : Got completion with error {status}, opcode 1, len 0, vendor err 129",
        "2.19": f"NET/IB : Got completion from peer {peer} with error {status}, opcode 0, len 0, "
        "vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2",
        "2.28": f"NET/IB: Got completion from peer {peer} with status=IBV_WC_RETRY_EXC_ERR({status}) "
        "opcode=IBV_WC_RECV(128) reqSize=0 vendor_err=129 req_type=Recv localGid ::ffff:10.0.0.1 hca mlx5_0",
    }[version]


@pytest.mark.parametrize("version", ["2.7", "2.19", "2.28"])
def test_a_local_protection_error_is_gpudirect_configuration(tmp_path: Path, version: str) -> None:
    text = nccl_warn("node-a", 1200, 0, "transport/net_ib.cc:1295", _ib(4, version))
    report = triage(tmp_path, {"node-a.log": text + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert quotes(report, "Got completion")


@pytest.mark.parametrize("version", ["2.7", "2.19", "2.28"])
def test_retry_exceeded_before_anything_completed_is_configuration(tmp_path: Path, version: str) -> None:
    text = nccl_warn("node-a", 1200, 0, "transport/net_ib.cc:839", _ib(12, version))
    report = triage(tmp_path, {"node-a.log": text + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert "never talked over the fabric" in (report.root_cause.summary if report.root_cause else "")


def _running_node(host: str, address: str, ranks: range, extra: list[str]) -> str:
    """A node whose ranks trained for a while, then sat in ALLREDUCE 880 until the watchdog fired."""
    lines = [
        f"{host}:{4000 + r}:{4000 + r} [{r % 4}] NCCL INFO Bootstrap : Using eth0:{address}<0>" for r in ranks
    ]
    lines += [
        f"{host}:{4000 + r}:{4001 + r} [{r % 4}] NCCL INFO comm 0x55d0 rank {r} nranks 8 cudaDev {r % 4} "
        f"busId {r % 4 + 1}000 commId 0x21 - Init COMPLETE"
        for r in ranks
    ]
    lines += extra
    lines += [
        f"[rank{r}]:[E302 11:10:21.{r:09d} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=880, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
        "Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
        for r in ranks
    ]
    return "\n".join(lines) + "\n"


def test_errors_on_several_nodes_blame_the_node_the_peers_point_at(tmp_path: Path) -> None:
    """Nodes a and c both report completions failing towards node b's address: b is the origin,
    although a's errors were logged first and b logged nothing itself."""
    bad = "10.0.0.2<4455>"
    files = {
        "node-a.log": _running_node(
            "node-a",
            "10.0.0.1",
            range(0, 4),
            [nccl_warn("node-a", 4000, 0, "net_ib.cc:1", _ib(12, "2.19", bad), "[2026-03-02 11:00:01] ")],
        ),
        "node-b.log": _running_node("node-b", "10.0.0.2", range(4, 8), []),
        "node-c.log": _running_node(
            "node-c",
            "10.0.0.3",
            range(8, 12),
            [nccl_warn("node-c", 4008, 0, "net_ib.cc:1", _ib(12, "2.19", bad), "[2026-03-02 11:00:04] ")],
        ),
    }
    report = triage(tmp_path, files)
    category, ranks, nodes = cause(report)
    assert (category, nodes) == (Category.NETWORK, ["node-b"]), describe(report)
    assert ranks == [4, 5, 6, 7]


def test_errors_on_several_nodes_without_addresses_blame_the_node_that_failed_first(tmp_path: Path) -> None:
    warn = (
        "NET/OFI Request 0x7fbb94 completed with error. RC: 13. Error: 13 (Unresponsive remote). "
        "Completed length: 0"
    )
    files = {
        "node-a.log": _running_node(
            "node-a",
            "10.0.0.1",
            range(0, 4),
            [nccl_warn("node-a", 4000, 0, "ofi_process_cq:1039", warn, "[2026-03-02 11:00:09] ")],
        ),
        "node-b.log": _running_node(
            "node-b",
            "10.0.0.2",
            range(4, 8),
            [nccl_warn("node-b", 4004, 0, "ofi_process_cq:1039", warn, "[2026-03-02 11:00:01] ")],
        ),
    }
    report = triage(tmp_path, files)
    assert cause(report)[0::2] == (Category.NETWORK, ["node-b"]), describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size 496640 remote "
        "size 65536",
        "NET/IB : collective mismatch error local size 546816 remote 524288 addr 7ff7d1530000 rkey 2553d "
        "seq 14/1c",
    ],
    ids=["2.14", "2.9"],
)
def test_ib_size_mismatch_between_peers_is_configuration(tmp_path: Path, line: str) -> None:
    report = triage(
        tmp_path, {"node.log": nccl_warn("so-10-10-23-10", 1307367, 0, "transport/net_ib.cc:1038", line)}
    )
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert quotes(report, "collective mismatch error")


# --- 5b. the remote error no longer hides behind the generic NCCL error ---------------------------


@pytest.mark.parametrize(
    "text",
    [
        "torch.distributed.DistBackendError: NCCL error in: "
        "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp"
        ":268, remote process exited or there was a network error, NCCL version 2.21.5\nncclRemoteError: A "
        "call "
        "failed possibly due to a network error or a remote process exiting prematurely.\nLast error:\n"
        "socketProgressOpt: Call to recv from 172.31.4.7<33759> failed : Connection reset by peer\n",
        "[rank0]:[E ProcessGroupNCCL.cpp:542] [Rank 0] Collective WorkNCCL(SeqNum=89, OpType=ALLREDUCE, "
        "NumelIn=67108864, Timeout(ms)=90000) raised the following async exception: NCCL error: remote "
        "process "
        "exited or there was a network error\n",
    ],
    ids=["dist-backend-error", "async-exception"],
)
def test_a_remote_error_alone_points_at_the_network(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"console.log": text})
    assert cause(report)[0] == Category.NETWORK, describe(report)


def test_a_rank_that_crashed_explains_the_remote_errors_of_the_others(tmp_path: Path) -> None:
    oom = (
        "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB. GPU 2 has a "
        "total "
        "capacity of 79.11 GiB of which 140.38 MiB is free."
    )
    remote = (
        "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:268, remote process "
        "exited "
        "or there was a network error, NCCL version 2.21.5"
    )
    text = "\n".join([oom, *(remote.format(r=r) for r in (0, 1, 3))]) + "\n"
    report = triage(tmp_path, {"console.log": text})
    assert cause(report)[:2] == (Category.GPU_OOM, [2]), describe(report)


# --- 6. the same error everywhere right after initialisation ---------------------------------------


def test_the_same_fabric_error_on_every_node_at_the_first_collective_is_configuration(tmp_path: Path) -> None:
    warn = (
        "NET/OFI Request 0x7fbb944701b8 completed with error. RC: 20. Error: unknown error. Completed "
        "length: 0, Request: { buffer_index: 255, dev: 1, size: 0, state: CREATED, direction: SEND }"
    )
    files = {
        f"worker-{n}.log": f"[1,{n * 8}]<stdout>:nccl-tests-worker-{n}:35:89 [5] NCCL INFO comm 0x1 "
        f"rank {n * 8} nranks 16 cudaDev 5 busId 5000 - Init COMPLETE\n"
        f"[1,{n * 8}]<stdout>:nccl-tests-worker-{n}:35:89 [5] ofi_process_cq:1039 NCCL WARN {warn}\n"
        for n in (0, 1)
    }
    report = triage(tmp_path, files)
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert "on every node" in (report.root_cause.summary if report.root_cause else "")


# --- more families: one line each, several versions where the software changed its words ---------


@pytest.mark.parametrize(
    ("text", "category", "decisive"),
    [
        (
            "RuntimeError: Expected to have finished reduction in the prior iteration before starting a "
            "new one. "
            "This error indicates that your module has parameters that were not used in producing loss.",
            Category.SOFTWARE,
            "Expected to have finished reduction",
        ),
        (
            "RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the "
            "following reasons: 1) Use of a module parameter outside the `forward` function.",
            Category.SOFTWARE,
            "mark a variable ready only once",
        ),
        (
            nccl_warn("gpu-a", 25, 0, "enqueue.cc:336", "Cuda failure 'invalid resource handle'"),
            Category.SOFTWARE,
            "invalid resource handle",
        ),
        (
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            Category.SOFTWARE,
            "no kernel image",
        ),
        (
            "NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband via "
            "P2P or "
            'IB. Please set `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1" or use `accelerate launch` which '
            "will do this automatically.",
            Category.CONFIG,
            "via P2P or IB",
        ),
        (
            "RuntimeError: cuda runtime error (10) : invalid device ordinal at "
            "/pytorch/torch/csrc/cuda/Module.cpp:33",
            Category.CONFIG,
            "invalid device ordinal",
        ),
        (
            "RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously "
            "reported",
            Category.CONFIG,
            "invalid device ordinal",
        ),
        (
            nccl_warn(
                "gpu-a",
                25,
                0,
                "misc/ibvwrap.cc:153",
                "Call to ibv_reg_mr failed with error Cannot allocate memory",
            ),
            Category.CONFIG,
            "Cannot allocate memory",
        ),
        (
            nccl_warn(
                "gpu-a",
                25,
                0,
                "register_rail_mr_buffer:617",
                "NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, Error: Invalid argument",
            ),
            Category.SOFTWARE,
            "Unable to register memory (type = 2)",
        ),
        (
            nccl_warn(
                "gpu-a", 25, 0, "misc/ibvwrap.cc:153", "Call to ibv_reg_mr failed with error Bad address"
            ),
            Category.CONFIG,
            "Bad address",
        ),
        (
            nccl_warn(
                "gpu-a",
                25,
                0,
                "configure_sendrecv_inorder:213",
                "NET/OFI Couldn't set "
                "FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES. RC: -92, ERROR: Protocol not available",
            ),
            Category.SOFTWARE,
            "Couldn't set FI_OPT",
        ),
        (
            nccl_warn(
                "gpu-a",
                25,
                0,
                "nccl_net_ofi_net.cpp:651",
                "NET/OFI EFA provider requires at least libfabric version 1.22.0.",
            ),
            Category.SOFTWARE,
            "requires at least libfabric",
        ),
        (
            nccl_warn("gpu-a", 25, 0, "bootstrap.cc:126", "Bootstrap : no socket interface found"),
            Category.CONFIG,
            "no socket interface found",
        ),
        (
            # With the interface the job named: the address was never filled in (a bare line is two
            # NCCL builds, tests/triage/test_families_open_world.py).
            "[trainer3]:gpu-a:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
            "[trainer0|0]:ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor "
            "AF_INET6(10)",
            Category.CONFIG,
            "neither AF_INET",
        ),
        (
            "[rank3]: ValueError: File data/train_sft.json not found.",
            Category.DATA,
            "not found",
        ),
        (
            "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: "
            "'/fsx/datasets/c4/shard-00017.json'",
            Category.DATA,
            "No such file or directory",
        ),
        (
            "[rank1]: OSError: [Errno 116] Stale file handle: "
            "'/home/u/.cache/huggingface/datasets/cache-1.arrow'",
            Category.SOFTWARE,
            "Stale file handle",
        ),
        (
            "[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:10.1.2.3]:29500 "
            "(errno: 110 - Connection timed out).",
            Category.CONFIG,
            "errno: 110",
        ),
        (
            "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-0]:29500 (errno: "
            "111 - "
            "Connection refused).",
            Category.RENDEZVOUS,
            "errno: 111",
        ),
        (
            "# NCCL Tests compiled with NCCL 1.0\nNCCL failure all_reduce.cu:95 'unhandled cuda error'",
            Category.SOFTWARE,
            "compiled with NCCL 1.0",
        ),
    ],
    ids=[
        "ddp-unused",
        "ddp-ready-twice",
        "nccl-cuda-invalid-handle",
        "cuda-no-kernel-image",
        "p2p-unsupported",
        "invalid-ordinal-1.x",
        "invalid-ordinal-2.x",
        "memlock",
        "efa-gpu-memory-einval",
        "gpudirect-efault",
        "libfabric-option",
        "libfabric-version",
        "no-socket-interface",
        "socket-family",
        "dataset-not-found",
        "file-not-found",
        "stale-handle",
        "store-unreachable",
        "store-refused",
        "obsolete-nccl",
    ],
)
def test_each_family_names_its_category_and_quotes_its_line(
    tmp_path: Path, text: str, category: Category, decisive: str
) -> None:
    report = triage(tmp_path, {"console.log": text + "\n"})
    assert cause(report)[0] == category, describe(report)
    assert quotes(report, decisive), describe(report)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (
            "gpu-a:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out",
            Category.CONFIG,
        ),
        (
            nccl_warn(
                "gpu-a",
                795,
                0,
                "include/socket.h:409",
                "Net : Connect to 192.168.1.9<54263> failed : No route to host",
            ),
            Category.CONFIG,
        ),
        (
            nccl_warn(
                "gpu-a",
                795,
                0,
                "misc/socket.cc:483",
                "socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort",
            ),
            Category.CONFIG,
        ),
        (
            nccl_warn(
                "gpu-a",
                795,
                6,
                "misc/socket.cc:533",
                "socketPollConnect: Connect to 10.0.0.4<56849> returned "
                "113(No route to host) errno 115(Operation now in progress)",
            ),
            Category.CONFIG,
        ),
        (
            nccl_warn(
                "gpu-a",
                795,
                0,
                "misc/socket.cc:617",
                "socketPollConnect to 10.1.1.1<4000> failed with error Connection refused",
                stamp="[2026-03-02 10:00:01] ",
            ),
            Category.NETWORK,
        ),
        (
            "RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that "
            "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
            Category.CONFIG,
        ),
        ("RuntimeError: DataLoader worker (pid 46794) is killed by signal: Killed.", Category.HOST_OOM),
        (
            "E0517 08:24:03.805000 140617718325696 torch/distributed/elastic/multiprocessing/api.py:826] "
            "failed "
            "(exitcode: -7) local_rank: 0 (pid: 970611) of binary: /tmp/venv/bin/python3",
            Category.CONFIG,
        ),
        ("RuntimeError: CUDA error: system not yet initialized", Category.CONFIG),
        (
            nccl_warn("gpu-a", 25, 0, "init.cc:1420", "Cuda failure 'system not yet initialized'"),
            Category.CONFIG,
        ),
        ("RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable", Category.CONFIG),
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            Category.GPU_OOM,
        ),
        ("Unable to determine the device handle for GPU 0000:91:00.0: Unknown Error", Category.GPU_HARDWARE),
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough "
            "memory: you "
            "tried to allocate 1073741824 bytes.",
            Category.HOST_OOM,
        ),
        ("Epoch 1:  40%|████      | 400/1000 [10:00<15:00, 1.50s/it]\nKilled", Category.HOST_OOM),
        (
            "/bin/bash: line 1: 4242 Killed                  python train.py --config x.yaml",
            Category.HOST_OOM,
        ),
        (
            "W0616 00:37:22.830000 4015698 torch/distributed/elastic/agent/server/api.py:719] Received "
            "Signals.SIGTERM death signal, shutting down workers\nW0616 00:37:22.831000 4015698 "
            "torch/distributed/elastic/multiprocessing/api.py:900] Sending process 4015788 closing signal "
            "SIGTERM",
            Category.INFRASTRUCTURE,
        ),
    ],
    ids=[
        "socket-2.2",
        "socket-2.10",
        "socket-2.18",
        "socket-2.21",
        "socket-refused-2.27",
        "dataloader-bus-error",
        "dataloader-killed",
        "torchrun-sigbus",
        "fabric-manager",
        "fabric-manager-nccl",
        "gpu-busy",
        "cublas-alloc",
        "smi-device-handle",
        "cpu-allocator",
        "shell-killed",
        "bash-killed",
        "launcher-sigterm",
    ],
)
def test_connection_setup_and_process_level_families(tmp_path: Path, text: str, category: Category) -> None:
    report = triage(tmp_path, {"console.log": text + "\n"})
    assert cause(report)[0] == category, describe(report)


def test_a_library_missing_its_shared_object_is_not_missing_data(tmp_path: Path) -> None:
    line = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory"
    report = triage(tmp_path, {"console.log": line + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)


# --- a rank busy outside NCCL, ranks that diverged after training ----------------------------------


def test_a_progress_bar_that_outlasted_the_timeout_is_a_data_loading_stall(tmp_path: Path) -> None:
    text = (
        "Running tokenizer on dataset:  35%|████████▍               | 73811/208140 [30:01<57:14, 40.97 "
        "examples/s]\n"
        "[E ProcessGroupNCCL.cpp:485] [Rank 6] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1802246 "
        "milliseconds before timing out.\n"
    )
    report = triage(tmp_path, {"console.log": text})
    assert cause(report)[0] == Category.DATA_LOADING_STALL, describe(report)
    assert report.root_cause is not None and report.root_cause.confidence == "high"
    assert quotes(report, "Running tokenizer on dataset:  35%")


def test_a_short_progress_bar_is_no_evidence_of_a_stall(tmp_path: Path) -> None:
    text = (
        "Map: 100%|██████████| 5000/5000 [00:03<00:00, 1500.00 examples/s]\n"
        "[E ProcessGroupNCCL.cpp:485] [Rank 6] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802246 milliseconds before "
        "timing out.\n"
    )
    report = triage(tmp_path, {"console.log": text})
    assert not any(f.id == "triage.nccl.busy_outside_nccl" for f in report.findings), describe(report)


def test_a_timeout_after_training_ended_means_the_ranks_took_different_paths(tmp_path: Path) -> None:
    text = (
        "`Trainer.fit` stopped: `max_epochs=3` reached.\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:523] [Rank 0] Watchdog caught collective operation timeout:\n"
        "  WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)\n"
        "srun: error: gpu-7: task 0: Aborted (core dumped)\n"
    )
    report = triage(tmp_path, {"slurm-77.out": text})
    assert cause(report)[:2] == (Category.COLLECTIVE_MISMATCH, [0]), describe(report)


@pytest.mark.parametrize(
    ("line", "ranks"),
    [
        (
            "[rank: 2] Child process with PID 13117 terminated with code -9. Forcefully terminating all "
            "other processes to avoid zombies",
            [2],
        ),
        # one machine, no other rank named: spawn's process index is the rank
        ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL", [1]),
        (
            "[2024-02-09 09:09:15,172] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', "
            "'train.py', '--local_rank=0'] exits with return code = -9",
            [],
        ),
        (
            "mpirun noticed that process rank 3 with PID 0 on node ip-10-0-1-12 exited on signal 9 (Killed).",
            [3],
        ),
    ],
    ids=["lightning", "mp-spawn", "deepspeed", "open-mpi"],
)
def test_every_launcher_reports_a_sigkill_as_host_memory(tmp_path: Path, line: str, ranks: list[int]) -> None:
    report = triage(tmp_path, {"console.log": line + "\n"})
    assert cause(report)[:2] == (Category.HOST_OOM, ranks), describe(report)


def test_an_unexplained_failure_names_the_rank_torchrun_saw_fail_first(tmp_path: Path) -> None:
    block = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-04-12_14:58:30",
        "  host      : gpu-node-3.cluster",
        "  rank      : 11 (local_rank: 3)",
        "  exitcode  : 1 (pid: 55321)",
        "  error_file: <N/A>",
    ]
    report = triage(tmp_path, {"torchrun.log": "\n".join(block) + "\n"})
    assert cause(report) == (Category.UNKNOWN, [11], ["gpu-node-3"]), describe(report)
