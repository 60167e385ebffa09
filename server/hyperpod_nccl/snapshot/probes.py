"""What the on-node probes saw: one result per probed node, with the raw output the analyzers
parse, and how the nodes were chosen (the report must say what was sampled)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_nccl.probes.runners.base import ProbeResult


class ProbeSnapshot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    script: str = "node_health"
    cluster_name: str | None = None
    cluster_id: str | None = None
    region: str | None = None
    orchestrator: Literal["eks", "slurm"] | None = None
    local: bool = Field(default=False, description="True when the probe ran on the host running the tool.")
    nodes_total: int | None = Field(default=None, description="Nodes in the cluster, before sampling.")
    sampling: str = Field(default="", description="Which nodes were probed and why.")
    results: list[ProbeResult] = Field(default_factory=list)
