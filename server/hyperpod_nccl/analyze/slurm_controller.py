"""Is slurmctld up and answering, is its backup up, and does munge authenticate?

Without a controller nothing schedules, resumes or replaces: a DOWN primary blocks training.
"""

from __future__ import annotations

from hyperpod_nccl.guard.commands import suggest
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.slurm import SlurmSnapshot

_PING = suggest("scontrol ping", why="ask each controller whether it answers")
_CTLD_STATUS = suggest(
    "systemctl status slurmctld --no-pager",
    why="is the daemon running on the controller node, and why did it stop",
)
_MUNGE_STATUS = suggest(
    "systemctl status munge --no-pager",
    why="munged must run on every node with the same key for Slurm to authenticate",
)


def _evidence(slurm: SlurmSnapshot) -> list[Evidence]:
    lines = [ping.text for ping in slurm.controller.pings]
    if slurm.controller.contact_error:
        lines.append(slurm.controller.contact_error)
    return [Evidence(source="scontrol ping", text=text, node=slurm.controller_node) for text in lines]


def _primary_down(slurm: SlurmSnapshot) -> Finding:
    primary = next((p for p in slurm.controller.pings if p.role == "primary"), None)
    where = f" at {primary.host}" if primary else ""
    return Finding(
        id="slurm.controller.down",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"slurmctld{where} is DOWN or not answering",
        reference="operations.md § 7",
        detail=(
            "No job can be scheduled, resumed or requeued and HyperPod cannot run node replacements "
            "while the controller is down. Check the daemon and its log on the controller node."
        ),
        nodes=[primary.host] if primary else [],
        evidence=_evidence(slurm),
        suggested_commands=[_PING, _CTLD_STATUS],
    )


def _backup_down(slurm: SlurmSnapshot) -> list[Finding]:
    down = [p for p in slurm.controller.pings if p.role != "primary" and not p.up]
    if not down:
        return []
    return [
        Finding(
            id="slurm.controller.backup_down",
            status=Status.WARN,
            priority=Priority.P2,
            title=f"backup slurmctld down: {', '.join(p.host for p in down)}",
            reference="operations.md § 7",
            detail="The primary answers, but there is no failover if it stops.",
            nodes=[p.host for p in down],
            evidence=_evidence(slurm),
            suggested_commands=[_PING],
        )
    ]


def _munge(slurm: SlurmSnapshot) -> list[Finding]:
    if slurm.controller.munge_ok is not False:
        return []
    return [
        Finding(
            id="slurm.controller.munge",
            status=Status.FAIL,
            priority=Priority.P0,
            title="munge cannot encode and decode a credential on the controller",
            reference="operations.md § 7",
            detail="Slurm daemons and commands authenticate through munge; without it nodes drop out.",
            evidence=[Evidence(source="munge -n | unmunge", text=slurm.controller.munge_text or "failed")],
            suggested_commands=[_MUNGE_STATUS],
        )
    ]


def analyze_slurm_controller(snapshot: Snapshot) -> list[Finding]:
    slurm = snapshot.slurm
    if slurm is None:
        return []
    controller = slurm.controller
    if controller.reachable is False or any(p.role == "primary" and not p.up for p in controller.pings):
        return [_primary_down(slurm), *_munge(slurm)]
    findings = _backup_down(slurm) + _munge(slurm)
    if controller.reachable:
        version = f" (Slurm {slurm.version})" if slurm.version else ""
        findings.append(
            Finding(
                id="slurm.controller.up",
                status=Status.PASS,
                title=f"slurmctld answers{version}" + (", munge OK" if controller.munge_ok else ""),
                evidence=_evidence(slurm),
            )
        )
    return findings
