"""The report contract (shared/CONTRACT.md v1) as pydantic models.

Tools, tests and outside checks read the JSON these models produce, so fields are only ever
added, never renamed or removed. Everything a diagnostic concludes ends up in one `Report`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, model_validator

from hyperpod_nccl.bounded import ShortText, Text

SCHEMA_VERSION = 1

_POINTER_FORM = "'<file>.md § <section>'"
REFERENCE_POINTER = re.compile(r"^(?P<file>[a-z0-9][a-z0-9-]*\.md) § (?P<section>\S.*)$")


class Status(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    WARN = "WARN"
    INFO = "INFO"


class Priority(StrEnum):
    P0 = "P0"  # blocks training
    P1 = "P1"  # degraded
    P2 = "P2"  # informational


PRIORITY_MEANING = {
    Priority.P0: "blocks training",
    Priority.P1: "degraded",
    Priority.P2: "informational",
}


class Category(StrEnum):
    DATA_LOADING_STALL = "data_loading_stall"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    NETWORK = "network"
    GPU_HARDWARE = "gpu_hardware"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    STORAGE_IO = "storage_io"
    SOFTWARE = "software"
    CONFIG = "config"
    RENDEZVOUS = "rendezvous"
    INFRASTRUCTURE = "infrastructure"
    DATA = "data"
    UNKNOWN = "unknown"


class BlastRadius(StrEnum):
    """What running a suggested command does to the cluster, from harmless to destructive."""

    READ_ONLY = "read-only check"
    RESTARTS_POD = "restarts a pod"
    RESTARTS_JOB = "restarts the training job"
    CHANGES_CONFIG = "changes cluster or job configuration"
    DRAINS_OR_REBOOTS_NODE = "drains or reboots a node"
    REPLACES_NODE = "replaces a node and destroys its volumes"


# Fields added after v1 that are printed only when they say something (`exclude_if=_empty`): a
# reader that knows them gets their default back, one that does not never sees them, and a
# 1,024-rank report stays in its size budget.
def _empty(value: object) -> bool:
    return not value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False)


class Evidence(_Model):
    """One observation that supports a finding: a log line, an API field, a probe output line."""

    source: ShortText = Field(description="File name, API call or probe section the text came from.")
    line: PositiveInt | None = Field(default=None, description="1-based line number within source.")
    text: Text = Field(description="The line as read (secrets redacted).")
    rank: int | None = Field(default=None, description="Global rank that wrote the line, when known.")
    node: ShortText | None = Field(default=None, description="Host name the line came from, when known.")
    instance_id: ShortText | None = Field(default=None, description="EC2 instance id, when known.")
    record_id: int | None = Field(
        default=None, description="Flight Recorder record id, when the source is a dump rather than a log."
    )


class SuggestedCommand(_Model):
    """A command for the user to run themselves. The product never runs it."""

    command: Text
    why: Text
    blast_radius: BlastRadius = Field(description="What running it does to the cluster.")
    permission: ShortText | None = Field(
        default=None, description="IAM action or Kubernetes RBAC verb the command needs."
    )


class Finding(_Model):
    id: str = Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)+$", description="Stable dotted identifier.")
    status: Status
    priority: Priority | None = None
    title: ShortText
    reference: str | None = Field(
        default=None, description="`<file>.md § <section>` under references/; required on FAIL/WARN."
    )
    detail: Text = Field(default="", description="What the finding means, in a sentence or two.")
    ranks: list[int] = Field(default_factory=list)
    nodes: list[ShortText] = Field(default_factory=list)
    instance_ids: list[ShortText] = Field(default_factory=list)
    pods: list[ShortText] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    suggested_commands: list[SuggestedCommand] = Field(default_factory=list)
    no_command_reason: ShortText | None = Field(
        default=None,
        description="Why no command applies, on a FAIL/WARN whose `suggested_commands` is empty.",
        exclude_if=_empty,
    )
    consequence_of: str | None = Field(
        default=None,
        description="Id of the root-cause finding this one follows from: demoted, not a separate cause.",
        exclude_if=_empty,
    )
    also_reported_as: list[str] = Field(
        default_factory=list,
        description="Ids of findings merged into this one: the same event as other sources report it.",
        exclude_if=_empty,
    )

    @model_validator(mode="after")
    def _issues_carry_priority_and_reference(self) -> Self:
        if self.status in (Status.FAIL, Status.WARN):
            if self.priority is None:
                raise ValueError(f"finding {self.id}: {self.status} needs a priority")
            if self.reference is None:
                raise ValueError(f"finding {self.id}: {self.status} needs a reference")
        if self.reference is not None and not REFERENCE_POINTER.match(self.reference):
            raise ValueError(f"finding {self.id}: reference {self.reference!r} is not {_POINTER_FORM}")
        return self

    @property
    def is_issue(self) -> bool:
        return self.status in (Status.FAIL, Status.WARN)


class RootCause(_Model):
    category: Category
    summary: Text
    culprit_ranks: list[int] = Field(default_factory=list)
    culprit_nodes: list[ShortText] = Field(default_factory=list)
    chain: list[Text] = Field(default_factory=list, description="From the first trigger to the final crash.")
    confidence: Literal["high", "medium", "low"]
    ruled_out: list[Text] = Field(
        default_factory=list, description="Causes considered and excluded, and why."
    )
    # Added for the cluster diagnostic; left out of the JSON when empty, so a triage report's
    # bytes do not change.
    culprit_instance_ids: list[ShortText] = Field(
        default_factory=list,
        exclude_if=_empty,
        description="EC2 instance ids behind culprit_nodes (cluster diagnostic).",
    )
    culprit_pods: list[ShortText] = Field(
        default_factory=list,
        exclude_if=_empty,
        description="`namespace/pod` of the culprit ranks (cluster diagnostic).",
    )
    finding: str | None = Field(
        default=None, description="Id of the finding that is the root cause: the first one listed."
    )


class TimelineEvent(_Model):
    time: str | None = Field(
        description="ISO 8601; ends in `Z` only when the source says the time is UTC (a zone-less log "
        "time is printed as written: see the job's `time_zone`); null when the source carries no usable time."
    )
    source: ShortText = Field(description="`file:line` or the API the event came from.")
    event: Text
    rank: int | None = None
    node: ShortText | None = None
    # What else the entry touches, for the cluster timeline; left out of the JSON when empty.
    instance_id: ShortText | None = Field(default=None, exclude_if=_empty, description="EC2 instance id.")
    pod: ShortText | None = Field(default=None, exclude_if=_empty, description="`namespace/pod`.")
    ranks: str | None = Field(
        default=None, exclude_if=_empty, description="Global ranks it touches, as ranges (`8-15`)."
    )
    derived: bool = Field(
        default=False,
        exclude_if=_empty,
        description="True when the time is computed, not read (the stuck collective's start is the "
        "watchdog's time minus its Timeout(ms)).",
    )


class SkippedInput(_Model):
    """An input the diagnostic could not (fully) use, and why. Never silently dropped."""

    source: ShortText
    reason: Text


class RankStateGroup(_Model):
    """Ranks that share one NCCL watchdog state, listed as ranges (`0-76,78-1023`).

    Identical per-rank facts collapse into one group; a rank that differs gets a group of its own.
    """

    ranks: str = Field(description="Global ranks as ranges, e.g. `0-76,78-1023`.")
    count: NonNegativeInt
    state: Text = Field(description="What these ranks were doing when the job failed.")
    watchdog: Literal["fired", "notified", "none"] = Field(
        description="fired: own watchdog timed out; notified: observed another rank's dump signal; "
        "none: left no watchdog line."
    )
    process_group: str | None = None
    seq: int | None = Field(default=None, description="SeqNum of the collective that timed out.")
    op: str | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    timeout_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    nodes: list[str] = Field(default_factory=list, description="Hosts of these ranks (small groups only).")


class VersionGroup(_Model):
    """Nodes that run the same torch / NCCL / aws-ofi-nccl versions."""

    node_count: NonNegativeInt
    nodes: list[str] = Field(default_factory=list, description="Named when few; empty for a large majority.")
    torch: str | None = None
    nccl: str | None = None
    aws_ofi_nccl: str | None = None


class LogLine(_Model):
    """One line quoted from a log, with where it is and when it was written."""

    source: ShortText
    line: PositiveInt | None = None
    text: Text
    time: str | None = Field(default=None, description="As written in the line (see the job's `time_zone`).")


class RankLine(_Model):
    """One line of a rank's own log (the file is its activity's `source`)."""

    line: PositiveInt
    text: Text
    time: str | None = Field(default=None, description="As written in the line (see the job's `time_zone`).")


class RankActivity(_Model):
    """What one rank was doing before the failure: a culprit, or one waiting rank to compare it with."""

    rank: int
    node: ShortText | None = None
    role: Literal["culprit", "waiting"]
    source: ShortText = Field(description="The log file the lines below come from.")
    until: ShortText = Field(description="The line the look-back stops at (`line`, what it is).")
    last_progress: RankLine | None = Field(
        default=None, description="Its last training step or progress line before `until`."
    )
    before: list[RankLine] = Field(
        default_factory=list,
        description="The last few other non-NCCL lines it wrote after `last_progress` and before `until`.",
    )
    note: ShortText | None = Field(
        default=None, description="Why nothing (or less) could be shown.", exclude_if=_empty
    )


class TransportGroup(_Model):
    """Nodes whose NCCL selected the same network transport and NIC count."""

    transport: ShortText = Field(description="EFA (aws-ofi-nccl), IB, Socket (TCP), libfabric tcp, ….")
    nics: int | None = Field(default=None, description="NICs NCCL found or used, when a line says so.")
    node_count: NonNegativeInt
    nodes: list[ShortText] = Field(
        default_factory=list, description="Named when few; empty for a large group."
    )
    evidence: LogLine


class RankSpan(_Model):
    """Ranks whose logs start and end within the same minutes."""

    ranks: str = Field(description="Global ranks as ranges, e.g. `0-42,44-63`.")
    count: NonNegativeInt
    first: str | None = Field(description="Earliest time a line of these ranks carries.")
    last: str | None = Field(description="Latest time a line of these ranks carries.")


class ResumeState(_Model):
    resumed: Literal["yes", "no", "not detected"]
    evidence: LogLine | None = None


class RunOutcome(_Model):
    outcome: Literal["completed", "crashed", "never started", "still running or cut short", "unknown"]
    why: ShortText
    evidence: LogLine | None = None


class JobSummary(_Model):
    """What the logs say about the job itself."""

    framework: str | None = None
    world_size: int | None = None
    world_size_stated: bool | None = Field(
        default=None,
        description="True when a line states the world size; False when it is only the highest rank seen "
        "plus one (a paste of a few ranks says little about the job's size).",
    )
    nodes: NonNegativeInt = 0
    ranks_per_node: int | None = None
    rank_map: list[str] = Field(
        default_factory=list, description="`host: ranks` lines; capped for large jobs (see rank_map_note)."
    )
    rank_map_note: str | None = None
    resumed_from_checkpoint: bool | None = None
    versions: list[VersionGroup] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="How times and identities were inferred.")
    job_id: ShortText | None = Field(default=None, description="Slurm job id, when a file name or line says.")
    time_zone: ShortText = Field(
        default="local, zone unknown",
        description="The zone of the times in this report: `UTC` only when the logs say so.",
    )
    outcome: RunOutcome | None = None
    resume: ResumeState | None = None
    rank_times: list[RankSpan] = Field(
        default_factory=list, description="First and last time each rank's lines carry, grouped by minute."
    )
    transports: list[TransportGroup] = Field(
        default_factory=list, description="The network transport each node's NCCL selected, grouped."
    )


class Summary(_Model):
    issues_found: NonNegativeInt
    p0: NonNegativeInt
    p1: NonNegativeInt
    p2: NonNegativeInt
    files_read: NonNegativeInt = 0
    ranks_seen: NonNegativeInt = 0


_STATUS_ORDER = {Status.FAIL: 0, Status.WARN: 1, Status.INFO: 2, Status.PASS: 3}
_PRIORITY_ORDER = {Priority.P0: 0, Priority.P1: 1, Priority.P2: 2, None: 3}


def finding_sort_key(finding: Finding) -> tuple[int, int, str]:
    return (_PRIORITY_ORDER[finding.priority], _STATUS_ORDER[finding.status], finding.id)


class Report(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["triage", "diagnose"]
    summary: Summary
    findings: list[Finding] = Field(default_factory=list)
    root_cause: RootCause | None = None
    timeline: list[TimelineEvent] = Field(default_factory=list)
    skipped: list[SkippedInput] = Field(default_factory=list)
    job: JobSummary | None = Field(default=None, description="Job summary (triage reports).")
    rank_states: list[RankStateGroup] = Field(
        default_factory=list, description="NCCL state of every rank, grouped (triage reports)."
    )
    omitted: list[str] = Field(
        default_factory=list,
        description="What the size budget left out, list by list, e.g. `timeline: +8 more`.",
    )
    activity: list[RankActivity] = Field(
        default_factory=list,
        description="What each culprit rank, and one waiting rank, wrote before the failure (triage).",
    )

    @classmethod
    def build(
        cls,
        kind: Literal["triage", "diagnose"],
        findings: list[Finding],
        *,
        files_read: int = 0,
        ranks_seen: int = 0,
        lead: str | None = None,
        **fields: object,
    ) -> Report:
        """Assemble a report whose summary is derived from its findings, never set by hand. `lead`
        names the root cause's own finding, which comes first: the cause before its symptoms."""
        ordered = sorted(findings, key=lambda f: (f.id != lead, *finding_sort_key(f)))
        issues = [f for f in ordered if f.is_issue]
        summary = Summary(
            issues_found=len(issues),
            p0=sum(f.priority == Priority.P0 for f in issues),
            p1=sum(f.priority == Priority.P1 for f in issues),
            p2=sum(f.priority == Priority.P2 for f in issues),
            files_read=files_read,
            ranks_seen=ranks_seen,
        )
        return cls(kind=kind, summary=summary, findings=ordered, **fields)

    @property
    def blocking(self) -> bool:
        """True when the run found a P0 or P1 issue (exit status 1 per the contract)."""
        return self.summary.p0 + self.summary.p1 > 0
