"""A real Slurm on loopback for the tests: Debian's slurm-wlm and munge, installed where missing,
one slurmctld and two slurmd processes (multiple-slurmd on one host, distinct ports), and a third
node with no slurmd at all, all under a temporary directory.

`plant_faults` sets the scene the tests read back through the product: a drained node, a down
node, and a running job whose batch script breaks HyperPod's auto-resume rules.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "munged", "scontrol", "sinfo", "sbatch", "munge", "unmunge")
PACKAGES = ("slurm-wlm", "munge")
DRAINED, DOWN, WORKER = "n2", "n3", "n1"
DRAIN_REASON = "Kill task failed"
DOWN_REASON = "gpu count reported lower than configured (7 < 8)"

# The auto-resume mistakes seed 002 warns about: a stale SLURM_JOB_NODELIST, no --exclusive, and
# a launch step without --auto-resume=1.
BATCH_SCRIPT = """\
#!/bin/bash
#SBATCH --job-name=llama-pretrain
#SBATCH --nodes=1
#SBATCH --time=00:10:00
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR
srun sleep 300
"""


def missing_binaries() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name) is None]


def install() -> str | None:
    """Install slurm-wlm and munge with apt-get where missing; a reason to skip if that fails."""
    if not missing_binaries():
        return None
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        missing = ", ".join(missing_binaries())
        return f"Slurm is not installed ({missing} missing) and apt-get as root is unavailable"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    )
    for argv in steps:
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(argv)}` timed out"
        if done.returncode != 0:
            return f"`{' '.join(argv)}` failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    missing = missing_binaries()
    return f"installed {' '.join(PACKAGES)} but {', '.join(missing)} still missing" if missing else None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _slurm_conf(root: Path, ports: list[int]) -> str:
    ctld, *node_ports = ports
    nodes = "\n".join(
        f"NodeName=n{i} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=100"
        for i, port in enumerate(node_ports, start=1)
    )
    return f"""\
ClusterName=hpncclci
SlurmctldHost=localhost
SlurmctldPort={ctld}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
# No systemd or cgroups in a container: track processes by /proc, no task plugin, no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=300
{nodes}
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class LocalSlurm:
    root: Path
    env: Mapping[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    job_id: str | None = None

    def run(self, *argv: str, check: bool = True) -> str:
        done = subprocess.run(
            argv, env=dict(self.env), capture_output=True, text=True, timeout=30, check=False
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def _spawn(self, *argv: str) -> None:
        log = (self.root / "log" / f"{argv[0]}-{len(self.processes)}.out").open("wb")
        self.processes.append(
            subprocess.Popen(
                argv, env=dict(self.env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )

    def wait_for(self, what: str, probe: list[str], expect: str, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if expect in self.run(*probe, check=False):
                return
            time.sleep(0.3)
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in (self.root / "log").glob("*"))
        raise RuntimeError(f"timed out waiting for {what}\n{logs}")

    def cancel_job(self) -> None:
        """Cancel the job and let slurmd reap it, so no slurmstepd outlives the cluster."""
        if not self.job_id:
            return
        self.run("scancel", self.job_id, check=False)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            state = self.run("squeue", "-h", "-j", self.job_id, "-t", "all", "-o", "%T", check=False).strip()
            if state in ("", "CANCELLED"):
                break
            time.sleep(0.3)
        self.job_id = None

    def stop_daemon(self, name: str) -> None:
        for process in self.processes:
            if process.args[0] == name and process.poll() is None:
                process.terminate()
                process.wait(timeout=10)

    def _job_steps(self) -> list[int]:
        """slurmstepd and job processes of this cluster: slurmd hands them its SLURM_CONF."""
        marker = f"SLURM_CONF={self.env['SLURM_CONF']}".encode()
        started = {p.pid for p in self.processes}
        pids = []
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                if marker in environ.read_bytes().split(b"\0"):
                    pids.append(int(environ.parent.name))
            except OSError:
                continue
        return [pid for pid in pids if pid not in started and pid != os.getpid()]

    def stop(self) -> None:
        self.cancel_job()
        for process in reversed(self.processes):
            process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        # A step whose slurmd is gone waits for it forever: end the ones this cluster started.
        for pid in self._job_steps():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _munge_answers(socket_path: Path) -> bool:
    argv = f"munge -n --socket {socket_path} | unmunge --socket {socket_path}"
    return subprocess.run(argv, shell=True, capture_output=True, timeout=10, check=False).returncode == 0


def _start_munge(cluster: LocalSlurm) -> None:
    """A munged of this cluster's own (key, socket, seed under its root), named in slurm.conf's
    AuthInfo: nothing shared with the host's munge or with another test session's cluster."""
    root = cluster.root
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    cluster._spawn(
        "munged", "-F", "--force", f"--socket={root}/munge.sock", f"--key-file={key}",
        f"--pid-file={root}/munged.pid", f"--log-file={root}/log/munged.log",
        f"--seed-file={root}/munged.seed",
    )  # fmt: skip
    deadline = time.monotonic() + 15
    while not _munge_answers(root / "munge.sock"):
        if time.monotonic() > deadline:
            raise RuntimeError("munged did not start")
        time.sleep(0.2)


def start(root: Path) -> LocalSlurm:
    for sub in ("state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, _free_ports(4)), encoding="utf-8")
    cluster = LocalSlurm(root=root, env={**os.environ, "SLURM_CONF": str(conf)})
    try:
        _start_munge(cluster)
        cluster._spawn("slurmctld", "-D", "-i")
        cluster.wait_for("slurmctld", ["scontrol", "ping"], "is UP")
        # n1 and n2 get a slurmd each; n3 has none, as a node whose daemon died would.
        cluster._spawn("slurmd", "-D", "-N", "n1")
        cluster._spawn("slurmd", "-D", "-N", "n2")
        cluster.wait_for("n1 and n2", ["sinfo", "-h", "-N", "-t", "idle", "-o", "%N"], "n2")
        cluster.wait_for("n1 and n2", ["sinfo", "-h", "-N", "-t", "idle", "-o", "%N"], "n1")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def plant_faults(cluster: LocalSlurm) -> None:
    cluster.run("scontrol", "update", f"nodename={DRAINED}", "state=drain", f"reason={DRAIN_REASON}")
    cluster.run("scontrol", "update", f"nodename={DOWN}", "state=down", f"reason={DOWN_REASON}")
    script = cluster.root / "train.sbatch"
    script.write_text(BATCH_SCRIPT, encoding="utf-8")
    out = cluster.run("sbatch", "--parsable", f"--output={cluster.root}/log/job-%j.out", str(script))
    cluster.job_id = out.strip().split(";")[0]
    cluster.wait_for("the job to run", ["squeue", "-h", "-j", cluster.job_id, "-o", "%T"], "RUNNING")
