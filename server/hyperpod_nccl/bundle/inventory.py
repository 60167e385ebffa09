"""What AWS Support needs about the machines: every instance involved (group, type, both control
planes' view of it, its part in the failure) and the software versions on them.

Pure functions over the reports and the Snapshot; a fact the inputs do not carry stays empty, and
CASE.md lists it under what to add.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from hyperpod_nccl.models import Report
from hyperpod_nccl.snapshot import Snapshot

_DRIVER_LABELS = (
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
)
_PROVIDER_ID_SUFFIX = "/"


class InstanceFact(BaseModel):
    instance_id: str
    node: str | None = Field(default=None, description="Kubernetes node or Slurm host name.")
    instance_group: str | None = None
    instance_type: str | None = None
    hyperpod_status: str | None = Field(default=None, description="ListClusterNodes InstanceStatus.")
    kubernetes_ready: str | None = Field(default=None, description="The node's Ready condition status.")
    roles: list[str] = Field(
        default_factory=list, description="Its part: culprit, control-plane disagreement..."
    )


class Versions(BaseModel):
    """Distinct values on the nodes involved, each with how many nodes run it."""

    ami: list[str] = Field(default_factory=list, description="Custom AMI of the instance groups, if any.")
    os_image: list[str] = Field(default_factory=list)
    kernel: list[str] = Field(default_factory=list)
    kubelet: list[str] = Field(default_factory=list)
    container_runtime: list[str] = Field(default_factory=list)
    nvidia_driver: list[str] = Field(default_factory=list)
    nccl: list[str] = Field(default_factory=list)
    torch: list[str] = Field(default_factory=list)

    @property
    def known(self) -> bool:
        return bool(self.os_image or self.kubelet or self.nvidia_driver or self.ami)


def _k8s_nodes(snapshot: Snapshot | None) -> dict[str, dict[str, Any]]:
    """Kubernetes nodes by the EC2 instance behind them."""
    kubernetes = snapshot.kubernetes if snapshot else None
    found = {}
    for node in kubernetes.nodes if kubernetes else []:
        provider = str((node.get("spec") or {}).get("providerID") or "")
        instance = provider.rsplit(_PROVIDER_ID_SUFFIX, 1)[-1]
        if instance.startswith("i-"):
            found[instance] = node
    return found


def _ready(node: dict[str, Any] | None) -> str | None:
    if node is None:
        return None
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((str(c.get("status")) for c in conditions if c.get("type") == "Ready"), None)


def _roles(reports: list[Report], instance_id: str) -> list[str]:
    roles = []
    for report in reports:
        cause = report.root_cause
        if cause and instance_id in cause.culprit_instance_ids:
            roles.append("culprit")
        for finding in report.findings:
            if instance_id in finding.instance_ids and finding.id.startswith("control_plane."):
                roles.append(f"control-plane disagreement ({finding.id})")
    return list(dict.fromkeys(roles)) or ["named by a finding"]


def instance_facts(
    reports: list[Report], snapshot: Snapshot | None, instance_ids: list[str]
) -> list[InstanceFact]:
    listed = {
        node.instance_id: node for node in ((snapshot.aws.nodes if snapshot and snapshot.aws else None) or [])
    }
    k8s = _k8s_nodes(snapshot)
    facts = []
    for instance_id in instance_ids:
        row, node = listed.get(instance_id), k8s.get(instance_id)
        facts.append(
            InstanceFact(
                instance_id=instance_id,
                node=node["metadata"]["name"] if node else None,
                instance_group=row.instance_group if row else None,
                instance_type=row.instance_type if row else None,
                hyperpod_status=row.status if row else None,
                kubernetes_ready=_ready(node),
                roles=_roles(reports, instance_id),
            )
        )
    culprits_first = sorted(facts, key=lambda fact: ("culprit" not in fact.roles, fact.instance_id))
    return culprits_first


def instance_groups(snapshot: Snapshot | None) -> list[str]:
    """`worker-p5: ml.p5.48xlarge × 6`, from DescribeCluster."""
    cluster = snapshot.aws.hyperpod if snapshot and snapshot.aws else None
    if cluster is not None:
        return [_group_line(g.name, g.instance_type, g.current_count) for g in cluster.instance_groups]
    raw = (snapshot.aws.cluster if snapshot and snapshot.aws else None) or {}
    return [
        _group_line(g.get("InstanceGroupName"), g.get("InstanceType"), g.get("CurrentCount"))
        for g in raw.get("InstanceGroups") or []
    ]


def _group_line(name: object, instance_type: object, count: object) -> str:
    return f"{name}: {instance_type or '?'} × {'?' if count is None else count}"


def _counted(values: list[str]) -> list[str]:
    return [
        f"{value} ({count} node{'s' if count > 1 else ''})" for value, count in Counter(values).most_common()
    ]


def _driver(labels: dict[str, str]) -> str | None:
    parts = [labels.get(key) for key in _DRIVER_LABELS]
    return ".".join(part for part in parts if part) or None


def versions(reports: list[Report], snapshot: Snapshot | None, instance_ids: list[str]) -> Versions:
    k8s = _k8s_nodes(snapshot)
    nodes = [k8s[i] for i in instance_ids if i in k8s] or list(k8s.values())
    infos = [(node.get("status") or {}).get("nodeInfo") or {} for node in nodes]
    labels = [node["metadata"].get("labels") or {} for node in nodes]
    raw = (snapshot.aws.cluster if snapshot and snapshot.aws else None) or {}
    stacks = [group for report in reports if report.job for group in report.job.versions]
    return Versions(
        ami=sorted({str(g["ImageId"]) for g in raw.get("InstanceGroups") or [] if g.get("ImageId")}),
        os_image=_counted([i["osImage"] for i in infos if i.get("osImage")]),
        kernel=_counted([i["kernelVersion"] for i in infos if i.get("kernelVersion")]),
        kubelet=_counted([i["kubeletVersion"] for i in infos if i.get("kubeletVersion")]),
        container_runtime=_counted(
            [i["containerRuntimeVersion"] for i in infos if i.get("containerRuntimeVersion")]
        ),
        nvidia_driver=_counted([d for label in labels if (d := _driver(label))]),
        nccl=sorted({group.nccl for group in stacks if group.nccl}),
        torch=sorted({group.torch for group in stacks if group.torch}),
    )
