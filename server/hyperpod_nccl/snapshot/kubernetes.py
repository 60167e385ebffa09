"""What the Kubernetes collector saw: nodes, pods, events, services, network policies, pod logs.
Objects are kept as the API serialises them (camelCase), trimmed of fields no analyzer reads."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class KubernetesSnapshot(BaseModel):
    nodes: list[dict[str, Any]] = Field(default_factory=list)
    pods: list[dict[str, Any]] = Field(default_factory=list)
