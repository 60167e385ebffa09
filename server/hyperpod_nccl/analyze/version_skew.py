"""Version skew across a job's pods: the images they run (tags and digests) and the NCCL,
aws-ofi-nccl and libfabric versions their logs print. Mixed NCCL versions fail at bootstrap with
truncated messages; a moving tag can give two pods of one job different digests.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from hyperpod_nccl.analyze.k8s_common import name_of, namespace_of, pod_evidence
from hyperpod_nccl.guard.commands import suggest, value
from hyperpod_nccl.guard.validate import Namespace
from hyperpod_nccl.models import Evidence, Finding, Priority, Status, SuggestedCommand
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.snapshot.kubernetes import KubernetesSnapshot, PodLog, container_statuses, pod_key

# (component, pattern): the first group is the version. Formats in shared/log-formats.md §2.1, §3.
VERSION_LINES = (
    ("NCCL", re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")),
    ("aws-ofi-nccl", re.compile(r"NET/OFI (?:Initializing|Using) aws-ofi-nccl (\S+)")),
    ("libfabric", re.compile(r"NET/OFI Using Libfabric version (\S+)")),
)


def _digest(image_id: str) -> str:
    return image_id.rsplit("@", 1)[-1] if "@" in image_id else image_id


def image_skew(job: str, pods: list[dict[str, Any]]) -> list[Finding]:
    """Per container name, the distinct (image, digest) pairs the job's pods run."""
    seen: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for pod in pods:
        statuses = {s["name"]: s for s in container_statuses(pod)}
        for container in pod.get("spec", {}).get("containers") or []:
            digest = _digest(statuses.get(container["name"], {}).get("imageID") or "")
            seen[container["name"]][(container.get("image", ""), digest)].append(pod)
    findings = []
    for container, variants in seen.items():
        images = {image for image, _ in variants}
        digests = {digest for _, digest in variants if digest}
        if len(images) < 2 and len(digests) < 2:
            continue
        evidence = [
            pod_evidence(pod, f"spec.containers[{container}].image", f"{image} {digest}".strip())
            for (image, digest), users in sorted(variants.items(), key=lambda item: len(item[1]))
            for pod in users
        ]
        count = max(len(images), len(digests))
        findings.append(
            Finding(
                id="k8s.version.image_skew",
                status=Status.FAIL,
                priority=Priority.P1,
                title=f"The {container} containers of {job} run {count} different images",
                reference="debugging-guide.md § 10",
                detail="Different images mean different NCCL / PyTorch / CUDA builds across ranks; "
                "pin one image digest for every pod of the job.",
                pods=[pod_key(pod) for users in variants.values() for pod in users],
                evidence=evidence,
                suggested_commands=[_images_command(pods[0])],
            )
        )
    return findings


def _images_command(pod: dict[str, Any]) -> SuggestedCommand:
    return suggest(
        "kubectl get pods -n",
        value(Namespace, namespace_of(pod)),
        "-o 'custom-columns=POD:.metadata.name,IMAGE_ID:.status.containerStatuses[*].imageID'",
        why="Lists the image digest every pod actually runs.",
        permission="pods: list",
    )


def printed_versions(log: PodLog) -> dict[str, tuple[str, int, str]]:
    """component -> (version, line number, line) for the first version line of each component."""
    found: dict[str, tuple[str, int, str]] = {}
    for number, line in enumerate(log.text.splitlines(), start=1):
        for component, pattern in VERSION_LINES:
            if component not in found and (match := pattern.search(line)):
                found[component] = (match.group(1), number, line)
    return found


def _job_logs(kubernetes: KubernetesSnapshot, pods: list[dict[str, Any]]) -> list[PodLog]:
    keys = {(namespace_of(pod), name_of(pod)) for pod in pods}
    # The current container's log says what runs now; a previous one may predate an image change.
    return [log for log in kubernetes.pod_logs if (log.namespace, log.pod) in keys and not log.previous]


def log_skew(job: str, pods: list[dict[str, Any]], kubernetes: KubernetesSnapshot) -> list[Finding]:
    by_component: dict[str, dict[str, list[Evidence]]] = defaultdict(lambda: defaultdict(list))
    pods_by_component: dict[str, set[str]] = defaultdict(set)
    for log in _job_logs(kubernetes, pods):
        for component, (version, number, line) in printed_versions(log).items():
            source = f"pod {log.namespace}/{log.pod} log ({log.container})"
            by_component[component][version].append(
                Evidence(source=source, line=number, text=line, node=log.node)
            )
            pods_by_component[component].add(f"{log.namespace}/{log.pod}")
    findings = []
    for component, versions in by_component.items():
        if len(versions) < 2:
            continue
        ranked = sorted(versions.items(), key=lambda item: len(item[1]))
        summary = "; ".join(f"{version} on {len(evidence)} pod(s)" for version, evidence in reversed(ranked))
        findings.append(
            Finding(
                id="k8s.version.log_skew",
                status=Status.FAIL,
                priority=Priority.P0 if component == "NCCL" else Priority.P1,
                title=f"The pods of {job} print {len(versions)} different {component} versions",
                reference="debugging-guide.md § 10",
                detail=f"{component}: {summary}. Mixed versions fail in bootstrap or the first collective.",
                pods=sorted(pods_by_component[component]),
                evidence=[evidence for _, group in ranked for evidence in group],
            )
        )
    return findings


def analyze_version_skew(snapshot: Snapshot) -> list[Finding]:
    kubernetes = snapshot.kubernetes
    if kubernetes is None:
        return []
    findings = []
    for job, pods in kubernetes.training_jobs().items():
        findings += image_skew(job, pods) + log_skew(job, pods, kubernetes)
    return findings
