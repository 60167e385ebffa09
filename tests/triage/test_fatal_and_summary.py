"""What fatal lines mean, and what the job summary says about ranks, nodes and versions."""

from __future__ import annotations

from pathlib import Path

from hyperpod_nccl.models import Category, Status
from hyperpod_nccl.triage.engine import run_triage
from hyperpod_nccl.triage.events import Event, FileScan
from hyperpod_nccl.triage.fatal import meaning_of
from hyperpod_nccl.triage.model import EventIndex, build_incident
from hyperpod_nccl.triage.summary import Topology, build_topology, job_summary, pci_bus, version_groups


def event(kind: str, rank: int | None = None, node: str | None = None, **fields: str) -> Event:
    return Event(kind, "error-1-0.out", 1, "line", rank=rank, node=node, fields=dict(fields))


def test_hardware_xids_blame_the_gpu_and_application_xids_do_not() -> None:
    fell_off = meaning_of(event("xid", code="79"))
    page_fault = meaning_of(event("xid", code="31"))
    after_another = meaning_of(event("xid", code="45"))
    assert fell_off is not None and fell_off.category == Category.GPU_HARDWARE
    assert "fallen off the bus" in fell_off.title
    assert (
        page_fault is not None
        and page_fault.category == Category.SOFTWARE
        and page_fault.status == Status.WARN
    )
    assert after_another is not None and after_another.category is None


def test_cascade_exceptions_are_consequences_and_a_training_exception_is_software() -> None:
    assert (
        meaning_of(event("exception", cls="torch.distributed.DistBackendError", what="NCCL error in: x"))
        is None
    )
    assert (
        meaning_of(event("exception", cls="RuntimeError", what="NCCL communicator was aborted on rank 3."))
        is None
    )
    key_error = meaning_of(event("exception", cls="KeyError", what="'input_ids'"))
    assert key_error is not None and key_error.category == Category.SOFTWARE


def test_sigkill_points_at_host_memory_and_a_watchdog_abort_is_a_consequence() -> None:
    killed = meaning_of(event("worker_exit", code="-9", local_rank="2"))
    aborted = meaning_of(event("worker_exit", code="-6", local_rank="2"))
    assert killed is not None and killed.category == Category.HOST_OOM
    assert aborted is not None and aborted.category is None


def test_a_slurm_time_limit_is_infrastructure_and_a_task_failure_is_not_a_cause() -> None:
    limit = meaning_of(event("slurm_cancel", reason="TIME LIMIT"))
    task = meaning_of(event("slurm_cancel", reason="TASK FAILURE"))
    assert limit is not None and limit.category == Category.INFRASTRUCTURE
    assert task is not None and task.category is None


def test_nccl_and_driver_bus_ids_name_the_same_gpu() -> None:
    assert pci_bus("a8000", nccl=True) == pci_bus("0000:a8:00") == pci_bus("0000:a8:00.0") == "a8"
    assert pci_bus("7000", nccl=True) == pci_bus("0000:07:00") == "07"


def test_the_summary_maps_ranks_to_nodes_and_groups_versions_naming_the_odd_node() -> None:
    hosts = [f"gpu-{n}" for n in range(12)]
    scans = [
        FileScan(f"error-1-{n}.out", hosts={h}, rank_hosts={n * 8 + i: h for i in range(8)})
        for n, h in enumerate(hosts)
    ]
    events = [
        event("nccl_version", rank=n * 8, node=h, version="2.21.5" if n != 7 else "2.20.5")
        for n, h in enumerate(hosts)
    ]
    events.append(event("pg_init", rank=0, size="96", global_rank="0", timeout_ms="600000"))
    scans[0].events = events
    incident = build_incident(scans, [])
    summary = job_summary(incident)
    assert (summary.world_size, summary.nodes, summary.ranks_per_node) == (96, 12, 8)
    assert summary.rank_map[0] == "gpu-0: 0-7" and len(summary.rank_map) == 8
    assert summary.rank_map_note == "4 more nodes not listed; each node holds 8 contiguous ranks."
    majority, odd = version_groups(incident.versions)
    assert (majority.node_count, majority.nccl, majority.nodes) == (11, "2.21.5", [])
    assert (odd.node_count, odd.nccl, odd.nodes) == (1, "2.20.5", ["gpu-7"])


def test_srun_task_lists_and_the_store_address_fill_the_rank_map_before_nccl_starts() -> None:
    events = [
        event("srun_task", host="gpu-st-p5-7", tasks="56-63", status="Terminated"),
        event("rendezvous", master="gpu-st-p5-0.cluster.local", port="29500"),
    ]
    topology = build_topology([], EventIndex(events).by_kind)
    assert topology.node_of(60) == "gpu-st-p5-7"
    assert topology.node_of(0) == "gpu-st-p5-0"
    assert isinstance(topology, Topology)


def test_the_job_summary_says_whether_a_line_stated_the_world_size(tmp_path: Path) -> None:
    paste = tmp_path / "paste"
    paste.mkdir()
    (paste / "worker.log").write_text("[rank4]: RuntimeError: boom\n")
    guessed = run_triage([paste]).job
    assert guessed is not None and (guessed.world_size, guessed.world_size_stated) == (5, False)
    stated_dir = tmp_path / "stated"
    stated_dir.mkdir()
    (stated_dir / "worker.log").write_text(
        "[rank4]:[I ProcessGroupNCCL.cpp:1000] [PG 0 Rank 4] ProcessGroupNCCL initialization options: "
        "size: 16, global rank: 4, TIMEOUT(ms): 600000\n[rank4]: RuntimeError: boom\n"
    )
    stated = run_triage([stated_dir]).job
    assert stated is not None and (stated.world_size, stated.world_size_stated) == (16, True)
