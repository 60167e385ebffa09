"""GPU health per probed node: Xids from the kernel log, ECC, retired pages and row remapping,
clock throttling, missing GPUs and NVLink links, from `nvidia-smi -q` and the kernel log."""

from __future__ import annotations

import re
from collections import defaultdict

from hyperpod_nccl.analyze.node_common import ProbedNode, ladder, merge_alike, probed_nodes
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.probes.parse.gpu import Gpu, throttle_reasons, uncorrectable_ecc
from hyperpod_nccl.probes.parse.sections import Line
from hyperpod_nccl.probes.xid import xid_info
from hyperpod_nccl.snapshot import Snapshot

GPU_FAULTS = "debugging-guide.md § 5"
_XID_REFERENCE = {13: "debugging-guide.md § 20", 31: "debugging-guide.md § 20"}
_GPU_INSTANCE = re.compile(r"^(p\d|g\d)")
# GPUs per instance type for the types HyperPod trains on.
EXPECTED_GPUS = {"p4d.24xlarge": 8, "p4de.24xlarge": 8, "p5.48xlarge": 8, "p5e.48xlarge": 8}
EXPECTED_GPUS |= {"p5en.48xlarge": 8, "p6-b200.48xlarge": 8, "g5.48xlarge": 8, "g6e.48xlarge": 8}


def _xid_findings(node: ProbedNode) -> list[Finding]:
    by_code = defaultdict(list)
    for event in node.facts.kernel.xids:
        by_code[event.code].append(event)
    findings = []
    for code, events in sorted(by_code.items()):
        info = xid_info(code)
        gpus = ", ".join(sorted({event.bdf for event in events}))
        evidence = [node.evidence(event.line) for event in events[:5]]
        if code == 79:
            evidence += [node.evidence(line) for line in node.facts.kernel.fell_off[:3]]
        cause = f"{info.cause}-caused" if info.cause != "consequence" else "a consequence of an earlier Xid"
        processes = sorted(
            {event.process for event in events if event.process and event.process != "<unknown>"}
        )
        ran = f" Process: {', '.join(processes)}." if processes else ""
        findings.append(
            Finding(
                id=f"node.gpu.xid_{code}",
                status=info.status,
                priority=info.priority,
                title=f"Xid {code} on {node.label} (GPU {gpus}): {info.meaning}",
                reference=_XID_REFERENCE.get(code, GPU_FAULTS),
                detail=f"{info.name}: {len(events)} event(s), {cause}. First move: {info.action}.{ran}",
                evidence=evidence,
                suggested_commands=ladder(node, info.rung),
                **node.scope(),
            )
        )
    if node.facts.kernel.fell_off and 79 not in by_code:
        findings.append(_fell_off(node))
    return findings


def _fell_off(node: ProbedNode) -> Finding:
    return Finding(
        id="node.gpu.fallen_off_bus",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"A GPU on {node.label} has fallen off the bus",
        reference=GPU_FAULTS,
        detail="The GPU is gone from the PCIe bus until the node is reset; reboot, replace if it returns.",
        evidence=[node.evidence(line) for line in node.facts.kernel.fell_off[:3]],
        suggested_commands=ladder(node, "replace"),
        **node.scope(),
    )


def _memory_findings(node: ProbedNode, gpu: Gpu) -> list[Finding]:
    findings = []
    volatile = uncorrectable_ecc(gpu, "Volatile")
    if volatile:
        findings.append(
            _gpu_finding(node, gpu, "node.gpu.ecc_uncorrectable", Status.FAIL, Priority.P0,
                         "uncorrectable ECC errors since boot",
                         "Memory errors this boot: reboot to reset the GPU; replace on recurrence.",
                         [f.line for _, _, f in volatile], "reboot")
        )  # fmt: skip
    elif aggregate := uncorrectable_ecc(gpu, "Aggregate"):
        findings.append(
            _gpu_finding(node, gpu, "node.gpu.ecc_history", Status.WARN, Priority.P2,
                         "uncorrectable ECC errors in its lifetime (none this boot)",
                         "Past uncorrectable errors; watch for new ones and for remap failures.",
                         [f.line for _, _, f in aggregate], "investigate")
        )  # fmt: skip
    remap = _remap_findings(node, gpu)
    return findings + remap


def _remap_findings(node: ProbedNode, gpu: Gpu) -> list[Finding]:
    findings = []
    failed = gpu.get("Remapped Rows/Remapping Failure Occurred")
    pending = gpu.get("Remapped Rows/Pending")
    retired_pending = gpu.get("Retired Pages/Pending Page Blacklist") or gpu.get("Retired Pages/Pending")
    if failed and failed.value == "Yes":
        findings.append(
            _gpu_finding(node, gpu, "node.gpu.row_remap_failed", Status.FAIL, Priority.P0,
                         "row remapping failed (no spare rows left)",
                         "The GPU cannot retire more bad memory: replace the node.", [failed.line], "replace")
        )  # fmt: skip
    if pending and pending.value == "Yes":
        findings.append(
            _gpu_finding(node, gpu, "node.gpu.row_remap_pending", Status.FAIL, Priority.P1,
                         "row remap pending: a GPU reset is needed to activate it",
                         "Reboot the node to apply the remap.", [pending.line], "reboot")
        )  # fmt: skip
    if retired_pending and retired_pending.value == "Yes":
        findings.append(
            _gpu_finding(node, gpu, "node.gpu.page_retirement_pending", Status.FAIL, Priority.P1,
                         "page retirement pending: a reboot is needed to retire the page",
                         "Reboot the node to retire the bad page.", [retired_pending.line], "reboot")
        )  # fmt: skip
    return findings


def _gpu_finding(
    node: ProbedNode,
    gpu: Gpu,
    finding_id: str,
    status: Status,
    priority: Priority,
    what: str,
    detail: str,
    lines: list[Line],
    rung: str,
) -> Finding:
    return Finding(
        id=finding_id,
        status=status,
        priority=priority,
        title=f"GPU {gpu.bus_id} on {node.label}: {what}",
        reference=GPU_FAULTS,
        detail=detail,
        evidence=[node.evidence(line) for line in lines],
        suggested_commands=ladder(node, rung),
        **node.scope(),
    )


def _throttle(node: ProbedNode) -> Finding | None:
    throttled = [
        (gpu, reason, field) for gpu in node.facts.gpu.gpus for reason, field in throttle_reasons(gpu)
    ]
    if not throttled:
        return None
    reasons = ", ".join(sorted({reason for _, reason, _ in throttled}))
    gpus = sorted({gpu.bus_id for gpu, _, _ in throttled})
    return Finding(
        id="node.gpu.clocks_throttled",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"{len(gpus)} GPU(s) on {node.label} are throttled: {reasons}",
        reference="performance-testing.md § 6",
        detail="Hardware or thermal slowdown: one slow GPU sets the pace of the whole job. "
        "Check cooling and power on this node; reboot, replace if it persists.",
        evidence=[node.evidence(field.line) for _, _, field in throttled[:6]],
        suggested_commands=ladder(node, "reboot"),
        **node.scope(),
    )


def _inventory(node: ProbedNode) -> list[Finding]:
    gpu = node.facts.gpu
    expected = EXPECTED_GPUS.get(node.instance_type or "")
    findings = []
    if gpu.errors:
        findings.append(
            Finding(
                id="node.gpu.nvidia_smi_error",
                status=Status.FAIL,
                priority=Priority.P0,
                title=f"nvidia-smi cannot reach every GPU on {node.label}",
                reference=GPU_FAULTS,
                detail="A GPU nvidia-smi cannot open is lost to the job (often Xid 79): reboot, replace.",
                evidence=[node.evidence(line) for line in gpu.errors[:3]],
                suggested_commands=ladder(node, "replace"),
                **node.scope(),
            )
        )
    attached = int(gpu.attached.value) if gpu.attached and gpu.attached.value.isdigit() else None
    if expected and attached is not None and attached < expected:
        findings.append(
            Finding(
                id="node.gpu.missing",
                status=Status.FAIL,
                priority=Priority.P0,
                title=f"{node.label} shows {attached} of {expected} GPUs ({node.instance_type})",
                reference=GPU_FAULTS,
                detail="A GPU dropped out: jobs sized for the full node cannot start. Reboot, then replace.",
                evidence=[node.evidence(gpu.attached.line)] if gpu.attached else [],
                suggested_commands=ladder(node, "replace"),
                **node.scope(),
            )
        )
    return findings


def _nvlink(node: ProbedNode) -> Finding | None:
    inactive = node.facts.gpu.nvlink_inactive
    if not inactive:
        return None
    gpus = sorted({gpu for gpu, _ in inactive})
    return Finding(
        id="node.gpu.nvlink_inactive",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"{len(inactive)} NVLink link(s) inactive on {node.label} ({', '.join(gpus)})",
        reference="debugging-guide.md § 19",
        detail="Intra-node traffic loses NVLink bandwidth or NVLS; reboot, replace if links stay down.",
        evidence=[node.evidence(line) for _, line in inactive[:6]],
        suggested_commands=ladder(node, "reboot"),
        **node.scope(),
    )


def _no_gpu(node: ProbedNode) -> Finding:
    if node.instance_type and _GPU_INSTANCE.match(node.instance_type):
        return Finding(
            id="node.gpu.driver_missing",
            status=Status.FAIL,
            priority=Priority.P0,
            title=f"No NVIDIA driver or nvidia-smi on GPU instance {node.label} ({node.instance_type})",
            reference=GPU_FAULTS,
            detail="GPUs are unusable without the driver: check the AMI and lifecycle scripts, then reboot.",
            suggested_commands=ladder(node, "reboot"),
            **node.scope(),
        )
    return Finding(
        id="node.gpu.absent",
        status=Status.INFO,
        title=f"no NVIDIA GPU/driver on this host ({node.label})" if node.result.target.instance_id is None
        else f"no NVIDIA GPU/driver on {node.label}",
        detail="GPU, fabric manager, DCGM and NVLink checks do not apply here.",
        **node.scope(),
    )  # fmt: skip


def _node_findings(node: ProbedNode) -> list[Finding]:
    if not node.facts.gpu.installed:
        return [_no_gpu(node), *_xid_findings(node)]
    findings = _inventory(node) + _xid_findings(node)
    for gpu in node.facts.gpu.gpus:
        findings += _memory_findings(node, gpu)
    findings += [f for f in (_throttle(node), _nvlink(node)) if f is not None]
    if not any(f.is_issue for f in findings):
        gpu = node.facts.gpu
        versions = f"driver {gpu.driver_version.value if gpu.driver_version else '?'}, "
        versions += f"CUDA {gpu.cuda_version.value if gpu.cuda_version else '?'}"
        findings.append(
            Finding(
                id="node.gpu.healthy",
                status=Status.PASS,
                title=f"{len(gpu.gpus)} GPUs, no Xid, ECC, remap, throttle or NVLink fault ({versions})",
                **node.scope(),
            )
        )
    return findings


def analyze_node_gpu(snapshot: Snapshot) -> list[Finding]:
    return merge_alike(f for node in probed_nodes(snapshot) for f in _node_findings(node))
