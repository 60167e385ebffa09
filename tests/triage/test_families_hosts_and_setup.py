"""Families of wording from a third set of threads outside the corpus (issue 16, "Done when": logs
from threads not in the corpus score the same): machines that share a hostname, connection setup
on IB/RoCE, injected topology files, peer access in CUDA's own words, and the way Ray Tune and
Horovod say a job failed. Each is tested in wordings other than the pasted case's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.models import BlastRadius, Category, Status
from tests.triage.test_families import cause, describe, nccl_warn, quotes, triage

# --- two machines, one hostname ---------------------------------------------------------------------


def _bootstrap(host: str, pid: int, address: str, *, old: bool) -> str:
    if old:  # NCCL 2.0–2.3
        return f"{host}:{pid}:{pid + 14} [0] INFO NET : Using interface eth1:{address}<0>"
    return f"{host}:{pid}:{pid} [0] NCCL INFO Bootstrap : Using eth1:{address}<0>"


@pytest.mark.parametrize("old", [True, False], ids=["nccl-2.2", "nccl-2.18"])
def test_one_hostname_on_two_addresses_connected_through_ipc_is_configuration(
    tmp_path: Path, old: bool
) -> None:
    lines = [
        _bootstrap("worker", 1201, "10.4.0.21", old=old),
        _bootstrap("worker", 3377, "10.4.0.22", old=old),
        "worker:3377:3390 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] via P2P/IPC",
        nccl_warn(
            "worker", 3377, 0, "transport/p2p.cc:211", "failed to open CUDA IPC handle : 1 invalid argument"
        )[1:],
    ]
    report = triage(tmp_path, {"mpirun.out": "\n".join(lines) + "\n"})
    assert cause(report) == (Category.CONFIG, [], ["worker"]), describe(report)
    finding = next(f for f in report.findings if f.id == "triage.config.shared_hostname")
    assert "10.4.0.21" in finding.title and "10.4.0.22" in finding.title
    assert quotes(report, "via P2P/IPC")
    commands = [c.command for c in finding.suggested_commands]
    assert "ssh 10.4.0.21 hostnamectl" in commands and "ssh 10.4.0.22 hostnamectl" in commands, commands


def test_a_shared_hostname_in_a_healthy_run_is_a_warning_without_a_cause(tmp_path: Path) -> None:
    lines = [
        _bootstrap("localhost", 95772, "59.77.7.23", old=False),
        _bootstrap("localhost", 27896, "59.77.7.30", old=False),
        "localhost:95772:95772 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
    ]
    report = triage(tmp_path, {"run.log": "\n".join(lines) + "\n"})
    assert report.root_cause is None, describe(report)
    assert [f.status for f in report.findings if f.id == "triage.config.shared_hostname"] == [Status.WARN]


def test_one_host_with_two_interfaces_is_not_a_shared_hostname(tmp_path: Path) -> None:
    lines = [
        "gpu-a:11:11 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
        "gpu-a:11:40 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.0.5<0>",
        "gpu-a:12:12 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
    ]
    report = triage(tmp_path, {"run.log": "\n".join(lines) + "\n"})
    assert not [f for f in report.findings if f.id == "triage.config.shared_hostname"], describe(report)


# --- IB / RoCE connection setup ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "category"),
    [
        (
            "Call to ibv_modify_qp failed with 19 No such device, on dev mlx5_1:1, curr state INIT",
            Category.CONFIG,
        ),
        ("Call to ibv_modify_qp failed with error Invalid argument", Category.CONFIG),
        ("Call to ibv_create_ah failed with error No such device", Category.CONFIG),
        ("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1", Category.CONFIG),
    ],
    ids=["errno-19", "einval-older", "create-ah", "timed-out"],
)
def test_a_verbs_call_failing_at_connection_setup_says_address_or_path(
    tmp_path: Path, message: str, category: Category
) -> None:
    text = nccl_warn("gpu01", 2211, 0, "misc/ibvwrap.cc:190", message) + (
        "\ngpu01:2211:2290 [0] NCCL INFO transport/net_ib.cc:596 -> 2"
        "\nRuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n"
    )
    report = triage(tmp_path, {"rank0.log": text.lstrip("\n")})
    assert cause(report)[0] == category, describe(report)
    assert quotes(report, message[:30])


def test_a_modify_qp_that_nccl_retries_is_not_a_failure(tmp_path: Path) -> None:
    text = (
        "gpu01:2211:2290 [0] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev "
        "mlx5_0:1, curr state INIT, next state RTR, retrying 1/5 after 100 msec of sleep\n"
        "gpu01:2211:2290 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
    )
    report = triage(tmp_path, {"rank0.log": text})
    assert report.root_cause is None, describe(report)


# --- a graph or topology file for another machine ------------------------------------------------------


@pytest.mark.parametrize(
    "warn",
    [
        ("graph/search.cc:703", "XML Import Channel : dev 1 not found."),
        ("graph/xml.cc:680", "Could not open XML topology file /opt/vm/topo.xml : No such file or directory"),
        ("graph/xml.cc:55", "XML Parse error : expecting '<', got 'x'"),
        ("graph/xml.cc:406", "XML Topology has wrong version 2, 1 needed"),
        ("graph/xml.cc:160", "XML Mismatch : cpu / pci"),
    ],
    ids=["graph-file", "topo-file", "parse", "version", "mismatch"],
)
def test_an_injected_graph_or_topology_file_that_does_not_fit_is_configuration(
    tmp_path: Path, warn: tuple[str, str]
) -> None:
    text = (
        "vm-1:166:230 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/vm/graph.xml"
        + nccl_warn("vm-1", 166, 0, *warn)
        + "\nvm-1:166:230 [0] NCCL INFO init.cc:870 -> 2\n"
    )
    report = triage(tmp_path, {"rank0.log": text})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.nccl_injected_topology" for f in report.findings)


@pytest.mark.parametrize(
    ("where", "attribute", "node"),
    [
        ("graph/xml.h:77", "arch", "cpu"),
        ("graph/xml.h:101", "vendor", "cpu"),
        ("graph/xml.h:90", "link_width", "pci"),
    ],
    ids=["nccl-2.7-arch", "nccl-2.21-vendor", "pci-width"],
)
def test_a_topology_without_an_attribute_this_nccl_reads_is_a_version_matter(
    tmp_path: Path, where: str, attribute: str, node: str
) -> None:
    """A static topology file (a network plugin's, before it generated them) read with some GPUs
    hidden or by a newer NCCL: upgrading the plugin or NCCL fixes it, not the job's settings."""
    text = (
        nccl_warn("ip-10-1-2-3", 2196, 1, where, f"Attribute {attribute} of node {node} not found").lstrip(
            "\n"
        )
        + "\nip-10-1-2-3:2196:2275 [1] NCCL INFO graph/topo.cc:493 -> 3"
        + "\nip-10-1-2-3:2196:2275 [1] NCCL INFO init.cc:1109 -> 3\n"
    )
    report = triage(tmp_path, {"rank1.log": text})
    # no line names a rank: the file's name does
    assert cause(report) == (Category.SOFTWARE, [1], ["ip-10-1-2-3"]), describe(report)
    assert quotes(report, f"Attribute {attribute} of node {node} not found")
    finding = next(f for f in report.findings if f.id == "triage.software.topology_attribute")
    assert "aws-ofi-nccl" in finding.title
    assert any("NCCL_TOPO_FILE" in c.command for c in finding.suggested_commands)


def test_of_node_in_a_healthy_line_is_not_a_topology_failure(tmp_path: Path) -> None:
    text = "[INFO] loaded shard 3 of node group 2 in 0.4 s\nstep=10 loss=2.1\n"
    report = triage(tmp_path, {"rank0.log": text})
    assert report.root_cause is None, describe(report)


# --- the IOMMU refusing the GPUs' DMA -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        "[ 8812.407112] DMAR: [DMA Read NO_PASID] Request device [c1:00.0] fault addr 0x7f2e1000 "
        "[fault reason 0x06] PTE Read access is not set",
        "Mar  2 10:14:07 gpu-host-4 kernel: DMAR: [DMA Write] Request device [3b:00.0] fault addr "
        "f8139000 [fault reason 05] PTE Write access is not set",
        "[Tue Mar  3 09:12:44 2026] AMD-Vi: Event logged [IO_PAGE_FAULT device=41:00.0 domain=0x000e "
        "address=0x3fffd0000 flags=0x0020]",
        "[  402.118870] iommu ivhd0: AMD-Vi: Event logged [IO_PAGE_FAULT device=c4:00.0 domain=0x0000 "
        "address=0xfee00000 flags=0x0000]",
    ],
    ids=["intel-no-pasid", "intel-journal", "amd-dmesg-T", "amd-ivhd"],
)
def test_iommu_faults_during_a_hang_are_the_host_configuration(tmp_path: Path, fault: str) -> None:
    hang = "step 120 | loss 2.31 | 0.41 s/it\n"
    report = triage(tmp_path, {"train.log": hang, "dmesg.txt": fault + "\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.config.iommu_fault")
    assert quotes(report, fault[fault.index("] ") + 2 : fault.index("] ") + 30])
    assert any("/proc/cmdline" in c.command for c in finding.suggested_commands)
    fix = [c for c in finding.suggested_commands if "iommu=pt" in c.command]
    assert [c.blast_radius for c in fix] == [BlastRadius.DRAINS_OR_REBOOTS_NODE], fix


def test_each_faulting_device_is_quoted_whichever_vendors_words_name_it(tmp_path: Path) -> None:
    faults = "".join(
        f"[  402.{n}] iommu ivhd0: AMD-Vi: Event logged [IO_PAGE_FAULT device={bdf} domain=0x0000 "
        "address=0xfee00000 flags=0x0000]\n"
        for n, bdf in enumerate(("c4:00.0", "c5:00.0"))
    )
    report = triage(tmp_path, {"dmesg.txt": faults})
    assert quotes(report, "device=c4:00.0") and quotes(report, "device=c5:00.0"), describe(report)


def test_kernel_lines_in_seconds_since_boot_are_said_to_be_off_the_jobs_clock(tmp_path: Path) -> None:
    fault = (
        "[1478401.486981] DMAR: [DMA Write] Request device [02:00.0] fault addr cd139000 [fault reason 05]"
    )
    dated = "[2026-11-27 09:00:05,012] train.py:88 step 0\n"
    report = triage(tmp_path, {"train.log": dated, "dmesg-gpubox.txt": fault + "\n"})
    notes = report.job.notes if report.job else []
    assert any("dmesg-gpubox.txt" in note and "seconds since boot" in note for note in notes), notes
    dated_kernel = "[Fri Nov 27 09:01:02 2026] DMAR: [DMA Write] Request device [02:00.0] fault addr cd1\n"
    report = triage(tmp_path, {"dmesg-gpubox.txt": dated_kernel})
    assert not any("since boot" in note for note in (report.job.notes if report.job else [])), report.job


def test_the_iommu_being_enabled_at_boot_is_not_a_fault(tmp_path: Path) -> None:
    boot = (
        "[    0.021337] DMAR: IOMMU enabled\n"
        "[    1.118102] DMAR: Intel(R) Virtualization Technology for Directed I/O\n"
        "[    0.912144] AMD-Vi: Interrupt remapping enabled\n"
    )
    report = triage(tmp_path, {"dmesg.txt": boot})
    assert report.root_cause is None, describe(report)


# --- every rank inside a collective that never completes, on one node ---------------------------------------


def _ranks_inside(hosts: tuple[str, ...], per_host: int, launch: str = "") -> dict[str, str]:
    """One file per rank: its NCCL channel line (which names its host) and its watchdog firing."""
    files = {}
    world = len(hosts) * per_host
    for rank in range(world):
        host, local = hosts[rank // per_host], rank % per_host
        via = "P2P/IPC" if len(hosts) == 1 else "NET/IB/0"
        files[f"rank-{rank}.log"] = (
            (launch if rank == 0 else "")
            + f"{host}:{7000 + rank}:{7100 + rank} [{local}] NCCL INFO Channel 00/0 : {rank}[{local}] -> "
            f"{(rank + 1) % world}[{(local + 1) % per_host}] via {via}\n"
            f"[E1127 10:30:00.{rank:06d} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
            "Timeout(ms)=600000) ran for 600043 milliseconds before timing out.\n"
        )
    return files


def test_every_rank_inside_on_one_node_is_the_gpus_peer_access_not_a_network(tmp_path: Path) -> None:
    files = _ranks_inside(("pcie-box",), 8)
    files["rank-0.log"] = "[2026-11-27 10:19:58,000] train.py:88 step 3 loss 2.1\n" + files["rank-0.log"]
    report = triage(tmp_path, files)
    assert cause(report) == (Category.CONFIG, [], ["pcie-box"]), describe(report)
    assert report.root_cause is not None and report.root_cause.confidence == "low"
    finding = next(f for f in report.findings if f.id == "triage.nccl.all_inside_one_node")
    assert finding.reference == "debugging-guide.md § 19"
    commands = [c.command for c in finding.suggested_commands]
    assert "export NCCL_P2P_DISABLE=1" in commands, commands
    assert any("pci.bus_id" in c for c in commands), commands
    # the kernel's lines to read are those of when the collective began, a timeout before the watchdog
    assert any("--since '2026-11-27 10:05' --until '2026-11-27 10:35'" in c for c in commands), commands


@pytest.mark.parametrize(
    ("hosts", "launch"),
    [(("gpu-a", "gpu-b"), ""), (("gpu-a",), "torchrun --nnodes=2 --nproc_per_node=4 train.py\n")],
    ids=["two-nodes", "one-node-of-two-launched"],
)
def test_every_rank_inside_across_nodes_is_still_the_network(
    tmp_path: Path, hosts: tuple[str, ...], launch: str
) -> None:
    report = triage(tmp_path, _ranks_inside(hosts, 4, launch))
    assert cause(report)[0] == Category.NETWORK, describe(report)
    assert any(f.id == "triage.nccl.all_inside" for f in report.findings)


def test_ranks_of_the_world_that_left_no_line_are_named_in_the_job_notes(tmp_path: Path) -> None:
    one_rank = (
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal\n"
    )
    report = triage(tmp_path, {"rank3.log": one_rank})
    notes = report.job.notes if report.job else []
    assert any(note.startswith("Ranks 0-2 of 4 (inferred") for note in notes), notes
    every_rank = triage(tmp_path / "all", _ranks_inside(("gpu-a", "gpu-b"), 2))
    assert not any("left no line" in note for note in (every_rank.job.notes if every_rank.job else [])), (
        every_rank
    )


# --- MPI called out of order, and a network plugin the loader refuses ---------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "*** The MPI_Comm_rank() function was called before MPI_INIT was invoked.",
        "[gpu-3:01234] *** The MPI_Allreduce() function was called after MPI_FINALIZE was invoked.",
    ],
    ids=["before-init", "after-finalize"],
)
def test_an_mpi_call_out_of_order_is_the_programs_bug(tmp_path: Path, line: str) -> None:
    text = f"{line}\n*** This is disallowed by the MPI standard.\n*** Your MPI job will now abort.\n"
    report = triage(tmp_path, {"slurm-77.out": text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.mpi_misuse" for f in report.findings)


@pytest.mark.parametrize(
    "message",
    [
        "NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.8' not found "
        "(required by /opt/conda/lib/libnccl-net.so) No plugin found (libnccl-net.so), using internal "
        "implementation",
        "NET/Plugin: Plugin load returned 2 : /usr/local/lib/libnccl-net.so: undefined symbol: "
        "efadv_query_device : when loading libnccl-net.so",
    ],
    ids=["symbol-version", "undefined-symbol"],
)
def test_a_network_plugin_the_loader_refuses_is_a_build_mismatch(tmp_path: Path, message: str) -> None:
    host = "ip-10-0-3-7:2211:2211 [0] NCCL INFO"
    text = f"{host} {message}\n{host} Using network Socket\n"
    report = triage(tmp_path, {"rank0.log": text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.software.net_plugin_unloadable")
    assert any("fi_info --version" in c.command for c in finding.suggested_commands)


def test_no_plugin_installed_is_not_a_refused_plugin(tmp_path: Path) -> None:
    text = (
        "gpu-a:11:11 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared "
        "object file: No such file or directory : when loading libnccl-net.so\n"
        "gpu-a:11:11 [0] NCCL INFO NET/Plugin: Using internal network plugin.\n"
    )
    report = triage(tmp_path, {"rank0.log": text})
    assert not [f for f in report.findings if f.id == "triage.software.net_plugin_unloadable"], describe(
        report
    )


# --- Transformer Engine's userbuffers (TP communication overlap) ----------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        [
            "[rank3]: !!! [UB] Create UbufCommOverlap Communicator",
            "[rank3]: Failed: CUDA error /opt/te/transformer_engine/common/comm_gemm_overlap/userbuffers/"
            "userbuffers-host.cpp:512 'invalid argument'",
        ],
        [
            "[rank1]: NVONLY AGBAR:SM 0 [0]:expecting 2048 got 2040",
            "[rank1]: NVONLY RSBAR:SM 3 [0]:expecting 2048 got 2044",
        ],
    ],
    ids=["bootstrap-cuda-error", "kernel-barrier"],
)
def test_userbuffers_failing_is_the_comm_overlap(tmp_path: Path, lines: list[str]) -> None:
    report = triage(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.software.comm_overlap")
    assert finding.reference == "debugging-guide.md § 18"
    assert any("transformer_engine.__version__" in c.command for c in finding.suggested_commands)


def test_userbuffers_setting_up_is_not_a_failure(tmp_path: Path) -> None:
    text = (
        "!!! [UB] Create UbufP2PCommOverlap Communicator\n"
        "UB_TIMEOUT is set to 110 sec, 217800000000 cycles, freq: 1980000khz\n"
        "!!! [UBP2P] Register UBuf 1\n"
        "Using userbuffers from transformer_engine/pytorch/csrc/userbuffers for TP overlap\n"
    )
    report = triage(tmp_path, {"train.log": text})
    assert [f.status for f in report.findings] == [Status.PASS], describe(report)


# --- peer access, whichever layer reports it ------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: peer access is not supported between these two devices",
        "torch.AcceleratorError: CUDA error: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        "RuntimeError: cudaErrorPeerAccessUnsupported: peer access is not supported",
    ],
    ids=["runtime-text", "driver-name", "runtime-name"],
)
def test_peer_access_refused_by_cuda_is_configuration(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"worker.log": f"Traceback (most recent call last):\n{line}\n"})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert any(f.id == "triage.config.p2p_unsupported" for f in report.findings)


# --- how Ray Tune and Horovod say the job failed -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "2022-11-15 19:26:36,618\tERROR tune.py:773 -- Trials did not complete: [TorchTrainer_96bfe_00000]\n",
        "Number of errored trials: 1\n| TorchTrainer_0 |            1 | /tmp/ray_results/error.txt |\n",
        "[1,0]<stdout>:Epoch 1/10\nProcess 1 exit with status code 1.\n"
        "Terminating remaining workers after failure of Process 1.\n",
    ],
    ids=["tune-trials", "tune-errored", "horovodrun"],
)
def test_a_failed_trial_or_horovod_process_is_never_silent(tmp_path: Path, text: str) -> None:
    report = triage(tmp_path, {"driver.log": text})
    assert report.root_cause is not None, describe(report)
    assert report.summary.issues_found >= 1


# --- a write the storage cut short ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "luajit: torch/File.lua:210: write error: wrote 397 blocks instead of 412 at THDiskFile.c:340",
        "tar: ./ckpt/step_1200/model.bin: Wrote only 4096 of 10240 bytes; short write",
    ],
    ids=["torch7", "tar"],
)
def test_a_write_cut_short_is_storage(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": f"saving checkpoint\n{line}\n"})
    assert cause(report)[0] == Category.STORAGE_IO, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.storage.short_write")
    assert any("df -h" in c.command for c in finding.suggested_commands)


# --- NCCL giving up at first contact between nodes, with nothing said --------------------------------------

_TAKE_DOWN = (
    "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous "
    "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
    "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.\n"
)


@pytest.mark.parametrize(
    "launch",
    [
        "$ torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --master_addr=10.0.0.1 train.py\n",
        "[INFO] [launch.py:122:main] nnodes=2, num_local_procs=8, node_rank=0\n",
        "Trainer(accelerator='gpu', devices=8, num_nodes=4, strategy='ddp')\n",
    ],
    ids=["torchrun", "deepspeed", "lightning"],
)
def test_nccl_giving_up_before_any_collective_across_nodes_is_a_labelled_guess(
    tmp_path: Path, launch: str
) -> None:
    report = triage(tmp_path, {"node0.log": launch + _TAKE_DOWN})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    assert report.root_cause is not None and report.root_cause.confidence == "low"
    finding = next(f for f in report.findings if f.id == "triage.config.first_contact")
    assert any("NCCL_IB_DISABLE=1" in c.command for c in finding.suggested_commands)


@pytest.mark.parametrize(
    "before",
    [
        "$ torchrun --nproc_per_node=8 --nnodes=1 train.py\n",  # one node: no first contact between nodes
        "$ torchrun --nnodes=2 train.py\n"
        # it had been training
        + "Epoch 0:  41%|████      | 120/290 [03:10<04:30,  1.58s/it, loss=2.31]\n",
    ],
    ids=["one-node", "after-training"],
)
def test_the_first_contact_guess_needs_nodes_and_no_progress(tmp_path: Path, before: str) -> None:
    report = triage(tmp_path, {"node0.log": before + _TAKE_DOWN})
    assert not any(f.id == "triage.config.first_contact" for f in report.findings), describe(report)
    assert report.root_cause is not None


# --- NCCL's invalid-usage code alone -----------------------------------------------------------------------


def test_bare_invalid_usage_is_software_and_asks_for_the_gpu_count(tmp_path: Path) -> None:
    """NCCL refused a call: public threads settle it in the code or the builds more often than in the
    launch (software), and the finding still asks for the GPU count beside the processes launched."""
    text = (
        "[1,1]<stderr>:tensorflow.python.framework.errors_impl.UnknownError: ncclCommInitRank failed: "
        "invalid usage\n"
    )
    report = triage(tmp_path, {"horovod.log": text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    finding = next(f for f in report.findings if f.id == "triage.software.nccl_invalid_usage")
    assert any("nvidia-smi -L" in c.command for c in finding.suggested_commands)


# --- a progress bar that outlasted the timeout, glued to the watchdog line ----------------------------


def _watchdog(seq: int, op: str, timeout_ms: int) -> str:
    return (
        f"[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=2, Timeout(ms)={timeout_ms}) "
        f"ran for {timeout_ms + 109} milliseconds before timing out.\n"
    )


def test_a_bar_glued_to_another_ranks_watchdog_line_is_the_busy_rank_even_at_a_rounded_100(
    tmp_path: Path,
) -> None:
    text = (
        "Generation Evaluation: 100%|█████████▉| 497/499 [18:29:58<05:20, 160.10s/it]"
        + _watchdog(2213, "ALLGATHER", 18_000_000)
        + "[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire process down.\n"
    )
    report = triage(tmp_path, {"console.txt": text})
    category, ranks, _ = cause(report)
    assert category == Category.DATA_LOADING_STALL, describe(report)
    assert 1 not in ranks, "rank 1 is the one that waited; the bar is another process's"


def test_a_finished_bar_is_not_a_busy_rank(tmp_path: Path) -> None:
    text = "Tokenizing: 100%|██████████| 499/499 [31:02<00:00,  3.73s/it]\n" + _watchdog(
        3, "ALLREDUCE", 1_800_000
    )
    report = triage(tmp_path, {"console.txt": text})
    assert not any(f.id == "triage.nccl.busy_outside_nccl" for f in report.findings), describe(report)


def test_a_launch_across_more_nodes_than_the_input_holds_says_which_logs_are_missing(tmp_path: Path) -> None:
    report = triage(
        tmp_path, {"node0.log": "$ torchrun --nproc_per_node=8 --nnodes=4 train.py\n" + _TAKE_DOWN}
    )
    assert report.job is not None
    assert any("asks for 4 nodes (node0.log:1)" in note for note in report.job.notes), report.job.notes


# --- Horovod's survivors, and the process Open MPI names first ---------------------------------------


def test_horovods_shutdown_on_the_survivors_is_a_consequence_and_mpi_names_the_first_to_fail(
    tmp_path: Path,
) -> None:
    text = (
        "[1,1]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception on one "
        "of the ranks or an attempt to allreduce after one of the ranks finished.\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[50371,1],0]\n"
        "  Exit code:    1\n"
    )
    report = triage(tmp_path, {"mpirun.log": text})
    category, ranks, _ = cause(report)
    assert category == Category.UNKNOWN and ranks == [0], describe(report)


@pytest.mark.parametrize(
    "message",
    ["Could not find NET with id 0", "Could not find GPU with id 3"],
)
def test_nccl_losing_a_device_it_listed_is_an_nccl_that_does_not_know_the_machine(
    tmp_path: Path, message: str
) -> None:
    text = nccl_warn("node-7", 4410, 0, "graph/topo.h:230", message).lstrip("\n") + "\n"
    report = triage(tmp_path, {"rank0.log": text})
    assert cause(report)[0] == Category.SOFTWARE, describe(report)
    assert any(f.id == "triage.software.nccl_topology" for f in report.findings)


# --- a provider's own failure is the fabric's, whatever errno it carries -----------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Unable to write to EQ: Missing or unavailable event queue. err: Input/output error (5) prov_errno: "
        "Unknown error -114 (-114) prov/rxr/src/rxr.h:1042",
        "libfabric:4471:efa:ep_ctrl:rxr_ep_progress() Unable to write to EQ: err: Input/output error (5) "
        "prov_errno: Unknown error -5 (-5)",
    ],
    ids=["rxr", "efa-prefixed"],
)
def test_a_libfabric_provider_error_is_network_not_storage(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank3.log": line + "\n"})
    assert cause(report)[0] == Category.NETWORK, describe(report)
    assert not any(f.id == "triage.storage.io_error" for f in report.findings)


def test_a_disk_input_output_error_is_still_storage(tmp_path: Path) -> None:
    report = triage(
        tmp_path, {"rank3.log": "OSError: [Errno 5] Input/output error: '/fsx/data/shard-0042.tar'\n"}
    )
    assert cause(report)[0] == Category.STORAGE_IO, describe(report)


# --- a spawned child's truncated start-up state is its killed parent's doing --------------------------------


@pytest.mark.parametrize(
    "words", ["_pickle.UnpicklingError: pickle data was truncated", "EOFError: Ran out of input"]
)
def test_a_truncated_spawn_pickle_after_a_kill_is_the_kill(tmp_path: Path, words: str) -> None:
    text = (
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/multiprocessing/spawn.py", line 126, in _main\n'
        "    self = reduction.pickle.load(from_parent)\n"
        f"{words}\n"
    )
    report = triage(tmp_path, {"train.log": text})
    assert cause(report)[0] == Category.HOST_OOM, describe(report)


def test_a_truncated_pickle_without_a_kill_is_still_the_data(tmp_path: Path) -> None:
    text = "Loading shard /data/cache/part-7.pkl\n_pickle.UnpicklingError: pickle data was truncated\n"
    report = triage(tmp_path, {"train.log": text})
    assert cause(report)[0] == Category.DATA, describe(report)


def test_a_slurm_oom_line_is_no_kernel_log_to_rule_hardware_out_with(tmp_path: Path) -> None:
    text = (
        "slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.\n"
        "srun: error: gpu20-15: task 0: Out Of Memory\n"
    )
    report = triage(tmp_path, {"slurm-9411285.out": text})
    assert cause(report)[0] == Category.HOST_OOM, describe(report)
    assert report.root_cause is not None
    assert not any("node logs" in ruled for ruled in report.root_cause.ruled_out), report.root_cause.ruled_out


def test_a_port_in_use_under_slurm_suggests_a_port_of_the_jobs_own(tmp_path: Path) -> None:
    text = (
        "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 "
        "(errno: 98 - Address already in use).\n"
    )
    report = triage(tmp_path, {"slurm-5551234.out": text})
    assert cause(report)[0] == Category.CONFIG, describe(report)
    commands = [c.command for f in report.findings for c in f.suggested_commands]
    assert "export MASTER_PORT=21234" in commands, commands
