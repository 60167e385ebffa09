"""Run a shipped probe script on a HyperPod node through Session Manager.

`ssm:StartSession` opens a session with a non-interactive command document on the node's
`sagemaker-cluster:<cluster-id>_<group>-<instance-id>` target; `session-manager-plugin` carries
its output back; `ssm:TerminateSession` closes it. `ssm:SendCommand` is never used.

The command the node runs is a fixed wrapper around the script: the script travels as base64 of
its gzip, a string of `[A-Za-z0-9+/=]` that no shell interprets, and parameters travel as
single-quoted environment assignments whose values the catalogue already restricted. The plugin
is started from an argv list; no local shell ever sees any of it.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import re
import shutil
from typing import Any

import anyio
from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_nccl.guard.aws import make_client
from hyperpod_nccl.guard.ssm import DOCUMENT
from hyperpod_nccl.probes.catalog import SECTION_MARKER, ProbeScript
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult
from hyperpod_nccl.probes.runners.process import run_argv

PLUGIN = "session-manager-plugin"
INSTALL_HINT = (
    "session-manager-plugin not found on PATH. Install session-manager-plugin "
    "(https://docs.aws.amazon.com/systems-manager/latest/userguide/"
    "session-manager-working-with-install-plugin.html) to run on-node probes."
)
_SECTION_PREFIX = SECTION_MARKER.split("{name}")[0]
_BASE64 = re.compile(r"[A-Za-z0-9+/=]+")
_TRANSIENT = {"ThrottlingException", "RequestLimitExceeded", "InternalServerError", "ServiceUnavailable"}
# Not retried: the answer will be the same a second later.
_DENIED = {"AccessDeniedException", "AccessDenied", "UnauthorizedOperation"}


def remote_command(script: ProbeScript) -> str:
    """The one line the node's shell runs: decode the shipped script and feed it to `sh -s`."""
    payload = base64.b64encode(gzip.compress(script.text.encode("utf-8"), mtime=0)).decode("ascii")
    if not _BASE64.fullmatch(payload):  # by construction; checked because a shell will read it
        raise ValueError("script payload is not plain base64")
    assignments = "".join(f"{key}='{value}' " for key, value in sorted(script.params.items()))
    return f"printf %s {payload} | base64 -d | gzip -dc | env {assignments}sh -s"


def session_parameters(script: ProbeScript, ssm_target: str) -> dict[str, Any]:
    return {
        "Target": ssm_target,
        "DocumentName": DOCUMENT,
        "Parameters": {"command": [remote_command(script)]},
    }


def plugin_argv(
    plugin: str, session: dict[str, Any], region: str, parameters: dict[str, Any], endpoint: str
) -> list[str]:
    """The plugin's command line, as the AWS CLI builds it: response, region, operation, profile,
    request, endpoint, each one argv element."""
    response = {key: session[key] for key in ("SessionId", "TokenValue", "StreamUrl")}
    profile = os.environ.get("AWS_PROFILE", "")
    return [plugin, json.dumps(response), region, "StartSession", profile, json.dumps(parameters), endpoint]


def _start_failure(target: NodeTarget, script: ProbeScript, error: Exception) -> ProbeResult:
    code = error.response.get("Error", {}).get("Code", "") if isinstance(error, ClientError) else ""
    if code in _DENIED:
        status, retryable = "access_denied", False
        message = f"ssm:StartSession denied ({code}): grant ssm:StartSession and ssm:TerminateSession"
    elif code == "TargetNotConnected":
        status, retryable = "unreachable", False
        message = "TargetNotConnected: the node's SSM agent is not reachable"
    else:
        status, retryable = "error", code in _TRANSIENT or isinstance(error, BotoCoreError)
        message = f"ssm:StartSession failed: {error}"
    return ProbeResult(target=target, script=script.name, status=status, error=message, retryable=retryable)


class SsmRunner:
    def __init__(self, region: str, *, client: Any | None = None, plugin: str | None = None) -> None:
        self.region = region
        self._client = client
        self._plugin = plugin

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = make_client("ssm", region=self.region, probe_sessions=True)
        return self._client

    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult:
        plugin = self._plugin or shutil.which(PLUGIN)
        if plugin is None:
            return ProbeResult(target=target, script=script.name, status="error", error=INSTALL_HINT)
        if not target.ssm_target:
            return ProbeResult(
                target=target, script=script.name, status="error", error="no SSM target for node"
            )
        parameters = session_parameters(script, target.ssm_target)
        # Created here, on the event loop's thread: boto3 clients are shared safely across threads,
        # but creating one from many worker threads at once is not safe.
        client = self.client
        try:
            session = await anyio.to_thread.run_sync(lambda: client.start_session(**parameters))
        except (ClientError, BotoCoreError) as error:
            return _start_failure(target, script, error)
        try:
            argv = plugin_argv(plugin, session, self.region, parameters, client.meta.endpoint_url)
            outcome = await run_argv(argv, timeout_s=timeout_s, hold_stdin=True)
        finally:
            with anyio.CancelScope(shield=True):
                await self._terminate(session["SessionId"])
        return _plugin_result(
            target, script, outcome.output, outcome.returncode, outcome.timed_out, timeout_s
        )

    async def _terminate(self, session_id: str) -> None:
        # A failed close is not worth a retry: the session times out on its own.
        with contextlib.suppress(ClientError, BotoCoreError):
            await anyio.to_thread.run_sync(lambda: self.client.terminate_session(SessionId=session_id))


def _plugin_result(
    target: NodeTarget,
    script: ProbeScript,
    output: str,
    returncode: int | None,
    timed_out: bool,
    timeout_s: float,
) -> ProbeResult:
    if timed_out:
        return ProbeResult(
            target=target,
            script=script.name,
            status="timeout",
            output=output,
            error=f"timed out after {timeout_s:.0f} s; partial output kept. Check the node's SSM agent.",
        )
    if returncode == 0:
        return ProbeResult(target=target, script=script.name, status="ok", output=output)
    return ProbeResult(
        target=target,
        script=script.name,
        status="partial" if _SECTION_PREFIX in output else "error",
        output=output,
        error=f"session-manager-plugin exited with status {returncode}: {output.strip()[-300:]}",
        retryable=False,
    )
