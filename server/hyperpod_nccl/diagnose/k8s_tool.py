"""MCP tools for the Kubernetes side: list_kube_contexts, list_pods and get_pod_logs.

They reach the cluster through a context of the kubeconfig the server was started with (never a
kubeconfig path from the caller: see guard/kubeconfig.py) or an EKS cluster name, read with GET
only, and return summaries sized for an LLM's context: phase counts and the unhealthy pods, or
the tail of one container's log (redacted) with the triage engine's reading of it.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hyperpod_nccl.guard.kubeconfig import ContextInfo, KubeconfigRefused
from hyperpod_nccl.guard.validate import (
    ContainerName,
    EksClusterName,
    JobName,
    Namespace,
    PodName,
    Region,
    TailLines,
)
from hyperpod_nccl.models import Finding
from hyperpod_nccl.server_settings import current

# The Kubernetes client, the collectors and the analysers load when a tool is first called: the
# server answers its tool list without them.
if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

    from hyperpod_nccl.guard.k8s import ReadOnlyApiClient
    from hyperpod_nccl.snapshot.kubernetes import PodLog

_MAX_ROWS = 50
_EVIDENCE_PER_FINDING = 3

KubeContext = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9@:/._-]{1,253}$",
        description="A context from list_kube_contexts, e.g. arn:aws:eks:us-west-2:1111:cluster/ml-eks.",
    ),
]


async def _client(context: str | None, eks_cluster: str | None, region: str | None) -> ReadOnlyApiClient:
    from hyperpod_nccl.collect.eks_auth import KubernetesAccessError, kubernetes_client_for_eks_cluster

    try:
        if eks_cluster:
            if not region:
                raise ToolError("eks_cluster needs region (the EKS cluster's AWS region)")
            return await anyio.to_thread.run_sync(
                lambda: kubernetes_client_for_eks_cluster(eks_cluster, region)
            )
        return current().kubeconfig.client(context)
    except KubeconfigRefused as error:
        raise ToolError(str(error)) from None
    except KubernetesAccessError as error:
        raise ToolError(f"{error.issue.source}: {error.issue.message}") from None


class KubeContexts(BaseModel):
    kubeconfig: list[str] = Field(description="The kubeconfig file(s) the server was started with.")
    contexts: list[ContextInfo] = Field(
        description="Every context: its name, whether it is current, and "
        "why the server refuses it, if it does."
    )
    problem: str | None = Field(default=None, description="Why no kubeconfig could be read, if none could.")


def list_kube_contexts() -> KubeContexts:
    """List the Kubernetes contexts this server can use (names only, nothing secret).

    Use this before list_pods, get_pod_logs or run_diagnostic with `context`: the server only uses
    the kubeconfig its operator started it with, and some contexts may be refused (an exec
    credential plugin not allowlisted, a command in an auth-provider, a token file outside the
    kubeconfig's folder). For a HyperPod EKS cluster you can also pass `eks_cluster` + `region`.
    Returns the kubeconfig files read, each context with whether it may be used and why not, and
    any problem reading them.
    """
    kubeconfig = current().kubeconfig
    return KubeContexts(
        kubeconfig=[str(path) for path in kubeconfig.paths],
        contexts=kubeconfig.contexts(),
        problem=kubeconfig.problem,
    )


def _compact(findings: list[Finding]) -> list[Finding]:
    return [
        f.model_copy(update={"evidence": f.evidence[:_EVIDENCE_PER_FINDING]}) for f in findings if f.is_issue
    ]


class PodRow(BaseModel):
    pod: str = Field(description="namespace/name")
    phase: str
    problem: str = Field(description="What is wrong, e.g. `k8s.pod.crash_loop`.")
    detail: str = Field(description="The status or condition text as the API reports it.")
    restarts: int
    node: str | None


class PodList(BaseModel):
    scope: str
    complete: bool = Field(description="False when the pods could not be listed; see `problems`.")
    total: int
    by_phase: dict[str, int]
    unhealthy: list[PodRow] = Field(description=f"Pods with a problem, at most {_MAX_ROWS}.")
    unhealthy_total: int
    findings: list[Finding] = Field(description="The pod-lifecycle findings (FAIL/WARN) with commands.")
    problems: list[str] = Field(default_factory=list, description="Calls that failed, with the RBAC verb.")


def _row(pod: dict[str, Any]) -> PodRow | None:
    from hyperpod_nccl.analyze.pods import KINDS, pod_problems
    from hyperpod_nccl.snapshot.kubernetes import pod_key

    problems = pod_problems(pod)
    if not problems:
        return None
    statuses = pod["status"].get("containerStatuses") or []
    return PodRow(
        pod=pod_key(pod),
        phase=pod["status"].get("phase", "Unknown"),
        problem=KINDS[problems[0].kind].id,
        detail=problems[0].evidence.text[:300],
        restarts=sum(s.get("restartCount", 0) for s in statuses),
        node=pod.get("spec", {}).get("nodeName"),
    )


async def list_pods(
    namespace: Namespace | None = None,
    job: JobName | None = None,
    context: KubeContext | None = None,
    eks_cluster: EksClusterName | None = None,
    region: Region | None = None,
) -> PodList:
    """List the pods of a Kubernetes / HyperPod EKS cluster, a namespace or one training job, summarised.

    Use this to see at a glance which pods are Pending (with the scheduler's reason), in
    CrashLoopBackOff, OOMKilled (exit 137), failing an init container or an image pull, Evicted,
    or restarting, and on which node. Connect with a `context` from list_kube_contexts, or with
    `eks_cluster` + `region` (token signed with your AWS credentials; no aws CLI needed); without
    either the server kubeconfig's current context is used. Returns phase counts, the unhealthy pods (reason,
    restarts, node) and the findings with suggested kubectl commands — never the full pod list.
    """
    from hyperpod_nccl.analyze.pods import analyze_pods
    from hyperpod_nccl.collect.k8s import collect_pods
    from hyperpod_nccl.snapshot import Snapshot

    client = await _client(context, eks_cluster, region)
    kubernetes, issues = await collect_pods(client, namespace=namespace, job=job)
    if job:
        kubernetes.pods = kubernetes.job_pods()
    rows = [row for pod in kubernetes.pods if (row := _row(pod))]
    snapshot = Snapshot(collected_at=_now(), namespace=namespace, job=job, kubernetes=kubernetes)
    return PodList(
        scope=f"{namespace or 'all namespaces'}" + (f", job {job}" if job else ""),
        complete=not issues,
        total=len(kubernetes.pods),
        by_phase=dict(Counter(pod["status"].get("phase", "Unknown") for pod in kubernetes.pods)),
        unhealthy=rows[:_MAX_ROWS],
        unhealthy_total=len(rows),
        findings=_compact(analyze_pods(snapshot)),
        problems=[f"{issue.source}: {issue.message}" + _needs(issue.permission) for issue in issues],
    )


def _needs(permission: str | None) -> str:
    return f" (needs RBAC {permission})" if permission else ""


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


class PodLogResult(BaseModel):
    pod: str = Field(description="namespace/name")
    container: str
    containers: list[str] = Field(description="Every container of the pod (init containers first).")
    previous: bool
    node: str | None
    lines: int
    truncated: bool = Field(description="True when older lines were left out (only the tail was read).")
    text: str = Field(description="The last lines of the log, secrets redacted.")
    triage_findings: list[Finding] = Field(description="What the log triage engine found in these lines.")
    root_cause: str | None = Field(description="The triage engine's root cause, when it found one.")


async def _read_pod(core: CoreV1Api, pod: str, namespace: str) -> dict[str, Any]:
    response = await anyio.to_thread.run_sync(
        lambda: core.read_namespaced_pod(pod, namespace, _preload_content=False)
    )
    return json.loads(response.data)


def _choose_container(pod: dict[str, Any], container: str | None) -> tuple[str, list[str]]:
    from hyperpod_nccl.snapshot.kubernetes import GPU_RESOURCE, containers_of, pod_key, requested

    main = containers_of(pod)
    names = [c["name"] for c in containers_of(pod, init=True) + main]
    if container is None:
        # The training container is the one holding the GPUs; sidecars come and go.
        chosen = next(
            (c["name"] for c in main if requested(c, GPU_RESOURCE) > 0), main[0]["name"] if main else ""
        )
        return chosen, names
    if container not in names:
        raise ToolError(
            f"pod {pod_key(pod)} has no container {container!r}; its containers: {', '.join(names)}"
        )
    return container, names


async def _triage(log: PodLog) -> tuple[list[Finding], str | None]:
    from hyperpod_nccl.analyze.pod_logs import relabel, triage_logs

    if not log.text.strip():
        return [], None
    report, by_file = await anyio.to_thread.run_sync(triage_logs, [log])
    cause = report.root_cause
    return _compact([relabel(f, by_file) for f in report.findings]), cause.summary if cause else None


async def get_pod_logs(
    pod: PodName,
    namespace: Namespace,
    container: ContainerName | None = None,
    tail: TailLines = 200,
    previous: bool = False,
    context: KubeContext | None = None,
    eks_cluster: EksClusterName | None = None,
    region: Region | None = None,
) -> PodLogResult:
    """Read the last lines of one pod's log (kubectl logs --tail, optionally --previous), redacted.

    Use this after list_pods or a finding names a pod: `previous=true` reads the instance that
    crashed or was OOM-killed before the restart. Without `container`, the GPU (training)
    container is read. Connect as for list_pods. Returns the log tail (at most 2000 lines),
    secrets masked, plus what the log triage engine found in it (NCCL watchdog, EFA, version,
    exception lines) and its root cause when it has one.
    """
    import urllib3
    from kubernetes.client import CoreV1Api
    from kubernetes.client.exceptions import ApiException

    from hyperpod_nccl.collect.k8s_errors import issue_for
    from hyperpod_nccl.collect.k8s_logs import LogRequest, read_pod_log

    core = CoreV1Api(await _client(context, eks_cluster, region))
    try:
        obj = await _read_pod(core, pod, namespace)
        chosen, names = _choose_container(obj, container)
        request = LogRequest(namespace, pod, chosen, previous, obj.get("spec", {}).get("nodeName"))
        log = await anyio.to_thread.run_sync(read_pod_log, core, request, tail)
    except (ApiException, urllib3.exceptions.HTTPError, OSError) as error:
        issue = issue_for(f"pods/log {namespace}/{pod}", "pods/log: get", error)
        raise ToolError(f"{issue.source}: {issue.message}{_needs(issue.permission)}") from None
    findings, cause = await _triage(log)
    return PodLogResult(
        pod=f"{namespace}/{pod}",
        container=chosen,
        containers=names,
        previous=previous,
        node=request.node,
        lines=len(log.text.splitlines()),
        truncated=log.truncated,
        text=log.text,
        triage_findings=findings,
        root_cause=cause,
    )
