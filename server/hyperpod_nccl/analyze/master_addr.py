"""MASTER_ADDR against the cluster's Services: does the name the workers rendezvous on belong to
a Service that exists, is headless, and has a ready endpoint?

Kubernetes DNS answers `svc`, `svc.ns`, `svc.ns.svc[.cluster.local]` and, for a headless Service
with pods that set `subdomain`, `host.svc[.ns...]`. A name that matches none of them never
resolves, and the workers fail rendezvous with a DNS error or time out.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from typing import Any

from hyperpod_nccl.analyze.k8s_common import namespace_of, object_evidence, pod_evidence
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import Namespace
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, containers_of, env_of, pod_key

_LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_CLUSTER_SUFFIXES = (".svc.cluster.local", ".svc")


def service_candidates(address: str, namespace: str) -> list[tuple[str, str]]:
    """(namespace, service) pairs a DNS name can mean from a pod in `namespace`."""
    name = address.rstrip(".")
    for suffix in _CLUSTER_SUFFIXES:
        name = name.removesuffix(suffix)
    labels = name.split(".")
    if len(labels) == 1:
        return [(namespace, labels[0])]
    if len(labels) == 2:  # svc.ns, or host.svc in the pod's own namespace
        return [(labels[1], labels[0]), (namespace, labels[1])]
    return [(labels[2], labels[1])]  # host.svc.ns


def is_literal_ip(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


def master_addresses(pods: list[dict[str, Any]]) -> dict[str, list[tuple[dict[str, Any], str]]]:
    """MASTER_ADDR value -> the (pod, container) pairs that use it; local and IP values left out."""
    found: dict[str, list[tuple[dict[str, Any], str]]] = defaultdict(list)
    for pod in pods:
        for container in containers_of(pod):
            value = env_of(container).get("MASTER_ADDR", "")
            if value and value not in _LOCAL and not is_literal_ip(value) and not value.startswith("<from"):
                found[value].append((pod, container["name"]))
    return dict(found)


def _ready_addresses(kubernetes: KubernetesSnapshot, namespace: str, name: str) -> int:
    endpoints = kubernetes.endpoints_of(namespace, name) or {}
    return sum(len(subset.get("addresses") or []) for subset in endpoints.get("subsets") or [])


def _env_evidence(pod: dict[str, Any], container: str, address: str) -> Evidence:
    return pod_evidence(pod, f"spec.containers[{container}].env", f"MASTER_ADDR={address}")


def _list_services(namespace: str) -> SuggestedCommand:
    return suggest(
        "kubectl get svc,endpoints -n",
        value(Namespace, namespace),
        "-o wide",
        why="Lists the Services and their endpoints, to compare with MASTER_ADDR.",
        permission="services: list",
    )


def _finding(
    finding_id: str,
    title: str,
    detail: str,
    users: list[tuple[dict[str, Any], str]],
    address: str,
    *,
    priority: Priority = Priority.P0,
    evidence: tuple[Evidence, ...] = (),
) -> Finding:
    return Finding(
        id=finding_id,
        status=Status.FAIL if priority == Priority.P0 else Status.WARN,
        priority=priority,
        title=title,
        reference="debugging-guide.md § 12",
        detail=detail,
        pods=list(dict.fromkeys(pod_key(pod) for pod, _ in users)),
        evidence=[_env_evidence(pod, container, address) for pod, container in users] + list(evidence),
        suggested_commands=[_list_services(namespace_of(users[0][0]))],
    )


def check_address(
    address: str, users: list[tuple[dict[str, Any], str]], kubernetes: KubernetesSnapshot, running: bool
) -> Finding:
    namespace = namespace_of(users[0][0])
    candidates = service_candidates(address, namespace)
    service = next((s for ns, name in candidates if (s := kubernetes.service(ns, name))), None)
    tried = ", ".join(f"{ns}/{name}" for ns, name in candidates)
    if service is None:
        return _finding(
            "k8s.master_addr.no_service",
            f"MASTER_ADDR {address} names no Service",
            f"No Service {tried} exists, so the name never resolves and rendezvous fails.",
            users,
            address,
        )
    spec, meta = service.get("spec") or {}, service["metadata"]
    ready = _ready_addresses(kubernetes, meta["namespace"], meta["name"])
    if running and ready == 0:
        return _finding(
            "k8s.master_addr.no_endpoints",
            f"Service {meta['namespace']}/{meta['name']} behind MASTER_ADDR has no ready endpoint",
            "Its selector matches no ready pod: the name resolves to nothing; workers wait for the master.",
            users,
            address,
            evidence=(object_evidence("service", service, "spec.selector", spec.get("selector") or {}),),
        )
    if spec.get("clusterIP") != "None":
        return _finding(
            "k8s.master_addr.not_headless",
            f"Service {meta['namespace']}/{meta['name']} behind MASTER_ADDR is not headless",
            "Traffic goes through a virtual IP; per-pod DNS names need clusterIP: None.",
            users,
            address,
            priority=Priority.P2,
            evidence=(object_evidence("service", service, "spec.clusterIP", str(spec.get("clusterIP"))),),
        )
    return Finding(
        id="k8s.master_addr.resolves",
        status=Status.PASS,
        title=f"MASTER_ADDR {address} names headless Service {meta['namespace']}/{meta['name']} "
        + (f"with {ready} ready endpoint(s)" if running else "(no pod of the job runs yet)"),
    )


def _differs(job_key: str, addresses: dict[str, list[tuple[dict[str, Any], str]]]) -> Finding:
    users = [user for value in addresses.values() for user in value]
    return Finding(
        id="k8s.master_addr.differs",
        status=Status.FAIL,
        priority=Priority.P0,
        title=f"The pods of {job_key} rendezvous on {len(addresses)} different MASTER_ADDR values",
        reference="debugging-guide.md § 12",
        detail="Workers that dial different masters form separate groups that never complete.",
        pods=list(dict.fromkeys(pod_key(pod) for pod, _ in users)),
        evidence=[
            _env_evidence(pod, container, value)
            for value, pairs in addresses.items()
            for pod, container in pairs
        ],
        suggested_commands=[_list_services(namespace_of(users[0][0]))],
    )


def analyze_master_addr(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    findings = []
    for job_key, pods in kubernetes.training_jobs().items():
        addresses = master_addresses(pods)
        if len(addresses) > 1:
            findings.append(_differs(job_key, addresses))
        running = any(pod["status"].get("phase") == "Running" for pod in pods)
        findings += [
            check_address(address, users, kubernetes, running) for address, users in addresses.items()
        ]
    return findings
