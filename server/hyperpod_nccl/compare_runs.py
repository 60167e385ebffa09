"""What a report shows about the run it describes, and whether a rerun could have seen an issue.

A report is all a comparison gets, so a run is known only as far as its report shows it: the job
summary (world size, nodes), job ids in Slurm file names and lines, the span of the timeline, the
cluster id in ARNs and log-group names, and the kinds of input its evidence came from. A clean
report cites almost nothing, so "not shown" is never read as "absent": an issue the rerun could
not have seen is *unconfirmed*, never fixed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from hyperpod_nccl.models import Evidence, Finding, Report

KERNEL_LOGS = "kernel logs"
WORKER_LOGS = "worker logs"
SCHEDULER_OUTPUT = "scheduler output"
STORAGE_LOGS = "storage logs"
# The cluster diagnostic's sources.
AWS_API = "AWS API"
KUBERNETES = "Kubernetes"
POD_LOGS = "pod logs"
NODE_PROBES = "node probes"
CLOUDWATCH = "CloudWatch"
SLURM = "Slurm"

_NODES_SHOWN = 8
# What to give a rerun so it can see an issue of each kind again.
_HOW_TO_SHOW = {
    KERNEL_LOGS: "the nodes' dmesg or kern.log in its log folder",
    SCHEDULER_OUTPUT: "the scheduler's records (sacct, scontrol, slurmctld log) beside its logs",
    STORAGE_LOGS: "the storage daemon logs given with its logs",
}
_KERNEL_SOURCE = re.compile(r"(dmesg|kern\.log|syslog|messages|journal)", re.IGNORECASE)
_KERNEL_TEXT = re.compile(
    r"kernel: |Out of memory: Kill|oom-kill:|invoked oom-killer|oom_reaper|Memory cgroup out of memory"
    r"|NVRM: Xid|^\[\s*\d+\.\d+\] "
)
# The scheduler's own records, given beside the job's logs. srun and slurmstepd lines are not:
# they are in the job's own output files, which a rerun's triage reads like any worker log.
_SCHEDULER_SOURCE = re.compile(r"(slurmctld|slurmd\b|sacct|scontrol|squeue|sinfo|events?\b)", re.IGNORECASE)
_SCHEDULER_TEXT = re.compile(r"\bslurm(ctld|d)(\[\d+\])?: |_job_complete: JobId=")
# A Slurm job's own output files (slurm-4242.out, error-4242-7.out, %x-%j.err) name its job id.
_SLURM_OUTPUT_FILE = re.compile(r"(^|[/_-])(slurm|error|output|err|out|job)[-_](\d{2,})(?=[-_.]|$)", re.I)
_JOB_IN_TEXT = re.compile(r"\b(?:JOB |JobId=|SLURM_JOB_ID=|StepId=)(\d+)")
_CLUSTER_ID = re.compile(r"(?::cluster/|/aws/sagemaker/Clusters/[^/\s]+/)([a-z0-9]{6,})\b")
_POD_LOG_SOURCE = re.compile(r"pods/log|^pod \S+ log \(")
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_DIAGNOSE_SOURCES = (
    ("logs:", CLOUDWATCH),
    ("probe", NODE_PROBES),
    ("ssm:", NODE_PROBES),
    ("slurm", SLURM),
    ("scontrol", SLURM),
    ("sinfo", SLURM),
    ("sacct", SLURM),
    ("munge", SLURM),
    ("batch script", SLURM),
    ("sagemaker:", AWS_API),
    ("ec2:", AWS_API),
    ("sts:GetCallerIdentity", AWS_API),
)


class RunFacts(BaseModel):
    """What one report shows about its run; empty or null where the report does not show it."""

    job_ids: list[str] = Field(description="Job ids in Slurm file names and scheduler lines.")
    cluster_ids: list[str] = Field(description="HyperPod cluster ids in ARNs and log-group names.")
    world_size: int | None
    node_count: int | None = Field(description="Nodes the run used (triage) or that findings name.")
    nodes: list[str] = Field(description=f"Node names the report shows, at most {_NODES_SHOWN}.")
    first_time: str | None = Field(description="Earliest timestamp of the report's timeline.")
    last_time: str | None
    inputs_shown: list[str] = Field(description="Kinds of input the report shows it read.")
    files_read: int
    ranks_seen: int


@dataclass
class Run:
    """A report's run with every node it names (RunFacts shows a few)."""

    report: Report
    job_ids: set[str]
    cluster_ids: set[str]
    nodes: set[str]
    nodes_complete: bool
    first: datetime | None
    last: datetime | None
    inputs: set[str]
    missing_inputs: dict[str, str] = field(default_factory=dict)  # kind → why (diagnose: skipped)

    @property
    def world_size(self) -> int | None:
        return self.report.job.world_size if self.report.job else None

    def facts(self) -> RunFacts:
        shown = sorted(self.nodes)
        more = len(shown) - _NODES_SHOWN
        job = self.report.job
        return RunFacts(
            job_ids=sorted(self.job_ids),
            cluster_ids=sorted(self.cluster_ids),
            world_size=self.world_size,
            node_count=job.nodes if job and job.nodes else (len(shown) or None),
            nodes=shown[:_NODES_SHOWN] + ([f"+{more} more"] if more > 0 else []),
            first_time=_iso(self.first),
            last_time=_iso(self.last),
            inputs_shown=sorted(self.inputs),
            files_read=self.report.summary.files_read,
            ranks_seen=self.report.summary.ranks_seen,
        )


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def _evidence(report: Report) -> list[Evidence]:
    return [item for finding in report.findings for item in finding.evidence]


def line_kind(report_kind: str, source: str, text: str) -> str:
    """The kind of input a cited line came from."""
    if report_kind == "diagnose":
        if _POD_LOG_SOURCE.search(source):
            return POD_LOGS
        lowered = source.lower()
        return next((kind for prefix, kind in _DIAGNOSE_SOURCES if lowered.startswith(prefix)), KUBERNETES)
    if _KERNEL_SOURCE.search(source) or _KERNEL_TEXT.search(text):
        return KERNEL_LOGS
    if _SCHEDULER_SOURCE.search(source) or _SCHEDULER_TEXT.search(text):
        return SCHEDULER_OUTPUT
    return WORKER_LOGS


def finding_inputs(report_kind: str, finding: Finding) -> set[str]:
    """The kinds of input a finding's evidence came from. A finding that merged other sources'
    reports of the same event (`also_reported_as`) is confirmed by the input that names it, its
    first line (the kernel's OOM kill, not the launcher's SIGKILL that followed)."""
    if finding.id.startswith("triage.storage.ais"):
        return {STORAGE_LOGS}
    evidence = finding.evidence[:1] if finding.also_reported_as else finding.evidence
    return {line_kind(report_kind, item.source, item.text) for item in evidence}


def _times(report: Report) -> list[datetime]:
    """The moments the report dates: its timeline's, and the first and last line of its ranks (a log
    whose failure lines carry no time may still date its start). Compared as written: zone-less
    times are not converted."""
    written = [event.time for event in report.timeline if event.time]
    if report.job:
        written += [moment for span in report.job.rank_times for moment in (span.first, span.last) if moment]
    found = [_ISO_TIME.match(moment) for moment in written]
    return [datetime.fromisoformat(match.group(0)) for match in found if match]


def _nodes(report: Report) -> tuple[set[str], bool]:
    names = {node for finding in report.findings for node in finding.nodes}
    names |= {item.node for item in _evidence(report) if item.node}
    names |= {node for group in report.rank_states for node in group.nodes}
    if report.root_cause:
        names |= set(report.root_cause.culprit_nodes)
    if report.kind == "diagnose":
        names |= {i for finding in report.findings for i in finding.instance_ids}
        return names, False
    job = report.job
    if job:
        names |= {line.split(":", 1)[0].strip() for line in job.rank_map if ":" in line}
        names |= {node for group in job.versions for node in group.nodes}
    return names, bool(job and job.nodes and len(names) >= job.nodes)


def _sources(report: Report) -> list[str]:
    return (
        [item.source for item in _evidence(report)]
        + [event.source.rsplit(":", 1)[0] for event in report.timeline]
        + [item.source for item in report.skipped]
    )


def _job_ids(report: Report) -> set[str]:
    ids = {found.group(3) for source in _sources(report) if (found := _SLURM_OUTPUT_FILE.search(source))}
    texts = [item.text for item in _evidence(report)] + [event.event for event in report.timeline]
    return ids | {found.group(1) for text in texts for found in _JOB_IN_TEXT.finditer(text)}


def _cluster_ids(report: Report) -> set[str]:
    texts = [item.source + " " + item.text for item in _evidence(report)] + [
        item.source + " " + item.reason for item in report.skipped
    ]
    return {found.group(1) for text in texts for found in _CLUSTER_ID.finditer(text)}


def _inputs(report: Report) -> tuple[set[str], dict[str, str]]:
    """Kinds of input the report shows it read, and (diagnose) the kinds it could not collect."""
    kinds = set().union(*(finding_inputs(report.kind, finding) for finding in report.findings))
    if report.kind == "diagnose":
        missing = {
            line_kind("diagnose", item.source, ""): f"{item.source}: {item.reason}" for item in report.skipped
        }
        every = {AWS_API, KUBERNETES, POD_LOGS, NODE_PROBES, CLOUDWATCH, SLURM}
        return (every - set(missing)) | kinds, missing
    if report.summary.files_read:
        kinds.add(WORKER_LOGS)
    sources = _sources(report)
    if any(_KERNEL_SOURCE.search(source) for source in sources) or (
        report.root_cause and any("node logs hold no" in item for item in report.root_cause.ruled_out)
    ):
        kinds.add(KERNEL_LOGS)
    if any(_SCHEDULER_SOURCE.search(source) for source in sources):
        kinds.add(SCHEDULER_OUTPUT)
    return kinds, {}


def describe_run(report: Report) -> Run:
    nodes, complete = _nodes(report)
    times = _times(report)
    inputs, missing = _inputs(report)
    return Run(
        report=report,
        job_ids=_job_ids(report),
        cluster_ids=_cluster_ids(report) if report.kind == "diagnose" else set(),
        nodes=nodes,
        nodes_complete=complete,
        first=min(times, default=None),
        last=max(times, default=None),
        inputs=inputs,
        missing_inputs=missing,
    )


def _listing(values: set[str] | list[str], shown: int = 4) -> str:
    ordered = sorted(values)
    more = len(ordered) - shown
    return ", ".join(ordered[:shown]) + (f" (+{more} more)" if more > 0 else "")


def _quoted(report: Report) -> frozenset[tuple[str, str, int | None, str]]:
    """Every line the report quotes, with the finding that quotes it."""
    return frozenset((f.id, e.source, e.line, e.text) for f in report.findings for e in f.evidence)


def not_comparable(previous: Run, current: Run) -> list[str]:
    """Why the current report cannot be a rerun of the previous one; empty when it can be."""
    reasons = []
    if previous.cluster_ids and current.cluster_ids and not previous.cluster_ids & current.cluster_ids:
        before, now = _listing(previous.cluster_ids), _listing(current.cluster_ids)
        reasons.append(f"different clusters: {before} before, {now} now")
    if previous.report.kind != "triage":
        return reasons
    spans_known = None not in (previous.first, previous.last, current.first, current.last)
    if spans_known and (previous.first, previous.last) == (current.first, current.last):
        reasons.append(
            f"the same run twice: both reports span {_iso(current.first)} to {_iso(current.last)}; "
            "rerun the job, then triage the new logs"
        )
    elif not spans_known and _quoted(previous.report) and _quoted(previous.report) == _quoted(current.report):
        reasons.append(
            "the same input twice: the logs carry no dates, and both reports quote the very same lines; "
            "rerun the job, then triage the new logs"
        )
    elif spans_known and current.last < previous.first:  # type: ignore[operator]
        reasons.append(
            f"the current run ended ({_iso(current.last)}) before the previous one began "
            f"({_iso(previous.first)}): pass the older report as previous"
        )
    different_size = None not in (previous.world_size, current.world_size) and (
        previous.world_size != current.world_size
    )
    if different_size and previous.nodes and current.nodes and not previous.nodes & current.nodes:
        jobs = (
            f"jobs {_listing(previous.job_ids)} and {_listing(current.job_ids)}, "
            if (previous.job_ids and current.job_ids and previous.job_ids != current.job_ids)
            else ""
        )
        reasons.append(
            f"another job: {jobs}world size {previous.world_size} vs {current.world_size} and no node in "
            "common"
        )
    return reasons


def run_differences(previous: Run, current: Run) -> list[str]:
    """Differences that leave every issue the rerun did not report unconfirmed."""
    reasons = []
    if previous.report.kind == "triage":
        if (
            None not in (previous.world_size, current.world_size)
            and previous.world_size != current.world_size
        ):
            reasons.append(f"world size changed: {previous.world_size} before, {current.world_size} now")
        if previous.nodes and current.nodes and not previous.nodes & current.nodes:
            reasons.append(
                f"no node in common: {_listing(previous.nodes)} before, {_listing(current.nodes)} now"
            )
        seen, wanted = current.report.summary.ranks_seen, current.world_size
        if wanted and seen < wanted:
            reasons.append(f"the rerun's logs cover {seen} of its {wanted} ranks")
    unread = [item for item in current.report.skipped if item.reason != "empty file"]
    if unread and previous.report.kind == "triage":
        reasons.append(
            f"the rerun skipped {len(unread)} input(s) ({_listing([i.source for i in unread], 2)}): "
            "what they held was not seen"
        )
    if untied(previous, current):
        reasons.append(
            "nothing ties the rerun to the previous run: no node in common, and neither a job id nor a "
            "date in both reports; triage the rerun's full logs (every node's), not a few lines"
        )
    return reasons


def untied(previous: Run, current: Run) -> bool:
    """Two triage reports in which nothing says they are runs of one job: no node they share, no job
    ids in both (another id is a rerun's), no dates in both (the order of the two runs)."""
    return previous.report.kind == "triage" and not (
        previous.nodes & current.nodes
        or (previous.job_ids and current.job_ids)
        or None not in (previous.first, current.first)
    )


def unseen_because(previous: Run, current: Run, finding: Finding) -> str | None:
    """Why the rerun could not have seen `finding` again, or None when it could have."""
    kinds = finding_inputs(previous.report.kind, finding)
    if kinds and not kinds & current.inputs:
        missing = " / ".join(sorted(kinds))
        why = "; ".join(current.missing_inputs[k] for k in sorted(kinds) if k in current.missing_inputs)
        if why:
            return f"the rerun could not read {missing} ({why})"
        needed = " and ".join(_HOW_TO_SHOW.get(kind, kind) for kind in sorted(kinds))
        return (
            f"seen only in {missing}, and the rerun's report does not show any were read: fixed if the "
            f"rerun had {needed}, unknown otherwise"
        )
    if finding.nodes and current.nodes_complete and not set(finding.nodes) & current.nodes:
        return f"the rerun did not run on {_listing(finding.nodes, 3)}"
    size = current.world_size
    if finding.ranks and size is not None and min(finding.ranks) >= size:
        return f"rank {min(finding.ranks)} does not exist in the rerun (world size {size})"
    return None
