"""A real Prometheus on loopback for the tests: Debian's `prometheus` package (installed where
missing), its TSDB backfilled from generated OpenMetrics with promtool, started for the session.

The fixture's samples carry fixed 2026 timestamps and Prometheus keeps them however old they
are (retention is set far out and counts from the newest block anyway); every query the tests
and the product make names its own `time`/`start`/`end`, so nothing depends on the wall clock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

BINARIES = ("prometheus", "promtool")
PACKAGE = "prometheus"


def install() -> str | None:
    """apt-get install prometheus where missing; a reason to skip when that cannot be done."""
    if all(shutil.which(name) for name in BINARIES):
        return None
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return "prometheus/promtool are not installed and apt-get as root is unavailable"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = (
        ["apt-get", "update", "-qq"],
        # --no-install-recommends: the package then starts no service and pulls no exporters.
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", PACKAGE],
    )
    for argv in steps:
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(argv)}` timed out"
        if done.returncode != 0:
            return f"`{' '.join(argv)}` failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    missing = [name for name in BINARIES if shutil.which(name) is None]
    return f"installed {PACKAGE} but {', '.join(missing)} still missing" if missing else None


def backfill(openmetrics: str, root: Path) -> Path:
    source = root / "fixture.om"
    source.write_text(openmetrics, encoding="utf-8")
    data = root / "data"
    done = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"promtool failed: {done.stderr.strip()[-500:]}")
    source.unlink()
    return data


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalPrometheus:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def start(data: Path, root: Path) -> LocalPrometheus:
    config = root / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n", encoding="utf-8")  # scrapes nothing
    port = _free_port()
    log = root / "prometheus.log"
    argv = [
        "prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y",
        "--log.level=warn",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = LocalPrometheus(url=f"http://127.0.0.1:{port}", process=process, log=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {log.read_text(errors='replace')[-800:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.url}/-/ready", timeout=1).status_code == 200:
                return server
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"prometheus did not become ready: {log.read_text(errors='replace')[-800:]}")
