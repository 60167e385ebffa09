"""Every report a planted cluster gives agrees with itself and with the cluster's current state
(tests/diagnose/consistency.py says what that means), and the check catches a report that does not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hyperpod_nccl.diagnose.service import diagnose
from hyperpod_nccl.models import Finding, Priority, Report, RootCause, Status
from hyperpod_nccl.snapshot import Snapshot
from tests.diagnose.consistency import contradictions
from tests.diagnose.example_bundle import EXAMPLE
from tests.kubernetes.conftest import collect, recorded_cluster
from tests.servers.k8s_api import K8sApiServer, start_k8s_api_server


@pytest.fixture(scope="module", params=["faulty", "healthy"])
def recorded(request: pytest.FixtureRequest) -> Iterator[K8sApiServer]:
    yield from start_k8s_api_server(recorded_cluster(request.param))


def test_the_example_bundle_contradicts_nothing() -> None:
    snapshot = Snapshot.load(EXAMPLE)
    assert contradictions(diagnose(snapshot), snapshot) == []


def test_every_recorded_cluster_contradicts_nothing(recorded: K8sApiServer) -> None:
    snapshot, _ = collect(recorded)
    assert contradictions(diagnose(snapshot), snapshot) == []


def test_every_faulty_namespace_on_its_own_contradicts_nothing(recorded: K8sApiServer) -> None:
    for namespace in ("evicted", "pending-efa", "oom", "crashloop", "misconfig"):
        snapshot, _ = collect(recorded, namespace=namespace)
        assert contradictions(diagnose(snapshot), snapshot) == [], namespace


def _snapshot() -> Snapshot:
    node = {
        "metadata": {"name": "gpu-07"},
        "spec": {"providerID": "aws:///us-west-2a/i-0aaaabbbbcccc1111"},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }
    pod = {
        "metadata": {"name": "llama-worker-0", "namespace": "training"},
        "spec": {"nodeName": "gpu-07"},
        "status": {"phase": "Running"},
    }
    return Snapshot.model_validate(
        {"collected_at": "2026-11-23T10:00:00Z", "kubernetes": {"nodes": [node], "pods": [pod]}}
    )


def _finding(**fields: object) -> Finding:
    base: dict[str, object] = {
        "id": "x.y",
        "status": Status.WARN,
        "priority": Priority.P1,
        "title": "t",
        "reference": "operations.md § 6",
    }
    return Finding.model_validate(base | fields)


@pytest.mark.parametrize(
    ("finding", "said"),
    [
        (_finding(title="1 node(s) went NotReady and came back", nodes=["gpu-07"]), "came back"),
        (_finding(nodes=["llama-worker-0"]), "not a node"),
        (_finding(detail="these pods can never be scheduled", pods=["training/llama-worker-0"]), "Running"),
        (_finding(title="Latent: a blocker", status=Status.FAIL, priority=Priority.P0), "latent"),
    ],
)
def test_the_check_catches_what_the_issue_saw(finding: Finding, said: str) -> None:
    report = Report.build("diagnose", [finding])
    found = contradictions(report, _snapshot())
    assert found and said in found[0], found


def test_the_check_catches_a_culprit_that_is_also_ruled_out() -> None:
    cause = RootCause(
        category="infrastructure",
        summary="s",
        culprit_nodes=["gpu-07"],
        confidence="high",
        ruled_out=["NodeNotReady (node gpu-07, 2026-11-23 08:00:00Z): 2 h before the failure"],
    )
    report = Report.build("diagnose", [], root_cause=cause)
    assert contradictions(report, _snapshot()) == [
        "root cause: gpu-07 is both the culprit and ruled out "
        "(NodeNotReady (node gpu-07, 2026-11-23 08:00:00Z): 2 h before the failure…)"
    ]
