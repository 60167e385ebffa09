"""How any failure inside an MCP tool reaches the client: one short line it can act on.

A tool that anticipates a failure raises ToolError (or one of the product's own errors, whose
messages are written for users) and its message passes through verbatim, bounded to one line.
The same cause reads the same in every tool and in the CLI: missing AWS credentials are worded
once (`collect.aws.credentials_problem`). A message that names a CLI flag the tool has as an
argument (`--region`) names the argument instead (`region`). Anything unexpected becomes one line
that names the tool and says what to do; its traceback stays in the server's log. Exception
groups (a failure inside an anyio task group) are unwrapped to the failure they carry.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from hyperpod_nccl.guard.redact import redact_text
from hyperpod_nccl.render import shorten

MAX_MESSAGE_CHARS = 400

# Errors whose message is written for the user: passed on as they are. Named by module, not
# imported: an error of a class can only exist once its module (boto3's, the Kubernetes client's)
# is loaded, and the server starts without them.
_ANTICIPATED = (
    ("mcp.server.mcpserver.exceptions", "ToolError"),
    ("mcp.server.mcpserver.exceptions", "ResourceError"),
    ("hyperpod_nccl.collect.aws", "AwsPrerequisiteError"),
    ("hyperpod_nccl.collect.eks_auth", "KubernetesAccessError"),
    ("hyperpod_nccl.compare", "UnusableReport"),
    ("hyperpod_nccl.bundle.archive", "BundleError"),
    ("hyperpod_nccl.slurm.service", "SlurmUnavailable"),
    ("hyperpod_nccl.probes.targets", "ClusterLookupError"),
    ("hyperpod_nccl.collect.slurm", "ControllerNotFound"),
    ("hyperpod_nccl.probes.fanout", "UnknownNode"),
    ("hyperpod_nccl.references", "UnknownReference"),
    ("hyperpod_nccl.guard.aws", "ReadOnlyViolation"),
    ("hyperpod_nccl.guard.k8s", "KubernetesReadOnlyViolation"),
)


def _loaded(module: str, name: str) -> type[BaseException] | None:
    found = sys.modules.get(module)
    return getattr(found, name, None) if found is not None else None


def _is_anticipated(error: BaseException) -> bool:
    return any(
        (kind := _loaded(module, name)) is not None and isinstance(error, kind)
        for module, name in _ANTICIPATED
    )


_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")
_PYDANTIC_PREFIX = re.compile(r"^(Value|Assertion) error, ")


def _leaf(error: BaseException) -> BaseException:
    """The failure an exception group carries: the first anticipated one, else the first."""
    while isinstance(error, BaseExceptionGroup):
        leaves = [_leaf(inner) for inner in error.exceptions]
        error = next((leaf for leaf in leaves if _message(leaf)), leaves[0])
    return error


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and what it was raised from or while handling, even under `raise … from None`."""
    chain = [error]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None and cause not in chain:
        chain.append(cause)
    return chain


def _message(error: BaseException) -> str | None:
    """The user-facing text of an anticipated failure, or None for a crash. A failure that came
    from missing or rejected credentials is worded as such, whatever the tool wrapped it in."""
    if "botocore" in sys.modules:  # else no AWS call was made, and no AWS error can be in the chain
        from botocore.exceptions import BotoCoreError, ClientError

        from hyperpod_nccl.collect.aws import credentials_problem

        problem = next(filter(None, map(credentials_problem, _chain(error))), None)
        if problem:
            return problem
        if isinstance(error, ClientError):
            return str(error)  # "An error occurred (Code) when calling the Operation operation: …"
        if isinstance(error, BotoCoreError):
            return f"AWS call failed: {error}"
    if _is_anticipated(error):
        return str(error)
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    return None


def _arguments_named(text: str, arguments: Collection[str]) -> str:
    def name(match: re.Match[str]) -> str:
        argument = match.group(1).replace("-", "_")
        return f"`{argument}`" if argument in arguments else match.group(0)

    return _FLAG.sub(name, text)


def one_line(text: str, arguments: Collection[str] = ()) -> str:
    """`text` as the client sees it: redacted, on one line, bounded, with argument names."""
    flat = " ".join(redact_text(text).split())
    return shorten(_arguments_named(flat, arguments), MAX_MESSAGE_CHARS)


def invalid_arguments(error: ValidationError) -> str:
    """Arguments that failed the tool's input schema, by argument name."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"`{where}`: {_PYDANTIC_PREFIX.sub('', item['msg'])}")
    return "invalid arguments: " + "; ".join(problems)


def unexpected(tool: str) -> str:
    return (
        f"{tool} failed unexpectedly (the server log has the details); retry once, and if it fails "
        "again report it as a hyperpod-nccl bug with the arguments you used"
    )


def tool_failure(tool: str, error: BaseException, arguments: Collection[str] = ()) -> tuple[str, bool]:
    """(what the client reads, whether it was anticipated) for a failure raised by `tool`."""
    # The SDK wraps what the tool raised in a ToolError naming the tool, caused by the original.
    cause = error.__cause__ if isinstance(error, ToolError) and error.__cause__ is not None else error
    if isinstance(cause, ValidationError) and not isinstance(error, UnexpectedToolError):
        return one_line(invalid_arguments(cause), arguments), True  # the arguments failed the schema
    message = _message(_leaf(cause))
    if message is None:
        return unexpected(tool), False
    return one_line(message, arguments), True
