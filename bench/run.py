"""`make bench`: log-triage throughput and peak memory, side by side with rg and grep -E.

Generates (once, then reuses) a 1,024-rank straggler incident of at least `--size-gb` GB with the
test fixture generator, then runs `hyperpod-nccl triage --json` over it, and ripgrep and
`grep -E` with a prefilter regex that looks for the same kind of lines the triage reads. Each
tool runs once: the machine is shared, and a second pass would only measure the page cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the generator lives with the tests

from tests.triage.loggen import Job, step_line  # noqa: E402
from tests.triage.scenarios import slurm_hosts, straggler_at_scale  # noqa: E402

RANKS_PER_NODE = 8
GOAL_RATIO = 0.5  # issue 3: at least half of ripgrep's throughput

# Literal anchors of the lines a triage has to read (shared/log-formats.md); what a person would grep for.
PREFILTER_ANCHORS = (
    "Watchdog caught collective operation timeout",
    "failure detected by watchdog",
    "detected by watchdog at work",
    "Timeout at NCCL work",
    "signal dumping",
    "flight recorder dump signal",
    "Received a dump signal",
    "To avoid data inconsistency",
    "watchdog thread terminated",
    "NCCL WARN",
    "NCCL version",
    "Selected provider is",
    "Selected Provider is",
    "NVRM: Xid",
    "Killed process",
    "oom_kill",
    "Out Of Memory",
    "out of memory",
    "CANCELLED AT",
    "Node failure on",
    "srun: error",
    "exitcode",
    "Traceback (most recent call last)",
    "Error:",
    "Address already in use",
    "clients joined",
    "bus error",
    "Connection reset by peer",
)
# Escape only what ERE and ripgrep both treat as special: Python's re.escape also escapes spaces,
# which ripgrep rejects as an unknown escape.
PREFILTER_REGEX = "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", anchor) for anchor in PREFILTER_ANCHORS)


@dataclass(frozen=True)
class Measurement:
    tool: str
    wall_seconds: float
    peak_rss_mb: float
    exit_code: int
    stdout: str


def measure(tool: str, command: list[str]) -> Measurement:
    """Run once: wall time around the child, peak RSS as /usr/bin/time -v reports it.

    Without /usr/bin/time, wait4's ru_maxrss is used instead; it also counts the pages the child
    shared with this (large) Python process between fork and exec, so it overstates small tools.
    """
    timer = shutil.which("time")  # GNU time, not the shell keyword
    started = time.perf_counter()
    if timer:
        done = subprocess.run([timer, "-v", *command], capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        return Measurement(
            tool, wall, int(peak.group(1)) / 1024 if peak else math.nan, done.returncode, done.stdout
        )
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as child:
        stdout = child.stdout.read() if child.stdout else ""
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    return Measurement(tool, time.perf_counter() - started, usage.ru_maxrss / 1024, child.returncode, stdout)


def generate(out: Path, size_gb: float, ranks: int) -> tuple[Path, dict[str, Any]]:
    """The log set for this size, generated once: reused when its record says it is complete."""
    logs = out / f"logs-{ranks}r-{size_gb:g}g"
    record_path = logs.with_suffix(".json")
    if record_path.exists():
        return logs, json.loads(record_path.read_text())
    shutil.rmtree(logs, ignore_errors=True)
    nodes = ranks // RANKS_PER_NODE
    sample = step_line(Job(slurm_hosts(1)).start, ranks - 1, 10_000, 2.0)
    line_bytes = len(sample) + len(f"{ranks - 1}: ") + 1
    steps = math.ceil(size_gb * 1e9 * 1.02 / (ranks * line_bytes))
    print(f"generating {ranks} ranks x {steps} steps (about {size_gb:g} GB) into {logs} ...", flush=True)
    started = time.perf_counter()
    planted = straggler_at_scale(logs, nodes=nodes, steps=steps)
    record = {
        "bytes": sum(p.stat().st_size for p in logs.rglob("*") if p.is_file()),
        "files": sum(1 for p in logs.rglob("*") if p.is_file()),
        "ranks": planted.world_size,
        "category": planted.category,
        "culprit_ranks": list(planted.culprit_ranks),
        "culprit_nodes": list(planted.culprit_nodes),
        "generated_in_seconds": round(time.perf_counter() - started, 1),
    }
    record_path.write_text(json.dumps(record, indent=2))
    return logs, record


def run_tools(logs: Path) -> list[Measurement]:
    results = [measure("hyperpod-nccl triage --json", [str(triage_command()), "triage", str(logs), "--json"])]
    rg = shutil.which("rg")
    if rg:
        results.append(
            measure("rg (prefilter)", [rg, "--count", "--no-messages", "-e", PREFILTER_REGEX, str(logs)])
        )
    else:
        print("rg not installed (apt-get install ripgrep)")
    grep = shutil.which("grep") or "grep"
    results.append(measure("grep -E (prefilter)", [grep, "-E", "-r", "-c", "-e", PREFILTER_REGEX, str(logs)]))
    return results


def triage_command() -> Path:
    local = REPO / ".venv" / "bin" / "hyperpod-nccl"
    return local if local.exists() else Path(shutil.which("hyperpod-nccl") or "hyperpod-nccl")


def report(results: list[Measurement], size_bytes: int, record: dict[str, Any]) -> None:
    megabytes = size_bytes / 1e6
    print(f"\n{megabytes:,.0f} MB in {record['files']} files, {record['ranks']} ranks\n")
    print(f"{'tool':<30} {'wall s':>8} {'MB/s':>9} {'peak RSS MB':>12} {'exit':>5}")
    for r in results:
        print(
            f"{r.tool:<30} {r.wall_seconds:>8.2f} {megabytes / r.wall_seconds:>9.1f} {r.peak_rss_mb:>12.1f} "
            f"{r.exit_code:>5}"
        )
    triage, *others = results
    rg = next((r for r in others if r.tool.startswith("rg")), None)
    if rg:
        ratio = rg.wall_seconds / triage.wall_seconds
        verdict = "meets" if ratio >= GOAL_RATIO else "misses"
        print(f"\ntriage throughput is {ratio:.2f}x ripgrep's: {verdict} the goal of {GOAL_RATIO}x")
    print(verdict_on_diagnosis(triage, record))


def verdict_on_diagnosis(triage: Measurement, record: dict[str, Any]) -> str:
    try:
        cause = json.loads(triage.stdout).get("root_cause") or {}
    except json.JSONDecodeError:
        return "triage printed no JSON report"
    found = (cause.get("category"), cause.get("culprit_ranks"))
    planted = (record["category"], record["culprit_ranks"])
    word = "matches" if found == planted else "DIFFERS from"
    return (
        f"triage found {found[0]} on ranks {found[1]}: {word} what was planted ({planted[0]} on {planted[1]})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size-gb", type=float, default=2.0, help="log set size (default 2; 0.05 for a dry run)"
    )
    parser.add_argument("--ranks", type=int, default=1024, help="world size (default 1024)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out", help="where log sets are kept")
    args = parser.parse_args(argv)
    logs, record = generate(args.out, args.size_gb, args.ranks)
    report(run_tools(logs), int(record["bytes"]), record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
