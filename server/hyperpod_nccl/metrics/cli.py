"""`hyperpod-nccl metrics (--prometheus URL | --amp-workspace ID --region R) [--since 2h |
--start T [--end T] | --around TRIAGE.json] [--node NAME] [--json]`.

Exit status: 0 no P0/P1 issue, 1 issues found, 2 unusable arguments, or a Prometheus from which
no GPU metric at all could be read (the report still prints, with the reason).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from hyperpod_nccl.cli_common import EXIT_UNUSABLE, UsageError, emit_report
from hyperpod_nccl.compare_cli import add_compare_argument, print_comparison
from hyperpod_nccl.guard.redact import redact_model

if TYPE_CHECKING:
    from hyperpod_nccl.metrics.service import MetricsSource


def add_source_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """--prometheus / --amp-workspace, shared with `diagnose`."""
    source = parser.add_mutually_exclusive_group(required=required)
    source.add_argument("--prometheus", metavar="URL", help="Prometheus base URL with dcgm-exporter series")
    source.add_argument(
        "--amp-workspace",
        metavar="ID",
        help="Amazon Managed Service for Prometheus workspace (with --region)",
    )


def add_metrics_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser, required=True)
    parser.add_argument("--region", help="AWS region of --amp-workspace (default: $AWS_DEFAULT_REGION)")
    window = parser.add_mutually_exclusive_group()
    window.add_argument("--since", help="how far back from now, e.g. 30m, 2h, 1d (default 2h)")
    window.add_argument("--start", metavar="T", help="window start: ISO 8601 or Unix seconds")
    window.add_argument(
        "--around", metavar="TRIAGE.json", type=Path, help="the window of a `triage --json` report's timeline"
    )
    parser.add_argument("--end", metavar="T", help="window end with --start (default: now)")
    parser.add_argument("--node", metavar="NAME", help="one node: its Hostname label or instance id")
    parser.add_argument("--save-bundle", metavar="DIR", type=Path, help="also write the snapshot to DIR")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_compare_argument(parser)


def source_from(args: argparse.Namespace) -> MetricsSource | None:
    """The validated MetricsSource of --prometheus / --amp-workspace, or None when neither."""
    from hyperpod_nccl.metrics.service import MetricsSource

    if not (args.prometheus or args.amp_workspace):
        return None
    region = args.region or os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION")
    try:
        return MetricsSource(
            prometheus=args.prometheus,
            amp_workspace=args.amp_workspace,
            region=region if args.amp_workspace else None,
        )
    except ValidationError as error:
        raise UsageError(error.errors()[0]["msg"].removeprefix("Value error, ")) from None


def run_metrics(args: argparse.Namespace) -> int:
    from hyperpod_nccl.metrics.service import (
        MetricsOptions,
        choose_window,
        metrics_report,
        metrics_snapshot,
        unusable_reason,
    )

    source = source_from(args)
    try:
        window = choose_window(since=args.since, start=args.start, end=args.end, around=args.around)
        options = MetricsOptions(source=source, node=args.node)
    except ValidationError as error:
        raise UsageError(f"--node: {error.errors()[0]['msg']}") from None
    except ValueError as error:
        raise UsageError(str(error)) from None
    snapshot = redact_model(metrics_snapshot(options, window))
    if args.save_bundle:
        print(f"hyperpod-nccl: snapshot saved to {snapshot.save(args.save_bundle)}", file=sys.stderr)
    report = metrics_report(snapshot)
    status = emit_report(report, args.json)
    print_comparison(report, args)
    if reason := unusable_reason(snapshot):
        print(f"hyperpod-nccl: {reason}", file=sys.stderr)
        return EXIT_UNUSABLE
    return status
