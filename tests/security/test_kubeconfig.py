"""No code runs from input: the MCP tools take no kubeconfig path, only a context of the
kubeconfig the server was started with, and that kubeconfig's exec plugins, auth-provider
commands and token files are held to the operator's policy. Driven over stdio against the
recorded Kubernetes API server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client

from hyperpod_nccl.guard.kubeconfig import KubeconfigRefused, load_server_kubeconfig
from tests.kubernetes.conftest import recorded_cluster
from tests.servers.k8s_api import K8sApiServer, start_k8s_api_server
from tests.servers.mcp_stdio import serve

pytestmark = pytest.mark.anyio

CREDENTIAL = {
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    "status": {"token": "from-the-plugin"},
}


@pytest.fixture(scope="module")
def api() -> Iterator[K8sApiServer]:
    yield from start_k8s_api_server(recorded_cluster("healthy"))


def plugin(tmp_path: Path) -> Path:
    """An exec credential plugin that leaves a mark when it runs."""
    script = tmp_path / "plugin.sh"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path / 'plugin-ran'}\necho '{json.dumps(CREDENTIAL)}'\n")
    script.chmod(0o755)
    return script


def kubeconfig(tmp_path: Path, api: K8sApiServer, users: dict[str, dict[str, Any]]) -> Path:
    path = tmp_path / "kube" / "config"
    path.parent.mkdir(exist_ok=True)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "recorded", "cluster": {"server": api.url}}],
        "users": [{"name": name, "user": user} for name, user in users.items()],
        "contexts": [{"name": name, "context": {"cluster": "recorded", "user": name}} for name in users],
        "current-context": next(iter(users)),
    }
    path.write_text(yaml.safe_dump(config))
    return path


def exec_user(command: Path) -> dict[str, Any]:
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(command)}}


async def test_an_exec_plugin_runs_only_when_the_operator_allowlisted_it(
    tmp_path: Path, api: K8sApiServer
) -> None:
    script = plugin(tmp_path)
    config = kubeconfig(tmp_path, api, {"plugin": exec_user(script)})
    async with Client(serve(extra=("--kubeconfig", str(config)))) as client:
        listed = (await client.call_tool("list_kube_contexts", {})).structured_content
        refused = await client.call_tool("list_pods", {"context": "plugin", "namespace": "training"})
    [context] = listed["contexts"]
    assert context["name"] == "plugin" and "--allow-exec-plugin" in context["refused"]
    assert refused.is_error and "not allowlisted" in refused.content[0].text
    assert not (tmp_path / "plugin-ran").exists()

    allowed = serve(extra=("--kubeconfig", str(config), "--allow-exec-plugin", str(script)))
    async with Client(allowed) as client:
        pods = await client.call_tool("list_pods", {"context": "plugin", "namespace": "training"})
    assert not pods.is_error, pods.content[0].text
    assert pods.structured_content["total"] == 4 and (tmp_path / "plugin-ran").exists()


def test_an_auth_provider_command_is_refused_and_never_runs(tmp_path: Path, api: K8sApiServer) -> None:
    marker = tmp_path / "provider-ran"
    gcp = {"auth-provider": {"name": "gcp", "config": {"cmd-path": f"/bin/sh -c 'touch {marker}'"}}}
    server_kubeconfig = load_server_kubeconfig(str(kubeconfig(tmp_path, api, {"gcp": gcp})))
    with pytest.raises(KubeconfigRefused, match="runs a command"):
        server_kubeconfig.client("gcp")
    assert not marker.exists()


def test_a_token_file_is_sent_only_from_beside_the_kubeconfig(tmp_path: Path, api: K8sApiServer) -> None:
    outside = tmp_path / "elsewhere-token"
    outside.write_text("secret-from-elsewhere")
    users = {"outside": {"tokenFile": str(outside)}, "beside": {"tokenFile": "token"}}
    config = kubeconfig(tmp_path, api, users)
    (config.parent / "token").write_text("fixture-token")
    server_kubeconfig = load_server_kubeconfig(str(config))
    with pytest.raises(KubeconfigRefused, match="outside the kubeconfig's folder"):
        server_kubeconfig.client("outside")
    client = server_kubeconfig.client("beside")
    assert client.configuration.api_key["BearerToken"] == "Bearer fixture-token"


@pytest.mark.parametrize("kubeconfig_arg", ["/etc/passwd", "/nonexistent/config", "/dev/null"])
def test_a_server_started_with_an_unusable_kubeconfig_says_why_in_one_line(kubeconfig_arg: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "serve", "--kubeconfig", kubeconfig_arg],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_cli_with_etc_passwd_as_kubeconfig_reports_it_instead_of_crashing(tmp_path: Path) -> None:
    from hyperpod_nccl.collect.eks_auth import KubernetesAccessError
    from hyperpod_nccl.collect.k8s import kubernetes_client_from_kubeconfig

    with pytest.raises(KubernetesAccessError, match="cannot use the kubeconfig"):
        kubernetes_client_from_kubeconfig("/etc/passwd", None)


def test_an_eks_name_read_from_a_cluster_is_checked_before_it_configures_a_client() -> None:
    from hyperpod_nccl.collect.eks_auth import KubernetesAccessError, kubernetes_client_for_eks_cluster

    with pytest.raises(KubernetesAccessError, match="EKS cluster name"):
        kubernetes_client_for_eks_cluster("ml-eks/../../x?y", "us-west-2")
