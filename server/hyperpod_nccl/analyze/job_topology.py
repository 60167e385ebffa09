"""Where the job runs: pod → node → instance id, and pod → global ranks.

The cluster diagnostic names a culprit the way an operator acts on it: the node (to describe
and cordon), its EC2 instance id (what HyperPod and AWS Support know it by) and the global ranks
its pods ran (what the training logs name). Ranks come from the environment the training
operator puts on each pod:

- Kubeflow Trainer / JobSet: `PET_NODE_RANK` (a literal, or the pod's job-completion index) and
  `PET_NPROC_PER_NODE`;
- PyTorchJob (training-operator v1): `RANK` is the pod's node rank (master 0, worker i → i + 1,
  also in the `replica-type` / `replica-index` labels), `WORLD_SIZE` the number of pods, and the
  processes per pod come from `--nproc_per_node` or the GPUs the pod requests.

A pod's global ranks are `node_rank × nproc_per_node + local_rank`. When the environment does not
say, the ranks the pod's own log lines carry are used instead (see `with_logged_ranks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hyperpod_nccl.analyze.k8s_common import instance_id_of, name_of
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    containers_of,
    env_of,
    pod_key,
    requested,
)

_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_REPLICA_TYPE = "training.kubeflow.org/replica-type"
_REPLICA_INDEX = "training.kubeflow.org/replica-index"
_NPROC_ARGUMENT = re.compile(r"^--nproc[_-]per[_-]node(?:=(\S+))?$")
_INSTANCE_IN_NAME = re.compile(r"\bi-[0-9a-f]{8,17}\b")


@dataclass(frozen=True)
class PodPlace:
    """One of the job's pods: where it ran and which global ranks it held."""

    pod: str  # namespace/name
    job: str  # namespace/job
    node: str | None
    instance_id: str | None
    ranks: tuple[int, ...] = ()
    ranks_from: str = ""  # how the ranks were worked out, for the report's evidence


@dataclass
class Topology:
    pods: dict[str, PodPlace] = field(default_factory=dict)
    node_instance: dict[str, str] = field(default_factory=dict)
    instance_group: dict[str, str] = field(default_factory=dict)
    instance_type: dict[str, str] = field(default_factory=dict)
    hosts: dict[str, str] = field(default_factory=dict)  # host name a log line carries → node

    @property
    def instance_node(self) -> dict[str, str]:
        return {instance: node for node, instance in self.node_instance.items()}

    def node_of_instance(self, instance_id: str | None) -> str | None:
        return self.instance_node.get(instance_id or "")

    def instance_of(self, node: str | None) -> str | None:
        if node is None:
            return None
        found = self.node_instance.get(node)
        if found:
            return found
        match = _INSTANCE_IN_NAME.search(node)  # HyperPod names EKS nodes hyperpod-i-0abc…
        return match.group(0) if match else None

    def pods_on(self, node: str | None) -> list[PodPlace]:
        return [place for place in self.pods.values() if node and place.node == node]

    def ranks_on(self, node: str | None) -> set[int]:
        return {rank for place in self.pods_on(node) for rank in place.ranks}

    def pod_of_rank(self, rank: int) -> PodPlace | None:
        return next((place for place in self.pods.values() if rank in place.ranks), None)

    def all_ranks(self) -> set[int]:
        return {rank for place in self.pods.values() for rank in place.ranks}

    def job_nodes(self) -> set[str]:
        return {place.node for place in self.pods.values() if place.node}

    def resolve_host(self, host: str | None) -> tuple[str | None, str | None]:
        """A host name from a log line as (node, pod): in a pod the host name is the pod's name,
        with hostNetwork it is the node's."""
        if not host:
            return None, None
        for place in self.pods.values():
            if place.pod.rsplit("/", 1)[-1] == host:
                return place.node, place.pod
        return self.hosts.get(host, host if host in self.node_instance else None), None

    def describe_instance(self, instance_id: str | None) -> str:
        """`i-0abc (ml.p5.48xlarge in worker-p5)`, with what is known."""
        if not instance_id:
            return ""
        facts = [
            fact
            for fact in (self.instance_type.get(instance_id), self.instance_group.get(instance_id))
            if fact
        ]
        if len(facts) == 2:
            return f"{instance_id} ({facts[0]} in {facts[1]})"
        return f"{instance_id} ({facts[0]})" if facts else instance_id


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def _main_container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = containers_of(pod)
    with_gpus = [c for c in containers if requested(c, GPU_RESOURCE) > 0]
    return (with_gpus or containers or [{}])[0]


def _nproc_from_arguments(container: dict[str, Any]) -> int | None:
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    for index, word in enumerate(words):
        match = _NPROC_ARGUMENT.match(word)
        if match:
            return _int(match.group(1) or (words[index + 1] if index + 1 < len(words) else None))
    return None


def nproc_per_node(pod: dict[str, Any]) -> tuple[int, str]:
    container = _main_container(pod)
    env = env_of(container)
    literal = _int(env.get("PET_NPROC_PER_NODE"))
    if literal:
        return literal, "PET_NPROC_PER_NODE"
    argument = _nproc_from_arguments(container)
    if argument:
        return argument, "--nproc_per_node"
    gpus = requested(container, GPU_RESOURCE)
    return (gpus, f"{GPU_RESOURCE} requested") if gpus else (1, "one process per pod")


def _has_master(job_pods: list[dict[str, Any]]) -> bool:
    return any(
        (pod["metadata"].get("labels") or {}).get(_REPLICA_TYPE, "").lower() == "master" for pod in job_pods
    )


def node_rank(pod: dict[str, Any], job_pods: list[dict[str, Any]]) -> tuple[int | None, str]:
    env = env_of(_main_container(pod))
    labels = pod["metadata"].get("labels") or {}
    literal = _int(env.get("PET_NODE_RANK"))
    if literal is not None:
        return literal, "PET_NODE_RANK"
    index = _int(labels.get(_COMPLETION_INDEX))
    if index is not None:
        return index, "job-completion-index"
    replica_type, replica_index = labels.get(_REPLICA_TYPE, "").lower(), _int(labels.get(_REPLICA_INDEX))
    if replica_type == "master":
        return 0, "master replica"
    if replica_type == "worker" and replica_index is not None:
        return replica_index + (1 if _has_master(job_pods) else 0), "worker replica index"
    rank = _int(env.get("RANK"))
    return (rank, "RANK") if rank is not None else (None, "")


def _place(pod: dict[str, Any], job: str, job_pods: list[dict[str, Any]], topology: Topology) -> PodPlace:
    node = (pod.get("spec") or {}).get("nodeName")
    rank, rank_from = node_rank(pod, job_pods)
    nproc, nproc_from = nproc_per_node(pod)
    ranks = tuple(range(rank * nproc, (rank + 1) * nproc)) if rank is not None else ()
    return PodPlace(
        pod=pod_key(pod),
        job=job,
        node=node,
        instance_id=topology.instance_of(node),
        ranks=ranks,
        ranks_from=f"{rank_from} × {nproc_from}" if ranks else "",
    )


def _nodes(snapshot: Snapshot, topology: Topology) -> None:
    kubernetes = snapshot.kubernetes
    for node in kubernetes.nodes if kubernetes else []:
        name = name_of(node)
        instance = instance_id_of(node) or topology.instance_of(name)
        if instance:
            topology.node_instance[name] = instance
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") in ("Hostname", "InternalDNS") and address.get("address"):
                topology.hosts[str(address["address"]).split(".")[0]] = name
        instance_type = (node["metadata"].get("labels") or {}).get(INSTANCE_TYPE_LABEL)
        if instance and instance_type:
            topology.instance_type.setdefault(instance, instance_type)
    for slurm_node in snapshot.slurm.nodes if snapshot.slurm else []:
        if slurm_node.instance_id:
            topology.node_instance[slurm_node.name] = slurm_node.instance_id


def _instances(snapshot: Snapshot, topology: Topology) -> None:
    for node in (snapshot.aws.nodes if snapshot.aws else None) or []:
        topology.instance_group[node.instance_id] = node.instance_group
        if node.instance_type:
            topology.instance_type[node.instance_id] = node.instance_type


def build_topology(snapshot: Snapshot) -> Topology:
    topology = Topology()
    _instances(snapshot, topology)
    _nodes(snapshot, topology)
    kubernetes = snapshot.kubernetes
    for job, job_pods in (kubernetes.training_jobs() if kubernetes else {}).items():
        for pod in job_pods:
            place = _place(pod, job, job_pods, topology)
            topology.pods[place.pod] = place
    return topology


def with_logged_ranks(topology: Topology, logged: Iterable[tuple[str, set[int]]]) -> Topology:
    """Fill in the ranks of pods whose environment did not say, from the ranks their own log
    lines carry (`pod`, ranks)."""
    for pod, ranks in logged:
        place = topology.pods.get(pod)
        if place is not None and not place.ranks and ranks:
            topology.pods[pod] = PodPlace(
                place.pod, place.job, place.node, place.instance_id, tuple(sorted(ranks)), "its log lines"
            )
    return topology
