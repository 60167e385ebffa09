"""`hyperpod-nccl slurm`: the Slurm diagnostic at a terminal, on a controller with no AWS access
or from anywhere with `--cluster/--region`. Exit status as every diagnostic: 0, 1 issues, 2 unusable."""

from __future__ import annotations

import argparse
import sys

import anyio
from pydantic import TypeAdapter, ValidationError

from hyperpod_nccl.guard.validate import ClusterName, Region, SlurmJobId
from hyperpod_nccl.models import Report
from hyperpod_nccl.render import render_json, render_text, use_color
from hyperpod_nccl.slurm.service import SlurmUnavailable, collect_slurm_snapshot, slurm_report

EXIT_UNUSABLE = 2


def _validated(type_: object, what: str):
    adapter = TypeAdapter(type_)

    def check(value: str) -> str:
        try:
            return adapter.validate_python(value)
        except ValidationError as error:
            raise argparse.ArgumentTypeError(f"{what}: {error.errors()[0]['msg']}") from None

    return check


def add_slurm_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", type=_validated(SlurmJobId, "--job"), help="a Slurm job id to inspect")
    parser.add_argument("--cluster", type=_validated(ClusterName, "--cluster"), help="HyperPod cluster (SSM)")
    parser.add_argument("--region", type=_validated(Region, "--region"), help="AWS region of --cluster")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def slurm_diagnose(job: str | None, cluster: str | None, region: str | None) -> Report:
    """Collect and analyze; raises SlurmUnavailable when Slurm cannot be read at all."""
    snapshot = anyio.run(lambda: collect_slurm_snapshot(job_id=job, cluster=cluster, region=region))
    return slurm_report(snapshot)


def run_slurm(args: argparse.Namespace) -> int:
    try:
        report = slurm_diagnose(args.job, args.cluster, args.region)
    except SlurmUnavailable as error:
        print(f"hyperpod-nccl: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.json:
        sys.stdout.write(render_json(report) + "\n")
    else:
        sys.stdout.write(render_text(report, color=use_color(sys.stdout)))
    return 1 if report.blocking else 0
