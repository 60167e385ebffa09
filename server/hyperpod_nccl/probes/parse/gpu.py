"""`nvidia-smi -q`, the driver version file and `nvidia-smi nvlink -s`, as per-GPU health facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hyperpod_nccl.probes.parse.sections import Line, Section

_GPU_HEADER = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_FIELD = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s*:\s?(?P<value>.*)$")
_SMI_ERRORS = re.compile(
    r"Unable to determine the device handle|NVIDIA-SMI has failed|No devices were found"
    r"|Unknown Error|GPU is lost",
    re.IGNORECASE,
)
_DRIVER_FILE = re.compile(r"Kernel Module\s+(?P<version>\d+\.\d+(\.\d+)?)")
_NVLINK_GPU = re.compile(r"^GPU (?P<index>\d+): (?P<name>.*?)(?: \(UUID|$)")
_NVLINK_LINK = re.compile(r"^\s*Link (?P<link>\d+): (?P<state>.*)$")

# Clock-event reasons that mean the GPU runs slower than it should (not idle or app-set clocks).
THROTTLE_REASONS = frozenset(
    {"HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown"}
)


@dataclass(frozen=True)
class Field:
    value: str
    line: Line


@dataclass
class Gpu:
    bus_id: str
    fields: dict[str, Field] = field(default_factory=dict)

    def get(self, path: str) -> Field | None:
        return self.fields.get(path)

    def under(self, prefix: str) -> list[tuple[str, Field]]:
        return [(path, f) for path, f in self.fields.items() if path.startswith(prefix)]


@dataclass
class GpuFacts:
    installed: bool = False
    driver_version: Field | None = None
    cuda_version: Field | None = None
    attached: Field | None = None
    gpus: list[Gpu] = field(default_factory=list)
    errors: list[Line] = field(default_factory=list)
    nvlink_inactive: list[tuple[str, Line]] = field(default_factory=list)


def _level(indent: str) -> int:
    return len(indent.expandtabs(4)) // 4


def _read_fields(section: Section, facts: GpuFacts) -> None:
    current: Gpu | None = None
    path: list[str] = []
    for line in section.numbered():
        header = _GPU_HEADER.match(line.text)
        if header:
            current = Gpu(bus_id=header.group("bus").lower())
            facts.gpus.append(current)
            path = []
            continue
        match = _FIELD.match(line.text)
        if _SMI_ERRORS.search(line.text):
            facts.errors.append(line)
        if current is None:
            if match and match.group("key").strip() in ("Driver Version", "CUDA Version", "Attached GPUs"):
                setattr(
                    facts, _TOP_LEVEL[match.group("key").strip()], Field(match.group("value").strip(), line)
                )
            continue
        text = line.text.rstrip()
        if not text.strip():
            continue
        level = _level(text[: len(text) - len(text.lstrip())]) - 1
        path = path[: max(level, 0)]
        if match and match.group("value").strip():
            key = "/".join([*path, match.group("key").strip()])
            current.fields[key] = Field(match.group("value").strip(), line)
        else:
            path.append(text.strip().rstrip(":"))


_TOP_LEVEL = {"Driver Version": "driver_version", "CUDA Version": "cuda_version", "Attached GPUs": "attached"}


def parse_gpu(nvidia_smi_q: Section, driver: Section, nvlink: Section) -> GpuFacts:
    facts = GpuFacts(installed=not nvidia_smi_q.not_installed and bool(nvidia_smi_q.lines))
    if facts.installed:
        _read_fields(nvidia_smi_q, facts)
    if facts.driver_version is None:
        found = driver.first(_DRIVER_FILE)
        if found:
            facts.driver_version = Field(found[0].group("version"), found[1])
            facts.installed = True
    gpu_name = "GPU ?"
    for line in nvlink.numbered():
        gpu = _NVLINK_GPU.match(line.text)
        if gpu:
            gpu_name = f"GPU {gpu.group('index')}"
            continue
        link = _NVLINK_LINK.match(line.text)
        if link and "inactive" in link.group("state").lower():
            facts.nvlink_inactive.append((gpu_name, line))
    return facts


def uncorrectable_ecc(gpu: Gpu, scope: str) -> list[tuple[str, int, Field]]:
    """(counter, count, field) for every non-zero uncorrectable counter in `scope`
    (`Volatile` = since boot, `Aggregate` = lifetime)."""
    found = []
    for path, value in gpu.under(f"ECC Errors/{scope}/"):
        counter = path.rsplit("/", 1)[-1]
        if (
            ("Uncorrectable" in counter or "Double Bit" in path)
            and value.value.isdigit()
            and int(value.value)
        ):
            found.append((path.split("/", 2)[-1], int(value.value), value))
    return found


def throttle_reasons(gpu: Gpu) -> list[tuple[str, Field]]:
    found = []
    for prefix in ("Clocks Event Reasons/", "Clocks Throttle Reasons/"):
        for path, value in gpu.under(prefix):
            reason = path.rsplit("/", 1)[-1]
            if reason in THROTTLE_REASONS and value.value == "Active":
                found.append((reason, value))
    return found
