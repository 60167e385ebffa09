"""Test-wide safety: no real AWS credentials, no instance-metadata lookups, no stray endpoints."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperpod_nccl import server_settings
from hyperpod_nccl.guard.boundary import FileBoundary
from hyperpod_nccl.guard.kubeconfig import ServerKubeconfig


@pytest.fixture(autouse=True)
def _offline_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for variable in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")


@pytest.fixture
def server_files(tmp_path: Path) -> Iterator[Path]:
    """An in-process MCP server that reads and writes under tmp_path, as
    `serve --allow-dir TMP --output-dir TMP` sets it up."""
    previous = server_settings._current
    server_settings.configure(
        server_settings.ServerSettings(
            FileBoundary((tmp_path.resolve(),), tmp_path.resolve()), ServerKubeconfig([], None)
        )
    )
    yield tmp_path
    server_settings._current = previous


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, the loop the MCP SDK's stdio and HTTP transports use."""
    return "asyncio"


# Under `make test` (pytest -n auto --dist loadgroup) each group runs in one worker, in one go. A
# group is a test file, except where a package shares a server across its files: moto keeps its AWS
# state per process, so tests/diagnose's package-scoped planted cluster must be planted once, as in a
# serial run.
_PACKAGES_RUN_WHOLE = ("diagnose",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        relative = item.path.relative_to(tests)
        whole = relative.parts[0] in _PACKAGES_RUN_WHOLE
        item.add_marker(pytest.mark.xdist_group(relative.parts[0] if whole else relative.as_posix()))
