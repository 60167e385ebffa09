"""MASTER_ADDR resolution the way cluster DNS does it, on hand-built objects for the forms the
recorded clusters do not use: svc.ns, host.svc, FQDNs, a ClusterIP Service, a Service with no
ready endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from hyperpod_nccl.analyze.master_addr import check_address, service_candidates
from hyperpod_nccl.models import Priority, Status
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("rdzv", [("train", "rdzv")]),
        ("rdzv.infra", [("infra", "rdzv"), ("train", "infra")]),
        ("rdzv.infra.svc", [("infra", "rdzv"), ("train", "infra")]),
        ("rdzv.infra.svc.cluster.local", [("infra", "rdzv"), ("train", "infra")]),
        ("job-master-0.job.train.svc.cluster.local.", [("train", "job")]),
    ],
)
def test_service_candidates(address: str, expected: list[tuple[str, str]]) -> None:
    assert service_candidates(address, "train") == expected


def service(name: str, cluster_ip: str = "None") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "train"},
        "spec": {"clusterIP": cluster_ip, "selector": {"a": "b"}},
    }


def endpoints(name: str, ready: int) -> dict[str, Any]:
    addresses = [{"ip": f"10.0.0.{i}"} for i in range(ready)]
    return {
        "metadata": {"name": name, "namespace": "train"},
        "subsets": [{"addresses": addresses}] if ready else [],
    }


USER = [({"metadata": {"name": "w-0", "namespace": "train"}, "spec": {}}, "pytorch")]


def test_a_service_without_ready_endpoints_is_a_failure_only_while_pods_run() -> None:
    kubernetes = KubernetesSnapshot(services=[service("rdzv")], endpoints=[endpoints("rdzv", 0)])
    found = check_address("rdzv", USER, kubernetes, running=True)
    assert (found.id, found.priority) == ("k8s.master_addr.no_endpoints", Priority.P0)
    assert check_address("rdzv", USER, kubernetes, running=False).status == Status.PASS


def test_a_cluster_ip_service_is_a_warning() -> None:
    kubernetes = KubernetesSnapshot(
        services=[service("rdzv", "172.20.0.9")], endpoints=[endpoints("rdzv", 1)]
    )
    found = check_address("rdzv.train.svc.cluster.local", USER, kubernetes, running=True)
    assert (found.id, found.status, found.priority) == (
        "k8s.master_addr.not_headless",
        Status.WARN,
        Priority.P2,
    )


def test_a_pod_hostname_under_a_headless_service_resolves() -> None:
    kubernetes = KubernetesSnapshot(services=[service("job")], endpoints=[endpoints("job", 2)])
    assert check_address("job-master-0.job", USER, kubernetes, running=True).status == Status.PASS
