"""How the run went (issue 14 item 4): when each rank's log starts and ends, how the run ended, and
whether it resumed from a checkpoint — each with the line that says so.

- Times: each worker log's first and last stamped line (its head, what the triage read, and its
  tail), given to the ranks the file holds, grouped by minute so a rank whose log stopped early
  stands apart. Node logs (dmesg, journal) keep history from before the job and are left out.
- Outcome: `crashed` when a failure shows and the launcher, the scheduler or the watchdog ended
  the processes, or Python printed an error no code caught (the traceback's last line, with no
  logger in front: the process that printed it ended); `never started` when srun says it could not
  launch the step's tasks; `still running or cut short` when the logs
  stop without an end (a failure seen but no exit, or no failure and no end-of-training line);
  `completed` when training said it finished and nothing failed; `unknown` when no worker log was
  read.
- Resume: `yes` or `no` when a line says so, else `not detected`.
"""

from __future__ import annotations

import re
from datetime import datetime

from hyperpod_nccl.models import JobSummary, LogLine, RankSpan, ResumeState, RunOutcome
from hyperpod_nccl.rankset import compress
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.fatal import exit_code
from hyperpod_nccl.triage.findings import clip
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.patterns import EXCEPTION_NAME
from hyperpod_nccl.triage.prefixes import strip
from hyperpod_nccl.triage.rules.unknown import abnormal_events, stopped_first

MAX_SPANS = 6
_ENDINGS = (
    "worker_exit",
    "srun_task",
    "slurm_cancel",
    "slurm_failed",
    "take_down",
    "sigterm",
    "crash",
    "pod_failed",
)
_SUCCESS = ("training_done",)
# The last line of Python's own traceback: `RuntimeError: …` at the start of the message.
_UNCAUGHT = re.compile(EXCEPTION_NAME + r"\b(?::|$)")


def describe_run(job: JobSummary, incident: Incident, failed: bool, final: Event | None) -> JobSummary:
    """The job summary, with how the run went; `final` is the line the root cause's chain ends on."""
    job.time_zone = incident.clock.zone
    job.outcome = run_outcome(incident, failed, final)
    job.resume = resume_state(incident)
    job.resumed_from_checkpoint = {"yes": True, "no": False}.get(job.resume.resumed)
    job.rank_times = rank_spans(incident)
    return job


def log_line(event: Event, incident: Incident, chars: int = 200) -> LogLine:
    return LogLine(
        source=event.source,
        line=event.line,
        text=clip(event.text.strip(), chars),
        time=incident.clock.iso(incident.at(event)),
    )


def resume_state(incident: Incident) -> ResumeState:
    for kind, answer in (("resumed", "yes"), ("fresh_start", "no")):
        first = incident.first(incident.index.kind(kind))
        if first is not None:
            return ResumeState(resumed=answer, evidence=log_line(first, incident))  # type: ignore[arg-type]
    return ResumeState(resumed="not detected")


def run_outcome(incident: Incident, failed: bool, final: Event | None) -> RunOutcome:
    if not _worker_scans(incident):
        return RunOutcome(outcome="unknown", why="no worker log was read")
    if failed:
        last = (
            final
            if final is not None and _ends(final)
            else _latest([e for e in incident.index.kind(*_ENDINGS) if _ends(e)], incident)
        )
        if last is not None:
            primary, following = abnormal_events(incident)
            earliest = incident.first(primary) or incident.first(following)
            if (stop := stopped_first(incident, earliest)) is not None:
                return RunOutcome(
                    outcome="crashed",
                    why="the processes were told to stop from outside before any failure showed",
                    evidence=log_line(stop, incident),
                )
            return RunOutcome(
                outcome="crashed",
                why="a failure, then the processes were ended",
                evidence=log_line(last, incident),
            )
        # Open MPI without PMI started its processes (they aborted in MPI_Init): not this case.
        never_launched = incident.first(
            [e for e in incident.index.kind("slurm_step_launch") if e.fields.get("no_pmi") is None]
        )
        if never_launched is not None:
            return RunOutcome(
                outcome="never started",
                why="srun could not start the step's tasks: the training processes never ran",
                evidence=log_line(never_launched, incident),
            )
        primary, following = abnormal_events(incident)
        seen = _latest(primary + following, incident)
        meaningful = [e for group in incident.groups.values() for e in group.events]
        uncaught = _latest([e for e in primary + following + meaningful if _uncaught(e)], incident)
        if uncaught is not None:
            return RunOutcome(
                outcome="crashed",
                why="an error no code caught ended the process that printed it",
                evidence=log_line(uncaught, incident),
            )
        return RunOutcome(
            outcome="still running or cut short",
            why="a failure shows, but no line says the processes ended: the logs stop before the job did",
            evidence=log_line(seen, incident) if seen else None,
        )
    done = incident.first(incident.index.kind(*_SUCCESS))
    if done is not None:
        return RunOutcome(
            outcome="completed", why="training said it finished", evidence=log_line(done, incident)
        )
    return RunOutcome(
        outcome="still running or cut short",
        why="no failure and no end-of-training line: the logs stop while the job ran",
    )


def processes_ended(incident: Incident) -> bool:
    """A line says the job's processes ended (a launcher's exit, a kill, the watchdog's take-down)."""
    return any(_ends(e) for e in incident.index.kind(*_ENDINGS))


def _ends(event: Event) -> bool:
    """Lines that say processes ended; a clean exit (code 0) ends nothing that failed."""
    if event.kind == "worker_exit":
        return (exit_code(event) or 0) != 0
    if event.kind == "srun_task":
        return not event.fields.get("status", "").endswith("exit code 0")
    return True


def _uncaught(event: Event) -> bool:
    return _UNCAUGHT.match(strip(event.text).message) is not None


def _latest(events: list[Event], incident: Incident) -> Event | None:
    def key(event: Event) -> tuple[bool, datetime, str, int]:
        moment = incident.at(event)
        return (moment is not None, moment or datetime.min, event.source, event.line)

    return max(events, key=key, default=None)


def _worker_scans(incident: Incident) -> list:  # type: ignore[type-arg]
    node_logs = incident.node_log_sources
    return [s for s in incident.scans if not s.storage and s.source not in node_logs and s.lines_read]


def rank_spans(incident: Incident) -> list[RankSpan]:
    """Ranks grouped by the minute their logs start and the minute they end."""
    clock = incident.clock
    spans: dict[int, tuple[datetime, datetime]] = {}
    ranks_on: dict[str, list[int]] = {}
    for rank, node in incident.topology.rank_node.items():
        ranks_on.setdefault(node, []).append(rank)
    for scan in _worker_scans(incident):
        first, last = clock.at(scan.first_stamp), clock.at(scan.last_stamp)
        if first is None or last is None:
            continue
        # A file's ranks from its prefixes, else from what its lines say (NCCL's `rank 3 nranks 8`),
        # else every rank of its hosts.
        own = scan.ranks or {e.rank for e in scan.events if e.rank is not None}
        for rank in own or {r for host in scan.hosts for r in ranks_on.get(host, ())}:
            known = spans.get(rank)
            spans[rank] = (min(first, known[0]), max(last, known[1])) if known else (first, last)
    grouped: dict[tuple[datetime, datetime], list[int]] = {}
    for rank, (first, last) in sorted(spans.items()):
        grouped.setdefault((_minute(first), _minute(last)), []).append(rank)
    found = [
        RankSpan(
            ranks=compress(ranks),
            count=len(ranks),
            first=clock.iso(min(spans[r][0] for r in ranks)),
            last=clock.iso(max(spans[r][1] for r in ranks)),
        )
        for ranks in grouped.values()
    ]
    # The majority first; the outliers (a log that stopped early) follow, however few they are.
    return sorted(found, key=lambda s: (-s.count, s.last or ""))[:MAX_SPANS]


def _minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)
