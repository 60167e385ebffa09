"""Slurm's vocabulary: state spellings and flags, reasons, host lists and durations, and the
auto-resume checks of a batch script, each on the forms Slurm and HyperPod users write."""

from __future__ import annotations

import pytest

from hyperpod_nccl.slurm.batch_script import host_setting_issues, script_issues
from hyperpod_nccl.slurm.hostlist import duration_seconds, expand_hostlist
from hyperpod_nccl.slurm.parse import job_reason, parse_ping, split_sections
from hyperpod_nccl.slurm.service import SlurmUnavailable, raise_if_not_slurm_host
from hyperpod_nccl.slurm.states import parse_state, reason_meaning
from hyperpod_nccl.snapshot.slurm import HostSetting


@pytest.mark.parametrize(
    ("text", "condition", "flags"),
    [
        ("IDLE+DRAIN", "drained", {"DRAIN"}),
        ("MIXED+DRAIN", "draining", {"DRAIN"}),
        ("drng@", "draining", {"DRAIN", "REBOOT_REQUESTED"}),
        ("DOWN*", "down", {"NOT_RESPONDING"}),
        ("DOWN+NOT_RESPONDING", "down", {"NOT_RESPONDING"}),
        ("drained*", "drained", {"DRAIN", "NOT_RESPONDING"}),
        ("failg", "failing", {"FAIL"}),
        ("IDLE+FAIL", "fail", {"FAIL"}),
        ("idle~", "idle", {"POWERED_DOWN"}),
        ("mix-", "mixed", {"PLANNED"}),
        ("idle$", "idle", {"MAINTENANCE"}),
        ("IDLE#", "idle", {"POWERING_UP"}),
        ("alloc^", "allocated", {"REBOOT_ISSUED"}),
    ],
)
def test_both_state_spellings_reduce_to_one_condition(text: str, condition: str, flags: set[str]) -> None:
    state = parse_state(text)
    assert state.condition == condition and set(state.flags) == flags


def test_healthy_states_are_usable_and_faults_are_not() -> None:
    assert not parse_state("MIXED").unusable and not parse_state("idle$").unusable
    assert parse_state("IDLE*").unusable and parse_state("drain").unusable


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("gpu count reported lower than configured (7 < 8)", "gres_mismatch"),
        ("Kill task failed", "kill_task_failed"),
        ("Not responding", "not_responding"),
        ("Low RealMemory (reported:1900000 < 100.00% of configured:2000000)", "low_real_memory"),
        ("Action:Replace", "replacement_requested"),
        ("Epilog error", "prolog_epilog_error"),
    ],
)
def test_slurmctld_reasons_have_a_meaning(reason: str, kind: str) -> None:
    meaning = reason_meaning(reason)
    assert meaning is not None and meaning.kind == kind


def test_host_lists_and_durations() -> None:
    assert expand_hostlist("ip-10-1-2-[3-5,9],n[08-09]") == [
        "ip-10-1-2-3",
        "ip-10-1-2-4",
        "ip-10-1-2-5",
        "ip-10-1-2-9",
        "n08",
        "n09",
    ]
    assert expand_hostlist("(null)") == [] and expand_hostlist("") == []
    assert duration_seconds("1-02:03:04") == 93784 and duration_seconds("45:00") == 2700
    assert duration_seconds("2-00") == 172800 and duration_seconds("UNLIMITED") is None


def test_scontrol_and_squeue_spell_a_reason_alike() -> None:
    assert job_reason("launch_failed_requeued_held") == job_reason("launch failed requeued held")
    assert job_reason("None") is None


def test_ping_with_backups_and_a_section_cut_off_by_a_timeout() -> None:
    pings = parse_ping("Slurmctld(primary) at ctl-a is UP\nSlurmctld(backup1) at ctl-b is DOWN\n")
    assert [(p.role, p.host, p.up) for p in pings] == [
        ("primary", "ctl-a", True),
        ("backup1", "ctl-b", False),
    ]
    sections = split_sections("===== hyperpod-nccl:section nodes =====\nNodeName=a State=IDLE\n")
    assert sections["nodes"].exit_code is None and not sections["nodes"].failed


def test_the_seed_002_script_passes_every_auto_resume_rule() -> None:
    script = """#!/bin/bash
#SBATCH --nodes 2
#SBATCH --exclusive
NODE_LIST=$(scontrol show jobid=$SLURM_JOBID | awk -F= '/NodeList=/{print $2}' | grep -v Exc)
srun --auto-resume=1 train_auto_resume.sh
"""
    assert script_issues(script, exclusive=None) == []


def test_a_comment_or_an_echo_is_not_an_srun_step() -> None:
    script = "#!/bin/bash\n# srun --auto-resume=1 is what we want\necho done\n"
    assert [i.check for i in script_issues(script, exclusive=True)] == ["no_srun"]


def test_auto_resume_on_a_setup_step_only_is_flagged_on_the_launch_line() -> None:
    script = "srun --auto-resume 1 setup.sh\nsrun \\\n  torchrun train.py\n"
    issue = script_issues(script, exclusive=True)[0]
    assert issue.check == "auto_resume_not_on_main_step" and issue.line == 2


def test_memlock_ipc_and_tcp_in_host_files() -> None:
    settings = [
        HostSetting(path="/etc/security/limits.conf", line=3, text="* hard memlock unlimited"),
        HostSetting(path="/etc/security/limits.d/90.conf", line=1, text="* soft memlock 64"),
        HostSetting(path="/etc/systemd/logind.conf", line=4, text="RemoveIPC=yes"),
        HostSetting(path="/opt/slurm/etc/prolog.sh", line=9, text='export NCCL_NET="Socket"'),
    ]
    issues = host_setting_issues(settings, ["/etc/systemd/logind.conf"])
    assert [(i.check, i.source, i.line) for i in issues] == [
        ("memlock_limited", "/etc/security/limits.d/90.conf", 1),
        ("remove_ipc", "/etc/systemd/logind.conf", 4),
        ("tcp_transport_forced", "/opt/slurm/etc/prolog.sh", 9),
    ]
    fixed = [HostSetting(path="/etc/systemd/logind.conf", line=4, text="RemoveIPC=no")]
    assert host_setting_issues(fixed, ["/etc/systemd/logind.conf"]) == []


@pytest.mark.parametrize(
    "ping_error",
    [
        "bash: line 1: scontrol: command not found",
        "timeout: failed to run command ‘scontrol’: No such file or directory",
        "timeout: can't execute 'scontrol': No such file or directory",
    ],
    ids=["shell", "coreutils-timeout", "busybox-timeout"],
)
def test_a_host_without_slurm_says_so_instead_of_reporting_on_itself(ping_error: str) -> None:
    with pytest.raises(SlurmUnavailable, match="scontrol is not installed on this host"):
        raise_if_not_slurm_host(ping_error)
