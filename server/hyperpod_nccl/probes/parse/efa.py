"""EFA (fi_info, devices, libfabric / installer / aws-ofi-nccl versions) and host NCCL libraries."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperpod_nccl.probes.parse.gpu import Field
from hyperpod_nccl.probes.parse.sections import Line, Section

_PROVIDER = re.compile(r"^\s*provider:\s*(?P<name>\S+)")
_DOMAIN = re.compile(r"^\s*domain:\s*(?P<name>\S+)")
_LIBFABRIC = re.compile(r"^libfabric:\s*(?P<version>\S+)")
_INSTALLER = re.compile(r"EFA installer version:\s*(?P<version>\S+)")
_OFI_LIB = re.compile(r"^ofi_nccl_lib:\s*(?P<path>\S+)")
_OFI_VERSION = re.compile(
    r"(?:aws-ofi-nccl|ofi-nccl|libnccl-ofi)[^\d]*(?P<version>\d+\.\d+\.\d+)", re.IGNORECASE
)
_EFA_DEVICE = re.compile(r"^\S+ driver=efa\s*$")
_NCCL_LIB = re.compile(r"libnccl\.so\.(?P<version>\d+\.\d+\.\d+)")

# EFA devices each instance type exposes (debugging-guide.md § 6; DescribeInstanceTypes EfaInfo).
EXPECTED_EFA_DEVICES = {
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
}


@dataclass
class EfaFacts:
    fi_info_installed: bool = False
    efa_domains: list[Line] = field(default_factory=list)
    fi_info_text: list[Line] = field(default_factory=list)
    devices: list[Line] = field(default_factory=list)
    libfabric_version: Field | None = None
    installer_version: Field | None = None
    ofi_nccl_libs: list[Line] = field(default_factory=list)
    ofi_nccl_version: Field | None = None
    nccl_versions: list[Field] = field(default_factory=list)


def _fi_info(section: Section, facts: EfaFacts) -> None:
    facts.fi_info_installed = bool(section.lines) and not section.not_installed
    provider = None
    for line in section.numbered():
        if match := _PROVIDER.match(line.text):
            provider = match.group("name")
        elif (match := _DOMAIN.match(line.text)) and provider and provider.startswith("efa"):
            facts.efa_domains.append(line)
        if line.text.strip():
            facts.fi_info_text.append(line)


def _versions(section: Section, facts: EfaFacts) -> None:
    for line in section.numbered():
        if match := _LIBFABRIC.match(line.text):
            facts.libfabric_version = Field(match.group("version"), line)
        elif match := _INSTALLER.search(line.text):
            facts.installer_version = Field(match.group("version"), line)
        elif match := _OFI_LIB.match(line.text):
            facts.ofi_nccl_libs.append(line)
        elif (match := _OFI_VERSION.search(line.text)) and facts.ofi_nccl_version is None:
            facts.ofi_nccl_version = Field(match.group("version"), line)


def parse_efa(fi_info: Section, devices: Section, versions: Section, nccl: Section) -> EfaFacts:
    facts = EfaFacts()
    _fi_info(fi_info, facts)
    facts.devices = [line for line in devices.numbered() if _EFA_DEVICE.match(line.text)]
    _versions(versions, facts)
    seen: set[str] = set()
    for line in nccl.numbered():
        match = _NCCL_LIB.search(line.text)
        if match and match.group("version") not in seen:
            seen.add(match.group("version"))
            facts.nccl_versions.append(Field(match.group("version"), line))
    return facts
