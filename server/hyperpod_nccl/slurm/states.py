"""Slurm node states, their flags, and what the reasons slurmctld writes mean.

Slurm prints a node's state two ways: the long form of `scontrol show node`
(`IDLE+DRAIN+NOT_RESPONDING`, or `DOWN*` in older releases) and the compact form of `sinfo %t`
(`drain*`, `drng`, `mix-`, `idle~`). Both reduce to one base state plus a set of flags here, so
the analyzers never look at either spelling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# sinfo's suffix symbols (src/common/slurm_protocol_defs.c) and the long flag each stands for.
SUFFIX_FLAGS = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "%": "POWERING_DOWN",
    "$": "MAINTENANCE",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "!": "POWER_DOWN",
    "-": "PLANNED",
}

FLAG_MEANING = {
    "NOT_RESPONDING": "slurmd on the node is not answering the controller",
    "POWERED_DOWN": "powered off",
    "POWERING_UP": "powering up",
    "POWERING_DOWN": "powering down",
    "MAINTENANCE": "in a maintenance reservation (HyperPod uses one during deep health checks)",
    "REBOOT_REQUESTED": "reboot pending",
    "REBOOT_ISSUED": "reboot issued",
    "POWER_DOWN": "pending power down",
    "PLANNED": "planned for a pending job",
    "DRAIN": "drain requested: no new jobs",
    "FAIL": "marked failed: on HyperPod the replacement trigger",
    "COMPLETING": "jobs still completing",
}

# sinfo's compact base names → long base state and the flags they imply.
_COMPACT = {
    "idle": ("IDLE", ()),
    "mix": ("MIXED", ()),
    "alloc": ("ALLOCATED", ()),
    "comp": ("IDLE", ("COMPLETING",)),
    "drain": ("IDLE", ("DRAIN",)),
    "drng": ("ALLOCATED", ("DRAIN",)),
    "down": ("DOWN", ()),
    "fail": ("IDLE", ("FAIL",)),
    "failg": ("ALLOCATED", ("FAIL",)),
    "boot": ("IDLE", ("REBOOT_ISSUED",)),
    "resv": ("IDLE", ("RESERVED",)),
    "maint": ("IDLE", ("MAINTENANCE",)),
    "plnd": ("IDLE", ("PLANNED",)),
    "futr": ("FUTURE", ()),
    "unk": ("UNKNOWN", ()),
    "inval": ("UNKNOWN", ("INVALID_REG",)),
    "pow_dn": ("IDLE", ("POWERED_DOWN",)),
    "pow_up": ("IDLE", ("POWERING_UP",)),
    "npc": ("UNKNOWN", ()),
    "blocked": ("IDLE", ("BLOCKED",)),
}
_LONG_ALIASES = {"MIX": "MIXED", "ALLOC": "ALLOCATED", "DRAINED": "IDLE", "DRAINING": "ALLOCATED"}
_BUSY = {"ALLOCATED", "MIXED"}


@dataclass(frozen=True)
class NodeState:
    """One node's state as base + flags, with the condition an operator would call it."""

    base: str
    flags: frozenset[str]

    @property
    def condition(self) -> str:
        """drained, draining, down, fail, failing, or the plain base state in lower case."""
        if self.base == "DOWN":
            return "down"
        if "FAIL" in self.flags:
            return "failing" if self.base in _BUSY else "fail"
        if "DRAIN" in self.flags:
            return "draining" if self.base in _BUSY else "drained"
        return self.base.lower()

    @property
    def unusable(self) -> bool:
        return self.condition in {"down", "fail", "failing", "drained", "draining"} or (
            "NOT_RESPONDING" in self.flags
        )

    def describe(self) -> str:
        extras = [FLAG_MEANING.get(flag, flag.lower()) for flag in sorted(self.flags - {"DRAIN", "FAIL"})]
        return self.condition + (f" ({'; '.join(extras)})" if extras else "")


def _strip_suffixes(text: str) -> tuple[str, set[str]]:
    flags = set()
    while text and text[-1] in SUFFIX_FLAGS:
        flags.add(SUFFIX_FLAGS[text[-1]])
        text = text[:-1]
    return text, flags


def parse_state(text: str) -> NodeState:
    """`IDLE+DRAIN`, `DOWN*+DRAIN`, `drng@`, `MIXED-`, `drained*` → base + flags."""
    text = text.strip()
    parts = text.split("+")
    head, flags = _strip_suffixes(parts[0])
    for part in parts[1:]:
        name, more = _strip_suffixes(part)
        flags |= more | {name.upper()}
    if head.lower() in _COMPACT:
        base, implied = _COMPACT[head.lower()]
        return NodeState(base, frozenset(flags | set(implied)))
    upper = head.upper()
    if upper in ("DRAINED", "DRAINING"):
        flags.add("DRAIN")
    if upper in ("FAILING", "FAIL"):
        flags.add("FAIL")
        upper = "ALLOCATED" if upper == "FAILING" else "IDLE"
    if upper == "NOT_RESPONDING":
        flags.add("NOT_RESPONDING")
        upper = "UNKNOWN"
    return NodeState(_LONG_ALIASES.get(upper, upper), frozenset(flags))


@dataclass(frozen=True)
class ReasonMeaning:
    kind: str
    meaning: str
    hardware: bool


# slurmctld-set reasons (log-formats §8.4) and the replacement marker from the HyperPod docs.
_REASONS: list[tuple[re.Pattern[str], ReasonMeaning]] = [
    (
        re.compile(
            r"(?<!\w)(?P<gres>\w{1,64}) count reported lower than configured \((?P<have>\d+) < (?P<cfg>\d+)\)"
        ),
        ReasonMeaning(
            "gres_mismatch",
            "the node reported fewer GPUs (GRES) than slurm.conf configures: a GPU vanished "
            "(fell off the bus, driver fault) or gres.conf is wrong",
            hardware=True,
        ),
    ),
    (
        re.compile(r"Kill task failed", re.I),
        ReasonMeaning(
            "kill_task_failed",
            "a job process would not die when the job ended: often a hung GPU or I/O stuck in D state",
            hardware=True,
        ),
    ),
    (
        re.compile(r"Not responding", re.I),
        ReasonMeaning(
            "not_responding",
            "slurmd stopped answering the controller: node hung, rebooted, or network loss",
            hardware=True,
        ),
    ),
    (
        re.compile(r"Low RealMemory", re.I),
        ReasonMeaning(
            "low_real_memory",
            "the node registered less memory than slurm.conf configures: failed memory, or RealMemory "
            "set too high",
            hardware=True,
        ),
    ),
    (
        re.compile(r"Low socket\*core\*thread count", re.I),
        ReasonMeaning("low_cpu_count", "the node registered fewer CPUs than configured", hardware=True),
    ),
    (
        re.compile(r"Node unexpectedly rebooted", re.I),
        ReasonMeaning("unexpected_reboot", "the node rebooted without being asked to", hardware=True),
    ),
    (
        re.compile(r"(Prolog|Epilog) error", re.I),
        ReasonMeaning(
            "prolog_epilog_error", "the prolog or epilog script failed on this node", hardware=False
        ),
    ),
    (
        re.compile(r"batch job complete failure", re.I),
        ReasonMeaning(
            "batch_complete_failure", "the batch step could not be completed cleanly", hardware=False
        ),
    ),
    (
        re.compile(r"NO NETWORK ADDRESS FOUND", re.I),
        ReasonMeaning("no_address", "the controller cannot resolve the node's address", hardware=False),
    ),
    (
        re.compile(r"Action:Replace", re.I),
        ReasonMeaning(
            "replacement_requested",
            "marked for HyperPod node replacement: do not change its state or restart slurmctld meanwhile",
            hardware=True,
        ),
    ),
    (
        re.compile(r"^NHC|health ?check", re.I),
        ReasonMeaning("health_check", "a site health check drained the node (site-specific)", hardware=True),
    ),
]

GRES_MISMATCH = _REASONS[0][0]
_REASON_SUFFIX = re.compile(r"\s*\[[^\]@]*@[^\]]*\]\s*$")


def strip_reason_stamp(reason: str) -> str:
    """`Kill task failed [root@2024-05-01T10:00:00]` → `Kill task failed`."""
    return _REASON_SUFFIX.sub("", reason).strip()


def reason_meaning(reason: str) -> ReasonMeaning | None:
    for pattern, meaning in _REASONS:
        if pattern.search(reason):
            return meaning
    return None
