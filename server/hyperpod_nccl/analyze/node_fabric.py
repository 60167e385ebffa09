"""NVSwitch fabric per probed node: `nvidia-fabricmanager` running and at the driver's version,
the GPUs' fabric state, NVSwitch SXids, and what DCGM's health watches already saw."""

from __future__ import annotations

from hyperpod_nccl.analyze.node_common import ProbedNode, ladder, merge_alike, on_node, probed_nodes
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.probes.parse.sections import Line
from hyperpod_nccl.snapshot import Snapshot

FABRIC_MANAGER = "multinode.md § 1"
GPU_FAULTS = "debugging-guide.md § 5"
# HGX/DGX-class instance types whose GPUs talk through NVSwitches.
NVSWITCH_TYPES = frozenset(
    {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"}
)


def _needs_fabric_manager(node: ProbedNode) -> bool:
    if node.instance_type in NVSWITCH_TYPES:
        return True
    # GPUs outside an NVSwitch fabric print "State : N/A".
    return any((state := gpu.get("Fabric/State")) and state.value != "N/A" for gpu in node.facts.gpu.gpus)


def _fail(node: ProbedNode, finding_id: str, title: str, detail: str, lines: list[Line]) -> Finding:
    check = (
        *("systemctl status nvidia-fabricmanager --no-pager", ";", "nv-fabricmanager --version", ";"),
        *("nvidia-smi -q", "|", "grep -A3 Fabric"),
    )
    return Finding(
        id=finding_id,
        status=Status.FAIL,
        priority=Priority.P0,
        title=title,
        reference=FABRIC_MANAGER,
        detail=detail,
        evidence=[node.evidence(line) for line in lines],
        suggested_commands=[on_node(node, *check), *ladder(node, "replace")],
        **node.scope(),
    )


_DOWN = (
    "Without the fabric manager this node's GPUs cannot form their NVLink fabric, and every rank of "
    "the job waits at NCCL init. Restart the service with no job on the node, else reboot."
)
_MISMATCH = (
    "The fabric manager must be exactly the driver's version; a mismatch keeps the NVLink fabric "
    "down. Install the matching package, or reboot/replace onto a consistent AMI."
)


def _service(node: ProbedNode) -> Finding:
    fabric, driver = node.facts.fabric, node.facts.gpu.driver_version
    if fabric.state is None and not fabric.systemd:
        return Finding(
            id="node.fabric.manager_unknown",
            status=Status.INFO,
            title="nvidia-fabricmanager state unknown: no systemd where the probe ran",
            **node.scope(),
        )
    state = "not installed" if fabric.unit_missing else fabric.state.value if fabric.state else "unknown"
    if state != "active":
        title = f"nvidia-fabricmanager is not running ({state}) on {node.label}"
        lines = [fabric.state.line] if fabric.state else []
        return _fail(node, "node.fabric.manager_down", title, _DOWN, lines)
    if fabric.version and driver and fabric.version.value != driver.value:
        title = f"fabric manager {fabric.version.value} differs from driver {driver.value} on {node.label}"
        lines = [fabric.version.line, driver.line]
        return _fail(node, "node.fabric.version_mismatch", title, _MISMATCH, lines)
    return Finding(
        id="node.fabric.manager_ok",
        status=Status.PASS,
        title="nvidia-fabricmanager active at the driver's version",
        **node.scope(),
    )


def _fabric_state(node: ProbedNode) -> Finding | None:
    bad = []
    for gpu in node.facts.gpu.gpus:
        for path, healthy in (("Fabric/State", "Completed"), ("Fabric/Status", "Success")):
            field = gpu.get(path)
            if field and field.value not in (healthy, "N/A"):
                bad.append(field.line)
    if not bad:
        return None
    detail = "nvidia-smi reports the GPUs' NVLink fabric registration incomplete or failed."
    return _fail(
        node, "node.fabric.gpu_fabric_not_ready", f"GPU fabric not ready on {node.label}", detail, bad[:6]
    )


def _sxid(node: ProbedNode) -> list[Finding]:
    fatal = [line for _, is_fatal, line in node.facts.kernel.sxids if is_fatal]
    other = [line for _, is_fatal, line in node.facts.kernel.sxids if not is_fatal]
    findings = []
    if fatal:
        findings.append(
            Finding(
                id="node.fabric.sxid_fatal",
                status=Status.FAIL,
                priority=Priority.P0,
                title=f"Fatal NVSwitch SXid on {node.label}",
                reference=GPU_FAULTS,
                detail="A fatal NVSwitch error: NVLink traffic on this node is broken. Reboot, then replace.",
                evidence=[node.evidence(line) for line in fatal[:4]],
                suggested_commands=ladder(node, "replace"),
                **node.scope(),
            )
        )
    if other:
        findings.append(
            Finding(
                id="node.fabric.sxid_nonfatal",
                status=Status.WARN,
                priority=Priority.P2,
                title=f"Non-fatal NVSwitch SXid on {node.label}",
                reference=GPU_FAULTS,
                detail="Recovered NVSwitch errors; watch for fatal ones.",
                evidence=[node.evidence(line) for line in other[:4]],
                **node.scope(),
            )
        )
    return findings


def _dcgm(node: ProbedNode) -> Finding | None:
    dcgm = node.facts.dcgm
    if dcgm.unavailable is not None:
        return Finding(
            id="node.dcgm.unavailable",
            status=Status.INFO,
            title="DCGM health watches could not be read (host engine not reachable)",
            evidence=[node.evidence(dcgm.unavailable)],
            **node.scope(),
        )
    if dcgm.overall is None or dcgm.overall.value == "Healthy":
        return None
    failed = dcgm.overall.value == "Failure"
    return Finding(
        id="node.dcgm.health_failure" if failed else "node.dcgm.health_warning",
        status=Status.FAIL if failed else Status.WARN,
        priority=Priority.P1,
        title=f"DCGM health watches report {dcgm.overall.value} on {node.label}",
        reference=GPU_FAULTS,
        detail="What DCGM's background health checks already saw (no diagnostic was run).",
        evidence=[node.evidence(dcgm.overall.line)] + [node.evidence(line) for line in dcgm.detail[:5]],
        suggested_commands=ladder(node, "reboot" if failed else "investigate"),
        **node.scope(),
    )


def _node_findings(node: ProbedNode) -> list[Finding]:
    if not node.facts.gpu.installed:
        return []
    findings = [_service(node)] if _needs_fabric_manager(node) else []
    findings += [f for f in (_fabric_state(node), _dcgm(node)) if f is not None]
    return findings + _sxid(node)


def analyze_node_fabric(snapshot: Snapshot) -> list[Finding]:
    return merge_alike(f for node in probed_nodes(snapshot) for f in _node_findings(node))
