"""Cause before symptom (issue 14 item 2): one pass over every finding once the origin is chosen.

- One event seen by several sources is one finding: the kernel's OOM kill, the launcher's SIGKILL
  of the same process and Slurm's `oom_kill` line are one kill; an Xid 79 and "GPU has fallen off
  the bus" one fault. The finding kept (the root cause's own, else the family's first) takes the
  others' evidence lines and names their ids in `also_reported_as`; its ranks stay the ranks its
  own evidence names (the pid → rank join), never widened to the whole node.
- The root cause's finding is promoted to FAIL P0 and listed first; a warning stays one when
  nothing in the run failed (a slow run on a fallback transport).
- Its consequences are marked `consequence_of` and demoted to P2: every rank waiting in the
  collective and timing out, peers reporting closed connections or "remote process exited",
  workers torn down, kills and cancellations that came after the cause. Those of the NCCL verdict
  point at the collective-timeout section, not the network one: a rank that never arrived, or a
  step slowed by a fallback transport, is not a fabric fault.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.triage.fatal import JOB_WIDE_IDS
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.root_cause import Candidate

# Families of findings that report one physical event from different sources; the first id of
# a family is the one kept when the root cause is not among them.
SAME_EVENT: tuple[tuple[str, ...], ...] = (
    ("triage.host.oom_killed", "triage.host.slurm_oom", "triage.host.sigkill"),
    ("triage.gpu.fell_off_bus", "triage.gpu.xid_79"),
    ("triage.gpu.ecc", "triage.gpu.xid_48", "triage.gpu.xid_94", "triage.gpu.xid_95", "triage.gpu.xid_63"),
    ("triage.gpu.nvlink", "triage.gpu.xid_74"),
    ("triage.cuda.illegal_address", "triage.gpu.xid_31", "triage.gpu.xid_13"),
    ("triage.infra.node_failure", "triage.infra.node_not_ready"),
)

MISSING_RANKS_ID = "triage.input.missing_ranks"
# Causes that do not fail a run by themselves (a slower transport, a stray connection NCCL may hang on):
# with nothing failed beside them, they stay warnings.
DEGRADING = frozenset(
    {
        "triage.config.tcp_fallback",
        "triage.config.socket_over_ib",
        "triage.config.gdr_disabled",
        "triage.software.foreign_connection",
        "triage.config.collnet_unavailable",
    }
)
# What every failure leaves behind, whatever its cause: the others waiting and timing out, peers
# losing their connections, the processes torn down.
AFTERMATH = frozenset(
    {
        "triage.nccl.all_inside",
        "triage.nccl.all_inside_one_node",
        "triage.nccl.silent_ranks",
        "triage.nccl.silent_exit",
        "triage.nccl.straggler",
        "triage.nccl.busy_outside_nccl",
        MISSING_RANKS_ID,
        "triage.network.remote_error",
        "triage.network.connection_closed",
        "triage.network.ib_flushed",
        "triage.nccl.warn",
        "triage.consequence.worker_exit",
        "triage.consequence.horovod_shutdown",
        "triage.consequence.nccl_error",
        "triage.consequence.task_failure",
        "triage.consequence.dataloader_exit",
        "triage.consequence.heartbeat",
    }
)
# The NCCL verdict's findings: as consequences they are the collective timeout of § 1.
_VERDICT = frozenset(
    {
        "triage.nccl.all_inside",
        "triage.nccl.all_inside_one_node",
        "triage.nccl.silent_ranks",
        "triage.nccl.silent_exit",
        "triage.nccl.straggler",
        "triage.nccl.busy_outside_nccl",
        MISSING_RANKS_ID,
    }
)
TIMEOUT_SECTION = "debugging-guide.md § 1"

# Kills, crashes and cancellations: the teardown when they come after the cause.
_TEARDOWN = frozenset(
    {
        "triage.host.sigkill",
        "triage.host.oom_killed",
        "triage.host.slurm_oom",
        "triage.host.dataloader_killed",
        "triage.unknown.segfault",
        "triage.config.sigbus",
        "triage.infra.cancelled",
        "triage.infra.time_limit",
        "triage.infra.terminated",
        # a traceback cut short below the cause's line: the process the cause brought down
        "triage.software.cut_traceback",
    }
)
# Findings that follow from a cause of a given kind (the origin's id prefix or id).
_FOLLOWS: dict[str, frozenset[str]] = {
    "triage.software.nccl_version_skew": frozenset({"triage.software.message_truncated"}),
    "triage.software.ofi_version_skew": frozenset({"triage.software.message_truncated"}),
    "triage.config.address_in_use": frozenset({"triage.rendezvous.timeout"}),
    "triage.config.address_unavailable": frozenset(
        {"triage.rendezvous.timeout", "triage.config.store_unreachable", "triage.config.socket_connect"}
    ),
    "triage.config.master_addr": frozenset({"triage.rendezvous.timeout", "triage.config.store_unreachable"}),
    "triage.config.store_unreachable": frozenset({"triage.rendezvous.timeout"}),
    "triage.config.efa_plugin": frozenset({"triage.config.tcp_fallback"}),
    # NCCL's invalid-usage code is how the duplicate-GPU refusal its WARN explains reaches the caller
    "triage.software.duplicate_gpu": frozenset({"triage.software.nccl_invalid_usage"}),
    "triage.config.one_device_for_all": frozenset({"triage.software.nccl_invalid_usage"}),
    "triage.gpu.": frozenset(
        {
            "triage.cuda.error",
            "triage.gpu.launch_failure",
            "triage.gpu.missing",
            "triage.cuda.illegal_address",
        },
    ),
}
_CLEARLY_AFTER = timedelta(seconds=1)
_EXCEPTION_ID = "triage.software.exception"


def order_by_cause(findings: list[Finding], origin: Candidate | None, incident: Incident) -> list[Finding]:
    """Merge same-event findings, promote the root cause's finding and mark its consequences."""
    root_id = origin.finding_id if origin else None
    findings = merge_same_events(findings, root_id)
    root = next((f for f in findings if f.id == root_id), None)
    if origin is None or root is None:
        return findings
    if root.id not in DEGRADING or any(f.status == Status.FAIL for f in findings):
        root.status, root.priority = Status.FAIL, Priority.P0
    # else a run that only slowed down on a fallback transport, nothing failed: it stays a warning
    started = origin.when or _first_moment(root, incident)
    quoted = {(e.source, e.line) for e in root.evidence}
    kept = []
    for finding in findings:
        if finding is not root and _follows(finding, root, started, incident):
            # A consequence that quotes only lines the cause already quotes says nothing new, unless
            # what it says is that ranks are missing from the input.
            says_more = finding.id == MISSING_RANKS_ID or not finding.evidence
            if not says_more and all((e.source, e.line) in quoted for e in finding.evidence):
                continue
            demote(finding, root)
        kept.append(finding)
    return kept


def merge_same_events(findings: list[Finding], root_id: str | None) -> list[Finding]:
    by_id = {f.id: f for f in findings}
    gone: set[str] = set()
    for family in SAME_EVENT:
        present = [by_id[i] for i in family if i in by_id]
        if len(present) < 2:
            continue
        keeper = next((f for f in present if f.id == root_id), present[0])
        for other in present:
            if other is not keeper and _same_event(keeper, other):
                _absorb(keeper, other)
                gone.add(other.id)
    return [f for f in findings if f.id not in gone]


def _same_event(one: Finding, other: Finding) -> bool:
    """Reported on the same rank or node; or one of them cannot say where (a job-wide line names
    the host that printed it, not the one it is about)."""
    if set(one.ranks) & set(other.ranks) or set(one.nodes) & set(other.nodes):
        return True
    return any(f.id in JOB_WIDE_IDS or not (f.ranks or f.nodes) for f in (one, other))


def _absorb(keeper: Finding, other: Finding) -> None:
    """The other's evidence joins the keeper's; lines about other ranks than the keeper's own (the
    launcher tearing down a node's neighbours) are left out, so the culprit stays the one named."""
    seen = {(e.source, e.line) for e in keeper.evidence}
    own = set(keeper.ranks)
    for item in other.evidence:
        if (item.source, item.line) in seen or (own and item.rank is not None and item.rank not in own):
            continue
        keeper.evidence.append(item)
        seen.add((item.source, item.line))
    if not keeper.ranks and not keeper.nodes:
        keeper.ranks, keeper.nodes = list(other.ranks), list(other.nodes)
    elif not keeper.nodes:
        keeper.nodes = list(other.nodes)
    keeper.also_reported_as = [*keeper.also_reported_as, other.id, *other.also_reported_as]
    if other.priority == Priority.P0 and keeper.priority != Priority.P0:
        keeper.status, keeper.priority = Status.FAIL, Priority.P0


def _follows(finding: Finding, root: Finding, started: datetime | None, incident: Incident) -> bool:
    if finding.id in AFTERMATH or _continued_by(finding, root):
        return True
    for cause, effects in _FOLLOWS.items():
        if root.id.startswith(cause) and finding.id in effects:
            return True
    return finding.id in _TEARDOWN and _came_after(finding, root, started, incident)


def _continued_by(finding: Finding, root: Finding) -> bool:
    """An exception whose message the cause's line continues (`RuntimeError: Failed to receive CUDA IPC
    handle …` with `(pidfd_getfd: Operation not permitted).` below it): one message, the cause its end."""
    if finding.id != _EXCEPTION_ID or not finding.evidence:
        return False
    continued = {(e.source, e.line - step) for e in root.evidence if e.line is not None for step in (1, 2)}
    return all((e.source, e.line) in continued for e in finding.evidence)


def _came_after(finding: Finding, root: Finding, started: datetime | None, incident: Incident) -> bool:
    """By time where both are dated; else by position, where both quote lines of the same file."""
    first = _first_moment(finding, incident)
    if started is not None and first is not None:
        return first - started >= _CLEARLY_AFTER
    root_lines = {}
    for item in root.evidence:
        if item.line is not None:
            root_lines[item.source] = min(item.line, root_lines.get(item.source, item.line))
    return any(
        item.line is not None and item.source in root_lines and item.line > root_lines[item.source]
        for item in finding.evidence
    )


def _first_moment(finding: Finding, incident: Incident) -> datetime | None:
    """When the lines of the finding's meaning first happened (rule findings are not dated here)."""
    group = incident.groups.get(finding.id)
    return incident.at(incident.first(group.events)) if group else None


def demote(finding: Finding, root: Finding) -> None:
    """A consequence: P2, WARN at most, pointing where it fits, with no command of its own."""
    finding.consequence_of = root.id
    if finding.is_issue:
        finding.status, finding.priority = Status.WARN, Priority.P2
    if finding.id in _VERDICT:
        finding.reference = TIMEOUT_SECTION
        if finding.id in ("triage.nccl.all_inside", "triage.nccl.all_inside_one_node"):
            finding.detail = (
                "Every rank waited inside the collective until the timeout: what the cause below did to "
                "the job, not a fault of its own."
            )
    finding.detail = f"A consequence of {root.id} ({root.title}). {finding.detail}".strip()
    finding.suggested_commands = []
    finding.no_command_reason = f"a consequence of {root.id}: run that finding's commands"
