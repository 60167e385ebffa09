"""Log triage given one of the product's own bundles says what it is and which tool reads it,
instead of reading `snapshot.json` as log lines (it once answered `host_oom` with high confidence)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from hyperpod_nccl.bundle import BundleRequest, create_bundle
from hyperpod_nccl.input_kind import not_logs
from tests.diagnose.example_bundle import EXAMPLE
from tests.servers.mcp_stdio import serve
from tests.skill.fixtures import incident_report

CLI = [sys.executable, "-m", "hyperpod_nccl"]


def triage(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "triage", str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("target", [EXAMPLE, EXAMPLE / "snapshot.json"])
def test_the_cli_points_a_bundle_at_diagnose(target: Path) -> None:
    result = triage(target)
    assert (result.returncode, result.stdout) == (2, "")
    assert f"`hyperpod-nccl diagnose --bundle {EXAMPLE}`" in result.stderr
    assert result.stderr.count("\n") == 1


def test_an_escalation_bundle_is_recognised_and_says_how_to_open_it(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(incident_report().model_dump_json(), encoding="utf-8")
    create_bundle(BundleRequest(output=tmp_path / "case.tar.gz", report=report))
    result = triage(tmp_path / "case.tar.gz")
    assert result.returncode == 2 and "is an escalation bundle" in result.stderr
    assert "tar -xzf case.tar.gz" in result.stderr


def test_logs_and_other_json_are_left_to_the_triage(tmp_path: Path) -> None:
    (tmp_path / "snapshot.json").write_text('{"rank": 3, "msg": "NCCL WARN x"}\n', encoding="utf-8")
    assert not_logs(tmp_path) is None and not_logs(tmp_path / "snapshot.json") is None
    assert not_logs(Path(__file__)) is None


@pytest.mark.anyio
async def test_triage_logs_over_mcp_points_at_run_diagnostic(tmp_path: Path) -> None:
    bundle = tmp_path / "saved"
    shutil.copytree(EXAMPLE, bundle)
    async with Client(serve(tmp_path)) as client:
        result = await client.call_tool("triage_logs", {"log_dir": str(bundle)})
    assert result.is_error
    text = result.content[0].text
    assert "saved diagnostic bundle" in text and f'run_diagnostic (bundle="{bundle}")' in text
