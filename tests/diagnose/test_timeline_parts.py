"""The parts of the cluster timeline on hand-built objects: pod → ranks from the training operator's
env, what lines up with the failure and what does not, latent against active configuration,
control-plane disagreements, and which container instance's log covers the failure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hyperpod_nccl.analyze.control_plane import analyze_control_plane
from hyperpod_nccl.analyze.job_topology import build_topology
from hyperpod_nccl.analyze.log_coverage import covering_logs
from hyperpod_nccl.diagnose.latent import JobActivity, mark_latent
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.diagnose.trigger import LINES_UP, choose
from hyperpod_nccl.models import Category, Finding, Priority, Report, Status, TimelineEvent
from hyperpod_nccl.render import render_json
from hyperpod_nccl.snapshot import CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.aws import AwsSnapshot, ClusterNode, HyperPodCluster
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, PodLog

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    node: str,
    *,
    env: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    args: list[str] | None = None,
    gpus: int = 8,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        "args": args or [],
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
    }
    return {
        "metadata": {
            "name": name,
            "namespace": "t",
            "labels": {"training.kubeflow.org/job-name": "j", **(labels or {})},
        },
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running", **(status or {})},
    }


def snapshot(pods: list[dict[str, Any]], **more: Any) -> Snapshot:
    return Snapshot(
        collected_at=stamp(NOW), kubernetes=KubernetesSnapshot(pods=pods, **more.pop("k8s", {})), **more
    )


@pytest.mark.parametrize(
    ("env", "labels", "args", "gpus", "ranks"),
    [
        ({"PET_NODE_RANK": "3", "PET_NPROC_PER_NODE": "4"}, {}, [], 8, range(12, 16)),
        (
            {"PET_NPROC_PER_NODE": "8"},
            {"batch.kubernetes.io/job-completion-index": "2"},
            [],
            8,
            range(16, 24),
        ),
        (
            {},
            {"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"},
            ["--nproc_per_node", "8"],
            8,
            range(16, 24),
        ),
        ({"RANK": "1"}, {}, ["--nproc-per-node=2"], 8, range(2, 4)),
        ({"RANK": "5"}, {}, [], 1, range(5, 6)),
        ({"RANK": "1", "WORLD_SIZE": "4"}, {}, [], 8, range(8, 16)),
    ],
)
def test_a_pods_ranks_come_from_the_training_operators_env(
    env: dict[str, str], labels: dict[str, str], args: list[str], gpus: int, ranks: range
) -> None:
    master = pod("j-master-0", "n0", labels={"training.kubeflow.org/replica-type": "master"})
    worker = pod("j-worker-1", "n1", env=env, labels=labels, args=args, gpus=gpus)
    topology = build_topology(snapshot([master, worker]))
    assert topology.pods["t/j-worker-1"].ranks == tuple(ranks)
    assert topology.ranks_on("n1") == set(ranks)


def event(
    kind: str,
    minutes: float,
    *,
    node: str | None = "n1",
    cause: Category | None = None,
    ranks: frozenset[int] = frozenset(),
    derived: bool = False,
) -> TimedEvent:
    return TimedEvent(
        NOW + timedelta(minutes=minutes),
        "test",
        kind,
        kind,
        abnormal=True,
        node=node,
        ranks=ranks,
        cause=cause,
        derived=derived,
    )


def topology_with_job() -> Any:
    return build_topology(
        snapshot([pod("j-worker-0", "n1", env={"RANK": "0"}), pod("j-worker-1", "n2", env={"RANK": "1"})])
    )


def test_an_event_lines_up_within_the_window_and_the_earliest_is_the_trigger() -> None:
    anchor = event("collective.started", 0, node=None, ranks=frozenset(range(16)), derived=True)
    inside = event("node.silent", -LINES_UP.total_seconds() / 60 + 0.5, cause=Category.INFRASTRUCTURE)
    later = event("node.not_ready", 1, node="n2", cause=Category.INFRASTRUCTURE)
    before = event("node.not_ready", -180, cause=Category.INFRASTRUCTURE)
    elsewhere = event("cloudwatch.gpu_hardware", 0.2, node="n9", cause=Category.GPU_HARDWARE)
    choice = choose([before, inside, anchor, elsewhere, later], topology_with_job())
    assert choice.anchor is anchor
    assert choice.trigger is inside and choice.lined_up == [inside, later]


def test_without_kubernetes_every_node_may_have_run_the_job() -> None:
    anchor = event("watchdog.fired", 0, node=None)
    xid = event("cloudwatch.gpu_hardware", -1, node="i-0abc", cause=Category.GPU_HARDWARE)
    choice = choose([xid, anchor], build_topology(Snapshot(collected_at=stamp(NOW))))
    assert choice.trigger is xid


def test_configuration_on_a_job_that_never_completed_a_collective_stays_active() -> None:
    blocker = Finding(
        id="k8s.master_addr.no_service",
        status=Status.FAIL,
        priority=Priority.P0,
        title="MASTER_ADDR x names no Service",
        reference="debugging-guide.md § 12",
        pods=["t/j-worker-0"],
    )
    snap = snapshot([pod("j-worker-0", "n1")])
    idle = {"t/j": JobActivity("t/j", collectives_completed=0, longest_run=timedelta(minutes=20))}
    [kept], latent = mark_latent([blocker], snap, idle)
    assert (kept.status, latent) == (Status.FAIL, [])
    ran = {"t/j": JobActivity("t/j", collectives_completed=1)}
    [rewritten], [same] = mark_latent([blocker], snap, ran)
    assert rewritten is same and (rewritten.status, rewritten.priority) == (Status.WARN, Priority.P2)
    assert rewritten.title == "Latent: MASTER_ADDR x names no Service"


def node(name: str, instance: str, ready: str, since: datetime, labels: dict[str, str] | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"providerID": f"aws:///us-west-2a/{instance}"},
        "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": stamp(since)}]},
    }


def cluster(recovery: str | None) -> HyperPodCluster:
    return HyperPodCluster(
        name="c",
        arn="arn:aws:sagemaker:us-west-2:1:cluster/c1",
        cluster_id="c1",
        status="InService",
        orchestrator="eks",
        node_recovery=recovery,
    )


@pytest.mark.parametrize(("recovery", "expected"), [("Automatic", True), ("None", False)])
def test_recovery_not_acting_only_when_it_is_automatic_and_the_window_passed(
    recovery: str, expected: bool
) -> None:
    lost = node("n1", "i-0aaaabbbbcccc1111", "Unknown", NOW - timedelta(minutes=45))
    fresh = node("n2", "i-0aaaabbbbcccc2222", "Unknown", NOW - timedelta(minutes=5))
    aws = AwsSnapshot(
        hyperpod=cluster(recovery),
        nodes=[
            ClusterNode(instance_id=i, instance_group="g", status="Running")
            for i in ("i-0aaaabbbbcccc1111", "i-0aaaabbbbcccc2222")
        ],
    )
    found = {f.id: f for f in analyze_control_plane(snapshot([], aws=aws, k8s={"nodes": [lost, fresh]}))}
    assert ("control_plane.recovery_not_acting" in found) is expected
    if expected:
        assert found["control_plane.recovery_not_acting"].instance_ids == ["i-0aaaabbbbcccc1111"]
    assert found["control_plane.node_status_disagrees"].nodes == ["n1", "n2"]


def test_a_lost_nodes_log_read_is_not_a_control_plane_error() -> None:
    issues = [
        CollectionIssue(
            source="kubernetes pods/log t/j-worker-0 (pytorch)", kind="error", message="HTTP 500 x"
        ),
        CollectionIssue(source="sagemaker:ListClusterNodes", kind="error", message="InternalFailure: boom"),
    ]
    [finding] = analyze_control_plane(Snapshot(collected_at=stamp(NOW), collection_issues=issues))
    assert finding.id == "control_plane.api_errors" and len(finding.evidence) == 1
    assert finding.evidence[0].source == "sagemaker:ListClusterNodes"


def test_a_pending_label_with_a_passed_deep_health_check_is_a_disagreement_not_a_failed_check() -> None:
    labels = {
        "sagemaker.amazonaws.com/node-health-status": "UnschedulablePendingReplacement",
        "sagemaker.amazonaws.com/deep-health-check-status": "Passed",
    }
    labelled = node("n3", "i-0aaaabbbbcccc3333", "True", NOW - timedelta(days=1), labels)
    from hyperpod_nccl.analyze.k8s_nodes import analyze_k8s_nodes

    snap = snapshot([], k8s={"nodes": [labelled]})
    assert [f.id for f in analyze_control_plane(snap)] == ["control_plane.health_label_disagrees"]
    assert [f.id for f in analyze_k8s_nodes(snap)] == ["k8s.node.healthy"]


def restarted(times: dict[str, datetime]) -> dict[str, Any]:
    return {
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": 1,
                "state": {"running": {"startedAt": stamp(times["now"])}},
                "lastState": {
                    "terminated": {"startedAt": stamp(times["then"]), "finishedAt": stamp(times["died"])}
                },
            }
        ]
    }


def test_the_log_that_covers_the_failure_is_the_instance_that_ran_then() -> None:
    failure = NOW - timedelta(hours=1)
    status = restarted(
        {
            "then": NOW - timedelta(hours=5),
            "died": failure + timedelta(minutes=30),
            "now": failure + timedelta(minutes=31),
        }
    )
    the_pod = pod("j-worker-0", "n1", status=status)
    logs = [
        PodLog(namespace="t", pod="j-worker-0", container="pytorch", previous=previous, text="x")
        for previous in (False, True)
    ]
    [covering] = covering_logs(logs, {"t/j-worker-0": the_pod}, failure)
    assert covering.previous
    assert covering_logs(logs, {"t/j-worker-0": the_pod}, NOW - timedelta(hours=6)) == []


def test_the_new_timeline_fields_leave_a_triage_reports_json_as_it_was() -> None:
    entry = TimelineEvent(time="2026-11-23T12:00:00Z", source="a.log:1", event="e", rank=3, node="h")
    report = Report.build("triage", [], timeline=[entry])
    assert '"derived"' not in render_json(report) and '"pod"' not in render_json(report)
    assert '"derived": true' in render_json(
        report.model_copy(update={"timeline": [entry.model_copy(update={"derived": True})]})
    )
