"""The skill and the prompts match the tools: logs go straight to triage_logs, the report has one
shape everywhere, the prompts never hand the assistant a `<placeholder>`, and tools/list stays
small with every description written for the model."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl.workflow import (
    REPORT_SHAPE,
    diagnose_prompt,
    escalation_prompt,
    report_shape,
    triage_prompt,
)
from tests.servers.mcp_stdio import raw_tool_list

ROOT = Path(__file__).parents[2]
SKILL = (ROOT / "SKILL.md").read_text(encoding="utf-8")
LOG_TRIAGE = (ROOT / "skills" / "log-triage" / "SKILL.md").read_text(encoding="utf-8")
SERVER = StdioServerParameters(command=sys.executable, args=["-m", "hyperpod_nccl", "serve"])
PLACEHOLDER = re.compile(r"<[a-z][^<>]*>")
# Bytes on the wire. With the report schema in every tool it was 81,729 for 13 tools (6,287 each).
TOOL_BYTES_AVERAGE, TOOL_BYTES_MAX = 2_200, 3_600


def test_skill_md_states_the_report_shape_the_prompts_use() -> None:
    assert report_shape(bold=True) in SKILL
    for title, _ in REPORT_SHAPE:
        assert title in " ".join(LOG_TRIAGE.split()), f"skills/log-triage/SKILL.md does not name {title!r}"
    assert "report shape of `SKILL.md`" in LOG_TRIAGE
    for prompt in (diagnose_prompt(), triage_prompt()):
        assert all(line in prompt for line in report_shape().splitlines())


def test_a_logs_only_question_goes_straight_to_triage_logs() -> None:
    workflow = SKILL.split("## Workflow", 1)[1]
    assert workflow.index("triage_logs") < workflow.index("cluster name (or ARN) and region")
    assert "do not ask for a\n   cluster or region" in workflow
    triage = triage_prompt("/data/logs")
    assert "No cluster name or region is needed to read logs: do not ask for them." in triage
    assert "do not ask for a cluster or region to read logs" in diagnose_prompt()


def test_the_assistant_checks_the_job_against_what_the_user_described() -> None:
    for text in (SKILL, LOG_TRIAGE, triage_prompt(), diagnose_prompt()):
        flat = " ".join(text.split())
        assert "job id" in flat and "world size" in flat and "dates" in flat and "differ" in flat


@pytest.mark.parametrize("given", list(itertools.product(["", "x"], repeat=3)))
def test_prompts_state_what_was_given_and_never_leave_a_placeholder(given: tuple[str, str, str]) -> None:
    values = [
        "ml-cluster" if given[0] else "",
        "us-west-2" if given[1] else "",
        "NCCL timeout" if given[2] else "",
    ]
    for prompt in (
        diagnose_prompt(*values),
        triage_prompt("/logs" if given[0] else "", "/ais" if given[1] else "", values[2]),
        escalation_prompt(values[0], values[1], "report.json" if given[2] else ""),
    ):
        assert not PLACEHOLDER.search(prompt), PLACEHOLDER.search(prompt)
        assert "{" not in prompt and "}" not in prompt
    if all(given):
        assert "Cluster: ml-cluster   Region: us-west-2" in diagnose_prompt(*values)
        assert "Error reported by the user: NCCL timeout" in diagnose_prompt(*values)


def _tools_list_bytes() -> tuple[int, list[dict]]:
    """tools/list exactly as a client receives it, over stdio."""
    server = subprocess.Popen(
        [sys.executable, "-m", "hyperpod_nccl", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = raw_tool_list(server)
    finally:
        server.terminate()
        server.wait(timeout=10)
    return len(line.encode()), json.loads(line)["result"]["tools"]


def test_tools_list_is_small_and_every_description_is_written_for_the_model() -> None:
    size, tools = _tools_list_bytes()
    assert size <= TOOL_BYTES_AVERAGE * len(tools), f"tools/list is {size} bytes for {len(tools)} tools"
    for tool in tools:
        assert len(json.dumps(tool)) <= TOOL_BYTES_MAX, tool["name"]
        description = tool["description"]
        assert re.search(r"\bUse (this|it)\b", description), tool["name"]
        assert re.search(r"\bReturns?\b", description), tool["name"]
        assert "\n    " not in description, f"{tool['name']}: docstring indentation leaked"
        schema = tool.get("outputSchema")
        assert schema and "$defs" not in json.dumps(schema), tool["name"]
        for name, argument in tool["inputSchema"].get("properties", {}).items():
            assert "title" not in argument, (tool["name"], name)


@pytest.mark.anyio
async def test_every_result_validates_against_its_outline_and_the_full_schema_is_a_resource() -> None:
    async with Client(SERVER) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        listed = await client.call_tool("list_references", {})  # the client checks it against the outline
        report_uri = tools["triage_logs"].output_schema["description"].removeprefix("Full schema: resource ")
        full = await client.read_resource(report_uri)
    assert not listed.is_error and listed.structured_content["files"]
    schema = json.loads(full.contents[0].text)
    assert schema["title"] == "Report" and "Finding" in schema["$defs"]
