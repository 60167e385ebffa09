"""What every subcommand shares: exit statuses, the usage error, argument checks, report output.

Kept apart from cli.py, which imports every subcommand, so subcommands can import these at the
top of their modules.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from hyperpod_nccl.guard.validate import validated
from hyperpod_nccl.models import Report
from hyperpod_nccl.render import render_json, render_text, use_color

EXIT_OK, EXIT_ISSUES, EXIT_UNUSABLE = 0, 1, 2


class UsageError(Exception):
    """The input or the arguments cannot be used; the message is the one line printed on stderr."""


def checked(kind: object, value: str) -> str:
    """`value` checked against a guard/validate.py type, or a UsageError saying why."""
    try:
        return validated(kind, value)
    except ValueError as error:
        raise UsageError(str(error)) from None


def argparse_type(kind: object) -> Callable[[str], str]:
    """An argparse `type=` that checks the value against a guard/validate.py type while parsing."""

    def check(value: str) -> str:
        try:
            return validated(kind, value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return check


def path_argument(value: str) -> Path:
    """An argparse `type=` for paths: an empty string is refused (Path("") would mean `.`)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the path is empty: name a file or folder")
    if "\x00" in value:
        raise argparse.ArgumentTypeError("a path cannot contain a NUL byte")
    return Path(value)


def emit_report(report: Report, as_json: bool) -> int:
    """Print a report as JSON or text and return the exit status it implies."""
    if as_json:
        sys.stdout.write(render_json(report) + "\n")
    else:
        sys.stdout.write(render_text(report, color=use_color(sys.stdout)))
    return EXIT_ISSUES if report.blocking else EXIT_OK
