"""The only scripts a runner can execute: the `*.sh` files shipped in `probes/scripts/`.

A `ProbeScript` cannot be built from caller text; it is looked up by name in this folder. Script
parameters travel as environment variables whose names and values are checked against narrow
patterns, so nothing a caller passes is ever interpreted by a shell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
SECTION_MARKER = "===== hyperpod-nccl:section {name} ====="

_PARAM_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_PARAM_VALUE = re.compile(r"[A-Za-z0-9_.,:/=+@-]{0,256}")


class UnknownProbeScript(LookupError):
    pass


@dataclass(frozen=True)
class ProbeScript:
    """A shipped script and its parameters. Constructing one directly is checked just as
    `probe_script` is: text that is not byte-for-byte a shipped script is refused, so a runner
    handed a ProbeScript can trust it."""

    name: str
    text: str
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.name not in available_scripts():
            raise UnknownProbeScript(
                f"no probe script {self.name!r}; shipped scripts: {', '.join(available_scripts())}"
            )
        if self.text != (SCRIPTS_DIR / f"{self.name}.sh").read_text(encoding="utf-8"):
            raise UnknownProbeScript(f"probe script {self.name!r} does not match the shipped file")
        for key, value in self.params.items():
            if not _PARAM_NAME.fullmatch(key) or not _PARAM_VALUE.fullmatch(value):
                raise ValueError(f"probe parameter {key}={value!r} is not a plain identifier or value")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


def available_scripts() -> list[str]:
    return sorted(path.stem for path in SCRIPTS_DIR.glob("*.sh"))


def probe_script(name: str, params: Mapping[str, str] | None = None) -> ProbeScript:
    """The shipped script `name`, with validated parameters."""
    if name not in available_scripts():
        raise UnknownProbeScript(
            f"no probe script {name!r}; shipped scripts: {', '.join(available_scripts())}"
        )
    text = (SCRIPTS_DIR / f"{name}.sh").read_text(encoding="utf-8")
    return ProbeScript(name=name, text=text, params=dict(params or {}))
