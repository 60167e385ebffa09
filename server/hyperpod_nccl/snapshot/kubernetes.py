"""What the Kubernetes collector saw: nodes, pods, events, services, endpoints, network policies,
the kube-system daemonsets, the node leases and the job's pod logs.

Objects are kept as the API serialises them (camelCase, as `kubectl get -o json` prints them),
trimmed of fields no analyzer reads. Env values and log text are redacted by the collector before
they are stored, so a saved bundle never carries a secret.

Which pods belong to which training job is decided here, once, so the collector (whose logs to
fetch) and every analyzer (which pods to compare) agree.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from hyperpod_nccl.bounded import LogText

# Labels training operators put on their pods, most specific first. `app` is only trusted when the
# user named the job: in an all-namespaces scan it would also group every ordinary Deployment.
TRAINING_JOB_LABELS = (
    "training.kubeflow.org/job-name",
    "jobset.sigs.k8s.io/jobset-name",
    "batch.kubernetes.io/job-name",
    "job-name",
)
NAMED_JOB_LABELS = (*TRAINING_JOB_LABELS, "app.kubernetes.io/instance", "app.kubernetes.io/name", "app")

# HyperPod's health-monitoring agent writes these on every EKS node it manages.
NODE_HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
GPU_RESOURCE = "nvidia.com/gpu"


class PodLog(BaseModel):
    """The last lines one container wrote (redacted), current or previous instance."""

    namespace: str
    pod: str
    container: str
    previous: bool = False
    node: str | None = None
    text: LogText = ""
    truncated: bool = Field(default=False, description="True when only the tail was fetched.")


_OBJECT_LISTS = (
    "nodes",
    "pods",
    "events",
    "services",
    "endpoints",
    "network_policies",
    "namespaces",
    "daemonsets",
)


class KubernetesSnapshot(BaseModel):
    namespace: str | None = Field(default=None, description="The namespace scanned; None = all.")
    job: str | None = Field(default=None, description="The job the scan was scoped to, if any.")
    nodes: list[dict[str, Any]] = Field(default_factory=list)
    pods: list[dict[str, Any]] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    services: list[dict[str, Any]] = Field(default_factory=list)
    endpoints: list[dict[str, Any]] = Field(default_factory=list)
    network_policies: list[dict[str, Any]] = Field(default_factory=list)
    namespaces: list[dict[str, Any]] = Field(default_factory=list)
    daemonsets: list[dict[str, Any]] = Field(default_factory=list, description="kube-system daemonsets.")
    leases: list[dict[str, Any]] = Field(
        default_factory=list, description="kube-node-lease Leases: when each kubelet last checked in."
    )
    pod_logs: list[PodLog] = Field(default_factory=list)

    def drop_malformed(self) -> list[str]:
        """Remove objects an analyzer could not read (a bundle edited by hand, or cut short), and say
        which: each kept object has a named metadata, and pods and nodes a spec and a status."""
        dropped: list[str] = []
        for name in _OBJECT_LISTS:
            kept = []
            for index, item in enumerate(getattr(self, name)):
                metadata = item.get("metadata") if isinstance(item, dict) else None
                # Events are read by their fields alone; every other object by its name.
                named = isinstance(metadata, dict) and isinstance(metadata.get("name"), str)
                if not named and not (name == "events" and isinstance(item, dict)):
                    dropped.append(f"kubernetes.{name}[{index}]: not a Kubernetes object (no metadata.name)")
                    continue
                for part in ("spec", "status") if name in ("pods", "nodes") else ():
                    if not isinstance(item.get(part), dict):
                        item[part] = {}
                kept.append(item)
            setattr(self, name, kept)
        return dropped

    def training_jobs(self) -> dict[str, list[dict[str, Any]]]:
        """The pods of each training job in scope, keyed `namespace/job`."""
        return group_training_pods(self.pods, self.job)

    def job_pods(self) -> list[dict[str, Any]]:
        return [pod for pods in self.training_jobs().values() for pod in pods]

    def service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _find(self.services, namespace, name)

    def endpoints_of(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _find(self.endpoints, namespace, name)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """A namespace's labels; `kubernetes.io/metadata.name` is set by the API server (1.22+)
        on every namespace, so it is known even when listing namespaces was not allowed."""
        for item in self.namespaces:
            if item["metadata"]["name"] == namespace:
                return {**(item["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": namespace}
        return {"kubernetes.io/metadata.name": namespace}


def _find(objects: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any] | None:
    for obj in objects:
        meta = obj.get("metadata", {})
        if meta.get("namespace") == namespace and meta.get("name") == name:
            return obj
    return None


def job_name_of(pod: dict[str, Any], job: str | None) -> str | None:
    """The training job a pod belongs to, or None. With `job` given, only that job matches."""
    meta = pod.get("metadata", {})
    labels = meta.get("labels") or {}
    if job is None:
        return next((labels[key] for key in TRAINING_JOB_LABELS if labels.get(key)), None)
    if any(labels.get(key) == job for key in NAMED_JOB_LABELS):
        return job
    owners = {owner.get("name") for owner in meta.get("ownerReferences") or []}
    return job if job in owners or meta.get("name", "").startswith(f"{job}-") else None


def group_training_pods(pods: list[dict[str, Any]], job: str | None) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pod in pods:
        name = job_name_of(pod, job)
        if name is not None:
            groups[f"{pod['metadata'].get('namespace')}/{name}"].append(pod)
    return {key: sorted(group, key=lambda p: p["metadata"]["name"]) for key, group in sorted(groups.items())}


def pod_key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"


def containers_of(pod: dict[str, Any], *, init: bool = False) -> list[dict[str, Any]]:
    return list(pod.get("spec", {}).get("initContainers" if init else "containers") or [])


def container_statuses(pod: dict[str, Any], *, init: bool = False) -> list[dict[str, Any]]:
    return list(pod.get("status", {}).get("initContainerStatuses" if init else "containerStatuses") or [])


def requested(container: dict[str, Any], resource: str) -> int:
    """How many of an extended resource a container asks for (limits win, as the scheduler does)."""
    resources = container.get("resources") or {}
    value = (resources.get("limits") or {}).get(resource) or (resources.get("requests") or {}).get(resource)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def env_of(container: dict[str, Any]) -> dict[str, str]:
    """A container's literal env values; `valueFrom` entries show where the value comes from."""
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif item.get("valueFrom"):
            env[item["name"]] = f"<from {next(iter(item['valueFrom']))}>"
    return env
