"""Families of wording from held-out set 40 (issue 16, logs from threads not in the corpus): a socket
given an address it cannot use (errno 99, `Cannot assign requested address`), and nn.DataParallel
gathering replicas' outputs of different shapes. Each is tested in wordings other than the pasted
case's, with the near misses that must stay what they are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.test_families import commands_of, describe, root_finding, triage


@pytest.mark.parametrize(
    "lines",
    [
        [
            "[W socket.cpp:436] [c10d] The server socket has failed to bind to 10.1.2.3:29500 (errno: 99 - "
            "Cannot assign requested address).",
            "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
            "address. The server socket has failed to bind to 10.1.2.3:29500 (errno: 99 - Cannot assign "
            "requested address).",
        ],
        ["[12:00:01] src/rpc/network/tcp_socket.cc:69: Failed bind on 10.0.3.7:30050, errno=99"],
        ["E1002 10:11:12.000 server.cc:88] listen(): EADDRNOTAVAIL for 192.168.1.20:7000"],
    ],
    ids=["c10d-store", "rpc-server", "listen"],
)
def test_a_bind_on_an_address_not_this_nodes_is_the_address_given(tmp_path: Path, lines: list[str]) -> None:
    report = triage(tmp_path, {"rank0.log": "\n".join(lines) + "\n"})
    assert root_finding(report) == ("config", "triage.config.address_unavailable"), describe(report)
    (finding,) = [f for f in report.findings if f.id == "triage.config.address_unavailable"]
    assert "bind or listen" in finding.title
    assert "ip -brief address" in commands_of(report, "triage.config.address_unavailable")
    # the store's exception is the same failure, not a second issue
    assert [f.id for f in report.findings if f.priority == "P0"] == ["triage.config.address_unavailable"]


@pytest.mark.parametrize(
    "line",
    [
        "grpc: addrConn.createTransport failed to connect to {10.0.0.9:8000}. Err: connection error: desc = "
        '"transport: Error while dialing dial tcp 10.0.0.9:8000: connect: cannot assign requested address"',
        "worker-3:77:90 [0] misc/socket.cc:530 NCCL WARN socketStartConnect: connect() failed : "
        "EADDRNOTAVAIL",
    ],
    ids=["dial", "nccl-connect"],
)
def test_errno_99_on_a_connect_is_the_local_ports_not_the_peer(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"rank3.log": line + "\n"})
    assert root_finding(report) == ("config", "triage.config.address_unavailable"), describe(report)
    (finding,) = [f for f in report.findings if f.id == "triage.config.address_unavailable"]
    assert "ephemeral ports" in finding.title
    assert "ss -s" in commands_of(report, "triage.config.address_unavailable")


def test_errno_99_with_no_call_named_says_both_readings(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "serve.py", line 12, in <module>\n'
        "    sock.bind((host, port))\n"
        "OSError: [Errno 99] Cannot assign requested address\n"
    )
    report = triage(tmp_path, {"rank0.log": text})
    assert root_finding(report) == ("config", "triage.config.address_unavailable"), describe(report)
    (finding,) = [f for f in report.findings if f.id == "triage.config.address_unavailable"]
    assert "on a bind" in finding.title and "on a connect" in finding.title


def test_address_in_use_and_other_errnos_stay_what_they_are(tmp_path: Path) -> None:
    in_use = "The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).\n"
    report = triage(tmp_path, {"rank0.log": in_use})
    assert root_finding(report) == ("config", "triage.config.address_in_use"), describe(report)
    # errno 990 and a step counter that reads 99 are not EADDRNOTAVAIL
    benign = "step 99 loss 1.23\nINFO retry errno=990 ignored\n"
    report = triage(tmp_path / "benign", {"rank0.log": benign})
    assert all(f.id != "triage.config.address_unavailable" for f in report.findings), describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Input tensor at index 1 has invalid shape [8, 128, 50265], but expected "
        "[8, 131, 50265]",
        "RuntimeError: Gather got an input of invalid size: got [4, 61], but expected [4, 64] (gather at "
        "/pytorch/torch/csrc/cuda/comm.cpp:183)",
    ],
    ids=["torch-1.5+", "torch-1.4"],
)
def test_dataparallel_gathering_outputs_of_different_shapes_is_one_process_on_every_gpu(
    tmp_path: Path, line: str
) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.8/site-packages/torch/nn/parallel/data_parallel.py", line 172, '
        "in gather\n"
        "    return gather(outputs, output_device, dim=self.dim)\n"
        f"{line}\n"
    )
    report = triage(tmp_path, {"train.log": text})
    assert root_finding(report) == ("config", "triage.config.dataparallel_gather"), describe(report)
    assert "CUDA_VISIBLE_DEVICES=0" in commands_of(report, "triage.config.dataparallel_gather")


def test_a_shape_check_of_a_model_is_not_dataparallel(tmp_path: Path) -> None:
    text = "ValueError: Input tensor has invalid shape [3, 224], expected 4 dimensions\n"
    report = triage(tmp_path, {"train.log": text})
    assert all(f.id != "triage.config.dataparallel_gather" for f in report.findings), describe(report)
