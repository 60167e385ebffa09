"""`hyperpod-nccl`: the same read-only diagnostics as the MCP server, for a person at a terminal.

Exit status (shared/CONTRACT.md): 0 the run completed and found no P0/P1 issue; 1 it completed
and found one or more; 2 the input or the arguments were unusable.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from hyperpod_nccl import __version__
from hyperpod_nccl.bundle.cli import add_bundle_arguments, run_bundle
from hyperpod_nccl.cli_common import EXIT_OK, EXIT_UNUSABLE, UsageError
from hyperpod_nccl.compare_cli import add_compare_command_arguments, run_compare_command
from hyperpod_nccl.diagnose.cli import add_diagnose_arguments, run_diagnose
from hyperpod_nccl.guard.redact import redact_stderr
from hyperpod_nccl.guard.text import escape_controls
from hyperpod_nccl.metrics.cli import add_metrics_arguments, run_metrics
from hyperpod_nccl.probes.cli import add_probe_arguments, run_probe
from hyperpod_nccl.references import UnknownReference, default_index, list_reference_files
from hyperpod_nccl.serve import add_serve_arguments, run_serve
from hyperpod_nccl.slurm.cli import add_slurm_arguments, run_slurm
from hyperpod_nccl.triage.cli import add_triage_arguments, run_triage_command


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


def build_parser() -> argparse.ArgumentParser:
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
        add_arguments(sub)
        sub.set_defaults(run=run)
    return parser


# (name, help, add_arguments, run): one row per subcommand.
COMMANDS: list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Command]] = [
    ("serve", "run the MCP server (stdio by default)", add_serve_arguments, run_serve),
    ("references", "list reference sections, or print one", _add_references_arguments, _references),
    (
        "diagnose",
        "diagnose a HyperPod cluster live (--cluster, --region) or from a saved bundle (--bundle)",
        add_diagnose_arguments,
        run_diagnose,
    ),
    (
        "triage",
        "triage worker logs of every rank: who hung, who waited, and why (exit 1 when issues are found)",
        add_triage_arguments,
        run_triage_command,
    ),
    (
        "compare",
        "compare two saved reports: fixed, still failing, new (exit 1 while anything remains)",
        add_compare_command_arguments,
        run_compare_command,
    ),
    (
        "bundle",
        "write a redacted escalation bundle (.tar.gz with CASE.md) for an AWS Support case",
        add_bundle_arguments,
        run_bundle,
    ),
    (
        "probe",
        "run the read-only node-health probe here (--local) or on sampled cluster nodes over SSM",
        add_probe_arguments,
        run_probe,
    ),
    (
        "metrics",
        "read DCGM GPU metrics from Prometheus or AMP: hang onset, silent GPUs, throttling, ECC, stragglers",
        add_metrics_arguments,
        run_metrics,
    ),
    (
        "slurm",
        "read Slurm here (login/controller node) or over SSM: controller, nodes, jobs, auto-resume",
        add_slurm_arguments,
        run_slurm,
    ),
]


def _one_line(error: BaseException) -> str:
    text = escape_controls(str(error).splitlines()[0] if str(error) else type(error).__name__)
    return text if len(text) <= 500 else text[:500] + "…"


def main(argv: Sequence[str] | None = None) -> int:
    redact_stderr()
    args = build_parser().parse_args(argv)
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
