"""Fan-out: which nodes get sampled, nodes probed concurrently within their time budget, only
transient failures retried, and a node that stalls reported with what it printed."""

from __future__ import annotations

import time

import anyio
import pytest

from hyperpod_nccl.probes.catalog import ProbeScript, probe_script
from hyperpod_nccl.probes.fanout import ProbeProgress, UnknownNode, probe_targets, select_targets
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult
from hyperpod_nccl.probes.runners.replay import ReplayRunner
from tests.probes.plant import healthy

SCRIPT = probe_script("node_health")


def nodes(
    count: int, group: str = "worker-group-1", instance_type: str = "ml.p5.48xlarge"
) -> list[NodeTarget]:
    return [
        NodeTarget(
            instance_id=f"i-{group[:1]}{n:016x}",
            instance_group=group,
            instance_type=instance_type,
            status="Running",
        )
        for n in range(count)
    ]


def test_fifty_nodes_with_a_one_second_session_each_finish_concurrently() -> None:
    targets = nodes(50)
    runner = ReplayRunner({t.instance_id: healthy() for t in targets if t.instance_id}, delay_s=1.0)
    updates: list[ProbeProgress] = []
    started = time.monotonic()
    results = anyio.run(lambda: probe_targets(runner, SCRIPT, targets, progress=updates.append))
    elapsed = time.monotonic() - started
    assert elapsed < 15, f"50 one-second probes took {elapsed:.1f} s: not concurrent"  # serial would be 50 s
    assert [r.target.instance_id for r in results] == [t.instance_id for t in targets]
    assert all(r.status == "ok" for r in results)
    assert [u.done for u in updates] == list(range(1, 51))
    assert all(u.total == 50 for u in updates)


def test_a_stalled_node_times_out_with_its_partial_output_and_the_others_finish() -> None:
    targets = nodes(3)
    stalled = targets[1].instance_id or ""
    runner = ReplayRunner({t.instance_id or "": healthy() for t in targets}, delay_s={stalled: 30.0})
    results = anyio.run(lambda: probe_targets(runner, SCRIPT, targets, timeout_s=1))
    assert [r.status for r in results] == ["ok", "timeout", "ok"]
    assert results[1].output and results[1].output in healthy()
    assert results[1].duration_s < 5


class FlakyRunner:
    """Fails the first `failures` calls with the given result, then answers."""

    def __init__(self, failure: ProbeResult | Exception, failures: int = 1) -> None:
        self.failure, self.failures, self.calls = failure, failures, 0

    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult:
        self.calls += 1
        if self.calls <= self.failures:
            if isinstance(self.failure, Exception):
                raise self.failure
            return self.failure.model_copy(update={"target": target})
        return ProbeResult(target=target, script=script.name, status="ok", output=healthy())


def failure(status: str, retryable: bool) -> ProbeResult:
    return ProbeResult(
        target=NodeTarget(), script="node_health", status=status, error=status, retryable=retryable
    )


def test_a_transient_failure_is_retried() -> None:
    runner = FlakyRunner(failure("error", retryable=True))
    [result] = anyio.run(lambda: probe_targets(runner, SCRIPT, nodes(1)))
    assert (result.status, result.attempts, runner.calls) == ("ok", 2, 2)


@pytest.mark.parametrize("status", ["unreachable", "access_denied"])
def test_target_not_connected_and_access_denied_are_not_retried(status: str) -> None:
    runner = FlakyRunner(failure(status, retryable=False))
    [result] = anyio.run(lambda: probe_targets(runner, SCRIPT, nodes(1)))
    assert (result.status, result.attempts, runner.calls) == (status, 1, 1)


def test_a_runner_that_crashes_on_one_node_does_not_sink_the_others() -> None:
    runner = FlakyRunner(RuntimeError("boom"))
    results = anyio.run(lambda: probe_targets(runner, SCRIPT, nodes(3), concurrency=1))
    assert [r.status for r in results] == ["error", "ok", "ok"]
    assert "boom" in (results[0].error or "")


def test_sampling_prefers_gpu_workers_and_skips_controller_and_login_groups() -> None:
    cluster = (
        nodes(1, "controller-machine", "ml.m5.12xlarge")
        + nodes(1, "login-group", "ml.m5.4xlarge")
        + nodes(4, "cpu-workers", "ml.c5.18xlarge")
        + nodes(6, "gpu-workers", "ml.p5.48xlarge")
    )
    cluster[-1] = cluster[-1].model_copy(update={"status": "Pending"})
    selection = select_targets(cluster, 3)
    assert [t.instance_group for t in selection.targets] == ["gpu-workers"] * 3
    assert "2 controller/login node(s) skipped" in selection.note and "1 not Running" in selection.note
    more = select_targets(cluster, 8)
    assert [t.instance_group for t in more.targets] == ["gpu-workers"] * 5 + ["cpu-workers"] * 3


def test_sampling_is_capped_at_fifty_and_node_picks_one() -> None:
    cluster = nodes(80)
    assert len(select_targets(cluster, 500).targets) == 50
    wanted = cluster[42].instance_id or ""
    assert [t.instance_id for t in select_targets(cluster, 3, wanted).targets] == [wanted]
    with pytest.raises(UnknownNode):
        select_targets(cluster, 3, "i-0000000000000dead")
