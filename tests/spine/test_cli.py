"""The CLI as a person runs it: a subprocess, its stdout, stderr and exit status."""

from __future__ import annotations

import subprocess
import sys

from hyperpod_nccl.cli import build_parser

CLI = [sys.executable, "-m", "hyperpod_nccl"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def test_help_explains_the_product_and_the_exit_codes() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert "Read-only diagnosis" in result.stdout
    assert "Exit status: 0" in result.stdout


def test_references_lists_every_file_and_prints_a_section() -> None:
    listing = run("references")
    assert listing.returncode == 0
    assert "debugging-guide.md:" in listing.stdout
    assert "§ 11" in listing.stdout
    section = run("references", "operations.md", "8")
    assert section.returncode == 0
    assert section.stdout.startswith("## 8.")


def test_unknown_reference_is_exit_2_with_one_line_on_stderr() -> None:
    result = run("references", "nope.md")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "no reference file 'nope.md'" in result.stderr


def test_bad_http_address_is_exit_2() -> None:
    result = run("serve", "--http", "127.0.0.1:notaport")
    assert result.returncode == 2
    assert "--http expects HOST:PORT" in result.stderr


def test_missing_subcommand_is_exit_2() -> None:
    assert run().returncode == 2


SHELL_LIKE = ("command", "cmd", "shell", "script", "exec", "run")


def test_no_cli_option_takes_a_shell_command() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in subparsers.items():
        for action in sub._actions:
            label = f"{name} {action.dest}"
            assert not any(word == action.dest.lower() for word in SHELL_LIKE), label
