"""Scanning across processes gives exactly what one process gives: forked from the CLI, from a
fork server when called from a thread (the MCP server triages in a worker thread, where fork is
unsafe)."""

from __future__ import annotations

import importlib.util
import threading

import pytest

from hyperpod_nccl.triage import parallel
from hyperpod_nccl.triage.discover import InputFile, discover
from hyperpod_nccl.triage.events import FileScan
from hyperpod_nccl.triage.scanner import scan_input
from tests.triage.scenarios import straggler_at_scale


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[InputFile]:
    root = tmp_path_factory.mktemp("straggler")
    straggler_at_scale(root, nodes=4, steps=40)
    found = discover([root])
    assert len(found.files) > 2
    return found.files


def serial(files: list[InputFile]) -> list[FileScan]:
    return sorted((scan_input(item) for item in files), key=lambda scan: scan.source)


def in_a_thread(files: list[InputFile]) -> tuple[parallel.Plan, list[FileScan]]:
    result: dict[str, object] = {}

    def run() -> None:
        result["plan"] = parallel.plan(files)
        result["scans"] = parallel.scan_all(files)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=120)
    return result["plan"], result["scans"]  # type: ignore[return-value]


def test_small_inputs_are_scanned_in_process(files: list[InputFile]) -> None:
    assert parallel.plan(files).workers == 1


def test_a_single_threaded_process_forks_and_gets_the_serial_result(
    files: list[InputFile], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    chosen = parallel.plan(files)
    if chosen.workers < 2:
        pytest.skip("one CPU: nothing runs in parallel")
    assert chosen.start == "fork"
    assert parallel.scan_all(files) == serial(files)


def test_from_a_thread_workers_come_from_a_fork_server_and_get_the_serial_result(
    files: list[InputFile], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    chosen, scans = in_a_thread(files)
    if chosen.workers < 2:
        pytest.skip("one CPU: nothing runs in parallel")
    assert chosen.start == "forkserver"
    assert scans == serial(files)
    assert any(scan.events for scan in scans)


def test_scans_come_back_sorted_by_source(files: list[InputFile], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    sources = [scan.source for scan in parallel.scan_all(files)]
    assert sources == sorted(sources) and len(sources) == len(files)


def test_the_fork_server_preloads_modules_that_exist() -> None:
    """The fork server skips a preload it cannot import without a word: a renamed module would
    only make every worker slower."""
    for name in parallel.FORK_SERVER_PRELOAD:
        if name != "__main__":
            assert importlib.util.find_spec(name) is not None, name
