"""Peel launcher and logger prefixes off a line: what is left is the message, plus who wrote it.

Prefixes nest, outermost first: a log store's row (CloudWatch's console or Insights table copied as
`| 2024-05-01 10:00:00.000 | message |`, or its events view as `<ISO time><TAB>message`),
`kubectl logs --timestamps`, pdsh's `host: `, Ray's `(Worker pid=…)`, mpirun's
`[1,3]<stdout>:`, srun `--label`'s `3: `, torchrun's `[default3]:` (a *local* rank), PyTorch's
`[rank3]:` / `[rank3]: ` (global), then a logger prefix (c10 glog, torchrun's elastic logging, vLLM's,
NCCL's `host:pid:tid [dev]`, slurmstepd's `slurmstepd-host:`, UCX's `[host:pid:thread:tid]`, dmesg,
journald). Timestamps are returned as `YYYY-MM-DDTHH:MM:SS`, with year `0000` when the format
carries none (see `timeline`).

srun `--label` numbers tasks. A task is a global rank only when srun starts one task per rank;
under torchrun (`[default3]:` inside the label) a task is a launcher, one per node, and the
rank comes from the `[rankN]:` prefix or from the local rank on that launcher.

Only `kubectl logs --timestamps` says its zone (UTC): its stamps end in `Z`; every other format
carries local time with no zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNKNOWN_YEAR = "0000"
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, 1)}

# Each prefix a line may carry, in the order they nest. Every one is optional, so the launcher
# prefixes form one regex and the logger prefixes another: a line costs two matches, not one per
# format (a failed match costs about what a successful one does: the call, not the scan).
_LOG_STORE_ROW = (
    r"\|?\s*(?P<row_day>\d{4}-\d\d-\d\d)[ T](?P<row_clock>\d\d:\d\d:\d\d)(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"(?:\s*\|\s*|\t)"
)
_KUBECTL_TIME = r"(?P<kube_day>\d{4}-\d\d-\d\d)T(?P<kube_clock>\d\d:\d\d:\d\d)(?:\.\d+)?Z "
_KUBECTL_POD = r"\[pod/[^\]]+\] "
# Ray's `(RayTrainWorker pid=812, ip=10.0.0.2) `: the actor's name or its own repr (`worker6, rank=6,`),
# nested when one actor runs another's process (`(LLMRayActor pid=5) (EngineCore_DP0 pid=6) `).
_RAY = r"(?P<ray>(?:\([^()\n]{0,160}?\bpid=\d+(?:, ip=[\w.:-]+)?\) ){1,3})"
_RAY_RANK = re.compile(r"\brank=(\d+)")
_BAR_REACH = 160  # a progress bar's redraw is shorter than this
# pdsh's `host: ` in front of each remote line (DeepSpeed's multi-node launcher, `pdsh -w`): a host name
# with a digit and a dot or hyphen (`compute-dy-p4d24xlarge-77: `, `ip-10-0-1-5: `), so a message that
# starts with a word and a colon (`Error: `, `rank0: `, `top5: 0.91`) is not read as one, nor
# slurmstepd's own `slurmstepd-<host>: ` (a logger prefix, below).
_PDSH = (
    r"(?P<pdsh>(?!slurmstepd-)(?=[^\s:]{0,253}\d)[A-Za-z][A-Za-z0-9]*(?:[.-][A-Za-z0-9]+)+)"
    r"(?<!Error)(?<!Exception)(?<!Warning): "  # not a Java class (`ml.dmlc.xgboost4j.java.XGBoostError: `)
)
_MPIRUN = r"\[\d+,(?P<mpirun>\d+)\]<std(?:out|err)>:\s?"
_SRUN = r"\s{0,4}(?P<srun>\d{1,6}): "
_TORCHRUN = r"\[(?!rank\d)[A-Za-z_][\w-]{0,63}?(?P<local>\d{1,6})\]:\s?"
_TORCH_RANK = r"\[rank(?P<rank>\d+)\]:\s?"  # repeated: the last one is the rank
# A paste quoted as a Markdown block (`> [rank8]: TypeError: …`) keeps its launcher prefixes behind it.
_QUOTE = r"(?:> ?)?"
_LAUNCHERS = re.compile(
    rf"{_QUOTE}(?P<row>{_LOG_STORE_ROW})?(?:{_KUBECTL_TIME})?(?:{_KUBECTL_POD})?(?:{_PDSH})?(?:{_RAY})?(?:{_MPIRUN}|{_SRUN})?"
    rf"(?:{_TORCHRUN})?(?:{_TORCH_RANK})*"
)

_C10 = (
    r"\[[IWEF](?:(?P<c10_month>\d{1,2})(?P<c10_day>\d\d) (?P<c10_clock>\d\d:\d\d:\d\d)\.\d+)? ?"
    r"[\w./-]+:\d+\] "
)
_ELASTIC_GLOG = (
    r"[IWECV](?P<glog_month>\d\d)(?P<glog_day>\d\d) (?P<glog_clock>\d\d:\d\d:\d\d)\.\d+ \d+ [\w./-]+:\d+\] "
)
# vLLM's and SGLang's logger (`ERROR 05-30 22:22:26 [pynccl.py:153] `, older `INFO 11-18 03:39:17
# llm_engine.py:72] `): a level, a month-day and a time, then the source.
_LEVEL_MONTH_DAY = (
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<vllm_month>\d\d)-(?P<vllm_day>\d\d) "
    r"(?P<vllm_clock>\d\d:\d\d:\d\d)(?:\.\d+)? \[?[\w./-]{1,200}:\d+\] "
)
_BRACKET_DATE = r"\[(?P<bracket_day>\d{4}-\d\d-\d\d) (?P<bracket_clock>\d\d:\d\d:\d\d)(?:,\d+)?\] "
_NCCL_HOST = r"(?P<nccl_host>[\w.-]+):(?P<nccl_pid>\d+):\d+ \[\d+\] "
_SLURMSTEPD = r"slurmstepd-(?P<stepd_host>[\w.-]+): "
# UCX's own lines (`[pool0-1616:1864777:0:1864777] Caught signal 4 (Illegal instruction …)`, its
# backtraces): host, pid, thread index, thread id; indented as often as not in a pasted block.
_UCX = r"[ \t]{0,8}\[(?P<ucx_host>[A-Za-z][\w.-]*):(?P<ucx_pid>\d+):\d+:\d+\] "
# Open MPI's own messages (`[second-node][[22157,1],4][btl_tcp_endpoint.c:626:…] received unexpected
# process identifier …`): the host, then the process's name, whose last number is its MPI rank.
_OPEN_MPI = r"\[(?P<ompi_host>[A-Za-z][\w.-]{0,252})\]\[\[\d+,\d+\],(?P<ompi_rank>\d+)\]"
_DMESG_T_DATE = (
    r"(?P<dmesg_month>\w{3}) +(?P<dmesg_day>\d+) (?P<dmesg_clock>\d\d:\d\d:\d\d) (?P<dmesg_year>\d{4})"
)
_DMESG_T = rf"\[\w{{3}} {_DMESG_T_DATE}\] "
_DMESG = r"(?P<dmesg>\[\s*\d+\.\d+\] )"
_JOURNAL = (
    r"(?P<journal_month>\w{3}) +(?P<journal_day>\d+) (?P<journal_clock>\d\d:\d\d:\d\d) "
    r"(?P<journal_host>[\w.-]+) kernel: "
)
# c10's glog and torchrun's elastic glog end the prefixes; a bracketed date may come before a host
# prefix (NCCL's `host:pid:tid [dev]`, slurmstepd's) or a kernel one (dmesg, journald).
_LOGGERS = re.compile(
    rf"(?P<c10>{_C10})|(?P<glog>{_ELASTIC_GLOG})|{_LEVEL_MONTH_DAY}"
    rf"|(?:{_BRACKET_DATE})?(?:{_NCCL_HOST}|{_SLURMSTEPD}|{_UCX}|{_OPEN_MPI}|{_DMESG_T}|{_DMESG}|{_JOURNAL})?"
)
# Led by a literal so the regex engine jumps between `20`s; `\b` in front would make it try every
# position (30x slower on a long line). The word boundary is checked on the few matches instead.
_ANY_DATE = re.compile(r"(20\d\d-\d\d-\d\d)[ T_](\d\d:\d\d:\d\d)")
_MESSAGE_RANK = re.compile(r"\[(?:PG (?:ID )?(\d+)[^\]]{0,200}? )?Rank (\d+)\]|\[rank:? (\d+)\]")


@dataclass(slots=True)
class Stripped:
    message: str
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    stamp: str | None = None
    task: int | None = None  # srun --label task of a launcher (torchrun agent), not a rank
    label: int | None = None  # the srun --label / mpirun task number, whatever it turns out to be
    rank_from_label: bool = False  # `rank` is the label: a rank only if no line of the file says otherwise
    rank_from_launcher: bool = False  # a launcher's per-line prefix (`[rank1]:`, `[1,3]<stdout>:`) named it
    since_boot: bool = False  # stamped in seconds since the kernel booted (`dmesg` without -T): no clock time


def strip(line: str) -> Stripped:
    """Split a raw line into its message and what its prefixes say about it."""
    found = Stripped(line)
    text = _strip_launchers(line, found)
    text = _strip_logger(text, found)
    found.message = text
    found.rank_from_launcher = found.rank is not None or found.local_rank is not None
    if found.rank is None:
        found.rank = message_rank(text)
    if found.stamp is None and (date := _first_date(text)):
        found.stamp = f"{date.group(1)}T{date.group(2)}"
    return found


def _first_date(text: str) -> re.Match[str] | None:
    for date in _ANY_DATE.finditer(text):
        start = date.start()
        if not start or not (text[start - 1].isalnum() or text[start - 1] == "_"):
            return date
    return None


_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])rank[-_.]?(\d+)(?!\d)", re.IGNORECASE)


def rank_in_file_name(source: str) -> int | None:
    """The rank a file's name gives it (`rank-5.log`, `train_rank2.log`), or None."""
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    found = _RANK_IN_NAME.search(name)
    return int(found.group(1)) if found else None


def message_rank(message: str) -> int | None:
    """A global rank named inside the message: `[Rank 3]`, `[PG ID 0 … Rank 3]`, `[rank 3]`."""
    match = _MESSAGE_RANK.search(message)
    if not match:
        return None
    group, pg_rank, plain = match.groups()
    if plain is not None:
        return int(plain)
    return int(pg_rank) if group in (None, "0") else None  # a sub-group's rank is not global


def _strip_launchers(text: str, found: Stripped) -> str:
    match = _LAUNCHERS.match(text)  # every part is optional: it matches, if only the empty string
    if match is None or not match.end():
        match = _after_progress_bar(text)
        if match is None:
            return text
    day, clock, zoned = match.group("row_day", "row_clock", "kube_day")
    if zoned:
        found.stamp = f"{zoned}T{match.group('kube_clock')}Z"  # RFC 3339 in UTC: the one zoned format
    elif day:
        found.stamp = f"{day}T{clock}"
    if pdsh := match.group("pdsh"):
        found.host = pdsh
    mpirun, srun, local, rank = match.group("mpirun", "srun", "local", "rank")
    label = mpirun or srun
    if label is not None:
        found.label = int(label)
    if local is not None:
        found.local_rank = int(local)
        found.task = found.label  # the label numbers torchrun agents: a launcher, not a rank
    if rank is not None:
        found.rank = int(rank)
    elif local is None and found.label is not None:
        found.rank, found.rank_from_label = found.label, True
    elif (ray := match.group("ray")) and (ray_rank := _RAY_RANK.search(ray)):
        found.rank = int(ray_rank.group(1))
    text = text[match.end() :]
    if match.group("row") and text.endswith("|"):  # the table row's closing border
        text = text[:-1].rstrip()
    return text


def _after_progress_bar(text: str) -> re.Match[str] | None:
    """A launcher prefix behind a progress bar's last redraw (`  0%|  | 0/4 [00:00<?, ?it/s][1,3]<stdout>:`):
    a terminal's carriage returns pasted as one line. The line is the prefixed process's."""
    end = max(text.find("it/s]", 0, _BAR_REACH), text.find("s/it]", 0, _BAR_REACH))
    if end < 0:
        return None
    match = _LAUNCHERS.match(text, end + 5)
    return match if match is not None and match.end() > end + 5 else None


def _strip_logger(text: str, found: Stripped) -> str:
    match = _LOGGERS.match(text)  # every part is optional: it matches, if only the empty string
    if match is None or not match.end():
        return text
    groups = match.groupdict()
    if match.group("c10"):
        if groups["c10_clock"]:
            month = int(groups["c10_month"])
            found.stamp = f"{UNKNOWN_YEAR}-{month:02d}-{groups['c10_day']}T{groups['c10_clock']}"
    elif match.group("glog"):
        found.stamp = f"{UNKNOWN_YEAR}-{groups['glog_month']}-{groups['glog_day']}T{groups['glog_clock']}"
    elif groups["vllm_clock"]:
        found.stamp = f"{UNKNOWN_YEAR}-{groups['vllm_month']}-{groups['vllm_day']}T{groups['vllm_clock']}"
    elif groups["bracket_day"]:
        found.stamp = f"{groups['bracket_day']}T{groups['bracket_clock']}"
    if groups["nccl_host"]:
        found.host = groups["nccl_host"]
        found.pid = int(groups["nccl_pid"])
    elif groups["stepd_host"]:
        found.host = groups["stepd_host"]
    elif groups["ucx_host"]:
        found.host, found.pid = groups["ucx_host"], int(groups["ucx_pid"])
    elif groups["ompi_host"]:
        found.host = groups["ompi_host"]
        if found.rank is None:
            found.rank = int(groups["ompi_rank"])
    elif groups["dmesg_month"]:
        month, day = _MONTHS.get(groups["dmesg_month"], 1), int(groups["dmesg_day"])
        found.stamp = f"{groups['dmesg_year']}-{month:02d}-{day:02d}T{groups['dmesg_clock']}"
    elif groups["dmesg"]:
        found.since_boot = True
    elif groups["journal_month"]:
        month, day = _MONTHS.get(groups["journal_month"], 1), int(groups["journal_day"])
        found.stamp = f"{UNKNOWN_YEAR}-{month:02d}-{day:02d}T{groups['journal_clock']}"
        found.host = groups["journal_host"]
    return text[match.end() :]
