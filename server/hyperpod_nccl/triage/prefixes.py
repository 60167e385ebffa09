"""Peel launcher and logger prefixes off a line: what is left is the message, plus who wrote it.

Prefixes nest, outermost first: a log store's row (CloudWatch's console or Insights table copied as
`| 2024-05-01 10:00:00.000 | message |`, or its events view as `<ISO time><TAB>message`),
`kubectl logs --timestamps`, Ray's `(Worker pid=…)`, mpirun's
`[1,3]<stdout>:`, srun `--label`'s `3: `, torchrun's `[default3]:` (a *local* rank), PyTorch's
`[rank3]:` / `[rank3]: ` (global), then a logger prefix (c10 glog, torchrun's elastic logging,
NCCL's `host:pid:tid [dev]`, slurmstepd's `slurmstepd-host:`, dmesg, journald). Timestamps are
returned as `YYYY-MM-DDTHH:MM:SS`, with year `0000` when the format carries none (see `timeline`).

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

_LOG_STORE_ROW = re.compile(
    r"\|?\s*(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?(?:\s*\|\s*|\t)"
)
_KUBECTL_TIME = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z ")
_KUBECTL_POD = re.compile(r"\[pod/[^\]]+\] ")
_RAY = re.compile(r"\(\w+ pid=\d+(?:, ip=[\d.]+)?\) ")
_MPIRUN = re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>:\s?")
_SRUN = re.compile(r"\s{0,4}(\d{1,6}): ")
_TORCHRUN = re.compile(r"\[(?!rank\d)[A-Za-z_][\w-]*?(\d+)\]:\s?")
_TORCH_RANK = re.compile(r"\[rank(\d+)\]:\s?")
_C10 = re.compile(r"\[[IWEF](?:(\d{1,2})(\d\d) (\d\d:\d\d:\d\d)\.\d+)? ?[\w./-]+:\d+\] ")
_ELASTIC_GLOG = re.compile(r"[IWECV](\d\d)(\d\d) (\d\d:\d\d:\d\d)\.\d+ \d+ [\w./-]+:\d+\] ")
_BRACKET_DATE = re.compile(r"\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:,\d+)?\] ")
_NCCL_HOST = re.compile(r"([\w.-]+):(\d+):\d+ \[\d+\] ")
_SLURMSTEPD = re.compile(r"slurmstepd-([\w.-]+): ")
_DMESG_T = re.compile(r"\[\w{3} (\w{3}) +(\d+) (\d\d:\d\d:\d\d) (\d{4})\] ")
_DMESG = re.compile(r"\[\s*\d+\.\d+\] ")
_JOURNAL = re.compile(r"(\w{3}) +(\d+) (\d\d:\d\d:\d\d) ([\w.-]+) kernel: ")
# Led by a literal so the regex engine jumps between `20`s; `\b` in front would make it try every
# position (30x slower on a long line). The word boundary is checked on the few matches instead.
_ANY_DATE = re.compile(r"(20\d\d-\d\d-\d\d)[ T_](\d\d:\d\d:\d\d)")
_MESSAGE_RANK = re.compile(r"\[(?:PG (?:ID )?(\d+)[^\]]*? )?Rank (\d+)\]|\[rank:? (\d+)\]")


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


def strip(line: str) -> Stripped:
    """Split a raw line into its message and what its prefixes say about it."""
    found = Stripped(line)
    text = _strip_launchers(line, found)
    text = _strip_logger(text, found)
    found.message = text
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
    if match := _LOG_STORE_ROW.match(text):
        found.stamp = f"{match.group(1)}T{match.group(2)}"
        text = text[match.end() :]
        if text.endswith("|"):  # the table row's closing border
            text = text[:-1].rstrip()
    if match := _KUBECTL_TIME.match(text):
        found.stamp = f"{match.group(1)}T{match.group(2)}Z"  # RFC 3339 in UTC: the one zoned format
        text = text[match.end() :]
    for simple in (_KUBECTL_POD, _RAY):
        if match := simple.match(text):
            text = text[match.end() :]
    if match := _MPIRUN.match(text) or _SRUN.match(text):
        found.label = int(match.group(1))
        text = text[match.end() :]
    if match := _TORCHRUN.match(text):
        found.local_rank = int(match.group(1))
        text = text[match.end() :]
        found.task = found.label  # the label numbers torchrun agents: a launcher, not a rank
    while match := _TORCH_RANK.match(text):
        found.rank = int(match.group(1))
        text = text[match.end() :]
    if found.rank is None and found.local_rank is None and found.label is not None:
        found.rank, found.rank_from_label = found.label, True
    return text


def _strip_logger(text: str, found: Stripped) -> str:
    if match := _C10.match(text):
        month, day, clock = match.groups()
        if clock:
            found.stamp = f"{UNKNOWN_YEAR}-{int(month):02d}-{day}T{clock}"
        return text[match.end() :]
    if match := _ELASTIC_GLOG.match(text):
        found.stamp = f"{UNKNOWN_YEAR}-{match.group(1)}-{match.group(2)}T{match.group(3)}"
        return text[match.end() :]
    if match := _BRACKET_DATE.match(text):
        found.stamp = f"{match.group(1)}T{match.group(2)}"
        text = text[match.end() :]
    if match := _NCCL_HOST.match(text):
        found.host = match.group(1)
        found.pid = int(match.group(2))
        return text[match.end() :]
    if match := _SLURMSTEPD.match(text):
        found.host = match.group(1)
        return text[match.end() :]
    return _strip_kernel(text, found)


def _strip_kernel(text: str, found: Stripped) -> str:
    if match := _DMESG_T.match(text):
        month, day, clock, year = match.groups()
        found.stamp = f"{year}-{_MONTHS.get(month, 1):02d}-{int(day):02d}T{clock}"
        return text[match.end() :]
    if match := _DMESG.match(text):
        return text[match.end() :]
    if match := _JOURNAL.match(text):
        month, day, clock, host = match.groups()
        found.stamp = f"{UNKNOWN_YEAR}-{_MONTHS.get(month, 1):02d}-{int(day):02d}T{clock}"
        found.host = host
        return text[match.end() :]
    return text
