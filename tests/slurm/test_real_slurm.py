"""Against a real slurmctld, slurmd and munge on loopback (see realslurm.py): the product reads
the planted drained and down nodes and the job's auto-resume mistakes with the real `scontrol`,
`sinfo` and `squeue`, through the local runner, the CLI and the MCP server.

The last test stops slurmctld, so it stays last in this module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from hyperpod_nccl.models import Priority, Report, Status
from hyperpod_nccl.slurm.service import collect_slurm_snapshot, slurm_report
from tests.slurm import realslurm
from tests.slurm.helpers import commands, findings, only

pytestmark = pytest.mark.slurm
CLI = [str(Path(sys.executable).with_name("hyperpod-nccl"))]


def _diagnose(job_id: str | None) -> Report:
    return slurm_report(anyio.run(lambda: collect_slurm_snapshot(job_id=job_id)))


def test_drained_and_down_nodes_are_reported_with_reason_priority_and_reference(
    real_slurm: realslurm.LocalSlurm,
) -> None:
    report = _diagnose(real_slurm.job_id)
    drained = only(report, "slurm.node.drained")
    assert drained.nodes == [realslurm.DRAINED] and realslurm.DRAIN_REASON in drained.title
    assert (drained.status, drained.priority, drained.reference) == (
        Status.FAIL,
        Priority.P1,
        "operations.md § 7",
    )
    assert f"scontrol update nodename={realslurm.DRAINED} state=resume" in commands(drained)
    down = only(report, "slurm.node.gres_mismatch")
    assert down.nodes == [realslurm.DOWN] and realslurm.DOWN_REASON in down.title
    assert (down.priority, down.reference) == (Priority.P0, "debugging-guide.md § 5")
    assert "State DOWN" in down.detail
    assert f"scontrol update node={realslurm.DOWN} state=fail reason=Action:Replace" in commands(down)
    assert "munge OK" in only(report, "slurm.controller.up").title


def test_the_jobs_auto_resume_mistakes_are_read_from_its_real_batch_script(
    real_slurm: realslurm.LocalSlurm,
) -> None:
    report = _diagnose(real_slurm.job_id)
    no_resume = only(report, "slurm.batch_script.no_auto_resume")
    assert no_resume.evidence[0].text == "srun sleep 300" and no_resume.evidence[0].line == 7
    stale = only(report, "slurm.batch_script.stale_nodelist")
    assert "SLURM_JOB_NODELIST" in stale.evidence[0].text and stale.priority == Priority.P1
    assert only(report, "slurm.batch_script.not_exclusive").reference == "operations.md § 7"
    status = only(report, "slurm.job.status")
    assert f"Job {real_slurm.job_id} RUNNING" in status.title and status.nodes == [realslurm.WORKER]


def test_cli_exits_1_and_prints_the_scontrol_suggestions(real_slurm: realslurm.LocalSlurm) -> None:
    done = subprocess.run(
        [*CLI, "slurm", "--job", str(real_slurm.job_id)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert f"scontrol update nodename={realslurm.DRAINED} state=resume" in done.stdout
    assert f"scontrol update node={realslurm.DOWN} state=fail reason=Action:Replace" in done.stdout
    assert "Suggested command (run this yourself)" in done.stdout
    as_json = subprocess.run(
        [*CLI, "slurm", "--json"], capture_output=True, text=True, timeout=60, check=False
    )
    ids = {f["id"] for f in json.loads(as_json.stdout)["findings"]}
    assert {"slurm.node.drained", "slurm.node.gres_mismatch", "slurm.controller.up"} <= ids


def test_diagnose_orchestrator_slurm_reads_this_host_without_aws(
    real_slurm: realslurm.LocalSlurm, tmp_path: Path
) -> None:
    # No credentials at all: the controller path must not touch AWS.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run(
        [
            *CLI,
            "diagnose",
            "--orchestrator",
            "slurm",
            "--job",
            str(real_slurm.job_id),
            "--save-bundle",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert f"scontrol update node={realslurm.DOWN} state=fail reason=Action:Replace" in done.stdout
    assert "auto-resume" in done.stdout and realslurm.DRAIN_REASON in done.stdout
    replay = subprocess.run(
        [*CLI, "diagnose", "--bundle", str(tmp_path), "--json"], capture_output=True, text=True
    )
    assert "slurm.node.drained" in {f["id"] for f in json.loads(replay.stdout)["findings"]}
    bare = subprocess.run([*CLI, "diagnose"], capture_output=True, text=True, env=env)
    assert bare.returncode == 2 and "--orchestrator slurm" in bare.stderr


@pytest.mark.anyio
async def test_mcp_slurm_status_over_stdio(real_slurm: realslurm.LocalSlurm) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "hyperpod_nccl", "serve"], env=dict(os.environ)
    )
    async with Client(server) as client:
        result = await client.call_tool("slurm_status", {"job": str(real_slurm.job_id)})
        refused = await client.call_tool("slurm_status", {"job": "1; scancel 1"})
    findings = {f["id"]: f for f in result.structured_content["findings"]}
    assert findings["slurm.node.drained"]["nodes"] == [realslurm.DRAINED]
    assert "slurm.batch_script.no_auto_resume" in findings
    assert refused.is_error and "not a valid Slurm job id" in str(refused.content)


def test_stopped_slurmctld_is_p0(real_slurm: realslurm.LocalSlurm) -> None:
    real_slurm.cancel_job()
    real_slurm.stop_daemon("slurmctld")
    report = _diagnose(None)
    down = only(report, "slurm.controller.down")
    assert (down.priority, down.reference) == (Priority.P0, "operations.md § 7")
    assert any("is DOWN" in e.text for e in down.evidence)
    assert not findings(report, "slurm.controller.munge")  # munged still answers on slurm.conf's socket
