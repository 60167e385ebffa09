"""Checks of a job's batch script against HyperPod's auto-resume rules, and of the host files
(prolog, profile, limits, logind) that shape every job's runtime.

Auto-resume (HyperPod docs, seed 002): only the `srun --auto-resume=1` step is resumed after a
node replacement; the allocation must be exclusive; `$SLURM_JOB_NODELIST` can be stale after a
replacement, so the node list must be derived at run time (`scontrol show jobid`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hyperpod_nccl.snapshot.slurm import HostSetting

_SRUN = re.compile(r"(?:^|[;&|({`\s]|\$\()srun(?=\s|$)")
_AUTO_RESUME = re.compile(r"--auto-resume(?:=|\s+)1\b")
_STALE_NODELIST = re.compile(r"\$\{?SLURM_(?:JOB_)?NODELIST\b")
_EXCLUSIVE = re.compile(r"^#SBATCH\s+.*--exclusive\b")
_REMOVE_IPC = re.compile(r"^\s*RemoveIPC\s*=\s*(?P<value>\S+)", re.I)
_MEMLOCK = re.compile(
    r"\bmemlock\s+(?P<value>\S+)\s*$|LimitMEMLOCK\s*=\s*(?P<unit>\S+)|ulimit\s+.*-l\s+(?P<ulimit>\S+)"
)
_ENV = re.compile(r"\b(?P<name>(?:NCCL|FI|OFI_NCCL)_[A-Z0-9_]+)=(?P<value>[^\s;]*)")
_TCP_FALLBACK = {("FI_PROVIDER", "tcp"), ("FI_PROVIDER", "sockets"), ("NCCL_NET", "Socket")}
LOGIND = "/etc/systemd/logind.conf"


@dataclass(frozen=True)
class ScriptIssue:
    check: str
    message: str
    line: int | None = None
    text: str = ""
    source: str = "batch_script"


def _logical_lines(script: str) -> list[tuple[int, str]]:
    """Lines with backslash continuations joined and comments (but not #SBATCH) dropped."""
    joined: list[tuple[int, str]] = []
    start, buffer = 0, ""
    for number, raw in enumerate(script.splitlines(), start=1):
        if not buffer:
            start = number
        if raw.endswith("\\"):
            buffer += raw[:-1] + " "
            continue
        text = (buffer + raw).strip()
        buffer = ""
        if text and (not text.startswith("#") or text.startswith("#SBATCH")):
            joined.append((start, text))
    return joined


def _srun_issues(lines: list[tuple[int, str]]) -> list[ScriptIssue]:
    steps = [(n, text) for n, text in lines if _SRUN.search(text)]
    if not steps:
        return [
            ScriptIssue(
                "no_srun", "the script launches no `srun` step: auto-resume applies only to srun steps"
            )
        ]
    resumable = [(n, text) for n, text in steps if _AUTO_RESUME.search(text)]
    main_line, main_text = steps[-1]
    if not resumable:
        return [
            ScriptIssue(
                "no_auto_resume",
                "no `srun` step has `--auto-resume=1`: after a hardware fault HyperPod replaces the node "
                "but does not restart the job",
                main_line,
                main_text,
            )
        ]
    if not _AUTO_RESUME.search(main_text):
        return [
            ScriptIssue(
                "auto_resume_not_on_main_step",
                "the last `srun` step (the launch) lacks `--auto-resume=1`: only the step carrying the "
                "flag is resumed, the others in the allocation are not",
                main_line,
                main_text,
            )
        ]
    return []


def script_issues(script: str, exclusive: bool | None) -> list[ScriptIssue]:
    """Auto-resume problems in a batch script; `exclusive` is what `scontrol show job` says."""
    lines = _logical_lines(script)
    issues = _srun_issues(lines)
    issues += [
        ScriptIssue(
            "stale_nodelist",
            "the node list comes from `$SLURM_JOB_NODELIST`, which can be stale after an auto-resume "
            "node replacement: derive it at run time with `scontrol show jobid=$SLURM_JOBID`",
            n,
            text,
        )
        for n, text in lines
        if _STALE_NODELIST.search(text)
    ]
    if exclusive is not True and not any(_EXCLUSIVE.search(text) for _, text in lines):
        issues.append(
            ScriptIssue(
                "not_exclusive",
                "the allocation is not exclusive (no `#SBATCH --exclusive`): auto-resume needs an "
                "exclusive allocation, and shared nodes let other jobs contend for GPUs and EFA",
            )
        )
    return issues


def _memlock_issue(setting: HostSetting) -> ScriptIssue | None:
    match = _MEMLOCK.search(setting.text)
    if not match:
        return None
    value = next(v for v in match.groups() if v is not None)
    if value.lower() in ("unlimited", "infinity", "-1"):
        return None
    return ScriptIssue(
        "memlock_limited",
        f"memlock is limited to {value}: EFA/RDMA needs locked memory; set it unlimited "
        "(or a large fixed value) for slurmd-launched jobs",
        setting.line,
        setting.text,
        setting.path,
    )


def _remove_ipc_issue(settings: list[HostSetting], files_read: list[str]) -> ScriptIssue | None:
    found = [(s, m.group("value").lower()) for s in settings if (m := _REMOVE_IPC.search(s.text))]
    if LOGIND not in files_read or any(value == "no" for _, value in found):
        return None
    where = found[0][0] if found else HostSetting(path=LOGIND, line=1, text="RemoveIPC not set (default yes)")
    return ScriptIssue(
        "remove_ipc",
        "systemd-logind removes a user's shared memory when their last session ends "
        "(RemoveIPC defaults to yes): NCCL's /dev/shm segments vanish under a running job",
        where.line if found else None,
        where.text,
        where.path,
    )


def _tcp_issues(settings: list[HostSetting]) -> list[ScriptIssue]:
    return [
        ScriptIssue(
            "tcp_transport_forced",
            f"{match.group('name')}={match.group('value')} forces TCP instead of EFA for every job",
            setting.line,
            setting.text,
            setting.path,
        )
        for setting in settings
        for match in _ENV.finditer(setting.text)
        if (match.group("name"), match.group("value").strip("\"'")) in _TCP_FALLBACK
    ]


def host_setting_issues(settings: list[HostSetting], files_read: list[str]) -> list[ScriptIssue]:
    """RemoveIPC left on, memlock limited, and NCCL/libfabric variables forcing TCP."""
    issues = [issue for setting in settings if (issue := _memlock_issue(setting))]
    remove_ipc = _remove_ipc_issue(settings, files_read)
    return issues + ([remove_ipc] if remove_ipc else []) + _tcp_issues(settings)


def nccl_env_lines(settings: list[HostSetting]) -> list[HostSetting]:
    """The host-file lines that set NCCL / libfabric variables, for the record."""
    return [s for s in settings if _ENV.search(s.text)]
