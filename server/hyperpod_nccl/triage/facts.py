"""What the logs hold that a suggested command needs: the Slurm job id, whether the job ran under
Slurm, the pid of each rank, the instance behind each node, the port or store address a line
names. Read from the incident once; each finding's commands take the part that concerns it."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from hyperpod_nccl.models import Finding
from hyperpod_nccl.next_steps import Facts, Quoted
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.rules.origin import peer_instance
from hyperpod_nccl.triage.run import processes_ended
from hyperpod_nccl.utc import earlier_by

# sbatch's default `slurm-%j.out` (or `slurm-%A_%a.out`), and `--output=%x-%j-%t.out`-style names.
_SLURM_OUT = re.compile(r"(?:^|/)slurm-(\d{1,12})(?:_\d{1,9})?(?:\.\d+)?\.(?:out|err|log)(?:\.gz)?$")
_NAMED_OUT = re.compile(r"(?:^|/)[A-Za-z][\w.]*?-(\d{2,12})-\d{1,6}\.(?:out|err|log)(?:\.gz)?$")
_STEP_ID = re.compile(r"StepId=(\d{1,12})")
# pyxis names a job step's unnamed container `pyxis_<job>.<step>`, in the paths enroot's errors print.
_PYXIS_CONTAINER = re.compile(r"\bpyxis_(\d{1,12})\.\d{1,9}\b")
_SLURM_KINDS = ("srun_task", "slurm_cancel", "slurm_failed", "slurm_step_refused")
_PORT = re.compile(r"(?:\]:|port:? |port=|on port )(\d{2,5})\b")
_INSTANCE = re.compile(r"^i-[0-9a-f]{8,17}$")


@dataclass(frozen=True)
class JobFacts:
    """What holds for the whole job."""

    slurm: bool
    kubernetes: bool
    job_id: str | None
    pids: dict[int, int]  # rank → pid
    instance_ids: dict[str, str]  # node → instance id
    store_host: str | None
    ended: bool  # a line says the processes ended
    dated: dict[str, dict[int, datetime]]  # source → line → when, for lines whose year is known
    # Every job id the files' names or the scheduler's lines give, when they give more than one.
    other_jobs: tuple[str, ...] = ()
    nccl_quiet: bool = False  # an NCCL call failed and NCCL printed no WARN or INFO line


def job_facts(incident: Incident) -> JobFacts:
    sources = [scan.source for scan in incident.scans]
    from_lines = _job_ids_in_lines(incident)
    from_names = [m.group(1) for s in sources if (m := _SLURM_OUT.search(s))]
    slurm = bool(from_lines or from_names or incident.index.kind(*_SLURM_KINDS))
    job_id = _most_common(from_lines) or _most_common(from_names)
    if job_id is None and slurm:
        named = {m.group(1) for s in sources if (m := _NAMED_OUT.search(s))}
        job_id = named.pop() if len(named) == 1 else None  # `%x-%j-%t`: one job id across the files
    topology = incident.topology
    pids = {rank: pid for (_, pid), rank in sorted(topology.pid_rank.items())}
    instances = {node: address for address, node in topology.addr_node.items() if _INSTANCE.match(address)}
    # kubectl's own output: `--timestamps` (the one UTC stamp), or a pod's eviction.
    kubernetes = any(scan.utc_stamps for scan in incident.scans) or bool(
        incident.index.kind("evicted", "pod_failed")
    )
    dated: dict[str, dict[int, datetime]] = {}
    for event in incident.events:
        if (moment := incident.at(event)) is not None:
            dated.setdefault(event.source, {})[event.line] = moment
    jobs = tuple(sorted(set(from_lines + from_names), key=lambda j: (len(j), j)))
    return JobFacts(
        slurm,
        kubernetes,
        job_id,
        pids,
        instances,
        _store_host(incident),
        processes_ended(incident),
        dated,
        jobs if len(jobs) > 1 else (),
        _nccl_quiet(incident),
    )


# Lines NCCL prints only at NCCL_DEBUG=WARN or INFO (its version banner, Init COMPLETE, the network).
_NCCL_DEBUG_LINES = ("nccl_warn", "nccl_version", "init_complete", "network", "provider", "comm_rank")


def _nccl_quiet(incident: Incident) -> bool:
    return bool(incident.index.kind("nccl_error", "nccl_failure")) and not incident.index.kind(
        *_NCCL_DEBUG_LINES
    )


def _job_ids_in_lines(incident: Incident) -> list[str]:
    found = [
        e.fields["job"].split(".", 1)[0] for e in incident.index.kind("slurm_cancel") if "job" in e.fields
    ]
    found += [m.group(1) for e in incident.index.kind("oom_killed") if (m := _STEP_ID.search(e.text))]
    found += [e.fields["job"] for e in incident.index.kind("slurm_step_refused")]
    containers = (e.text for e in incident.events if "pyxis_" in e.text)
    found += [m.group(1) for text in containers if (m := _PYXIS_CONTAINER.search(text))]
    return [job for job in found if job.isdigit()]


def _most_common(values: list[str]) -> str | None:
    return Counter(values).most_common(1)[0][0] if values else None


def _store_host(incident: Incident) -> str | None:
    masters = [e.fields["master"] for e in incident.index.kind("rendezvous") if e.fields.get("master")]
    targets = [e.fields["target"] for e in incident.index.kind("store_connect") if e.fields.get("target")]
    hosts = [target.rsplit(":", 1)[0].strip("[]") for target in targets]
    return next(iter(masters + hosts), None)


_LIBRARIES = ("gloo", "nccl")


def finding_facts(finding: Finding, job: JobFacts, incident: Incident) -> Facts:
    ranks = tuple(finding.ranks)
    nodes = tuple(finding.nodes) or tuple(incident.nodes_of(ranks))
    # Commands run on one node: the one the finding's first line came from, where it began.
    first = next((e.node for e in finding.evidence if e.node in nodes), None)
    if first:
        nodes = (first, *(node for node in nodes if node != first))
    return Facts(
        slurm=job.slurm,
        kubernetes=job.kubernetes,
        job_id=job.job_id,
        nodes=nodes,
        ranks=ranks,
        pids={rank: job.pids[rank] for rank in ranks if rank in job.pids},
        instance_ids={node: job.instance_ids[node] for node in nodes if node in job.instance_ids},
        port=next((m.group(1) for e in finding.evidence if (m := _PORT.search(e.text))), None),
        store_host=job.store_host,
        ended=job.ended,
        addresses=_bootstrap_addresses(incident, nodes),
        quoted=tuple(Quoted(e.source, e.line) for e in finding.evidence if e.line is not None),
        window=_window(finding, job),
        peers=_peers(finding, incident),
        nccl_quiet=job.nccl_quiet,
        pods=_pods_quoted(finding, incident),
        libraries=frozenset(
            name for name in _LIBRARIES if any(name in e.text.lower() for e in finding.evidence)
        ),
    )


def _pods_quoted(finding: Finding, incident: Incident) -> tuple[tuple[str, str], ...]:
    """The pods of the `kubectl get pods` rows the finding quotes (a table names no namespace)."""
    quoted = {(e.source, e.line) for e in finding.evidence}
    rows = incident.index.kind("pod_failed")
    return tuple(
        (e.fields.get("namespace", ""), e.fields["pod"]) for e in rows if (e.source, e.line) in quoted
    )


def _peers(finding: Finding, incident: Incident) -> tuple[str, ...]:
    """From the finding's lines as read (its evidence quotes them shortened)."""
    group = incident.groups.get(finding.id)
    lines = [e.text for e in group.events] if group else [e.text for e in finding.evidence]
    named = (instance for text in lines if (instance := peer_instance(text)))
    return tuple(dict.fromkeys(incident.topology.addr_node.get(i, i) for i in named))


_BEFORE, _AFTER = timedelta(minutes=15), timedelta(minutes=5)
_LONGEST = timedelta(hours=2)  # a window longer than this reads more of the journal than it tells
_WATCHDOG_TIMEOUT = re.compile(r"Timeout\(ms\)=(\d+)")


_NEAR = 50  # lines: an undated line takes the time of a dated one this close in its own file


def _window(finding: Finding, job: JobFacts) -> tuple[str, str] | None:
    """Around the dated lines the finding quotes, or the dated line nearest to its first quoted line
    in the same file (Slurm's OOM lines carry no time; its CANCELLED line does). A watchdog's line
    is dated when it fired; the hang began its timeout earlier, and the kernel's lines of that
    moment are the ones to read."""
    quoted = [(e.source, e.line) for e in finding.evidence if e.line is not None]
    moments = [m for source, line in quoted if (m := job.dated.get(source, {}).get(line))]
    if not moments and quoted:
        source, line = quoted[0]
        near = [(abs(at - line), m) for at, m in job.dated.get(source, {}).items() if abs(at - line) <= _NEAR]
        moments = [min(near)[1]] if near else []
    if not moments:
        return None
    timeouts = [int(found.group(1)) for e in finding.evidence if (found := _WATCHDOG_TIMEOUT.search(e.text))]
    first = earlier_by(min(moments), max(timeouts, default=0)) or min(moments)
    last = min(max(moments), first + _LONGEST)
    return (f"{first - _BEFORE:%Y-%m-%d %H:%M}", f"{last + _AFTER:%Y-%m-%d %H:%M}")


_MAX_ADDRESSES = 4


def _bootstrap_addresses(incident: Incident, nodes: tuple[str, ...]) -> tuple[str, ...]:
    found = {
        e.fields["addr"]
        for e in incident.index.kind("net_addr")
        if e.node in nodes and "." in e.fields["addr"]
    }
    return tuple(sorted(found)[:_MAX_ADDRESSES])
