"""`--compare PREVIOUS.json` for the diagnostic subcommands, and `hyperpod-nccl compare`.

A diagnostic subcommand opts in with two lines: `add_compare_argument(parser)` where it declares
its arguments, and `print_comparison(report, args)` after it prints its report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hyperpod_nccl.cli_common import UsageError
from hyperpod_nccl.compare import (
    FindingChange,
    ReportComparison,
    UnusableReport,
    diff_reports,
    load_report,
)
from hyperpod_nccl.guard.redact import redact_model, redact_text
from hyperpod_nccl.guard.text import escape_controls
from hyperpod_nccl.models import Report
from hyperpod_nccl.render import json_text

_MAX_SCOPE = 6


def _report_file(value: str) -> Report:
    # Loaded while parsing, so a bad PREVIOUS.json fails before a long diagnostic runs.
    try:
        return load_report(Path(value).expanduser())
    except UnusableReport as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_compare_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--compare",
        metavar="PREVIOUS.json",
        type=_report_file,
        help="a report saved earlier with --json: also print what is fixed, still failing and new",
    )


def _scope(values: list[str]) -> str:
    shown = ", ".join(values[:_MAX_SCOPE])
    return shown + (f" (+{len(values) - _MAX_SCOPE} more)" if len(values) > _MAX_SCOPE else "")


def _line(tag: str, change: FindingChange) -> str:
    priority = change.priority or ""
    if change.previous_priority and change.previous_priority != change.priority:
        priority = f"{change.previous_priority} → {change.priority}"
    text = f"  [{tag}] {priority} {change.id}: {change.title}"
    if change.scope:
        text += f" ({_scope(change.scope)})"
    if change.scope_cleared:
        text += f"; cleared: {_scope(change.scope_cleared)}"
    if change.scope_added:
        text += f"; newly affected: {_scope(change.scope_added)}"
    if change.unconfirmed:
        text += f" — not seen, but {change.unconfirmed}"
    if tag != "FIXED" and change.reference:
        text += f" → references/{change.reference}"
    return text


def render_comparison(comparison: ReportComparison) -> str:
    summary = comparison.summary
    changed = f" ({summary.priority_changed} changed priority)" if summary.priority_changed else ""
    unconfirmed = f"{summary.unconfirmed} unconfirmed, " if summary.unconfirmed else ""
    lines = [
        f"Compared with the previous report: {summary.fixed} fixed, {unconfirmed}{summary.still_failing} "
        f"still failing{changed}, {summary.new} new — {summary.verdict.replace('_', ' ')}"
    ]
    lines += [f"  why {summary.verdict.replace('_', ' ')}: {reason}" for reason in comparison.reasons]
    lines += [_line("FIXED", change) for change in comparison.fixed]
    lines += [_line("UNCONFIRMED", change) for change in comparison.unconfirmed]
    lines += [_line("STILL", change) for change in comparison.still_failing]
    lines += [_line("NEW", change) for change in comparison.new]
    lines += [f"  note: {note}" for note in comparison.notes]
    return redact_text("\n".join(escape_controls(line) for line in lines) + "\n")


def print_comparison(report: Report, args: argparse.Namespace) -> None:
    """After the report: the comparison with `--compare`, on stdout (on stderr with --json, so
    stdout stays one JSON report that a later run can compare against). A previous report of
    another diagnostic is refused in one line; the report itself was printed already."""
    previous: Report | None = getattr(args, "compare", None)
    if previous is None:
        return
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout
    try:
        comparison = diff_reports(previous, report)
    except UnusableReport as error:
        print(f"hyperpod-nccl: --compare: {error}", file=sys.stderr)
        return
    stream.write("\n" + render_comparison(comparison))


def add_compare_command_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("previous", metavar="PREVIOUS.json", type=_report_file, help="the earlier report")
    parser.add_argument("current", metavar="CURRENT.json", type=_report_file, help="the rerun's report")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run_compare_command(args: argparse.Namespace) -> int:
    """`hyperpod-nccl compare`: exit 0 when everything the previous report found is fixed and
    nothing is new, 1 otherwise (unconfirmed issues are not fixed)."""
    try:
        comparison = diff_reports(args.previous, args.current)
    except UnusableReport as error:
        raise UsageError(str(error)) from None
    if args.json:
        sys.stdout.write(json_text(redact_model(comparison)) + "\n")
    else:
        sys.stdout.write(render_comparison(comparison))
    summary = comparison.summary
    return 1 if summary.still_failing or summary.new or summary.unconfirmed else 0
