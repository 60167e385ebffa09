"""The GPU metric checks against a real Prometheus holding a generated 2-hour history of five
p5 nodes: every planted signature is found on its node and GPU, the healthy GPUs are not, the
hang onset is placed within one step, and the bound, the node filter and the bundle replay
behave as an operator would expect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperpod_nccl.cli import main
from hyperpod_nccl.metrics.service import (
    MetricsOptions,
    MetricsSource,
    metrics_report,
    metrics_snapshot,
)
from hyperpod_nccl.metrics.window import Window, parse_time
from hyperpod_nccl.models import Finding, Report
from tests.metrics import dcgmgen
from tests.metrics.realprom import LocalPrometheus
from tests.next_steps.check import next_step_problems

pytestmark = pytest.mark.prometheus

FIXTURE = Window(dcgmgen.START, dcgmgen.END, "the generated fixture")
FOUND_AS = {
    "hang": "metrics.hang.signature",
    "silent": "metrics.gpu.stopped_reporting",
    "throttle": "metrics.gpu.clocks_throttled",
    "pcie": "metrics.gpu.pcie_downgraded",
    "ecc": "metrics.gpu.ecc_uncorrectable",
    "remap_failure": "metrics.gpu.row_remap_failed",
    "remap_pending": "metrics.gpu.row_remap_pending",
    "nvlink": "metrics.gpu.nvlink_errors",
    "straggler": "metrics.job.straggler",
}


def _report(prometheus: LocalPrometheus, **options: object) -> Report:
    source = MetricsSource(prometheus=prometheus.url)
    return metrics_report(metrics_snapshot(MetricsOptions(source=source, **options), FIXTURE))


@pytest.fixture(scope="module")
def report(prometheus: LocalPrometheus) -> Report:
    return _report(prometheus)


def _names(finding: Finding, node: str, gpu: int) -> bool:
    return any(e.text.startswith(f"{node} GPU {gpu}:") for e in finding.evidence)


def test_every_planted_signature_is_found_on_its_node_and_gpu(report: Report) -> None:
    for plant in dcgmgen.PLANTS:
        matching = [f for f in report.findings if f.id == FOUND_AS[plant.signature]]
        assert any(_names(f, plant.node, plant.gpu) for f in matching), (plant, [f.title for f in matching])
        finding = next(f for f in matching if _names(f, plant.node, plant.gpu))
        assert plant.node in finding.nodes
        # HyperPod EKS node names carry the instance id; findings name it for the ladder.
        assert plant.node.removeprefix("hyperpod-") in finding.instance_ids
        assert finding.reference and finding.reference.startswith("gpu-metrics.md § ")


def test_healthy_gpus_are_in_no_issue(report: Report) -> None:
    issues = [f for f in report.findings if f.is_issue]
    for node, gpu in dcgmgen.healthy_gpus():
        named = [f.title for f in issues if _names(f, node, gpu) or f"{node} GPU {gpu} " in f.title]
        assert not named, (node, gpu, named)
    planted = {(p.node, p.gpu) for p in dcgmgen.PLANTS}
    assert len(issues) == len(planted) + 1  # and the plant's correctable-ECC climb, on the ECC GPU
    assert any(f.id == "metrics.gpu.ecc_correctable_climbing" for f in issues)


def test_the_hang_onset_is_within_one_step_of_the_plant(report: Report) -> None:
    [plant] = [p for p in dcgmgen.PLANTS if p.signature == "hang"]
    [hang] = [f for f in report.findings if f.id == "metrics.hang.signature"]
    text = next(e.text for e in hang.evidence if _names(hang, plant.node, plant.gpu))
    onset = parse_time(text.split(" from ", 1)[1].split(" ", 1)[0]).timestamp()
    assert abs(onset - plant.since) <= 30, text
    assert f"first on {plant.node} GPU {plant.gpu}" in hang.title


def test_the_silent_gpu_carries_its_last_sample_and_xid_meaning(report: Report) -> None:
    [plant] = [p for p in dcgmgen.PLANTS if p.signature == "silent"]
    [silent] = [f for f in report.findings if f.id == "metrics.gpu.stopped_reporting"]
    assert "Xid 79" in silent.title and "fallen off the bus" in silent.title
    last = parse_time(silent.title.split(" at ", 1)[1].split(" ", 1)[0]).timestamp()
    assert plant.since - dcgmgen.SCRAPE_S <= last < plant.since
    assert silent.priority == "P0"


def test_every_finding_carries_a_read_only_promql_confirmation(report: Report) -> None:
    for finding in (f for f in report.findings if f.is_issue):
        confirm = finding.suggested_commands[0]
        assert confirm.command.startswith("curl -sG ") and "/api/v1/query_range" in confirm.command
        assert f"start={dcgmgen.START}" in confirm.command and confirm.blast_radius == "read-only check"


def test_the_root_cause_is_the_hardware_fault_not_the_hang(report: Report) -> None:
    assert report.root_cause is not None
    assert report.root_cause.category == "gpu_hardware"
    assert not report.root_cause.summary.startswith("Hang signature")


def test_a_query_over_the_series_bound_is_cut_and_said(prometheus: LocalPrometheus) -> None:
    report = _report(prometheus, max_gpus=12)
    [cut] = [f for f in report.findings if f.id == "metrics.coverage.series_cut"]
    assert "40 GPU series on 5 nodes exceed the bound of 12" in (cut.detail or "")
    [window] = [f for f in report.findings if f.id == "metrics.coverage.window"]
    assert window.title.startswith("GPU metrics: 8 GPUs on 1 node(s)")  # whole nodes, in name order


def test_one_node_by_instance_id(prometheus: LocalPrometheus) -> None:
    node = dcgmgen.NODES[3]
    report = _report(prometheus, node=node.removeprefix("hyperpod-"))
    issues = [f for f in report.findings if f.is_issue]
    assert {f.id for f in issues} == {"metrics.gpu.pcie_downgraded", "metrics.job.straggler"}
    assert all(f.nodes == [node] for f in issues)


def test_cli_json_and_bundle_replay_give_the_same_findings(
    prometheus: LocalPrometheus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    window = ["--start", str(dcgmgen.START), "--end", "2026-03-02T12:00:00Z"]
    live = main(
        ["metrics", "--prometheus", prometheus.url, *window, "--json", "--save-bundle", str(tmp_path)]
    )
    live_report = json.loads(capsys.readouterr().out)
    assert live == 1
    replay = main(["diagnose", "--bundle", str(tmp_path), "--json"])
    replayed = json.loads(capsys.readouterr().out)
    assert replay == 1
    ids = sorted((f["id"], f["title"]) for f in live_report["findings"])
    assert sorted((f["id"], f["title"]) for f in replayed["findings"] if f["id"].startswith("metrics.")) == [
        pair for pair in ids if pair[0].startswith("metrics.")
    ]


def test_diagnose_with_only_prometheus_reports_the_gpu_checks(
    prometheus: LocalPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    # --since is relative to now: the fixture is in 2026, so nothing is in the last 2 hours.
    status = main(["diagnose", "--prometheus", prometheus.url, "--since", "2h", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    assert [f["id"] for f in report["findings"] if f["status"] == "WARN"] == [
        "metrics.coverage.no_dcgm_series"
    ]


def test_the_window_of_a_triage_report(prometheus: LocalPrometheus, tmp_path: Path, capsys) -> None:
    triage = tmp_path / "triage.json"
    events = [{"time": "2026-03-02T11:25:00Z", "source": "rank0.log:9", "event": "watchdog timeout"}]
    triage.write_text(json.dumps({"timeline": events}), encoding="utf-8")
    status = main(["metrics", "--prometheus", prometheus.url, "--around", str(triage), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    [window] = [f for f in report["findings"] if f["id"] == "metrics.coverage.window"]
    assert "2026-03-02T10:55:00Z to 2026-03-02T11:35:00Z" in window["title"]
    assert any(f["id"] == "metrics.hang.signature" for f in report["findings"])


def test_node_matchers_match_names_with_dots_and_colons_literally(prometheus: LocalPrometheus) -> None:
    from hyperpod_nccl.collect.dcgm import node_matcher
    from hyperpod_nccl.collect.prometheus import PrometheusReader

    with PrometheusReader(prometheus.url) as reader:
        exact = reader.instant(
            f"count(DCGM_FI_DEV_GPU_UTIL{{{node_matcher('instance', ['10.1.3.10:9400'])}}})", FIXTURE.end
        )
        # A dot must not match any character: "10.1.3.1." would match 10.1.3.10 as a regex.
        loose = reader.instant(
            f"count(DCGM_FI_DEV_GPU_UTIL{{{node_matcher('instance', ['10.1.3.1.:9400'])}}})", FIXTURE.end
        )
    assert exact[0]["value"][1] == "8"
    assert loose == []


def test_every_issue_says_what_to_run_next(report: Report) -> None:
    assert next_step_problems(report) == []
