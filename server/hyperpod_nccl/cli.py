"""`hyperpod-nccl`: the same read-only diagnostics as the MCP server, for a person at a terminal.

Exit status (shared/CONTRACT.md): 0 the run completed and found no P0/P1 issue; 1 it completed
and found one or more; 2 the input or the arguments were unusable.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hyperpod_nccl import __version__
from hyperpod_nccl.cli_common import EXIT_OK, EXIT_UNUSABLE, UsageError
from hyperpod_nccl.guard.redact import redact_stderr
from hyperpod_nccl.guard.text import escape_controls
from hyperpod_nccl.references import UnknownReference, default_index, list_reference_files


def _references(args: argparse.Namespace) -> int:
    index = default_index()
    try:
        if args.file and args.section:
            sys.stdout.write(index.text(index.section(args.file, args.section)))
            return EXIT_OK
        files = [index.file(args.file)] if args.file else index.files()
    except UnknownReference as error:
        raise UsageError(str(error)) from None
    listing = list_reference_files(index)
    for info in listing.files:
        if info.file not in {f.name for f in files}:
            continue
        print(f"{info.file}: {info.title}")
        for section in info.sections:
            print(f"  § {section.pointer.split(' § ', 1)[1]:<8} {section.title}")
    return EXIT_OK


Command = Callable[[argparse.Namespace], int]


def _add_references_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="a reference file, e.g. debugging-guide.md")
    parser.add_argument("section", nargs="?", help="a section number or heading, e.g. 11")


def _from(module: str, name: str) -> Callable[..., Any]:
    """A subcommand's function, imported when it is called: `triage` never loads the AWS and
    Kubernetes clients that `diagnose` needs, and every command starts sooner."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    return call


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand; with `only`, the arguments of that one alone are loaded."""
    parser = argparse.ArgumentParser(
        prog="hyperpod-nccl",
        description=(
            "Read-only diagnosis of NCCL and distributed-training failures on GPU clusters "
            "(SageMaker HyperPod on EKS or Slurm, Kubernetes, Slurm). Nothing it runs changes the "
            "cluster: every fix is printed as a suggested command for you to run."
        ),
        epilog="Exit status: 0 no P0/P1 issue found, 1 issues found, 2 unusable input or arguments.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text, add_arguments, run in COMMANDS:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            add_arguments(sub)
        sub.set_defaults(run=run)
    return parser


# (name, help, add_arguments, run): one row per subcommand.
COMMANDS: list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Command]] = [
    (
        "serve",
        "run the MCP server (stdio by default)",
        _from("hyperpod_nccl.serve", "add_serve_arguments"),
        _from("hyperpod_nccl.serve", "run_serve"),
    ),
    ("references", "list reference sections, or print one", _add_references_arguments, _references),
    (
        "diagnose",
        "diagnose a HyperPod cluster live (--cluster, --region) or from a saved bundle (--bundle)",
        _from("hyperpod_nccl.diagnose.cli", "add_diagnose_arguments"),
        _from("hyperpod_nccl.diagnose.cli", "run_diagnose"),
    ),
    (
        "triage",
        "triage worker logs of every rank: who hung, who waited, and why (exit 1 when issues are found)",
        _from("hyperpod_nccl.triage.cli", "add_triage_arguments"),
        _from("hyperpod_nccl.triage.cli", "run_triage_command"),
    ),
    (
        "compare",
        "compare two saved reports: fixed, still failing, new (exit 1 while anything remains)",
        _from("hyperpod_nccl.compare_cli", "add_compare_command_arguments"),
        _from("hyperpod_nccl.compare_cli", "run_compare_command"),
    ),
    (
        "bundle",
        "write a redacted escalation bundle (.tar.gz with CASE.md) for an AWS Support case",
        _from("hyperpod_nccl.bundle.cli", "add_bundle_arguments"),
        _from("hyperpod_nccl.bundle.cli", "run_bundle"),
    ),
    (
        "probe",
        "run the read-only node-health probe here (--local) or on sampled cluster nodes over SSM",
        _from("hyperpod_nccl.probes.cli", "add_probe_arguments"),
        _from("hyperpod_nccl.probes.cli", "run_probe"),
    ),
    (
        "metrics",
        "read DCGM GPU metrics from Prometheus or AMP: hang onset, silent GPUs, throttling, ECC, stragglers",
        _from("hyperpod_nccl.metrics.cli", "add_metrics_arguments"),
        _from("hyperpod_nccl.metrics.cli", "run_metrics"),
    ),
    (
        "slurm",
        "read Slurm here (login/controller node) or over SSM: controller, nodes, jobs, auto-resume",
        _from("hyperpod_nccl.slurm.cli", "add_slurm_arguments"),
        _from("hyperpod_nccl.slurm.cli", "run_slurm"),
    ),
]


def _one_line(error: BaseException) -> str:
    text = escape_controls(str(error).splitlines()[0] if str(error) else type(error).__name__)
    return text if len(text) <= 500 else text[:500] + "…"


def main(argv: Sequence[str] | None = None) -> int:
    redact_stderr()
    given = list(sys.argv[1:] if argv is None else argv)
    named = next((word for word in given if not word.startswith("-")), None)
    args = build_parser(named if named in {row[0] for row in COMMANDS} else None).parse_args(given)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"hyperpod-nccl: {_one_line(error)}", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        sys.stderr.close()
        return EXIT_OK
    except Exception as error:
        # Exit 1 would read as "issues found": a run that could not finish is exit 2, in one line.
        if os.environ.get("HYPERPOD_NCCL_TRACEBACK"):
            raise
        print(
            f"hyperpod-nccl: could not finish ({type(error).__name__}: {_one_line(error)}); "
            "set HYPERPOD_NCCL_TRACEBACK=1 to see where",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
