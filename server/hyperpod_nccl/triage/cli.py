"""`hyperpod-nccl triage LOG_PATH [LOG_PATH ...] [--storage STORAGE_LOG_DIR] [--json]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyperpod_nccl.cli_common import UsageError, emit_report, path_argument
from hyperpod_nccl.compare_cli import add_compare_argument, print_comparison


def add_triage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "log_paths",
        type=path_argument,
        nargs="+",
        metavar="LOG_PATH",
        help="worker logs: directories (read recursively) or files, as many as you like",
    )
    parser.add_argument(
        "--storage",
        type=path_argument,
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

    log_paths, storage = _split_storage(args)
    for path in log_paths:
        if recognised := not_logs(path):
            raise UsageError(recognised.for_cli())
    reason = unusable_reason(log_paths, storage, follow_links=args.follow_links)
    if reason:
        raise UsageError(reason)
    report = run_triage(log_paths, storage, follow_links=args.follow_links)
    if reason := nothing_read(report):
        raise UsageError(reason)
    status = emit_report(report, args.json)
    print_comparison(report, args)
    return status


def _split_storage(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """Worker logs and storage logs. The earlier form `triage LOG_DIR STORAGE_LOG_DIR` (two
    directories, no --storage) still reads the second as storage logs, and says so."""
    paths: list[Path] = args.log_paths
    if args.storage is not None:
        return paths, [args.storage]
    if len(paths) == 2 and paths[0].is_dir() and paths[1].is_dir():
        print(
            f"hyperpod-nccl triage: reading {paths[1]} as storage daemon logs (the two-folder form); "
            "pass worker-log folders alone to read both as worker logs, storage logs with --storage",
            file=sys.stderr,
        )
        return paths[:1], paths[1:]
    return paths, []
