"""What the Prometheus reader saw: DCGM series per GPU over one window, aligned to a grid.

Each GPU keeps one list of values per field, `None` where Prometheus had no sample, on the
`fine` grid (start + k * step_s) or the `coarse` grid (start + k * coarse_step_s). Label values
are kept as data, already stripped of control characters. The queries that ran are listed with
what came back, so "the metric is not exported" is never mistaken for "the GPU is healthy".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricQuery(_Model):
    field: str = Field(description="Catalogue key (metrics/fields.py), `last_seen` or `inventory`.")
    promql: str
    status: Literal["ok", "absent", "cut", "failed"] = Field(
        description="absent: no series in the window (not exported or not scraped); cut: over the bound."
    )
    series: int = 0
    message: str | None = None


class GpuMetrics(_Model):
    node: str = Field(description="The DCGM `Hostname` label, else the node label, else the scrape target.")
    node_label: str = Field(default="Hostname", description="The label `node` was read from.")
    gpu: str = Field(description="GPU index as dcgm-exporter's `gpu` label gives it.")
    uuid: str | None = None
    model: str | None = None
    pci_bus_id: str | None = None
    target: str | None = Field(default=None, description="The scrape target (`instance` label).")
    instance_id: str | None = Field(default=None, description="EC2 instance id when a label names it.")
    pods: list[str] = Field(default_factory=list, description="`namespace/pod` that held the GPU.")
    fine: dict[str, list[float | None]] = Field(default_factory=dict)
    coarse: dict[str, list[float | None]] = Field(default_factory=dict)


class MetricsSnapshot(_Model):
    source: str = Field(description="`prometheus <url>` or `amp <workspace> (<region>)`.")
    query_url: str | None = Field(default=None, description="Base URL the PromQL can be rerun against.")
    start: int = Field(description="Window start, Unix seconds.")
    end: int = Field(description="Window end, Unix seconds.")
    step_s: int
    coarse_step_s: int
    window_note: str = Field(default="", description="How the window was chosen.")
    node_filter: str | None = None
    queries: list[MetricQuery] = Field(default_factory=list)
    gpus: list[GpuMetrics] = Field(default_factory=list)
    gpus_seen: int = Field(default=0, description="GPU series in the window before any cut.")
    cut: str | None = Field(default=None, description="What the series bound left out, and why.")
