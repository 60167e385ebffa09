"""What only shows when probed nodes are compared: driver, NCCL, libfabric, EFA installer or
aws-ofi-nccl versions that differ, one node whose MTU differs, one node throttled among many."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from hyperpod_nccl.analyze.node_common import ProbedNode, config_change, ladder, on_node, probed_nodes
from hyperpod_nccl.guard.commands import value
from hyperpod_nccl.guard.validate import Mtu, NetworkInterface
from hyperpod_nccl.models import Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.probes.parse.gpu import Field, throttle_reasons
from hyperpod_nccl.snapshot import Snapshot

VERSION_MISMATCH = "debugging-guide.md § 10"

Reading = Callable[[ProbedNode], Field | None]
_VERSIONS: list[tuple[str, str, Reading, Status]] = [
    ("driver", "NVIDIA driver", lambda n: n.facts.gpu.driver_version, Status.FAIL),
    (
        "nccl",
        "host NCCL",
        lambda n: n.facts.efa.nccl_versions[0] if n.facts.efa.nccl_versions else None,
        Status.FAIL,
    ),
    ("libfabric", "libfabric", lambda n: n.facts.efa.libfabric_version, Status.WARN),
    ("efa_installer", "EFA installer", lambda n: n.facts.efa.installer_version, Status.WARN),
    ("ofi_nccl", "aws-ofi-nccl", lambda n: n.facts.efa.ofi_nccl_version, Status.WARN),
]


def _odd_ones(values: dict[ProbedNode, str]) -> tuple[str, list[ProbedNode]]:
    """The most common value and the nodes that differ from it (every node on a tie)."""
    counts = Counter(values.values()).most_common()
    majority, top = counts[0]
    if len(counts) > 1 and counts[1][1] == top:
        return majority, list(values)
    return majority, [node for node, value in values.items() if value != majority]


def _scope(nodes: list[ProbedNode]) -> dict[str, list[str]]:
    return {
        "instance_ids": [n.instance_id for n in nodes if n.instance_id],
        "nodes": [n.hostname for n in nodes if n.hostname],
    }


def _versions(nodes: list[ProbedNode]) -> list[Finding]:
    findings = []
    for key, what, read, status in _VERSIONS:
        fields = {node: field for node in nodes if (field := read(node)) is not None}
        values = {node: field.value for node, field in fields.items()}
        if len(set(values.values())) < 2:
            continue
        majority, odd = _odd_ones(values)
        listing = ", ".join(f"{n.label} {values[n]}" for n in odd[:6])
        findings.append(
            Finding(
                id=f"cross.version.{key}",
                status=status,
                priority=Priority.P1,
                title=f"{what} version differs across nodes: {listing} (most nodes: {majority})",
                reference=VERSION_MISMATCH,
                detail="Ranks on different versions can disagree on protocols and hang or fail at init; "
                "bring every node to one AMI / installer version.",
                evidence=[node.evidence(fields[node].line) for node in odd[:6]],
                suggested_commands=[c for node in odd[:6] for c in ladder(node, "investigate")],
                **_scope(odd),
            )
        )
    return findings


def _mtu_commands(node: ProbedNode, majority: str) -> list[SuggestedCommand]:
    commands = [on_node(node, "ip -o link show")]
    if majority.isdigit():
        for name, field in node.facts.host.mtus.items():
            if field.value != majority:
                why = f"Match the other nodes' MTU on {node.label} (lasts until reboot)."
                change = ["sudo ip link set dev", value(NetworkInterface, name), "mtu", value(Mtu, majority)]
                commands.append(config_change(change, why=why))
    return commands


def _mtu(nodes: list[ProbedNode]) -> Finding | None:
    mtus = {
        n: ",".join(sorted({f.value for f in n.facts.host.mtus.values()})) for n in nodes if n.facts.host.mtus
    }
    if len(set(mtus.values())) < 2:
        return None
    majority, odd = _odd_ones(mtus)
    listing = ", ".join(f"{n.label} {mtus[n]}" for n in odd[:6])
    return Finding(
        id="cross.net.mtu_mismatch",
        status=Status.FAIL,
        priority=Priority.P1,
        title=f"MTU differs across nodes: {listing} (most nodes: {majority})",
        reference="multinode.md § 4",
        detail="Small packets pass and large frames are dropped silently on TCP paths (bootstrap, socket "
        "transport, TCP fallback): hangs that follow message size. Make the MTU the same on every node.",
        evidence=[
            n.evidence(f.line) for n in odd[:6] for f in n.facts.host.mtus.values() if f.value != majority
        ][:6],
        suggested_commands=[c for n in odd[:6] for c in _mtu_commands(n, majority)],
        **_scope(odd),
    )


def _throttled_minority(nodes: list[ProbedNode]) -> Finding | None:
    throttled = [n for n in nodes if any(throttle_reasons(gpu) for gpu in n.facts.gpu.gpus)]
    with_gpus = [n for n in nodes if n.facts.gpu.gpus]
    if not throttled or len(throttled) == len(with_gpus):
        return None
    return Finding(
        id="cross.gpu.throttled_straggler",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"{len(throttled)} of {len(with_gpus)} nodes throttled: "
        + ", ".join(n.label for n in throttled[:6]),
        reference="performance-testing.md § 5",
        detail="Synchronous training runs at its slowest rank's pace: the throttled node is the straggler.",
        **_scope(throttled),
    )


def analyze_cross_node(snapshot: Snapshot) -> list[Finding]:
    nodes = probed_nodes(snapshot)
    if len(nodes) < 2:
        return []
    findings = _versions(nodes)
    findings += [f for f in (_mtu(nodes), _throttled_minority(nodes)) if f is not None]
    return findings
