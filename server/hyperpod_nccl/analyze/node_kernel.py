"""Kernel-level faults per probed node: PCIe links trained below capability, AER errors, the OOM
killer, NIC link flaps, and a kernel log the probe could not read."""

from __future__ import annotations

from collections import Counter

from hyperpod_nccl.analyze.node_common import ProbedNode, ladder, merge_alike, on_node, probed_nodes
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.probes.parse.sections import Line
from hyperpod_nccl.snapshot import Snapshot

SLOW_NODE = "performance-testing.md § 6"
# Corrected AER errors happen; a burst of them is a link going bad.
CORRECTED_AER_BURST = 5
NIC_FLAPPING = 3


def _lanes(width: str) -> int:
    """`16x` → 16; an unreadable width counts as full so it never raises a finding."""
    digits = width.strip().rstrip("x")
    return int(digits) if digits.isdigit() else 1 << 10


def _gpu_width_downgrades(node: ProbedNode) -> list[tuple[str, Line]]:
    found = []
    for gpu in node.facts.gpu.gpus:
        width_max = gpu.get("PCI/GPU Link Info/Link Width/Max")
        width_now = gpu.get("PCI/GPU Link Info/Link Width/Current")
        if width_max and width_now and _lanes(width_now.value) < _lanes(width_max.value):
            found.append((gpu.bus_id, width_now.line))
    return found


def _uniform_kinds(node: ProbedNode) -> set[str]:
    """Kinds (gpu, nic) whose every device reports the same downgrade: the platform's way of
    presenting the link, not one bad slot. A fault shows as a device that differs from its peers."""
    kernel = node.facts.kernel
    downgraded = Counter(d.kind for d in kernel.pcie_downgrades)
    return {
        kind for kind, count in downgraded.items() if kind != "log" and count == kernel.pcie_devices[kind] > 1
    }


def _pcie(node: ProbedNode) -> list[Finding]:
    downgrades = node.facts.kernel.pcie_downgrades
    uniform = _uniform_kinds(node)
    hard = [d for d in downgrades if d.kind not in uniform and (d.width_downgraded or d.kind != "gpu")]
    hard_lines = [(d.device, d.line) for d in hard] + _gpu_width_downgrades(node)
    findings = []
    if hard_lines:
        devices = ", ".join(sorted({device for device, _ in hard_lines}))
        findings.append(
            Finding(
                id="node.pcie.downgraded",
                status=Status.FAIL,
                priority=Priority.P1,
                title=f"PCIe link downgraded on {node.label} ({devices})",
                reference=SLOW_NODE,
                detail="A GPU or NIC link trained below its capable width or speed, unlike its peers: "
                "throughput drops severalfold without an error. Reboot to retrain it; replace if it stays.",
                evidence=[node.evidence(line) for _, line in hard_lines[:6]],
                suggested_commands=[
                    on_node(node, "sudo lspci -vv", "|", "grep -E '^[0-9a-f]|LnkSta:'"),
                    *ladder(node, "replace"),
                ],
                **node.scope(),
            )
        )
    soft = [d.line for d in downgrades if d not in hard] + node.facts.kernel.bandwidth_limited
    if soft:
        findings.append(
            Finding(
                id="node.pcie.speed_reduced",
                status=Status.WARN,
                priority=Priority.P2,
                title="PCIe link speed or bandwidth below the device's capability on every peer or at idle",
                reference=SLOW_NODE,
                detail="Idle GPUs lower link speed to save power, and a link every device shares is the "
                "platform's; a concern only if throughput is low under load.",
                evidence=[node.evidence(line) for line in soft[:4]],
                **node.scope(),
            )
        )
    return findings


def _aer(node: ProbedNode) -> Finding | None:
    uncorrected = [line for fatal, line in node.facts.kernel.aer if fatal]
    corrected = [line for fatal, line in node.facts.kernel.aer if not fatal]
    if uncorrected:
        return Finding(
            id="node.pcie.aer_uncorrected",
            status=Status.FAIL,
            priority=Priority.P1,
            title=f"Uncorrected PCIe (AER) errors on {node.label}",
            reference=SLOW_NODE,
            detail=f"{len(uncorrected)} uncorrected error(s): a device or slot is failing. "
            "Reboot, replace if they recur.",
            evidence=[node.evidence(line) for line in uncorrected[:4]],
            suggested_commands=ladder(node, "replace"),
            **node.scope(),
        )
    if len(corrected) >= CORRECTED_AER_BURST:
        return Finding(
            id="node.pcie.aer_corrected_burst",
            status=Status.WARN,
            priority=Priority.P2,
            title=f"{len(corrected)} corrected PCIe (AER) errors on {node.label}",
            reference=SLOW_NODE,
            detail="Corrected errors cost replays and bandwidth; a growing count is a link going bad.",
            evidence=[node.evidence(line) for line in corrected[:4]],
            suggested_commands=ladder(node, "investigate"),
            **node.scope(),
        )
    return None


def _oom(node: ProbedNode) -> Finding | None:
    kills = node.facts.kernel.oom_kills
    if not kills:
        return None
    return Finding(
        id="node.kernel.oom_killer",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"The kernel OOM killer ended {len(kills)} process(es) on {node.label}",
        reference="debugging-guide.md § 4",
        detail="Host memory ran out; a killed rank leaves its peers waiting in a collective.",
        evidence=[node.evidence(line) for line in kills[:4]],
        suggested_commands=ladder(node, "investigate"),
        **node.scope(),
    )


def _nic(node: ProbedNode) -> list[Finding]:
    findings = []
    for device, lines in sorted(node.facts.kernel.nic_down.items()):
        flapping = len(lines) >= NIC_FLAPPING
        findings.append(
            Finding(
                id="node.nic.link_flaps" if flapping else "node.nic.link_down",
                status=Status.FAIL if flapping else Status.WARN,
                priority=Priority.P1,
                title=f"NIC {device} on {node.label} went link-down {len(lines)} time(s)",
                # Repeated drops break collectives (§ 3); a single one that recovered is noise (§ 21).
                reference="debugging-guide.md § 3" if flapping else "debugging-guide.md § 21",
                detail="Link drops stall collectives (NCCL 'port error', socket timeouts); "
                "repeated drops mean a bad NIC, cable or port.",
                evidence=[node.evidence(line) for line in lines[:4]],
                suggested_commands=ladder(node, "reboot" if flapping else "investigate"),
                **node.scope(),
            )
        )
    return findings


def _unreadable(node: ProbedNode) -> Finding | None:
    if node.facts.kernel.readable:
        return None
    return Finding(
        id="node.kernel.log_unreadable",
        status=Status.INFO,
        title="kernel log not readable by the probe (needs root or passwordless sudo)",
        detail="Xid, AER, OOM-killer and NIC checks are incomplete on these nodes.",
        **node.scope(),
    )


def _node_findings(node: ProbedNode) -> list[Finding]:
    findings = _pcie(node) + _nic(node)
    findings += [f for f in (_aer(node), _oom(node), _unreadable(node)) if f is not None]
    return findings


def analyze_node_kernel(snapshot: Snapshot) -> list[Finding]:
    return merge_alike(f for node in probed_nodes(snapshot) for f in _node_findings(node))
