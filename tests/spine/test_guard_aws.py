"""The AWS read-only guard, proven over real HTTP against moto's server."""

from __future__ import annotations

from collections.abc import Iterator

import botocore.session
import pytest

from hyperpod_nccl.guard.aws import (
    PROBE_SESSION_OPERATIONS,
    READ_OPERATIONS,
    ReadOnlyViolation,
    iam_actions,
    make_client,
    make_read_only_hook,
)
from hyperpod_nccl.guard.prometheus import amp_iam_actions
from hyperpod_nccl.probes.catalog import probe_script
from hyperpod_nccl.probes.runners.ssm import session_parameters
from tests.servers.moto_server import MotoServer, start_moto_server

PARAMETER_CHECKED = {"StartSession", "TerminateSession"}

READ_PREFIXES = ("Describe", "List", "Get")
READS_WITHOUT_A_READ_PREFIX = {"FilterLogEvents", "StartQuery"}  # log search and Logs Insights query


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    yield from start_moto_server()


@pytest.fixture
def endpoint(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    moto.received.clear()
    return moto


@pytest.mark.parametrize(
    ("service", "operation", "params"),
    [
        ("ec2", "authorize_security_group_ingress", {"GroupId": "sg-12345678", "IpPermissions": []}),
        ("ec2", "terminate_instances", {"InstanceIds": ["i-0abc123def4567890"]}),
        ("sagemaker", "delete_cluster", {"ClusterName": "ml-cluster"}),
        ("sagemaker", "batch_delete_cluster_nodes", {"ClusterName": "ml-cluster", "NodeIds": ["i-0abc"]}),
        ("logs", "delete_log_group", {"logGroupName": "/aws/sagemaker/Clusters/ml-cluster"}),
        (
            "ssm",
            "send_command",
            {"InstanceIds": ["i-0abc123def4567890"], "DocumentName": "AWS-RunShellScript"},
        ),
        ("ssm", "start_session", {"Target": "sagemaker-cluster:abc_workers-i-0abc123def4567890"}),
    ],
)
def test_mutating_call_is_refused_before_anything_reaches_the_server(
    endpoint: MotoServer, service: str, operation: str, params: dict
) -> None:
    client = make_client(service, region="us-west-2")
    with pytest.raises(ReadOnlyViolation) as refused:
        getattr(client, operation)(**params)
    assert client.meta.method_to_api_mapping[operation] in str(refused.value)
    assert endpoint.received == []


def test_read_call_reaches_the_server(endpoint: MotoServer) -> None:
    groups = make_client("ec2", region="us-west-2").describe_security_groups()["SecurityGroups"]
    assert groups  # moto creates the default VPC's group
    assert endpoint.operations() == ["DescribeSecurityGroups"]


def test_only_the_probe_runner_may_open_ssm_sessions(endpoint: MotoServer) -> None:
    probe_client = make_client("ssm", region="us-west-2", probe_sessions=True)
    with pytest.raises(ReadOnlyViolation):
        probe_client.send_command(InstanceIds=["i-0abc123def4567890"], DocumentName="AWS-RunShellScript")
    hook = make_read_only_hook("ssm", probe_sessions=True)
    start_session = probe_client.meta.service_model.operation_model("StartSession")
    shipped = session_parameters(
        probe_script("node_health"), "sagemaker-cluster:abc123_workers-i-0abc123def4567890"
    )
    hook(model=start_session, params=shipped)  # a shipped probe: allowed, does not raise
    assert endpoint.received == []


def test_unknown_service_cannot_get_a_client() -> None:
    with pytest.raises(ValueError, match="does not use the AWS service 's3'"):
        make_client("s3", region="us-west-2")


def _service_model(service: str):
    return botocore.session.get_session().get_service_model(service)


@pytest.mark.parametrize("service", sorted(READ_OPERATIONS))
def test_allowlist_holds_only_read_operations_that_exist(service: str) -> None:
    model = _service_model(service)
    for operation in READ_OPERATIONS[service]:
        assert operation in model.operation_names, f"{service}:{operation} is not in botocore's model"
        assert operation.startswith(READ_PREFIXES) or operation in READS_WITHOUT_A_READ_PREFIX, (
            f"{service}:{operation} is not a read operation"
        )


@pytest.mark.parametrize("service", sorted(set(READ_OPERATIONS) | set(PROBE_SESSION_OPERATIONS)))
def test_every_operation_outside_the_allowlist_is_refused(service: str) -> None:
    model = _service_model(service)
    hook = make_read_only_hook(service, probe_sessions=True)
    allowed = READ_OPERATIONS.get(service, frozenset()) | PROBE_SESSION_OPERATIONS.get(service, frozenset())
    refused = 0
    for name in model.operation_names:
        if name in PARAMETER_CHECKED:
            continue  # allowed with some parameters only: tests/security/test_ssm_guard.py
        if name in allowed:
            hook(model=model.operation_model(name))
            continue
        with pytest.raises(ReadOnlyViolation):
            hook(model=model.operation_model(name))
        refused += 1
    assert refused > 0


def test_probe_session_operations_are_exactly_start_and_terminate() -> None:
    assert dict(PROBE_SESSION_OPERATIONS) == {"ssm": frozenset({"StartSession", "TerminateSession"})}


def test_iam_actions_are_derived_from_the_allowlist() -> None:
    actions = iam_actions()
    assert "sagemaker:ListClusterNodes" in actions
    assert "ssm:StartSession" in actions
    assert "ssm:SendCommand" not in actions
    assert {"aps:QueryMetrics", "aps:GetSeries"} <= set(
        actions
    )  # the Prometheus reader's (guard/prometheus.py)
    assert len(actions) == sum(map(len, READ_OPERATIONS.values())) + 2 + len(amp_iam_actions())
