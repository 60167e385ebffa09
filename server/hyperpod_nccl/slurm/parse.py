"""Parsers for the `slurm_controller.sh` probe output: `scontrol`, `sinfo`, `squeue`, `sacct`.

Written against the wordings of Slurm 22.05, 23.11 and 24.11: `scontrol` key=value records
(one line per node with `-o`, several lines per job), both spellings of node states, both
spellings of "cannot reach the controller", and `scontrol ping` for one or several controllers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hyperpod_nccl.probes.parse import sections as probe_sections
from hyperpod_nccl.slurm.hostlist import duration_seconds, expand_hostlist
from hyperpod_nccl.slurm.states import parse_state, strip_reason_stamp
from hyperpod_nccl.snapshot.slurm import ControllerPing, HostSetting, SlurmJob, SlurmNode

_EXIT = re.compile(r"^##### exit (?P<code>\d+)$")
_KEY = re.compile(r"(?:^|(?<=\s))(?P<key>[A-Za-z][A-Za-z0-9_:/\[\]]*)=")
_PING = re.compile(r"Slurmctld\((?P<role>[a-z0-9]+)\) at (?P<host>\S+) is (?P<status>UP|DOWN)")
_CONTACT_ERROR = re.compile(
    r"Unable to contact slurm controller|Socket timed out on send/recv|Zero Bytes were transmitted"
    r"|Connection refused",
    re.I,
)
# Node fields worth quoting as evidence; the full line carries dozens more.
_NODE_EVIDENCE_KEYS = ("NodeName", "State", "Gres", "CfgTRES", "RealMemory", "Partitions", "Reason")
CONFIG_KEYS = (
    "ClusterName",
    "SLURM_VERSION",
    "SlurmctldHost[0]",
    "SlurmctldHost[1]",
    "Prolog",
    "Epilog",
    "TaskProlog",
    "PrologFlags",
    "PropagateResourceLimits",
    "PropagateResourceLimitsExcept",
    "ProctrackType",
    "SlurmdTimeout",
)


@dataclass(frozen=True)
class Section:
    body: str
    exit_code: int | None

    @property
    def failed(self) -> bool:
        return self.exit_code not in (0, None)


def split_sections(output: str) -> dict[str, Section]:
    """The probe's output, by section name; a section cut off by a timeout has exit_code None.

    The sections are the shared probe format; the Slurm script adds an `##### exit N` trailer."""
    sections: dict[str, Section] = {}
    for name, section in probe_sections.split_sections(output).items():
        lines, code = [], None
        for line in section.lines:
            exit_match = _EXIT.match(line)
            if exit_match:
                code = int(exit_match.group("code"))
            else:
                lines.append(line)
        sections[name] = Section("\n".join(lines), code)
    return sections


def parse_kv(text: str) -> dict[str, str]:
    """`Key=value Other=two words` records; a value runs until the next `Key=`."""
    matches = list(_KEY.finditer(text))
    fields: dict[str, str] = {}
    ends = [m.start() for m in matches[1:]] + [len(text)] * bool(matches)
    for match, end in zip(matches, ends, strict=True):
        fields.setdefault(match.group("key"), text[match.end() : end].strip())
    return fields


def contact_error(text: str) -> str | None:
    """The first line saying slurmctld could not be reached, if any."""
    for line in text.splitlines():
        if _CONTACT_ERROR.search(line):
            return line.strip()
    return None


def parse_ping(body: str) -> list[ControllerPing]:
    return [
        ControllerPing(
            host=match.group("host"),
            role=match.group("role"),
            up=match.group("status") == "UP",
            text=line.strip(),
        )
        for line in body.splitlines()
        if (match := _PING.search(line))
    ]


def parse_munge(section: Section | None) -> tuple[bool | None, str | None]:
    if section is None or "command not found" in section.body:
        return None, None
    status = next((line.strip() for line in section.body.splitlines() if line.startswith("STATUS:")), None)
    ok = not section.failed and status is not None and "Success" in status
    return ok, status or section.body.strip()[:300]


def _none_if_null(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "N/A", "none", "None") else value


def parse_node_line(line: str, compact: dict[str, str]) -> SlurmNode | None:
    fields = parse_kv(line)
    name = fields.get("NodeName", "").split()[0] if fields.get("NodeName") else None
    if not name:
        return None
    state_text = fields.get("State", "UNKNOWN").split()[0]
    state = parse_state(state_text)
    if name in compact:
        state = type(state)(state.base, state.flags | parse_state(compact[name]).flags)
    raw_reason = _none_if_null(fields.get("Reason"))
    stamp = re.search(r"\[([^\]]*@[^\]]*)\]\s*$", raw_reason or "")
    return SlurmNode(
        name=name,
        state=state_text,
        compact_state=compact.get(name),
        base=state.base,
        flags=sorted(state.flags),
        reason=strip_reason_stamp(raw_reason) if raw_reason else None,
        reason_stamp=stamp.group(1) if stamp else None,
        partitions=[p for p in (fields.get("Partitions") or "").split(",") if p],
        gres=_none_if_null(fields.get("Gres")),
        address=_none_if_null(fields.get("NodeAddr")),
        line=" ".join(f"{key}={fields[key]}" for key in _NODE_EVIDENCE_KEYS if key in fields),
    )


def parse_sinfo(body: str) -> dict[str, str]:
    """`sinfo -N -o '%N|%P|%t|%T|%E'` → node → compact state (with flags)."""
    states: dict[str, str] = {}
    for line in body.splitlines():
        parts = line.split("|", 4)
        if len(parts) == 5:
            states.setdefault(parts[0].strip(), parts[2].strip())
    return states


def parse_sinfo_reasons(body: str) -> dict[str, str]:
    """`sinfo -R` default columns; the node list is the last column, the reason may be cut at 20."""
    lines: dict[str, str] = {}
    for line in body.splitlines()[1:] if body.startswith("REASON") else []:
        fields = line.split()
        for name in expand_hostlist(fields[-1] if fields else ""):
            lines.setdefault(name, line.rstrip())
    return lines


def _node_from_sinfo(line: str) -> SlurmNode | None:
    parts = line.split("|", 4)
    if len(parts) != 5 or not parts[0].strip():
        return None
    name, partition, compact, _, reason = (p.strip() for p in parts)
    state = parse_state(compact)
    return SlurmNode(
        name=name,
        state=compact,
        compact_state=compact,
        base=state.base,
        flags=sorted(state.flags),
        reason=_none_if_null(reason),
        partitions=[partition.rstrip("*")],
        line=line.strip(),
    )


def parse_nodes(nodes_body: str, sinfo_body: str = "") -> list[SlurmNode]:
    compact = parse_sinfo(sinfo_body)
    parsed = [
        parse_node_line(line, compact) for line in nodes_body.splitlines() if line.startswith("NodeName=")
    ]
    nodes = [node for node in parsed if node is not None]
    if nodes:
        return nodes
    # `scontrol show node` failed or timed out: sinfo still names every node, state and reason.
    fallback = [_node_from_sinfo(line) for line in sinfo_body.splitlines()]
    return list({node.name: node for node in fallback if node is not None}.values())


def job_reason(text: str | None) -> str | None:
    """`launch_failed_requeued_held` (scontrol) and `launch failed requeued held` (squeue) agree."""
    text = _none_if_null((text or "").strip())
    return text.replace("_", " ") if text else None


def parse_squeue(body: str) -> list[SlurmJob]:
    """`squeue -h -o '%i|%T|%r|%D|%N|%l|%M|%P|%u|%j'` (name last: it may contain anything)."""
    jobs = []
    for line in body.splitlines():
        parts = line.split("|", 9)
        if len(parts) != 10 or not parts[0].strip():
            continue
        job_id, state, reason, count, nodes, limit, used, partition, user, name = (p.strip() for p in parts)
        jobs.append(
            SlurmJob(
                job_id=job_id,
                name=name,
                user=user,
                state=state,
                reason=job_reason(reason),
                partition=partition,
                num_nodes=int(count) if count.isdigit() else None,
                node_list=_none_if_null(nodes),
                nodes=expand_hostlist(nodes),
                time_limit=limit,
                elapsed=used,
                time_limit_s=duration_seconds(limit),
                elapsed_s=duration_seconds(used),
            )
        )
    return jobs


def parse_job(body: str) -> SlurmJob | None:
    """`scontrol show job -d` (multi-line or `-o`); the per-node detail lines are ignored."""
    fields = parse_kv(body)
    if "JobId" not in fields:
        return None
    nodes = _none_if_null(fields.get("NodeList"))
    num_nodes = fields.get("NumNodes", "").split("-")[0]
    restarts = fields.get("Restarts", "")
    return SlurmJob(
        job_id=fields["JobId"].split()[0],
        source="scontrol show job",
        name=_none_if_null(fields.get("JobName")),
        user=_none_if_null(fields.get("UserId", "").split("(")[0]),
        state=fields.get("JobState", "UNKNOWN").split()[0],
        reason=job_reason(fields.get("Reason")),
        partition=_none_if_null(fields.get("Partition")),
        num_nodes=int(num_nodes) if num_nodes.isdigit() else None,
        node_list=nodes,
        nodes=expand_hostlist(nodes),
        time_limit=fields.get("TimeLimit"),
        elapsed=fields.get("RunTime"),
        time_limit_s=duration_seconds(fields.get("TimeLimit")),
        elapsed_s=duration_seconds(fields.get("RunTime")),
        exclusive=fields["OverSubscribe"].upper() == "NO" if "OverSubscribe" in fields else None,
        restarts=int(restarts) if restarts.isdigit() else None,
        exit_code=fields.get("ExitCode"),
        command=_none_if_null(fields.get("Command")),
    )


def parse_sacct(body: str) -> SlurmJob | None:
    """The job's own line of `sacct -P -n -o JobID,JobName,State,ExitCode,Elapsed,Timelimit,NodeList,Reason`:
    what is left of a job once slurmctld has forgotten it (after MinJobAge)."""
    for line in body.splitlines():
        parts = line.split("|")
        if len(parts) != 8 or "." in parts[0] or not parts[0].strip():
            continue
        job_id, name, state, exit_code, elapsed, limit, nodes, reason = (p.strip() for p in parts)
        return SlurmJob(
            job_id=job_id,
            source="sacct",
            name=_none_if_null(name),
            state=state,
            reason=job_reason(reason),
            node_list=_none_if_null(nodes),
            nodes=expand_hostlist(nodes),
            time_limit=limit,
            elapsed=elapsed,
            time_limit_s=duration_seconds(limit),
            elapsed_s=duration_seconds(elapsed),
            exit_code=exit_code,
        )
    return None


def parse_config(body: str) -> dict[str, str]:
    config = {}
    for line in body.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in CONFIG_KEYS:
            config[key.strip()] = value.strip()
    return config


def parse_host_files(body: str) -> list[HostSetting]:
    """`##### file PATH` headers followed by `grep -n` lines."""
    settings, path = [], None
    for line in body.splitlines():
        if line.startswith("##### file "):
            path = line.removeprefix("##### file ").strip()
            continue
        number, sep, text = line.partition(":")
        if path and sep and number.isdigit() and not text.lstrip().startswith("#"):
            settings.append(HostSetting(path=path, line=int(number), text=text.strip()))
    return settings


def host_files_read(body: str) -> list[str]:
    return [
        line.removeprefix("##### file ").strip()
        for line in body.splitlines()
        if line.startswith("##### file ")
    ]


def parse_version(body: str) -> str | None:
    match = re.search(r"slurm[- ](?:wlm )?(\d+\.\d+(?:\.\d+)?)", body, re.I)
    return match.group(1) if match else None
