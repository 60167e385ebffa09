"""`diagnose --cluster ... --prometheus URL`: the GPU metrics join the live diagnostic, and a
Prometheus that answers nothing useful is a collection issue while the rest comes out."""

from __future__ import annotations

import socket

import pytest

from tests.diagnose.conftest import Stubs
from tests.diagnose.test_error_table import finding, run_json
from tests.diagnose.world import FAILED_NODE, World


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_prometheus_is_a_collection_issue_and_the_rest_continues(
    stubs: Stubs, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    status, report, _ = run_json(capsys, "--cluster", world.name, "--prometheus", url)
    warning = finding(report, "collection.unreachable.prometheus_inventory")
    assert (warning["status"], warning["priority"]) == ("WARN", "P2")
    assert finding(report, "metrics.coverage.unreadable")["status"] == "WARN"
    assert finding(report, "hyperpod.nodes.failed")["instance_ids"] == [FAILED_NODE]
    assert any(s["source"] == "prometheus:inventory" for s in report["skipped"])
    assert status == 1


def test_an_unusable_prometheus_url_is_refused_before_anything_runs(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report, err = run_json(capsys, "--cluster", world.name, "--prometheus", "http://u:pw@prom:9090")
    assert (status, report) == (2, {})
    assert "no credentials" in err and "pw" not in err
