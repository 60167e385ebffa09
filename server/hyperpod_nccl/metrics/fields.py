"""The DCGM exporter fields the GPU checks read, and how each is queried.

Names follow dcgm-exporter (`DCGM_FI_*`); a field renamed between DCGM releases lists both
names. `fine` fields are read at the window's step (the hang onset must be placed within one
step); `coarse` fields are counters and states, read as the maximum over a coarser step, which
keeps a climb and its time without moving every sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Resolution = Literal["fine", "coarse"]


@dataclass(frozen=True)
class DcgmField:
    key: str
    names: tuple[str, ...]
    resolution: Resolution
    what: str

    @property
    def name(self) -> str:
        return self.names[0]


# The labels that identify one GPU. Pod, container and namespace are left out of the grouping:
# they change whenever the job is rescheduled, which would split one GPU into several series.
GPU_LABELS = ("Hostname", "gpu", "UUID", "modelName", "pci_bus_id", "instance", "node", "kubernetes_node")
# Labels dcgm-exporter adds when it maps GPUs to pods (DCGM_EXPORTER_KUBERNETES).
POD_LABELS = ("namespace", "pod")

# When every one of these stopped, the GPU stopped reporting: their latest sample is its heartbeat.
HEARTBEAT_NAMES = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_POWER_USAGE")
LAST_SEEN = "last_seen"

FIELDS: tuple[DcgmField, ...] = (
    DcgmField("util", ("DCGM_FI_DEV_GPU_UTIL",), "fine", "GPU utilisation (%)"),
    DcgmField(
        "gr_engine", ("DCGM_FI_PROF_GR_ENGINE_ACTIVE",), "fine", "graphics/compute engine active (0-1)"
    ),
    DcgmField("sm_active", ("DCGM_FI_PROF_SM_ACTIVE",), "fine", "SM active (0-1)"),
    DcgmField("tensor_active", ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",), "fine", "tensor pipe active (0-1)"),
    DcgmField("dram_active", ("DCGM_FI_PROF_DRAM_ACTIVE",), "fine", "memory bandwidth used (0-1)"),
    DcgmField("mem_copy_util", ("DCGM_FI_DEV_MEM_COPY_UTIL",), "fine", "memory copy utilisation (%)"),
    DcgmField("sm_clock", ("DCGM_FI_DEV_SM_CLOCK",), "fine", "SM clock (MHz)"),
    DcgmField("power", ("DCGM_FI_DEV_POWER_USAGE",), "fine", "power draw (W)"),
    DcgmField("power_limit", ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT",), "coarse", "enforced power limit (W)"),
    DcgmField("temp", ("DCGM_FI_DEV_GPU_TEMP",), "fine", "GPU temperature (C)"),
    DcgmField(
        "throttle",
        ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
        "fine",
        "clock throttle reasons (bitmask)",
    ),
    DcgmField("xid", ("DCGM_FI_DEV_XID_ERRORS",), "fine", "last Xid error code"),
    DcgmField("pcie_gen", ("DCGM_FI_DEV_PCIE_LINK_GEN",), "fine", "PCIe link generation"),
    DcgmField("pcie_width", ("DCGM_FI_DEV_PCIE_LINK_WIDTH",), "fine", "PCIe link width"),
    DcgmField("pcie_max_gen", ("DCGM_FI_DEV_PCIE_MAX_LINK_GEN",), "coarse", "PCIe maximum link generation"),
    DcgmField("pcie_max_width", ("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",), "coarse", "PCIe maximum link width"),
    DcgmField("ecc_sbe_vol", ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",), "coarse", "single-bit ECC errors, volatile"),
    DcgmField("ecc_dbe_vol", ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",), "coarse", "double-bit ECC errors, volatile"),
    DcgmField(
        "ecc_sbe_agg", ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",), "coarse", "single-bit ECC errors, aggregate"
    ),
    DcgmField(
        "ecc_dbe_agg", ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",), "coarse", "double-bit ECC errors, aggregate"
    ),
    DcgmField(
        "remap_uncorrectable",
        ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",),
        "coarse",
        "rows remapped for uncorrectable errors",
    ),
    DcgmField("remap_failure", ("DCGM_FI_DEV_ROW_REMAP_FAILURE",), "coarse", "row remapping failed"),
    DcgmField("remap_pending", ("DCGM_FI_DEV_ROW_REMAP_PENDING",), "coarse", "row remap pending a reset"),
    DcgmField(
        "nvlink_crc_flit",
        ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",),
        "coarse",
        "NVLink flow-control CRC errors",
    ),
    DcgmField(
        "nvlink_crc_data",
        ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",),
        "coarse",
        "NVLink data CRC errors",
    ),
    DcgmField("nvlink_replay", ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",), "coarse", "NVLink replays"),
    DcgmField(
        "nvlink_recovery", ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",), "coarse", "NVLink recoveries"
    ),
)
BY_KEY = {field.key: field for field in FIELDS}


def promql_string(value: str) -> str:
    """A PromQL double-quoted string literal holding `value` verbatim (label values are data)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def metric_selector(names: tuple[str, ...], matchers: str) -> str:
    """`NAME{matchers}`, or `{__name__=~"A|B",matchers}` for a field with two names."""
    if len(names) == 1:
        return f"{names[0]}{{{matchers}}}"
    inner = f'__name__=~"{"|".join(names)}"' + (f",{matchers}" if matchers else "")
    return f"{{{inner}}}"


def field_query(field: DcgmField, matchers: str, coarse_step_s: int) -> str:
    """The PromQL for one field: one series per GPU whatever the pod labels did meanwhile."""
    selector = metric_selector(field.names, matchers)
    if field.resolution == "coarse":
        selector = f"max_over_time({selector}[{coarse_step_s}s])"
    return f"max by ({', '.join(GPU_LABELS)}) ({selector})"


def heartbeat_query(matchers: str) -> str:
    """The time of each GPU's latest sample at every step: its value is a real sample time.

    One `timestamp()` per name, joined with `or`: timestamp drops the metric name, so a single
    selector over several names would yield duplicate series, which Prometheus refuses.
    """
    by = f"max by ({', '.join(GPU_LABELS)})"
    return " or ".join(f"{by} (timestamp({metric_selector((name,), matchers)}))" for name in HEARTBEAT_NAMES)


def inventory_query(matchers: str, window_s: int) -> str:
    """One row per GPU series seen in the window, with its pod labels: counted before any data
    query so a series bound can be applied by node."""
    selector = metric_selector(HEARTBEAT_NAMES, matchers)
    return f"count by ({', '.join(GPU_LABELS + POD_LABELS)}) (last_over_time({selector}[{window_s}s]))"
