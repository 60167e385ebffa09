"""The Kubernetes collector: reads nodes, pods, events, services, endpoints, network policies,
namespaces, the kube-system daemonsets, the node leases and the job's pod logs into a KubernetesSnapshot.

Reads only (GET through ReadOnlyApiClient), never exec. Every list is read page by page. A call
that fails becomes a CollectionIssue naming the RBAC verb it needed, and the rest carries on;
an API server that cannot be reached, or that rejects the credentials, stops the collection
after one call instead of timing out on every other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import urllib3
import yaml
from kubernetes import config as kube_config
from kubernetes.client import AppsV1Api, Configuration, CoordinationV1Api, CoreV1Api, NetworkingV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from hyperpod_nccl.collect.eks_auth import KubernetesAccessError
from hyperpod_nccl.collect.k8s_errors import issue_for
from hyperpod_nccl.collect.k8s_logs import collect_pod_logs
from hyperpod_nccl.collect.k8s_trim import TRIMMERS
from hyperpod_nccl.guard.k8s import ReadOnlyApiClient, read_only_api_client
from hyperpod_nccl.snapshot import CollectionIssue
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot

Progress = Callable[[str], None]
_PAGE_SIZE = 500
_NOT_A_KUBECONFIG = (
    ConfigException,
    OSError,
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
    yaml.YAMLError,
)


@dataclass(frozen=True)
class _Listing:
    field: str  # KubernetesSnapshot field the items go into
    permission: str  # RBAC verb, as `kubectl auth can-i` names it
    call: Callable[..., Any]


def kubernetes_client_from_kubeconfig(path: str | None, context: str | None) -> ReadOnlyApiClient:
    """A read-only client from a kubeconfig file (default: $KUBECONFIG or ~/.kube/config)."""
    configuration = Configuration()
    try:
        kube_config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration, persist_config=False
        )
    except _NOT_A_KUBECONFIG as error:
        # /etc/passwd parses as a YAML string, not a mapping: any of these means "not a kubeconfig".
        reason = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
        raise KubernetesAccessError(
            CollectionIssue(source="kubeconfig", kind="error", message=f"cannot use the kubeconfig: {reason}")
        ) from None
    return read_only_api_client(configuration)


def _pods_listing(api_client: ReadOnlyApiClient, namespace: str | None) -> _Listing:
    core = CoreV1Api(api_client)
    call = partial(core.list_namespaced_pod, namespace) if namespace else core.list_pod_for_all_namespaces
    return _Listing("pods", "pods: list", call)


def _listings(api_client: ReadOnlyApiClient, namespace: str | None) -> list[_Listing]:
    core, net, apps = CoreV1Api(api_client), NetworkingV1Api(api_client), AppsV1Api(api_client)

    def scoped(namespaced: Callable[..., Any], everywhere: Callable[..., Any]) -> Callable[..., Any]:
        return partial(namespaced, namespace) if namespace else everywhere

    return [
        _pods_listing(api_client, namespace),
        _Listing("nodes", "nodes: list", core.list_node),
        _Listing(
            "events", "events: list", scoped(core.list_namespaced_event, core.list_event_for_all_namespaces)
        ),
        _Listing(
            "services",
            "services: list",
            scoped(core.list_namespaced_service, core.list_service_for_all_namespaces),
        ),
        _Listing(
            "endpoints",
            "endpoints: list",
            scoped(core.list_namespaced_endpoints, core.list_endpoints_for_all_namespaces),
        ),
        _Listing(
            "network_policies",
            "networkpolicies: list",
            scoped(net.list_namespaced_network_policy, net.list_network_policy_for_all_namespaces),
        ),
        _Listing("namespaces", "namespaces: list", core.list_namespace),
        _Listing(
            "daemonsets",
            "daemonsets: list (kube-system)",
            partial(apps.list_namespaced_daemon_set, "kube-system"),
        ),
        # The kubelet renews its node's Lease every 10 s: the last renewal dates a lost node.
        _Listing(
            "leases",
            "leases: list (kube-node-lease)",
            partial(CoordinationV1Api(api_client).list_namespaced_lease, "kube-node-lease"),
        ),
        *_node_events(core, namespace),
    ]


def _node_events(core: CoreV1Api, namespace: str | None) -> list[_Listing]:
    """Node events (NodeNotReady...) live in `default`: a scan scoped to the job's namespace
    would otherwise miss the node flap that took its ranks down."""
    if namespace in (None, "default"):
        return []
    call = partial(core.list_namespaced_event, "default", field_selector="involvedObject.kind=Node")
    return [_Listing("events", "events: list (default)", call)]


def list_all(call: Callable[..., Any]) -> list[dict[str, Any]]:
    """Every item of a list call, following `continue` tokens, as the API's own JSON."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page_args: dict[str, Any] = {"limit": _PAGE_SIZE}
        if token:
            page_args["_continue"] = token
        # guard/k8s.py gives every request its (connect, read) timeouts.
        response = call(**page_args, _preload_content=False)
        page = json.loads(response.data)
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def _stops_collection(issue: CollectionIssue) -> bool:
    """Unreachable, or credentials rejected outright (401): every other call would fail the same way."""
    return issue.kind in ("unreachable", "timeout") or issue.message.startswith("HTTP 401")


async def _read_listing(
    listing: _Listing, snapshot: KubernetesSnapshot, issues: list[CollectionIssue]
) -> bool:
    try:
        items = await anyio.to_thread.run_sync(list_all, listing.call)
    except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
        issue = issue_for(listing.field, listing.permission, error)
        issues.append(issue)
        return not _stops_collection(issue)
    trim = TRIMMERS.get(listing.field, lambda item: item)
    # extend, not assign: namespace events and node events both land in `events`
    getattr(snapshot, listing.field).extend(trim(item) for item in items)
    return True


async def collect_kubernetes(
    api_client: ReadOnlyApiClient,
    *,
    namespace: str | None,
    job: str | None,
    log_tail_lines: int = 500,
    progress: Progress | None = None,
) -> tuple[KubernetesSnapshot, list[CollectionIssue]]:
    """Read the cluster (or one namespace) and the job's pod logs. Never raises for API errors."""
    report = progress or (lambda _message: None)
    snapshot = KubernetesSnapshot(namespace=namespace, job=job)
    issues: list[CollectionIssue] = []
    first, *rest = _listings(api_client, namespace)
    # The first call doubles as a reachability check, so a dead endpoint costs one timeout.
    if not await _read_listing(first, snapshot, issues):
        return snapshot, issues
    async with anyio.create_task_group() as group:
        for listing in rest:
            group.start_soon(_read_listing, listing, snapshot, issues)
    report(
        f"kubernetes: {len(snapshot.nodes)} nodes, {len(snapshot.pods)} pods, {len(snapshot.events)} events"
    )
    snapshot.pod_logs, log_issues = await collect_pod_logs(
        CoreV1Api(api_client), snapshot, tail_lines=log_tail_lines, progress=report
    )
    issues.extend(log_issues)
    return snapshot, issues


async def collect_pods(
    api_client: ReadOnlyApiClient, *, namespace: str | None, job: str | None
) -> tuple[KubernetesSnapshot, list[CollectionIssue]]:
    """Only the pods (one paged list call): what `list_pods` needs, without the rest of the cluster."""
    snapshot = KubernetesSnapshot(namespace=namespace, job=job)
    issues: list[CollectionIssue] = []
    await _read_listing(_pods_listing(api_client, namespace), snapshot, issues)
    return snapshot, issues
