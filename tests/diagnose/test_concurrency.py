"""Independent AWS calls run concurrently, never more than --concurrency at once; the CLI's
progress line appears only on a terminal."""

from __future__ import annotations

import io

import boto3
import pytest

from hyperpod_nccl.diagnose.cli import TtyProgress
from hyperpod_nccl.diagnose.service import DiagnoseOptions, collect_snapshot
from tests.diagnose.conftest import Stubs, planted_stubs
from tests.diagnose.world import REGION, World
from tests.servers.moto_server import MotoServer

SLOW = 1.5  # long enough that two calls in flight overlap even when moto answers slowly under load


def _overlap(stubs: Stubs) -> bool:
    (events_start, events_end), (query_start, query_end) = stubs.events.spans[0], stubs.insights.spans[0]
    return events_start < query_end and query_start < events_end


@pytest.mark.parametrize(("concurrency", "overlapping"), [(4, True), (1, False)])
def test_independent_calls_overlap_only_within_the_bound(
    endpoint: MotoServer, world: World, concurrency: int, overlapping: bool
) -> None:
    stubs = planted_stubs(boto3.session.Session(), world)
    stubs.events.delay_s = stubs.insights.delay_s = SLOW
    options = DiagnoseOptions(cluster=world.name, region=REGION, sample_nodes=0, concurrency=concurrency)
    collect_snapshot(options, session=stubs.session)
    assert _overlap(stubs) is overlapping


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_one_rewritten_line_on_a_terminal_and_silent_elsewhere() -> None:
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = TtyProgress(stream)
        progress("sagemaker:ListClusterNodes: 100 read", 100, None)
        progress("sagemaker:ListClusterNodes: 2000 nodes", 2000, 2000)
        progress.clear()
    assert terminal.getvalue().count("\r\033[K") == 3
    assert "2000 nodes (2000/2000)" in terminal.getvalue()
    assert pipe.getvalue() == ""
