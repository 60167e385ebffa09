"""A botocore Stubber for one operation of a boto3 session; every other call goes to moto over HTTP.

moto has no ListClusterEvents, and its Logs Insights ignores `stats`; those calls (and the
errors a test plants) are answered by a real `botocore.stub.Stubber`, which checks each
response against the service model. The product's clients keep their read-only guard: it
runs at before-parameter-build, ahead of the stub's before-call answer.
"""

from __future__ import annotations

import time
from typing import Any

import boto3
from botocore import xform_name
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.stub import Stubber


class OneCallStub:
    def __init__(self, session: boto3.session.Session, service: str, operation: str) -> None:
        # This client never sends anything: the Stubber answers every call made on it.
        self._client = session.client(service, region_name="us-west-2")
        self.stubber = Stubber(self._client)
        self.stubber.activate()
        self._method = xform_name(operation)
        self.calls: list[dict[str, Any]] = []
        self.delay_s = 0.0  # how long each answer takes, to make overlapping calls observable
        self.spans: list[tuple[float, float]] = []
        service_id = self._client.meta.service_model.service_id.hyphenize()
        session.events.register(f"before-parameter-build.{service_id}.{operation}", self._remember)
        session.events.register(f"before-call.{service_id}.{operation}", self._answer)

    def respond(self, response: dict[str, Any]) -> OneCallStub:
        self.stubber.add_response(self._method, response)
        return self

    def fail(self, code: str, status: int = 400, message: str = "") -> OneCallStub:
        self.stubber.add_client_error(
            self._method, service_error_code=code, service_message=message or code, http_status_code=status
        )
        return self

    def _remember(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["one_call_stub_params"] = dict(params)

    def _answer(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        params = context.get("one_call_stub_params", {})
        self.calls.append(params)
        started = time.monotonic()
        time.sleep(self.delay_s)
        self.spans.append((started, time.monotonic()))
        try:
            parsed = getattr(self._client, self._method)(**params)
        except ClientError as error:
            status = error.response["ResponseMetadata"]["HTTPStatusCode"]
            return AWSResponse("stub", status, {}, None), error.response
        return AWSResponse("stub", 200, {}, None), parsed
