"""EFA per probed node: the libfabric `efa` provider present (else NCCL quietly falls back to
TCP), the device count the instance type should have, aws-ofi-nccl on the host, and node-wide
settings that steer libfabric away from EFA."""

from __future__ import annotations

from hyperpod_nccl.analyze.node_common import ProbedNode, ladder, merge_alike, on_node, probed_nodes
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.probes.parse.efa import EXPECTED_EFA_DEVICES
from hyperpod_nccl.snapshot import Snapshot

EFA_SETUP = "debugging-guide.md § 6"
TCP_FALLBACK = "debugging-guide.md § 13"


def _provider(node: ProbedNode, expected: int | None) -> Finding | None:
    efa = node.facts.efa
    if efa.efa_domains:
        return None
    what = "fi_info is not installed" if not efa.fi_info_installed else "fi_info lists no efa provider"
    return Finding(
        id="node.efa.provider_missing",
        status=Status.FAIL,
        priority=Priority.P0 if expected else Priority.P1,
        title=f"No EFA provider on {node.label}: {what} (TCP fallback risk)",
        reference=TCP_FALLBACK,
        detail="Without libfabric's efa provider NCCL runs over TCP sockets: collectives slow down many "
        "times and large jobs time out. Check the EFA driver and installer on the node; reboot if the "
        "devices vanished.",
        evidence=[node.evidence(line) for line in efa.fi_info_text[:4]],
        suggested_commands=[
            on_node(node, "fi_info -p efa -t FI_EP_RDM", ";", "ls /sys/class/infiniband"),
            *ladder(node, "reboot"),
        ],
        **node.scope(),
    )


def _device_count(node: ProbedNode, expected: int | None) -> Finding | None:
    devices = node.facts.efa.devices
    if expected is None or len(devices) >= expected:
        return None
    return Finding(
        id="node.efa.devices_missing",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"{node.label} shows {len(devices)} of {expected} EFA devices ({node.instance_type})",
        reference=EFA_SETUP,
        detail="Missing EFA devices cut inter-node bandwidth; NCCL uses only the NICs it finds.",
        evidence=[node.evidence(line) for line in devices[:3]],
        suggested_commands=[on_node(node, "ls /sys/class/infiniband"), *ladder(node, "replace")],
        **node.scope(),
    )


def _plugin(node: ProbedNode) -> Finding | None:
    if node.facts.efa.ofi_nccl_libs or not node.facts.efa.efa_domains:
        return None
    return Finding(
        id="node.efa.ofi_nccl_missing",
        status=Status.WARN,
        priority=Priority.P1,
        title="aws-ofi-nccl not found on the host",
        reference=EFA_SETUP,
        detail="Jobs that use the host's NCCL need the plugin to reach EFA; containers must ship their own.",
        **node.scope(),
    )


def _provider_setting(node: ProbedNode) -> list[Finding]:
    findings = []
    for setting in node.facts.host.settings:
        if setting.name == "FI_PROVIDER" and setting.value.strip("\"'") not in ("efa", ""):
            findings.append(
                Finding(
                    id="node.efa.provider_overridden",
                    status=Status.WARN,
                    priority=Priority.P1,
                    title=f"{setting.file} sets FI_PROVIDER={setting.value}",
                    reference=TCP_FALLBACK,
                    detail="A node-wide FI_PROVIDER other than efa steers every job off EFA.",
                    evidence=[node.evidence(setting.line)],
                    **node.scope(),
                )
            )
    return findings


def _node_findings(node: ProbedNode) -> list[Finding]:
    expected = EXPECTED_EFA_DEVICES.get(node.instance_type or "")
    efa = node.facts.efa
    if expected is None and not efa.efa_domains and not efa.devices:
        return [
            Finding(
                id="node.efa.absent",
                status=Status.INFO,
                title="no EFA devices on this node type",
                **node.scope(),
            )
        ]
    findings = [f for f in (_provider(node, expected), _device_count(node, expected), _plugin(node)) if f]
    findings += _provider_setting(node)
    if not any(f.is_issue for f in findings):
        version = efa.libfabric_version.value if efa.libfabric_version else "unknown"
        findings.append(
            Finding(
                id="node.efa.ok",
                status=Status.PASS,
                title=f"EFA provider present with {len(efa.devices)} devices (libfabric {version})",
                **node.scope(),
            )
        )
    return findings


def analyze_node_efa(snapshot: Snapshot) -> list[Finding]:
    return merge_alike(f for node in probed_nodes(snapshot) for f in _node_findings(node))
