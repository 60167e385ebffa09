"""`make bench`: log-triage throughput and peak memory, side by side with ripgrep and grep -E.

Generates (once, then reuses) a 1,024-rank straggler incident of at least `--size-gb` GB with the
test fixture generator. Then, in one run and interleaved so a busy moment hits every tool alike,
it times `hyperpod-nccl triage --json` (the CLI), the `triage_logs` tool through the MCP server
(over stdio, as a client calls it), ripgrep with the regex a person would grep with (the tiers of
the seed's playbook) and with this bench's own prefilter, and `grep -E`. It prints the median of
`--runs` runs, the ratio to ripgrep, the peak RSS, two MCP clients triaging at once, and whether
the culprit came out; it exits 1 when the culprit is wrong.
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
GOAL_RATIO = 1.0  # issue 13: at ripgrep's pace
GOAL_RSS_MB = 300

# The seed playbook's "find the fatal errors" tiers, joined as a person greps them all at once.
SEED_TIERS = (
    r"NCCL.*timeout|Watchdog caught collective operation timeout",
    r"taking the entire process down",
    r"SIGTERM|SIGKILL|SIGABRT",
    r"CUDA error|CUDA out of memory|OOM",
    r"RuntimeError|Exception.*Error",
    r"AISBatchLoaderError|StopIteration",
    r"Traceback \(most recent call last\)",
    r"Connection reset|Connection broken|Connection refused",
    r"retrying [0-9]+/[0-9]+",
    r"timed out|deadline exceeded",
    r"broken pipe",
    r"First PG on this rank",
)
SEED_REGEX = "|".join(SEED_TIERS)

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


def tool_commands(logs: Path) -> dict[str, list[str]]:
    commands = {
        "triage (CLI)": [str(triage_command()), "triage", str(logs), "--json"],
        "triage (MCP tool)": [sys.executable, str(REPO / "bench" / "mcp_triage.py"), str(logs)],
    }
    if rg := shutil.which("rg"):
        commands["rg (seed tiers)"] = [rg, "--count", "--no-messages", "-e", SEED_REGEX, str(logs)]
        commands["rg (prefilter)"] = [rg, "--count", "--no-messages", "-e", PREFILTER_REGEX, str(logs)]
    else:
        print("rg not installed (apt-get install ripgrep): no ratio to print")
    grep = shutil.which("grep") or "grep"
    commands["grep -E (prefilter)"] = [grep, "-E", "-r", "-c", "-e", PREFILTER_REGEX, str(logs)]
    return commands


def run_tools(commands: dict[str, list[str]], runs: int) -> dict[str, list[Measurement]]:
    """Every tool `runs` times, interleaved; the MCP tool's time is its call's, as it reports it."""
    results: dict[str, list[Measurement]] = {tool: [] for tool in commands}
    for _ in range(runs):
        for tool, command in commands.items():
            taken = measure(tool, command)
            if tool == "triage (MCP tool)":
                taken = _call_time(taken)
            results[tool].append(taken)
    return results


def _call_time(taken: Measurement) -> Measurement:
    try:
        seconds = float(json.loads(taken.stdout)["seconds"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return taken
    return Measurement(taken.tool, seconds, taken.peak_rss_mb, taken.exit_code, taken.stdout)


def two_clients(logs: Path) -> list[float]:
    """Two MCP clients, each with its own server, triaging the same logs at once: the call times."""
    command = [sys.executable, str(REPO / "bench" / "mcp_triage.py"), str(logs)]
    children = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for _ in range(2)
    ]
    seconds = []
    for child in children:
        out, _ = child.communicate()
        try:
            seconds.append(float(json.loads(out)["seconds"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            seconds.append(math.nan)
    return seconds


def triage_command() -> Path:
    local = REPO / ".venv" / "bin" / "hyperpod-nccl"
    return local if local.exists() else Path(shutil.which("hyperpod-nccl") or "hyperpod-nccl")


def median(measurements: list[Measurement]) -> Measurement:
    ordered = sorted(measurements, key=lambda m: m.wall_seconds)
    middle = ordered[len(ordered) // 2]
    peak = max(m.peak_rss_mb for m in measurements)
    return Measurement(middle.tool, middle.wall_seconds, peak, middle.exit_code, middle.stdout)


def report(results: dict[str, list[Measurement]], record: dict[str, Any], runs: int) -> list[str]:
    """Prints the table and the verdicts; returns what went wrong with the diagnosis, if anything."""
    megabytes = int(record["bytes"]) / 1e6
    size = f"{megabytes:,.0f} MB in {record['files']} files, {record['ranks']} ranks"
    print(f"\n{size}; median of {runs} runs\n")
    print(f"{'tool':<22} {'wall s':>8} {'MB/s':>9} {'peak RSS MB':>12} {'exit':>5}")
    medians = {tool: median(taken) for tool, taken in results.items()}
    for m in medians.values():
        print(
            f"{m.tool:<22} {m.wall_seconds:>8.2f} {megabytes / m.wall_seconds:>9.1f} {m.peak_rss_mb:>12.1f} "
            f"{m.exit_code:>5}"
        )
    print()
    rg = medians.get("rg (seed tiers)")
    wrong = []
    for tool in ("triage (CLI)", "triage (MCP tool)"):
        m = medians[tool]
        if rg:
            ratio = rg.wall_seconds / m.wall_seconds
            verdict = "meets" if ratio >= GOAL_RATIO else "misses"
            goal = f"{verdict} the goal of {GOAL_RATIO}x"
            print(f"{tool}: {ratio:.2f}x ripgrep's pace with the seed's regex: {goal}")
        rss = "under" if m.peak_rss_mb < GOAL_RSS_MB else "OVER"
        print(f"{tool}: peak RSS {m.peak_rss_mb:.0f} MB, {rss} {GOAL_RSS_MB} MB")
        found = verdict_on_diagnosis(m, record)
        print(f"{tool}: {found}")
        if "matches" not in found:
            wrong.append(f"{tool}: {found}")
    return wrong


def verdict_on_diagnosis(triage: Measurement, record: dict[str, Any]) -> str:
    try:
        cause = json.loads(triage.stdout).get("root_cause") or {}
    except json.JSONDecodeError:
        return "printed no JSON report"
    found = (cause.get("category"), cause.get("culprit_ranks"))
    planted = (record["category"], record["culprit_ranks"])
    word = "matches" if found == planted else "DIFFERS from"
    return f"found {found[0]} on ranks {found[1]}: {word} what was planted ({planted[0]} on {planted[1]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size-gb", type=float, default=2.0, help="log set size (default 2; 0.05 for a dry run)"
    )
    parser.add_argument("--ranks", type=int, default=1024, help="world size (default 1024)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each tool; the median is printed")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out", help="where log sets are kept")
    args = parser.parse_args(argv)
    logs, record = generate(args.out, args.size_gb, args.ranks)
    wrong = report(run_tools(tool_commands(logs), args.runs), record, args.runs)
    solo = two_clients(logs)
    print(f"two MCP clients at once (a server each): calls took {solo[0]:.2f} s and {solo[1]:.2f} s")
    for problem in wrong:
        print(f"FAIL: the culprit is wrong. {problem}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
