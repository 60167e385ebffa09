"""Every planted node fault becomes a counted finding naming the node's instance id, the probe
section and line it was read from, its reference and the investigate → reboot → replace ladder."""

from __future__ import annotations

from hyperpod_nccl.models import BlastRadius, Finding, Priority, Status
from hyperpod_nccl.probes.runners.base import ProbeResult
from hyperpod_nccl.references import default_index
from tests.probes.plant import (
    HEALTHY_ID,
    finding,
    healthy,
    node,
    recorded,
    report,
    with_gpu_field,
    with_instance,
    with_section,
)

FAULTY = "i-0f9e8d7c6b5a43210"
GPU = "debugging-guide.md § 5"


def assert_node_fault(found: Finding, priority: Priority, reference: str, section: str) -> None:
    assert found.status == Status.FAIL
    assert found.priority == priority
    assert found.reference == reference
    default_index().resolve(reference)
    assert found.instance_ids == [FAULTY]
    assert found.evidence, "a FAIL carries the line it was read from"
    assert all(e.instance_id == FAULTY for e in found.evidence)
    assert found.evidence[0].source == f"probe:{section}"
    assert found.evidence[0].line is not None and found.evidence[0].line >= 1
    assert found.suggested_commands, "a FAIL says what to run"
    assert any(FAULTY in command.command for command in found.suggested_commands)
    ladder = [command.blast_radius for command in found.suggested_commands]
    assert ladder == sorted(ladder, key=list(BlastRadius).index), "investigate before changing anything"


def peer_nodes(pattern: str) -> list[ProbeResult]:
    """Two healthy nodes, ids from `pattern` with {n} = 1, 2."""
    return [node(with_instance(healthy(), pattern.format(n=n)), pattern.format(n=n)) for n in (1, 2)]


def planted(output: str) -> str:
    return with_instance(output, FAULTY)


def test_a_healthy_p5_has_no_issue() -> None:
    result = report(node(healthy()))
    assert result.summary.issues_found == 0, [f.title for f in result.findings if f.is_issue]
    assert not result.blocking
    passed = {f.id for f in result.findings if f.status == Status.PASS}
    assert {"node.gpu.healthy", "node.fabric.manager_ok", "node.efa.ok", "node.limits.ok"} <= passed


def test_xid_79_is_a_p0_hardware_fault_with_the_reboot_then_replace_ladder() -> None:
    output = planted(with_section(healthy(), "kernel_log", recorded("kernel_log-xid79.txt")))
    result = report(node(output, FAULTY))
    xid = finding(result, "node.gpu.xid_79")
    assert_node_fault(xid, Priority.P0, GPU, "kernel_log")
    assert "0000:97:00" in xid.title and "fallen off the bus" in xid.title
    assert "hardware-caused" in xid.detail
    ladder = [c.blast_radius for c in xid.suggested_commands]
    assert ladder == [BlastRadius.READ_ONLY, BlastRadius.DRAINS_OR_REBOOTS_NODE]
    reboot = xid.suggested_commands[1].command
    expected = "aws sagemaker batch-reboot-cluster-nodes --cluster-name ml-cluster-1 --region us-west-2"
    assert reboot == f"{expected} --node-ids {FAULTY}"
    assert_node_fault(finding(result, "node.fabric.sxid_fatal"), Priority.P0, GPU, "kernel_log")
    assert result.blocking


def test_xid_48_and_63_with_remap_pending_need_a_reboot_and_45_is_a_consequence() -> None:
    output = with_section(healthy(), "kernel_log", recorded("kernel_log-xid48-63.txt"))
    output = with_gpu_field(output, "75", "ECC Errors", "DRAM Uncorrectable", "1")
    output = with_gpu_field(output, "75", "Remapped Rows", "Pending", "Yes")
    result = report(node(planted(output), FAULTY))
    assert_node_fault(finding(result, "node.gpu.xid_48"), Priority.P0, GPU, "kernel_log")
    assert_node_fault(finding(result, "node.gpu.xid_63"), Priority.P1, GPU, "kernel_log")
    pending = finding(result, "node.gpu.row_remap_pending")
    assert_node_fault(pending, Priority.P1, GPU, "nvidia_smi_q")
    assert "00000000:75:00.0" in pending.title
    assert pending.evidence[0].text == "Pending                           : Yes"
    assert_node_fault(finding(result, "node.gpu.ecc_uncorrectable"), Priority.P0, GPU, "nvidia_smi_q")
    consequence = finding(result, "node.gpu.xid_45")
    assert (consequence.status, consequence.priority) == (Status.WARN, Priority.P2)
    assert not any(f.id == "node.gpu.row_remap_failed" for f in result.findings)


def test_row_remap_failure_points_at_replacement() -> None:
    output = with_gpu_field(healthy(), "b9", "Remapped Rows", "Remapping Failure Occurred", "Yes")
    failed = finding(report(node(planted(output), FAULTY)), "node.gpu.row_remap_failed")
    assert_node_fault(failed, Priority.P0, GPU, "nvidia_smi_q")
    assert [c.blast_radius for c in failed.suggested_commands][-1] == BlastRadius.REPLACES_NODE
    assert failed.suggested_commands[-1].command.startswith("aws sagemaker batch-replace-cluster-nodes")


def test_replacement_on_slurm_is_the_scontrol_fail_action() -> None:
    output = with_gpu_field(healthy(), "b9", "Remapped Rows", "Remapping Failure Occurred", "Yes")
    failed = finding(report(node(planted(output), FAULTY), orchestrator="slurm"), "node.gpu.row_remap_failed")
    assert failed.suggested_commands[-1].command == (
        f"scontrol update node=hyperpod-{FAULTY} state=fail reason=Action:Replace"
    )


def test_memlock_64_kib_under_containerd_blocks_efa() -> None:
    result = report(
        node(planted(with_section(healthy(), "limits", recorded("limits-memlock-64k.txt"))), FAULTY)
    )
    [memlock] = [f for f in result.findings if f.id == "node.limits.memlock"]
    assert_node_fault(memlock, Priority.P0, "debugging-guide.md § 17", "limits")
    assert memlock.title == "memlock limit is 64 KiB for processes started by containerd"
    assert [c.command for c in memlock.suggested_commands][1:] == ["sudo systemctl edit containerd"]


def test_dev_shm_of_64_mib_is_too_small() -> None:
    result = report(node(planted(with_section(healthy(), "shm", recorded("shm-64m.txt"))), FAULTY))
    shm = finding(result, "node.limits.shm_small")
    assert_node_fault(shm, Priority.P0, "debugging-guide.md § 17", "shm")
    assert "64 MiB" in shm.title


def test_no_efa_provider_is_a_tcp_fallback_risk() -> None:
    output = with_section(healthy(), "efa_fi_info", recorded("efa_fi_info-no-provider.txt"))
    missing = finding(report(node(planted(output), FAULTY)), "node.efa.provider_missing")
    assert_node_fault(missing, Priority.P0, "debugging-guide.md § 13", "efa_fi_info")
    assert "TCP fallback" in missing.title
    assert missing.evidence[0].text == "fi_getinfo: -61 (No data available)"


def test_fabric_manager_inactive_hangs_nccl_init() -> None:
    output = with_section(healthy(), "fabric_manager", recorded("fabric_manager-inactive.txt"))
    down = finding(report(node(planted(output), FAULTY)), "node.fabric.manager_down")
    assert_node_fault(down, Priority.P0, "multinode.md § 1", "fabric_manager")
    assert "failed" in down.title


def test_fabric_manager_at_another_version_than_the_driver() -> None:
    fabric = (
        recorded("fabric_manager-inactive.txt").replace("failed", "active").replace("550.127.05", "550.90.07")
    )
    output = with_section(healthy(), "fabric_manager", fabric.replace("exit-code", "success"))
    mismatch = finding(report(node(planted(output), FAULTY)), "node.fabric.version_mismatch")
    assert_node_fault(mismatch, Priority.P0, "multinode.md § 1", "fabric_manager")
    assert "550.90.07" in mismatch.title and "550.127.05" in mismatch.title


def test_pcie_downgraded_gpu_link() -> None:
    output = with_section(healthy(), "pcie", recorded("pcie-downgraded.txt"))
    output = with_section(output, "kernel_log", recorded("kernel_log-pcie-downgraded.txt"))
    downgraded = finding(report(node(planted(output), FAULTY)), "node.pcie.downgraded")
    assert_node_fault(downgraded, Priority.P1, "performance-testing.md § 6", "pcie")
    assert "86:00.0" in downgraded.title
    assert "Width x8 (downgraded)" in downgraded.evidence[0].text


def test_one_node_at_mtu_1500_among_jumbo_nodes() -> None:
    peers = peer_nodes("i-0{n}1111111111111{n}")
    odd = node(planted(with_section(healthy(), "mtu", recorded("mtu-1500.txt"))), FAULTY)
    result = report(*peers, odd)
    mismatch = finding(result, "cross.net.mtu_mismatch")
    assert_node_fault(mismatch, Priority.P1, "multinode.md § 4", "mtu")
    assert f"{FAULTY} 1500" in mismatch.title and "most nodes: 9001" in mismatch.title


def test_versions_that_differ_across_nodes_name_the_odd_node() -> None:
    peers = peer_nodes("i-0{n}2222222222222{n}")
    older = healthy().replace("550.127.05", "535.183.01").replace("libnccl.so.2.23.4", "libnccl.so.2.18.5")
    result = report(*peers, node(planted(older), FAULTY))
    driver = finding(result, "cross.version.driver")
    assert_node_fault(driver, Priority.P1, "debugging-guide.md § 10", "nvidia_smi_q")
    assert_node_fault(finding(result, "cross.version.nccl"), Priority.P1, "debugging-guide.md § 10", "nccl")


def test_one_throttled_node_is_a_failure_and_a_straggler() -> None:
    throttled = with_gpu_field(healthy(), "53", "Clocks Event Reasons", "HW Slowdown", "Active")
    throttled = with_gpu_field(throttled, "53", "Clocks Event Reasons", "HW Power Brake Slowdown", "Active")
    peers = peer_nodes("i-0{n}3333333333333{n}")
    result = report(*peers, node(planted(throttled), FAULTY))
    on_node = finding(result, "node.gpu.clocks_throttled")
    assert_node_fault(on_node, Priority.P1, "performance-testing.md § 6", "nvidia_smi_q")
    assert "HW Power Brake Slowdown" in on_node.title
    straggler = finding(result, "cross.gpu.throttled_straggler")
    assert straggler.instance_ids == [FAULTY]


def test_the_same_config_fault_on_many_nodes_is_one_finding_listing_them() -> None:
    small = with_section(healthy(), "shm", recorded("shm-64m.txt"))
    ids = [f"i-0{n}4444444444444{n}" for n in range(1, 6)]
    result = report(*(node(with_instance(small, i), i) for i in ids))
    shm = [f for f in result.findings if f.id == "node.limits.shm_small"]
    assert len(shm) == 1
    assert shm[0].instance_ids == ids
    assert [e.instance_id for e in shm[0].evidence] == ids


def test_every_node_fail_counts_towards_the_exit_status() -> None:
    output = with_section(healthy(), "kernel_log", recorded("kernel_log-xid79.txt"))
    output = with_section(output, "limits", recorded("limits-memlock-64k.txt"))
    output = with_section(output, "shm", recorded("shm-64m.txt"))
    result = report(node(planted(output), FAULTY), node(healthy(), HEALTHY_ID))
    fails = [f for f in result.findings if f.status == Status.FAIL]
    assert len(fails) >= 4
    assert result.summary.issues_found == sum(1 for f in result.findings if f.is_issue)
    assert result.summary.p0 >= 4
    assert all(f.priority in (Priority.P0, Priority.P1) for f in fails)


def test_on_slurm_jobs_inherit_slurmd_limits_not_the_login_shell() -> None:
    limits = "\n".join(
        [
            "shell memlock: unlimited",
            "shell stack: 8192",
            "slurmd Max locked memory         65536                65536                bytes",
            "slurmd Max stack size            8388608              unlimited            bytes",
            "dockerd Max locked memory        65536                65536                bytes",
        ]
    )
    output = planted(with_section(healthy(), "limits", limits))
    [memlock] = [
        f
        for f in report(node(output, FAULTY), orchestrator="slurm").findings
        if f.id == "node.limits.memlock"
    ]
    assert memlock.title == "memlock limit is 64 KiB for processes started by slurmd, dockerd"
    assert [c.command for c in memlock.suggested_commands][1:] == [
        "sudo systemctl edit slurmd",
        "sudo systemctl edit dockerd",
    ]
