"""A generated 2-hour DCGM history of a p5 cluster, as dcgm-exporter and Prometheus record it,
with one fault signature planted on each of a few GPUs and a healthy majority.

`generate()` returns the OpenMetrics text (for `promtool tsdb create-blocks-from openmetrics`)
and the list of plants: what was planted, on which node and GPU, and from when. The first ten
minutes are the job starting (GPUs idle, PCIe links in their power-saving generation, clocks
down, reason "GPU idle"), so checks that ignore idle GPUs are exercised too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

END = 1772452800  # 2026-03-02T12:00:00Z: fixed, so every query names its own time
START = END - 2 * 3600
SCRAPE_S = 30
JOB_START = START + 600
NODES = [f"hyperpod-i-0{n:016x}" for n in (0xA1, 0xB2, 0xC3, 0xD4, 0xE5)]
GPUS = 8
MODEL = "NVIDIA H100 80GB HBM3"

# Clock-event reason bits (NVML): 0x1 GPU idle, 0x4 SW power cap, 0x40 HW thermal slowdown.
IDLE, POWER_CAP, HW_THERMAL = 0x1, 0x4, 0x40


@dataclass(frozen=True)
class Plant:
    signature: str
    node: str
    gpu: int
    since: int
    what: str


PLANTS = [
    Plant("hang", NODES[0], 2, START + 80 * 60, "GPU util pinned at 100 % while SM active drops to 0.01"),
    Plant("silent", NODES[1], 5, START + 95 * 60, "samples stop; Xid 79 reported just before"),
    Plant("throttle", NODES[2], 1, START + 40 * 60, "HW thermal slowdown, SM clock 1980 -> 1100 MHz, 91 C"),
    Plant("pcie", NODES[3], 6, START, "PCIe link x8 of x16 for the whole window"),
    Plant("ecc", NODES[0], 7, START + 60 * 60, "2 volatile double-bit ECC errors"),
    Plant("remap_failure", NODES[4], 3, START + 30 * 60, "row remapping failed"),
    Plant("remap_pending", NODES[2], 4, START + 70 * 60, "a row remap pending a GPU reset"),
    Plant("nvlink", NODES[1], 0, START + 50 * 60, "NVLink CRC errors climbing, 3 recoveries"),
    Plant(
        "straggler",
        NODES[3],
        2,
        JOB_START,
        "utilisation ~62 % and memory bandwidth ~0.2 while peers run ~97 % / 0.55",
    ),
]


def _plant(node: str, gpu: int) -> Plant | None:
    return next((p for p in PLANTS if p.node == node and p.gpu == gpu), None)


Sample = Callable[[int], float | None]


def _gpu_series(node: str, gpu: int, rng: random.Random) -> dict[str, Sample]:
    """Metric name → value at time t (None: no sample) for one GPU."""
    plant = _plant(node, gpu)
    kind, since = (plant.signature, plant.since) if plant else ("healthy", END + 1)
    noise = {t: rng.random() for t in range(START, END + 1, SCRAPE_S)}

    def busy(t: int) -> bool:
        return t >= JOB_START

    def alive(t: int) -> bool:
        return not (kind == "silent" and t >= since)

    def hung(t: int) -> bool:
        return kind == "hang" and t >= since

    def util(t: int) -> float:
        if not busy(t):
            return 0.0
        if hung(t):
            return 100.0
        return 60.0 + 5 * noise[t] if kind == "straggler" else 95.0 + 4 * noise[t]

    def sm_active(t: int) -> float:
        if not busy(t):
            return 0.0
        if hung(t):
            return 0.01
        return 0.45 + 0.05 * noise[t] if kind == "straggler" else 0.78 + 0.06 * noise[t]

    def dram(t: int) -> float:
        if not busy(t) or hung(t):
            return 0.01 if busy(t) else 0.0
        return 0.2 + 0.03 * noise[t] if kind == "straggler" else 0.52 + 0.06 * noise[t]

    def throttled(t: int) -> bool:
        return kind == "throttle" and t >= since

    def clock(t: int) -> float:
        if not busy(t):
            return 345.0
        return 1100.0 + 20 * noise[t] if throttled(t) else 1980.0 - 10 * noise[t]

    def reasons(t: int) -> float:
        if not busy(t):
            return float(IDLE)
        if throttled(t):
            return float(HW_THERMAL | POWER_CAP)
        return float(POWER_CAP) if noise[t] > 0.7 else 0.0  # power capping under load is normal

    def counter(start_value: float, per_step: float, from_t: int) -> Sample:
        return lambda t: start_value + (max(0, (t - from_t) // SCRAPE_S + 1) * per_step if t >= from_t else 0)

    ecc = kind == "ecc"
    nvlink = kind == "nvlink"
    series: dict[str, Sample] = {
        "DCGM_FI_DEV_GPU_UTIL": util,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": lambda t: util(t) / 100,
        "DCGM_FI_PROF_SM_ACTIVE": sm_active,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": lambda t: 0.0 if hung(t) else sm_active(t) * 0.6,
        "DCGM_FI_PROF_DRAM_ACTIVE": dram,
        "DCGM_FI_DEV_MEM_COPY_UTIL": lambda t: dram(t) * 100,
        "DCGM_FI_DEV_SM_CLOCK": clock,
        "DCGM_FI_DEV_POWER_USAGE": lambda t: (
            (120.0 if hung(t) else 640.0 + 30 * noise[t]) if busy(t) else 70.0
        ),
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": lambda t: 700.0,
        "DCGM_FI_DEV_GPU_TEMP": lambda t: (
            (91.0 if throttled(t) else 62.0 + 4 * noise[t]) if busy(t) else 35.0
        ),
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": reasons,
        "DCGM_FI_DEV_XID_ERRORS": lambda t: 79.0 if kind == "silent" and t >= since - 60 else 0.0,
        "DCGM_FI_DEV_PCIE_LINK_GEN": lambda t: 5.0 if busy(t) else 1.0,
        "DCGM_FI_DEV_PCIE_LINK_WIDTH": lambda t: 8.0 if kind == "pcie" else 16.0,
        "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": lambda t: 5.0,
        "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": lambda t: 16.0,
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": counter(0, 3, since) if ecc else (lambda t: 0.0),
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (lambda t: 2.0 if t >= since else 0.0) if ecc else (lambda t: 0.0),
        # A lifetime of a few corrected single-bit errors is normal and must not be flagged.
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": lambda t: 4.0 if gpu % 3 == 0 else 0.0,
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": (lambda t: 2.0 if t >= since else 0.0) if ecc else (lambda t: 0.0),
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": lambda t: (
            1.0 if kind.startswith("remap") and t >= since else 0.0
        ),
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": lambda t: 1.0 if kind == "remap_failure" and t >= since else 0.0,
        "DCGM_FI_DEV_ROW_REMAP_PENDING": lambda t: 1.0 if kind == "remap_pending" and t >= since else 0.0,
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": counter(0, 40, since) if nvlink else (lambda t: 0.0),
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": counter(0, 5, since) if nvlink else (lambda t: 0.0),
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": counter(0, 10, since) if nvlink else (lambda t: 0.0),
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": (lambda t: 3.0 if t >= since + 600 else 0.0)
        if nvlink
        else (lambda t: 0.0),
    }

    def silenced(sample: Sample) -> Sample:
        return lambda t: sample(t) if alive(t) else None

    return {name: silenced(sample) for name, sample in series.items()}


def _labels(node_index: int, node: str, gpu: int) -> str:
    bus = f"00000000:{0x18 + 0x10 * gpu:02X}:00.0"
    uuid = f"GPU-{node_index:02x}{gpu:02x}0000-aaaa-bbbb-cccc-{node_index * 8 + gpu:012x}"
    return (
        f'gpu="{gpu}",UUID="{uuid}",pci_bus_id="{bus}",device="nvidia{gpu}",modelName="{MODEL}",'
        f'Hostname="{node}",DCGM_FI_DRIVER_VERSION="550.127.05",instance="10.1.{node_index}.10:9400",'
        f'job="dcgm-exporter",namespace="training",pod="llama-worker-{node_index}",container="pytorch"'
    )


def _lines() -> Iterator[str]:
    rng = random.Random(12)
    per_gpu = {
        (i, node, gpu): _gpu_series(node, gpu, rng) for i, node in enumerate(NODES) for gpu in range(GPUS)
    }
    names = next(iter(per_gpu.values())).keys()
    for name in names:
        yield f"# TYPE {name} gauge"
        for (i, node, gpu), series in per_gpu.items():
            labels = _labels(i, node, gpu)
            for t in range(START, END + 1, SCRAPE_S):
                value = series[name](t)
                if value is not None:
                    yield f"{name}{{{labels}}} {value:g} {t}"
    yield "# EOF"


def generate() -> tuple[str, list[Plant]]:
    return "\n".join(_lines()) + "\n", list(PLANTS)


def healthy_gpus() -> list[tuple[str, int]]:
    return [(node, gpu) for node in NODES for gpu in range(GPUS) if _plant(node, gpu) is None]
