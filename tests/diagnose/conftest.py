"""moto's server for the diagnose tests, the planted EKS cluster, and per-test boto3 sessions
whose missing-in-moto calls are answered by a Stubber."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hyperpod_nccl.guard.aws import READ_OPERATIONS
from tests.diagnose.stubs import OneCallStub
from tests.diagnose.world import World, cluster_events, insights_rows, plant_eks_cluster
from tests.servers.moto_server import MotoServer, ReceivedRequest, start_moto_server

ALL_READS = frozenset(operation for operations in READ_OPERATIONS.values() for operation in operations)


@pytest.fixture(scope="package")
def moto() -> Iterator[MotoServer]:
    yield from start_moto_server()


@pytest.fixture(scope="package")
def world(moto: MotoServer) -> World:
    return plant_eks_cluster(moto.url)


@pytest.fixture
def endpoint(moto: MotoServer, world: World, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """Point boto3 at moto, and forget the requests the setup made."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    moto.received.clear()
    return moto


@dataclass
class Stubs:
    session: boto3.session.Session
    events: OneCallStub
    insights: OneCallStub

    def stub(self, service: str, operation: str) -> OneCallStub:
        return OneCallStub(self.session, service, operation)


def planted_stubs(
    session: boto3.session.Session,
    world: World,
    *,
    events: Callable[[OneCallStub, World], object] | None = None,
    insights: dict[str, Any] | None = None,
) -> Stubs:
    """The planted cluster's events and Insights rows, answered for `session`'s clients.

    `events` queues other ListClusterEvents answers (pages, errors); `insights` replaces the
    GetQueryResults answer."""
    events_stub = OneCallStub(session, "sagemaker", "ListClusterEvents")
    if events is None:
        events_stub.respond({"Events": cluster_events(world)})
    else:
        events(events_stub, world)
    insights_stub = OneCallStub(session, "logs", "GetQueryResults").respond(
        insights or {"status": "Complete", "results": insights_rows()}
    )
    return Stubs(session, events_stub, insights_stub)


@pytest.fixture
def default_session(endpoint: MotoServer, monkeypatch: pytest.MonkeyPatch) -> boto3.session.Session:
    """boto3's default session, which is what the CLI uses; a fresh one per test."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    boto3.setup_default_session()
    return boto3.DEFAULT_SESSION


@pytest.fixture
def stubs(default_session: boto3.session.Session, world: World) -> Stubs:
    return planted_stubs(default_session, world)


@contextmanager
def aws_env(moto: MotoServer) -> Iterator[None]:
    """Fake credentials and moto's endpoint, for fixtures wider than one test."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            patch.setenv(name, "testing")
        patch.setenv("AWS_CONFIG_FILE", "/dev/null")
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        patch.setenv("AWS_ENDPOINT_URL", moto.url)
        yield


def non_reads(requests: list[ReceivedRequest]) -> set[str]:
    """Operations that are neither on the read allowlist nor a REST GET (eks:DescribeCluster)."""
    return {r.operation for r in requests if r.operation not in ALL_READS and r.method != "GET"}


def assert_only_reads(requests: list[ReceivedRequest]) -> None:
    assert requests, "nothing reached moto"
    assert non_reads(requests) == set()
