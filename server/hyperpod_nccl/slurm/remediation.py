"""The Slurm commands the product suggests (never runs), with their blast radius and the
warnings the HyperPod docs attach to them (references/operations.md § 7 and § 9)."""

from __future__ import annotations

from hyperpod_nccl.guard.commands import Word, joined, suggest, value
from hyperpod_nccl.guard.validate import SlurmJobId, SlurmNodeList, SlurmNodeName
from hyperpod_nccl.models import BlastRadius, SuggestedCommand

REPLACE_WARNING = (
    "Running jobs on the node are killed when it is replaced, and its root and secondary volumes "
    "are destroyed: copy logs and local checkpoints first. Never while a replacement is already in "
    "flight, and do not restart slurmctld meanwhile. Not supported on controller nodes."
)


def show_node(node: str) -> SuggestedCommand:
    return suggest(
        "scontrol show node",
        value(SlurmNodeName, node),
        why=f"read {node}'s full state, reason and who set it",
    )


def sinfo_reasons() -> SuggestedCommand:
    return suggest("sinfo -R", why="every down/drained node with its reason, user and time")


def show_jobs_on(node: str) -> SuggestedCommand:
    return suggest(
        "squeue -w",
        value(SlurmNodeName, node),
        why=f"the jobs still on {node}: resuming, failing or downing it affects them",
    )


def resume(nodes: list[str]) -> SuggestedCommand:
    return suggest(
        "scontrol update",
        joined("nodename=", value(SlurmNodeList, ",".join(nodes))),
        "state=resume",
        why="return the node to service, only once the cause in its reason is fixed",
        blast_radius=BlastRadius.CHANGES_CONFIG,
        permission="Slurm operator or admin (SlurmUser/root)",
    )


def replace_slurm_node(node: str) -> tuple[Word, ...]:
    """HyperPod's replacement request for a Slurm node, as argv words."""
    return (
        "scontrol update",
        joined("node=", value(SlurmNodeName, node)),
        'state=fail reason="Action:Replace"',
    )


def replace(node: str) -> SuggestedCommand:
    return suggest(
        *replace_slurm_node(node),
        why=f"HyperPod replaces {node} with a healthy instance under the same host name. {REPLACE_WARNING}",
        blast_radius=BlastRadius.REPLACES_NODE,
        permission="Slurm operator or admin (SlurmUser/root)",
    )


def force_down(node: str) -> SuggestedCommand:
    return suggest(
        "sudo scontrol update",
        joined("node=", value(SlurmNodeName, node)),
        'state=down reason="Action:Replace"',
        why=(
            f"last resort when {node} stays in fail indefinitely: kills every job on it and their "
            "unsaved work. Never while a replacement is in flight."
        ),
        blast_radius=BlastRadius.REPLACES_NODE,
        permission="root (sudo) on the controller",
    )


def release(job_id: str) -> SuggestedCommand:
    return suggest(
        "scontrol release",
        value(SlurmJobId, job_id),
        why="let the held job be scheduled again, once the node fault that failed its launch is handled",
        blast_radius=BlastRadius.RESTARTS_JOB,
        permission="the job's owner or a Slurm operator",
    )


def show_job(job_id: str) -> SuggestedCommand:
    return suggest(
        "scontrol show job -d",
        value(SlurmJobId, job_id),
        why="the job's state, reason, nodes and limits as slurmctld sees them",
    )


def read_batch_script(job_id: str) -> SuggestedCommand:
    return suggest(
        "scontrol write batch_script",
        value(SlurmJobId, job_id),
        "-",
        why="print the job's batch script to check the lines this finding names",
    )
