"""How triage scales with the job: wall time and peak RSS at 1,024 / 8,192 / 32,768 ranks.

Each size is a straggler incident (rank 777 stops outside NCCL, every other rank times out in the
next all-reduce) with the same steps per rank, written two ways: one file per node (Slurm's
`--output` per node, 8 ranks interleaved under `srun --label`) and one file per rank. Sets are
generated once into `--out` and reused, and read once before their run (page cache warm). The
figures in the README come from this script.

    .venv/bin/python bench/scale.py [--ranks 1024 8192 32768] [--steps 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the generator lives with the tests

from bench.run import measure, triage_command, verdict_on_diagnosis  # noqa: E402
from tests.triage.loggen import Layout  # noqa: E402
from tests.triage.scenarios import straggler_at_scale  # noqa: E402

RANKS_PER_NODE = 8


def generate(out: Path, ranks: int, layout: Layout, steps: int) -> tuple[Path, dict[str, object]]:
    logs = out / f"scale-{ranks}r-{layout}-{steps}s"
    record_path = logs.with_suffix(".json")
    if record_path.exists():
        return logs, json.loads(record_path.read_text())
    shutil.rmtree(logs, ignore_errors=True)
    print(f"generating {ranks} ranks, {layout}, {steps} steps into {logs} ...", flush=True)
    started = time.perf_counter()
    planted = straggler_at_scale(logs, nodes=ranks // RANKS_PER_NODE, steps=steps, layout=layout)
    files = [p for p in logs.rglob("*") if p.is_file()]
    record = {
        "bytes": sum(p.stat().st_size for p in files),
        "files": len(files),
        "ranks": planted.world_size,
        "category": planted.category,
        "culprit_ranks": list(planted.culprit_ranks),
        "generated_in_seconds": round(time.perf_counter() - started, 1),
    }
    record_path.write_text(json.dumps(record, indent=2))
    return logs, record


def warm(logs: Path) -> None:
    """Read the set once so the measured run finds it in the page cache, as `make bench` does for
    the 2 GB set: the figures are the engine's, not the disk's (the sets together outgrow the
    cache, so each is warmed just before its run)."""
    for path in logs.rglob("*"):
        if path.is_file():
            with path.open("rb") as stream:
                while stream.read(1 << 20):
                    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1024, 8192, 32768])
    parser.add_argument("--steps", type=int, default=200, help="training steps each rank logs")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = parser.parse_args(argv)
    rows = []
    for ranks in args.ranks:
        for layout in (Layout.SLURM_NODE, Layout.PER_RANK):
            logs, record = generate(args.out, ranks, layout, args.steps)
            warm(logs)
            taken = measure("triage", [str(triage_command()), "triage", str(logs), "--json"])
            rows.append((ranks, layout, record, taken, verdict_on_diagnosis(taken, record)))
    print(f"\n{'ranks':>7} {'files':>8} {'layout':<11} {'MB':>8} {'wall s':>8} {'peak RSS MB':>12}  culprit")
    wrong = 0
    for ranks, layout, record, taken, verdict in rows:
        right = "matches" in verdict
        wrong += not right
        how = "per node" if layout == Layout.SLURM_NODE else "per rank"
        print(
            f"{ranks:>7} {record['files']:>8} {how:<11} "
            f"{int(record['bytes']) / 1e6:>8.0f} {taken.wall_seconds:>8.2f} {taken.peak_rss_mb:>12.0f}  "
            f"{'right' if right else verdict}"
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
