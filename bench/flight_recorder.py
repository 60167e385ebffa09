"""Flight Recorder at scale: 1,024 ranks' dumps of 2,000 entries each, wall time and peak memory.

Generates (once, then reuses) a job whose every rank has a full ring buffer — the default
group and a tensor-parallel group of 8, stacks as PyTorch pickles them — and one rank that never
entered the last all_reduce. Then runs `hyperpod-nccl triage DIR --json` on the dumps alone and
reports wall time, CPU time (the process and its decoding workers: what a busy machine does not
change), peak RSS (GNU time: the largest of the process and its workers), the report's size
against the triage budget, and whether the culprit came out.

    .venv/bin/python bench/flight_recorder.py [--ranks 1024] [--entries 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the dump generator lives with the tests

from bench.run import measure  # noqa: E402
from tests.flight_recorder.ncclgen import Group, Rank  # noqa: E402

from hyperpod_nccl.triage.budget import BUDGET_BYTES  # noqa: E402

TP = 8


def generate(out: Path, ranks: int, entries: int, culprit: int) -> Path:
    """Write the dumps rank by rank (never the whole job in memory); reused when complete."""
    dumps = out / f"fr-{ranks}r-{entries}e"
    done = dumps / ".complete"
    if done.exists():
        return dumps
    dumps.mkdir(parents=True, exist_ok=True)
    print(f"generating {ranks} dumps x {entries} entries into {dumps} ...", flush=True)
    started = time.perf_counter()
    groups = {"0": Group("0", "default_pg", list(range(ranks)))}
    for index in range(ranks // TP):
        name = str(index + 1)
        groups[name] = Group(name, "tp_group", list(range(index * TP, (index + 1) * TP)), pg_id=1)
    for rank in range(ranks):
        trace = Rank(rank, {g.name: g for g in groups.values() if rank in g.members})
        tp = str(rank // TP + 1)
        steps = entries // 2 + 1
        for step in range(steps):
            last = step == steps - 1
            trace.collective(
                "all_gather_into_tensor", [4096], group=tp, where=("forward", 61), output=[4096 * TP]
            )
            if last and rank == culprit:
                break
            trace.collective(
                "all_reduce", [65536], state="started" if last else "completed", where=("sync_gradients", 88)
            )
        (dumps / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(trace.dump(buffer=entries), protocol=2))
    done.write_text(f"{time.perf_counter() - started:.1f} s\n")
    return dumps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = parser.parse_args(argv)
    culprit = args.ranks * 3 // 4 + 1
    dumps = generate(args.out, args.ranks, args.entries, culprit)
    size = sum(p.stat().st_size for p in dumps.iterdir())
    load = os.getloadavg()[0]  # the machine may be shared: wall time depends on it, CPU time less
    cli = [str(Path(sys.executable).parent / "hyperpod-nccl"), "triage", str(dumps), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = measure("hyperpod-nccl triage (dumps only)", cli)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(result.stdout)
    cause = report.get("root_cause") or {}
    print(f"{args.ranks} dumps x {args.entries} entries, {size / 1e6:.0f} MB on disk")
    print(
        f"wall {result.wall_seconds:.1f} s on {os.cpu_count()} cores (CPU {cpu:.1f} s, process and "
        f"decoding workers; load average before {load:.1f}), peak RSS {result.peak_rss_mb:.0f} MB, "
        f"exit {result.exit_code}"
    )
    print(f"report {len(result.stdout.encode())} bytes (budget {BUDGET_BYTES})")
    print(f"root cause: {cause.get('category')} culprit {cause.get('culprit_ranks')} (planted {culprit})")
    return 0 if cause.get("culprit_ranks") == [culprit] else 1


if __name__ == "__main__":
    sys.exit(main())
