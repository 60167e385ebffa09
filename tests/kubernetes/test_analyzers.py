"""Every planted Kubernetes failure is found with the right priority, reference, evidence and
commands; a healthy namespace produces no issue. Snapshots are collected over real HTTP."""

from __future__ import annotations

import pytest

from hyperpod_nccl.analyze import KUBERNETES_ANALYZERS
from hyperpod_nccl.models import BlastRadius, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from tests.kubernetes.conftest import collect
from tests.servers.k8s_api import K8sApiServer

NOT_READY_NODE = "hyperpod-i-0c8f1d2e3a4b5c607"


@pytest.fixture(scope="module")
def findings(faulty: Snapshot) -> list[Finding]:
    return [finding for analyzer in KUBERNETES_ANALYZERS for finding in analyzer(faulty)]


def one(findings: list[Finding], finding_id: str, pod: str | None = None) -> Finding:
    matching = [f for f in findings if f.id == finding_id and (pod is None or pod in f.pods)]
    assert len(matching) == 1, [(f.id, f.pods) for f in findings]
    return matching[0]


def commands(finding: Finding) -> dict[str, tuple[BlastRadius, str | None]]:
    return {c.command: (c.blast_radius, c.permission) for c in finding.suggested_commands}


def test_pending_pods_carry_the_schedulers_reason(findings: list[Finding]) -> None:
    found = one(findings, "k8s.pod.unschedulable")
    assert (found.status, found.priority, found.reference) == (
        Status.FAIL,
        Priority.P0,
        "debugging-guide.md § 9",
    )
    assert found.pods == ["pending-efa/llama-efa-master-0", "pending-efa/llama-efa-worker-1"]
    assert found.evidence[0].source == "pod pending-efa/llama-efa-master-0 status.conditions[PodScheduled]"
    assert found.evidence[0].text.startswith("0/8 nodes are available: 8 Insufficient vpc.amazonaws.com/efa.")
    assert commands(found) == {
        "kubectl get events -n pending-efa --field-selector involvedObject.name=llama-efa-master-0": (
            BlastRadius.READ_ONLY,
            "events: list",
        )
    }


def test_efa_requested_without_the_device_plugin(findings: list[Finding]) -> None:
    found = one(findings, "k8s.efa.no_device_plugin")
    assert (found.priority, found.reference) == (Priority.P0, "debugging-guide.md § 6")
    assert found.pods == ["pending-efa/llama-efa-master-0", "pending-efa/llama-efa-worker-1"]
    texts = [e.text for e in found.evidence]
    assert "vpc.amazonaws.com/efa: 32" in texts
    assert "vpc.amazonaws.com/efa on 0 of 8 nodes" in texts


def test_crash_loop_points_at_the_previous_log(findings: list[Finding]) -> None:
    found = one(findings, "k8s.pod.crash_loop")
    assert found.pods == ["crashloop/bert-ft-worker-0"] and found.priority == Priority.P0
    assert "back-off 5m0s restarting failed container=pytorch" in found.evidence[0].text
    assert "exitCode=1" in found.evidence[0].text
    assert commands(found)["kubectl logs bert-ft-worker-0 -n crashloop -c pytorch --previous --tail=200"] == (
        BlastRadius.READ_ONLY,
        "pods/log: get",
    )
    assert commands(found)["kubectl describe pod bert-ft-worker-0 -n crashloop"] == (
        BlastRadius.READ_ONLY,
        "pods: get",
    )


def test_oom_killed_exit_137(findings: list[Finding]) -> None:
    found = one(findings, "k8s.pod.oom_killed")
    assert (found.pods, found.reference) == (["oom/gpt-oom-master-0"], "debugging-guide.md § 4")
    assert "reason=OOMKilled exitCode=137" in found.evidence[0].text
    assert commands(found)["kubectl edit pytorchjob gpt-oom -n oom"][0] == BlastRadius.RESTARTS_JOB
    # the OOM restarts are not reported a second time as plain restarts
    assert not [f for f in findings if f.id == "k8s.pod.restarted" and "oom/gpt-oom-master-0" in f.pods]


def test_image_pull_error(findings: list[Finding]) -> None:
    found = one(findings, "k8s.pod.image_pull")
    assert found.pods == ["imagepull/vit-train-master-0"]
    assert found.evidence[0].text.startswith("ImagePullBackOff: Back-off pulling image")
    assert "vit-train:v2-typo" in found.evidence[0].text


def test_failing_init_container(findings: list[Finding]) -> None:
    found = one(findings, "k8s.pod.init_failed")
    assert found.pods == ["initfail/t5-train-master-0"]
    assert "initContainerStatuses[wait-for-fsx]" in found.evidence[0].source
    assert "kubectl logs t5-train-master-0 -n initfail -c wait-for-fsx --previous --tail=200" in commands(
        found
    )


def test_evicted_pod_and_evictions_seen_only_in_events(findings: list[Finding]) -> None:
    pod = one(findings, "k8s.pod.evicted")
    assert pod.pods == ["evicted/mixtral-worker-1"]
    assert "The node was low on resource: memory." in pod.evidence[0].text
    assert commands(pod)["kubectl delete pod mixtral-worker-1 -n evicted"] == (
        BlastRadius.RESTARTS_POD,
        "pods: delete",
    )
    events = one(findings, "k8s.event.evicted")
    assert events.pods == ["evicted/mixtral-worker-2"]  # worker-1 is reported once, from its pod
    taint = one(findings, "k8s.event.taint_eviction")
    assert taint.evidence[0].text == "Marking for deletion Pod evicted/mixtral-worker-0"
    assert taint.reference == "debugging-guide.md § 16"


def test_failed_mount(findings: list[Finding]) -> None:
    found = one(findings, "k8s.event.failed_mount")
    assert found.pods == ["mountfail/olmo-master-0"] and found.priority == Priority.P0
    assert any(e.text.startswith("MountVolume.SetUp failed for volume") for e in found.evidence)
    assert any("(x3)" in e.text for e in found.evidence)


def test_node_not_ready_from_state_and_from_events(findings: list[Finding]) -> None:
    state = one(findings, "k8s.node.not_ready")
    assert state.nodes == [NOT_READY_NODE] and state.instance_ids == ["i-0c8f1d2e3a4b5c607"]
    assert state.priority == Priority.P0  # the evicted job's worker-0 runs there
    assert "Kubelet stopped posting node status." in state.evidence[0].text
    assert commands(state)[f"kubectl describe node {NOT_READY_NODE}"] == (BlastRadius.READ_ONLY, "nodes: get")
    # the NodeNotReady event dates it, inside the same finding rather than a second one
    assert state.evidence[1].text == f"Node {NOT_READY_NODE} status is now: NodeNotReady"
    assert state.evidence[1].source.startswith(
        f"event NodeNotReady node {NOT_READY_NODE} 2026-11-21T22:45:48Z"
    )
    assert not [f for f in findings if f.id == "k8s.event.node_not_ready"]


def test_hyperpod_health_labels(findings: list[Finding]) -> None:
    found = one(findings, "k8s.node.health_check_failed")
    assert (found.nodes, found.reference) == (["hyperpod-i-0c8f1d2e3a4b5c608"], "operations.md § 6")
    assert "node-health-status=UnschedulablePendingReplacement" in found.evidence[0].text


def test_network_policy_that_only_opens_the_rendezvous_port_blocks_nccl(findings: list[Finding]) -> None:
    found = one(findings, "k8s.network_policy.blocks_job")
    assert (found.priority, found.reference) == (Priority.P0, "operations.md § 8")
    assert "NCCL's ephemeral ports 32768-60999" in found.detail and "port 23456" not in found.detail
    assert {e.source for e in found.evidence} == {
        "networkpolicy netpol/default-deny-ingress spec",
        "networkpolicy netpol/allow-rendezvous-port spec",
        "networkpolicy netpol/allow-prometheus spec",
    }
    assert commands(found)["kubectl get networkpolicy -n netpol -o yaml"] == (
        BlastRadius.READ_ONLY,
        "networkpolicies: list",
    )


def test_master_addr_naming_no_service(findings: list[Finding]) -> None:
    found = one(findings, "k8s.master_addr.no_service")
    assert (found.priority, found.reference) == (Priority.P0, "debugging-guide.md § 12")
    assert found.pods == ["misconfig/qwen-worker-0", "misconfig/qwen-worker-1"]
    assert found.evidence[0].text == "MASTER_ADDR=qwen-rdzv"
    assert "No Service misconfig/qwen-rdzv exists" in found.detail


def test_missing_dev_shm(findings: list[Finding]) -> None:
    found = one(findings, "k8s.shm.too_small")
    assert found.pods == ["misconfig/qwen-master-0", "misconfig/qwen-worker-0", "misconfig/qwen-worker-1"]
    assert found.reference == "debugging-guide.md § 17"
    assert "no volume mounted at /dev/shm" in found.evidence[0].text


def test_nccl_timeout_is_flagged_as_not_a_variable(findings: list[Finding]) -> None:
    found = one(findings, "nccl.env.not_a_variable")
    assert found.title.startswith("NCCL_TIMEOUT is set on 3 pod(s)")
    assert "init_process_group" in found.detail and found.reference == "operations.md § 5"
    assert {e.text for e in found.evidence} == {"NCCL_TIMEOUT=1800"}


def test_socket_ifname_differing_across_pods_names_the_odd_pod_first(findings: list[Finding]) -> None:
    found = one(findings, "nccl.env.differs")
    assert "NCCL_SOCKET_IFNAME" in found.title and found.status == Status.FAIL
    assert found.evidence[1].text == "NCCL_SOCKET_IFNAME=eth0"
    assert found.evidence[1].source == "pod misconfig/qwen-worker-1 spec.containers[pytorch].env"
    assert "NCCL_SOCKET_IFNAME: ^lo,docker0 on 2 pod(s); eth0 on 1 pod(s)" in found.detail


def test_image_and_nccl_version_skew(findings: list[Finding]) -> None:
    image = one(findings, "k8s.version.image_skew")
    assert image.evidence[0].source == "pod skew/mistral-worker-1 spec.containers[pytorch].image"
    assert "pytorch-training:2.6.0" in image.evidence[0].text
    logs = one(findings, "k8s.version.log_skew")
    assert logs.priority == Priority.P0
    assert (logs.evidence[0].source, logs.evidence[0].line) == ("pod skew/mistral-worker-1 log (pytorch)", 7)
    assert logs.evidence[0].text == "NCCL version 2.23.4+cuda12.6"


def test_pod_logs_go_through_the_triage_engine(findings: list[Finding]) -> None:
    truncated = [f for f in findings if f.id.startswith("pod_logs.") and "skew/mistral-master-0" in f.pods]
    assert any("Message truncated" in e.text for f in truncated for e in f.evidence)
    crash = [f for f in findings if f.id.startswith("pod_logs.") and "crashloop/bert-ft-worker-0" in f.pods]
    assert crash[0].evidence[0].source == "pod crashloop/bert-ft-worker-0 log (pytorch, previous)"
    assert "ModuleNotFoundError" in crash[0].evidence[0].text


def test_every_issue_has_priority_reference_and_evidence(findings: list[Finding]) -> None:
    issues = [f for f in findings if f.is_issue]
    assert len(issues) >= 18
    for finding in issues:
        assert finding.priority and finding.reference and finding.evidence, finding.id


def test_a_healthy_namespace_has_no_issue(healthy_server: K8sApiServer) -> None:
    for namespace, job in ((None, None), ("training", "llama3-70b")):
        snapshot, issues = collect(healthy_server, namespace, job)
        found = [f for analyzer in KUBERNETES_ANALYZERS for f in analyzer(snapshot)]
        assert issues == []
        assert [f for f in found if f.is_issue] == []
        assert {f.id for f in found} >= {
            "k8s.node.healthy",
            "k8s.pod.healthy",
            "k8s.network_policy.allows_job",
            "k8s.master_addr.resolves",
            "k8s.efa.device_plugin_ready",
            "nccl.env.consistent",
        }
    assert healthy_server.methods() == {"GET"}


def test_a_saved_snapshot_replays_to_the_same_findings(
    faulty: Snapshot, findings: list[Finding], tmp_path
) -> None:
    faulty.save(tmp_path)
    replayed = Snapshot.load(tmp_path)
    again = [finding for analyzer in KUBERNETES_ANALYZERS for finding in analyzer(replayed)]
    assert [f.model_dump() for f in again] == [f.model_dump() for f in findings]


def test_unreadable_daemonsets_are_not_a_missing_plugin(healthy_server: K8sApiServer) -> None:
    healthy_server.cluster.denied = {"daemonsets": 403}
    try:
        snapshot, issues = collect(healthy_server)
    finally:
        healthy_server.cluster.denied = {}
    assert [(i.kind, i.permission) for i in issues] == [("access_denied", "daemonsets: list (kube-system)")]
    found = [f for analyzer in KUBERNETES_ANALYZERS for f in analyzer(snapshot)]
    assert not [f for f in found if f.id.startswith("k8s.efa.")]
