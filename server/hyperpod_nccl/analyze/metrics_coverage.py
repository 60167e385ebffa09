"""What the GPU-metrics checks could not see: no DCGM series at all, fields that are not
exported (so a check did not run), and a series bound that left GPUs out. "Not exported" must
never read as "healthy"."""

from __future__ import annotations

from hyperpod_nccl.analyze.metrics_common import MetricsView, http_read_command, metrics_view
from hyperpod_nccl.metrics.fields import BY_KEY, HEARTBEAT_NAMES
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot

SETUP = "gpu-metrics.md § 1"
# Each check and the fields it needs (any one of them is enough).
CHECKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hang signature", ("sm_active", "tensor_active")),
    ("silent GPUs", ("last_seen",)),
    ("Xid codes", ("xid",)),
    ("throttling", ("throttle",)),
    ("SM clock vs peers", ("sm_clock",)),
    ("PCIe link", ("pcie_gen", "pcie_width")),
    ("ECC", ("ecc_dbe_vol", "ecc_sbe_vol", "ecc_dbe_agg")),
    ("row remapping", ("remap_failure", "remap_pending")),
    ("NVLink errors", ("nvlink_crc_flit", "nvlink_replay", "nvlink_recovery")),
    ("memory bandwidth straggler", ("dram_active", "mem_copy_util")),
)


def _series_check(view: MetricsView) -> SuggestedCommand:
    match = "{__name__=~" + '"' + "|".join(HEARTBEAT_NAMES) + '"}'
    params = {"match[]": match, "start": str(view.snapshot.start), "end": str(view.snapshot.end)}
    why = "Lists the DCGM series Prometheus holds; empty: dcgm-exporter is not scraped (or relabelled)."
    return http_read_command(view, "/api/v1/series", params, why)


def _no_series(view: MetricsView) -> Finding:
    failed = [q for q in view.snapshot.queries if q.field == "inventory" and q.status == "failed"]
    if failed:
        return Finding(
            id="metrics.coverage.unreadable",
            status=Status.WARN,
            priority=Priority.P1,
            title="GPU metrics could not be read from Prometheus: the GPU metric checks did not run",
            reference=SETUP,
            detail="The rest of the diagnostic ran; the reason is in the collection issues.",
            evidence=[Evidence(source=f"prometheus:{q.field}", text=q.message or q.status) for q in failed],
        )
    return Finding(
        id="metrics.coverage.no_dcgm_series",
        status=Status.WARN,
        priority=Priority.P1,
        title=f"No DCGM series in {view.snapshot.window_note or view.window()}: GPU checks did not run",
        reference=SETUP,
        detail="Prometheus answered, but holds no dcgm-exporter series for the window"
        + (f" and node {view.snapshot.node_filter}" if view.snapshot.node_filter else "")
        + ": the exporter is not deployed or not scraped, or its metrics are renamed.",
        evidence=[Evidence(source="prometheus:inventory", text=f"0 series of {', '.join(HEARTBEAT_NAMES)}")],
        suggested_commands=[_series_check(view)],
    )


def analyze_metrics_coverage(snapshot: Snapshot) -> list[Finding]:
    view = metrics_view(snapshot)
    if view is None:
        return []
    if not view.gpus:
        return [_no_series(view)]
    findings = []
    missing = [(check, keys) for check, keys in CHECKS if not any(view.exported(key) for key in keys)]
    if missing:
        names = sorted(
            {BY_KEY[k].name if k in BY_KEY else "DCGM_FI_DEV_GPU_UTIL" for _, keys in missing for k in keys}
        )
        findings.append(
            Finding(
                id="metrics.coverage.fields_missing",
                status=Status.INFO,
                title=f"Not checked (fields not exported): {', '.join(check for check, _ in missing)}",
                detail=f"Add them to dcgm-exporter's counters CSV to enable the checks: {', '.join(names)}.",
            )
        )
    if view.snapshot.cut:
        findings.append(
            Finding(
                id="metrics.coverage.series_cut",
                status=Status.WARN,
                priority=Priority.P2,
                title="Not every GPU was read: the series bound was reached",
                reference=SETUP,
                detail=view.snapshot.cut,
            )
        )
    findings.append(
        Finding(
            id="metrics.coverage.window",
            status=Status.INFO,
            title=f"GPU metrics: {len(view.gpus)} GPUs on {len({g.data.node for g in view.gpus})} node(s), "
            f"{view.window()} every {view.snapshot.step_s} s ({view.snapshot.source})",
            detail=view.snapshot.window_note,
        )
    )
    return findings
