"""The shipped example bundle replays offline and reports the problems its README lists."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl.cli import main
from hyperpod_nccl.diagnose.service import diagnose
from hyperpod_nccl.models import Report
from hyperpod_nccl.snapshot import Snapshot
from tests.diagnose.example_bundle import EXAMPLE, WORKERS, generate


def test_the_example_replays_with_its_planted_problems(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    assert main(["diagnose", "--bundle", str(EXAMPLE), "--json"]) == 1
    findings = {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    # The qwen pods ran for 8 hours with these in place: latent, not what stopped anything.
    for latent in ("aws.security_group.self_reference_missing", "k8s.master_addr.no_service"):
        assert (findings[latent]["status"], findings[latent]["priority"]) == ("WARN", "P2")
        assert findings[latent]["title"].startswith("Latent: ")
    history = findings["aws.security_group.self_reference_missing"]["suggested_commands"][0]
    assert history["command"].startswith("aws cloudtrail lookup-events")
    assert findings["hyperpod.nodes.failed"]["instance_ids"] == [WORKERS[7]]
    assert findings["cloudwatch.xid"]["instance_ids"] == [WORKERS[7]]
    assert findings["cloudwatch.watchdog"]["instance_ids"] == [WORKERS[3]]
    assert findings["hyperpod.events.infrastructure"]["instance_ids"] == [WORKERS[7]]


def test_the_example_holds_the_kubernetes_side_redacted() -> None:
    text = (Path(EXAMPLE) / "snapshot.json").read_text()
    snapshot = json.loads(text)
    assert snapshot["orchestrator"] == "eks" and snapshot["job"] == "qwen"
    assert len(snapshot["kubernetes"]["pods"]) == 3
    assert "[REDACTED]" in text and "hf_" not in text


def _shape(report: Report) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    return sorted((f.id, f.status, f.priority, tuple(f.instance_ids)) for f in report.findings)


def test_a_live_run_against_moto_and_the_kubernetes_fixture_reproduces_the_example(tmp_path: Path) -> None:
    fresh = generate(tmp_path)
    assert fresh.kubernetes is not None and {pod["metadata"]["name"] for pod in fresh.kubernetes.pods} == {
        "qwen-master-0",
        "qwen-worker-0",
        "qwen-worker-1",
    }
    assert _shape(diagnose(fresh)) == _shape(diagnose(Snapshot.load(EXAMPLE)))


@pytest.mark.anyio
async def test_run_diagnostic_over_stdio_replays_the_example_like_the_cli(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["diagnose", "--bundle", str(EXAMPLE), "--json"])
    cli = json.loads(capsys.readouterr().out)
    server = StdioServerParameters(command=sys.executable, args=["-m", "hyperpod_nccl", "serve"])
    async with Client(server) as client:
        result = await client.call_tool("run_diagnostic", {"bundle": str(EXAMPLE)})
    replay = result.structured_content
    assert replay["summary"] == cli["summary"] and replay["root_cause"] == cli["root_cause"]
    assert [f["id"] for f in replay["findings"]] == [
        f["id"] for f in cli["findings"] if f["status"] != "PASS"
    ]
