"""The Slurm parsers and analyzers on probe output recorded in the wordings of Slurm 22.05, 23.11
and 24.11 (state spellings, `scontrol` fields, pending reasons, controller failures)."""

from __future__ import annotations

import anyio

from hyperpod_nccl.collect.slurm import collect_slurm
from hyperpod_nccl.models import BlastRadius, Priority, Status
from hyperpod_nccl.probes.runners.base import NodeTarget
from hyperpod_nccl.probes.runners.replay import ReplayRunner
from hyperpod_nccl.slurm.probe import snapshot_from_output
from hyperpod_nccl.slurm.service import slurm_report
from hyperpod_nccl.snapshot import Snapshot
from tests.slurm.helpers import RECORDED, commands, findings, only, recorded_report, recorded_snapshot

REPLACE = "scontrol update node={} state=fail reason=Action:Replace"


def test_22_05_states_reasons_and_gres_mismatch_are_parsed() -> None:
    slurm = recorded_snapshot("slurm-22.05.txt", job_id="4242").slurm
    assert slurm is not None and slurm.version == "22.05.8"
    nodes = {n.name: n for n in slurm.nodes}
    assert nodes["ip-10-1-1-12"].base == "IDLE" and nodes["ip-10-1-1-12"].flags == ["DRAIN"]
    assert nodes["ip-10-1-1-12"].reason == "gpu count reported lower than configured (7 < 8)"
    assert nodes["ip-10-1-1-12"].reason_stamp == "slurm@2024-05-01T10:00:00"
    assert (
        nodes["ip-10-1-1-14"].flags == ["NOT_RESPONDING"] and nodes["ip-10-1-1-14"].compact_state == "down*"
    )
    assert nodes["ip-10-1-1-11"].gres == "gpu:8" and nodes["ip-10-1-1-11"].reason is None
    assert slurm.job is not None and slurm.job.reason == "launch failed requeued held"
    assert slurm.job.exclusive is True and slurm.job.time_limit_s == 2 * 86400
    assert [j.name for j in slurm.jobs] == ["llama-70b-pretrain", "eval sweep|lr=3e-4"]
    assert slurm.jobs[1].nodes == ["ip-10-1-1-11", "ip-10-1-1-13"]


def test_22_05_gres_mismatch_is_p0_with_gpu_reference_and_replacement() -> None:
    report = recorded_report("slurm-22.05.txt", job_id="4242")
    gres = only(report, "slurm.node.gres_mismatch")
    assert (gres.status, gres.priority, gres.reference) == (
        Status.FAIL,
        Priority.P0,
        "debugging-guide.md § 5",
    )
    assert gres.nodes == ["ip-10-1-1-12"] and "GPU" in gres.detail
    assert REPLACE.format("ip-10-1-1-12") in commands(gres)
    down = only(report, "slurm.node.down")
    assert down.nodes == ["ip-10-1-1-14"] and down.priority == Priority.P0
    assert "Not responding" in down.title and down.reference == "operations.md § 7"


def test_22_05_held_job_is_p0_and_a_compliant_script_passes() -> None:
    report = recorded_report("slurm-22.05.txt", job_id="4242")
    held = only(report, "slurm.job.launch_failed_held")
    assert held.priority == Priority.P0 and "scontrol release 4242" in commands(held)
    assert not [f for f in report.findings if f.id.startswith("slurm.batch_script.")]
    assert not [f for f in report.findings if f.id.startswith("slurm.host.") and f.is_issue]
    assert len(only(report, "slurm.host.nccl_env").evidence) == 2
    assert only(report, "slurm.controller.up").status == Status.PASS


def test_23_11_backup_controller_draining_reboot_and_not_responding() -> None:
    report = recorded_report("slurm-23.11.txt", job_id="5150")
    backup = only(report, "slurm.controller.backup_down")
    assert backup.nodes == ["ip-10-2-0-6"] and backup.priority == Priority.P2
    draining = only(report, "slurm.node.draining")
    assert draining.nodes == ["ip-10-2-4-22"] and draining.priority == Priority.P1
    assert "reboot pending" in draining.detail and "squeue -w ip-10-2-4-22" in commands(draining)
    silent = only(report, "slurm.node.not_responding")
    assert silent.nodes == ["ip-10-2-4-23"] and "Kill task failed" in silent.title
    assert silent.priority == Priority.P0 and "hung GPU" in silent.detail
    # A node in a maintenance reservation is not a fault.
    assert "ip-10-2-4-24" not in {n for f in report.findings if f.is_issue for n in f.nodes}


def test_23_11_batch_script_breaks_each_auto_resume_rule() -> None:
    report = recorded_report("slurm-23.11.txt", job_id="5150")
    main_step = only(report, "slurm.batch_script.auto_resume_not_on_main_step")
    assert main_step.evidence[0].line == 8 and main_step.evidence[0].text.startswith("srun python")
    stale = only(report, "slurm.batch_script.stale_nodelist")
    assert stale.evidence[0].line == 5 and stale.priority == Priority.P1
    assert only(report, "slurm.batch_script.not_exclusive").status == Status.WARN
    assert "scontrol write batch_script 5150 -" in commands(stale)
    on_bad = only(report, "slurm.job.on_unusable_node")
    assert on_bad.priority == Priority.P1 and "ip-10-2-4-22" in on_bad.title  # draining only
    assert only(report, "slurm.job.near_time_limit").priority == Priority.P2


def test_23_11_host_files_memlock_removeipc_and_tcp() -> None:
    report = recorded_report("slurm-23.11.txt", job_id="5150")
    memlock = findings(report, "slurm.host.memlock_limited")
    assert [f.evidence[0].line for f in memlock] == [55, 56]
    assert memlock[0].reference == "debugging-guide.md § 17"
    assert only(report, "slurm.host.remove_ipc").evidence[0].source == "/etc/systemd/logind.conf"
    tcp = only(report, "slurm.host.tcp_transport_forced")
    assert tcp.reference == "debugging-guide.md § 13" and tcp.evidence[0].text == "export FI_PROVIDER=tcp"


def test_23_11_pending_job_on_unavailable_node_without_job_filter() -> None:
    report = recorded_report("slurm-23.11.txt")
    pending = only(report, "slurm.job.nodes_unavailable")
    assert "5151" in pending.title and pending.nodes == ["ip-10-2-4-23"]
    assert not [f for f in report.findings if f.id.startswith("slurm.batch_script.")]


def test_24_11_replacement_in_flight_gets_no_state_changes() -> None:
    report = recorded_report("slurm-24.11.txt")
    fail = next(f for f in findings(report, "slurm.node.fail") if f.nodes == ["ip-10-3-8-33"])
    assert fail.priority == Priority.P0 and "do not change its state" in fail.detail
    assert {c.blast_radius for c in fail.suggested_commands} == {BlastRadius.READ_ONLY}


def test_24_11_failing_node_gets_replace_and_last_resort_down() -> None:
    report = recorded_report("slurm-24.11.txt")
    failing = only(report, "slurm.node.failing")
    assert failing.nodes == ["ip-10-3-8-34"] and "Prolog error" in failing.title
    cmds = commands(failing)
    assert REPLACE.format("ip-10-3-8-34") in cmds
    assert "sudo scontrol update node=ip-10-3-8-34 state=down reason=Action:Replace" in cmds
    down = next(c for c in failing.suggested_commands if "state=down" in c.command)
    assert down.blast_radius == BlastRadius.REPLACES_NODE and "kills every job" in down.why
    drained = only(report, "slurm.node.drained")
    assert drained.nodes == ["ip-10-3-8-32"] and "memory" in drained.detail
    assert "scontrol update nodename=ip-10-3-8-32 state=resume" in commands(drained)


def test_24_11_jobs_timeout_and_running_on_failing_node() -> None:
    report = recorded_report("slurm-24.11.txt")
    timeout = only(report, "slurm.job.timeout")
    assert "7000" in timeout.title and timeout.reference == "debugging-guide.md § 16"
    on_bad = only(report, "slurm.job.on_unusable_node")
    assert "7001" in on_bad.title and on_bad.priority == Priority.P0
    assert report.blocking


def test_controller_down_is_p0_and_munge_failure_is_reported() -> None:
    report = recorded_report("controller-down-24.11.txt", job_id="7001")
    down = only(report, "slurm.controller.down")
    assert (down.priority, down.reference) == (Priority.P0, "operations.md § 7")
    assert "ip-10-3-0-4" in down.title and "is DOWN" in down.evidence[0].text
    assert only(report, "slurm.controller.munge").priority == Priority.P0
    assert not findings(report, "slurm.job.not_found")


def test_sinfo_reason_lines_back_each_node_finding() -> None:
    down = only(recorded_report("slurm-22.05.txt"), "slurm.node.down")
    sinfo = [e.text for e in down.evidence if e.source == "sinfo -R"]
    assert sinfo == ["Not responding       slurm     2024-05-01T10:02:11 ip-10-1-1-14"]


def _with_section(name: str, section: str, body: str) -> str:
    return _replace_section((RECORDED / name).read_text(encoding="utf-8"), section, body)


def _replace_section(text: str, section: str, body: str) -> str:
    start = text.index(f"section {section} =====")
    start = text.index("\n", start) + 1
    end = text.index("##### exit", start)
    return text[:start] + body + text[text.index("\n", end) + 1 :]


def test_nodes_come_from_sinfo_when_scontrol_show_node_fails() -> None:
    output = _with_section(
        "slurm-22.05.txt",
        "nodes",
        "slurm_load_node error: Socket timed out on send/recv operation\n##### exit 1\n",
    )
    slurm = snapshot_from_output(output, job_id="4242", source="replay")
    assert {n.name: n.reason for n in slurm.nodes}["ip-10-1-1-14"] == "Not responding"
    report = slurm_report(Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm))
    assert only(report, "slurm.node.gres_mismatch").nodes == ["ip-10-1-1-12"]
    assert "nodes" in slurm.command_errors


def test_an_unreadable_batch_script_is_said_not_silently_passed() -> None:
    output = _with_section(
        "slurm-22.05.txt", "batch_script", "Access/permission denied for job 4242\n##### exit 1\n"
    )
    slurm = snapshot_from_output(output, job_id="4242", source="replay")
    report = slurm_report(Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm))
    unreadable = only(report, "slurm.batch_script.unreadable")
    assert "permission denied" in unreadable.evidence[0].text


def test_a_job_slurmctld_forgot_is_read_from_sacct() -> None:
    output = _with_section(
        "slurm-22.05.txt", "job", "slurm_load_jobs error: Invalid job id specified\n##### exit 1\n"
    )
    sacct = "4242|llama-70b-pretrain|NODE_FAIL|0:0|05:10:00|2-00:00:00|ip-10-1-1-[12,14]|None\n"
    sacct += "4242.batch|batch|CANCELLED|0:15|05:10:00||ip-10-1-1-12|\n##### exit 0\n"
    output = _replace_section(output, "sacct", sacct)
    slurm = snapshot_from_output(output, job_id="4242", source="replay")
    report = slurm_report(Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm))
    node_fail = only(report, "slurm.job.node_fail")
    assert node_fail.evidence[0].source == "sacct" and node_fail.nodes == ["ip-10-1-1-12", "ip-10-1-1-14"]
    assert node_fail.reference == "debugging-guide.md § 16"
    assert not findings(report, "slurm.job.not_found")


def test_a_kubernetes_job_name_is_not_sent_to_slurm() -> None:
    runner = ReplayRunner({"local": (RECORDED / "slurm-22.05.txt").read_text(encoding="utf-8")})
    slurm, issues = anyio.run(
        lambda: collect_slurm(runner, NodeTarget(hostname="ctl"), job_id="llama-pretrain")
    )
    assert slurm is not None and slurm.job_id is None and slurm.job is None
    assert issues[0].kind == "skipped" and "not a Slurm job id" in issues[0].message


def test_a_node_configured_with_fewer_gpus_than_its_partition_is_flagged() -> None:
    assert not findings(recorded_report("slurm-22.05.txt"), "slurm.node.gres_uneven")
    text = (RECORDED / "slurm-22.05.txt").read_text(encoding="utf-8")
    text = text.replace("Gres=gpu:8 NodeAddr=10.1.1.13", "Gres=gpu:7 NodeAddr=10.1.1.13")
    slurm = snapshot_from_output(text, source="replay")
    report = slurm_report(Snapshot(collected_at="2026-01-01T00:00:00Z", orchestrator="slurm", slurm=slurm))
    uneven = only(report, "slurm.node.gres_uneven")
    assert uneven.nodes == ["ip-10-1-1-13"] and "dev" in uneven.title and "8 GPUs" in uneven.title
