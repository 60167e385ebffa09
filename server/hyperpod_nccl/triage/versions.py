"""Version skew across nodes: different NCCL, aws-ofi-nccl or PyTorch builds in one job."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.root_cause import Candidate
from hyperpod_nccl.triage.summary import Topology
from hyperpod_nccl.triage.timeline import Clock

_COMPONENTS = (
    ("nccl", "NCCL", "nccl_version"),
    ("aws_ofi_nccl", "aws-ofi-nccl", "ofi_version"),
    ("torch", "PyTorch", "torch_version"),
)
_SKEW_WEIGHT = 80  # above "Message truncated", which the skew explains


@dataclass
class Skew:
    finding: Finding
    candidate: Candidate


def version_skew(
    events: list[Event], versions: dict[str, dict[str, str]], topology: Topology, clock: Clock
) -> Skew | None:
    for key, name, kind in _COMPONENTS:
        by_node = {
            node: found[key]
            for node, found in versions.items()
            if key in found and "wording" not in found[key]
        }
        counts = Counter(by_node.values())
        if len(counts) < 2:
            continue
        majority = counts.most_common(1)[0][0]
        odd_nodes = sorted(node for node, version in by_node.items() if version != majority)
        return _skew(events, name, kind, majority, counts, odd_nodes, topology, clock)
    return None


def _skew(
    events: list[Event],
    name: str,
    kind: str,
    majority: str,
    counts: Counter[str],
    odd_nodes: list[str],
    topology: Topology,
    clock: Clock,
) -> Skew:
    odd_ranks = sorted(r for r, node in topology.rank_node.items() if node in odd_nodes)
    of_kind = [e for e in events if e.kind == kind]
    witnesses = [e for e in of_kind if (e.node or topology.node_of(e.rank)) in odd_nodes][:1]
    witnesses += [e for e in of_kind if e.fields.get("version") == majority][:1]
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
    when = clock.at(first.stamp) if first else None
    title = f"{name} version mismatch across ranks"
    candidate = Candidate(
        Category.SOFTWARE, _SKEW_WEIGHT, title, odd_ranks, odd_nodes, first, when, "high", finding.id
    )
    return Skew(finding, candidate)
