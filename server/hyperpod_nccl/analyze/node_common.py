"""What the node analyzers share: the probed nodes with their parsed facts, evidence lines that
carry the node's instance id, and the suggested-command ladder (investigate → reboot → replace)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hyperpod_nccl.guard.commands import (
    Command,
    Operator,
    Value,
    Word,
    command_text,
    hyperpod_flags,
    suggest,
    suggest_chain,
    value,
)
from hyperpod_nccl.guard.validate import InstanceId, Region, SsmTarget
from hyperpod_nccl.models import BlastRadius, Evidence, Finding, SuggestedCommand
from hyperpod_nccl.probes.parse.node import NodeFacts, parse_node
from hyperpod_nccl.probes.parse.sections import Line
from hyperpod_nccl.probes.runners.base import ProbeResult
from hyperpod_nccl.slurm.remediation import replace_slurm_node
from hyperpod_nccl.snapshot import Snapshot

NODE_SCRIPT = "node_health"
_RUNGS = ("investigate", "restart_job", "reboot", "replace")


# eq=False: compared and hashed by identity, so nodes can key the cross-node comparisons.
@dataclass(frozen=True, eq=False)
class ProbedNode:
    result: ProbeResult
    facts: NodeFacts
    cluster: str | None
    region: str | None
    orchestrator: str | None

    @property
    def instance_id(self) -> str | None:
        return self.result.target.instance_id or self.facts.host.instance_id

    @property
    def hostname(self) -> str | None:
        return self.result.target.hostname or self.facts.host.hostname

    @property
    def instance_type(self) -> str | None:
        declared = self.result.target.instance_type or self.facts.host.instance_type
        return declared.removeprefix("ml.") if declared else None

    @property
    def label(self) -> str:
        return self.instance_id or self.hostname or "this host"

    def evidence(self, line: Line) -> Evidence:
        return Evidence(
            source=f"probe:{line.section}",
            line=line.number,
            text=line.text.strip(),
            node=self.hostname,
            instance_id=self.instance_id,
        )

    def scope(self) -> dict[str, list[str]]:
        return {
            "instance_ids": [self.instance_id] if self.instance_id else [],
            "nodes": [self.hostname] if self.hostname else [],
        }


def probed_nodes(snapshot: Snapshot) -> list[ProbedNode]:
    """Every node_health result that printed something, a partial one included."""
    probes = snapshot.probes
    if probes is None or probes.script != NODE_SCRIPT:
        return []
    cluster = probes.cluster_name
    region = probes.region or snapshot.region
    orchestrator = probes.orchestrator or snapshot.orchestrator
    return [
        ProbedNode(result, parse_node(result.output), cluster, region, orchestrator)
        for result in probes.results
        if result.output.strip()
    ]


def ladder(node: ProbedNode, up_to: str) -> list[SuggestedCommand]:
    """Suggested commands from the first rung up to `up_to`, with the node's real ids."""
    if node.instance_id is None:
        return []
    base = hyperpod_flags(node.cluster, node.region)
    instance = value(InstanceId, node.instance_id)
    commands = [
        suggest(
            "aws sagemaker describe-cluster-node",
            *base,
            "--node-id",
            instance,
            why="Investigate first: the node's status and whether HyperPod already flagged it.",
            permission="sagemaker:DescribeClusterNode",
        )
    ]
    rung = _RUNGS.index(up_to)
    if rung >= _RUNGS.index("reboot"):
        commands.append(
            suggest(
                "aws sagemaker batch-reboot-cluster-nodes",
                *base,
                "--node-ids",
                instance,
                why="Reboot resets the GPUs and restarts the node; move the job off it first.",
                blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
                permission="sagemaker:BatchRebootClusterNodes",
            )
        )
    if rung >= _RUNGS.index("replace"):
        commands.append(_replace(node, base, instance))
    return commands


def on_node(node: ProbedNode, *check: Command | Operator) -> SuggestedCommand:
    """A read-only check to run on the node (a command line as `suggest_chain` takes it): through
    a Session Manager shell on a cluster node, directly where the probe ran on this host."""
    target = node.result.target.ssm_target
    if target is None:
        return suggest_chain(*check, why="Confirm on the host.")
    return suggest(
        "aws ssm start-session --target",
        value(SsmTarget, target),
        "--region",
        value(Region, node.region),
        why=f"Confirm on the node, in the session: {command_text(*check)}",
        permission="ssm:StartSession",
    )


def config_change(*command: Command | Operator, why: str) -> SuggestedCommand:
    """A change on the node itself, as root (a command line as `suggest_chain` takes it)."""
    return suggest_chain(
        *command,
        why=f"{why} Persist it in the lifecycle scripts, or a replaced node comes back without it.",
        blast_radius=BlastRadius.CHANGES_CONFIG,
        permission="root on the node",
    )


def _replace(node: ProbedNode, base: tuple[Word, ...], instance: Value) -> SuggestedCommand:
    why = "Only if the fault survives a reboot: replacement destroys the root and secondary volumes."
    if node.orchestrator == "slurm" and node.hostname:
        return suggest(
            *replace_slurm_node(node.hostname),
            why=why,
            blast_radius=BlastRadius.REPLACES_NODE,
            permission="Slurm operator (scontrol update)",
        )
    return suggest(
        "aws sagemaker batch-replace-cluster-nodes",
        *base,
        "--node-ids",
        instance,
        why=why,
        blast_radius=BlastRadius.REPLACES_NODE,
        permission="sagemaker:BatchReplaceClusterNodes",
    )


def merge_alike(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per identical verdict: the same config fault on 40 nodes is one line listing
    40 instance ids, not 40 lines."""
    merged: dict[tuple[str, str, str | None, str, str], Finding] = {}
    for finding in findings:
        key = (finding.id, finding.status, finding.priority, finding.title, finding.detail)
        if key not in merged:
            merged[key] = finding.model_copy(deep=True)
            continue
        target = merged[key]
        target.instance_ids += [i for i in finding.instance_ids if i not in target.instance_ids]
        target.nodes += [n for n in finding.nodes if n not in target.nodes]
        target.evidence += finding.evidence
        known = {c.command for c in target.suggested_commands}
        target.suggested_commands += [c for c in finding.suggested_commands if c.command not in known]
    return list(merged.values())
