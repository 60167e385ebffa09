"""Host limits per probed node that break NCCL while looking like network errors: memlock (EFA
must pin memory), stack, /dev/shm size and fill, stale NCCL shm segments, systemd's RemoveIPC on
Slurm, and firewall rules that drop traffic."""

from __future__ import annotations

from hyperpod_nccl.analyze.node_common import (
    ProbedNode,
    config_change,
    merge_alike,
    on_node,
    probed_nodes,
)
from hyperpod_nccl.guard.commands import Command, Operator, value
from hyperpod_nccl.guard.validate import ProcessName
from hyperpod_nccl.models import Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.probes.parse.efa import EXPECTED_EFA_DEVICES
from hyperpod_nccl.probes.parse.host import Limit
from hyperpod_nccl.snapshot import Snapshot

LIMITS = "debugging-guide.md § 17"
MIN_MEMLOCK_KIB = 1024 * 1024  # EFA registers GPU and host buffers far beyond this
MIN_STACK_KIB = 8192  # the common Linux default; less breaks deep native stacks
MIN_SHM_KIB = 1024 * 1024
SHM_FULL = 0.9
# Jobs inherit limits from the daemon that starts them, not from the probe's shell.
JOB_PARENTS = ("slurmd", "containerd", "dockerd")


def _human(kib: int) -> str:
    for unit, size in (("GiB", 1024 * 1024), ("MiB", 1024)):
        if kib >= size:
            return f"{kib / size:g} {unit}"
    return f"{kib} KiB"


def _job_limits(limits: list[Limit]) -> list[Limit]:
    daemons = [limit for limit in limits if limit.owner in JOB_PARENTS]
    return daemons or limits


_LIMIT_EFFECT = {
    "memlock": "EFA memory registration fails (ibv_reg_mr: 'Cannot allocate memory').",
    "stack": "deep native stacks can overflow.",
}
_SYSTEMD_LIMIT = {"memlock": "LimitMEMLOCK=infinity", "stack": "LimitSTACK=infinity"}


def _limit_fixes(node: ProbedNode, kind: str, low: list[Limit]) -> list[SuggestedCommand]:
    owners = [limit.owner for limit in low]
    label = "locked memory" if kind == "memlock" else "stack size"
    daemons = [owner for owner in owners if owner != "shell"]
    if not daemons:
        return [
            on_node(node, "ulimit -l" if kind == "memlock" else "ulimit -s"),
            config_change(
                f"echo '* - {kind} unlimited'",
                "|",
                f"sudo tee /etc/security/limits.d/90-{kind}.conf",
                why="New logins pick it up.",
            ),
        ]
    # The limits of the running daemon, not of a fresh shell: what its jobs inherit.
    check: list[Command | Operator] = []
    for daemon in daemons:
        check += [";"] if check else []
        check += [
            ["pgrep -xo", value(ProcessName, daemon)],
            "|",
            f"xargs -I{{}} grep -i '{label}' /proc/{{}}/limits",
        ]
    commands = [on_node(node, *check)]
    for daemon in daemons:
        why = f"Add [Service] {_SYSTEMD_LIMIT[kind]}, then restart {daemon} with no job on the node."
        commands.append(config_change(["sudo systemctl edit", value(ProcessName, daemon)], why=why))
    return commands


def _limit_finding(node: ProbedNode, kind: str, low: list[Limit], minimum: int) -> Finding:
    owners = ", ".join("the probe's shell" if limit.owner == "shell" else limit.owner for limit in low)
    memlock = kind == "memlock"
    return Finding(
        id=f"node.limits.{kind}",
        status=Status.FAIL if memlock else Status.WARN,
        priority=Priority.P0 if memlock else Priority.P1,
        title=f"{kind} limit is {_human(min(lim.kib or 0 for lim in low))} for processes started by {owners}",
        reference=LIMITS,
        detail=f"Below {_human(minimum)}: {_LIMIT_EFFECT[kind]} Jobs inherit their parent daemon's limit.",
        evidence=[node.evidence(limit.line) for limit in low],
        suggested_commands=_limit_fixes(node, kind, low),
        **node.scope(),
    )


def _pins_memory(node: ProbedNode) -> bool:
    """memlock only matters where RDMA registers memory: EFA nodes."""
    efa = node.facts.efa
    return bool(efa.devices or efa.efa_domains) or (node.instance_type or "") in EXPECTED_EFA_DEVICES


def _limit_findings(node: ProbedNode) -> list[Finding]:
    findings = []
    checks = [("stack", node.facts.host.stack, MIN_STACK_KIB)]
    if _pins_memory(node):
        checks.append(("memlock", node.facts.host.memlock, MIN_MEMLOCK_KIB))
    for kind, limits, minimum in checks:
        low = [limit for limit in _job_limits(limits) if limit.kib is not None and 0 <= limit.kib < minimum]
        if low:
            findings.append(_limit_finding(node, kind, low, minimum))
    return findings


def _shm(node: ProbedNode) -> list[Finding]:
    host = node.facts.host
    if host.shm_size_kib is None or not host.shm_size_kib.value.isdigit():
        return []
    size = int(host.shm_size_kib.value)
    findings = []
    if size < MIN_SHM_KIB:
        findings.append(
            Finding(
                id="node.limits.shm_small",
                status=Status.FAIL,
                priority=Priority.P0,
                title=f"/dev/shm is {_human(size)}",
                reference=LIMITS,
                detail="NCCL's intra-node transport and DataLoader workers need far more: "
                "'failed to extend /dev/shm', bus errors. Size /dev/shm for the job.",
                evidence=[node.evidence(host.shm_size_kib.line)],
                suggested_commands=[
                    on_node(node, "df -h /dev/shm"),
                    config_change(
                        "sudo mount -o remount,size=50% /dev/shm", why="Half of RAM, as tmpfs defaults to."
                    ),
                ],
                **node.scope(),
            )
        )
    elif size and host.shm_used_kib / size >= SHM_FULL:
        findings.append(
            Finding(
                id="node.limits.shm_full",
                status=Status.FAIL,
                priority=Priority.P1,
                title=f"/dev/shm on {node.label} is {host.shm_used_kib * 100 // size}% full",
                reference=LIMITS,
                detail="Stale NCCL files or another job hold the space; the next job cannot grow its files.",
                evidence=[node.evidence(host.shm_size_kib.line)],
                suggested_commands=[on_node(node, "ls -la /dev/shm", "|", "sort -k5 -n", "|", "tail")],
                **node.scope(),
            )
        )
    return findings


def _stale_shm(node: ProbedNode) -> Finding | None:
    stale = node.facts.host.stale_shm_files
    if not stale:
        return None
    return Finding(
        id="node.limits.stale_nccl_shm",
        status=Status.WARN,
        priority=Priority.P2,
        title=f"{len(stale)} NCCL shared-memory file(s) older than an hour in /dev/shm on {node.label}",
        reference=LIMITS,
        detail=f"{node.facts.host.nccl_shm_files} nccl-* file(s) in all. Left by a killed job, they hold "
        "/dev/shm space; remove them only with no job on the node.",
        evidence=[node.evidence(line) for line in stale[:4]],
        suggested_commands=[
            on_node(node, "find /dev/shm -maxdepth 1 -name 'nccl-*' -ls"),
            config_change(
                "sudo find /dev/shm -maxdepth 1 -name 'nccl-*' -mmin +60 -delete",
                why="Only with no job running on the node.",
            ),
        ],
        **node.scope(),
    )


def _remove_ipc(node: ProbedNode) -> Finding | None:
    setting = node.facts.host.remove_ipc
    if node.orchestrator != "slurm" or (setting is not None and setting.value == "no"):
        return None
    return Finding(
        id="node.limits.remove_ipc",
        status=Status.WARN,
        priority=Priority.P1,
        title="systemd RemoveIPC is on (the default) on a Slurm node",
        reference=LIMITS,
        detail="logind deletes a user's shared memory when their last session ends, under a running job. "
        "Set RemoveIPC=no in /etc/systemd/logind.conf.",
        evidence=[node.evidence(setting.line)] if setting else [],
        suggested_commands=[
            on_node(node, "grep -i RemoveIPC /etc/systemd/logind.conf"),
            config_change(
                "sudo sed -i 's/^#\\?RemoveIPC=.*/RemoveIPC=no/' /etc/systemd/logind.conf",
                "&&",
                "sudo systemctl restart systemd-logind",
                why="Keeps shared memory of jobs alive when a user's last session ends.",
            ),
        ],
        **node.scope(),
    )


def _firewall(node: ProbedNode) -> Finding | None:
    drops = node.facts.host.firewall_drops
    if not drops:
        return None
    return Finding(
        id="node.net.firewall_drops",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"Host firewall drops or rejects traffic on {node.label}",
        reference="operations.md § 8",
        detail="NCCL bootstrap and socket traffic use ephemeral ports between nodes; a DROP/REJECT rule on "
        "INPUT/OUTPUT can stall rendezvous or fall-back transports.",
        evidence=[node.evidence(line) for line in drops[:5]],
        suggested_commands=[on_node(node, "sudo iptables -S", "|", "grep -E 'DROP|REJECT'")],
        **node.scope(),
    )


def _node_findings(node: ProbedNode) -> list[Finding]:
    findings = _limit_findings(node) + _shm(node)
    findings += [f for f in (_stale_shm(node), _remove_ipc(node), _firewall(node)) if f is not None]
    if not any(f.is_issue for f in findings) and node.facts.host.memlock:
        title = "memlock, stack and /dev/shm limits are sufficient"
        findings.append(Finding(id="node.limits.ok", status=Status.PASS, title=title, **node.scope()))
    return findings


def analyze_node_limits(snapshot: Snapshot) -> list[Finding]:
    return merge_alike(f for node in probed_nodes(snapshot) for f in _node_findings(node))
