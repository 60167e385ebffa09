"""Issue 15's "done when": a HyperPod EKS cluster where exactly one node is lost mid-run, with latent
configuration noise and an old flap elsewhere (tests/diagnose/lost_node.py plants it).

Diagnosed live against moto and the recorded Kubernetes API server, it names the lost node, its
instance id and its ranks as the infrastructure trigger, reports the control plane's disagreement,
blames nothing else; the saved bundle replays to the same report offline; and the escalation bundle
opens with the right question about the right instance.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from hyperpod_nccl.bundle import BundleRequest, BundleResult, create_bundle
from hyperpod_nccl.cli import main
from hyperpod_nccl.diagnose.service import diagnose
from hyperpod_nccl.models import Category, Finding, Priority, Report, Status
from hyperpod_nccl.render import render_json
from hyperpod_nccl.snapshot import Snapshot
from tests.diagnose.conftest import assert_only_reads
from tests.diagnose.consistency import contradictions
from tests.diagnose.lost_node import (
    FLAPPED,
    LABELLED,
    LOST,
    LOST_RANKS,
    SEQ,
    TIMEOUT_MS,
    Times,
    collect,
    node_name,
    planted,
)


@dataclass
class Diagnosed:
    snapshot: Snapshot
    report: Report
    times: Times
    k8s_methods: set[str]


@pytest.fixture(scope="module")
def diagnosed() -> Diagnosed:
    with planted() as plant:
        snapshot = collect(plant)
        assert_only_reads(plant.moto.received)
        return Diagnosed(snapshot, diagnose(snapshot), plant.times, plant.kubernetes.methods())


def one(report: Report, finding_id: str) -> Finding:
    matches = [f for f in report.findings if f.id == finding_id]
    assert len(matches) == 1, [f.id for f in report.findings]
    return matches[0]


def test_only_reads_reach_the_kubernetes_api(diagnosed: Diagnosed) -> None:
    assert diagnosed.k8s_methods == {"GET"}


def test_the_lost_node_is_the_trigger_with_its_instance_id_and_ranks(diagnosed: Diagnosed) -> None:
    cause = diagnosed.report.root_cause
    assert cause is not None
    assert (cause.category, cause.confidence) == (Category.INFRASTRUCTURE, "high")
    assert cause.culprit_nodes == [node_name(LOST)]
    assert cause.culprit_instance_ids == [LOST]
    assert cause.culprit_ranks == LOST_RANKS
    assert cause.culprit_pods == ["training/llama-pretrain-worker-1"]
    assert cause.chain[0].startswith(f"trigger: {diagnosed.times.lost:%Y-%m-%d %H:%M:%S}Z")
    assert "kubelet renewed its node lease for the last time" in cause.chain[0]
    assert f"ALLREDUCE SeqNum {SEQ} issued" in cause.chain[1] and "(derived)" in cause.chain[1]
    assert any("watchdog fired" in step for step in cause.chain)


def test_the_chain_joins_only_events_that_touch_each_other(diagnosed: Diagnosed) -> None:
    chain = " ".join(diagnosed.report.root_cause.chain)
    assert node_name(FLAPPED) not in chain.replace("pod training/llama-pretrain-worker-2", "")
    assert node_name(LABELLED) not in chain


def test_every_other_candidate_is_ruled_out_with_its_reason(diagnosed: Diagnosed) -> None:
    ruled_out = diagnosed.report.root_cause.ruled_out
    flap = [line for line in ruled_out if node_name(FLAPPED) in line and "NodeNotReady" in line]
    assert flap and "before the stuck collective was issued" in flap[0] and "Ready again at" in flap[0]
    assert any("Security group" in line and "latent" in line for line in ruled_out)
    assert any("NetworkPolicy" in line and "latent" in line for line in ruled_out)


def test_the_control_plane_disagreement_is_reported(diagnosed: Diagnosed) -> None:
    report = diagnosed.report
    status = one(report, "control_plane.node_status_disagrees")
    assert status.instance_ids == [LOST] and "Running" in status.title and "62 min" in status.title
    recovery = one(report, "control_plane.recovery_not_acting")
    assert (recovery.status, recovery.priority, recovery.instance_ids) == (Status.FAIL, Priority.P1, [LOST])
    label = one(report, "control_plane.health_label_disagrees")
    assert label.nodes == [node_name(LABELLED)] and label.status == Status.WARN


def test_nothing_else_is_blamed(diagnosed: Diagnosed) -> None:
    blocking = [f for f in diagnosed.report.findings if f.status == Status.FAIL and f.priority == Priority.P0]
    assert blocking, "the lost node is a P0"
    for finding in blocking:
        assert set(finding.nodes) | set(finding.instance_ids) <= {node_name(LOST), LOST}, finding.title
    assert not any(
        node_name(LABELLED) in f.nodes for f in diagnosed.report.findings if f.id.startswith("k8s.node.")
    )


def test_configuration_the_job_ran_with_is_latent_and_says_how_to_date_it(diagnosed: Diagnosed) -> None:
    for finding_id in ("aws.security_group.self_reference_missing", "k8s.network_policy.blocks_job"):
        latent = one(diagnosed.report, finding_id)
        assert (latent.status, latent.priority) == (Status.WARN, Priority.P2)
        assert latent.title.startswith("Latent: ") and "79,214 NCCL collectives" in latent.detail
        assert latent.suggested_commands[0].blast_radius == "read-only check"
    policy = one(diagnosed.report, "k8s.network_policy.blocks_job")
    created = f"created {diagnosed.times.policy_created:%Y-%m-%dT%H:%M:%SZ}"
    assert any(item.text == created for item in policy.evidence)
    assert all("kubectl edit" not in c.command for c in policy.suggested_commands)


def test_the_old_flap_is_set_aside_as_earlier(diagnosed: Diagnosed) -> None:
    transport = one(diagnosed.report, "cloudwatch.transport")
    assert (transport.status, transport.priority) == (Status.WARN, Priority.P2)
    assert transport.title.startswith("Earlier, not this failure: ")
    flap = one(diagnosed.report, "k8s.event.node_not_ready")
    assert flap.title == "1 node(s) went NotReady earlier: Ready again" and flap.nodes == [node_name(FLAPPED)]


def test_ranks_on_the_lost_node_are_lost_not_silent(diagnosed: Diagnosed) -> None:
    coverage = one(diagnosed.report, "pod_logs.coverage")
    assert coverage.ranks == LOST_RANKS and "lost with their node" in coverage.title
    assert "The other 24 ranks timed out waiting in ALLREDUCE SeqNum 79215." in coverage.detail
    assert not [f for f in diagnosed.report.findings if f.id.endswith("missing_ranks")]
    lost_log = one(diagnosed.report, "collection.pod_log_on_lost_node")
    assert lost_log.status == Status.INFO and "no route to host" in lost_log.evidence[0].text


def test_the_restarted_containers_previous_logs_are_the_ones_triaged(diagnosed: Diagnosed) -> None:
    stuck = [e for e in diagnosed.report.timeline if e.derived]
    assert len(stuck) == 1 and stuck[0].ranks == "0-31"
    assert stuck[0].source.startswith("pod training/llama-pretrain-") and ", previous)" in stuck[0].source
    fired = diagnosed.times.issued
    assert stuck[0].time == f"{fired:%Y-%m-%dT%H:%M:%S}Z"
    assert f"Timeout(ms)={TIMEOUT_MS}" in stuck[0].event


def test_the_timeline_is_one_utc_order_across_sources(diagnosed: Diagnosed) -> None:
    timeline = diagnosed.report.timeline
    times = [e.time for e in timeline if e.time]
    assert times == sorted(times) and all(t.endswith("Z") for t in times)
    sources = " ".join(e.source for e in timeline)
    for source in (
        "lease kube-node-lease/",
        "event NodeNotReady",
        "CloudWatch ",
        "sagemaker:",
        "log (pytorch",
    ):
        assert source in sources, source


def test_findings_agree_with_each_other_and_the_cluster(diagnosed: Diagnosed) -> None:
    assert contradictions(diagnosed.report, diagnosed.snapshot) == []


def test_the_saved_bundle_replays_to_the_same_report_offline(
    diagnosed: Diagnosed, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    diagnosed.snapshot.save(tmp_path / "bundle")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    assert main(["diagnose", "--bundle", str(tmp_path / "bundle"), "--json"]) == 1
    replayed = json.loads(capsys.readouterr().out)
    assert replayed == json.loads(render_json(diagnosed.report))


@pytest.fixture(scope="module")
def escalation(diagnosed: Diagnosed, tmp_path_factory: pytest.TempPathFactory) -> tuple[BundleResult, str]:
    folder = tmp_path_factory.mktemp("escalation")
    diagnosed.snapshot.save(folder / "saved")
    (folder / "report.json").write_text(render_json(diagnosed.report), encoding="utf-8")
    result = create_bundle(
        BundleRequest(output=folder / "case.tar.gz", report=folder / "report.json", snapshot=folder / "saved")
    )
    with tarfile.open(folder / "case.tar.gz", "r:gz") as tar:
        case = tar.extractfile("hyperpod-nccl-escalation/CASE.md").read().decode()  # type: ignore[union-attr]
    return result, case


def test_the_case_opens_with_the_right_question_about_the_right_instance(
    escalation: tuple[BundleResult, str], diagnosed: Diagnosed
) -> None:
    result, case = escalation
    sections = [line for line in case.splitlines() if line.startswith("## ")]
    assert sections[:3] == ["## Problem", "## Questions for AWS Support", "## Why escalate"]
    first = case.split("## Questions for AWS Support\n\n", 1)[1].splitlines()[0]
    assert first.startswith(f"1. Why did instance {LOST} (ranks 16-23) stop responding at ")
    assert f"{diagnosed.times.lost:%Y-%m-%dT%H:%M:%S}Z" in first
    assert any("NodeRecovery is Automatic" in q and LOST in q for q in result.case.questions)
    assert "- [x] NodeRecovery is Automatic but a node stayed NotReady" in case


def test_the_case_carries_the_facts_support_needs(escalation: tuple[BundleResult, str]) -> None:
    result, case = escalation
    for expected in (
        "Cluster id: `q4w8e2r6t1yz`",
        "NodeRecovery: `Automatic`",
        "worker-p5: ml.p5.48xlarge × 6",
        f"| `{LOST}` | `{node_name(LOST)}` | worker-p5 | ml.p5.48xlarge | Running | Unknown | culprit",
        "Kubernetes (kubelet): `v1.31.4-eks-aeac579",
        "Search with a margin:",
        "Ruled out:",
        "connect: no route to host",
    ):
        assert expected in case, expected
    errors = case.split("## Exact error strings", 1)[1].split("\n## ", 1)[0]
    assert errors.count("Watchdog caught collective operation timeout") == 1  # 24 ranks, one string
    assert "NCCL_SOCKET_IFNAME" not in errors and "DescribeSecurityGroups" not in errors
    gaps = case.split("## Add before sending\n\n", 1)[1].split("\n\n## ", 1)[0]
    assert [line.removeprefix("- [ ] ") for line in gaps.splitlines()] == result.missing
    assert result.missing == [
        "what was already tried (restarts, reboots, replacements, timeout or memlock changes)"
    ]
    assert result.upload.attachable and "attach to the support case directly" in case
