"""`hyperpod-nccl bundle`: write the escalation bundle for an AWS Support case."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from hyperpod_nccl.bundle import BundleError, BundleRequest, BundleResult, create_bundle
from hyperpod_nccl.cli_common import EXIT_OK, UsageError, argparse_type, path_argument
from hyperpod_nccl.guard.redact import redact_text
from hyperpod_nccl.guard.text import escape_controls
from hyperpod_nccl.guard.validate import ClusterName, JobName, Namespace, Region


def add_bundle_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report", type=path_argument, metavar="REPORT.json", help="a report saved with --json"
    )
    parser.add_argument(
        "--previous",
        type=path_argument,
        metavar="PREVIOUS.json",
        help="the report from before the last change",
    )
    parser.add_argument(
        "--snapshot", type=path_argument, metavar="DIR", help="a folder saved by diagnose --save-bundle"
    )
    parser.add_argument(
        "--logs", type=path_argument, metavar="LOG_DIR", help="training logs to triage into the bundle"
    )
    parser.add_argument("--cluster", type=argparse_type(ClusterName), help="HyperPod cluster name or ARN")
    parser.add_argument("--region", type=argparse_type(Region), help="AWS region of the cluster")
    parser.add_argument("--orchestrator", choices=["eks", "slurm"], help="when no snapshot says it")
    parser.add_argument("--namespace", type=argparse_type(Namespace), help="namespace of the job (EKS)")
    parser.add_argument("--job", type=argparse_type(JobName), help="job name (EKS) or Slurm job id")
    parser.add_argument(
        "-o",
        "--output",
        type=path_argument,
        metavar="BUNDLE.tar.gz",
        help="where to write the bundle (default: hyperpod-nccl-escalation-<UTC time>.tar.gz here)",
    )


def _default_output() -> Path:
    return Path(f"hyperpod-nccl-escalation-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.tar.gz")


def render_result(result: BundleResult) -> str:
    lines = [f"Wrote {result.path} ({result.size_bytes} bytes, sha256 {result.sha256})", ""]
    lines += [f"  {member}" for member in result.members]
    if result.missing:
        lines += ["", "CASE.md still lacks (add before sending): " + "; ".join(result.missing)]
    lines += [
        "",
        "Suggested command (run this yourself):",
        f"  $ {result.upload.command}",
        f"    {result.upload.why} [{result.upload.effect}; needs {result.upload.permission}]",
    ]
    return redact_text("\n".join(escape_controls(line) for line in lines) + "\n")


def run_bundle(args: argparse.Namespace) -> int:
    request = BundleRequest(
        output=args.output or _default_output(),
        report=args.report,
        previous=args.previous,
        snapshot=args.snapshot,
        logs=args.logs,
        cluster=args.cluster,
        region=args.region,
        orchestrator=args.orchestrator,
        namespace=args.namespace,
        job=args.job,
    )
    try:
        result = create_bundle(request)
    except BundleError as error:
        raise UsageError(str(error)) from None
    sys.stdout.write(render_result(result))
    return EXIT_OK
