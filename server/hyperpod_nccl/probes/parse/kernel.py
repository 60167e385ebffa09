"""Kernel log lines (NVRM Xid, SXid, fallen off the bus, OOM killer, AER, PCIe link, NIC link)
and `lspci -vv` link status, as events. Formats: shared/log-formats.md § 6."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from hyperpod_nccl.probes.parse.sections import Line, Section

XID = re.compile(
    r"NVRM: Xid \(PCI:(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): (?P<code>\d+),"
    r"(?: pid=(?P<pid>'[^']*'|[^,]*),)?(?: name=(?P<name>[^,]*),)?\s*(?P<text>.*)"
)
SXID = re.compile(r"SXid \(PCI:(?P<bdf>[^)]+)\): (?P<code>\d+), (?P<severity>Fatal|Non-fatal)", re.IGNORECASE)
FELL_OFF = re.compile(r"NVRM: GPU (?P<bdf>[0-9a-fA-F:.]+): GPU has fallen off the bus")
OOM = re.compile(
    r"(?:Out of memory|Memory cgroup out of memory): Killed process (?P<pid>\d+) \((?P<comm>[^)]*)\)"
)
AER = re.compile(
    r"(?:AER: (?P<aer>Corrected|Uncorrected \((?:Non-Fatal|Fatal)\)) error received"
    r"|PCIe Bus Error: severity=(?P<bus>Corrected|Uncorrected \((?:Non-Fatal|Fatal)\)))"
)
LNKSTA_DOWNGRADED = re.compile(r"LnkSta:.*\(downgraded\)")
BANDWIDTH_LIMITED = re.compile(r"available PCIe bandwidth, limited by .*\(capable of")
NIC_LINK = re.compile(r"(?<!\S)(?P<dev>\S{1,64}?):? (?:Port: \d+ )?Link (?P<state>down|up|DOWN|UP|Down|Up)\b")
_LSPCI_DEVICE = re.compile(r"^(?P<bdf>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]) (?P<what>.*)$")


@dataclass(frozen=True)
class XidEvent:
    bdf: str
    code: int
    process: str
    text: str
    line: Line


@dataclass(frozen=True)
class PcieDowngrade:
    device: str
    width_downgraded: bool
    kind: str  # "gpu" or "nic" (from lspci), "log" (a kernel line)
    line: Line


@dataclass
class KernelFacts:
    readable: bool = True
    xids: list[XidEvent] = field(default_factory=list)
    sxids: list[tuple[int, bool, Line]] = field(default_factory=list)  # code, fatal, line
    fell_off: list[Line] = field(default_factory=list)
    oom_kills: list[Line] = field(default_factory=list)
    aer: list[tuple[bool, Line]] = field(default_factory=list)  # uncorrected, line
    pcie_downgrades: list[PcieDowngrade] = field(default_factory=list)
    bandwidth_limited: list[Line] = field(default_factory=list)
    nic_down: dict[str, list[Line]] = field(default_factory=dict)
    pcie_devices: Counter[str] = field(default_factory=Counter)  # lspci devices per kind


def _kernel_line(line: Line, facts: KernelFacts) -> None:
    text = line.text
    if xid := XID.search(text):
        process = (xid.group("name") or xid.group("pid") or "").strip().strip("'")
        facts.xids.append(
            XidEvent(xid.group("bdf").lower(), int(xid.group("code")), process, xid.group("text"), line)
        )
    elif sxid := SXID.search(text):
        facts.sxids.append((int(sxid.group("code")), sxid.group("severity").lower() == "fatal", line))
    elif FELL_OFF.search(text):
        facts.fell_off.append(line)
    elif OOM.search(text):
        facts.oom_kills.append(line)
    elif aer := AER.search(text):
        severity = aer.group("aer") or aer.group("bus")
        facts.aer.append((severity.startswith("Uncorrected"), line))
    elif LNKSTA_DOWNGRADED.search(text):
        facts.pcie_downgrades.append(PcieDowngrade("kernel log", _width_down(text), "log", line))
    elif BANDWIDTH_LIMITED.search(text):
        facts.bandwidth_limited.append(line)
    elif (nic := NIC_LINK.search(text)) and nic.group("state").lower() == "down":
        facts.nic_down.setdefault(nic.group("dev"), []).append(line)


def _width_down(text: str) -> bool:
    return bool(re.search(r"Width x\d+ \(downgraded\)", text))


def parse_kernel(kernel_log: Section, pcie: Section) -> KernelFacts:
    facts = KernelFacts()
    denied = any(
        "Operation not permitted" in line or "Permission denied" in line for line in kernel_log.lines
    )
    facts.readable = not denied and not kernel_log.not_installed
    for line in kernel_log.numbered():
        _kernel_line(line, facts)
    device, kind = "unknown device", None
    for line in pcie.numbered():
        if header := _LSPCI_DEVICE.match(line.text):
            device, kind = header.group("bdf"), _device_kind(header.group("what"))
            if kind is not None:
                facts.pcie_devices[kind] += 1
        elif kind is not None and LNKSTA_DOWNGRADED.search(line.text):
            facts.pcie_downgrades.append(PcieDowngrade(device, _width_down(line.text), kind, line))
    return facts


def _device_kind(description: str) -> str | None:
    """GPUs and NICs carry the training traffic; NVSwitch management bridges and the like do not,
    and their narrow links are by design."""
    if re.search(r"3D controller|VGA compatible controller", description):
        return "gpu"
    if re.search(r"Ethernet controller|Elastic Fabric Adapter|Infiniband controller", description):
        return "nic"
    return None
