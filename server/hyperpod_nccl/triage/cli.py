"""`hyperpod-nccl triage LOG_DIR [STORAGE_LOG_DIR] [--json]`."""

from __future__ import annotations

import argparse

from hyperpod_nccl.cli_common import UsageError, emit_report, path_argument
from hyperpod_nccl.compare_cli import add_compare_argument, print_comparison


def add_triage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "log_dir",
        type=path_argument,
        metavar="LOG_DIR",
        help="worker logs: a directory (read recursively) or a file",
    )
    parser.add_argument(
        "storage_log_dir",
        type=path_argument,
        nargs="?",
        metavar="STORAGE_LOG_DIR",
        help="storage daemon logs (e.g. AIStore): a directory or .tar.gz archives",
    )
    parser.add_argument(
        "--follow-links", action="store_true", help="also read symlinks that point outside LOG_DIR"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_compare_argument(parser)


def run_triage_command(args: argparse.Namespace) -> int:
    from hyperpod_nccl.input_kind import not_logs
    from hyperpod_nccl.triage.discover import unusable_reason
    from hyperpod_nccl.triage.engine import nothing_read, run_triage

    if recognised := not_logs(args.log_dir):
        raise UsageError(recognised.for_cli())
    storage = [args.storage_log_dir] if args.storage_log_dir else []
    reason = unusable_reason([args.log_dir], storage, follow_links=args.follow_links)
    if reason:
        raise UsageError(reason)
    report = run_triage([args.log_dir], storage, follow_links=args.follow_links)
    if reason := nothing_read(report):
        raise UsageError(reason)
    status = emit_report(report, args.json)
    print_comparison(report, args)
    return status
