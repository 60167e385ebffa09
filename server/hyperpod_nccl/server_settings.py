"""What the MCP server was started with: its file boundary, its kubeconfig and its deadline.

`serve` configures these once at start; the tools read them. A tool called directly (tests,
another program) gets the defaults: the working directory as the only root and output folder,
the kubeconfig from KUBECONFIG or ~/.kube/config, no exec plugin allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field

from hyperpod_nccl.guard.boundary import FileBoundary
from hyperpod_nccl.guard.kubeconfig import ServerKubeconfig, load_server_kubeconfig

# A tool call that outlives this is answered with what it has (or a timeout), never left hanging.
DEFAULT_TOOL_DEADLINE_S = 600.0


@dataclass(frozen=True)
class ServerSettings:
    files: FileBoundary
    kubeconfig: ServerKubeconfig
    tool_deadline_s: float = DEFAULT_TOOL_DEADLINE_S


_current: ServerSettings | None = None


def configure(settings: ServerSettings) -> None:
    global _current
    _current = settings


def current() -> ServerSettings:
    global _current
    if _current is None:
        try:
            kubeconfig = load_server_kubeconfig(None)
        except ValueError as error:  # a KUBECONFIG that cannot be read: the Kubernetes tools say why
            kubeconfig = ServerKubeconfig([], None, problem=str(error))
        _current = ServerSettings(FileBoundary.create([], None), kubeconfig)
    return _current


def _readable(value: str) -> str:
    return str(current().files.readable(value))


def _writable(value: str) -> str:
    return str(current().files.writable(value))


ReadablePath = Annotated[
    str,
    AfterValidator(_readable),
    Field(
        description="A file or directory on the machine running hyperpod-nccl, under a folder it may read."
    ),
]
OutputPath = Annotated[
    str,
    AfterValidator(_writable),
    Field(description="A new file or folder in the server's output directory (a name, or a path inside it)."),
]
