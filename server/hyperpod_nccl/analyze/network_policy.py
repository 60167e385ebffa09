"""NetworkPolicies evaluated against the job's own pods: can every pod reach every other on the
ports the job uses — the rendezvous port, the declared container ports, and the ephemeral ports
NCCL's bootstrap and socket transport listen on?

A default-deny plus an allow rule that lists only the rendezvous port passes a glance at the
YAML, yet lets rendezvous succeed and hangs NCCL init: that is what this check is for.
"""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.analyze.k8s_common import name_of, namespace_of, object_evidence
from hyperpod_nccl.analyze.netpol_eval import EPHEMERAL, Direction, PortRange, blocking_policies
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import KubeObjectName, Namespace
from hyperpod_nccl.models import BlastRadius, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, containers_of, env_of, pod_key

Blocked = dict[tuple[Direction, PortRange], tuple[str, str, list[dict[str, Any]]]]


def job_ports(pods: list[dict[str, Any]]) -> list[PortRange]:
    ports: dict[int, str] = {}
    for pod in pods:
        for container in containers_of(pod):
            for port in container.get("ports") or []:
                if port.get("protocol", "TCP") == "TCP":
                    ports[port["containerPort"]] = (
                        f"port {port['containerPort']} ({port.get('name', 'declared')})"
                    )
            master_port = env_of(container).get("MASTER_PORT", "")
            if master_port.isdigit():
                ports.setdefault(int(master_port), f"MASTER_PORT {master_port}")
    return [PortRange.single(number, label) for number, label in sorted(ports.items())] + [EPHEMERAL]


def _selector_keys(policies: list[dict[str, Any]]) -> set[str] | None:
    """Label keys any selector looks at; None when an ipBlock makes every pod's address matter."""
    keys: set[str] = set()
    for policy in policies:
        spec = policy.get("spec") or {}
        selectors = [spec.get("podSelector") or {}]
        for rule in (spec.get("ingress") or []) + (spec.get("egress") or []):
            for peer in (rule.get("from") or []) + (rule.get("to") or []):
                if "ipBlock" in peer:
                    return None
                selectors.append(peer.get("podSelector") or {})
        for selector in selectors:
            keys |= set(selector.get("matchLabels") or {})
            keys |= {expression["key"] for expression in selector.get("matchExpressions") or []}
    return keys


def pod_classes(pods: list[dict[str, Any]], policies: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The job's pods grouped by what the policies can tell apart: a 1,000-pod job usually
    collapses to one or two classes instead of a million pairs."""
    keys = _selector_keys(policies)
    if keys is None:
        return [[pod] for pod in pods]
    classes: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        signature = (
            bool(pod["spec"].get("hostNetwork")),
            *sorted((k, labels[k]) for k in keys if k in labels),
        )
        classes.setdefault(signature, []).append(pod)
    return list(classes.values())


def _pairs(classes: list[list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """One (source, destination) pair of distinct pods per ordered pair of classes."""
    pairs = []
    for sources in classes:
        for destinations in classes:
            if sources is not destinations:
                pairs.append((sources[0], destinations[0]))
            elif len(sources) > 1:  # a pod talking to itself uses loopback, which policies never see
                pairs.append((sources[0], sources[1]))
    return pairs


def blocked_paths(pods: list[dict[str, Any]], kubernetes: KubernetesSnapshot) -> Blocked:
    namespaces = {namespace_of(pod) for pod in pods}
    policies = [p for p in kubernetes.network_policies if namespace_of(p) in namespaces]
    blocked: Blocked = {}
    if not policies:
        return blocked
    pairs = _pairs(pod_classes(pods, policies))
    for port in job_ports(pods):
        for source, destination in pairs:
            found = blocking_policies(source, destination, port, policies, kubernetes.namespace_labels)
            for direction, applying in found.items():
                blocked.setdefault((direction, port), (name_of(source), name_of(destination), applying))
    return blocked


def _commands(namespace: str, job: str, blocked: Blocked) -> list[SuggestedCommand]:
    """Read the policies, then add an allow policy for the job: policies add up, so nothing else's
    deny policy needs editing. Egress is allowed too only where a policy already restricts it."""
    egress = any(direction == "egress" for direction, _ in blocked)
    manifest = f"{job}-allow-intra-job.yaml"
    return [
        suggest(
            "kubectl get networkpolicy -n",
            value(Namespace, namespace),
            "-o yaml",
            why="Shows every policy in the namespace with its selectors, rules and ports.",
            permission="networkpolicies: list",
        ),
        suggest(
            "kubectl apply -n",
            value(Namespace, namespace),
            "-f",
            value(KubeObjectName, manifest),
            why=f"Create an allow policy for the {job} pods from operations.md § 8: ingress from the job's "
            "own pods on every port, egress left alone"
            + (
                " (and, because a policy already restricts their egress, the second manifest there too)"
                if egress
                else ""
            )
            + ". Leave the existing policies as they are: other workloads may rely on them.",
            blast_radius=BlastRadius.CHANGES_CONFIG,
            permission="networkpolicies: create",
        ),
    ]


def _blocked_finding(job_key: str, pods: list[dict[str, Any]], blocked: Blocked) -> Finding:
    namespace, _, job = job_key.partition("/")
    policies: dict[str, dict[str, Any]] = {}
    paths = []
    for (direction, port), (source, destination, applying) in blocked.items():
        names = ", ".join(name_of(p) for p in applying)
        paths.append(
            f"{direction} {source} → {destination} on {port.label}: selected by {names}, none admits it"
        )
        policies.update({name_of(p): p for p in applying})
    return Finding(
        id="k8s.network_policy.blocks_job",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"NetworkPolicy blocks the pods of {job} in {namespace} from reaching each other",
        reference="operations.md § 8",
        detail="; ".join(paths),
        pods=[pod_key(pod) for pod in pods],
        evidence=[
            object_evidence("networkpolicy", p, "spec", p.get("spec") or {}) for p in policies.values()
        ],
        suggested_commands=_commands(namespace, job, blocked),
    )


def analyze_network_policy(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    findings = []
    for job_key, pods in kubernetes.training_jobs().items():
        blocked = blocked_paths(pods, kubernetes)
        if blocked:
            findings.append(_blocked_finding(job_key, pods, blocked))
        elif any(namespace_of(p) == namespace_of(pods[0]) for p in kubernetes.network_policies):
            findings.append(
                Finding(
                    id="k8s.network_policy.allows_job",
                    status=Status.PASS,
                    title=f"NetworkPolicies let the pods of {job_key} reach each other on the ports they use",
                    pods=[pod_key(pod) for pod in pods],
                )
            )
    return findings
