"""Families of wording from held-out set 40 (issue 16, logs from threads not in the corpus): a socket
given an address it cannot use (errno 99, `Cannot assign requested address`), and nn.DataParallel
gathering replicas' outputs of different shapes. Each is tested in wordings other than the pasted
case's, with the near misses that must stay what they are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_nccl.models import Finding, Report
from tests.triage.test_families import commands_of, describe, root_finding, triage


def only(report: Report, finding_id: str) -> Finding:
    (finding,) = [f for f in report.findings if f.id == finding_id]
    return finding


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
    finding = only(report, "triage.config.address_unavailable")
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
    finding = only(report, "triage.config.address_unavailable")
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
    finding = only(report, "triage.config.address_unavailable")
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


def test_gloo_failing_after_its_loopback_fallback_is_the_hostname_not_the_rendezvous(tmp_path: Path) -> None:
    text = (
        "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. Using the "
        "loopback address as fallback. Manually set the network interface to bind to with "
        "GLOO_SOCKET_IFNAME. "
        "(function operator())\n"
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
        "no error\n"
    )
    report = triage(tmp_path, {"worker-1.log": text})
    assert root_finding(report) == ("config", "triage.config.gloo_loopback"), describe(report)
    assert "GLOO_SOCKET_IFNAME=" in commands_of(report, "triage.config.gloo_loopback")


def test_the_loopback_fallback_on_a_run_that_did_not_fail_is_no_finding(tmp_path: Path) -> None:
    text = (
        "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. Using the "
        "loopback address as fallback.\n"
        "epoch 1 step 100 loss 0.52\n"
    )
    report = triage(tmp_path, {"worker-0.log": text})
    assert report.findings == [] or all(f.status == "PASS" for f in report.findings), describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
        "https://huggingface.co/api/models/meta-llama/Llama-3.1-8B/revision/main",
        "HTTP Error 429 thrown while requesting HEAD https://huggingface.co/datasets/allenai/c4/resolve/main/"
        "en/c4-train.00000-of-01024.json.gz",
    ],
    ids=["requests", "hub-client"],
)
def test_a_hub_answering_429_is_the_data_service_throttling_every_rank(tmp_path: Path, line: str) -> None:
    text = f"[rank12]: {line}\n[rank12]: Traceback (most recent call last):\n"
    report = triage(tmp_path, {"rank12.log": text})
    assert root_finding(report) == ("storage_io", "triage.storage.hub_rate_limited"), describe(report)


def test_a_429_from_an_api_the_code_calls_is_not_the_hub(tmp_path: Path) -> None:
    text = "openai.RateLimitError: Error code: 429 - Too Many Requests (reward scoring)\n"
    report = triage(tmp_path, {"rank0.log": text})
    assert all(f.id != "triage.storage.hub_rate_limited" for f in report.findings), describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "[2025-02-11 20:08:00,117 I 4121 4121] main.cc:483: received SIGTERM. Existing local drain "
        "request = None",
        "W0409 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death "
        "signal, "
        "shutting down workers",
    ],
    ids=["raylet", "torchrun-numbered"],
)
def test_a_process_told_to_stop_before_anything_failed_is_stopped_from_outside(
    tmp_path: Path, line: str
) -> None:
    text = (
        f"{line}\n"
        "Traceback (most recent call last):\n"
        '  File "/venv/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
    )
    report = triage(tmp_path, {"node-1.log": text})
    assert root_finding(report) == ("infrastructure", "triage.infra.terminated"), describe(report)


def test_a_launcher_sending_sigterm_to_its_workers_is_not_told_to_stop(tmp_path: Path) -> None:
    text = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "W0409 07:28:49.531000 1359 torch/distributed/elastic/multiprocessing/api.py:897] Sending process "
        "1365 "
        "closing signal SIGTERM\n"
    )
    report = triage(tmp_path, {"node-0.log": text})
    assert root_finding(report)[1] != "triage.infra.terminated", describe(report)


def test_oneccl_without_the_device_directory_is_the_containers_devices(tmp_path: Path) -> None:
    text = (
        "2025:08:01-10:11:12:(4242) |CCL_ERROR| ze_fd_manager.cpp:144 init_device_fds: EXCEPTION: opendir "
        "failed: could not open device directory\n"
    )
    report = triage(tmp_path, {"rank1.log": text})
    assert root_finding(report) == ("config", "triage.config.container_device_directory"), describe(report)
    assert "ls -l /dev/dri/by-path" in commands_of(report, "triage.config.container_device_directory")


def test_a_dask_task_that_failed_is_never_answered_no_issue(tmp_path: Path) -> None:
    text = (
        "Dask client/cluster created using LocalCUDACluster\n"
        "2023-09-27 04:28:47,439 - distributed.worker - WARNING - Run Failed\n"
        "Function: _func_init_all\n"
        "kwargs:   {'dask_worker': <Worker 'tcp://127.0.0.1:43613', name: 3, status: running>}\n"
    )
    report = triage(tmp_path, {"client.log": text})
    assert root_finding(report) == ("unknown", "triage.unknown.failure"), describe(report)
    finding = only(report, "triage.unknown.failure")
    assert any("Run Failed" in e.text for e in finding.evidence)


def test_a_pasted_pod_table_names_the_failed_pod_and_asks_for_its_previous_log(tmp_path: Path) -> None:
    text = (
        "NAME                               READY   STATUS    RESTARTS   AGE\n"
        "nccl-tests-efa-16-launcher-mkjgm   0/1     Error     0          5s\n"
        "nccl-tests-efa-16-worker-0         1/1     Running   0          6s\n"
    )
    report = triage(tmp_path, {"pods.txt": text})
    assert root_finding(report) == ("unknown", "triage.unknown.failure"), describe(report)
    finding = only(report, "triage.unknown.failure")
    assert finding.reference == "debugging-guide.md § 9"
    commands = commands_of(report, "triage.unknown.failure")
    assert "kubectl logs nccl-tests-efa-16-launcher-mkjgm" in commands and "--previous" in commands
    assert report.job is not None and report.job.outcome.outcome == "crashed"


def test_running_and_completed_pod_rows_are_not_failures(tmp_path: Path) -> None:
    text = (
        "NAME                 READY   STATUS    RESTARTS   AGE\n"
        "trainer-worker-0     1/1     Running   0          6s\n"
        "trainer-worker-1     1/1     Completed 0          6s\n"
    )
    report = triage(tmp_path, {"pods.txt": text})
    assert not [f for f in report.findings if f.status == "FAIL"], describe(report)


def test_a_traceback_cut_at_the_interpreters_start_up_frames_is_no_guess(tmp_path: Path) -> None:
    text = (
        "[rank356]: Traceback (most recent call last):\n"
        '[rank356]:   File "<frozen runpy>", line 198, in _run_module_as_main\n'
        '[rank356]:   File "<frozen runpy>", line 88, in _run_code\n'
    )
    report = triage(tmp_path, {"node-7.log": text})
    assert all(f.id != "triage.software.cut_traceback" for f in report.findings), describe(report)


def test_a_stop_before_any_failure_is_not_called_a_failure_then_an_end(tmp_path: Path) -> None:
    text = (
        "[2025-02-11 20:08:00,117 I 4121 4121] main.cc:483: received SIGTERM. Existing local drain request\n"
    )
    report = triage(tmp_path, {"raylet.out": text})
    assert report.job is not None and "before any failure" in report.job.outcome.why, describe(report)
    # nothing says where it ran: the machine's own shutdown record comes first
    assert commands_of(report, "triage.infra.terminated").startswith("last -x -F shutdown reboot")


def test_a_pod_table_of_every_namespace_names_pods_with_their_namespace(tmp_path: Path) -> None:
    text = (
        "$ kubectl get pods -A\n"
        "NAMESPACE     NAME                         READY   STATUS                       RESTARTS   AGE\n"
        "kube-system   efa-device-plugin-5v7mh      0/1     CreateContainerConfigError   0          2m43s\n"
        "training      llama-worker-1               1/1     Running                      0          2m\n"
    )
    report = triage(tmp_path, {"pods.txt": text})
    assert root_finding(report) == ("config", "triage.config.container_config"), describe(report)
    assert "kubectl describe pod efa-device-plugin-5v7mh -n kube-system" in commands_of(
        report, "triage.config.container_config"
    )


def test_the_efa_device_plugin_without_a_device_is_where_it_was_scheduled(tmp_path: Path) -> None:
    text = (
        "2026/02/03 15:23:32 Fetching EFA devices.\n"
        "2026/02/03 15:23:32 Error to get IB device: %v. No valid EFA devices found\n"
    )
    report = triage(tmp_path, {"efa-plugin.log": text})
    assert root_finding(report) == ("config", "triage.config.efa_plugin_no_device"), describe(report)
    assert "instance-type" in commands_of(report, "triage.config.efa_plugin_no_device")


def test_a_collective_off_the_groups_device_is_set_device_missing(tmp_path: Path) -> None:
    text = (
        "[rank3]: torch.distributed.DistBackendError: Attempt to perform collective on tensor not on device "
        "passed to init_process_group\n"
    )
    report = triage(tmp_path, {"rank3.log": text})
    assert root_finding(report) == ("config", "triage.config.group_device_mismatch"), describe(report)
    assert "set_device" in (only(report, "triage.config.group_device_mismatch").no_command_reason or "")


def test_tensorflow_without_nccl_kernels_is_the_platform(tmp_path: Path) -> None:
    text = (
        "tensorflow.python.framework.errors_impl.NotFoundError: No OpKernel was registered to support "
        "Op 'NcclAllReduce' used by {{node NcclAllReduce}} with these attrs: [num_devices=4]\n"
    )
    report = triage(tmp_path, {"worker.log": text})
    assert root_finding(report) == ("config", "triage.config.tf_without_nccl"), describe(report)


def test_open_mpi_asked_for_cuda_it_was_built_without_is_the_build_not_its_segfault(tmp_path: Path) -> None:
    text = (
        "The user requested CUDA support with the --mca mpi_cuda_support 1 flag\n"
        "but the library was not compiled with any support.\n"
        "[node-1:4411] *** Process received signal ***\n"
        "[node-1:4411] Signal: Segmentation fault (11)\n"
    )
    report = triage(tmp_path, {"mpirun.out": text})
    assert root_finding(report) == ("software", "triage.software.mpi_without_cuda"), describe(report)
    assert "mpi_built_with_cuda_support" in commands_of(report, "triage.software.mpi_without_cuda")
