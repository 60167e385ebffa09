"""A real Slurm for `@pytest.mark.slurm` tests: installed where missing, started once per session
on loopback with planted faults, torn down afterwards. Skips with the reason when it cannot run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.slurm import realslurm


@pytest.fixture(scope="session")
def real_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[realslurm.LocalSlurm]:
    reason = realslurm.install()
    if reason:
        pytest.skip(f"no real Slurm: {reason}")
    try:
        cluster = realslurm.start(tmp_path_factory.mktemp("slurm"))
    except (OSError, RuntimeError) as error:
        pytest.skip(f"no real Slurm: could not start it: {error}")
    previous = os.environ.get("SLURM_CONF")
    # The product reads Slurm the way an operator's shell does: through SLURM_CONF.
    os.environ["SLURM_CONF"] = cluster.env["SLURM_CONF"]
    try:
        realslurm.plant_faults(cluster)
        yield cluster
    finally:
        cluster.stop()
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
