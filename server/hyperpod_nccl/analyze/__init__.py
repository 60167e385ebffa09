"""Analyzers: pure functions `Snapshot -> list[Finding]`, one module per concern.

`ANALYZERS` is the registry `diagnose` runs; adding a check means adding one module, one row
here, one reference section and one fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hyperpod_nccl.analyze.cloudwatch import analyze_cloudwatch
from hyperpod_nccl.analyze.cluster_events import analyze_cluster_events
from hyperpod_nccl.analyze.cluster_status import analyze_cluster_status
from hyperpod_nccl.analyze.collection import analyze_collection
from hyperpod_nccl.analyze.control_plane import analyze_control_plane
from hyperpod_nccl.analyze.cross_node import analyze_cross_node
from hyperpod_nccl.analyze.efa_plugin import analyze_efa_plugin
from hyperpod_nccl.analyze.k8s_events import analyze_k8s_events
from hyperpod_nccl.analyze.k8s_nodes import analyze_k8s_nodes
from hyperpod_nccl.analyze.master_addr import analyze_master_addr
from hyperpod_nccl.analyze.metrics_clocks import analyze_metrics_clocks
from hyperpod_nccl.analyze.metrics_coverage import analyze_metrics_coverage
from hyperpod_nccl.analyze.metrics_errors import analyze_metrics_errors
from hyperpod_nccl.analyze.metrics_hang import analyze_metrics_hang
from hyperpod_nccl.analyze.metrics_pcie import analyze_metrics_pcie
from hyperpod_nccl.analyze.metrics_silent import analyze_metrics_silent
from hyperpod_nccl.analyze.metrics_straggler import analyze_metrics_straggler
from hyperpod_nccl.analyze.nccl_env import analyze_nccl_env
from hyperpod_nccl.analyze.network_policy import analyze_network_policy
from hyperpod_nccl.analyze.node_efa import analyze_node_efa
from hyperpod_nccl.analyze.node_fabric import analyze_node_fabric
from hyperpod_nccl.analyze.node_gpu import analyze_node_gpu
from hyperpod_nccl.analyze.node_kernel import analyze_node_kernel
from hyperpod_nccl.analyze.node_limits import analyze_node_limits
from hyperpod_nccl.analyze.node_probe import analyze_node_probe
from hyperpod_nccl.analyze.pod_logs import analyze_pod_logs
from hyperpod_nccl.analyze.pods import analyze_pods
from hyperpod_nccl.analyze.security_groups import analyze_security_groups
from hyperpod_nccl.analyze.shm import analyze_shm
from hyperpod_nccl.analyze.slurm_controller import analyze_slurm_controller
from hyperpod_nccl.analyze.slurm_host import analyze_slurm_host
from hyperpod_nccl.analyze.slurm_jobs import analyze_slurm_jobs
from hyperpod_nccl.analyze.slurm_nodes import analyze_slurm_nodes
from hyperpod_nccl.analyze.version_skew import analyze_version_skew
from hyperpod_nccl.models import Finding, SkippedInput
from hyperpod_nccl.next_steps import attach
from hyperpod_nccl.next_steps.cluster import cluster_facts
from hyperpod_nccl.snapshot import Snapshot

Analyzer = Callable[[Snapshot], list[Finding]]

# The on-node probe checks; `hyperpod-nccl probe` runs just these.
PROBE_ANALYZERS: list[Analyzer] = [
    analyze_node_probe,
    analyze_node_gpu,
    analyze_node_fabric,
    analyze_node_kernel,
    analyze_node_efa,
    analyze_node_limits,
    analyze_cross_node,
]

# The checks of the Kubernetes objects. The pod logs are read apart: the cluster diagnostic
# triages them once and shares the result with its timeline (diagnose/service.py).
KUBERNETES_OBJECT_ANALYZERS: list[Analyzer] = [
    analyze_k8s_nodes,
    analyze_pods,
    analyze_k8s_events,
    analyze_network_policy,
    analyze_master_addr,
    analyze_shm,
    analyze_efa_plugin,
    analyze_nccl_env,
    analyze_version_skew,
]

# The Kubernetes checks; `list_pods` and a Kubernetes-only run use just these.
KUBERNETES_ANALYZERS: list[Analyzer] = [*KUBERNETES_OBJECT_ANALYZERS, analyze_pod_logs]

# The GPU metric checks over the DCGM history; `hyperpod-nccl metrics` runs just these.
METRICS_ANALYZERS: list[Analyzer] = [
    analyze_metrics_hang,
    analyze_metrics_silent,
    analyze_metrics_clocks,
    analyze_metrics_pcie,
    analyze_metrics_errors,
    analyze_metrics_straggler,
    analyze_metrics_coverage,
]

ANALYZERS: list[Analyzer] = [
    *PROBE_ANALYZERS,
    *METRICS_ANALYZERS,
    analyze_slurm_controller,
    analyze_slurm_nodes,
    analyze_slurm_jobs,
    analyze_slurm_host,
    analyze_cluster_status,
    analyze_cluster_events,
    analyze_security_groups,
    *KUBERNETES_OBJECT_ANALYZERS,
    analyze_control_plane,
    analyze_cloudwatch,
    analyze_collection,
]


def run_each(analyzers: Sequence[Analyzer], snapshot: Snapshot) -> tuple[list[Finding], list[SkippedInput]]:
    """Every analyzer's findings; one that cannot read the snapshot (a bundle edited by hand, a
    field of an unexpected type) is skipped with the reason, and the others still run."""
    findings: list[Finding] = []
    unreadable: list[SkippedInput] = []
    for analyzer in analyzers:
        try:
            findings.extend(analyzer(snapshot))
        except Exception as error:  # one analyzer's blind spot must not sink the whole report
            name = analyzer.__module__.rsplit(".", 1)[-1]
            reason = str(error).splitlines()[0][:200] if str(error) else ""
            why = f"could not read the snapshot ({type(error).__name__}: {reason}); its checks were skipped"
            unreadable.append(SkippedInput(source=f"analyzer {name}", reason=why))
    attach(findings, cluster_facts(snapshot))  # what to run next, where an analyzer did not say
    return findings, unreadable


def run_analyzers(snapshot: Snapshot) -> tuple[list[Finding], list[SkippedInput]]:
    """Every analyzer but the pod logs' (see KUBERNETES_OBJECT_ANALYZERS)."""
    return run_each(ANALYZERS, snapshot)
