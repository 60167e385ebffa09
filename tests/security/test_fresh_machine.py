"""A machine booted a minute ago: time.monotonic() reads under 60 s. The EKS token must be signed on
first use whatever the clock says (it once was signed only once monotonic() passed the 10-minute
refresh interval, so a fresh CI runner sent every Kubernetes call unauthenticated). Run for real
in a time namespace (`unshare -T`), where the monotonic clock starts near zero."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROGRAM = """
import base64, time
from hyperpod_nccl.collect.eks_auth import TOKEN_PREFIX, kubernetes_client_for_eks
assert time.monotonic() < 600, time.monotonic()
ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\\nMIIBfake\\n-----END CERTIFICATE-----\\n").decode()
client = kubernetes_client_for_eks("ml-eks", "us-west-2", "https://eks.example", ca)
token = client.configuration.api_key.get("authorization", "")
assert token.startswith(TOKEN_PREFIX), "no token was signed"
print(f"monotonic={time.monotonic():.0f} token={token[:20]}")
"""


def _fresh_clock() -> list[str]:
    """`unshare` argv that starts a time namespace whose monotonic and boot clocks read ~30 s
    (nothing, when this process already runs on such a clock, e.g. `make test` in one)."""
    if time.monotonic() < 300:
        return []
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a time namespace (CLONE_NEWTIME)")
    uptime = int(float(Path("/proc/uptime").read_text().split()[0]))
    offset = max(uptime - 30, 0)
    argv = ["unshare", "-T", f"--monotonic=-{offset}", f"--boottime=-{offset}"]
    if subprocess.run([*argv, "true"], capture_output=True).returncode != 0:
        pytest.skip("this kernel or sandbox has no time namespaces")
    return argv


def test_the_eks_token_is_signed_on_first_use_on_a_machine_up_for_seconds() -> None:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    done = subprocess.run(
        [*_fresh_clock(), sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    monotonic = int(done.stdout.split("monotonic=")[1].split()[0])
    assert monotonic < 600 and "token=k8s-aws-v1." in done.stdout
