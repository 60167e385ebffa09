"""The values a suggested command is built from: what the input says about one finding's job,
nodes, ranks and processes. Everything here came from outside (logs, a snapshot) and is checked
again, one value at a time, when it becomes a word of a command (`guard/commands.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Quoted:
    """A log line a finding quotes: where it is, so a command can show the lines around it."""

    source: str
    line: int


@dataclass(frozen=True)
class Facts:
    """What one finding's commands may fill in; None or empty where the input does not say."""

    slurm: bool = False  # the job ran under Slurm (srun / slurmstepd lines, slurm-<id>.out files)
    kubernetes: bool = False  # the job ran on Kubernetes (kubectl output, pod events, an EKS cluster)
    job_id: str | None = None
    cluster: str | None = None
    region: str | None = None
    nodes: tuple[str, ...] = ()
    ranks: tuple[int, ...] = ()
    pids: dict[int, int] = field(default_factory=dict)  # rank → pid, for the finding's ranks
    instance_ids: dict[str, str] = field(default_factory=dict)  # node → EC2 instance id
    pods: tuple[tuple[str, str], ...] = ()  # (namespace, pod)
    port: str | None = None
    store_host: str | None = None  # MASTER_ADDR as the logs name it
    ended: bool = False  # the logs say the job's processes ended: their pids name nothing now
    addresses: tuple[str, ...] = ()  # the IPv4 addresses NCCL bootstrapped from on the finding's nodes
    quoted: tuple[Quoted, ...] = ()  # the finding's evidence lines, first first
    # Around the finding's first dated line, as the log's clock wrote it: (since, until) for
    # journalctl, which keeps the kernel's messages across reboots where dmesg keeps one boot.
    window: tuple[str, str] | None = None
    # The hosts at the other end of the connections the evidence says failed (peer instance ids,
    # or the nodes they map to): where a peer's own failure is to be read.
    peers: tuple[str, ...] = ()
    # An NCCL call failed and NCCL printed no WARN or INFO line: it ran with NCCL_DEBUG off.
    nccl_quiet: bool = False
    # The communication libraries the finding's lines name ("gloo", "nccl"): whose variables to set.
    libraries: frozenset[str] = frozenset()

    @property
    def node(self) -> str | None:
        return self.nodes[0] if self.nodes else None

    @property
    def rank(self) -> int | None:
        return self.ranks[0] if self.ranks else None

    @property
    def instance_id(self) -> str | None:
        node = self.node
        if node and node in self.instance_ids:
            return self.instance_ids[node]
        return next(iter(self.instance_ids.values()), None) if len(self.instance_ids) == 1 else None
