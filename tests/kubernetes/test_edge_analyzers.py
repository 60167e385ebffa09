"""Analyzer cases the recorded clusters do not plant, on hand-built objects shaped like the API's:
/dev/shm too small or on disk, EFA not requested on EFA nodes, a lagging EFA plugin, plain
restarts, pods in phase Unknown and a node that went NotReady and is Ready again."""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.analyze.efa_plugin import analyze_efa_plugin
from hyperpod_nccl.analyze.k8s_events import analyze_k8s_events
from hyperpod_nccl.analyze.k8s_nodes import analyze_k8s_nodes
from hyperpod_nccl.analyze.pods import analyze_pods
from hyperpod_nccl.analyze.shm import analyze_shm, quantity_bytes
from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot


def pod(name: str, *, volume: dict[str, Any] | None = None, efa: int = 0, **status: Any) -> dict[str, Any]:
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}] if volume else []
    limits = {"nvidia.com/gpu": "8", **({"vpc.amazonaws.com/efa": str(efa)} if efa else {})}
    return {
        "metadata": {"name": name, "namespace": "t", "labels": {"job-name": "j"}},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "pytorch", "volumeMounts": mounts, "resources": {"limits": limits}}],
            "volumes": [{"name": "dshm", **volume}] if volume else [],
        },
        "status": {"phase": "Running", **status},
    }


def run(analyzer: Any, **kubernetes: Any) -> list[Finding]:
    return analyzer(
        Snapshot(collected_at="2026-11-22T00:00:00Z", kubernetes=KubernetesSnapshot(**kubernetes))
    )


def test_quantities() -> None:
    assert quantity_bytes("64Mi") == 64 << 20 and quantity_bytes("2G") == 2 * 10**9
    assert quantity_bytes("1.5Gi") == 3 << 29 and quantity_bytes("lots") is None


def test_shm_must_be_memory_backed_and_at_least_a_gibibyte() -> None:
    small = pod("small", volume={"emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}})
    disk = pod("disk", volume={"emptyDir": {}})
    fine = pod("fine", volume={"emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}})
    host = pod("host", volume={"hostPath": {"path": "/dev/shm"}})
    [found] = run(analyze_shm, pods=[small, disk, fine, host])
    assert found.pods == ["t/disk", "t/small"]  # a job's pods come in name order
    assert "not memory-backed" in found.evidence[0].text
    assert found.evidence[1].text == "sizeLimit: 64Mi"


def efa_node(name: str, devices: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"vpc.amazonaws.com/efa": str(devices)}}}


def plugin(ready: int, desired: int) -> dict[str, Any]:
    image = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6"
    return {
        "metadata": {"name": "efa-plugin", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "p", "image": image}]}}},
        "status": {"numberReady": ready, "desiredNumberScheduled": desired},
    }


def test_gpu_pods_on_efa_nodes_that_request_no_efa_fall_back_to_tcp() -> None:
    found = run(analyze_efa_plugin, pods=[pod("a")], nodes=[efa_node("n1", 32)], daemonsets=[plugin(1, 1)])
    assert [(f.id, f.reference) for f in found] == [("k8s.efa.not_requested", "debugging-guide.md § 13")]


def test_a_lagging_efa_plugin_is_a_warning_and_a_ready_one_passes() -> None:
    lagging = run(
        analyze_efa_plugin, pods=[pod("a", efa=32)], nodes=[efa_node("n1", 32)], daemonsets=[plugin(3, 4)]
    )
    assert [(f.id, f.status) for f in lagging] == [("k8s.efa.device_plugin_not_ready", Status.WARN)]
    ready = run(
        analyze_efa_plugin, pods=[pod("a", efa=32)], nodes=[efa_node("n1", 32)], daemonsets=[plugin(4, 4)]
    )
    assert [f.status for f in ready] == [Status.PASS]


def test_plain_restarts_are_a_warning_and_unknown_pods_a_failure() -> None:
    restarted = pod(
        "r",
        containerStatuses=[
            {
                "name": "pytorch",
                "restartCount": 1,
                "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    )
    lost = pod("u", phase="Unknown")
    found = {f.id: f for f in run(analyze_pods, pods=[restarted, lost])}
    assert (found["k8s.pod.restarted"].status, found["k8s.pod.restarted"].priority) == (
        Status.WARN,
        Priority.P1,
    )
    assert (
        "restartCount=1 last terminated reason=Error exitCode=1"
        in found["k8s.pod.restarted"].evidence[0].text
    )
    assert found["k8s.pod.unknown"].reference == "debugging-guide.md § 16"
    assert found["k8s.pod.unknown"].priority == Priority.P0  # a job pod


def test_a_node_that_flapped_is_reported_from_its_event() -> None:
    node = {
        "metadata": {"name": "gpu-07"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }
    event = {
        "metadata": {"name": "gpu-07.1", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "gpu-07"},
        "reason": "NodeNotReady",
        "message": "Node gpu-07 status is now: NodeNotReady",
        "type": "Normal",
        "lastTimestamp": "2026-11-21T22:45:48Z",
    }
    [found] = run(analyze_k8s_events, nodes=[node], events=[event])
    assert (found.id, found.nodes) == ("k8s.event.node_not_ready", ["gpu-07"])
    assert found.title == "1 node(s) went NotReady earlier: Ready again"
    assert run(analyze_k8s_nodes, nodes=[node], events=[event])[0].status == Status.PASS


def test_a_node_that_went_not_ready_and_is_gone_is_not_said_to_have_come_back() -> None:
    other = {"metadata": {"name": "gpu-01"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    event = {
        "metadata": {"name": "gpu-07.1", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "gpu-07"},
        "reason": "NodeNotReady",
        "message": "Node gpu-07 status is now: NodeNotReady",
        "lastTimestamp": "2026-11-21T22:45:48Z",
    }
    [found] = run(analyze_k8s_events, nodes=[other], events=[event])
    assert found.title == "1 node(s) went NotReady earlier: no longer listed (replaced or removed)"


def gpu_node(name: str, instance_type: str, capacity: int, allocatable: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": instance_type}},
        "spec": {"providerID": f"aws:///usw2-az2/sagemaker/cluster/hyperpod-x-i-0aa{name[-1]}bb1234567890"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "capacity": {"nvidia.com/gpu": str(capacity)} if capacity else {},
            "allocatable": {"nvidia.com/gpu": str(allocatable)} if capacity else {},
        },
    }


def test_gpus_withheld_by_the_device_plugin_or_never_advertised() -> None:
    nodes = [
        gpu_node("n1", "ml.p5.48xlarge", 8, 7),
        gpu_node("n2", "ml.p5.48xlarge", 0, 0),
        gpu_node("n3", "ml.p5.48xlarge", 8, 8),
        gpu_node("n4", "ml.m5.2xlarge", 0, 0),
    ]
    [found] = [f for f in run(analyze_k8s_nodes, nodes=nodes) if f.is_issue]
    assert (found.id, found.nodes) == ("k8s.node.gpus_unavailable", ["n1", "n2"])
    assert [e.text for e in found.evidence] == [
        "nvidia.com/gpu: capacity 8, allocatable 7",
        "ml.p5.48xlarge advertises no nvidia.com/gpu",
    ]
    assert found.instance_ids == ["i-0aa1bb1234567890", "i-0aa2bb1234567890"]
