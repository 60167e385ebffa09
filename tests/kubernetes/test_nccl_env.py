"""NCCL environment rules the recorded clusters do not plant, on hand-built pods: safety nets
switched off, deprecated names, interfaces that cannot reach other nodes, RDMA on p4d."""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.analyze.nccl_env import analyze_nccl_env
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot


def pod(name: str, env: dict[str, str], *, node: str = "n1", efa: int = 4) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": str(efa)}
    container = {
        "name": "pytorch",
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {"limits": limits},
    }
    return {
        "metadata": {"name": name, "namespace": "t", "labels": {"job-name": "j"}},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


def node(name: str, instance_type: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": instance_type}}}


def ids(pods: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None) -> set[str]:
    kubernetes = KubernetesSnapshot(pods=pods, nodes=nodes or [])
    return {
        f.id for f in analyze_nccl_env(Snapshot(collected_at="2026-11-22T00:00:00Z", kubernetes=kubernetes))
    }


BASE = {"NCCL_DEBUG": "INFO", "FI_PROVIDER": "efa", "NCCL_SOCKET_IFNAME": "^lo,docker0"}


def test_a_sound_identical_environment_passes() -> None:
    assert ids([pod("a", BASE), pod("b", BASE)]) == {"nccl.env.consistent"}


def test_safety_nets_switched_off() -> None:
    env = BASE | {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_NCCL_ENABLE_MONITORING": "0"}
    found = ids([pod("a", env | {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"})])
    assert {
        "nccl.env.async_error_handling_off",
        "nccl.env.heartbeat_monitor_off",
        "nccl.env.flight_recorder_off",
    } <= found


def test_deprecated_names_only_when_the_new_name_is_absent() -> None:
    assert "nccl.env.deprecated" in ids([pod("a", BASE | {"NCCL_ASYNC_ERROR_HANDLING": "1"})])
    both = BASE | {"NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    assert "nccl.env.deprecated" not in ids([pod("a", both)])


def test_an_interface_list_that_selects_docker0_but_not_one_that_excludes_it() -> None:
    assert "nccl.env.socket_ifname" in ids([pod("a", BASE | {"NCCL_SOCKET_IFNAME": "docker0,eth"})])
    assert "nccl.env.socket_ifname" not in ids([pod("a", BASE | {"NCCL_SOCKET_IFNAME": "^docker0,lo"})])


def test_rdma_must_be_enabled_on_p4d_only() -> None:
    nodes = [node("p4", "ml.p4d.24xlarge"), node("p5", "ml.p5.48xlarge")]
    assert "nccl.env.efa_rdma_off" in ids([pod("a", BASE, node="p4")], nodes)
    assert "nccl.env.efa_rdma_off" not in ids(
        [pod("a", BASE | {"FI_EFA_USE_DEVICE_RDMA": "1"}, node="p4")], nodes
    )
    assert "nccl.env.efa_rdma_off" not in ids([pod("a", BASE, node="p5")], nodes)


def test_efa_provider_without_efa_devices() -> None:
    assert "nccl.env.efa_provider_without_device" in ids([pod("a", BASE, efa=0)])
