"""The MCP server: a thin adapter from MCP tools, resources and prompts to the service functions.

Every tool but create_escalation_bundle (and run_diagnostic's `save_bundle`) is read-only,
annotated truthfully, backed by guarded clients and bounded by the server's deadline; each
validates its input with pydantic and returns structured output small enough for an LLM's context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources.types import TextResource
from mcp_types import ToolAnnotations
from pydantic import Field

from hyperpod_nccl import __version__
from hyperpod_nccl.deadline import with_deadline
from hyperpod_nccl.diagnose.k8s_tool import get_pod_logs, list_kube_contexts, list_pods
from hyperpod_nccl.diagnose.tool import describe_cluster, list_cluster_nodes, run_diagnostic, scan_cloudwatch
from hyperpod_nccl.mcp_adapter import HyperpodServer
from hyperpod_nccl.metrics.tool import query_gpu_metrics
from hyperpod_nccl.probes.tool import probe_nodes
from hyperpod_nccl.references import (
    ReferenceIndex,
    ReferenceList,
    ReferenceSection,
    UnknownReference,
    default_index,
    list_reference_files,
    read_reference_section,
)
from hyperpod_nccl.skill_tools import compare_reports, create_escalation_bundle
from hyperpod_nccl.slurm.tool import slurm_status
from hyperpod_nccl.triage.tool import triage_logs
from hyperpod_nccl.workflow import SERVER_INSTRUCTIONS, diagnose_prompt, escalation_prompt, triage_prompt

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
# Tools that read a live cluster: still read-only, but they reach outside this machine.
READ_ONLY_LIVE = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True
)
# Writes a new local file in the server's output directory (never replacing one), nothing else.
WRITES_LOCAL_FILE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
)
# The live diagnostic, which also writes a new snapshot folder when asked to (`save_bundle`).
LIVE_MAY_SAVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True
)

ReferenceFileName = Annotated[
    str,
    Field(pattern=r"^[a-z0-9][a-z0-9-]*\.md$", description="Reference file, e.g. debugging-guide.md."),
]
SectionPart = Annotated[int, Field(ge=1, le=100, description="Which part of a long section, from 1.")]
SectionKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="Section number or heading as printed after '§' in a finding, e.g. 11.",
    ),
]


def list_references() -> ReferenceList:
    """List the reference documents and their sections.

    Use this to find the section a finding points at (`<file>.md § <section>`) or to browse
    what the references cover. Returns every file with its section pointers and titles.
    """
    return list_reference_files()


def read_reference(file: ReferenceFileName, section: SectionKey, part: SectionPart = 1) -> ReferenceSection:
    """Read one section of a reference document.

    Use this for every FAIL or WARN: call it with the file and section from the finding's
    `reference` field (`debugging-guide.md § 11` → file="debugging-guide.md", section="11")
    before suggesting anything. Returns the section's markdown; a long section comes in parts
    (`parts` says how many, `truncated` that more follows): ask for `part=2` and on.
    """
    try:
        return read_reference_section(file, section, part=part)
    except UnknownReference as error:
        raise ToolError(str(error)) from None


# (tool, annotations). Later capabilities append their tools here.
TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = [
    (list_references, READ_ONLY),
    (read_reference, READ_ONLY),
    (triage_logs, READ_ONLY),
    (compare_reports, READ_ONLY),
    # The tool that writes: one new .tar.gz in the output directory; nothing on any cluster.
    (create_escalation_bundle, WRITES_LOCAL_FILE),
    # Opens SSM sessions only to run the shipped read-only node_health script.
    (probe_nodes, READ_ONLY_LIVE),
    # Runs the shipped read-only Slurm probe on this host, or on the controller over SSM.
    (slurm_status, READ_ONLY_LIVE),
    # The cluster diagnostic: guarded AWS reads and Kubernetes GETs; `save_bundle` writes a new
    # snapshot folder in the output directory.
    (run_diagnostic, LIVE_MAY_SAVE),
    # Prometheus / AMP query endpoints only (guard/prometheus.py).
    (query_gpu_metrics, READ_ONLY_LIVE),
    (describe_cluster, READ_ONLY_LIVE),
    (list_cluster_nodes, READ_ONLY_LIVE),
    (scan_cloudwatch, READ_ONLY_LIVE),
    # The contexts of the server's own kubeconfig (names only); then Kubernetes GETs, never exec.
    (list_kube_contexts, READ_ONLY),
    (list_pods, READ_ONLY_LIVE),
    (get_pod_logs, READ_ONLY_LIVE),
]


def _add_reference_resources(server: MCPServer, index: ReferenceIndex) -> None:
    for reference in index.files():
        server.add_resource(
            TextResource(
                uri=f"hyperpod-nccl://references/{reference.name}",
                name=reference.name,
                title=reference.title,
                description=f"Reference document {reference.name}",
                mime_type="text/markdown",
                text="\n".join(reference.lines) + "\n",
            )
        )
        for section in reference.sections:
            server.add_resource(
                TextResource(
                    uri=f"hyperpod-nccl://references/{reference.name}/{quote(section.key, safe='')}",
                    name=section.pointer,
                    title=section.title,
                    description=f"{section.pointer}: {section.title}",
                    mime_type="text/markdown",
                    text=index.text(section),
                )
            )


def _add_workflow_prompts(server: MCPServer) -> None:
    @server.prompt(
        name="diagnose_nccl_failure",
        title="Diagnose an NCCL or distributed-training failure",
        description="The read-only workflow: collect → diagnose → read the section → suggest → rerun.",
    )
    def diagnose_nccl_failure(cluster: str = "", region: str = "", error: str = "") -> str:
        return diagnose_prompt(cluster, region, error)

    @server.prompt(
        name="triage_training_logs",
        title="Triage a distributed job's training logs",
        description="Find the rank and event that came first in a folder of worker logs, read-only.",
    )
    def triage_training_logs(log_dir: str = "", storage_log_dir: str = "", error: str = "") -> str:
        return triage_prompt(log_dir, storage_log_dir, error)

    @server.prompt(
        name="prepare_escalation",
        title="Prepare an AWS Support escalation",
        description="Check the escalation criteria, then write a redacted bundle with CASE.md.",
    )
    def prepare_escalation(cluster: str = "", region: str = "", report: str = "") -> str:
        return escalation_prompt(cluster, region, report)


def build_server() -> MCPServer:
    server = HyperpodServer(
        name="hyperpod-nccl",
        title="HyperPod NCCL debugger (read-only)",
        version=__version__,
        instructions=SERVER_INSTRUCTIONS,
        log_level="WARNING",
    )
    for tool, tool_annotations in TOOLS:
        # Under the server's deadline; redacted, printed as the CLI prints, failures as one line.
        server.add_presented_tool(with_deadline(tool), tool_annotations)
    _add_reference_resources(server, default_index())
    _add_workflow_prompts(server)
    return server
