"""The MCP server's Kubernetes access: the kubeconfig it was started with, under a policy.

A kubeconfig can make the client run programs (an `exec` credential plugin, a gcp
`auth-provider` `cmd-path`) and read files (a `tokenFile`, sent as a bearer token). So the MCP
tools never take a kubeconfig path: the operator names it at start (`serve --kubeconfig`, or
`KUBECONFIG`), the tools pick one of its contexts by name, and before a context is used its user
entry is checked: an exec plugin runs only if the operator allowlisted its program
(`serve --allow-exec-plugin`), auth-provider commands are refused, and a token file must live
beside the kubeconfig or in the pod's service-account folder. The CLI keeps reading the user's
own kubeconfig as kubectl does (collect/k8s.py).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, Field

from hyperpod_nccl.guard.validate import preview

if TYPE_CHECKING:
    from kubernetes.config.kube_config import ConfigNode

    from hyperpod_nccl.guard.k8s import ReadOnlyApiClient

MAX_KUBECONFIG_BYTES = 1024 * 1024
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigRefused(ValueError):
    """The kubeconfig, or one of its contexts, cannot be used; the message says why and what to do."""


class ContextInfo(BaseModel):
    name: str
    current: bool = Field(description="The kubeconfig's current-context, used when none is named.")
    refused: str | None = Field(default=None, description="Why the server will not use it, if it will not.")


def _resolve_program(command: str, base: Path) -> Path | None:
    if "/" in command:
        path = Path(command).expanduser()
        return (path if path.is_absolute() else base / path).resolve()
    found = shutil.which(command)
    return Path(found).resolve() if found else None


_KINDS = ("clusters", "contexts", "users")


@dataclass(frozen=True)
class _Entry:
    """A cluster, context or user, with the file that named it: relative paths resolve against it."""

    value: dict[str, Any]
    path: str


@dataclass(frozen=True)
class _Merged:
    """The kubeconfig files merged, as plain data: the Kubernetes client (a second to import) is
    loaded only when a tool asks for a client, not when the server starts."""

    entries: dict[str, list[_Entry]]
    current_context: object
    path: str

    def config_node(self) -> ConfigNode:
        from kubernetes.config.kube_config import ConfigNode

        merged: dict[str, Any] = {
            kind: [ConfigNode(f"{entry.path}/{kind}", entry.value, entry.path) for entry in entries]
            for kind, entries in self.entries.items()
        }
        merged["current-context"] = self.current_context
        return ConfigNode("kube-config", merged, self.path)


@dataclass
class ServerKubeconfig:
    """Contexts of the kubeconfig file(s) the server was started with, and the exec allowlist."""

    paths: list[Path]
    config: _Merged | None
    exec_allowlist: frozenset[Path] = field(default_factory=frozenset)
    problem: str | None = None  # why no kubeconfig could be read, when none could

    def contexts(self) -> list[ContextInfo]:
        if self.config is None:
            return []
        current = self.config.current_context
        return [
            ContextInfo(
                name=str(entry.value["name"]),
                current=entry.value["name"] == current,
                refused=self._refusal(str(entry.value["name"])),
            )
            for entry in self._entries("contexts")
        ]

    def client(self, context: str | None) -> ReadOnlyApiClient:
        """A read-only client for `context` (default: the current context), if the policy allows it."""
        if self.config is None:
            raise KubeconfigRefused(self.problem or "the server was started without a kubeconfig")
        name = context or self.config.current_context
        if not name:
            raise KubeconfigRefused(
                "the kubeconfig has no current-context: pass `context` (see list_kube_contexts)"
            )
        refusal = self._refusal(str(name))
        if refusal:
            raise KubeconfigRefused(refusal)
        from kubernetes.client import Configuration
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.kube_config import KubeConfigLoader

        from hyperpod_nccl.guard.k8s import read_only_api_client

        configuration = Configuration()
        try:
            # config_base_path=None: relative paths resolve against the file that names them.
            loader = KubeConfigLoader(self.config.config_node(), active_context=name, config_base_path=None)
            loader.load_and_set(configuration)
        except (ConfigException, OSError, ValueError, TypeError, KeyError) as error:
            raise KubeconfigRefused(f"context {preview(name)}: {str(error).splitlines()[0][:300]}") from None
        return read_only_api_client(configuration)

    def _entries(self, kind: str) -> list[_Entry]:
        assert self.config is not None
        return self.config.entries[kind]

    def _entry(self, kind: str, name: object) -> _Entry | None:
        return next((entry for entry in self._entries(kind) if entry.value.get("name") == name), None)

    def _refusal(self, name: str) -> str | None:
        context = self._entry("contexts", name)
        if context is None:
            known = ", ".join(str(node.value.get("name")) for node in self._entries("contexts")[:20])
            return f"no context {preview(name)} in the server's kubeconfig; contexts: {known or 'none'}"
        user = self._entry("users", (context.value.get("context") or {}).get("user"))
        if user is None:
            return None  # no credentials at all: the API server decides
        return self._user_refusal(name, user)

    def _user_refusal(self, context: str, node: _Entry) -> str | None:
        user = node.value.get("user") or {}
        base = Path(node.path).parent if node.path else Path.cwd()
        provider = user.get("auth-provider") or {}
        if isinstance(provider, dict) and (provider.get("config") or {}).get("cmd-path"):
            return (
                f"context {context!r}: auth-provider {provider.get('name')!r} runs a command (cmd-path); "
                "the server runs no command from a kubeconfig: use an exec plugin the operator allows "
                "(serve --allow-exec-plugin) or a token"
            )
        exec_config = user.get("exec")
        if isinstance(exec_config, dict):
            program = _resolve_program(str(exec_config.get("command") or ""), base)
            if program is None or program not in self.exec_allowlist:
                return (
                    f"context {context!r}: its exec credential plugin {preview(exec_config.get('command'))} "
                    "is not allowlisted; start the server with --allow-exec-plugin PROGRAM to run it"
                )
        token_file = user.get("tokenFile")
        if token_file and not user.get("token"):
            path = Path(str(token_file)).expanduser()
            resolved = (path if path.is_absolute() else base / path).resolve()
            if not any(resolved.is_relative_to(place) for place in (base.resolve(), SERVICE_ACCOUNT_DIR)):
                return (
                    f"context {context!r}: tokenFile {preview(str(token_file))} is outside the kubeconfig's "
                    f"folder and {SERVICE_ACCOUNT_DIR}; the server sends no other file as a token"
                )
        return None


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_KUBECONFIG_BYTES + 1)
    except OSError as error:
        raise KubeconfigRefused(f"cannot read the kubeconfig {path}: {error.strerror or error}") from None
    if len(raw) > MAX_KUBECONFIG_BYTES:
        raise KubeconfigRefused(f"{path} is larger than {MAX_KUBECONFIG_BYTES} bytes: not a kubeconfig")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise KubeconfigRefused(
            f"{path} is not a kubeconfig (not YAML: {str(error).splitlines()[0]})"
        ) from None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k) or [], list) for k in ("clusters", "contexts", "users")
    ):
        raise KubeconfigRefused(f"{path} is not a kubeconfig (no clusters, contexts and users lists)")
    return data


def _merged(paths: Sequence[Path]) -> _Merged:
    """The files merged as kubectl does: the first file that names an entry wins."""
    entries: dict[str, list[_Entry]] = {kind: [] for kind in _KINDS}
    current: object = None
    for index, path in enumerate(paths):
        data = _read(path)
        for kind in _KINDS:
            known = {entry.value.get("name") for entry in entries[kind]}
            for item in data.get(kind) or []:
                if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"] not in known:
                    entries[kind].append(_Entry(item, str(path)))
        if index == 0:
            current = data.get("current-context")
    return _Merged(entries, current, str(paths[0]))


def load_server_kubeconfig(
    kubeconfig: str | None, allow_exec: Sequence[str] = (), *, environ: dict[str, str] | None = None
) -> ServerKubeconfig:
    """The kubeconfig named at start (`--kubeconfig`, else KUBECONFIG, else ~/.kube/config).

    A missing default is not an error (the EKS tools need none); a named file that cannot be read
    raises KubeconfigRefused, so the server refuses to start with a clear message."""
    environ = os.environ if environ is None else environ
    named = kubeconfig or environ.get("KUBECONFIG")
    spec = named or DEFAULT_KUBECONFIG
    paths = [Path(part).expanduser() for part in spec.split(os.pathsep) if part]
    existing = [path for path in paths if path.exists()]
    allowlist = frozenset(program for name in allow_exec if (program := _resolve_program(name, Path.cwd())))
    missing = [name for name in allow_exec if _resolve_program(name, Path.cwd()) is None]
    if missing:
        raise KubeconfigRefused(f"--allow-exec-plugin: no program {', '.join(map(preview, missing))} on PATH")
    if not existing:
        if named:
            raise KubeconfigRefused(f"kubeconfig {preview(named)} does not exist")
        return ServerKubeconfig(
            [], None, allowlist, problem="no kubeconfig: start the server with --kubeconfig"
        )
    return ServerKubeconfig(existing, _merged(existing), allowlist)
