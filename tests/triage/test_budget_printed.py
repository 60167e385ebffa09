"""The 8 KB budget holds for what is printed: the CLI's `--json` and the MCP tool's result for a
1,024-rank job, and every list or text the budget cuts says how much it left out."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from hyperpod_nccl.models import Evidence, Finding, Priority, Report, Status, TimelineEvent
from hyperpod_nccl.render import render_json, render_text, shorten
from hyperpod_nccl.triage.budget import BUDGET_BYTES, fit_to_budget, size_of
from tests.servers.mcp_stdio import serve
from tests.triage import scenarios

CLI = [sys.executable, "-m", "hyperpod_nccl"]
EIGHT_KB = 8 * 1024
OMISSION = re.compile(r"^\S.*: \+\d+ more$")


@pytest.fixture(scope="module")
def job_of_1024_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.straggler_at_scale(tmp_path_factory.mktemp("scale")).log_dir


def test_the_cli_prints_at_most_8_kb_of_json_for_1024_ranks(job_of_1024_ranks: Path) -> None:
    printed = subprocess.run(
        [*CLI, "triage", str(job_of_1024_ranks), "--json"], capture_output=True, check=False, timeout=300
    )
    assert printed.returncode == 1, printed.stderr
    assert len(printed.stdout) <= EIGHT_KB, f"{len(printed.stdout)} bytes printed"
    report = Report.model_validate_json(printed.stdout)
    assert report.root_cause is not None and report.root_cause.culprit_ranks == [777]
    assert report.job and report.job.rank_map[0].startswith(f"{report.root_cause.culprit_nodes[0]}: "), (
        "the trimmed rank map still shows the culprit's node"
    )
    assert all(OMISSION.match(entry) for entry in report.omitted), report.omitted
    assert printed.stdout.decode() == render_json(report) + "\n"
    lead = next(f for f in report.findings if f.id == report.root_cause.finding)
    assert not any(entry.startswith(f"{lead.id} suggested_commands") for entry in report.omitted)
    recorder = [c.command for c in lead.suggested_commands if "TORCH_FR_BUFFER_SIZE" in c.command]
    assert recorder, "the root cause keeps every command, the Flight Recorder one included"
    assert "TORCH_FR_DUMP_TEMP_FILE=<shared-dir>/nccl_trace_rank_" in recorder[0], (
        "the dumps go where every node can read them, not each container's /tmp"
    )


@pytest.mark.anyio
async def test_the_mcp_result_is_the_same_8_kb_the_cli_prints(job_of_1024_ranks: Path) -> None:
    async with Client(serve(job_of_1024_ranks)) as client:
        result = await client.call_tool("triage_logs", {"log_dir": str(job_of_1024_ranks)})
    assert not result.is_error
    [content] = result.content
    assert len(content.text.encode()) <= EIGHT_KB
    assert json.loads(content.text) == result.structured_content
    assert content.text == render_json(Report.model_validate(result.structured_content))


def _long_report() -> Report:
    listing = ",".join(str(rank) for rank in range(0, 2000, 3))
    findings = [
        Finding(
            id=f"triage.test.f{i}",
            status=Status.FAIL if i < 3 else Status.INFO,
            priority=Priority.P0 if i < 3 else Priority.P2,
            title=f"finding {i}",
            reference="debugging-guide.md § 1",
            detail=f"Seen on ranks {listing}.",
            ranks=list(range(0, 2000, 3)),
            nodes=[f"gpu-{n}" for n in range(40)],
            evidence=[
                Evidence(source="a.log", line=n, text=f"ranks {listing} timed out") for n in range(1, 9)
            ],
        )
        for i in range(12)
    ]
    timeline = [TimelineEvent(time=None, source=f"a.log:{n}", event=f"event {n}") for n in range(1, 21)]
    return Report.build("triage", findings, timeline=timeline)


def test_every_cut_list_is_counted_and_no_text_is_cut_inside_a_number() -> None:
    report = fit_to_budget(_long_report())
    assert size_of(report) <= BUDGET_BYTES
    omitted = dict(entry.rsplit(": ", 1) for entry in report.omitted)
    assert omitted["timeline"] == "+17 more" and len(report.timeline) == 3
    assert omitted["INFO findings"] == "+9 more"
    assert omitted["triage.test.f1 ranks"] == f"+{667 - 16} more" and len(report.findings[1].ranks) == 16
    assert omitted["triage.test.f1 nodes"] == "+36 more"
    assert "Left out to fit the size budget: " in render_text(report) and "timeline: +17 more" in render_text(
        report
    )
    texts = [f.detail for f in report.findings] + [e.text for f in report.findings for e in f.evidence]
    for text in texts:
        assert text.endswith(" more)…"), text  # a cut list of ranks says how many it left out
        kept = text.rsplit(" (+", 1)[0].split()[-1]
        assert all(part.isdigit() for part in kept.rstrip(".").split(",")), text


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("ran for 1800020 milliseconds before timing out", 20, "ran for 1800020…"),
        ("ranks 12,31,44,48,56,85,107,125,290-291 waited", 31, "ranks 12,31,44,48,56 (+4 more)…"),
        ("used 1.5 GiB of 80.0 GiB on gpu-3", 15, "used 1.5 GiB…"),
        ("short enough", 40, "short enough"),
    ],
)
def test_shorten_never_cuts_a_number(text: str, limit: int, expected: str) -> None:
    assert shorten(text, limit) == expected and len(expected) <= limit
