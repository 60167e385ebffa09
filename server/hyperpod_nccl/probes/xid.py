"""NVIDIA Xid codes: what each means, who usually caused it, and the first move.

Mnemonics from the driver's `nverror.h`; cause and action follow references/debugging-guide.md
§ 5. `cause` separates faults the application provoked (the node is fine; fix or restart the
job) from faults of the GPU, its memory, NVLink or firmware (the node needs a reboot or a
replacement, in that order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hyperpod_nccl.models import Priority, Status

Cause = Literal["application", "hardware", "driver", "consequence"]
Rung = Literal["restart_job", "reboot", "replace"]


@dataclass(frozen=True)
class XidInfo:
    code: int
    name: str
    meaning: str
    cause: Cause
    action: str
    rung: Rung

    @property
    def status(self) -> Status:
        return Status.FAIL if self.cause in ("hardware", "driver") else Status.WARN

    @property
    def priority(self) -> Priority:
        if self.cause in ("application", "consequence"):
            return Priority.P2
        return Priority.P0 if self.code in _BLOCKING else Priority.P1


# Hardware Xids after which the GPU cannot run the job until the node is reset or replaced.
_BLOCKING = frozenset({48, 62, 64, 74, 79, 95})

_CATALOG = [
    XidInfo(13, "GR_EXCEPTION", "graphics/SM exception (illegal instruction or out-of-range access)",
            "application", "fix the code or restart the job; reboot only if it repeats", "restart_job"),
    XidInfo(31, "MMU_ERR_FLT", "GPU memory page fault (MMU fault), pairs with 'illegal memory access'",
            "application", "fix the code; reboot only if one GPU keeps repeating it", "restart_job"),
    XidInfo(43, "RESETCHANNEL_VERIF_ERROR", "GPU stopped processing a channel after an application fault",
            "application", "restart the job", "restart_job"),
    XidInfo(45, "PREEMPTIVE_REMOVAL", "channel removed because of an earlier error",
            "consequence", "read the Xid that came before it", "restart_job"),
    XidInfo(48, "GPU_ECC_DBE", "uncorrectable double-bit ECC error in GPU memory",
            "hardware", "reboot to reset the GPU and watch row remaps; replace if it recurs", "reboot"),
    XidInfo(61, "PMU_BREAKPOINT", "internal micro-controller breakpoint",
            "hardware", "reboot; replace if it recurs", "reboot"),
    XidInfo(62, "PMU_HALT", "internal micro-controller halt",
            "hardware", "reboot; replace if it recurs", "reboot"),
    XidInfo(63, "ROW_REMAP_EVENT", "row remap / page retirement recorded; a GPU reset activates it",
            "hardware", "reboot to activate the remap", "reboot"),
    XidInfo(64, "ROW_REMAP_FAILURE", "row remap / page retirement failed: no spare rows left",
            "hardware", "replace the node", "replace"),
    XidInfo(68, "NVDEC_EXCEPTION", "video decoder engine exception",
            "application", "restart the job; reboot if it persists", "restart_job"),
    XidInfo(69, "GR_CLASS_ERROR", "graphics engine class error",
            "application", "restart the job; reboot if it persists", "restart_job"),
    XidInfo(74, "NVLINK_ERROR", "NVLink error",
            "hardware", "reboot; replace if it recurs", "reboot"),
    XidInfo(79, "FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
            "hardware", "reboot now; replace if it comes back", "reboot"),
    XidInfo(92, "EXCESSIVE_SBE_INTERRUPTS", "excessive single-bit ECC error rate: the memory is degrading",
            "hardware", "plan a replacement", "replace"),
    XidInfo(94, "CONTAINED_ERROR", "contained ECC error: only the affected process must restart",
            "application", "restart the job; watch for repeats on this GPU", "restart_job"),
    XidInfo(95, "UNCONTAINED_ERROR", "uncontained ECC error: the GPU needs a reset",
            "hardware", "reboot; replace if it recurs", "reboot"),
    XidInfo(109, "CTXSW_TIMEOUT", "context-switch timeout (application hang, or GSP/driver)",
            "application", "restart the job; reboot if it repeats", "restart_job"),
    XidInfo(119, "GSP_RPC_TIMEOUT", "GSP firmware RPC timeout",
            "driver", "reboot; if frequent, review the driver / GSP setting with support", "reboot"),
    XidInfo(120, "GSP_ERROR", "GSP firmware error",
            "driver", "reboot; if frequent, review the driver / GSP setting with support", "reboot"),
]  # fmt: skip

XID_CATALOG: dict[int, XidInfo] = {info.code: info for info in _CATALOG}


def xid_info(code: int) -> XidInfo:
    """The catalog entry, or a conservative one for a code not listed: treated as hardware."""
    return XID_CATALOG.get(code) or XidInfo(
        code, "UNLISTED", "Xid not in this catalog (see NVIDIA's Xid catalog)", "hardware",
        "look the code up in NVIDIA's Xid catalog; reboot if it repeats", "reboot",
    )  # fmt: skip
