"""`nvidia-fabricmanager` service state and version, and `dcgmi health -c`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hyperpod_nccl.probes.parse.gpu import Field
from hyperpod_nccl.probes.parse.sections import Line, Section

_ACTIVE = re.compile(r"^active:\s*(?P<state>\S*)")
_LOAD_STATE = re.compile(r"^LoadState=(?P<state>\S+)")
_FM_VERSION = re.compile(r"Fabric Manager version is\s*:\s*(?P<version>\S+)", re.IGNORECASE)
_OVERALL = re.compile(r"Overall Health\s*\|?\s*:?\s*(?P<health>Healthy|Warning|Failure)", re.IGNORECASE)
_DCGM_UNAVAILABLE = re.compile(r"Unable to establish a connection|host engine|Error:", re.IGNORECASE)


@dataclass
class FabricFacts:
    systemd: bool = True
    state: Field | None = None
    unit_missing: bool = False
    version: Field | None = None


@dataclass
class DcgmFacts:
    installed: bool = False
    overall: Field | None = None
    unavailable: Line | None = None
    detail: tuple[Line, ...] = ()


def parse_fabric(section: Section) -> FabricFacts:
    facts = FabricFacts()
    for line in section.numbered():
        if (match := _ACTIVE.match(line.text)) and match.group("state"):
            facts.state = Field(match.group("state"), line)
        elif (match := _LOAD_STATE.match(line.text)) and match.group("state") == "not-found":
            facts.unit_missing = True
        elif match := _FM_VERSION.search(line.text):
            facts.version = Field(match.group("version"), line)
        elif "not installed: systemctl" in line.text or "not been booted with systemd" in line.text:
            facts.systemd = False
    return facts


def parse_dcgm(section: Section) -> DcgmFacts:
    facts = DcgmFacts(installed=bool(section.lines) and not section.not_installed)
    if not facts.installed:
        return facts
    found = section.first(_OVERALL)
    if found:
        facts.overall = Field(found[0].group("health").capitalize(), found[1])
        facts.detail = tuple(
            line for line in section.numbered() if line.number > found[1].number and line.text.strip("|+-= ")
        )
    elif found_error := section.first(_DCGM_UNAVAILABLE):
        facts.unavailable = found_error[1]
    return facts
