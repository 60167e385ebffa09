"""PCIe links trained below their maximum generation or width: a GPU that moves data at half
speed or less, quietly, with no error anywhere.

Idle GPUs drop their link to the lowest generation to save power, so the generation is only
judged while the GPU is busy; width does not change at idle and is judged on every sample. The
maximum comes from `DCGM_FI_DEV_PCIE_MAX_LINK_GEN/WIDTH`, else from the best link its peers of
the same model show.
"""

from __future__ import annotations

from hyperpod_nccl.analyze.metrics_common import (
    BUSY_UTIL,
    GpuView,
    MetricsView,
    confirm_command,
    evidence,
    gpu_selector,
    median_of,
    metrics_view,
    on_node_commands,
)
from hyperpod_nccl.analyze.node_common import ladder
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot

PCIE = "gpu-metrics.md § 5"


def _busy(gpu: GpuView, values: list[float | None]) -> list[float | None]:
    util = gpu.utilisation()
    if util is None:
        return values
    return [v for u, v in zip(util, values, strict=True) if u is not None and u >= BUSY_UTIL]


Best = dict[tuple[str | None, str], float]


def _best_links(view: MetricsView) -> Best:
    """(model, field) → the best generation / width any GPU of that model showed."""
    best: Best = {}
    for gpu in view.gpus:
        for key in ("pcie_gen", "pcie_width"):
            seen = max((v for v in gpu.fine(key) or [] if v), default=None)
            if seen is not None:
                best[(gpu.data.model, key)] = max(seen, best.get((gpu.data.model, key), seen))
    return best


def _maximum(gpu: GpuView, best: Best, own_key: str, max_key: str) -> float | None:
    declared = max((v for v in gpu.coarse(max_key) or [] if v is not None), default=None)
    return declared or best.get((gpu.data.model, own_key))


def _downgrade(gpu: GpuView, best: Best) -> list[str]:
    found = []
    gen, width = gpu.fine("pcie_gen"), gpu.fine("pcie_width")
    if gen is not None and (busy_gen := median_of(_busy(gpu, gen))) is not None:
        top = _maximum(gpu, best, "pcie_gen", "pcie_max_gen")
        if top and busy_gen < top:
            found.append(f"Gen{busy_gen:g} while busy, maximum Gen{top:g}")
    if width is not None and (typical := median_of(width)) is not None:
        top = _maximum(gpu, best, "pcie_width", "pcie_max_width")
        if top and typical < top:
            found.append(f"x{typical:g} of x{top:g}")
    return found


def analyze_metrics_pcie(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None or not (view.exported("pcie_gen") or view.exported("pcie_width")):
        return []
    findings = []
    best = _best_links(view)
    for gpu in view.gpus:
        if not (downgrades := _downgrade(gpu, best)):
            continue
        findings.append(
            Finding(
                id="metrics.gpu.pcie_downgraded",
                status=Status.FAIL,
                priority=Priority.P1,
                title=f"{gpu.label} PCIe link downgraded: {'; '.join(downgrades)}",
                reference=PCIE,
                detail="Host-device and GPUDirect RDMA traffic over this link runs at a fraction of its "
                "speed, and the job with it. Reseat or board fault: reboot, replace if it trains low again.",
                evidence=[evidence(gpu, "pcie_width", "; ".join(downgrades))],
                suggested_commands=[
                    confirm_command(
                        view,
                        f"{gpu_selector('pcie_width', [gpu])} or {gpu_selector('pcie_gen', [gpu])}",
                        "Shows the link width and generation over the window.",
                    ),
                    *on_node_commands(gpu, "PCIE"),
                    *ladder(gpu, "replace"),  # type: ignore[arg-type]
                ],
                **gpu.scope(),
            )
        )
    if not findings:
        findings.append(
            Finding(
                id="metrics.gpu.pcie_ok",
                status=Status.PASS,
                title=f"PCIe links at full generation and width on {len(view.gpus)} GPUs",
            )
        )
    return findings
