"""Every failure an answer: each input that once ended in a traceback is a one-line reason (exit 2
for an unusable argument) or a skipped-input entry, through the CLI and the MCP tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from hyperpod_nccl import cli
from hyperpod_nccl.mcp_server import build_server
from tests.servers.mcp_stdio import serve
from tests.skill import secrets

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-m", "hyperpod_nccl"]
EXAMPLE_BUNDLE = Path(__file__).parents[2] / "examples" / "eks-cluster-bundle"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def _bundle(tmp_path: Path, content: bytes | None) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    if content is None:
        (bundle / "snapshot.json").mkdir()  # unreadable as a file
    else:
        (bundle / "snapshot.json").write_bytes(content)
    return bundle


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe{not utf-8}", b'{"schema_version": 1, "collected_at": "x", "aws": {"nodes": [', b"[]", None],
    ids=["not utf-8", "cut short", "not an object", "a directory"],
)
def test_an_unusable_snapshot_is_one_line_exit_2(tmp_path: Path, content: bytes | None) -> None:
    done = run("diagnose", "--bundle", str(_bundle(tmp_path, content)))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_objects_missing_their_fields_are_skipped_and_the_rest_is_diagnosed(tmp_path: Path) -> None:
    snapshot = json.loads((EXAMPLE_BUNDLE / "snapshot.json").read_text())
    snapshot["kubernetes"]["pods"].append({})
    snapshot["kubernetes"]["nodes"][0]["status"] = None
    done = run("diagnose", "--bundle", str(_bundle(tmp_path, json.dumps(snapshot).encode())), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    skipped = " ".join(f"{item['source']} {item['reason']}" for item in report["skipped"])
    assert "kubernetes.pods[" in skipped and report["findings"]


@pytest.mark.parametrize("since", ["99999999999999999999d", "2 hours", "0x10h"])
def test_an_unusable_window_is_one_line_exit_2(since: str) -> None:
    done = run("diagnose", "--cluster", "c1", "--region", "us-west-2", "--since", since)
    assert done.returncode == 2 and done.stderr.count("\n") == 1


async def test_an_unusable_window_is_refused_by_the_tools() -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool(
            "scan_cloudwatch", {"cluster": "c1", "region": "us-west-2", "since": "99999999999999999999d"}
        )
    assert result.is_error and "366 days" in result.content[0].text


def test_a_huge_previous_report_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    huge = tmp_path / "previous.json"
    with huge.open("wb") as handle:
        handle.truncate(300 << 20)  # sparse: 300 MB on paper
    done = run("compare", str(huge), str(huge))
    assert done.returncode == 2 and "a report is at most 16 MiB" in done.stderr


def test_an_unexpected_error_is_one_redacted_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(_args: object) -> int:
        raise RuntimeError(f"connection reset while sending Bearer {secrets.BEARER}\nsecond line")

    monkeypatch.setattr(cli, "COMMANDS", [("boom", "crash", lambda parser: None, crash)])
    assert cli.main(["boom"]) == 2
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and "could not finish (RuntimeError" in printed
    assert secrets.BEARER not in printed


async def test_a_non_utf8_log_name_and_a_long_path_are_answers_over_mcp(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank-\udcff.out").write_bytes(b"[rank0]: NCCL WARN something\n")
    async with Client(serve(tmp_path)) as client:
        report = await client.call_tool("triage_logs", {"log_dir": str(logs)})
        long = await client.call_tool("triage_logs", {"log_dir": str(tmp_path / ("y" * 300))})
    assert not report.is_error and report.structured_content["summary"]["files_read"] == 1
    assert long.is_error
