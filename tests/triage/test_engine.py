"""`run_triage` end to end on small hand-written log sets, and the MCP tool against the CLI.

Lines are the formats of shared/log-formats.md; each test plants one incident and says which
rank, node and line it expects the report to name.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl.models import Category, Evidence, Finding, Priority, Report, Status
from hyperpod_nccl.triage.budget import BUDGET_BYTES, fit_to_budget, size_of
from hyperpod_nccl.triage.engine import run_triage

HOSTS = ("gpu-a", "gpu-b")
TIMEOUT_MS = 600000


def init_lines(rank: int) -> list[str]:
    host, local = HOSTS[rank // 4], rank % 4
    pid = 4000 + rank
    return [
        f"{rank}: NCCL version 2.21.5+cuda12.4",
        f"{rank}: {host}:{pid}:{pid + 9} [{local}] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.2-aws",
        f"{rank}: {host}:{pid}:{pid + 9} [{local}] NCCL INFO NET/OFI Selected Provider is efa (found 32 "
        f"nics)",
        f"{rank}: {host}:{pid}:{pid + 9} [{local}] NCCL INFO ncclCommInitRank comm 0x55d0{rank:08x} rank "
        f"{rank} "
        f"nranks 8 cudaDev {local} nvmlDev {local} busId {['53', '64', '75', '86'][local]}000 commId 0x21 - "
        "Init COMPLETE",
        f"{rank}: [2026-03-02 10:00:{20 + rank:02d},123] [INFO] [train.py:241] [rank {rank}] step=1 loss=2.9",
    ]


def timeout_lines(rank: int) -> list[str]:
    stamp = f"[rank{rank}]:[E302 10:40:21.{rank:09d} ProcessGroupNCCL.cpp:632]"
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    return [
        f"{rank}: {stamp} [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, "
        f"OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)={TIMEOUT_MS}) ran for 600020 "
        "milliseconds before timing out.",
        f"{rank}: {stamp} {pg}  failure detected by watchdog at work sequence id: 31 PG status: last "
        f"enqueued "
        "work: 31, last completed work: 30",
        f"{rank}: {stamp} {pg} First PG on this rank to signal dumping.",
    ]


def write_job(root: Path, extra: dict[int, list[str]], silent: set[int] = frozenset()) -> None:  # type: ignore[assignment]
    root.mkdir(parents=True, exist_ok=True)
    for node in range(len(HOSTS)):
        lines: list[str] = []
        for rank in range(node * 4, node * 4 + 4):
            lines += init_lines(rank)
        for rank in range(node * 4, node * 4 + 4):
            lines += extra.get(rank, [])
            if rank not in silent:
                lines += timeout_lines(rank)
        (root / f"error-77-{node}.out").write_text("\n".join(lines) + "\n")


def test_cuda_oom_on_one_rank_is_the_cause_with_the_allocator_figures(tmp_path: Path) -> None:
    oom = (
        "5: [rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB. GPU 1 has a "
        "total "
        "capacity of 79.11 GiB of which 140.38 MiB is free. Including non-PyTorch memory, this process has "
        "78.9 GiB "
        "memory in use. Of the allocated memory 77.92 GiB is allocated by PyTorch, and 797.79 MiB is reserved"
    )
    write_job(tmp_path, {5: ["5: [rank5]: Traceback (most recent call last):", oom]}, silent={5})
    report = run_triage([tmp_path])
    cause = report.root_cause
    assert cause is not None
    assert (cause.category, cause.culprit_ranks, cause.culprit_nodes) == (Category.GPU_OOM, [5], ["gpu-b"])
    oom_finding = next(f for f in report.findings if f.id == "triage.gpu.cuda_oom")
    assert "tried to allocate 768.00 MiB" in oom_finding.detail and "79.11 GiB total" in oom_finding.detail
    (evidence,) = [e for e in oom_finding.evidence if e.rank == 5]
    assert (evidence.source, evidence.node) == ("error-77-1.out", "gpu-b")
    assert evidence.text == oom  # verbatim
    assert "collective mismatch" in " ".join(cause.ruled_out)


def test_an_xid_in_a_node_log_is_pinned_to_the_rank_on_that_gpu_bus(tmp_path: Path) -> None:
    write_job(tmp_path, {}, silent={2})
    (tmp_path / "node-logs").mkdir()
    xid = (
        "[Mon Mar  2 10:30:14 2026] NVRM: Xid (PCI:0000:75:00): 79, pid='<unknown>', name=<unknown>, GPU "
        "has fallen off the bus."
    )
    (tmp_path / "node-logs" / "gpu-a.dmesg").write_text(
        f"[Mon Mar  2 09:00:00 2026] NVRM: loading module\n{xid}\n"
    )
    cause = run_triage([tmp_path]).root_cause
    assert cause is not None
    assert (cause.category, cause.culprit_ranks, cause.culprit_nodes) == (
        Category.GPU_HARDWARE,
        [2],
        ["gpu-a"],
    )
    assert "Xid 79" in cause.summary


def test_every_rank_inside_and_transport_errors_mean_the_network(tmp_path: Path) -> None:
    warn = (
        "3: [2026-03-02 10:30:01] gpu-a:4003:4012 [3] int "
        "cm_req_handle_error_entry(nccl_net_ofi_context_t*):46 "
        "NCCL WARN NET/OFI Request 0x7f456c222f60 completed with error. RC: 103. Error: 4126 (Unresponsive "
        "receiver)"
    )
    write_job(tmp_path, {3: [warn]})
    report = run_triage([tmp_path])
    assert report.root_cause is not None and report.root_cause.category == Category.NETWORK
    assert any(f.id == "triage.nccl.all_inside" for f in report.findings)
    assert {g.watchdog for g in report.rank_states} == {"fired"}


def test_a_run_with_only_recovered_resets_has_no_root_cause_and_calls_them_noise(tmp_path: Path) -> None:
    reset = (
        "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
        "status=None))"
        " after connection broken by 'ProtocolError('Connection aborted.', ConnectionResetError(104, "
        "'Connection reset"
        " by peer'))': /v1/objects/train-shards/shard-000001.tar"
    )
    (tmp_path / "train-77-0.out").write_text(
        "\n".join(["[rank0]: step=1", reset, reset, "[rank0]: step=2"]) + "\n"
    )
    report = run_triage([tmp_path])
    assert report.root_cause is None and not report.blocking
    (noise,) = [f for f in report.findings if f.id == "triage.noise.connection_resets"]
    assert (noise.status, noise.priority) == (Status.INFO, Priority.P2)
    assert "noise" in noise.title and "Seen 2 times" in noise.detail


def test_a_truncated_gzip_is_read_up_to_the_damage_and_listed_as_skipped(tmp_path: Path) -> None:
    lines = (
        "slurmstepd: error: *** JOB 42196 ON clr0710 CANCELLED AT 2022-04-14T16:17:16 DUE TO TIME LIMIT ***\n"
    )
    whole = gzip.compress((lines + "step=1 loss=2.0\n" * 200_000).encode(), mtime=0)
    (tmp_path / "slurm-42196.out.gz").write_bytes(whole[: len(whole) // 2])
    report = run_triage([tmp_path])
    assert report.root_cause is not None and report.root_cause.category == Category.INFRASTRUCTURE
    assert report.root_cause.culprit_nodes == []  # a time limit blames no node
    (skipped,) = report.skipped
    assert skipped.source == "slurm-42196.out.gz" and "truncated" in skipped.reason


def test_storage_archives_are_read_member_by_member(tmp_path: Path) -> None:
    logs, storage = tmp_path / "logs", tmp_path / "ais"
    write_job(logs, {})
    storage.mkdir()
    body = b"I 21:30:00.1 common: ok\nE 21:31:02.5 x-get-batch[abc]: out-of-bounds index 7 (recv'd len=0)\n"
    with tarfile.open(storage / "ais-target-1.tar.gz", "w:gz") as archive:
        member = tarfile.TarInfo("aistarget.ais-target-1.INFO.0302-095500.1")
        member.size = len(body)
        archive.addfile(member, io.BytesIO(body))
    report = run_triage([logs], [storage])
    (finding,) = [f for f in report.findings if f.id == "triage.storage.ais_lost_objects"]
    assert finding.evidence[0].source == "ais-target-1.tar.gz:aistarget.ais-target-1.INFO.0302-095500.1"
    assert finding.evidence[0].line == 2


def test_the_budget_keeps_every_issue_and_drops_detail_first() -> None:
    long_line = "x" * 300
    findings = [
        Finding(
            id=f"triage.test.f{i}",
            status=Status.FAIL if i < 3 else Status.INFO,
            priority=Priority.P0 if i < 3 else Priority.P2,
            title=f"finding {i}",
            reference="debugging-guide.md § 1",
            evidence=[Evidence(source="a.log", line=n, text=long_line) for n in range(1, 4)],
        )
        for i in range(20)
    ]
    report = fit_to_budget(Report.build("triage", findings))
    assert size_of(report) <= BUDGET_BYTES
    assert {f.id for f in report.findings if f.is_issue} == {
        "triage.test.f0",
        "triage.test.f1",
        "triage.test.f2",
    }
    assert all(f.evidence for f in report.findings)


@pytest.mark.anyio
async def test_the_mcp_tool_returns_the_report_the_cli_prints(tmp_path: Path) -> None:
    write_job(tmp_path, {}, silent={6})
    cli = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "triage", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 1, cli.stderr
    serve = ["-m", "hyperpod_nccl", "serve", "--allow-dir", str(tmp_path)]
    async with Client(StdioServerParameters(command=sys.executable, args=serve)) as client:
        result = await client.call_tool("triage_logs", {"log_dir": str(tmp_path)})
        refused = await client.call_tool("triage_logs", {"log_dir": str(tmp_path / "missing")})
    assert not result.is_error
    assert result.structured_content == json.loads(cli.stdout)
    assert refused.is_error


def test_aistore_error_counters_are_compared_across_stats_lines_and_dated_by_the_file_name(
    tmp_path: Path,
) -> None:
    logs, storage = tmp_path / "logs", tmp_path / "ais"
    write_job(logs, {})
    storage.mkdir()
    (storage / "aistarget.ais-target-3.INFO.0302-095500.1").write_text(
        "I 10:00:00.104512 stats:201 get.n:18000 err.get.n:2 err.getbatch.n:0 err.http.write.n:0\n"
        "E 10:01:15.412345 shared-dm: terminated: write tcp 10.2.0.7:51081->10.2.0.9:40412: broken pipe\n"
        "I 10:03:00.104512 stats:201 get.n:18270 err.get.n:5 err.getbatch.n:0 err.http.write.n:12\n"
    )
    report = run_triage([logs], [storage])
    (counters,) = [f for f in report.findings if f.id == "triage.storage.ais_error_counters"]
    assert "err.http.write.n +12, err.get.n +3" in counters.title
    assert [e.line for e in counters.evidence] == [1, 3]
    broken = next(t for t in report.timeline if t.source.endswith(".1:2"))
    assert broken.time == "2026-03-02T10:01:15"  # as written: the logs carry no zone


def test_a_mismatch_is_not_ruled_out_while_a_rank_the_others_waited_for_left_no_line(tmp_path: Path) -> None:
    # Rank 0 may have issued another collective, or none (it left the loop with fewer batches).
    lines = [
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {rank}] Timeout at NCCL work: 19, "
        "last enqueued NCCL work: 19, last completed NCCL work: 18."
        for rank in (1, 2, 3)
    ]
    (tmp_path / "torchrun.log").write_text("\n".join(lines) + "\n")
    cause = run_triage([tmp_path]).root_cause
    assert cause is not None
    assert not any("collective mismatch" in ruled for ruled in cause.ruled_out), cause.ruled_out
