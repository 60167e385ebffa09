"""The line formats shared/log-formats.md § 6 and § 9 catalogue, in their variants (older
drivers, MIG, journald prefixes, older nvidia-smi labels), and the Xid catalog's split between
application-caused and hardware-caused codes."""

from __future__ import annotations

import pytest

from hyperpod_nccl.models import Priority, Status
from hyperpod_nccl.probes.parse.sections import split_sections
from hyperpod_nccl.probes.xid import XID_CATALOG, xid_info
from tests.probes.plant import finding, healthy, node, recorded, report, with_gpu_field, with_section

REQUIRED_XIDS = (13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 119, 120)
APPLICATION_SIDE = {13, 31, 43, 45, 68, 69, 94, 109}


def test_the_xid_catalog_covers_every_required_code_and_says_who_caused_it() -> None:
    assert set(REQUIRED_XIDS) <= set(XID_CATALOG)
    for code in REQUIRED_XIDS:
        info = xid_info(code)
        assert info.meaning and info.action
        if code in APPLICATION_SIDE:
            assert info.status == Status.WARN and info.cause in ("application", "consequence"), code
        else:
            assert info.status == Status.FAIL and info.cause in ("hardware", "driver"), code
            assert info.priority in (Priority.P0, Priority.P1)
    assert xid_info(64).rung == "replace" and xid_info(79).priority == Priority.P0
    assert xid_info(9999).status == Status.FAIL  # an unknown code is never waved through


XID_LINES = [
    (
        "[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.",
        79,
        "0000:91:00",
    ),
    (
        "Okt 06 17:59:27 balrog kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1122, "
        "GPU has fallen off the bus.",
        79,
        "0000:01:00",
    ),
    (
        "NVRM: Xid (PCI:0000:00:06 GPU-I:01): 31, pid=79749, name=exe, Ch 0000000a, intr 00000000. "
        "MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_7 faulted @ 0x2b57_b3000000.",
        31,
        "0000:00:06",
    ),
    (
        "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, "
        "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
        109,
        "0000:cb:00",
    ),
]


@pytest.mark.parametrize(("line", "code", "bdf"), XID_LINES)
def test_xid_lines_in_every_driver_and_log_form(line: str, code: int, bdf: str) -> None:
    xid = finding(report(node(with_section(healthy(), "kernel_log", line))), f"node.gpu.xid_{code}")
    assert bdf in xid.title
    assert xid.evidence[0].text == line


def test_a_fatal_sxid_fails_and_a_non_fatal_one_warns() -> None:
    lines = (
        "[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up\n"
        "[  117.984502] nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, Non-fatal, "
        "Link 60 Minion Link DLREQ interrupt"
    )
    result = report(node(with_section(healthy(), "kernel_log", lines)))
    assert finding(result, "node.fabric.sxid_fatal").priority == Priority.P0
    assert finding(result, "node.fabric.sxid_nonfatal").status == Status.WARN


def test_oom_killer_uncorrected_aer_and_a_flapping_nic() -> None:
    lines = "\n".join(
        [
            "[337533.314412] Memory cgroup out of memory: Killed process 23793 (pt_main_thread) "
            "total-vm:2623712kB, anon-rss:506500kB, file-rss:1268kB, shmem-rss:0kB, UID:0 pgtables:1220kB",
            "pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0",
            *["mlx5_core 0000:0c:00.0 eth2: Link down", "mlx5_core 0000:0c:00.0 eth2: Link up"] * 3,
        ]
    )
    result = report(node(with_section(healthy(), "kernel_log", lines)))
    assert finding(result, "node.kernel.oom_killer").reference == "debugging-guide.md § 4"
    assert finding(result, "node.pcie.aer_uncorrected").status == Status.FAIL
    flaps = finding(result, "node.nic.link_flaps")
    assert "eth2" in flaps.title and "3 time(s)" in flaps.title


def test_older_drivers_clocks_throttle_reasons_label() -> None:
    output = healthy().replace("Clocks Event Reasons", "Clocks Throttle Reasons")
    output = with_gpu_field(output, "ca", "Clocks Throttle Reasons", "SW Thermal Slowdown", "Active")
    throttled = finding(report(node(output)), "node.gpu.clocks_throttled")
    assert "SW Thermal Slowdown" in throttled.title


def test_nvidia_smi_that_cannot_reach_a_gpu_is_a_p0() -> None:
    lost = "Unable to determine the device handle for GPU 0000:97:00.0: Unknown Error"
    output = with_section(healthy(), "nvidia_smi_q", lost)
    failed = finding(report(node(output)), "node.gpu.nvidia_smi_error")
    assert failed.priority == Priority.P0 and failed.evidence[0].text == lost


def test_dcgm_health_failure_carries_its_explanation() -> None:
    table = "\n".join(
        [
            "+---------------------------+----------------------------------------------------------+",
            "| Health Monitor Report                                                                |",
            "+===========================+==========================================================+",
            "| Overall Health            | Failure                                                  |",
            "| GPU ID: 2                 | Failure                                                  |",
            "|                           | Memory system: Failure                                   |",
            "|                           |   GPU 2 had uncorrectable memory errors and row          |",
            "|                           |   remapping failed.                                      |",
            "+---------------------------+----------------------------------------------------------+",
        ]
    )
    failed = finding(report(node(with_section(healthy(), "dcgm_health", table))), "node.dcgm.health_failure")
    assert failed.status == Status.FAIL
    assert any("row" in e.text for e in failed.evidence)


def test_a_fabric_manager_that_is_not_installed_on_an_nvswitch_node() -> None:
    missing = "active: inactive\nLoadState=not-found\nActiveState=inactive\nnot installed: nv-fabricmanager"
    down = finding(
        report(node(with_section(healthy(), "fabric_manager", missing))), "node.fabric.manager_down"
    )
    assert "not installed" in down.title


def test_sections_survive_session_banners_crlf_and_a_cut_short_output() -> None:
    output = "Starting session with SessionId: s-1\r\n" + healthy().replace("\n", "\r\n")
    cut = output[: output.index("===== hyperpod-nccl:section shm")]
    sections = split_sections(cut)
    assert "host" in sections and "shm" not in sections
    assert sections["host"].lines[1] == "instance_id: i-0a1b2c3d4e5f60718"


def test_a_gpu_node_without_nvswitches_needs_no_fabric_manager() -> None:
    g5 = healthy().replace("instance_type: p5.48xlarge", "instance_type: g5.48xlarge")
    g5 = g5.replace(
        "State                             : Completed", "State                             : N/A"
    )
    g5 = g5.replace("Status                            : Success", "Status                            : N/A")
    g5 = with_section(g5, "fabric_manager", "active: inactive\nLoadState=not-found")
    result = report(
        node(g5).model_copy(update={"target": node(g5).target.model_copy(update={"instance_type": None})})
    )
    assert not [f for f in result.findings if f.id.startswith("node.fabric")]


def test_a_narrow_link_on_an_nvswitch_bridge_is_not_a_downgrade() -> None:
    bridge = "07:00.0 Bridge: NVIDIA Corporation GH100 [H100 NVSwitch] (rev a1)\n"
    bridge += (
        "\t\tLnkCap:\tPort #0, Speed 2.5GT/s, Width x4\n\t\tLnkSta:\tSpeed 2.5GT/s, Width x2 (downgraded)"
    )
    pcie = recorded("pcie-downgraded.txt") + bridge
    result = report(node(with_section(healthy(), "pcie", pcie)))
    downgraded = finding(result, "node.pcie.downgraded")
    assert "86:00.0" in downgraded.title and "07:00.0" not in downgraded.title


def test_a_downgrade_every_nic_shares_is_the_platform_and_one_nic_unlike_its_peers_is_a_fault() -> None:
    nics = [
        f"{bus:02x}:00.0 Ethernet controller: Amazon.com, Inc. Elastic Fabric Adapter (EFA)"
        for bus in (16, 32)
    ]
    shared = "\n".join(
        f"{nic}\n\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x1 (downgraded)" for nic in nics
    )
    result = report(node(with_section(healthy(), "pcie", shared)))
    assert not [f for f in result.findings if f.id == "node.pcie.downgraded"]
    assert finding(result, "node.pcie.speed_reduced").status == Status.WARN
    one = f"{nics[0]}\n\t\tLnkSta:\tSpeed 8GT/s (downgraded), Width x4 (downgraded)\n"
    one += f"{nics[1]}\n\t\tLnkSta:\tSpeed 32GT/s"
    assert (
        "10:00.0" in finding(report(node(with_section(healthy(), "pcie", one))), "node.pcie.downgraded").title
    )
