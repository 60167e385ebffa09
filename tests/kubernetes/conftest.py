"""Recorded clusters for the Kubernetes tests, served over real HTTP by tests/servers/k8s_api.py.

`fixtures/healthy` is a HyperPod EKS cluster with one healthy PyTorchJob; `fixtures/faulty` plants
one failure per namespace (see fixtures/README.md). Both are `kubectl get -o json` Lists.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from kubernetes.client import Configuration

from hyperpod_nccl.collect.k8s import collect_kubernetes
from hyperpod_nccl.guard.k8s import read_only_api_client
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from tests.servers.k8s_api import K8sApiServer, RecordedCluster, start_k8s_api_server

FIXTURES = Path(__file__).parent / "fixtures"


def recorded_cluster(name: str) -> RecordedCluster:
    root = FIXTURES / name
    objects = [item for path in sorted(root.glob("*.json")) for item in json.loads(path.read_text())["items"]]
    logs = {}
    for path in (root / "logs").rglob("*.log"):
        container = path.name.removesuffix(".log")
        previous = container.endswith(".previous")
        key = (path.parent.parent.name, path.parent.name, container.removesuffix(".previous"), previous)
        logs[key] = path.read_text()
    return RecordedCluster(objects=objects, logs=logs)


def collect(
    server: K8sApiServer, namespace: str | None = None, job: str | None = None, tail: int = 500
) -> tuple[Snapshot, list[CollectionIssue]]:
    api_client = read_only_api_client(Configuration(host=server.url))
    kubernetes, issues = anyio.run(
        lambda: collect_kubernetes(api_client, namespace=namespace, job=job, log_tail_lines=tail)
    )
    snapshot = Snapshot(
        collected_at=datetime.now(UTC).isoformat(),
        orchestrator="eks",
        namespace=namespace,
        job=job,
        kubernetes=kubernetes,
        collection_issues=issues,
    )
    return snapshot, issues


@pytest.fixture(scope="module")
def faulty_server() -> Iterator[K8sApiServer]:
    yield from start_k8s_api_server(recorded_cluster("faulty"))


@pytest.fixture(scope="module")
def healthy_server() -> Iterator[K8sApiServer]:
    yield from start_k8s_api_server(recorded_cluster("healthy"))


@pytest.fixture(scope="module")
def faulty(faulty_server: K8sApiServer) -> Snapshot:
    """The whole faulty cluster, all namespaces, no job named."""
    return collect(faulty_server)[0]
