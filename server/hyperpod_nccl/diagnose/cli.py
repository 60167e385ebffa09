"""`hyperpod-nccl diagnose (--cluster NAME|ARN --region R [...] | --bundle DIR)`.

Exit status: 0 no P0/P1 issue, 1 issues found or a fatal prerequisite (credentials, the cluster)
missing, 2 unusable arguments or bundle.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from hyperpod_nccl.cli_common import UsageError, checked, emit_report, path_argument
from hyperpod_nccl.compare_cli import add_compare_argument, print_comparison
from hyperpod_nccl.guard.redact import redact_model
from hyperpod_nccl.guard.text import escape_controls
from hyperpod_nccl.guard.validate import ClusterName, InstanceId, JobName, Namespace, Region
from hyperpod_nccl.metrics.cli import add_source_arguments, source_from
from hyperpod_nccl.snapshot import SNAPSHOT_FILE, Snapshot, UnusableSnapshot

EXIT_FATAL = 1


def add_diagnose_arguments(parser: argparse.ArgumentParser) -> None:
    # Neither is allowed only with --orchestrator slurm: it then reads Slurm on this host, no AWS.
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--cluster", metavar="NAME|ARN", help="HyperPod cluster name or ARN (live)")
    source.add_argument(
        "--bundle", metavar="DIR", type=path_argument, help="replay a saved snapshot, no network"
    )
    parser.add_argument("--region", help="AWS region (default: $AWS_DEFAULT_REGION)")
    parser.add_argument("--namespace", metavar="NS", help="scope the Kubernetes checks to a namespace")
    parser.add_argument("--job", metavar="JOB", help="scope to a job (PyTorchJob / Job name, Slurm job id)")
    parser.add_argument("--orchestrator", choices=("eks", "slurm"), help="override the auto-detected one")
    parser.add_argument("--node", metavar="INSTANCE_ID", help="probe only this node")
    parser.add_argument(
        "--sample-nodes", type=int, default=3, metavar="N", help="nodes to probe (0-50, default 3)"
    )
    parser.add_argument("--since", default="2h", help="CloudWatch and events window, e.g. 30m, 2h, 1d")
    parser.add_argument(
        "--save-bundle", metavar="DIR", type=path_argument, help="also write the snapshot to DIR"
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig instead of the EKS cluster's own access"
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context")
    parser.add_argument("--concurrency", type=int, default=4, help="AWS calls in flight (default 4)")
    # GPU metrics over the --since window; alone (no --cluster) they are the whole diagnostic.
    add_source_arguments(parser, required=False)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_compare_argument(parser)


def _checked(kind: object, value: str | None) -> str | None:
    return None if value is None else checked(kind, value)


def _options(args: argparse.Namespace) -> Any:
    from hyperpod_nccl.diagnose.service import DiagnoseOptions, parse_window

    # A cluster ARN names its region; an explicit --region still wins.
    arn_region = (
        args.cluster.split(":")[3]
        if args.cluster.startswith("arn:") and args.cluster.count(":") > 4
        else None
    )
    region = args.region or arn_region or os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION")
    if not region:
        raise UsageError("a region is required: pass --region or set AWS_DEFAULT_REGION")
    source = source_from(args)
    try:
        parse_window(args.since)
        return DiagnoseOptions(
            prometheus=source.prometheus if source else None,
            amp_workspace=source.amp_workspace if source else None,
            cluster=_checked(ClusterName, args.cluster),
            region=_checked(Region, region),
            namespace=_checked(Namespace, args.namespace),
            job=_checked(JobName, args.job),
            orchestrator=args.orchestrator,
            node=_checked(InstanceId, args.node),
            sample_nodes=args.sample_nodes,
            since=args.since,
            kubeconfig=args.kubeconfig,
            context=args.context,
            concurrency=args.concurrency,
        )
    except (ValueError, ValidationError) as error:
        raise UsageError(str(error).splitlines()[-1].strip()) from None


def save_snapshot(snapshot: Snapshot, directory: Path) -> Path:
    """--save-bundle DIR: a new DIR/snapshot.json, or a one-line reason."""
    try:
        return snapshot.save(directory)
    except FileExistsError:
        raise UsageError(f"{directory / SNAPSHOT_FILE} already exists; choose a new folder") from None
    except OSError as error:
        raise UsageError(f"cannot write {directory / SNAPSHOT_FILE}: {error.strerror or error}") from None


class TtyProgress:
    """One progress line, rewritten in place, on a terminal; silent anywhere else."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, message: str, done: int, total: int | None) -> None:
        if self.enabled:
            count = f" ({done}/{total})" if total else ""
            self.stream.write(f"\r\033[K{escape_controls(message[:100])}{count}")
            self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _collect(args: argparse.Namespace) -> Snapshot | None:
    from hyperpod_nccl.collect.aws import AwsPrerequisiteError
    from hyperpod_nccl.diagnose.service import collect_snapshot

    options = _options(args)
    progress = TtyProgress(sys.stderr)
    try:
        snapshot = collect_snapshot(options, progress=progress)
    except AwsPrerequisiteError as error:
        progress.clear()
        print(f"hyperpod-nccl: {escape_controls(str(error))[:500]}", file=sys.stderr)
        return None
    progress.clear()
    # Secrets are masked before the snapshot is written or analyzed, so a replay sees the same data.
    snapshot = redact_model(snapshot)
    if args.save_bundle:
        path = save_snapshot(snapshot, args.save_bundle)
        print(f"hyperpod-nccl: snapshot saved to {path}", file=sys.stderr)
    return snapshot


def _load(directory: Path) -> Snapshot:
    try:
        return Snapshot.load(directory)
    except UnusableSnapshot as error:
        raise UsageError(str(error)) from None


def _with_metrics(args: argparse.Namespace, snapshot: Snapshot | None) -> Snapshot:
    """Adds the GPU metrics of --prometheus / --amp-workspace to a snapshot read on this host (or
    makes a snapshot of them alone), and saves the bundle with them."""
    from hyperpod_nccl.metrics.service import MetricsOptions, choose_window, metrics_snapshot

    source = source_from(args)
    if source is None:
        assert snapshot is not None
        return snapshot
    try:
        window = choose_window(since=args.since)
    except ValueError as error:
        raise UsageError(str(error)) from None
    metrics = redact_model(metrics_snapshot(MetricsOptions(source=source), window))
    if snapshot is None:
        snapshot = metrics
    else:
        snapshot.metrics = metrics.metrics
        snapshot.collection_issues += metrics.collection_issues
    if args.save_bundle:
        print(f"hyperpod-nccl: snapshot saved to {snapshot.save(args.save_bundle)}", file=sys.stderr)
    return snapshot


def run_diagnose(args: argparse.Namespace) -> int:
    from hyperpod_nccl.diagnose.service import diagnose

    if args.bundle or args.cluster:
        snapshot = _load(args.bundle) if args.bundle else _collect(args)
    elif args.orchestrator == "slurm" or not (args.prometheus or args.amp_workspace):
        from hyperpod_nccl.slurm.cli import slurm_snapshot_here

        snapshot = _with_metrics(args, slurm_snapshot_here(args))
    else:
        snapshot = _with_metrics(args, None)
    if snapshot is None:
        return EXIT_FATAL
    report = diagnose(snapshot)
    status = emit_report(report, args.json)
    print_comparison(report, args)
    return status
