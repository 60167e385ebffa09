"""NetworkPolicy semantics, as the Kubernetes API defines them, for one TCP connection.

A connection from pod A to pod B is allowed when (1) no policy selecting B applies to Ingress, or
some ingress rule of such a policy admits A on the port, and (2) the same holds for Egress on the
policies selecting A. Rules are additive: a policy can only allow, never deny, so a "blocking"
policy is one that selects the pod and whose rules, together with its siblings', admit nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["ingress", "egress"]
NamespaceLabels = Callable[[str], dict[str, str]]


@dataclass(frozen=True)
class PortRange:
    """TCP ports a connection may use: one port, or a range such as NCCL's ephemeral ports."""

    first: int
    last: int
    label: str

    @classmethod
    def single(cls, port: int, label: str) -> PortRange:
        return cls(port, port, label)


# Linux's default ip_local_port_range: NCCL's bootstrap and socket transport listen on ports the
# kernel picks from it, so a rule has to admit the whole range, not a list of known ports.
EPHEMERAL = PortRange(32768, 60999, "NCCL's ephemeral ports 32768-60999")


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector: matchLabels and matchExpressions must all hold; `{}` matches everything."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        holds = {
            "In": present and labels[key] in values,
            "NotIn": not present or labels[key] not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(operator, False)
        if not holds:
            return False
    return True


def policy_types(policy: dict[str, Any]) -> set[str]:
    """Explicit policyTypes, else Ingress always plus Egress when egress rules exist (API default)."""
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return set(spec["policyTypes"])
    return {"Ingress", "Egress"} if spec.get("egress") else {"Ingress"}


def labels_of(pod: dict[str, Any]) -> dict[str, str]:
    return pod["metadata"].get("labels") or {}


def selects(policy: dict[str, Any], pod: dict[str, Any], direction: Direction) -> bool:
    # Policies do not apply to host-network pods: their traffic is the node's, not the pod's.
    if (pod.get("spec") or {}).get("hostNetwork"):
        return False
    if policy["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    if direction.capitalize() not in policy_types(policy):
        return False
    return selector_matches((policy.get("spec") or {}).get("podSelector") or {}, labels_of(pod))


def _ip_in_block(ip: str | None, block: dict[str, Any]) -> bool:
    if not ip:
        return False
    address = ipaddress.ip_address(ip)
    if address not in ipaddress.ip_network(block["cidr"], strict=False):
        return False
    return not any(address in ipaddress.ip_network(e, strict=False) for e in block.get("except") or [])


def peer_matches(
    peer: dict[str, Any], policy_namespace: str, other: dict[str, Any], namespace_labels: NamespaceLabels
) -> bool:
    if "ipBlock" in peer:
        return _ip_in_block((other.get("status") or {}).get("podIP"), peer["ipBlock"])
    other_namespace = other["metadata"].get("namespace", "")
    namespace_selector = peer.get("namespaceSelector")
    if namespace_selector is None:
        in_namespace = other_namespace == policy_namespace
    else:
        in_namespace = selector_matches(namespace_selector, namespace_labels(other_namespace))
    pod_selector = peer.get("podSelector")
    return in_namespace and (pod_selector is None or selector_matches(pod_selector, labels_of(other)))


def named_ports(pod: dict[str, Any]) -> dict[str, int]:
    return {
        port["name"]: port["containerPort"]
        for container in (pod.get("spec") or {}).get("containers") or []
        for port in container.get("ports") or []
        if port.get("name") and port.get("protocol", "TCP") == "TCP"
    }


def ports_admit(rule_ports: list[dict[str, Any]] | None, wanted: PortRange, target: dict[str, Any]) -> bool:
    """Whether a rule's `ports` cover every port of `wanted` (no ports = every port)."""
    if not rule_ports:
        return True
    for entry in rule_ports:
        if entry.get("protocol", "TCP") != "TCP":
            continue
        port = entry.get("port")
        if port is None:
            return True
        if isinstance(port, str):
            port = named_ports(target).get(port)
            if port is None:
                continue
        if int(port) <= wanted.first and wanted.last <= int(entry.get("endPort") or port):
            return True
    return False


def rule_admits(
    rule: dict[str, Any],
    direction: Direction,
    policy_namespace: str,
    peer: dict[str, Any],
    target: dict[str, Any],
    wanted: PortRange,
    namespace_labels: NamespaceLabels,
) -> bool:
    """`peer` is the other end (source for ingress, destination for egress); `target` owns the port."""
    peers = rule.get("from" if direction == "ingress" else "to")
    peer_ok = not peers or any(peer_matches(p, policy_namespace, peer, namespace_labels) for p in peers)
    return peer_ok and ports_admit(rule.get("ports"), wanted, target)


def blocking_policies(
    source: dict[str, Any],
    destination: dict[str, Any],
    wanted: PortRange,
    policies: list[dict[str, Any]],
    namespace_labels: NamespaceLabels,
) -> dict[Direction, list[dict[str, Any]]]:
    """The policies that select an end of the connection without any of them admitting it, per
    direction; empty when the connection is allowed."""
    blocked: dict[Direction, list[dict[str, Any]]] = {}
    ends: tuple[tuple[Direction, dict[str, Any], dict[str, Any]], ...] = (
        ("ingress", destination, source),
        ("egress", source, destination),
    )
    for direction, selected, peer in ends:
        applying = [p for p in policies if selects(p, selected, direction)]
        admitted = any(
            rule_admits(
                rule, direction, p["metadata"]["namespace"], peer, destination, wanted, namespace_labels
            )
            for p in applying
            for rule in (p.get("spec") or {}).get(direction) or []
        )
        if applying and not admitted:
            blocked[direction] = applying
    return blocked
