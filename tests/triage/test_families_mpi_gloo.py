"""Families from held-out set 19 (MPI, UCX, gloo and small setups), each tested in wordings other
than the pasted case's: gloo's own timeout and interface errors, Open MPI's TCP transport on the
wrong interface and its daemons of another version, UCX / UCC transports that would not set up, and
a PyTorch without NCCL (or without a GPU) asked for NCCL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.models import Category
from hyperpod_nccl.render import render_text
from tests.triage.test_families import cause, commands_of, describe, root_finding, triage


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] Timed out "
            "waiting 600000ms for send operation to complete\n",
            ("unknown", "triage.unknown.gloo_timeout"),
        ),
        (
            "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
            "nullptr. Unable to find address for: eth1\n",
            ("config", "triage.config.gloo_interface"),
        ),
    ],
)
def test_gloos_own_failures_are_a_peer_waited_for_or_an_interface_not_found(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"worker.log": text})
    assert root_finding(report) == expected, describe(report)
    assert report.blocking


@pytest.mark.parametrize(
    "line",
    [
        "[node-2][[4711,1],3][btl_tcp_endpoint.c:638:mca_btl_tcp_endpoint_recv_connect_ack] received "
        "unexpected process identifier [[4711,1],0]",
        "WARNING: Open MPI accepted a TCP connection from what appears to be a another Open MPI process but "
        "cannot find a corresponding process entry for that peer.",
        "[gpu01][[123,1],0][btl_tcp_endpoint.c:803:mca_btl_tcp_endpoint_complete_connect] connect() to "
        "172.17.0.1 failed: Connection refused (111)",
    ],
)
def test_open_mpis_tcp_transport_on_the_wrong_interface_is_configuration(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"mpirun.out": f"{line}\n"})
    assert root_finding(report) == ("config", "triage.config.mpi_tcp_interface"), describe(report)


@pytest.mark.parametrize(
    "line", ['orted: Error: unknown option "--tree-spawn"', '[node2:01234] Error: unknown option "--hnp-uri"']
)
def test_an_open_mpi_daemon_refusing_mpiruns_option_is_two_versions(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"launch.log": f"{line}\n"})
    assert root_finding(report) == ("software", "triage.software.mpi_version_skew"), describe(report)
    assert "mpirun --version" in commands_of(report, "triage.software.mpi_version_skew")


def test_an_unknown_option_of_the_training_script_is_not_open_mpi(tmp_path: Path) -> None:
    report = triage(tmp_path, {"launch.log": 'Error: unknown option "--epochs"\n'})
    assert not any(f.id == "triage.software.mpi_version_skew" for f in report.findings), describe(report)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("RuntimeError: Distributed package doesn't have NCCL built in", "triage.config.nccl_not_built"),
        (
            "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
            "triage.config.nccl_without_gpu",
        ),
    ],
)
def test_nccl_asked_of_a_pytorch_without_it_or_a_process_without_a_gpu(
    tmp_path: Path, line: str, expected: str
) -> None:
    report = triage(tmp_path, {"train.log": f"Traceback (most recent call last):\n{line}\n"})
    assert root_finding(report) == ("config", expected), describe(report)
    assert "is_nccl_available()" in commands_of(report, expected)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[1700000000.123456] [gpu3:4242:0]       ib_iface.c:1010 UCX  ERROR ibv_create_cq(cqe=4096) "
            "failed: Cannot allocate memory",
            ("software", "triage.software.ucx_setup"),
        ),
        (
            "[1700000000.123456] [gpu3:4242:0]  ucc_tl.c:96   UCC  DEBUG TL cuda context create failed",
            ("software", "triage.software.ucx_setup"),
        ),
        (
            "[1700000000.123456] [gpu3:4242:0]  rc_mlx5_iface.c:231 UCX  ERROR send completion with error: "
            "transport retry counter exceeded",
            ("network", "triage.network.ucx_error"),
        ),
    ],
)
def test_ucx_and_ucc_lines_say_whether_a_transport_would_not_set_up(
    tmp_path: Path, line: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"rank1.log": f"{line}\n"})
    assert root_finding(report) == expected, describe(report)


def test_a_ucx_debug_line_about_a_retried_step_is_not_a_failure(tmp_path: Path) -> None:
    line = "[1700000000.123456] [gpu3:4242:0]  ucp_ep.c:1500 UCX  DEBUG ep 0x1 flush failed, retrying later\n"
    report = triage(tmp_path, {"rank1.log": line})
    assert report.root_cause is None and not report.blocking, describe(report)


# --- Horovod after a rank has gone ---------------------------------------------------------------------

_HOROVOD_SHUT_DOWN = (
    "Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to "
    "allreduce, allgather or broadcast a tensor after one of the ranks finished execution."
)


@pytest.mark.parametrize(
    "framing",
    [
        lambda rank: f"[1,{rank}]<stderr>:{_HOROVOD_SHUT_DOWN}",
        lambda rank: (
            f"[1,{rank}]<stderr>:tensorflow.python.framework.errors_impl.FailedPreconditionError: "
            f"{_HOROVOD_SHUT_DOWN}"
        ),
        lambda rank: f"[rank{rank}]: horovod.common.exceptions.HorovodInternalError: {_HOROVOD_SHUT_DOWN}",
    ],
    ids=["mpirun-bare", "tensorflow-exception", "torch-exception"],
)
def test_horovod_shut_down_is_a_rank_that_left_not_the_ranks_that_print_it(tmp_path: Path, framing) -> None:
    left = "[1,0]<stdout>:INFO:tensorflow:Early stopping conditions are met. Exiting.\n"
    text = left + "".join(framing(rank) + "\n" for rank in (1, 2, 3))
    report = triage(tmp_path, {"horovod.log": text})
    expected = ("collective_mismatch", "triage.collective.horovod_shutdown")
    assert root_finding(report) == expected, describe(report)
    assert report.root_cause is not None and report.root_cause.culprit_ranks == []
    (finding,) = [f for f in report.findings if f.id == "triage.collective.horovod_shutdown"]
    assert finding.no_command_reason and "broadcast" in finding.no_command_reason
    # without the rank that left, its log may hold an exception: not established
    report = triage(tmp_path, {"horovod.log": text.replace(left, "")})
    assert root_finding(report) == ("unknown", "triage.collective.horovod_shutdown"), describe(report)
    assert report.root_cause is not None and "ranks 0 left no line" in report.root_cause.summary
    assert "world size at least 4 (the highest rank seen" in render_text(report)


def test_horovod_shut_down_after_a_ranks_own_exception_names_that_rank(tmp_path: Path) -> None:
    text = (
        "[1,0]<stderr>:Traceback (most recent call last):\n"
        "[1,0]<stderr>:ValueError: batch 812 has no labels\n"
        + "".join(f"[1,{rank}]<stderr>:{_HOROVOD_SHUT_DOWN}\n" for rank in (1, 2, 3))
    )
    report = triage(tmp_path, {"horovod.log": text})
    assert cause(report)[:2] == (Category.SOFTWARE, [0]), describe(report)
