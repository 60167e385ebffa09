"""The escalation bundle: a valid, reproducible tar.gz whose CASE.md carries the real values."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import pytest

from hyperpod_nccl.bundle import BundleError, BundleRequest, create_bundle
from hyperpod_nccl.models import Report
from hyperpod_nccl.snapshot import Snapshot
from tests.skill.fixtures import CLUSTER_ARN, EFA_LINE, STRAGGLER_LINE, incident_report, incident_snapshot

CLI = [sys.executable, "-m", "hyperpod_nccl"]
FIXED_TIME = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    report = tmp_path / "report.json"
    report.write_text(incident_report().model_dump_json(), encoding="utf-8")
    incident_snapshot().save(tmp_path / "saved")
    return report, tmp_path / "saved"


def gaps_in(case: str) -> list[str]:
    """The items of CASE.md's "Add before sending" section."""
    section = case.split("## Add before sending\n\n", 1)[1].split("\n\n## ", 1)[0]
    return [line.removeprefix("- [ ] ") for line in section.splitlines() if line.startswith("- [ ] ")]


def members_of(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_cli_writes_every_member_under_one_relative_folder(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    report, saved = inputs
    output = tmp_path / "case.tar.gz"
    result = subprocess.run(
        [*CLI, "bundle", "--report", str(report), "--snapshot", str(saved), "-o", str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Suggested command (run this yourself):" in result.stdout
    assert "aws s3 cp case.tar.gz 's3://<your-bucket>/hyperpod-nccl/case.tar.gz'" in result.stdout
    with tarfile.open(output, "r:gz") as tar:
        names = tar.getnames()
        assert all(member.isfile() and member.mode == 0o644 for member in tar.getmembers())
    assert names == sorted(names)
    for name in names:
        path = PurePosixPath(name)
        assert not path.is_absolute() and ".." not in path.parts, name
    assert {PurePosixPath(n).name for n in names} == {
        "CASE.md",
        "case.json",
        "error-strings.txt",
        "nccl-env.txt",
        "report.json",
        "report.txt",
        "snapshot.json",
    }
    members = members_of(output)
    assert Report.model_validate_json(members["hyperpod-nccl-escalation/report.json"]) == incident_report()
    assert Snapshot.model_validate_json(members["hyperpod-nccl-escalation/snapshot.json"]).job == "llama"
    assert "Issues Found: 2" in members["hyperpod-nccl-escalation/report.txt"].decode()


def test_case_md_is_filled_from_the_checklist_with_the_real_values(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    report, saved = inputs
    result = create_bundle(BundleRequest(output=tmp_path / "b.tar.gz", report=report, snapshot=saved))
    case = members_of(tmp_path / "b.tar.gz")["hyperpod-nccl-escalation/CASE.md"].decode()
    for expected in (
        "Cluster name: `ml-cluster-prod`",
        f"Cluster ARN: `{CLUSTER_ARN}`",
        "Region: `us-west-2`",
        "Orchestrator: `eks`",
        "EKS cluster: `hp-eks-prod`",
        "Start (UTC): `2026-03-02T11:04:05Z`",
        "End (UTC): `2026-03-02T11:14:06Z`",
        f"worker-9.log:4521: {STRAGGLER_LINE}",
        f"worker-0.log:12: {EFA_LINE}",
        "i-0aaa1111bbbb22223, i-0abc123def4567890, i-0ccc3333dddd44445",
        "Nodes: `ip-10-1-2-3`",
        "Namespace: `training`",
        "Job: `llama`",
        "Ranks: `77`",
        "NCCL_DEBUG=INFO",
        "FI_PROVIDER=efa",
        "`references/debugging-guide.md § 13`",
        "aws s3 cp b.tar.gz 's3://<your-bucket>/hyperpod-nccl/b.tar.gz'",
    ):
        assert expected in case, expected
    assert "PATH=" not in case  # only NCCL_*, FI_*, TORCH_*
    # What the snapshot does not carry, and what only the user knows: asked for in both places.
    assert result.missing == [
        "NodeRecovery setting of the cluster",
        "instance group and type of the affected instances",
        "AMI / OS image, Kubernetes and NVIDIA driver versions",
        "what was already tried (restarts, reboots, replacements, timeout or memlock changes)",
    ]
    assert gaps_in(case) == result.missing
    assert result.upload.permission == "s3:PutObject"
    assert result.upload.attachable and "small enough to **attach to the support case directly**" in case


def test_without_a_snapshot_the_case_says_what_is_missing(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    report, _ = inputs
    result = create_bundle(BundleRequest(output=tmp_path / "b.tar.gz", report=report, region="eu-west-1"))
    assert "cluster name or ARN" in result.missing
    assert "NCCL / FI / TORCH environment of one pod" in result.missing
    assert "AWS region" not in result.missing
    case = members_of(tmp_path / "b.tar.gz")["hyperpod-nccl-escalation/CASE.md"].decode()
    assert "Cluster name: not known — add it before sending" in case
    assert gaps_in(case) == result.missing
    assert "printenv | grep -E '^NCCL|^FI_|^TORCH_'" in case


def test_a_slurm_cluster_names_its_controller_group(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    report, _ = inputs
    snapshot = incident_snapshot().model_copy(update={"orchestrator": "slurm", "kubernetes": None})
    snapshot.aws.cluster = {
        "ClusterName": "slurm-hp",
        "InstanceGroups": [
            {"InstanceGroupName": "controller-machine"},
            {"InstanceGroupName": "worker-group-1"},
        ],
    }
    snapshot.save(tmp_path / "slurm")
    result = create_bundle(
        BundleRequest(output=tmp_path / "s.tar.gz", report=report, snapshot=tmp_path / "slurm")
    )
    assert result.case.cluster.slurm_controller == "instance group controller-machine"
    case = members_of(tmp_path / "s.tar.gz")["hyperpod-nccl-escalation/CASE.md"].decode()
    assert "Slurm controller: `instance group controller-machine`" in case


def test_the_same_inputs_give_the_same_bytes(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    report, saved = inputs
    digests = set()
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        output = tmp_path / folder / "case.tar.gz"
        request = BundleRequest(output=output, report=report, snapshot=saved, created_at=FIXED_TIME)
        digests.add(create_bundle(request).sha256)
    assert len(digests) == 1


def test_unusable_output_or_input_is_refused_before_anything_is_written(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    report, _ = inputs
    existing = tmp_path / "existing.tar.gz"
    existing.write_bytes(b"keep me")
    for output, message in (
        (existing, "already exists"),
        (tmp_path / "case.zip", "must end in .tar.gz"),
        (tmp_path / "no-such-dir" / "b.tar.gz", "does not exist"),
    ):
        with pytest.raises(BundleError, match=message):
            create_bundle(BundleRequest(output=output, report=report))
    assert existing.read_bytes() == b"keep me"
    with pytest.raises(BundleError, match="give a report"):
        create_bundle(BundleRequest(output=tmp_path / "b.tar.gz"))
    result = subprocess.run(
        [*CLI, "bundle", "--report", str(tmp_path), "-o", str(tmp_path / "x.tar.gz")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "x.tar.gz").exists()


def test_a_previous_report_puts_what_the_last_change_did_in_the_case(tmp_path: Path) -> None:
    before = tmp_path / "before.json"
    before.write_text(incident_report().model_dump_json(), encoding="utf-8")
    after_fix = incident_report()
    after_fix.findings = [f for f in after_fix.findings if f.id != "efa.tcp_fallback"]
    after = tmp_path / "after.json"
    after.write_text(after_fix.model_dump_json(), encoding="utf-8")
    output = tmp_path / "b.tar.gz"
    result = subprocess.run(
        [*CLI, "bundle", "--report", str(after), "--previous", str(before), "-o", str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    members = members_of(output)
    assert "[FIXED] P1 efa.tcp_fallback" in members["hyperpod-nccl-escalation/comparison.txt"].decode()
    case = members["hyperpod-nccl-escalation/CASE.md"].decode()
    tried = case.split("## What was already tried", 1)[1].split("\n## ", 1)[0]
    assert "1 fixed, 1 still failing, 0 new" in tried
    assert "[STILL] P0 nccl.watchdog.straggler" in tried


def test_without_a_timeline_the_window_comes_from_kubernetes_warning_events(tmp_path: Path) -> None:
    report = tmp_path / "diagnose.json"
    report.write_text(
        incident_report().model_copy(update={"timeline": []}).model_dump_json(), encoding="utf-8"
    )
    snapshot = incident_snapshot()
    snapshot.kubernetes.events = [
        {"type": "Warning", "reason": "BackOff", "lastTimestamp": "2026-03-02T11:07:00Z"},
        {"type": "Warning", "reason": "Evicted", "lastTimestamp": "2026-03-02T11:02:00Z"},
        {"type": "Normal", "reason": "Pulled", "lastTimestamp": "2026-03-02T09:00:00Z"},
    ]
    snapshot.save(tmp_path / "saved")
    result = create_bundle(
        BundleRequest(output=tmp_path / "b.tar.gz", report=report, snapshot=tmp_path / "saved")
    )
    assert (result.case.window.start, result.case.window.end) == (
        "2026-03-02T11:02:00Z",
        "2026-03-02T11:07:00Z",
    )
    case = members_of(tmp_path / "b.tar.gz")["hyperpod-nccl-escalation/CASE.md"].decode()
    assert "Spanning 2 timestamped events of Kubernetes warning events." in case


def test_identity_comes_from_the_parsed_cluster_and_the_slurm_controller_that_answered(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    from hyperpod_nccl.snapshot.aws import AwsSnapshot, HyperPodCluster, InstanceGroup
    from hyperpod_nccl.snapshot.slurm import ControllerPing, SlurmController, SlurmSnapshot

    report, _ = inputs
    parsed = HyperPodCluster(
        name="slurm-hp",
        arn="arn:aws:sagemaker:eu-west-1:123456789012:cluster/zz9plural",
        cluster_id="zz9plural",
        status="InService",
        orchestrator="slurm",
        instance_groups=[InstanceGroup(name="controller-machine"), InstanceGroup(name="gpu-workers")],
    )
    pings = [
        ControllerPing(
            host="ip-10-0-0-5", role="primary", up=True, text="Slurmctld(primary) at ip-10-0-0-5 is UP"
        )
    ]
    snapshot = Snapshot(
        collected_at="2026-03-02T11:20:00Z",
        aws=AwsSnapshot(hyperpod=parsed),
        slurm=SlurmSnapshot(controller=SlurmController(pings=pings), job_id="51877"),
    )
    snapshot.save(tmp_path / "slurm")
    result = create_bundle(
        BundleRequest(output=tmp_path / "s.tar.gz", report=report, snapshot=tmp_path / "slurm")
    )
    cluster = result.case.cluster
    assert (cluster.name, cluster.region, cluster.orchestrator) == ("slurm-hp", "eu-west-1", "slurm")
    assert cluster.slurm_controller == "ip-10-0-0-5"
    assert result.case.affected.job == "51877"


def test_with_no_timeline_or_warning_event_the_window_comes_from_cloudwatch_hits(tmp_path: Path) -> None:
    from hyperpod_nccl.snapshot.aws import AwsSnapshot, CloudWatchScan, StreamMatches

    report = tmp_path / "diagnose.json"
    report.write_text(
        incident_report().model_copy(update={"timeline": []}).model_dump_json(), encoding="utf-8"
    )
    hits = [
        StreamMatches(stream="a", first_seen="2026-03-02T10:58:00Z", last_seen="2026-03-02T11:01:00Z"),
        StreamMatches(stream="b", first_seen="2026-03-02T11:00:00Z", last_seen="2026-03-02T11:09:30Z"),
    ]
    scan = CloudWatchScan(log_group="g", found=True, window_start="x", window_end="y", streams=hits)
    Snapshot(collected_at="2026-03-02T11:20:00Z", aws=AwsSnapshot(cloudwatch=[scan])).save(tmp_path / "saved")
    result = create_bundle(
        BundleRequest(output=tmp_path / "b.tar.gz", report=report, snapshot=tmp_path / "saved")
    )
    window = result.case.window
    assert (window.start, window.end, window.source) == (
        "2026-03-02T10:58:00Z",
        "2026-03-02T11:09:30Z",
        "CloudWatch error-pattern hits",
    )
