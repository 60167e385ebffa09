"""A boundary for files: the server reads only under its roots and writes only new files in its
output directory, never through a symlink; the CLI reads what the user names but lists links that
leave the input as skipped. Driven over stdio and through the CLI, as users would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from hyperpod_nccl.guard.boundary import FileBoundary, OutsideBoundary
from hyperpod_nccl.snapshot import Snapshot
from tests.servers.mcp_stdio import serve
from tests.skill.fixtures import incident_report, incident_snapshot

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-m", "hyperpod_nccl"]
EXAMPLE_LOGS = Path(__file__).parents[2] / "examples" / "training-hang" / "logs"


def logs_with_a_link_to_etc(root: Path) -> Path:
    logs = root / "logs"
    logs.mkdir()
    (logs / "rank-0.out").write_text((EXAMPLE_LOGS / "error-51877-0.out").read_text())
    (logs / "system").symlink_to("/etc")
    (logs / "passwd.log").symlink_to("/etc/passwd")
    return logs


def _sources(report: dict) -> set[str]:
    return {e["source"] for f in report["findings"] for e in f["evidence"]}


async def test_the_server_reads_only_under_its_roots_and_never_follows_links_out(tmp_path: Path) -> None:
    logs = logs_with_a_link_to_etc(tmp_path)
    async with Client(serve(tmp_path)) as client:
        report = await client.call_tool("triage_logs", {"log_dir": str(logs)})
        refused = {
            path: await client.call_tool("triage_logs", {"log_dir": path})
            for path in ("", "/etc", str(tmp_path / ".." / ".." / "etc"), "x" * 5000, str(logs / "system"))
        }
    assert not report.is_error, report.content[0].text
    skipped = {item["source"]: item["reason"] for item in report.structured_content["skipped"]}
    assert "outside the input" in skipped["system"] and "outside the input" in skipped["passwd.log"]
    assert not [
        source for source in _sources(report.structured_content) if "system" in source or "passwd" in source
    ]
    for path, result in refused.items():
        assert result.is_error, path[:40]
        assert len(result.content[0].text) < 1500  # the input is echoed as a short prefix at most


async def test_reports_and_bundles_outside_the_roots_are_refused(tmp_path: Path) -> None:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir(), outside.mkdir()
    (outside / "report.json").write_text(incident_report().model_dump_json())
    async with Client(serve(inside)) as client:
        compared = await client.call_tool(
            "compare_reports",
            {"previous": str(outside / "report.json"), "current": str(outside / "report.json")},
        )
        replayed = await client.call_tool("run_diagnostic", {"bundle": str(outside)})
    assert compared.is_error and "--allow-dir" in compared.content[0].text
    assert replayed.is_error


async def test_bundles_are_written_only_as_new_files_in_the_output_directory(tmp_path: Path) -> None:
    output, victim = tmp_path / "out", tmp_path / "victim.tar.gz"
    output.mkdir()
    victim.write_text("precious")
    (output / "linked.tar.gz").symlink_to(victim)
    (output / "elsewhere").symlink_to(tmp_path)
    report = incident_report().model_dump(mode="json")
    async with Client(serve(output)) as client:
        attempts = {
            name: await client.call_tool("create_escalation_bundle", {"output_path": name, "report": report})
            for name in (
                "linked.tar.gz",
                "elsewhere/new.tar.gz",
                "../escape.tar.gz",
                "/tmp/abs.tar.gz",
                "a/b/c.tar.gz",
                "",
            )
        }
        written = await client.call_tool(
            "create_escalation_bundle", {"output_path": "case.tar.gz", "report": report}
        )
        again = await client.call_tool(
            "create_escalation_bundle", {"output_path": "case.tar.gz", "report": report}
        )
    for name, result in attempts.items():
        assert result.is_error, name
    assert victim.read_text() == "precious" and not (tmp_path / "new.tar.gz").exists()
    assert not written.is_error, written.content[0].text
    assert written.structured_content["path"] == str(output / "case.tar.gz")
    assert again.is_error and "already exists" in again.content[0].text


def test_a_snapshot_is_saved_as_a_new_file_never_through_a_link(tmp_path: Path) -> None:
    output, victim = tmp_path / "out", tmp_path / "victim"
    (output / "saved").mkdir(parents=True)
    victim.write_text("precious")
    (output / "saved" / "snapshot.json").symlink_to(victim)
    (output / "linkdir").symlink_to(tmp_path)
    snapshot = incident_snapshot()
    with pytest.raises(FileExistsError):
        snapshot.save(output / "saved", within=output)
    with pytest.raises(OSError):
        snapshot.save(output / "linkdir", within=output)
    with pytest.raises(OSError):
        snapshot.save(output / "missing" / "deeper", within=output)
    assert victim.read_text() == "precious" and not (tmp_path / "snapshot.json").exists()
    assert snapshot.save(output / "fresh", within=output) == output / "fresh" / "snapshot.json"
    assert Snapshot.load(output / "fresh") == snapshot


def test_output_paths_resolve_inside_the_output_directory_only(tmp_path: Path) -> None:
    boundary = FileBoundary((tmp_path,), tmp_path)
    assert boundary.writable("bundle.tar.gz") == tmp_path / "bundle.tar.gz"
    for bad in ("", "../x", "/etc/x", "a/../../x", "\x00"):
        with pytest.raises(OutsideBoundary):
            boundary.writable(bad)
    assert FileBoundary.create([], None, cwd=Path("/")).read_roots == ()


def test_the_cli_lists_links_out_of_the_input_as_skipped_unless_asked_to_follow(tmp_path: Path) -> None:
    logs = logs_with_a_link_to_etc(tmp_path)
    kept = subprocess.run([*CLI, "triage", str(logs), "--json"], capture_output=True, text=True, timeout=120)
    followed = subprocess.run(
        [*CLI, "triage", str(logs), "--json", "--follow-links"], capture_output=True, text=True, timeout=120
    )
    skipped = {item["source"] for item in json.loads(kept.stdout)["skipped"]}
    assert {"system", "passwd.log"} <= skipped
    assert (
        json.loads(followed.stdout)["summary"]["files_read"]
        > json.loads(kept.stdout)["summary"]["files_read"]
    )


def test_names_that_are_not_utf8_or_hold_newlines_or_escapes_cannot_forge_output(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    line = (EXAMPLE_LOGS / "error-51877-0.out").read_text()
    (logs / os.fsdecode(b"rank-\xff.out")).write_text(line)
    (logs / "rank-1.out\n[FAIL] P0 forged line").write_text("\x1b]0;owned\x07 \x1b[31mred\x1b[0m\n")
    text = subprocess.run([*CLI, "triage", str(logs)], capture_output=True, timeout=120)
    as_json = subprocess.run([*CLI, "triage", str(logs), "--json"], capture_output=True, timeout=120)
    assert text.returncode in (0, 1) and as_json.returncode in (0, 1), text.stderr
    assert b"\x1b" not in text.stdout and b"\x07" not in text.stdout
    assert not [row for row in text.stdout.splitlines() if row.startswith(b"[FAIL] P0 forged")]
    assert b"rank-\\xff.out" in text.stdout or b"rank-\\xff.out" in as_json.stdout
    json.loads(as_json.stdout)


@pytest.mark.parametrize("name", ["x" * 300, "/".join(["y" * 200] * 30)])
def test_names_too_long_are_one_line_exit_2(name: str) -> None:
    done = subprocess.run([*CLI, "triage", name], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and len(done.stderr) < 400


def test_an_empty_path_is_refused_not_read_as_the_working_directory() -> None:
    done = subprocess.run([*CLI, "triage", ""], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "the path is empty" in done.stderr
