"""Probe fan-out wall time: N nodes whose sessions each take D seconds, replayed, at the default
concurrency. The seed probed nodes one after another (N × D); this prints what the fan-out takes,
then analyzes the results, since a report is what the user waits for.

    .venv/bin/python bench/probe_fanout.py [--nodes 50] [--delay 1.0] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the recorded node output lives with the tests

from tests.probes.plant import healthy, with_instance  # noqa: E402

from hyperpod_nccl.probes.catalog import probe_script  # noqa: E402
from hyperpod_nccl.probes.fanout import DEFAULT_CONCURRENCY, probe_targets  # noqa: E402
from hyperpod_nccl.probes.runners.base import NodeTarget  # noqa: E402
from hyperpod_nccl.probes.runners.replay import ReplayRunner  # noqa: E402
from hyperpod_nccl.probes.service import probe_report  # noqa: E402
from hyperpod_nccl.snapshot.probes import ProbeSnapshot  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds each node's session takes")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    args = parser.parse_args()

    ids = [f"i-0{n:016x}" for n in range(args.nodes)]
    runner = ReplayRunner({i: with_instance(healthy(), i) for i in ids}, delay_s=args.delay)
    targets = [NodeTarget(instance_id=i, instance_type="ml.p5.48xlarge") for i in ids]
    started = time.monotonic()
    results = anyio.run(
        lambda: probe_targets(runner, probe_script("node_health"), targets, concurrency=args.concurrency)
    )
    probed = time.monotonic() - started
    report = probe_report(ProbeSnapshot(nodes_total=len(ids), sampling="bench", results=results))
    total = time.monotonic() - started
    ok = sum(r.status == "ok" for r in results)
    print(f"nodes {args.nodes}  session {args.delay:.1f} s  concurrency {args.concurrency}")
    print(
        f"probed {ok}/{len(results)} ok in {probed:.2f} s (serial would take {args.nodes * args.delay:.0f} s)"
    )
    print(f"report with {len(report.findings)} findings after {total:.2f} s")
    return 0 if ok == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
