"""The Kubernetes collector with the official client over real HTTP against recorded clusters."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from hyperpod_nccl.collect.eks_auth import KubernetesAccessError
from hyperpod_nccl.collect.k8s import kubernetes_client_from_kubeconfig, list_all
from hyperpod_nccl.snapshot import Snapshot
from tests.kubernetes.conftest import collect, recorded_cluster
from tests.servers.k8s_api import K8sApiServer, start_k8s_api_server

SECRETS = (
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "0123456789abcdef0123456789abcdef01234567",
)


def test_every_kind_is_read_with_get_only_and_nothing_tunnels(faulty_server: K8sApiServer) -> None:
    faulty_server.received.clear()
    snapshot, issues = collect(faulty_server)
    kubernetes = snapshot.kubernetes
    assert kubernetes is not None
    assert (len(kubernetes.nodes), len(kubernetes.pods), len(kubernetes.network_policies)) == (8, 21, 3)
    assert {ds["metadata"]["name"] for ds in kubernetes.daemonsets} >= {"aws-node", "kube-proxy"}
    assert any(e["reason"] == "FailedScheduling" for e in kubernetes.events)
    assert issues == []
    assert faulty_server.methods() == {"GET"}
    paths = [path for _, path in faulty_server.received]
    assert not [p for p in paths if p.rsplit("/", 1)[-1] in {"exec", "attach", "portforward", "proxy"}]
    assert "/apis/networking.k8s.io/v1/networkpolicies" in paths


def test_objects_are_trimmed_of_what_no_analyzer_reads(faulty: Snapshot) -> None:
    node = faulty.kubernetes.nodes[0]
    pod = faulty.kubernetes.pods[0]
    assert "images" not in node["status"] and "managedFields" not in node["metadata"]
    assert "annotations" not in pod["metadata"] and "tolerations" not in pod["spec"]
    assert pod["spec"]["containers"][0]["env"]


def test_job_logs_include_previous_instances_of_restarted_containers(faulty_server: K8sApiServer) -> None:
    snapshot, issues = collect(faulty_server, namespace="oom", job="gpt-oom")
    logs = {(log.pod, log.previous) for log in snapshot.kubernetes.pod_logs}
    assert logs == {("gpt-oom-master-0", False), ("gpt-oom-master-0", True), ("gpt-oom-worker-0", False)}
    previous = next(log for log in snapshot.kubernetes.pod_logs if log.previous)
    assert "prefetching shard 00417" in previous.text
    assert issues == []


def test_log_tail_is_bounded(faulty_server: K8sApiServer) -> None:
    snapshot, _ = collect(faulty_server, namespace="netpol", job="llama-np", tail=3)
    for log in snapshot.kubernetes.pod_logs:
        assert len(log.text.splitlines()) == 3 and log.truncated


def test_scoping_to_a_namespace_reads_only_that_namespace(faulty_server: K8sApiServer) -> None:
    faulty_server.received.clear()
    snapshot, _ = collect(faulty_server, namespace="skew", job="mistral")
    assert {pod["metadata"]["namespace"] for pod in snapshot.kubernetes.pods} == {"skew"}
    namespaced = [p for _, p in faulty_server.received if "/pods" in p]
    assert all("/namespaces/skew/" in path for path in namespaced)


def test_a_scoped_scan_still_sees_node_events(faulty_server: K8sApiServer) -> None:
    snapshot, _ = collect(faulty_server, namespace="evicted", job="mixtral")
    reasons = {(e["reason"], e["metadata"]["namespace"]) for e in snapshot.kubernetes.events}
    assert ("NodeNotReady", "default") in reasons and ("TaintManagerEviction", "evicted") in reasons
    assert not [
        e for e in snapshot.kubernetes.events if e["metadata"]["namespace"] not in ("default", "evicted")
    ]


def test_secrets_in_env_and_logs_never_reach_the_snapshot(
    faulty_server: K8sApiServer, tmp_path: Path
) -> None:
    snapshot, _ = collect(faulty_server, namespace="misconfig", job="qwen")
    saved = snapshot.save(tmp_path).read_text()
    for secret in SECRETS:
        assert secret not in saved
    env = {e["name"]: e["value"] for p in snapshot.kubernetes.pods for e in p["spec"]["containers"][0]["env"]}
    assert env["WANDB_API_KEY"] == env["HF_TOKEN"] == env["AWS_SECRET_ACCESS_KEY"] == "[REDACTED]"
    assert env["NCCL_SOCKET_IFNAME"] in {"^lo,docker0", "eth0"}  # ordinary values are kept as they are
    assert "api_key=[REDACTED]" in snapshot.kubernetes.pod_logs[0].text


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_api_server_is_one_issue_not_an_exception() -> None:
    server = K8sApiServer(url=f"http://127.0.0.1:{_closed_port()}", cluster=recorded_cluster("healthy"))
    started = time.monotonic()
    snapshot, issues = collect(server)
    assert time.monotonic() - started < 30
    assert [issue.kind for issue in issues] == ["unreachable"]
    assert snapshot.kubernetes.pods == [] and snapshot.kubernetes.pod_logs == []


def test_rejected_credentials_stop_after_the_first_call() -> None:
    cluster = recorded_cluster("healthy")
    cluster.denied = {"*": 401}
    server = next(generator := start_k8s_api_server(cluster))
    try:
        _, issues = collect(server)
        assert [(i.kind, i.permission) for i in issues] == [("access_denied", "pods: list")]
        assert len(server.received) == 1
    finally:
        generator.close()


def test_a_forbidden_kind_is_reported_with_its_rbac_verb_and_the_rest_is_collected() -> None:
    cluster = recorded_cluster("healthy")
    cluster.denied = {"networkpolicies": 403, "pods/log": 403}
    server = next(generator := start_k8s_api_server(cluster))
    try:
        snapshot, issues = collect(server, namespace="training", job="llama3-70b")
    finally:
        generator.close()
    denied = {(i.source.split(" ")[1], i.permission) for i in issues if i.kind == "access_denied"}
    assert ("network_policies", "networkpolicies: list") in denied
    assert ("pods/log", "pods/log: get") in denied
    assert len(snapshot.kubernetes.pods) == 4 and snapshot.kubernetes.network_policies == []
    assert "is forbidden" in next(i.message for i in issues if i.permission == "networkpolicies: list")


def test_every_page_of_a_list_is_read() -> None:
    pages = {None: (["a", "b"], "t1"), "t1": (["c"], "t2"), "t2": (["d"], None)}
    asked = []

    class Response:
        def __init__(self, token: str | None) -> None:
            items, following = pages[token]
            self.data = json.dumps({"items": items, "metadata": {"continue": following} if following else {}})

    def call(**kwargs: object) -> Response:
        asked.append(kwargs.get("_continue"))
        return Response(kwargs.get("_continue"))  # type: ignore[arg-type]

    assert list_all(call) == ["a", "b", "c", "d"]
    assert asked == [None, "t1", "t2"]


def test_a_kubeconfig_and_context_build_a_read_only_client(
    healthy_server: K8sApiServer, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "hp", "cluster": {"server": healthy_server.url}}],
                "users": [{"name": "reader", "user": {"token": "not-a-real-token"}}],
                "contexts": [
                    {"name": "other", "context": {"cluster": "missing", "user": "reader"}},
                    {"name": "hyperpod", "context": {"cluster": "hp", "user": "reader"}},
                ],
                "current-context": "other",
            }
        )
    )
    client = kubernetes_client_from_kubeconfig(str(kubeconfig), "hyperpod")
    assert type(client).__name__ == "ReadOnlyApiClient"
    assert client.configuration.host == healthy_server.url
    with pytest.raises(KubernetesAccessError) as raised:
        kubernetes_client_from_kubeconfig(str(tmp_path / "absent"), None)
    assert raised.value.issue.source == "kubeconfig"


def test_a_proxy_answering_html_is_an_error_issue_not_a_crash() -> None:
    class Portal(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html><body>Sign in to the corporate proxy</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Portal)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        server = K8sApiServer(
            url=f"http://127.0.0.1:{httpd.server_port}", cluster=recorded_cluster("healthy")
        )
        snapshot, issues = collect(server)
    finally:
        httpd.shutdown()
    assert issues and {issue.kind for issue in issues} == {"error"}
    assert "not a Kubernetes API answer" in issues[0].message
    assert snapshot.kubernetes.pods == []
