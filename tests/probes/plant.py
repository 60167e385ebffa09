"""Node outputs for the probe tests: the recorded healthy p5.48xlarge, with recorded fault
sections planted into it. Each helper says what it plants; nothing here parses like the product."""

from __future__ import annotations

import re
from pathlib import Path

from hyperpod_nccl.models import Finding, Report
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult
from hyperpod_nccl.probes.service import probe_report
from hyperpod_nccl.snapshot.probes import ProbeSnapshot
from tests.next_steps.check import next_step_problems

RECORDED = Path(__file__).parent / "recorded"
HEALTHY_ID = "i-0a1b2c3d4e5f60718"
CLUSTER = "ml-cluster-1"
REGION = "us-west-2"


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


def healthy() -> str:
    return recorded("healthy-p5.48xlarge.txt")


def _marker(name: str) -> str:
    return f"===== hyperpod-nccl:section {name} =====\n"


def with_section(output: str, name: str, text: str) -> str:
    """Replace the body of section `name` with `text` (a recorded fault)."""
    start = output.index(_marker(name)) + len(_marker(name))
    end = output.index("===== hyperpod-nccl:section ", start)
    return output[:start] + text.rstrip("\n") + "\n" + output[end:]


def with_instance(output: str, instance_id: str) -> str:
    """The same node under another instance id and host name."""
    return output.replace(HEALTHY_ID, instance_id)


def with_gpu_field(output: str, bus: str, block: str, key: str, value: str) -> str:
    """Set `key` under `block` (e.g. "Remapped Rows", "Pending") in GPU `bus`'s nvidia-smi -q block."""
    gpu = output.index(f"GPU 00000000:{bus.upper()}:00.0\n")
    in_block = output.index(f"    {block}\n", gpu)
    line = re.compile(rf"^(\s+{re.escape(key)}\s+: ).*$", re.MULTILINE).search(output, in_block)
    assert line is not None, f"{key} not under {block}"
    return output[: line.start()] + line.group(1) + value + output[line.end() :]


def node(output: str, instance_id: str = HEALTHY_ID, status: str = "ok") -> ProbeResult:
    target = NodeTarget(
        instance_id=instance_id,
        instance_group="worker-group-1",
        instance_type="ml.p5.48xlarge",
        ssm_target=f"sagemaker-cluster:abcd1234efgh_worker-group-1-{instance_id}",
    )
    return ProbeResult(target=target, script="node_health", status=status, output=output)


def report(*results: ProbeResult, orchestrator: str = "eks") -> Report:
    probes = ProbeSnapshot(
        cluster_name=CLUSTER,
        cluster_id="abcd1234efgh",
        region=REGION,
        orchestrator=orchestrator,
        nodes_total=len(results),
        sampling="test",
        results=list(results),
    )
    built = probe_report(probes)
    problems = next_step_problems(built)
    assert problems == [], f"every FAIL/WARN says what to run next (issue 14): {problems}"
    return built


def finding(report: Report, finding_id: str) -> Finding:
    matches = [f for f in report.findings if f.id == finding_id]
    assert matches, f"no {finding_id}; found {[f.id for f in report.findings]}"
    return matches[0]
