"""The last lines of the job's pod logs, current and previous container instances.

Fetched concurrently with a bound, since a job can have hundreds of pods, and redacted before
they are stored. Containers that never started have no log to read and are not asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import urllib3
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from hyperpod_nccl.collect.k8s_errors import issue_for
from hyperpod_nccl.guard.redact import redact_text
from hyperpod_nccl.guard.validate import MAX_TAIL_LINES
from hyperpod_nccl.snapshot import CollectionIssue
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, PodLog, container_statuses

LOG_CONCURRENCY = 8
# Without a named job every training pod in scope qualifies; past this many, the ones that
# failed or restarted are read first and the rest are recorded as skipped.
MAX_UNSCOPED_LOG_PODS = 64


@dataclass(frozen=True)
class LogRequest:
    namespace: str
    pod: str
    container: str
    previous: bool
    node: str | None


def _has_run(status: dict[str, Any]) -> bool:
    state = status.get("state") or {}
    return "running" in state or "terminated" in state or "terminated" in (status.get("lastState") or {})


def _trouble(pod: dict[str, Any]) -> int:
    statuses = container_statuses(pod) + container_statuses(pod, init=True)
    return sum(s.get("restartCount", 0) for s in statuses) + (pod["status"].get("phase") == "Failed")


def requests_for(pod: dict[str, Any]) -> list[LogRequest]:
    """Current log of every container that ran; previous log of every one that restarted."""
    meta, requests = pod["metadata"], []
    node = pod.get("spec", {}).get("nodeName")
    for status in container_statuses(pod, init=True) + container_statuses(pod):
        if not _has_run(status):
            continue
        base = partial(LogRequest, meta["namespace"], meta["name"], status["name"], node=node)
        requests.append(base(previous=False))
        if status.get("restartCount", 0) > 0:
            requests.append(base(previous=True))
    return requests


def _evicted(pod: dict[str, Any]) -> bool:
    # The kubelet removed an evicted pod's containers: there is no log left to ask for.
    return pod["status"].get("reason") == "Evicted"


def pods_to_read(snapshot: KubernetesSnapshot) -> tuple[list[dict[str, Any]], int]:
    pods = [pod for pod in snapshot.job_pods() if not _evicted(pod)]
    if snapshot.job is not None or len(pods) <= MAX_UNSCOPED_LOG_PODS:
        return pods, 0
    ranked = sorted(pods, key=_trouble, reverse=True)
    return ranked[:MAX_UNSCOPED_LOG_PODS], len(pods) - MAX_UNSCOPED_LOG_PODS


def read_log(core: CoreV1Api, request: LogRequest, tail_lines: int) -> str:
    response = core.read_namespaced_pod_log(
        request.pod,
        request.namespace,
        container=request.container,
        previous=request.previous,
        tail_lines=tail_lines,
        # Each line prefixed with the UTC time the runtime received it: the cluster timeline places
        # lines whose own stamps carry no year or zone (PyTorch's `E1123 21:36:41`).
        timestamps=True,
        _preload_content=False,
    )
    return response.data.decode("utf-8", errors="replace")


def read_pod_log(core: CoreV1Api, request: LogRequest, tail_lines: int) -> PodLog:
    text = read_log(core, request, tail_lines)
    return PodLog(
        namespace=request.namespace,
        pod=request.pod,
        container=request.container,
        previous=request.previous,
        node=request.node,
        text=redact_text(text),
        truncated=text.count("\n") >= tail_lines,
    )


async def fetch_logs(
    core: CoreV1Api, requests: list[LogRequest], tail_lines: int
) -> tuple[list[PodLog], list[CollectionIssue]]:
    tail_lines = max(1, min(tail_lines, MAX_TAIL_LINES))
    limiter = anyio.CapacityLimiter(LOG_CONCURRENCY)
    logs: list[PodLog] = []
    issues: list[CollectionIssue] = []

    async def fetch(request: LogRequest) -> None:
        try:
            # Redaction is CPU work: it runs in the worker thread, not on the event loop.
            log = await anyio.to_thread.run_sync(read_pod_log, core, request, tail_lines, limiter=limiter)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as error:
            where = f"pods/log {request.namespace}/{request.pod} ({request.container})"
            issues.append(issue_for(where, "pods/log: get", error))
            return
        logs.append(log)

    async with anyio.create_task_group() as group:
        for request in requests:
            group.start_soon(fetch, request)
    logs.sort(key=lambda log: (log.namespace, log.pod, log.container, log.previous))
    return logs, issues


async def collect_pod_logs(
    core: CoreV1Api, snapshot: KubernetesSnapshot, *, tail_lines: int, progress: Callable[[str], None]
) -> tuple[list[PodLog], list[CollectionIssue]]:
    pods, skipped = pods_to_read(snapshot)
    requests = [request for pod in pods for request in requests_for(pod)]
    logs, issues = await fetch_logs(core, requests, tail_lines)
    if skipped:
        issues.append(
            CollectionIssue(
                source="kubernetes pods/log",
                kind="skipped",
                message=f"read the logs of {len(pods)} training pods (failed or restarted first) and "
                f"skipped {skipped}; name the job (--job) to read all of its pods",
            )
        )
    progress(f"kubernetes: read {len(logs)} container logs from {len(pods)} pods")
    return logs, issues
