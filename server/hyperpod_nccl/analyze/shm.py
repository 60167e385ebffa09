"""/dev/shm on the job's pods: a container gets the runtime's 64 MiB /dev/shm unless the pod
mounts a memory-backed emptyDir there. NCCL's shared-memory transport between the GPUs of a pod
and the DataLoader's worker processes both need far more, and fail with "No space left on
device" or a bus error when it runs out.
"""

from __future__ import annotations

import re
from typing import Any

from hyperpod_nccl.analyze.k8s_common import describe_pod, pod_evidence
from hyperpod_nccl.models import Evidence, Finding, Priority, Status
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import GPU_RESOURCE, containers_of, pod_key, requested

SHM_PATH = "/dev/shm"
MIN_SHM_BYTES = 1 << 30  # below 1 GiB, 8 ranks' NCCL buffers plus DataLoader workers run out
_UNITS = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$")


def quantity_bytes(quantity: str) -> int | None:
    match = _QUANTITY.match(quantity.strip())
    if not match:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2) or ""])


def shm_volume(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, Any] | None:
    """The volume a container mounts at /dev/shm, if any."""
    mount = next((m for m in container.get("volumeMounts") or [] if m.get("mountPath") == SHM_PATH), None)
    if mount is None:
        return None
    volumes = pod.get("spec", {}).get("volumes") or []
    return next((v for v in volumes if v.get("name") == mount["name"]), None)


def _memory_backed(volume: dict[str, Any]) -> bool:
    if (volume.get("hostPath") or {}).get("path") == SHM_PATH:
        return True
    return (volume.get("emptyDir") or {}).get("medium") == "Memory"


def shm_problem(pod: dict[str, Any], container: dict[str, Any]) -> Evidence | None:
    field = f"spec.containers[{container['name']}]"
    volume = shm_volume(pod, container)
    if volume is None:
        volumes = ", ".join(v.get("name", "?") for v in pod.get("spec", {}).get("volumes") or []) or "none"
        return pod_evidence(
            pod, f"{field}.volumeMounts", f"no volume mounted at {SHM_PATH} (pod volumes: {volumes})"
        )
    if not _memory_backed(volume):
        return pod_evidence(
            pod, f"spec.volumes[{volume['name']}]", f"{SHM_PATH} is not memory-backed: {volume}"
        )
    limit = (volume.get("emptyDir") or {}).get("sizeLimit")
    size = quantity_bytes(str(limit)) if limit else None
    if size is not None and size < MIN_SHM_BYTES:
        return pod_evidence(pod, f"spec.volumes[{volume['name']}].emptyDir.sizeLimit", f"sizeLimit: {limit}")
    return None


def analyze_shm(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    problems = [
        (pod, evidence)
        for pod in kubernetes.job_pods()
        for container in containers_of(pod)
        if requested(container, GPU_RESOURCE) > 0 and (evidence := shm_problem(pod, container))
    ]
    if not problems:
        return []
    pods = list(dict.fromkeys(pod_key(pod) for pod, _ in problems))
    return [
        Finding(
            id="k8s.shm.too_small",
            status=Status.WARN,
            priority=Priority.P1,
            title=f"{len(pods)} GPU pod(s) without a memory-backed /dev/shm of at least 1 GiB",
            reference="debugging-guide.md § 17",
            detail="Without an emptyDir (medium: Memory) at /dev/shm the container has 64 MiB: NCCL's "
            "shared-memory transport and DataLoader workers fail or fall back to slower paths.",
            pods=pods,
            nodes=sorted({node for pod, _ in problems if (node := pod.get("spec", {}).get("nodeName"))}),
            evidence=[evidence for _, evidence in problems],
            suggested_commands=[describe_pod(problems[0][0], "Shows the pod's volumes and mounts.")],
        )
    ]
