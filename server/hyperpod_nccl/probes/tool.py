"""The `probe_nodes` MCP tool: the on-node probe for an assistant, with output sized for its
context (per-node status and the issues, not the raw probe output)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from hyperpod_nccl.guard.validate import ClusterName, InstanceId, Region
from hyperpod_nccl.models import Finding, Summary
from hyperpod_nccl.probes.fanout import DEFAULT_SAMPLE, MAX_SAMPLE
from hyperpod_nccl.snapshot.probes import ProbeSnapshot

_EVIDENCE_PER_FINDING = 3


class NodeProbeSummary(BaseModel):
    instance_id: str | None
    hostname: str | None
    instance_group: str | None
    status: str = Field(description="ok, partial, timeout, unreachable, access_denied or error.")
    duration_s: float
    error: str | None = None
    issues: int = Field(description="FAIL/WARN findings that name this node.")


class ProbeNodesResult(BaseModel):
    cluster: str | None
    region: str | None
    sampling: str = Field(description="Which nodes were probed and why.")
    summary: Summary
    nodes: list[NodeProbeSummary]
    findings: list[Finding] = Field(
        description="Issues (FAIL/WARN) and the sampling note; PASS lines omitted."
    )


def compact_result(probes: ProbeSnapshot, findings: list[Finding], summary: Summary) -> ProbeNodesResult:
    kept = [
        f.model_copy(update={"evidence": f.evidence[:_EVIDENCE_PER_FINDING]})
        for f in findings
        if f.is_issue or f.id == "node.probe.sampling"
    ]
    nodes = [
        NodeProbeSummary(
            instance_id=r.target.instance_id,
            hostname=r.target.hostname,
            instance_group=r.target.instance_group,
            status=r.status,
            duration_s=r.duration_s,
            error=r.error,
            issues=sum(1 for f in kept if f.is_issue and r.target.instance_id in f.instance_ids),
        )
        for r in probes.results
    ]
    return ProbeNodesResult(
        cluster=probes.cluster_name,
        region=probes.region,
        sampling=probes.sampling,
        summary=summary,
        nodes=nodes,
        findings=kept,
    )


async def probe_nodes(
    cluster: ClusterName,
    region: Region,
    node: InstanceId | None = None,
    sample_nodes: Annotated[
        int, Field(ge=1, le=MAX_SAMPLE, description="Nodes to sample when no node is given (default 3).")
    ] = DEFAULT_SAMPLE,
) -> ProbeNodesResult:
    """Run the read-only node-health probe on HyperPod nodes over SSM, in parallel.

    Use this for GPU hardware, fabric manager, EFA and host-limit evidence: Xid errors, ECC and
    row remapping, throttling, PCIe downgrades, fabric manager down or mismatched, EFA provider
    missing (TCP fallback), MTU differences between nodes, memlock and /dev/shm limits. Give
    `node` for one instance, else `sample_nodes` GPU workers are sampled (controller and login
    groups skipped). Needs ssm:StartSession and session-manager-plugin where the server runs.
    Returns per-node status and the FAIL/WARN findings with instance ids, references and
    suggested commands (run none of them yourself).
    """
    from mcp.server.mcpserver.exceptions import ToolError

    from hyperpod_nccl.probes.fanout import UnknownNode
    from hyperpod_nccl.probes.service import probe_nodes_for_snapshot, probe_report
    from hyperpod_nccl.probes.targets import ClusterLookupError

    try:
        probes = await probe_nodes_for_snapshot(cluster, region, node=node, sample_nodes=sample_nodes)
    except (ClusterLookupError, UnknownNode) as error:
        raise ToolError(str(error)) from None
    report = probe_report(probes)
    return compact_result(probes, report.findings, report.summary)
