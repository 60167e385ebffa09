"""Trim Kubernetes objects to the fields the analyzers read, and redact them before storing.

A snapshot of a large cluster stays small (node image lists and managedFields are most of an
object's bytes), and a saved bundle never holds a secret: env values whose name says they are
secret are masked whatever they look like, and every other string passes the redaction rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hyperpod_nccl.guard.redact import redact_data

Trimmer = Callable[[dict[str, Any]], dict[str, Any]]

_CONTAINER_FIELDS = (
    "name",
    "image",
    "command",
    "args",
    "env",
    "envFrom",
    "resources",
    "volumeMounts",
    "ports",
)
_POD_SPEC_FIELDS = (
    "nodeName",
    "hostNetwork",
    "hostname",
    "subdomain",
    "restartPolicy",
    "volumes",
    "nodeSelector",
    "schedulerName",
)


def _pick(source: dict[str, Any] | None, fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: source[key] for key in fields if source and key in source}


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = _pick(obj.get("metadata"), ("name", "namespace", "labels", "uid", "creationTimestamp"))
    owners = (obj.get("metadata") or {}).get("ownerReferences")
    if owners:
        meta["ownerReferences"] = [_pick(owner, ("kind", "name")) for owner in owners]
    return meta


def redact_env(env: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mask env values by their variable's name (HF_TOKEN, WANDB_API_KEY...) and by their content."""
    redacted = []
    for item in env:
        if isinstance(item.get("value"), str):
            item = {**item, "value": redact_data({item["name"]: item["value"]})[item["name"]]}
        redacted.append(item)
    return redacted


def _container(container: dict[str, Any]) -> dict[str, Any]:
    trimmed = _pick(container, _CONTAINER_FIELDS)
    if "env" in trimmed:
        trimmed["env"] = redact_env(trimmed["env"])
    return trimmed


def trim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    trimmed_spec = _pick(spec, _POD_SPEC_FIELDS)
    for key in ("initContainers", "containers"):
        if spec.get(key):
            trimmed_spec[key] = [_container(container) for container in spec[key]]
    trimmed = {"metadata": _metadata(pod), "spec": trimmed_spec, "status": pod.get("status") or {}}
    return redact_data(trimmed)


def trim_node(node: dict[str, Any]) -> dict[str, Any]:
    status = _pick(node.get("status"), ("conditions", "allocatable", "capacity", "nodeInfo", "addresses"))
    spec = _pick(node.get("spec"), ("taints", "unschedulable", "providerID"))
    return {"metadata": _metadata(node), "spec": spec, "status": status}


def trim_event(event: dict[str, Any]) -> dict[str, Any]:
    fields = ("involvedObject", "reason", "message", "type", "count", "firstTimestamp", "lastTimestamp")
    trimmed = {"metadata": _metadata(event), **_pick(event, (*fields, "eventTime", "source"))}
    return redact_data(trimmed)


def trim_service(service: dict[str, Any]) -> dict[str, Any]:
    fields = ("type", "clusterIP", "clusterIPs", "selector", "ports", "publishNotReadyAddresses")
    return {"metadata": _metadata(service), "spec": _pick(service.get("spec"), fields)}


def trim_daemonset(daemonset: dict[str, Any]) -> dict[str, Any]:
    pod_spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = [_pick(c, ("name", "image")) for c in pod_spec.get("containers") or []]
    return {
        "metadata": _metadata(daemonset),
        "spec": {"template": {"spec": {"containers": containers, **_pick(pod_spec, ("nodeSelector",))}}},
        "status": daemonset.get("status") or {},
    }


def _keep(*fields: str) -> Trimmer:
    return lambda obj: {"metadata": _metadata(obj), **_pick(obj, fields)}


TRIMMERS: dict[str, Trimmer] = {
    "pods": trim_pod,
    "nodes": trim_node,
    "events": trim_event,
    "services": trim_service,
    "endpoints": _keep("subsets"),
    "network_policies": _keep("spec"),
    "namespaces": _keep("status"),
    "daemonsets": trim_daemonset,
    "leases": lambda lease: {
        "metadata": _metadata(lease),
        "spec": _pick(lease.get("spec"), ("holderIdentity", "renewTime", "leaseDurationSeconds")),
    },
}
