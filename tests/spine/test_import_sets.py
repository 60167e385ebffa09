"""What each command loads (issue 13 item 3): `triage` reads logs and never needs the AWS or
Kubernetes clients, or the MCP server; `diagnose` does. Import sets, not timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.servers.mcp_stdio import raw_tool_list

HEAVY = ("boto3", "botocore", "kubernetes", "mcp")
_PROBE = """
import json, sys
%s
from hyperpod_nccl.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(%r))))
"""


def loaded_by(*argv: str, preload: str = "") -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE % (preload, HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_triage_loads_neither_cloud_clients_nor_the_mcp_server(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("RuntimeError: NCCL error: unhandled system error\n")
    assert loaded_by("triage", str(tmp_path), "--json") == []


def test_the_probe_sees_a_client_when_one_is_loaded() -> None:
    assert "boto3" in loaded_by("references", preload="import hyperpod_nccl.collect.aws")


def test_the_top_level_help_still_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    for command in (
        "serve",
        "references",
        "diagnose",
        "triage",
        "compare",
        "bundle",
        "probe",
        "metrics",
        "slurm",
    ):
        assert command in done.stdout


def test_serve_answers_its_tool_list_without_the_cloud_clients(tmp_path: Path) -> None:
    """Over stdio, as a client starts it: after initialize and tools/list, `-X importtime` (which
    names every module the moment it loads) shows the MCP SDK but no AWS, Kubernetes or HTTP client."""
    importtime = tmp_path / "importtime.log"  # a file, not a pipe: the log outgrows a pipe's buffer
    server = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "hyperpod_nccl", "serve", "--allow-dir", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=importtime.open("w"),
        text=True,
    )
    tools = {tool["name"] for tool in json.loads(raw_tool_list(server))["result"]["tools"]}
    assert server.stdin is not None
    server.stdin.close()  # end of input: the server exits
    server.wait(timeout=60)
    log = importtime.read_text()
    loaded = {line.rsplit("|", 1)[1].strip() for line in log.splitlines() if "import time:" in line}
    packages = {module.split(".")[0] for module in loaded}
    assert {"triage_logs", "run_diagnostic", "list_pods"} <= tools
    assert "mcp" in packages
    assert packages.isdisjoint({"boto3", "botocore", "kubernetes", "httpx"})
    # The engines load with the first triage or diagnostic, not with the server.
    assert loaded.isdisjoint({"hyperpod_nccl.analyze", "hyperpod_nccl.triage.engine"})
