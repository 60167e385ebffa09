"""Everything one node's `node_health` output says, parsed once and shared by every analyzer."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from hyperpod_nccl.probes.parse.efa import EfaFacts, parse_efa
from hyperpod_nccl.probes.parse.fabric import DcgmFacts, FabricFacts, parse_dcgm, parse_fabric
from hyperpod_nccl.probes.parse.gpu import GpuFacts, parse_gpu
from hyperpod_nccl.probes.parse.host import HostFacts, parse_host
from hyperpod_nccl.probes.parse.kernel import KernelFacts, parse_kernel
from hyperpod_nccl.probes.parse.sections import Section, empty, split_sections


@dataclass(frozen=True)
class NodeFacts:
    sections: dict[str, Section]
    host: HostFacts
    gpu: GpuFacts
    kernel: KernelFacts
    fabric: FabricFacts
    dcgm: DcgmFacts
    efa: EfaFacts


@lru_cache(maxsize=256)
def parse_node(output: str) -> NodeFacts:
    """Parse a node_health output. Cached: six analyzers read the same text."""
    sections = split_sections(output)

    def get(name: str) -> Section:
        return sections.get(name) or empty(name)

    return NodeFacts(
        sections=sections,
        host=parse_host(sections),
        gpu=parse_gpu(get("nvidia_smi_q"), get("driver"), get("nvlink")),
        kernel=parse_kernel(get("kernel_log"), get("pcie")),
        fabric=parse_fabric(get("fabric_manager")),
        dcgm=parse_dcgm(get("dcgm_health")),
        efa=parse_efa(get("efa_fi_info"), get("efa_devices"), get("efa_versions"), get("nccl")),
    )
