"""Every Slurm node that cannot run work: its state, its reason, what the reason means, and the
HyperPod instance behind it. Nodes sharing a condition and a reason make one finding."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.slurm import remediation
from hyperpod_nccl.slurm.states import GRES_MISMATCH, NodeState, reason_meaning
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.slurm import SlurmNode

_MAX_PER_NODE_COMMANDS = 5
_GPU_GRES = re.compile(r"\bgpu(?::[^:,()]+)?:(\d+)")
_MAX_EVIDENCE_NODES = 10  # keeps an MCP answer small when hundreds of nodes share one reason
# Conditions that stop the node taking any work: down, failed or not answering block training
# that needs it; a drain is a deliberate hold that still lets running jobs finish.
_PRIORITY = {"down": Priority.P0, "fail": Priority.P0, "failing": Priority.P0, "not responding": Priority.P0}


def _condition(node: SlurmNode) -> str:
    state = NodeState(node.base, frozenset(node.flags))
    if "NOT_RESPONDING" in state.flags and state.condition not in ("down", "fail", "failing"):
        return "not responding"
    return state.condition


def _is_unusable(node: SlurmNode) -> bool:
    return NodeState(node.base, frozenset(node.flags)).unusable


def _suggestions(condition: str, reason: str, nodes: list[str]) -> list[SuggestedCommand]:
    meaning = reason_meaning(reason)
    first = nodes[:_MAX_PER_NODE_COMMANDS]
    commands = [remediation.show_node(n) for n in first] + [remediation.sinfo_reasons()]
    if meaning and meaning.kind == "replacement_requested":
        # A replacement is in flight: any state change by hand can make it fail.
        return commands
    commands += [remediation.show_jobs_on(n) for n in first if condition in ("draining", "failing")]
    commands.append(remediation.resume(nodes))
    if (meaning and meaning.hardware) or condition in _PRIORITY:
        commands += [remediation.replace(n) for n in first]
    if condition in ("fail", "failing"):
        commands += [remediation.force_down(n) for n in first]
    return commands


def _title(condition: str, reason: str, nodes: list[SlurmNode]) -> str:
    names = ", ".join(n.name for n in nodes[:3]) + (f" (+{len(nodes) - 3} more)" if len(nodes) > 3 else "")
    why = f': "{reason}"' if reason else " with no reason given"
    return f"Slurm node{'s' if len(nodes) > 1 else ''} {names} {condition}{why}"


def _detail(condition: str, reason: str, sample: SlurmNode) -> str:
    state = NodeState(sample.base, frozenset(sample.flags)).describe()
    meaning = reason_meaning(reason)
    text = f"State {sample.state} ({state})."
    if meaning:
        text += f" Reason means: {meaning.meaning}."
    if condition in ("drained", "draining"):
        text += " Drained nodes take no new jobs; resume only once the cause is fixed."
    return text


def _group_finding(
    condition: str, reason: str, nodes: list[SlurmNode], reason_lines: dict[str, str]
) -> Finding:
    gres = bool(GRES_MISMATCH.search(reason))
    return Finding(
        id="slurm.node.gres_mismatch" if gres else f"slurm.node.{condition.replace(' ', '_')}",
        status=Status.FAIL,
        priority=Priority.P0 if gres else _PRIORITY.get(condition, Priority.P1),
        title=_title(condition, reason, nodes),
        reference="debugging-guide.md § 5" if gres else "operations.md § 7",
        detail=_detail(condition, reason, nodes[0]),
        nodes=[n.name for n in nodes],
        instance_ids=[n.instance_id for n in nodes if n.instance_id],
        evidence=_evidence(nodes, reason_lines),
        suggested_commands=_suggestions(condition, reason, [n.name for n in nodes]),
    )


def _evidence(nodes: list[SlurmNode], reason_lines: dict[str, str]) -> list[Evidence]:
    """The first nodes' `scontrol show node` fields and `sinfo -R` lines; the node list names all."""
    evidence = []
    for node in nodes[:_MAX_EVIDENCE_NODES]:
        evidence.append(
            Evidence(
                source="scontrol show node", text=node.line, node=node.name, instance_id=node.instance_id
            )
        )
        if node.name in reason_lines:
            evidence.append(Evidence(source="sinfo -R", text=reason_lines[node.name], node=node.name))
    return evidence


def _gpu_count(gres: str | None) -> int | None:
    """`gpu:8`, `gpu:h100:8`, `gpu:8(S:0-1)`, `gpu:h100:8,shard:4` → 8."""
    match = _GPU_GRES.search(gres or "")
    return int(match.group(1)) if match else None


def _odd_gpu_counts(partition: str, nodes: list[SlurmNode]) -> tuple[int | None, list[SlurmNode]]:
    counts = {n.name: c for n in nodes if partition in n.partitions and (c := _gpu_count(n.gres)) is not None}
    if not counts:
        return None, []
    usual = Counter(counts.values()).most_common(1)[0][0]
    return usual, [n for n in nodes if n.name in counts and counts[n.name] != usual]


def _uneven_gres(nodes: list[SlurmNode]) -> list[Finding]:
    """Nodes of one partition configured with different GPU counts: a node whose gres.conf was
    lowered after a GPU failure takes jobs that expect a full node, and ranks per node disagree."""
    findings = []
    for partition in sorted({p for n in nodes for p in n.partitions}):
        usual, odd = _odd_gpu_counts(partition, nodes)
        if not odd:
            continue
        names = [n.name for n in odd]
        findings.append(
            Finding(
                id="slurm.node.gres_uneven",
                status=Status.WARN,
                priority=Priority.P2,
                title=f"Partition {partition}: {', '.join(names[:5])} not configured with {usual} GPUs",
                reference="operations.md § 7",
                detail="Fine in a partition that mixes node types; otherwise a GPU was configured away.",
                nodes=names,
                evidence=[
                    Evidence(source="scontrol show node", text=n.line, node=n.name)
                    for n in odd[:_MAX_EVIDENCE_NODES]
                ],
                suggested_commands=[remediation.show_node(name) for name in names[:_MAX_PER_NODE_COMMANDS]],
            )
        )
    return findings


def _summary(nodes: list[SlurmNode], unusable: int) -> Finding:
    counts = Counter(_condition(n) for n in nodes)
    listing = ", ".join(f"{count} {condition}" for condition, count in counts.most_common())
    return Finding(
        id="slurm.nodes.summary",
        status=Status.INFO if unusable else Status.PASS,
        title=f"{len(nodes)} Slurm nodes: {listing}",
    )


def analyze_slurm_nodes(snapshot: Snapshot) -> list[Finding]:
    slurm = snapshot.slurm
    if slurm is None or not slurm.nodes:
        return []
    groups: dict[tuple[str, str], list[SlurmNode]] = defaultdict(list)
    for node in slurm.nodes:
        if _is_unusable(node) or (node.reason and GRES_MISMATCH.search(node.reason)):
            groups[(_condition(node), node.reason or "")].append(node)
    findings = [
        _group_finding(condition, reason, nodes, slurm.reason_lines)
        for (condition, reason), nodes in groups.items()
    ]
    unusable = sum(len(nodes) for nodes in groups.values())
    return [*findings, *_uneven_gres(slurm.nodes), _summary(slurm.nodes, unusable)]
