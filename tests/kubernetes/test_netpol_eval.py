"""NetworkPolicy semantics beyond the recorded clusters: egress, named ports, port ranges,
selector expressions, namespace selectors and ipBlocks, each able to flip allow ↔ block."""

from __future__ import annotations

from typing import Any

from hyperpod_nccl.analyze.netpol_eval import EPHEMERAL, PortRange, blocking_policies, selector_matches

RENDEZVOUS = PortRange.single(29500, "MASTER_PORT 29500")


def pod(name: str, namespace: str = "train", ip: str = "10.0.0.1", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"job": "llm", **labels}},
        "spec": {"containers": [{"name": "pytorch", "ports": [{"containerPort": 29500, "name": "rdzv"}]}]},
        "status": {"podIP": ip},
    }


def policy(name: str, spec: dict[str, Any], namespace: str = "train") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def labels_for(namespace: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": namespace, "team": "ml" if namespace == "train" else "other"}


A, B = pod("a", ip="10.0.0.1"), pod("b", ip="10.0.0.2")


def blocked(policies: list[dict[str, Any]], port: PortRange = EPHEMERAL, src=A, dst=B) -> set[str]:
    return set(blocking_policies(src, dst, port, policies, labels_for))


def test_no_policy_allows_everything() -> None:
    assert blocked([]) == set()


def test_egress_default_deny_blocks_the_source_side() -> None:
    deny = policy("deny-egress", {"podSelector": {}, "policyTypes": ["Egress"]})
    assert blocked([deny]) == {"egress"}
    allow = policy(
        "allow", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"podSelector": {}}]}]}
    )
    assert blocked([deny, allow]) == set()


def test_named_port_resolves_on_the_destination_pod() -> None:
    spec = {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": "rdzv"}]}]}
    assert blocked([policy("named", spec)], RENDEZVOUS) == set()
    assert blocked([policy("named", spec)], EPHEMERAL) == {"ingress"}


def test_a_port_range_must_cover_the_whole_ephemeral_range() -> None:
    def ranged(last: int) -> dict[str, Any]:
        ports = [{"port": 1024, "endPort": last, "protocol": "TCP"}]
        return policy("range", {"podSelector": {}, "ingress": [{"ports": ports}]})

    assert blocked([ranged(65535)]) == set()
    assert blocked([ranged(40000)]) == {"ingress"}


def test_udp_ports_do_not_admit_tcp() -> None:
    spec = {"podSelector": {}, "ingress": [{"ports": [{"protocol": "UDP"}]}]}
    assert blocked([policy("udp", spec)]) == {"ingress"}


def test_match_expressions() -> None:
    labels = {"job": "llm", "role": "worker"}
    assert selector_matches(
        {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]}, labels
    )
    assert not selector_matches(
        {"matchExpressions": [{"key": "role", "operator": "NotIn", "values": ["worker"]}]}, labels
    )
    assert selector_matches({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, labels)


def test_a_namespace_selector_alone_admits_any_pod_of_matching_namespaces() -> None:
    def from_team(team: str) -> dict[str, Any]:
        peers = [{"namespaceSelector": {"matchLabels": {"team": team}}}]
        return policy("ns", {"podSelector": {}, "ingress": [{"from": peers}]})

    assert blocked([from_team("ml")]) == set()
    assert blocked([from_team("other")]) == {"ingress"}


def test_a_pod_selector_without_namespace_selector_stays_in_the_policys_namespace() -> None:
    allow = policy("same-ns", {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]})
    stranger = pod("c", namespace="elsewhere", ip="10.0.9.9")
    assert blocked([allow], src=stranger) == {"ingress"}


def test_ip_block_with_except() -> None:
    block = {"cidr": "10.0.0.0/16", "except": ["10.0.0.1/32"]}
    spec = {"podSelector": {}, "ingress": [{"from": [{"ipBlock": block}]}]}
    assert blocked([policy("cidr", spec)], src=A) == {"ingress"}
    assert blocked([policy("cidr", spec)], src=pod("c", ip="10.0.3.3")) == set()


def test_policies_do_not_apply_to_host_network_pods() -> None:
    deny = policy("deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    host = pod("h", ip="10.0.0.9")
    host["spec"]["hostNetwork"] = True
    assert blocked([deny], dst=host) == set()
