"""Every FAIL and WARN the product can emit says what to run next (issue 14 item 1): commands from
the section it points at, or the reason none applies.

The findings are read from the source (`emitted.py`): triage meanings and rules, Flight Recorder
findings, metrics findings and the cluster analyzers. Each gets the catalogue's commands three
times — knowing nothing, knowing everything on a Slurm cluster, knowing everything elsewhere —
and each command's program and subcommand must be one its section shows.
"""

from __future__ import annotations

import re

import pytest

from hyperpod_nccl.models import Finding, Priority, Status
from hyperpod_nccl.next_steps import Facts, Quoted, commands_for
from hyperpod_nccl.next_steps.catalogue import ID_STEPS, REASONS, SECTION_REASONS, SECTION_STEPS
from tests.next_steps.emitted import Declared, declared_findings
from tests.next_steps.sections import unshown

KNOWING_NOTHING = Facts()
_EVERYTHING = {
    "job_id": "4242",
    "cluster": "ml-cluster",
    "region": "us-west-2",
    "nodes": ("ip-10-1-0-15",),
    "ranks": (43,),
    "pids": {43: 41213},
    "instance_ids": {"ip-10-1-0-15": "i-0abc123def4567890"},
    "pods": (("training", "llama-worker-5"),),
    "port": "29500",
    "store_host": "ip-10-1-0-10",
    "quoted": (Quoted("error-4242-5.out", 1504), Quoted("node-logs/ip-10-1-0-15.dmesg", 7)),
}
ON_SLURM = Facts(slurm=True, **_EVERYTHING)  # type: ignore[arg-type]
ELSEWHERE = Facts(slurm=False, **_EVERYTHING)  # type: ignore[arg-type]

ISSUES = [d for d in declared_findings() if d.is_issue]


def _finding(declared: Declared) -> Finding:
    status = declared.status if declared.status in (Status.FAIL, Status.WARN) else Status.FAIL
    return Finding(
        id=declared.id.replace("*", "x"),
        status=status,
        priority=Priority.P0,
        title="t",
        reference=declared.reference,
    )


def test_the_source_declares_the_findings_of_every_part_of_the_product() -> None:
    prefixes = {d.id.split(".", 1)[0] for d in ISSUES}
    assert {"triage", "flight_recorder", "metrics", "node", "k8s", "slurm", "hyperpod", "aws"} <= prefixes
    assert len(ISSUES) > 150


@pytest.mark.parametrize("declared", ISSUES, ids=lambda d: f"{d.id}@{d.where}")
def test_each_finding_has_commands_from_its_section_or_a_reason(declared: Declared) -> None:
    finding = _finding(declared)
    for facts in (KNOWING_NOTHING, ON_SLURM, ELSEWHERE):
        commands = commands_for(finding, facts)
        has_reason = finding.id in REASONS or declared.reference in SECTION_REASONS
        assert commands or has_reason, f"{declared}: no command and no reason"
        for command in commands:
            assert unshown(command.command, declared.reference) == [], (
                f"{declared.id}: `{command.command}` is not shown in {declared.reference}"
            )


def test_the_catalogue_names_only_sections_and_findings_that_exist() -> None:
    from hyperpod_nccl.references import default_index

    index = default_index()
    for pointer in [*SECTION_STEPS, *SECTION_REASONS]:
        index.resolve(pointer)
    declared = {d.id for d in declared_findings()}
    stale = [key for key in [*ID_STEPS, *REASONS] if key not in declared and key != "triage.unknown.failure"]
    assert stale == []


def test_values_the_facts_hold_fill_the_commands() -> None:
    finding = Finding(
        id="triage.nccl.straggler",
        status=Status.FAIL,
        priority=Priority.P0,
        title="t",
        reference="debugging-guide.md § 1",
    )
    texts = [c.command for c in commands_for(finding, ON_SLURM)]
    assert "sacct -j 4242 --format=JobID,State,ExitCode,Elapsed,NodeList" in texts
    assert "ssh ip-10-1-0-15 sudo py-spy dump --pid 41213" in texts
    # The one value no log holds: the directory every node shares, for the next run's dumps.
    assert [re.findall(r"<[\w-]+>", text) for text in texts] == [[], [], ["<shared-dir>"]], texts


def test_read_only_commands_come_before_fixes() -> None:
    from hyperpod_nccl.models import BlastRadius
    from hyperpod_nccl.next_steps import read_only_first

    finding = Finding(
        id="triage.gpu.xid_79",
        status=Status.FAIL,
        priority=Priority.P0,
        title="t",
        reference="debugging-guide.md § 5",
    )
    ordered = read_only_first(list(reversed(commands_for(finding, ON_SLURM))))
    radii = [c.blast_radius for c in ordered]
    assert radii[0] == BlastRadius.READ_ONLY and radii[-1] == BlastRadius.DRAINS_OR_REBOOTS_NODE


def test_an_outside_value_that_fails_its_check_is_a_placeholder_never_a_shell_word() -> None:
    hostile = Facts(slurm=True, job_id="42; rm -rf /", nodes=("$(reboot)",), ranks=(1,), pids={1: -5})
    finding = Finding(
        id="triage.nccl.straggler",
        status=Status.FAIL,
        priority=Priority.P0,
        title="t",
        reference="debugging-guide.md § 1",
    )
    for command in commands_for(finding, hostile):
        assert "rm -rf" not in command.command and "$(reboot)" not in command.command
    texts = " ".join(c.command for c in commands_for(finding, hostile))
    assert "<job-id>" in texts and "<node>" in texts
