"""Version skew across nodes: different NCCL, aws-ofi-nccl or PyTorch builds in one job."""

from __future__ import annotations

from collections import Counter

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.patterns import nccl_release
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

_COMPONENTS = (
    ("nccl", "NCCL", "nccl_version"),
    ("aws_ofi_nccl", "aws-ofi-nccl", "ofi_version"),
    ("torch", "PyTorch", "torch_version"),
)
_SKEW_WEIGHT = 80  # above "Message truncated", which the skew explains
_OBSOLETE_WEIGHT = 66  # above a bare NCCL failure it explains, below a rank's own decisive error
_FIRST_SUPPORTED_NCCL = 2


def version_skew(incident: Incident) -> Outcome:
    for key, name, kind in _COMPONENTS:
        by_node = {
            node: found[key]
            for node, found in incident.versions.items()
            if key in found and "wording" not in found[key]
        }
        counts = Counter(by_node.values())
        if len(counts) < 2:
            continue
        majority = counts.most_common(1)[0][0]
        odd_nodes = sorted(node for node, version in by_node.items() if version != majority)
        return _skew(incident, name, kind, majority, counts, odd_nodes)
    return Outcome()


def _skew(
    incident: Incident, name: str, kind: str, majority: str, counts: Counter[str], odd_nodes: list[str]
) -> Outcome:
    topology = incident.topology
    odd_ranks = sorted(r for r, node in topology.rank_node.items() if node in odd_nodes)
    of_kind = incident.index.kind(kind)
    witnesses = [e for e in of_kind if topology.node_of_line(e) in odd_nodes][:1]
    witnesses += [e for e in of_kind if nccl_release(e.fields.get("version", "")) == majority][:1]
    spread = ", ".join(
        f"{version} on {count} node{'s' if count > 1 else ''}" for version, count in counts.most_common()
    )
    finding = Finding(
        id=f"triage.software.{kind.removesuffix('_version')}_version_skew",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"{name} versions differ across nodes ({spread})",
        reference="debugging-guide.md § 10",
        detail=f"Odd nodes: {', '.join(odd_nodes[:8])}; the majority runs {majority}.",
        ranks=odd_ranks if len(odd_ranks) <= 64 else [],
        nodes=odd_nodes[:16],
        evidence=[evidence(e, topology) for e in witnesses],
    )
    first = witnesses[0] if witnesses else None
    title = f"{name} version mismatch across ranks"
    return blamed(
        incident,
        finding,
        category=Category.SOFTWARE,
        weight=_SKEW_WEIGHT,
        title=title,
        ranks=odd_ranks,
        first=first,
        confidence="high",
        nodes=odd_nodes,
    )


def obsolete_nccl(incident: Incident) -> Outcome:
    """NCCL 1.x (nccl-tests prints `compiled with NCCL 1.0`) predates every supported GPU and driver."""
    old = [
        e for e in incident.index.kind("nccl_version") if _major(e.fields["version"]) < _FIRST_SUPPORTED_NCCL
    ]
    if not old:
        return Outcome()
    first = incident.first(old)
    version = first.fields["version"] if first else "1.x"
    finding = Finding(
        id="triage.software.obsolete_nccl",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"Built against NCCL {version}, long unsupported",
        reference="debugging-guide.md § 10",
        detail="NCCL 1.x predates current GPUs, drivers and CUDA: build against a current NCCL 2 release.",
        nodes=incident.nodes_of_lines(old),
        evidence=[evidence(e, incident.topology) for e in old[:2]],
    )
    return blamed(
        incident,
        finding,
        category=Category.SOFTWARE,
        weight=_OBSOLETE_WEIGHT,
        title=f"NCCL {version} is obsolete",
        ranks=[],
        first=first,
        confidence="medium",
        nodes=finding.nodes,
    )


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else _FIRST_SUPPORTED_NCCL
