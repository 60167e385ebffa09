"""`hyperpod-nccl probe --local | --cluster NAME --region R [--node ID | --sample-nodes N] | --replay DIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from hyperpod_nccl.cli_common import UsageError, checked, emit_report, path_argument
from hyperpod_nccl.guard.text import escape_controls
from hyperpod_nccl.guard.validate import ClusterName, InstanceId, Region
from hyperpod_nccl.probes.fanout import (
    DEFAULT_CONCURRENCY,
    DEFAULT_SAMPLE,
    MAX_SAMPLE,
    NODE_TIMEOUT_S,
    ProbeProgress,
)
from hyperpod_nccl.snapshot.probes import ProbeSnapshot


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true", help="probe the host this command runs on")
    where.add_argument("--cluster", metavar="NAME", help="HyperPod cluster name or ARN (probes over SSM)")
    where.add_argument(
        "--replay",
        metavar="DIR",
        type=path_argument,
        help="analyze recorded node_health outputs, one DIR/<instance-id>.txt each",
    )
    parser.add_argument("--region", help="AWS region of the cluster (required with --cluster)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--node", metavar="INSTANCE_ID", help="probe only this node")
    which.add_argument(
        "--sample-nodes",
        type=int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"nodes to sample (default 3, max {MAX_SAMPLE})",
    )
    parser.add_argument(
        "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="nodes probed at once (default 16)"
    )
    parser.add_argument(
        "--timeout", type=float, default=NODE_TIMEOUT_S, help="seconds per node (default 180)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _progress(update: ProbeProgress) -> None:
    print(
        f"probe {update.done}/{update.total}: {escape_controls(update.node)} {update.status}", file=sys.stderr
    )


async def _probe_cluster(args: argparse.Namespace) -> ProbeSnapshot:
    from hyperpod_nccl.probes.service import probe_nodes_for_snapshot

    return await probe_nodes_for_snapshot(
        checked(ClusterName, args.cluster),
        checked(Region, args.region or ""),
        node=checked(InstanceId, args.node) if args.node else None,
        sample_nodes=args.sample_nodes,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        progress=_progress,
    )


async def _probe_replay(directory: Path, timeout_s: float) -> ProbeSnapshot:
    from hyperpod_nccl.probes.service import probe_recorded

    return await probe_recorded(directory, timeout_s=timeout_s)


def run_probe(args: argparse.Namespace) -> int:
    from hyperpod_nccl.probes.fanout import UnknownNode
    from hyperpod_nccl.probes.service import probe_local, probe_report
    from hyperpod_nccl.probes.targets import ClusterLookupError

    if args.cluster and not args.region:
        raise UsageError("--cluster needs --region (e.g. --region us-west-2)")
    if args.replay is not None and not args.replay.is_dir():
        raise UsageError(f"{args.replay} is not a directory of recorded probe outputs")
    try:
        if args.local:
            probes = anyio.run(lambda: probe_local(timeout_s=args.timeout))
        elif args.replay is not None:
            probes = anyio.run(lambda: _probe_replay(args.replay, args.timeout))
        else:
            probes = anyio.run(lambda: _probe_cluster(args))
    except (ClusterLookupError, UnknownNode) as error:
        raise UsageError(str(error)) from None
    return emit_report(probe_report(probes), args.json)
