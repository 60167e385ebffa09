"""`hyperpod-nccl slurm`: the Slurm diagnostic at a terminal, on a controller with no AWS access
or from anywhere with `--cluster/--region`. Exit status as every diagnostic: 0, 1 issues, 2 unusable."""

from __future__ import annotations

import argparse
import sys

import anyio

from hyperpod_nccl.cli_common import UsageError, argparse_type, checked, emit_report
from hyperpod_nccl.guard.redact import redact_model
from hyperpod_nccl.guard.validate import ClusterName, Region, SlurmJobId
from hyperpod_nccl.models import Report
from hyperpod_nccl.slurm.service import SlurmUnavailable, collect_slurm_snapshot, slurm_report
from hyperpod_nccl.snapshot import Snapshot


def add_slurm_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", type=argparse_type(SlurmJobId), help="a Slurm job id to inspect")
    parser.add_argument("--cluster", type=argparse_type(ClusterName), help="HyperPod cluster (SSM)")
    parser.add_argument("--region", type=argparse_type(Region), help="AWS region of --cluster")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def slurm_diagnose(job: str | None, cluster: str | None, region: str | None) -> Report:
    """Collect and analyze; raises SlurmUnavailable when Slurm cannot be read at all."""
    snapshot = anyio.run(lambda: collect_slurm_snapshot(job_id=job, cluster=cluster, region=region))
    return slurm_report(snapshot)


def slurm_snapshot_here(args: argparse.Namespace) -> Snapshot:
    """`diagnose --orchestrator slurm` without --cluster/--bundle: Slurm on this host, no AWS."""
    if args.orchestrator != "slurm":
        raise UsageError(
            "pass --cluster NAME (live), --bundle DIR or --prometheus URL; "
            "or --orchestrator slurm on a Slurm node"
        )
    try:
        job = checked(SlurmJobId, args.job) if args.job else None
        snapshot = redact_model(anyio.run(lambda: collect_slurm_snapshot(job_id=job)))
    except SlurmUnavailable as error:
        raise UsageError(str(error)) from None
    if args.save_bundle:
        from hyperpod_nccl.diagnose.cli import save_snapshot

        print(
            f"hyperpod-nccl: snapshot saved to {save_snapshot(snapshot, args.save_bundle)}", file=sys.stderr
        )
    return snapshot


def run_slurm(args: argparse.Namespace) -> int:
    try:
        report = slurm_diagnose(args.job, args.cluster, args.region)
    except SlurmUnavailable as error:
        raise UsageError(str(error)) from None
    return emit_report(report, args.json)
