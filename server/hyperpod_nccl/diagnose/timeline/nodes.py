"""Timeline entries from on-node probes and Slurm: kernel lines the probes read (Xid, fallen off
the bus, OOM killer) dated by their own `dmesg -T` stamps, probes that could not reach a node,
and the time Slurm recorded a node's reason for being down or drained."""

from __future__ import annotations

from datetime import datetime

from hyperpod_nccl.analyze.job_topology import Topology
from hyperpod_nccl.analyze.node_common import ProbedNode, probed_nodes
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.models import Category
from hyperpod_nccl.probes.parse.sections import Line
from hyperpod_nccl.probes.xid import xid_info
from hyperpod_nccl.snapshot import Snapshot
from hyperpod_nccl.utc import parse_utc

_DMESG_STAMP_FORMAT = "%a %b %d %H:%M:%S %Y"
_SLURM_TROUBLE = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING")


def _dmesg_time(text: str) -> datetime | None:
    """`[Sun Nov 22 03:41:07 2026] …` as UTC (HyperPod nodes keep their clocks in UTC)."""
    if not text.startswith("[") or "]" not in text:
        return None
    try:
        moment = datetime.strptime(text[1 : text.index("]")].strip(), _DMESG_STAMP_FORMAT)
    except ValueError:
        return None
    return parse_utc(moment.isoformat(), naive_is_utc=True)


def _kernel_entry(
    node: ProbedNode, line: Line, what: str, cause: Category | None, topology: Topology
) -> TimedEvent:
    name = topology.node_of_instance(node.instance_id) or node.hostname
    return TimedEvent(
        _dmesg_time(line.text.strip()),
        f"probe:{line.section}:{line.number}",
        f"{what}: {line.text.strip()}",
        "node.kernel",
        abnormal=True,
        node=name,
        instance_id=node.instance_id,
        cause=cause,
    )


def _probe_entries(node: ProbedNode, collected_at: str, topology: Topology) -> list[TimedEvent]:
    kernel = node.facts.kernel
    found = []
    for xid in kernel.xids:
        info = xid_info(xid.code)
        cause = Category.GPU_HARDWARE if info.cause in ("hardware", "driver") else None
        found.append(_kernel_entry(node, xid.line, f"Xid {xid.code} ({info.name})", cause, topology))
    found += [
        _kernel_entry(node, line, "GPU fell off the bus", Category.GPU_HARDWARE, topology)
        for line in kernel.fell_off
    ]
    found += [
        _kernel_entry(node, line, "OOM killer", Category.HOST_OOM, topology) for line in kernel.oom_kills
    ]
    if node.result.status != "ok":
        found.append(
            TimedEvent(
                parse_utc(collected_at),
                "ssm:StartSession",
                f"probe on {node.label}: {node.result.status}"
                + (f" ({node.result.error})" if node.result.error else ""),
                "probe.failed",
                abnormal=True,
                node=topology.node_of_instance(node.instance_id) or node.hostname,
                instance_id=node.instance_id,
            )
        )
    return found


def probe_entries(snapshot: Snapshot, topology: Topology) -> list[TimedEvent]:
    return [
        entry
        for node in probed_nodes(snapshot)
        for entry in _probe_entries(node, snapshot.collected_at, topology)
    ]


def slurm_entries(snapshot: Snapshot, topology: Topology) -> list[TimedEvent]:
    """A node's reason carries `user@time` of when it was set: the time it went down or drained."""
    found = []
    for node in snapshot.slurm.nodes if snapshot.slurm else []:
        stamp = (node.reason_stamp or "").rpartition("@")[2]
        when = parse_utc(stamp, naive_is_utc=True)
        if when is None:
            continue
        trouble = any(word in node.state.upper() for word in _SLURM_TROUBLE)
        found.append(
            TimedEvent(
                when,
                "slurm scontrol show node",
                f"{node.state}: {node.reason or ''}".strip(": "),
                "slurm.node_state",
                abnormal=trouble,
                node=node.name,
                instance_id=node.instance_id or topology.instance_of(node.name),
                cause=Category.INFRASTRUCTURE if trouble else None,
            )
        )
    return found
