"""Host identity, interface MTUs, /dev/shm, memlock and stack limits, RemoveIPC, stale NCCL shm
files, firewall drops and node-wide NCCL / libfabric settings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperpod_nccl.probes.parse.gpu import Field
from hyperpod_nccl.probes.parse.sections import Line, Section

_HOST_FIELD = re.compile(r"^(?P<key>hostname|instance_id|instance_type|kernel|user):\s*(?P<value>\S*)")
_IP_LINK = re.compile(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>\s+mtu\s+(?P<mtu>\d+)")
_SYS_MTU = re.compile(r"^(?P<name>\S+) mtu (?P<mtu>\d+)$")
# Interfaces that are not a node's data path: loopback, bridges, container and CNI plumbing.
_VIRTUAL_IF = re.compile(
    r"^(lo|docker\d*|veth|cali|cni|flannel|vxlan|br-|virbr|ifb|kube|tunl|nodelocaldns|dummy|eni[0-9a-f]{6,}|pod-id)"
)
_DF = re.compile(r"^\S+\s+(?P<size>\d+)\s+(?P<used>\d+)\s+\d+\s+\d+%\s+/dev/shm$")
_SHELL_LIMIT = re.compile(r"^shell (?P<kind>memlock|stack):\s*(?P<value>\S+)")
_DAEMON_LIMIT = re.compile(
    r"^(?P<daemon>\S+) Max (?P<kind>locked memory|stack size)\s+(?P<soft>\S+)\s+\S+\s*(?P<unit>\S*)"
)
_REMOVE_IPC = re.compile(r"^\s*RemoveIPC\s*=\s*(?P<value>\S+)", re.IGNORECASE)
_NCCL_FILES = re.compile(r"^nccl files:\s*(?P<count>\d+)")
_IPTABLES_DROP = re.compile(
    r"^-(?:P (?P<policy>INPUT|OUTPUT) DROP|A (?P<chain>INPUT|OUTPUT) .*-j (?:DROP|REJECT))"
)
_NFT_DROP = re.compile(r"hook (?:input|output).*policy drop", re.IGNORECASE)
_ENV_SETTING = re.compile(
    r"^(?P<file>[^:]+):\s*(?:export\s+)?(?P<name>(?:NCCL|FI|OFI_NCCL)_[A-Z0-9_]+)=(?P<value>\S*)"
)


@dataclass(frozen=True)
class Limit:
    """A limit in KiB (None = unlimited), whose it is (shell, slurmd, containerd...) and where."""

    owner: str
    kib: int | None
    line: Line


@dataclass(frozen=True)
class Setting:
    file: str
    name: str
    value: str
    line: Line


@dataclass
class HostFacts:
    hostname: str | None = None
    instance_id: str | None = None
    instance_type: str | None = None
    mtus: dict[str, Field] = field(default_factory=dict)
    shm_size_kib: Field | None = None
    shm_used_kib: int = 0
    memlock: list[Limit] = field(default_factory=list)
    stack: list[Limit] = field(default_factory=list)
    remove_ipc: Field | None = None
    nccl_shm_files: int = 0
    stale_shm_files: list[Line] = field(default_factory=list)
    firewall_drops: list[Line] = field(default_factory=list)
    settings: list[Setting] = field(default_factory=list)


def _host(section: Section, facts: HostFacts) -> None:
    for line in section.numbered():
        match = _HOST_FIELD.match(line.text)
        if (
            match
            and match.group("value")
            and match.group("key") in ("hostname", "instance_id", "instance_type")
        ):
            setattr(facts, match.group("key"), match.group("value"))


def _mtus(section: Section, facts: HostFacts) -> None:
    for line in section.numbered():
        match = _IP_LINK.match(line.text) or _SYS_MTU.match(line.text)
        if not match or _VIRTUAL_IF.match(match.group("name")):
            continue
        flags = match.groupdict().get("flags")
        if flags is not None and "UP" not in flags.split(","):
            continue
        facts.mtus[match.group("name")] = Field(match.group("mtu"), line)


def _kib(value: str, unit: str = "kib") -> int | None:
    if value == "unlimited":
        return None
    if not value.isdigit():
        return -1
    return int(value) // 1024 if unit == "bytes" else int(value)


def _limits(section: Section, facts: HostFacts) -> None:
    for line in section.numbered():
        if match := _SHELL_LIMIT.match(line.text):
            target = facts.memlock if match.group("kind") == "memlock" else facts.stack
            target.append(Limit("shell", _kib(match.group("value")), line))
        elif match := _DAEMON_LIMIT.match(line.text):
            target = facts.memlock if match.group("kind") == "locked memory" else facts.stack
            target.append(Limit(match.group("daemon"), _kib(match.group("soft"), match.group("unit")), line))


def _remaining(sections: dict[str, Section], facts: HostFacts) -> None:
    remove_ipc = sections.get("remove_ipc")
    for line in remove_ipc.numbered() if remove_ipc else ():
        if match := _REMOVE_IPC.match(line.text):
            facts.remove_ipc = Field(match.group("value").lower(), line)
    shm_files = sections.get("shm_files")
    for line in shm_files.numbered() if shm_files else ():
        if match := _NCCL_FILES.match(line.text):
            facts.nccl_shm_files = int(match.group("count"))
        elif "/dev/shm/nccl-" in line.text:
            facts.stale_shm_files.append(line)
    firewall = sections.get("firewall")
    for line in firewall.numbered() if firewall else ():
        if _IPTABLES_DROP.match(line.text) or _NFT_DROP.search(line.text):
            facts.firewall_drops.append(line)
    env_files = sections.get("env_files")
    for line in env_files.numbered() if env_files else ():
        if match := _ENV_SETTING.match(line.text):
            facts.settings.append(
                Setting(match.group("file"), match.group("name"), match.group("value"), line)
            )


def parse_host(sections: dict[str, Section]) -> HostFacts:
    facts = HostFacts()
    for name, reader in (("host", _host), ("mtu", _mtus), ("limits", _limits)):
        if name in sections:
            reader(sections[name], facts)
    if "shm" in sections and (found := sections["shm"].first(_DF)):
        match, line = found
        facts.shm_size_kib = Field(match.group("size"), line)
        facts.shm_used_kib = int(match.group("used"))
    _remaining(sections, facts)
    return facts
