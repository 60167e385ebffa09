"""Secrets planted in every input — logs, pod env, probe output, CloudWatch events, a report —
must appear in no CLI output, no MCP tool output and no byte of the escalation bundle."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from pydantic import ValidationError

from hyperpod_nccl.guard.redact import MASK, redact_data, redact_text
from hyperpod_nccl.models import Evidence, Report, TimelineEvent
from hyperpod_nccl.snapshot import SNAPSHOT_FILE, CollectionIssue, Snapshot
from hyperpod_nccl.snapshot.aws import AwsSnapshot
from hyperpod_nccl.snapshot.kubernetes import PodLog
from tests.servers.mcp_stdio import serve
from tests.skill import secrets
from tests.skill.fixtures import incident_report, incident_snapshot

CLI = [sys.executable, "-m", "hyperpod_nccl"]
EXAMPLE_LOGS = Path(__file__).parents[2] / "examples" / "training-hang" / "logs"


# --- The leaks this test found, fixed in guard/redact.py -------------------------------------


def test_a_bare_sts_session_token_in_a_debug_trace_is_masked() -> None:
    assert secrets.SESSION_TOKEN not in redact_text(f"credentials token {secrets.SESSION_TOKEN} expires")


def test_the_key_given_to_wandb_login_is_masked() -> None:
    assert redact_text(f"+ wandb login --relogin {secrets.WANDB_KEY}") == f"+ wandb login --relogin {MASK}"


def test_pem_body_lines_read_one_by_one_are_masked_behind_a_label_or_not() -> None:
    later_line = "c2Vjb25kbGluZXBsYW50ZWQrZm9ydHlmb3VyY2hhcmFjdGVyc29mYmFzZTY0Ym9keQ"[:64]
    assert redact_text(f"  {secrets.PEM_BODY}") == f"  {MASK}"
    assert redact_text(f"3: {secrets.PEM_BODY}") == f"3: {MASK}"
    assert redact_text(f"3: {later_line}") == f"3: {MASK}"


def test_a_pod_env_entry_is_masked_by_its_name_whatever_its_value() -> None:
    entry = {"name": "DB_PASSWORD", "value": secrets.PASSWORD}
    assert redact_data([entry, {"name": "NCCL_DEBUG", "value": "INFO"}]) == [
        {"name": "DB_PASSWORD", "value": MASK},
        {"name": "NCCL_DEBUG", "value": "INFO"},
    ]


def test_digests_and_nccl_lines_are_not_mistaken_for_keys() -> None:
    for line in (
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "NCCL INFO comm 0x55d1 rank 3 nranks 64 cudaDev 3 busId 53000 commId 0xMII1234 - Init COMPLETE",
        "MIIGroupSize=8",
    ):
        assert redact_text(line) == line


# --- Planted inputs ---------------------------------------------------------------------------


def planted_report() -> Report:
    """A report (as a user might hand-edit or another tool might write) quoting secrets."""
    report = incident_report()
    straggler = report.findings[0]
    straggler.evidence += [
        Evidence(source="worker-9.log", line=n, text=line)
        for n, line in enumerate(secrets.FREE_TEXT_LINES, 1)
    ]
    straggler.title += f" (HF_TOKEN={secrets.HF_TOKEN})"
    report.timeline.append(TimelineEvent(time="2026-03-02T11:10:00Z", source="x", event=secrets.FREE_TEXT))
    return report


def _first_that_fits(model: type, field: str, candidates: list[Any]) -> Any | None:
    """Planting into a part another engineer owns: try the shapes it may take, keep one that
    validates and still carries the text (an ignored field would plant nothing)."""
    required = {"collected_at": "2026-03-02T11:20:00Z"} if model is Snapshot else {}
    for candidate in candidates:
        try:
            part = model.model_validate({**required, field: candidate})
        except ValidationError:
            continue
        if secrets.leaks(part.model_dump_json()):
            return candidate
    return None


def _probe_candidates() -> list[Any]:
    result = {
        "target": {"instance_id": "i-0abc123def4567890", "hostname": "ip-10-1-2-3"},
        "script": "node_limits",
        "status": "ok",
        "output": secrets.FREE_TEXT,
    }
    return [
        [result],
        {"i-0abc123def4567890": [result]},
        {"results": [result]},
        {"i-0abc123def4567890": result},
    ]


def _cloudwatch_candidates() -> list[Any]:
    event = {"timestamp": 1772449800000, "logStreamName": "i-0abc123def4567890", "message": secrets.FREE_TEXT}
    scan = {
        "log_group": "/aws/sagemaker/Clusters/ml-cluster-prod/abcd1234efgh",
        "found": True,
        "window_start": "2026-03-02T09:20:00Z",
        "window_end": "2026-03-02T11:20:00Z",
        "streams": [
            {
                "stream": "LifecycleConfig/workers/i-0abc123def4567890",
                "counts": {"nccl": 1},
                "sample": secrets.FREE_TEXT,
            }
        ],
    }
    return [scan, [scan], [event], {"events": [event]}]


def _cluster_event_candidates() -> list[Any]:
    snake = {
        "event_id": "e-1",
        "event_time": "2026-03-02T11:05:00Z",
        "resource_type": "Node",
        "description": secrets.FREE_TEXT,
    }
    event = {"EventId": "e-1", "EventTime": "2026-03-02T11:05:00Z", "Description": secrets.FREE_TEXT}
    return [[snake], [event], {"events": [event]}]


def optional_parts() -> dict[str, tuple[str, str, Any] | str]:
    """Per input kind: (container, field, planted value), or why it cannot be planted yet."""
    found: dict[str, tuple[str, str, Any] | str] = {}
    wanted = {
        "probe output": (("snapshot", Snapshot, "probe"), _probe_candidates()),
        "CloudWatch events": (("aws", AwsSnapshot, "cloudwatch"), _cloudwatch_candidates()),
        "cluster events": (("aws", AwsSnapshot, "event"), _cluster_event_candidates()),
    }
    for kind, ((container, model, word), candidates) in wanted.items():
        fields = [name for name in model.model_fields if word in name.lower()]
        fits = [
            (name, value)
            for name in fields
            if (value := _first_that_fits(model, name, candidates)) is not None
        ]
        found[kind] = (
            (container, *fits[0]) if fits else f"{model.__name__} has no {word} field that takes text yet"
        )
    return found


def planted_snapshot() -> Snapshot:
    snapshot = incident_snapshot(extra_env=secrets.POD_ENV)
    snapshot.kubernetes.pod_logs.append(
        PodLog(namespace="training", pod="llama-worker-9", container="pytorch", text=secrets.FREE_TEXT)
    )
    snapshot.kubernetes.events.append(
        {
            "metadata": {"name": "ev", "namespace": "training"},
            "reason": "Failed",
            "message": secrets.FREE_TEXT,
        }
    )
    snapshot.collection_issues.append(
        CollectionIssue(source="logs:FilterLogEvents", kind="error", message=secrets.FREE_TEXT)
    )
    data = snapshot.model_dump(mode="json")
    for part in optional_parts().values():
        if isinstance(part, tuple):
            container, field, value = part
            (data if container == "snapshot" else data["aws"])[field] = value
    return Snapshot.model_validate(data)


def planted_logs(root: Path) -> Path | None:
    """The example incident's logs with secrets on the lines triage quotes, or None before they land."""
    if not EXAMPLE_LOGS.is_dir():
        return None
    logs = root / "logs"
    shutil.copytree(EXAMPLE_LOGS, logs)
    tails = [line for line in secrets.FREE_TEXT_LINES if "-----" not in line]
    for path in sorted([*logs.glob("*.out"), *logs.glob("*.out.gz")]):
        packed = path.suffix == ".gz"
        raw = gzip.decompress(path.read_bytes()) if packed else path.read_bytes()
        lines = raw.decode("utf-8").splitlines()
        # Early in the line, after the words triage anchors on: a quoted line cut to fit the size
        # budget still carries it.
        for index, line in enumerate(lines):
            for anchor in ("Watchdog caught collective operation timeout:", "Received a dump signal"):
                if anchor in line:
                    lines[index] = line.replace(anchor, f"{anchor} {tails[index % len(tails)]}", 1)
        prefix = [f"0: {line}" for line in secrets.FREE_TEXT_LINES]
        text = ("\n".join([*prefix, *lines]) + "\n").encode("utf-8")
        path.write_bytes(gzip.compress(text) if packed else text)
    return logs


PROBE_RECORDINGS = Path(__file__).parents[1] / "probes" / "recorded"


def _with_section(output: str, name: str, body: str) -> str:
    marker = f"===== hyperpod-nccl:section {name} =====\n"
    start = output.index(marker) + len(marker)
    end = output.index("===== hyperpod-nccl:section ", start)
    return output[:start] + body + output[end:]


def planted_probe_outputs(root: Path) -> Path | None:
    """A recorded node_health output with secrets in its kernel log and env files, or None."""
    healthy, xid = PROBE_RECORDINGS / "healthy-p5.48xlarge.txt", PROBE_RECORDINGS / "kernel_log-xid79.txt"
    if not (healthy.is_file() and xid.is_file()):
        return None
    tails = [line for line in secrets.FREE_TEXT_LINES if "-----" not in line]
    kernel = [f"{line} {tails[n % len(tails)]}" for n, line in enumerate(xid.read_text().splitlines())]
    env_files = [f"/etc/environment:{line}" for line in secrets.FREE_TEXT_LINES]
    output = _with_section(
        healthy.read_text(), "kernel_log", "\n".join(kernel + secrets.FREE_TEXT_LINES) + "\n"
    )
    output = _with_section(output, "env_files", "\n".join(env_files) + "\n")
    directory = root / "probe-outputs"
    directory.mkdir()
    (directory / "i-0abc123def4567890.txt").write_text(output, encoding="utf-8")
    return directory


def triage_available() -> bool:
    try:
        from hyperpod_nccl.triage.engine import run_triage  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | None]:
    root = tmp_path_factory.mktemp("planted")
    (root / "report.json").write_text(planted_report().model_dump_json(), encoding="utf-8")
    # Written as is, not through Snapshot.save: the input must carry the secrets whatever save does.
    (root / "snapshot").mkdir()
    (root / "snapshot" / SNAPSHOT_FILE).write_text(planted_snapshot().model_dump_json(), encoding="utf-8")
    return {
        "root": root,
        "report": root / "report.json",
        "snapshot": root / "snapshot",
        "logs": planted_logs(root) if triage_available() else None,
        "probe_outputs": planted_probe_outputs(root),
    }


def test_the_inputs_really_carry_every_secret(planted: dict[str, Path | None]) -> None:
    """Otherwise the leak tests below would pass by planting nothing."""
    everything = set(secrets.NEEDLES)
    assert set(secrets.leaks(planted["report"].read_text())) == everything
    assert set(secrets.leaks((planted["snapshot"] / "snapshot.json").read_text())) == everything


@pytest.mark.parametrize("kind", ["probe output", "CloudWatch events", "cluster events"])
def test_every_snapshot_input_kind_is_planted(kind: str) -> None:
    part = optional_parts()[kind]
    if isinstance(part, str):
        pytest.skip(f"{kind}: {part}; planted automatically once the collector adds it")


# --- Outputs ----------------------------------------------------------------------------------


def assert_clean(label: str, output: str | bytes) -> None:
    found = secrets.leaks(output)
    assert not found, f"{label} leaks: {', '.join(found)}"


def bundle_members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def assert_bundle_clean(label: str, path: Path) -> None:
    assert_clean(f"{label} (compressed bytes)", path.read_bytes())
    members = bundle_members(path)
    assert members
    for name, data in members.items():
        assert_clean(f"{label}: {name}", data)
    assert MASK.encode() in members["hyperpod-nccl-escalation/snapshot.json"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, check=False)


def subcommands() -> set[str]:
    from hyperpod_nccl.cli import build_parser

    return set(next(a for a in build_parser()._actions if a.dest == "command").choices)


def test_no_cli_output_and_no_bundle_member_carries_a_planted_secret(planted: dict[str, Path | None]) -> None:
    root, report, snapshot, logs = planted["root"], planted["report"], planted["snapshot"], planted["logs"]
    runs = {
        "compare": cli("compare", str(report), str(report)),
        "compare --json": cli("compare", str(report), str(report), "--json"),
    }
    output = root / "cli-bundle.tar.gz"
    args = ["bundle", "--report", str(report), "--snapshot", str(snapshot), "-o", str(output)]
    runs["bundle"] = cli(*args, *(["--logs", str(logs)] if logs else []))
    if logs and "triage" in subcommands():
        runs["triage"] = cli("triage", str(logs))
        runs["triage --json"] = cli("triage", str(logs), "--json")
    if planted["probe_outputs"] and "probe" in subcommands():
        runs["probe --replay"] = cli("probe", "--replay", str(planted["probe_outputs"]))
        runs["probe --replay --json"] = cli("probe", "--replay", str(planted["probe_outputs"]), "--json")
    if "diagnose" in subcommands():
        runs["diagnose"] = cli("diagnose", "--bundle", str(snapshot))
        runs["diagnose --json"] = cli("diagnose", "--bundle", str(snapshot), "--json")
    for label, run in runs.items():
        assert run.returncode in (0, 1), f"{label}: {run.stderr}"
        assert_clean(f"`{label}` stdout", run.stdout)
        assert_clean(f"`{label}` stderr", run.stderr)
    assert MASK in runs["compare"].stdout  # the planted title reached the output, masked
    for label in ("probe --replay", "triage --json"):  # the planted lines are quoted as evidence, masked
        assert label not in runs or MASK in runs[label].stdout, label
    assert_bundle_clean("CLI bundle", output)
    if logs:
        assert "hyperpod-nccl-escalation/triage-report.json" in bundle_members(output)


def _tool_text(result: Any) -> str:
    texts = [getattr(item, "text", "") for item in result.content]
    return "\n".join(texts) + json.dumps(result.structured_content or {})


def _path_argument(tool: Any, word: str) -> str | None:
    return next((name for name in tool.input_schema.get("properties", {}) if word in name), None)


async def _diagnostic_calls(client: Client, planted: dict[str, Path | None]) -> dict[str, Any]:
    """The other engineers' tools, each fed its planted input once it exists."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    calls: dict[str, Any] = {}
    if planted["logs"] and "triage_logs" in tools:
        argument = _path_argument(tools["triage_logs"], "log") or "log_dir"
        calls["triage_logs"] = await client.call_tool("triage_logs", {argument: str(planted["logs"])})
    if "run_diagnostic" in tools and (argument := _path_argument(tools["run_diagnostic"], "bundle")):
        calls["run_diagnostic"] = await client.call_tool(
            "run_diagnostic", {argument: str(planted["snapshot"])}
        )
    return calls


@pytest.mark.anyio
async def test_no_mcp_tool_output_carries_a_planted_secret(planted: dict[str, Path | None]) -> None:
    root, report = planted["root"], planted["report"]
    inline = json.loads(report.read_text())
    output = root / "mcp-bundle.tar.gz"
    server = serve(root)
    async with Client(server) as client:
        calls = {
            "compare_reports": await client.call_tool(
                "compare_reports", {"previous": inline, "current": str(report)}
            ),
            "create_escalation_bundle": await client.call_tool(
                "create_escalation_bundle",
                {
                    "output_path": str(output),
                    "report": inline,
                    "snapshot_dir": str(planted["snapshot"]),
                    **({"log_dir": str(planted["logs"])} if planted["logs"] else {}),
                },
            ),
            **await _diagnostic_calls(client, planted),
        }
    for name, result in calls.items():
        assert not result.is_error, f"{name}: {_tool_text(result)[:500]}"
        assert_clean(f"MCP tool {name}", _tool_text(result))
    assert MASK in _tool_text(calls["create_escalation_bundle"])  # env and errors reached it, masked
    assert_bundle_clean("MCP bundle", output)
