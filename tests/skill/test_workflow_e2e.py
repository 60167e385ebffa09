"""The whole workflow as an assistant runs it over stdio on the bundled example: triage the logs,
read the section of every FAIL, compare after a "fix", write the escalation bundle."""

from __future__ import annotations

import tarfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.servers.mcp_stdio import serve

pytestmark = pytest.mark.anyio

EXAMPLE_LOGS = Path(__file__).parents[2] / "examples" / "training-hang" / "logs"


def _a_day_later(time: str | None) -> str | None:
    return (datetime.fromisoformat(time) + timedelta(days=1)).isoformat() if time else None


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {result.content[0].text if result.content else ''}"
    return result.structured_content


async def test_from_my_job_hangs_to_the_culprit_the_section_the_rerun_and_the_bundle(tmp_path: Path) -> None:
    if not EXAMPLE_LOGS.is_dir():
        pytest.skip("examples/training-hang/logs has not landed yet")
    async with Client(serve(tmp_path)) as client:
        if "triage_logs" not in {tool.name for tool in (await client.list_tools()).tools}:
            pytest.skip("the triage_logs tool has not landed yet")
        report = await call(client, "triage_logs", {"log_dir": str(EXAMPLE_LOGS)})
        assert report["root_cause"]["culprit_ranks"] == [43]
        assert report["root_cause"]["culprit_nodes"] == ["ip-10-1-0-15"]

        failures = [finding for finding in report["findings"] if finding["status"] == "FAIL"]
        assert failures
        for finding in failures:
            file, section = finding["reference"].split(" § ", 1)
            read = await call(client, "read_reference", {"file": file, "section": section})
            assert read["pointer"] == finding["reference"] and read["text"].startswith("#")

        # The user applies the fix; the rerun, a day later, no longer shows the first FAIL.
        fixed = failures[0]
        later = [{**event, "time": _a_day_later(event["time"])} for event in report["timeline"]]
        rerun = {**report, "findings": [f for f in report["findings"] if f is not fixed], "timeline": later}
        comparison = await call(client, "compare_reports", {"previous": report, "current": rerun})
        assert [change["id"] for change in comparison["fixed"]] == [fixed["id"]]
        assert comparison["new"] == []
        issues = [f for f in report["findings"] if f["status"] in ("FAIL", "WARN")]
        assert comparison["summary"]["still_failing"] == len(issues) - 1

        output = tmp_path / "escalation.tar.gz"
        bundle = await call(
            client,
            "create_escalation_bundle",
            {
                "output_path": str(output),
                "report": rerun,
                "previous_report": report,
                "log_dir": str(EXAMPLE_LOGS),
                "region": "us-west-2",
            },
        )
    assert bundle["path"] == str(output.resolve())
    assert "aws s3 cp escalation.tar.gz 's3://<your-bucket>/" in bundle["upload"]["command"]
    assert "cluster name or ARN" in bundle["missing"]  # logs alone do not name the cluster
    with tarfile.open(output, "r:gz") as tar:
        case = tar.extractfile("hyperpod-nccl-escalation/CASE.md").read().decode()
        names = tar.getnames()
    assert "hyperpod-nccl-escalation/triage-report.json" in names
    assert "Ranks: `" in case and "43" in case.split("Ranks: `", 1)[1].split("`", 1)[0]
    assert "ip-10-1-0-15" in case
    assert "Region: `us-west-2`" in case
    assert f"[FIXED] {fixed['priority']} {fixed['id']}" in case  # what the last change did


async def test_the_cluster_path_replays_a_snapshot_compares_and_bundles_it(tmp_path: Path) -> None:
    from tests.skill.fixtures import incident_snapshot

    incident_snapshot().save(tmp_path / "saved")
    async with Client(serve(tmp_path)) as client:
        if "run_diagnostic" not in {tool.name for tool in (await client.list_tools()).tools}:
            pytest.skip("the run_diagnostic tool has not landed yet")
        result = await call(client, "run_diagnostic", {"bundle": str(tmp_path / "saved")})
        for finding in result["findings"]:
            if finding["status"] == "FAIL":
                file, section = finding["reference"].split(" § ", 1)
                await call(client, "read_reference", {"file": file, "section": section})
        same = await call(client, "compare_reports", {"previous": result, "current": result})
        output = tmp_path / "cluster.tar.gz"
        bundle = await call(
            client,
            "create_escalation_bundle",
            {"output_path": str(output), "report": result, "snapshot_dir": str(tmp_path / "saved")},
        )
    issues = [f for f in result["findings"] if f["status"] in ("FAIL", "WARN")]
    assert same["summary"]["still_failing"] == len(issues) and same["fixed"] == same["new"] == []
    assert bundle["case"]["cluster"]["name"] == "ml-cluster-prod"
    assert bundle["case"]["environment"]["variables"]["NCCL_DEBUG"] == "INFO"
    with tarfile.open(output, "r:gz") as tar:
        assert "hyperpod-nccl-escalation/snapshot.json" in tar.getnames()
