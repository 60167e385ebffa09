from __future__ import annotations

import io
import json

import pytest

from hyperpod_nccl.models import (
    BlastRadius,
    Category,
    Evidence,
    Finding,
    Priority,
    Report,
    RootCause,
    Status,
    SuggestedCommand,
)
from hyperpod_nccl.render import render_json, render_text, use_color


def sample_report() -> Report:
    return Report.build(
        "triage",
        [
            Finding(
                id="nccl.watchdog.straggler",
                status=Status.FAIL,
                priority=Priority.P0,
                title="Rank 77 never entered the collective that timed out",
                reference="debugging-guide.md § 1",
                ranks=[77],
                nodes=["ip-10-1-2-3"],
                evidence=[
                    Evidence(
                        source="error-1234-9.out",
                        line=4521,
                        text="export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
                    )
                ],
                suggested_commands=[
                    SuggestedCommand(
                        command="kubectl describe pod llama-worker-9 -n training",
                        why="see why the data loader stalled",
                        blast_radius=BlastRadius.READ_ONLY,
                        permission="pods: get",
                    )
                ],
            ),
            Finding(id="nccl.version.consistent", status=Status.PASS, title="One NCCL version on every rank"),
        ],
        files_read=2,
        ranks_seen=128,
        root_cause=RootCause(
            category=Category.DATA_LOADING_STALL,
            summary="rank 77 stalled in its data loader",
            culprit_ranks=[77],
            culprit_nodes=["ip-10-1-2-3"],
            chain=["rank 77 stopped enqueuing", "→ 127 ranks waited in ALLREDUCE", "→ watchdog abort"],
            confidence="high",
        ),
    )


def test_text_report_uses_the_operator_vocabulary() -> None:
    text = render_text(sample_report())
    assert "[FAIL] P0 Rank 77 never entered the collective that timed out" in text
    assert "→ references/debugging-guide.md § 1" in text
    assert "[PASS] One NCCL version on every rank" in text
    assert "Suggested command (run this yourself):" in text
    assert "$ kubectl describe pod llama-worker-9 -n training" in text
    assert "Issues Found: 1" in text
    assert "P0 (blocks training): 1" in text
    assert "P1 (degraded): 0" in text
    assert "P2 (informational): 0" in text
    assert "\033[" not in text


def test_both_renderers_redact_secrets() -> None:
    report = sample_report()
    assert "hf_abcdefghij" not in render_text(report)
    assert "hf_abcdefghij" not in render_json(report)
    assert "[REDACTED]" in json.loads(render_json(report))["findings"][0]["evidence"][0]["text"]


def test_color_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_color(Terminal())
    assert not use_color(io.StringIO())  # a pipe
    monkeypatch.setenv("TERM", "dumb")
    assert not use_color(Terminal())
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Terminal())


def test_colored_text_marks_the_status_tag() -> None:
    assert "\033[31m[FAIL]\033[0m P0" in render_text(sample_report(), color=True)


def test_text_report_shows_the_job_and_every_ranks_state() -> None:
    from hyperpod_nccl.models import JobSummary, RankStateGroup, VersionGroup

    report = sample_report().model_copy(
        update={
            "job": JobSummary(
                framework="PyTorch",
                world_size=128,
                nodes=16,
                ranks_per_node=8,
                versions=[VersionGroup(node_count=16, nccl="2.27.3")],
            ),
            "rank_states": [
                RankStateGroup(
                    ranks="77",
                    count=1,
                    state="outside NCCL",
                    watchdog="notified",
                    last_enqueued=450,
                    last_completed=450,
                    nodes=["ip-10-1-2-3"],
                ),
                RankStateGroup(
                    ranks="0-76,78-127", count=127, state="waiting", watchdog="fired", op="ALLREDUCE", seq=451
                ),
            ],
        }
    )
    text = render_text(report)
    assert "Job: framework PyTorch, world size 128, 16 nodes, 8 ranks per node" in text
    assert "versions on 16 nodes: NCCL 2.27.3" in text
    assert (
        "ranks 77 (1) on ip-10-1-2-3: outside NCCL; watchdog notified (last enqueued 450, last completed 450)"
        in text
    )
    assert "ranks 0-76,78-127 (127): waiting; ALLREDUCE SeqNum 451 watchdog fired" in text
