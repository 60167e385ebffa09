"""The workflow prompts and the rerun/escalation tools as an MCP client sees them over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from tests.servers.mcp_stdio import serve
from tests.skill.fixtures import incident_report

pytestmark = pytest.mark.anyio


async def test_prompts_walk_through_triage_and_escalation_and_tools_refuse_bad_input(tmp_path: Path) -> None:
    report = incident_report().model_dump(mode="json")
    existing = tmp_path / "taken.tar.gz"
    existing.write_bytes(b"")
    async with Client(serve(tmp_path)) as client:
        prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
        triage = await client.get_prompt("triage_training_logs", {"log_dir": "/data/logs/job-51877"})
        escalation = await client.get_prompt(
            "prepare_escalation", {"cluster": "ml-cluster", "region": "us-west-2"}
        )
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        taken = await client.call_tool(
            "create_escalation_bundle", {"output_path": str(existing), "report": report}
        )
        missing = await client.call_tool(
            "compare_reports", {"previous": str(tmp_path / "nope.json"), "current": report}
        )
        not_a_report = await client.call_tool(
            "compare_reports", {"previous": {"kind": "triage"}, "current": report}
        )
    assert {"diagnose_nccl_failure", "triage_training_logs", "prepare_escalation"} <= prompts
    triage_text = triage.messages[0].content.text
    assert "Logs: /data/logs/job-51877" in triage_text
    assert (
        "triage_logs" in triage_text and "compare_reports" in triage_text and "read_reference" in triage_text
    )
    escalation_text = escalation.messages[0].content.text
    assert "Cluster: ml-cluster" in escalation_text and "create_escalation_bundle" in escalation_text
    assert "Never upload it yourself" in escalation_text
    assert "changes nothing on the cluster" in " ".join(tools["create_escalation_bundle"].description.split())
    assert taken.is_error and "already exists" in taken.content[0].text
    assert existing.read_bytes() == b""
    assert missing.is_error and "does not exist" in missing.content[0].text
    assert not_a_report.is_error and "not a hyperpod-nccl report" in not_a_report.content[0].text
