"""What a suggested command runs, and whether the reference section it comes from shows it.

A command line is split the way a shell splits it; each command that does the work (not a filter
after a pipe) is reduced to its program and subcommand, past `ssh <host>` and `sudo`. The section
must show the same program with the same subcommand (`kubectl cordon`, `scontrol update`,
`aws sagemaker batch-reboot-cluster-nodes`); `export` must name variables the section names.

What a section shows includes its file's introduction (conventions for every section, such as
how to run a PromQL query) and, when it sends the reader up the remediation ladder
(`operations.md § 9`), the ladder's commands.
"""

from __future__ import annotations

import re
import shlex
from functools import cache

from hyperpod_nccl.references import default_index

_OPERATORS = {"|", "&&", ";", "||"}
_WRAPPERS_WITH_HOST = {"ssh"}
_WRAPPERS = {"sudo"}
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9_-]*$")


def commands_of(line: str) -> list[list[str]]:
    """The argv of each command of a command line that does the work: the first, and any after
    `&&` or `;` (what follows a pipe only filters the output)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    piped = False
    for token in lexer:
        if token in _OPERATORS:
            piped = token == "|"
            commands.append([])
            continue
        if not piped:
            commands[-1].append(token)
    return [argv for argv in commands if argv]


def program_of(argv: list[str]) -> tuple[str, ...]:
    """(program, subcommand…) of one argv, past `ssh <host>` and `sudo`; `export` gives its names."""
    words = list(argv)
    while words and (words[0] in _WRAPPERS or words[0] in _WRAPPERS_WITH_HOST):
        words = words[2:] if words[0] in _WRAPPERS_WITH_HOST else words[1:]
    if not words:
        return ()
    program, rest = words[0], words[1:]
    if program == "export":
        return ("export", *(word.split("=", 1)[0] for word in rest))
    depth = 2 if program == "aws" else 1
    subcommands = []
    for word in rest[:depth]:
        if not _SUBCOMMAND.match(word):
            break
        subcommands.append(word)
    return (program, *subcommands)


LADDER = "operations.md § 9"


@cache
def section_text(pointer: str) -> str:
    index = default_index()
    section = index.resolve(pointer)
    reference = index.file(section.file)
    first = min(s.start for s in reference.sections)
    text = "\n".join(reference.lines[:first]) + "\n" + index.text(section)
    if LADDER in text and pointer != LADDER:
        text += "\n" + index.text(index.resolve(LADDER))
    return text


def shown_in(program: tuple[str, ...], text: str) -> bool:
    """Whether the section shows the program with its subcommand (flags may sit between them)."""
    if not program:
        return False
    if program[0] == "export":
        return all(re.search(rf"\b{re.escape(name)}\b", text) for name in program[1:])
    flags = r"(?:\s+-\S+)*\s+"
    pattern = r"(?<![\w-])" + flags.join(re.escape(word) for word in program) + r"(?![\w-])"
    return re.search(pattern, text) is not None


def unshown(command: str, pointer: str) -> list[str]:
    """The programs of `command` that the section `pointer` does not show."""
    text = section_text(pointer)
    return [" ".join(p) for argv in commands_of(command) if not shown_in(p := program_of(argv), text)]
