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
    name: str
    text: str
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def available_scripts() -> list[str]:
    return sorted(path.stem for path in SCRIPTS_DIR.glob("*.sh"))


def probe_script(name: str, params: Mapping[str, str] | None = None) -> ProbeScript:
    """The shipped script `name`, with validated parameters."""
    path = SCRIPTS_DIR / f"{name}.sh"
    if name not in available_scripts():
        raise UnknownProbeScript(
            f"no probe script {name!r}; shipped scripts: {', '.join(available_scripts())}"
        )
    checked: dict[str, str] = {}
    for key, value in (params or {}).items():
        if not _PARAM_NAME.fullmatch(key) or not _PARAM_VALUE.fullmatch(value):
            raise ValueError(f"probe parameter {key}={value!r} is not a plain identifier or value")
        checked[key] = value
    return ProbeScript(name=name, text=path.read_text(encoding="utf-8"), params=MappingProxyType(checked))
