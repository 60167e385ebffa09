"""The only way a suggested command gets its text: argument lists, checked values, shell quoting.

Users paste a *Suggested command (run this yourself)* into a shell, and the ids in it come from
outside: a bundle's snapshot, a probe's output, a pod spec. So a command is never formatted
from strings. It is an argv list: fixed words are string literals in our code (shell text we
wrote, split with `shlex.split`, so `"kubectl get pods"` is three words), and every outside
value is one word that passed `value(kind, raw)`, the validators tool inputs use
(guard/validate.py). The text is the argv joined with `shlex.join`. A value that fails its check
is left out: the command shows its placeholder (`<region>`) and `why` says what and why.

    suggest(
        "aws sagemaker describe-cluster-node", *hyperpod_flags(cluster, region),
        "--node-id", value(InstanceId, node_id),
        why="Shows the node's status.",
        permission="sagemaker:DescribeClusterNode",
    )

A command line of several commands: `suggest_chain("sudo lspci -vv", "|", "grep LnkSta", why=...)`,
each command a literal or a list of words, with `|`, `&&` or `;` between them. One word made of
literal text and a value (`nodename=<nodes>`) is `joined("nodename=", value(SlurmNodeList, names))`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, LiteralString

from hyperpod_nccl.guard.validate import ClusterName, Region, placeholder_of, validated
from hyperpod_nccl.models import BlastRadius, SuggestedCommand


@dataclass(frozen=True)
class Value:
    """One outside value, checked: `text` is the value, or its placeholder when it failed or is unknown."""

    text: str
    problem: str | None = None


@dataclass(frozen=True)
class Joined:
    """One argv word made of literal text and checked values, e.g. `nodename=ip-10-1-0-1`."""

    parts: tuple[LiteralString | Value, ...]

    @property
    def text(self) -> str:
        return "".join(part if isinstance(part, str) else part.text for part in self.parts)

    @property
    def problems(self) -> list[str]:
        return [part.problem for part in self.parts if isinstance(part, Value) and part.problem]


Word = LiteralString | Value | Joined


def value(kind: object, raw: object) -> Value:
    """`raw` checked against a guard/validate.py type. None or "" is unknown: its placeholder,
    with no complaint. Anything else that fails is left out, with the reason."""
    placeholder = placeholder_of(kind).text
    if raw is None or raw == "":
        return Value(placeholder)
    if not isinstance(raw, str):
        raw = str(raw)
    try:
        return Value(validated(kind, raw))
    except ValueError as error:
        return Value(placeholder, f"{placeholder} left out: {error}")


def placeholder(name: LiteralString) -> Value:
    """A value only the user knows, shown as `<name>` for them to fill in."""
    return Value(f"<{name}>")


def joined(*parts: LiteralString | Value) -> Joined:
    return Joined(tuple(parts))


Command = LiteralString | Sequence[Word]


def argv_of(command: Command) -> list[str]:
    """The argv a shell will see: literal shell text split into words, each value one word."""
    words = [command] if isinstance(command, str) else command
    argv: list[str] = []
    for word in words:
        argv += shlex.split(word) if isinstance(word, str) else [word.text]
    return argv


Operator = Literal["|", "&&", ";"]
# A command line: commands with an operator between each two.
CommandLine = Sequence[Command | Operator]


def _problems(command: Command) -> list[str]:
    found: list[str] = []
    for word in [] if isinstance(command, str) else command:
        if isinstance(word, Value) and word.problem:
            found.append(word.problem)
        elif isinstance(word, Joined):
            found.extend(word.problems)
    return found


def _unknowns(command: Command) -> list[str]:
    """The placeholders standing for values nobody gave (not ones left out for a problem)."""
    values: list[Value] = []
    for word in [] if isinstance(command, str) else command:
        if isinstance(word, Value):
            values.append(word)
        elif isinstance(word, Joined):
            values.extend(part for part in word.parts if isinstance(part, Value))
    return [v.text for v in values if not v.problem and v.text.startswith("<") and v.text.endswith(">")]


_SEPARATORS: dict[str, str] = {"|": " | ", "&&": " && ", ";": "; "}


def _commands(line: CommandLine) -> list[Command]:
    commands, operators = list(line[::2]), list(line[1::2])
    if not commands or any(isinstance(c, str) and c in _SEPARATORS for c in commands):
        raise TypeError("a command line alternates commands and operators, starting with a command")
    if any(operator not in _SEPARATORS for operator in operators):
        raise TypeError(f"operators are {', '.join(_SEPARATORS)}; got {operators}")
    return commands  # type: ignore[return-value]


def command_text(*line: Command | Operator) -> str:
    """The shell text of a command line: each command `shlex.join`ed, operators between them."""
    commands = _commands(line)
    text = shlex.join(argv_of(commands[0]))
    for operator, command in zip(line[1::2], commands[1:], strict=True):
        text += _SEPARATORS[operator] + shlex.join(argv_of(command))  # type: ignore[index]
    return text


def suggest_chain(
    *line: Command | Operator,
    why: str,
    blast_radius: BlastRadius = BlastRadius.READ_ONLY,
    permission: str | None = None,
) -> SuggestedCommand:
    """A suggested command line: commands with `|`, `&&` or `;` between them; see the module docstring."""
    commands = _commands(line)
    problems = [problem for command in commands for problem in _problems(command)]
    unknowns = list(dict.fromkeys(u for command in commands for u in _unknowns(command)))
    # The same value left out twice is said once.
    note = "; ".join(dict.fromkeys(problems))
    if note:
        why = f"{why} ({note}; fill it in yourself)"
    elif unknowns:  # the shell quotes them: they must be replaced, not pasted as they are
        why = f"{why} (replace {', '.join(unknowns)} with your own value{'s' if len(unknowns) > 1 else ''})"
    return SuggestedCommand(
        command=command_text(*line),
        why=why,
        blast_radius=blast_radius,
        permission=permission,
    )


def suggest(
    *words: Word,
    why: str,
    blast_radius: BlastRadius = BlastRadius.READ_ONLY,
    permission: str | None = None,
) -> SuggestedCommand:
    """A suggested command from its argv; see the module docstring."""
    return suggest_chain(words, why=why, blast_radius=blast_radius, permission=permission)


def hyperpod_flags(cluster: str | None, region: str | None) -> tuple[Word, ...]:
    """`--cluster-name C --region R`, which every `aws sagemaker … cluster-node(s)` command takes."""
    return "--cluster-name", value(ClusterName, cluster), "--region", value(Region, region)
