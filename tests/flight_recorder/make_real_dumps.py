"""Produce real Flight Recorder dumps with PyTorch on CPU: 4 ranks, gloo, one scenario per run.

    python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch   # CPU wheel, ~30 s
    /tmp/torchvenv/bin/python tests/flight_recorder/make_real_dumps.py [OUT_DIR]

Writes OUT_DIR/<scenario>/pickle/nccl_trace_rank_<N> (what the watchdog writes, from
`_dump_fr_trace`) and OUT_DIR/<scenario>/json/nccl_trace_rank_<N>.json (from
`_dump_fr_trace_json`) for every scenario below; the committed fixtures under
tests/flight_recorder/fixtures/gloo/ are its output, so `make test` needs no torch.

gloo never dumps on a timeout, so every rank dumps explicitly once all four have issued their
last collective (asynchronously, so the ones left waiting do not block the dump), and exits
only after every rank has dumped. The training code is a few named functions, so each dump's
frames point at a recognisable user-code call site.
"""

from __future__ import annotations

import datetime
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json

WORLD = 4
STEPS = 3  # healthy steps before the faulty one
DEFAULT_OUT = Path(__file__).resolve().parent / "fixtures" / "gloo"


# --- the "training code": each collective is issued from a function with a telling name -------


def sync_gradients(grads: torch.Tensor, wait: bool = True) -> None:
    work = dist.all_reduce(grads, async_op=True)
    if wait:
        work.wait()


def average_loss(loss: torch.Tensor, wait: bool = True) -> None:
    work = dist.all_reduce(loss, async_op=True)
    if wait:
        work.wait()


def share_embeddings(table: torch.Tensor) -> None:
    dist.broadcast(table, src=0, async_op=True)


def broadcast_vocab(embeddings: torch.Tensor) -> None:
    dist.broadcast(embeddings, src=0, async_op=True)


def reduce_stage_grads(grads: torch.Tensor, stage: dist.ProcessGroup, wait: bool = True) -> None:
    work = dist.all_reduce(grads, group=stage, async_op=True)
    if wait:
        work.wait()


def healthy_steps(rank: int) -> None:
    for _ in range(STEPS):
        sync_gradients(torch.ones(1000) * rank)
        average_loss(torch.ones(1))


# --- the faulty step of each scenario ----------------------------------------------------------


def skipped_collective(rank: int) -> None:
    """Rank 2 takes a code path that skips the loss all_reduce the other three enter."""
    healthy_steps(rank)
    sync_gradients(torch.ones(1000))
    if rank != 2:
        average_loss(torch.ones(1), wait=False)


def op_mismatch(rank: int) -> None:
    """Rank 3 broadcasts its embedding table where the others all_reduce their gradients."""
    healthy_steps(rank)
    if rank == 3:
        share_embeddings(torch.ones(1000))
    else:
        sync_gradients(torch.ones(1000), wait=False)


def size_mismatch(rank: int) -> None:
    """Rank 0 broadcasts a vocabulary of 1024 rows (another checkpoint) where the others expect 1000.

    gloo aborts a process that receives a message of the wrong size, so the receivers dump and
    leave before rank 0 issues its broadcast."""
    healthy_steps(rank)
    if rank == 0:
        _wait_until_gone(dist.distributed_c10d._get_default_store(), range(1, WORLD))
    broadcast_vocab(torch.ones(1024 if rank == 0 else 1000))


def subgroup_hang(rank: int) -> None:
    """Two pipeline stages; rank 3 never joins its stage's all_reduce, rank 2 waits in it."""
    stages = [
        dist.new_group([0, 1], group_desc="pipeline_stage_0"),
        dist.new_group([2, 3], group_desc="pipeline_stage_1"),
    ]
    stage = stages[rank // 2]
    for _ in range(STEPS):
        sync_gradients(torch.ones(1000))
        reduce_stage_grads(torch.ones(500), stage)
    sync_gradients(torch.ones(1000))
    if rank != 3:
        reduce_stage_grads(torch.ones(500), stage, wait=False)


SCENARIOS: dict[str, Callable[[int], None]] = {
    "skipped_collective": skipped_collective,
    "op_mismatch": op_mismatch,
    "size_mismatch": size_mismatch,
    "subgroup_hang": subgroup_hang,
}
# Scenarios whose ranks leave as soon as they have dumped (gloo would abort them otherwise).
DUMP_AND_LEAVE = {"size_mismatch"}


# --- plumbing ----------------------------------------------------------------------------------


def _worker(rank: int, scenario: str, out: str, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=60))
    store = dist.distributed_c10d._get_default_store()
    SCENARIOS[scenario](rank)
    target = Path(out) / scenario
    (target / "pickle" / f"nccl_trace_rank_{rank}").write_bytes(_dump_fr_trace())
    (target / "json" / f"nccl_trace_rank_{rank}.json").write_bytes(_dump_fr_trace_json())
    store.set(f"dumped/{rank}", str(os.getpid()))
    if (
        scenario not in DUMP_AND_LEAVE
    ):  # nobody leaves before every rank has dumped; rank 0 serves the store and leaves last
        _wait(store, "dumped", range(WORLD))
        if rank == 0:
            _wait(store, "gone", range(1, WORLD))
        else:
            store.set(f"gone/{rank}", "1")
    os._exit(0)  # the collectives left waiting would otherwise fail loudly at shutdown


def _wait(store: dist.Store, step: str, ranks: Iterable[int]) -> None:
    """Wait through the store: the gloo process group is busy with the faulty collective."""
    store.wait([f"{step}/{r}" for r in ranks], datetime.timedelta(seconds=60))


def _wait_until_gone(store: dist.Store, ranks: Iterable[int]) -> None:
    """Until those ranks have dumped and their processes have exited (zombies count as gone)."""
    for rank in ranks:
        _wait(store, "dumped", [rank])
        status = Path(f"/proc/{int(store.get(f'dumped/{rank}'))}/status")
        while status.exists() and "\nState:\tZ" not in status.read_text():
            time.sleep(0.01)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    # Both names: TORCH_FR_BUFFER_SIZE is what gloo reads in recent releases, the NCCL name the older one.
    os.environ["TORCH_FR_BUFFER_SIZE"] = "2000"
    os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] = "2000"
    for scenario in SCENARIOS:
        for kind in ("pickle", "json"):
            (out / scenario / kind).mkdir(parents=True, exist_ok=True)
        mp.spawn(_worker, args=(scenario, str(out), _free_port()), nprocs=WORLD, join=True)
        print(f"{scenario}: {out / scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
