"""A real Prometheus holding the generated DCGM history, once per session; skipped with the
reason when Prometheus cannot be installed or started."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.metrics import dcgmgen, realprom


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[realprom.LocalPrometheus]:
    reason = realprom.install()
    if reason:
        pytest.skip(f"no real Prometheus: {reason}")
    root = tmp_path_factory.mktemp("prometheus")
    text, _ = dcgmgen.generate()
    try:
        server = realprom.start(realprom.backfill(text, root), root)
    except (OSError, RuntimeError) as error:
        pytest.skip(f"no real Prometheus: could not start it: {error}")
    try:
        yield server
    finally:
        server.stop()
