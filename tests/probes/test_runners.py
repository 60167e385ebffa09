"""Runners only ever carry a shipped probe script; the SSM runner builds the plugin's command line
as an argv list and the node's command as a fixed wrapper; the local runner runs for real here."""

from __future__ import annotations

import base64
import gzip
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from botocore.stub import ANY, Stubber

from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.probes.catalog import SCRIPTS_DIR, ProbeScript, UnknownProbeScript, probe_script
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult
from hyperpod_nccl.probes.runners.local import LocalRunner
from hyperpod_nccl.probes.runners.process import run_argv
from hyperpod_nccl.probes.runners.ssm import DOCUMENT, SsmRunner, remote_command
from hyperpod_nccl.probes.service import probe_local, probe_report
from hyperpod_nccl.probes.tool import probe_nodes
from tests.probes.plant import healthy

INSTANCE = "i-0123456789abcdef0"
TARGET = NodeTarget(
    instance_id=INSTANCE,
    instance_group="worker-group-1",
    instance_type="ml.p5.48xlarge",
    ssm_target=f"sagemaker-cluster:abcd1234efgh_worker-group-1-{INSTANCE}",
)
WRAPPER = re.compile(
    r"printf %s (?P<payload>[A-Za-z0-9+/=]+) \| base64 -d \| gzip -dc \| env (?P<env>.*)sh -s"
)


def shipped_text(name: str) -> str:
    return (SCRIPTS_DIR / f"{name}.sh").read_text(encoding="utf-8")


def test_a_probe_script_is_only_ever_a_shipped_file() -> None:
    with pytest.raises(UnknownProbeScript, match="does not match the shipped file"):
        ProbeScript(name="node_health", text="cat /etc/shadow")
    with pytest.raises(UnknownProbeScript, match="no probe script"):
        ProbeScript(name="anything", text="id")
    with pytest.raises(UnknownProbeScript):
        probe_script("../../bin/sh")
    with pytest.raises(ValueError, match="not a plain identifier"):
        probe_script("node_health", {"PROBE_CMD_TIMEOUT": "5; reboot"})
    with pytest.raises(ValueError, match="not a plain identifier"):
        ProbeScript(name="node_health", text=shipped_text("node_health"), params={"lower": "1"})
    assert probe_script("node_health").text == shipped_text("node_health")


def test_the_mcp_tool_takes_no_argument_that_could_become_a_command() -> None:
    assert list(inspect.signature(probe_nodes).parameters) == ["cluster", "region", "node", "sample_nodes"]


class RecordingRunner:
    """A runner double that keeps what it was handed."""

    def __init__(self) -> None:
        self.received: list[ProbeScript] = []

    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult:
        self.received.append(script)
        return ProbeResult(target=target, script=script.name, status="ok", output=healthy())


def test_the_service_hands_runners_the_shipped_node_health_script_only() -> None:
    runner = RecordingRunner()
    anyio.run(lambda: probe_local(runner=runner))
    assert len(runner.received) == 1
    script = runner.received[0]
    assert isinstance(script, ProbeScript)
    assert (script.name, script.text, dict(script.params)) == ("node_health", shipped_text("node_health"), {})


def test_the_remote_command_is_a_fixed_wrapper_around_the_shipped_script() -> None:
    script = probe_script("node_health", {"PROBE_CMD_TIMEOUT": "5"})
    command = remote_command(script)
    match = WRAPPER.fullmatch(command)
    assert match is not None, command
    assert match.group("env") == "PROBE_CMD_TIMEOUT='5' "
    assert gzip.decompress(base64.b64decode(match.group("payload"))).decode() == shipped_text("node_health")


def test_the_remote_command_runs_the_script_when_a_shell_executes_it() -> None:
    # What the SSM agent does on the node with the document's `command`: `sh -c <command>`.
    done = subprocess.run(
        ["sh", "-c", remote_command(probe_script("node_health", {"PROBE_CMD_TIMEOUT": "9"}))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "command_timeout_s: 9\n" in done.stdout
    assert "===== hyperpod-nccl:section host =====" in done.stdout
    assert done.stdout.rstrip().endswith("===== hyperpod-nccl:section end =====")


@pytest.fixture
def fake_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A real `session-manager-plugin` executable on PATH that records its argv and prints a
    recorded node output, as the plugin relays the session's stdout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_log = tmp_path / "argv.json"
    recording = tmp_path / "recording.txt"
    recording.write_text(
        f"\nStarting session with SessionId: s-1\n{healthy()}\nExiting session with sessionId: s-1.\n"
    )
    plugin = bin_dir / "session-manager-plugin"
    plugin.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(argv_log)!r}, 'w').write(json.dumps(sys.argv))\n"
        f"sys.stdout.write(open({str(recording)!r}).read())\n"
    )
    plugin.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return plugin, argv_log


def stubbed_ssm() -> tuple[object, Stubber]:
    client = make_client("ssm", region="us-west-2", probe_sessions=True)
    return client, Stubber(client)


def test_ssm_runner_starts_the_plugin_from_an_argv_list(fake_plugin: tuple[Path, Path]) -> None:
    plugin, argv_log = fake_plugin
    client, stub = stubbed_ssm()
    session = {"SessionId": "s-1", "TokenValue": "token-abc", "StreamUrl": "wss://ssmmessages.example/s-1"}
    expected = {"Target": TARGET.ssm_target, "DocumentName": DOCUMENT, "Parameters": {"command": ANY}}
    stub.add_response("start_session", session, expected)
    stub.add_response("terminate_session", {"SessionId": "s-1"}, {"SessionId": "s-1"})
    script = probe_script("node_health")
    with stub:
        result = anyio.run(lambda: SsmRunner("us-west-2", client=client).run(script, TARGET, 30))
        stub.assert_no_pending_responses()
    assert result.status == "ok"
    assert "===== hyperpod-nccl:section nvidia_smi_q =====" in result.output
    argv = json.loads(argv_log.read_text())
    assert argv[0] == str(plugin)
    assert json.loads(argv[1]) == session
    assert argv[2:4] == ["us-west-2", "StartSession"]
    request = json.loads(argv[5])
    assert request == {
        "Target": TARGET.ssm_target,
        "DocumentName": DOCUMENT,
        "Parameters": {"command": [remote_command(script)]},
    }
    assert argv[6].startswith("https://ssm.us-west-2.amazonaws.com")
    assert len(argv) == 7


def test_without_the_plugin_the_node_says_install_it_and_no_session_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    client, stub = stubbed_ssm()  # no responses queued: any call would fail the test
    with stub:
        result = anyio.run(
            lambda: SsmRunner("us-west-2", client=client).run(probe_script("node_health"), TARGET, 30)
        )
    assert result.status == "error"
    assert "Install session-manager-plugin" in (result.error or "")


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        ("TargetNotConnected", "unreachable", False),
        ("AccessDeniedException", "access_denied", False),
        ("ThrottlingException", "error", True),
    ],
)
def test_start_session_errors_say_whether_a_retry_helps(
    fake_plugin: tuple[Path, Path], code: str, status: str, retryable: bool
) -> None:
    client, stub = stubbed_ssm()
    stub.add_client_error("start_session", service_error_code=code, service_message=code)
    with stub:
        result = anyio.run(
            lambda: SsmRunner("us-west-2", client=client).run(probe_script("node_health"), TARGET, 30)
        )
    assert (result.status, result.retryable) == (status, retryable)


def test_the_local_probe_on_a_host_without_a_gpu_reports_it_cleanly() -> None:
    probes = anyio.run(probe_local)
    assert probes.results[0].status == "ok", probes.results[0].error
    report = probe_report(probes)
    absent = [f for f in report.findings if f.id == "node.gpu.absent"]
    assert absent and absent[0].title.startswith("no NVIDIA GPU/driver on this host")
    assert not [f for f in report.findings if f.id.startswith(("node.gpu", "node.fabric")) and f.is_issue]


def test_a_command_past_its_deadline_is_killed_and_keeps_what_it_printed() -> None:
    outcome = anyio.run(lambda: run_argv(["sh", "-c", "echo first section; sleep 30"], timeout_s=1))
    assert outcome.timed_out and outcome.returncode is None
    assert outcome.output == "first section\n"
    assert outcome.duration_s < 10


def test_the_local_runner_feeds_the_script_on_stdin_with_params_as_env() -> None:
    script = probe_script("node_health", {"PROBE_CMD_TIMEOUT": "7"})
    result = anyio.run(lambda: LocalRunner().run(script, NodeTarget(hostname="here"), 60))
    assert result.status == "ok"
    assert "command_timeout_s: 7\n" in result.output
    assert "===== hyperpod-nccl:section end =====" in result.output


def test_a_held_stdin_never_reads_as_end_of_input() -> None:
    # session-manager-plugin must not see EOF on its input while the node's command still runs.
    reader = ["sh", "-c", "read line; echo saw end of input"]
    held = anyio.run(lambda: run_argv(reader, timeout_s=1, hold_stdin=True))
    assert held.timed_out and held.output == ""
    closed = anyio.run(lambda: run_argv(reader, timeout_s=10))
    assert not closed.timed_out and closed.output == "saw end of input\n"
