"""NCCL-shaped Flight Recorder dumps, for the states gloo cannot produce.

Built from the fields PyTorch's FlightRecorder writes (FlightRecorderDetail.hpp): per entry
record_id, pg_id, process_group (name, desc), collective_seq_id, p2p_seq_id, op_id,
profiling_name `nccl:<op>` (`nccl:send 0->1`, `nccl:recv 1<-0` with group-local ranks), sizes and
dtypes, state, time_created_ns, time_discovered_started_ns / _completed_ns (None in a pickle, 0
in JSON), retired, timeout_ms, is_p2p, frames; per dump version, pg_config (ranks as a string),
pg_status (keyed by pg_id; strings in JSON, -1 for "none"), comm_lib_version.

`Rank` records what one rank issued; `write_job` writes every rank's dump the way the watchdog
would (pickle, `nccl_trace_rank_<N>`) or as `_dump_fr_trace_json` would (`.json`).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

State = Literal["scheduled", "started", "completed"]
BASE_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
TORCH = "/usr/local/lib/python3.11/site-packages/torch/distributed"


@cache
def stack(function: str, line: int, file: str = "/fsx/code/train.py") -> list[dict[str, object]]:
    """A recorded stack, innermost first: torch's frames, then the user's. One object per call
    site, as PyTorch symbolizes each distinct frame once and the pickle refers back to it."""
    return [
        {"name": "all_reduce", "filename": f"{TORCH}/distributed_c10d.py", "line": 2950},
        {"name": "wrapper", "filename": f"{TORCH}/c10d_logger.py", "line": 83},
        {"name": function, "filename": file, "line": line},
        {"name": "main", "filename": file, "line": 300},
        {"name": "<module>", "filename": file, "line": 310},
    ]


@dataclass
class Group:
    name: str
    desc: str
    members: list[int]
    pg_id: int = 0


DEFAULT = "default_pg"


@dataclass
class Rank:
    rank: int
    groups: dict[str, Group]
    entries: list[dict[str, object]] = field(default_factory=list)
    seq: dict[str, int] = field(default_factory=dict)
    p2p: dict[str, int] = field(default_factory=dict)
    op_id: dict[str, int] = field(default_factory=dict)

    def collective(
        self,
        op: str,
        sizes: list[int],
        *,
        group: str = "0",
        state: State = "completed",
        dtype: str = "Float",
        where: tuple[str, int] = ("train_step", 120),
        output: list[int] | None = None,
    ) -> None:
        self.seq[group] = self.seq.get(group, 0) + 1
        self._entry(op, group, state, [sizes], [output or sizes], dtype, where, is_p2p=False)

    def send(self, peer: int, sizes: list[int], *, group: str = "0", state: State = "completed") -> None:
        local = self.groups[group].members
        self.p2p[group] = self.p2p.get(group, 0) + 1
        name = f"send {local.index(self.rank)}->{local.index(peer)}"
        self._entry(name, group, state, [sizes], [], "Float", ("send_activations", 210), is_p2p=True)

    def recv(self, peer: int, sizes: list[int], *, group: str = "0", state: State = "completed") -> None:
        local = self.groups[group].members
        self.p2p[group] = self.p2p.get(group, 0) + 1
        name = f"recv {local.index(self.rank)}<-{local.index(peer)}"
        self._entry(name, group, state, [], [sizes], "Float", ("recv_activations", 220), is_p2p=True)

    def _entry(
        self,
        name: str,
        group: str,
        state: State,
        inputs: list[list[int]],
        outputs: list[list[int]],
        dtype: str,
        where: tuple[str, int],
        is_p2p: bool,
    ) -> None:
        record_id = len(self.entries)
        created = BASE_NS + record_id * 1_000_000_000 + self.rank * 1000
        started = created + 5_000 if state in ("started", "completed") else None
        completed = created + 900_000 if state == "completed" else None
        self.op_id[group] = self.op_id.get(group, 0) + 1
        self.entries.append(
            {
                "frames": stack(*where),
                "record_id": record_id,
                "pg_id": self.groups[group].pg_id,
                "process_group": (group, self.groups[group].desc),
                "collective_seq_id": self.seq.get(group, 0),
                "p2p_seq_id": self.p2p.get(group, 0),
                "op_id": self.op_id[group],
                "profiling_name": f"nccl:{name}",
                "time_created_ns": created,
                "input_sizes": inputs,
                "input_dtypes": [dtype] * len(inputs),
                "output_sizes": outputs,
                "output_dtypes": [dtype] * len(outputs),
                "state": state,
                "time_discovered_started_ns": started,
                "time_discovered_completed_ns": completed,
                "retired": state == "completed",
                "timeout_ms": 600_000,
                "is_p2p": is_p2p,
                "thread_id": "140000000000000",
                "thread_name": "pt_main_thread",
            }
        )

    def dump(self, *, version: str = "2.10", buffer: int = 2000) -> dict[str, object]:
        """The dict the watchdog pickles; a full ring buffer keeps only the last `buffer` entries."""
        entries = self.entries[-buffer:]
        recent = _version(version) >= _version("2.7")  # thread fields and comm_lib_version came later
        if not recent:
            entries = [{k: v for k, v in e.items() if not k.startswith("thread_")} for e in entries]
        dump: dict[str, object] = {
            "version": version,
            "pg_config": {
                g.name: {"name": g.name, "desc": g.desc, "ranks": str(g.members)}
                for g in self.groups.values()
                if self.rank in g.members
            },
            "pg_status": {
                str(g.pg_id): self._status(g.name) for g in self.groups.values() if g.name in self.seq
            },
            "entries": entries,
        }
        if recent:
            dump["comm_lib_version"] = "2.21.5"
        return dump

    def _status(self, group: str) -> dict[str, int]:
        mine = [e for e in self.entries if e["process_group"][0] == group and not e["is_p2p"]]  # type: ignore[index]

        def last(states: tuple[str, ...]) -> int:
            return max((int(e["collective_seq_id"]) for e in mine if e["state"] in states), default=-1)  # type: ignore[call-overload]

        return {
            "last_enqueued_collective": self.seq.get(group, 0),
            "last_started_collective": last(("started", "completed")),
            "last_completed_collective": last(("completed",)),
        }


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def job(world: int, subgroups: list[Group] | None = None) -> list[Rank]:
    groups = {"0": Group("0", DEFAULT, list(range(world)))}
    for index, group in enumerate(subgroups or [], start=1):
        groups[group.name] = Group(group.name, group.desc, group.members, pg_id=index)
    return [Rank(rank, groups) for rank in range(world)]


def as_json(dump: dict[str, object], *, frames: bool = False) -> str:
    """What `_dump_fr_trace_json` writes: sorted keys, lists for tuples, 0 for missing times,
    pg_status numbers as strings, and no frames."""
    entries = []
    for entry in dump.get("entries", []):  # type: ignore[union-attr]
        converted = {k: v for k, v in entry.items() if frames or k != "frames"}
        for key in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            converted[key] = converted[key] or 0
        entries.append(converted)
    status = {
        pg: {k: str(v) for k, v in fields.items()}
        for pg, fields in dump["pg_status"].items()  # type: ignore[union-attr]
    }
    return json.dumps(
        {**dump, "entries": entries, "pg_status": status, "nccl_comm_state": {}}, sort_keys=True
    )


def write_job(
    ranks: list[Rank],
    directory: Path,
    *,
    encoding: Literal["pickle", "json"] = "pickle",
    version: str = "2.10",
    buffer: int = 2000,
    skip: tuple[int, ...] = (),
) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for rank in ranks:
        if rank.rank in skip:
            continue
        dump = rank.dump(version=version, buffer=buffer)
        if encoding == "pickle":
            path = directory / f"nccl_trace_rank_{rank.rank}"
            path.write_bytes(pickle.dumps(dump, protocol=2))
        else:
            path = directory / f"nccl_trace_rank_{rank.rank}.json"
            path.write_text(as_json(dump))
        written.append(path)
    return written


def steps(ranks: list[Rank], count: int, *, group: str = "0") -> None:
    """`count` healthy training steps: a gradient all_reduce every rank completes."""
    for _ in range(count):
        for rank in ranks:
            if rank.rank in rank.groups[group].members:
                rank.collective("all_reduce", [4096], group=group, where=("sync_gradients", 88))
