"""Unbounded inputs, bounded outputs: error messages quote a short prefix of the input, and the
report's evidence and message fields carry their limit in the model, so a huge cluster name,
node message or log line cannot make a huge error or report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from hyperpod_nccl.mcp_server import build_server
from hyperpod_nccl.models import Evidence, Finding, SkippedInput, Status
from hyperpod_nccl.snapshot import CollectionIssue
from hyperpod_nccl.snapshot.kubernetes import PodLog

pytestmark = pytest.mark.anyio
EXAMPLE_BUNDLE = Path(__file__).parents[2] / "examples" / "eks-cluster-bundle"


async def test_a_200_kb_argument_is_echoed_as_a_short_prefix() -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool("describe_cluster", {"cluster": "c" * 200_000, "region": "us-west-2"})
    assert result.is_error and len(result.content[0].text) < 2_000


def test_every_text_field_is_cut_to_its_limit_and_cutting_twice_changes_nothing() -> None:
    huge = "x" * 50_000_000
    evidence = Evidence(source=huge, text=huge)
    assert (len(evidence.source), len(evidence.text)) == (1_000, 4_000)
    assert "characters cut" in evidence.text
    assert Evidence.model_validate(evidence.model_dump()) == evidence
    finding = Finding(id="a.b", status=Status.INFO, title=huge, detail=huge, nodes=[huge])
    assert max(len(finding.title), len(finding.detail), len(finding.nodes[0])) <= 4_000
    assert len(SkippedInput(source=huge, reason=huge).reason) == 4_000
    assert len(CollectionIssue(source="s", kind="error", message=huge).message) == 4_000
    tail = PodLog(namespace="n", pod="p", container="c", text=huge + "THE END").text
    assert len(tail) == 1_000_000 and tail.endswith("THE END")


def test_a_50_mb_node_message_makes_a_small_report(tmp_path: Path) -> None:
    snapshot = json.loads((EXAMPLE_BUNDLE / "snapshot.json").read_text())
    for node in snapshot["aws"]["nodes"]:
        node["message"] = "Node failed health checks: " + "E" * 50_000_000
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "snapshot.json").write_text(json.dumps(snapshot))
    done = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "diagnose", "--bundle", str(bundle), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-500:]
    assert len(done.stdout) < 500_000
