"""What the Kubernetes analyzers share: how a pod or node is named in evidence, and the kubectl
commands they suggest, with real names filled in, their blast radius and the RBAC verb needed."""

from __future__ import annotations

import json
import re
from typing import Any

from hyperpod_nccl.guard.commands import Word, joined, suggest, value
from hyperpod_nccl.guard.validate import ContainerName, KubeNodeName, KubeObjectName, Namespace, PodName
from hyperpod_nccl.models import BlastRadius, Evidence, SuggestedCommand


def name_of(obj: dict[str, Any]) -> str:
    return obj["metadata"]["name"]


def namespace_of(obj: dict[str, Any]) -> str:
    return obj["metadata"].get("namespace") or "default"


def node_of(pod: dict[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


_INSTANCE_ID = re.compile(r"i-[0-9a-f]{8,17}$")


def instance_id_of(node: dict[str, Any]) -> str | None:
    """The EC2 instance behind a node, from its providerID (`aws:///<az>/.../i-0abc...`)."""
    match = _INSTANCE_ID.search((node.get("spec") or {}).get("providerID") or "")
    return match.group(0) if match else None


def pod_evidence(pod: dict[str, Any], field: str, text: str) -> Evidence:
    """Evidence from a pod object: `pod ns/name` and the field path, with the field's own text."""
    return Evidence(source=f"pod {namespace_of(pod)}/{name_of(pod)} {field}", text=text, node=node_of(pod))


def object_evidence(kind: str, obj: dict[str, Any], field: str, value: Any) -> Evidence:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    where = f"{namespace_of(obj)}/{name_of(obj)}" if obj["metadata"].get("namespace") else name_of(obj)
    return Evidence(source=f"{kind} {where} {field}".rstrip(), text=text)


def event_evidence(event: dict[str, Any]) -> Evidence:
    involved = event.get("involvedObject") or {}
    target = "/".join(filter(None, (involved.get("namespace"), involved.get("name"))))
    when = event.get("lastTimestamp") or event.get("eventTime") or ""
    count = f" (x{event['count']})" if (event.get("count") or 1) > 1 else ""
    return Evidence(
        source=f"event {event.get('reason')} {involved.get('kind', '').lower()} {target} {when}".rstrip(),
        text=f"{event.get('message', '')}{count}".strip(),
        node=(event.get("source") or {}).get("host"),
    )


def _pod_words(pod: dict[str, Any]) -> tuple[Word, ...]:
    return value(PodName, name_of(pod)), "-n", value(Namespace, namespace_of(pod))


def describe_pod(
    pod: dict[str, Any], why: str = "Shows the pod's status, conditions and events."
) -> SuggestedCommand:
    return suggest("kubectl describe pod", *_pod_words(pod), why=why, permission="pods: get")


def pod_logs(pod: dict[str, Any], container: str, *, previous: bool, why: str) -> SuggestedCommand:
    return suggest(
        "kubectl logs",
        *_pod_words(pod),
        "-c",
        value(ContainerName, container),
        "--previous --tail=200" if previous else "--tail=200",
        why=why,
        permission="pods/log: get",
    )


def pod_events(namespace: str, name: str) -> SuggestedCommand:
    return suggest(
        "kubectl get events -n",
        value(Namespace, namespace),
        "--field-selector",
        joined("involvedObject.name=", value(KubeObjectName, name)),
        why="Lists what the scheduler and the kubelet reported about it, newest last.",
        permission="events: list",
    )


def delete_pod(pod: dict[str, Any], why: str) -> SuggestedCommand:
    return suggest(
        "kubectl delete pod",
        *_pod_words(pod),
        why=why,
        blast_radius=BlastRadius.RESTARTS_POD,
        permission="pods: delete",
    )


def describe_node(
    node: str, why: str = "Shows the node's conditions, taints and allocatable resources."
) -> SuggestedCommand:
    return suggest("kubectl describe node", value(KubeNodeName, node), why=why, permission="nodes: get")
