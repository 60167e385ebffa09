"""The Kubernetes read-only guard, proven with the official client over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from hyperpod_nccl.guard.k8s import KubernetesReadOnlyViolation, read_only_api_client, subresource_of
from tests.servers.k8s_api import K8sApiServer, RecordedCluster, start_k8s_api_server

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "llama-worker-0", "namespace": "training", "labels": {"job": "llama"}},
    "spec": {"containers": [{"name": "pytorch", "image": "train:1"}]},
    "status": {"phase": "Running"},
}


@pytest.fixture(scope="module")
def api_server() -> Iterator[K8sApiServer]:
    cluster = RecordedCluster(objects=[POD], logs={("training", "llama-worker-0", "", False): "step 1\n"})
    yield from start_k8s_api_server(cluster)


@pytest.fixture
def core(api_server: K8sApiServer) -> k8s.CoreV1Api:
    api_server.received.clear()
    return k8s.CoreV1Api(read_only_api_client(k8s.Configuration(host=api_server.url)))


def test_get_requests_reach_the_server(core: k8s.CoreV1Api, api_server: K8sApiServer) -> None:
    pods = core.list_namespaced_pod("training", label_selector="job=llama")
    assert [pod.metadata.name for pod in pods.items] == ["llama-worker-0"]
    assert core.read_namespaced_pod_log("llama-worker-0", "training") == "step 1\n"
    assert api_server.methods() == {"GET"}


@pytest.mark.parametrize(
    "attempt",
    [
        lambda core: core.delete_namespaced_pod("llama-worker-0", "training"),
        lambda core: core.create_namespaced_pod("training", k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="x"))),
        lambda core: core.patch_node("ip-10-1-2-3", {"spec": {"unschedulable": True}}),
        lambda core: core.replace_namespaced_service("svc", "training", k8s.V1Service()),
        lambda core: core.create_namespaced_pod_eviction(
            "llama-worker-0", "training", k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="llama-worker-0"))
        ),
    ],
    ids=["delete", "create", "patch", "replace", "evict"],
)
def test_mutating_requests_never_reach_the_server(
    core: k8s.CoreV1Api, api_server: K8sApiServer, attempt
) -> None:
    with pytest.raises(KubernetesReadOnlyViolation, match="only GET is allowed"):
        attempt(core)
    assert api_server.received == []


@pytest.mark.parametrize(
    "attempt",
    [
        lambda core: core.connect_get_namespaced_pod_exec("llama-worker-0", "training", command=["sh"]),
        lambda core: core.connect_get_namespaced_pod_attach("llama-worker-0", "training"),
        lambda core: core.connect_get_namespaced_pod_portforward("llama-worker-0", "training", ports="22"),
        lambda core: core.connect_get_node_proxy("ip-10-1-2-3"),
        lambda core: core.connect_get_namespaced_service_proxy_with_path("svc", "training", "metrics"),
    ],
    ids=["exec", "attach", "portforward", "node-proxy", "service-proxy"],
)
def test_tunnelling_subresources_are_refused_even_over_get(
    core: k8s.CoreV1Api, api_server: K8sApiServer, attempt
) -> None:
    with pytest.raises(KubernetesReadOnlyViolation, match="subresource is refused"):
        attempt(core)
    assert api_server.received == []


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/v1/namespaces/proxy/pods", None),
        ("/api/v1/namespaces/exec", None),
        ("/api/v1/namespaces/a/pods/b/log", "log"),
        ("/apis/apps/v1/namespaces/a/deployments/b/scale", "scale"),
        ("/api/v1/nodes/n1/proxy/metrics", "proxy"),
    ],
)
def test_subresource_is_found_by_position_not_by_name(path: str, expected: str | None) -> None:
    assert subresource_of(path) == expected
