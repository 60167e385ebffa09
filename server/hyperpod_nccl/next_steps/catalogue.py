"""What to run next, section by section of references/: the commands a reader of that section is
told to run, built from the values the input holds.

Every FAIL and WARN points at a section, and its commands come from that section (a test holds
each command's program and subcommand to the section's text). `SECTION_STEPS` gives a section's
commands, the read-only confirmation first, then the fix; `ID_STEPS` gives findings whose section
covers more than they need commands of their own (from the same section); `REASONS` says, for the
findings no command fits, why. A value the input does not hold becomes a placeholder
(`<job-id>`), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import LiteralString

from hyperpod_nccl.guard.commands import Word, joined, placeholder, suggest, suggest_chain, value
from hyperpod_nccl.guard.validate import (
    ClusterName,
    HostAddress,
    InstanceId,
    JournalTime,
    KubeNodeName,
    LineNumber,
    LogFileName,
    Namespace,
    PodName,
    ProcessId,
    Region,
    SlurmJobId,
    SlurmNodeName,
    TcpPort,
)
from hyperpod_nccl.models import BlastRadius, SuggestedCommand
from hyperpod_nccl.next_steps.facts import Facts

Steps = Callable[[Facts], list[SuggestedCommand]]

_ROOT_ON_NODE = "root (sudo) on the node"
_SHELL_ON_NODE = "a shell on the node"
_SHELL_IN_CONTAINER = "a shell in the job's container (kubectl exec: pods/exec create; docker exec)"
_SLURM_USER = "Slurm user (the job's owner)"
_SLURM_ADMIN = "Slurm operator or admin (SlurmUser/root)"
_JOB_SCRIPT = "edit the job script and resubmit it"
_READ_LOGS = "read access to the log folder"
_LINES_BEFORE = 30  # lines shown before a quoted line: the traceback or output that led to it


# --- words and commands the sections share -------------------------------------------------------


def _node_word(facts: Facts) -> Word:
    return value(SlurmNodeName if facts.slurm else KubeNodeName, facts.node)


def on_node(facts: Facts, *words: Word) -> tuple[Word, ...]:
    """A command to run on the finding's node: over ssh on Slurm, where compute nodes take ssh from
    the head node; as is elsewhere (an SSM session or `kubectl debug node/…` opens a shell there)."""
    return ("ssh", _node_word(facts), *words) if facts.slurm else words


def _where(facts: Facts) -> str:
    return f", on {facts.node}" if facts.node and not facts.slurm else ""


def sacct(facts: Facts, columns: LiteralString, why: str) -> list[SuggestedCommand]:
    """The job's accounting record, on Slurm only."""
    if not facts.slurm:
        return []
    return [
        suggest(
            "sacct -j",
            value(SlurmJobId, facts.job_id),
            joined("--format=", columns),
            why=why,
            permission=_SLURM_USER,
        )
    ]


def kernel_log(facts: Facts, grep: LiteralString, why: str) -> SuggestedCommand:
    """The node's kernel log filtered by `grep` (shell text we wrote, e.g. `grep -iE 'xid|sxid'`):
    the journal around the failure when the logs date it (dmesg forgets it at the next reboot),
    else `dmesg -T`."""
    reader: tuple[Word, ...] = ("sudo dmesg -T",)
    kept = ""
    if facts.window is not None:
        since, until = facts.window
        journal = ("sudo journalctl -k --since", value(JournalTime, since))
        reader = (*journal, "--until", value(JournalTime, until))
        kept = (
            " (the journal keeps them across reboots; the window is the log's clock: widen it if the node "
            "keeps another time zone)"
        )
    return suggest_chain(
        list(on_node(facts, *reader)),
        "|",
        grep,
        why=why + _where(facts) + kept,
        permission=_ROOT_ON_NODE,
    )


def in_container_check(command: LiteralString, why: str) -> SuggestedCommand:
    """A read-only command run inside the job's container, where the node's own view differs."""
    return suggest(command, why=why, permission=_SHELL_IN_CONTAINER)


def on_node_check(facts: Facts, command: LiteralString, why: str, *, root: bool = False) -> SuggestedCommand:
    return suggest(
        *on_node(facts, command),
        why=why + _where(facts),
        permission=_ROOT_ON_NODE if root else _SHELL_ON_NODE,
    )


def on_node_filtered(
    facts: Facts, command: LiteralString, grep: LiteralString, why: str, *, root: bool = False
) -> SuggestedCommand:
    """`on_node_check` with its output piped through `grep` (the lines that answer the question)."""
    return suggest_chain(
        list(on_node(facts, command)),
        "|",
        grep,
        why=why + _where(facts),
        permission=_ROOT_ON_NODE if root else _SHELL_ON_NODE,
    )


# The random suffix Kubernetes gives a Job's or ReplicaSet's pods (`task-646--1-mhpnk`): a pod's
# hostname, which NCCL and the launchers print where a node's would be. Node commands need its node.
_GENERATED_POD = re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def _pod_not_node(facts: Facts) -> bool:
    return not facts.slurm and facts.node is not None and _GENERATED_POD.search(facts.node) is not None


def _pods_node(facts: Facts, why: str) -> SuggestedCommand:
    return suggest(
        "kubectl get pod",
        value(PodName, facts.node),
        "-o wide",
        why=f"{facts.node} is a pod's hostname, not a node: the NODE column names the node to {why}",
        permission="pods: get",
    )


def exclude_node(facts: Facts, why: str) -> SuggestedCommand:
    if _pod_not_node(facts):
        return _pods_node(facts, "cordon (kubectl cordon <node>)")
    if facts.slurm:
        return suggest(
            "sbatch",
            joined("--exclude=", _node_word(facts)),
            placeholder("job-script"),
            why=why,
            blast_radius=BlastRadius.RESTARTS_JOB,
            permission=_SLURM_USER,
        )
    return suggest(
        "kubectl cordon",
        _node_word(facts),
        why=why + _or_on_slurm(facts, "sbatch --exclude={node} <job-script>"),
        blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
        permission="nodes: patch",
    )


def show_node(facts: Facts, why: str) -> SuggestedCommand:
    if _pod_not_node(facts):
        return _pods_node(facts, "describe (kubectl describe node <node>)")
    if facts.slurm:
        return suggest("scontrol show node", _node_word(facts), why=why, permission=_SLURM_USER)
    return suggest(
        "kubectl describe node",
        _node_word(facts),
        why=why + _or_on_slurm(facts, "scontrol show node {node}"),
        permission="nodes: get",
    )


def _or_on_slurm(facts: Facts, command: LiteralString) -> str:
    """The logs name no scheduler: the Kubernetes command is shown, with the Slurm one beside it."""
    if facts.kubernetes:
        return ""
    node = value(SlurmNodeName, facts.node).text
    return f" (on Kubernetes; on Slurm: `{command.format(node=node)}`)"


def export(*assignments: Word, why: str) -> SuggestedCommand:
    """Environment for the next run, set in the job script before the launcher."""
    return suggest(
        "export", *assignments, why=why, blast_radius=BlastRadius.CHANGES_CONFIG, permission=_JOB_SCRIPT
    )


def resubmit(facts: Facts, option: LiteralString, what: LiteralString, why: str) -> list[SuggestedCommand]:
    """`sbatch --<option>=<what> <job-script>`: the job again with one setting changed (Slurm)."""
    if not facts.slurm:
        return []
    return [
        suggest(
            "sbatch",
            joined(option, placeholder(what)),
            placeholder("job-script"),
            why=why,
            blast_radius=BlastRadius.CHANGES_CONFIG,
            permission=_SLURM_USER,
        )
    ]


def lines_before(facts: Facts, why: str) -> list[SuggestedCommand]:
    """The lines of the log leading up to the finding's first quoted line."""
    quoted = next((q for q in facts.quoted if ".tar" not in q.source), None)
    if quoted is None:
        return []
    span = joined(
        value(LineNumber, str(max(1, quoted.line - _LINES_BEFORE))),
        ",",
        value(LineNumber, str(quoted.line)),
        "p",
    )
    if quoted.source.endswith(".gz"):
        return [
            suggest_chain(
                ["zcat", value(LogFileName, quoted.source)],
                "|",
                ["sed", "-n", span],
                why=why,
                permission=_READ_LOGS,
            )
        ]
    return [suggest("sed -n", span, value(LogFileName, quoted.source), why=why, permission=_READ_LOGS)]


def py_spy(facts: Facts) -> SuggestedCommand:
    rank = facts.rank
    # The pid the logs give is only worth naming while that process may still be there.
    pid = facts.pids.get(rank) if rank is not None and not facts.ended else None
    who = f"rank {rank}" if rank is not None else "the rank"
    when = "when the job hangs again" if facts.ended else "while the job hangs"
    return suggest(
        *on_node(facts, "sudo py-spy dump --pid"),
        value(ProcessId, pid) if pid else placeholder(f"pid of {who}".replace(" ", "-")),
        why=f"{when}: where {who}'s Python is stuck{_where(facts)} (pauses it for a moment)",
        permission=_ROOT_ON_NODE,
    )


def reboot_node(facts: Facts, why: str) -> SuggestedCommand:
    if facts.slurm:
        return suggest(
            "scontrol update",
            joined("node=", _node_word(facts)),
            'state=fail reason="Action:Reboot"',
            why=f"{why}; HyperPod reboots it once its running jobs end",
            blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
            permission=_SLURM_ADMIN,
        )
    return suggest(
        "aws sagemaker batch-reboot-cluster-nodes --cluster-name",
        value(ClusterName, facts.cluster),
        "--node-ids",
        value(InstanceId, facts.instance_id),
        "--region",
        value(Region, facts.region),
        why=why,
        blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
        permission="sagemaker:BatchRebootClusterNodes",
    )


# --- debugging-guide.md, section by section ------------------------------------------------------

_FLIGHT_RECORDER = (
    "TORCH_FR_BUFFER_SIZE=2000",
    "TORCH_NCCL_TRACE_BUFFER_SIZE=2000",
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1",
    # The default prefix is /tmp of each container: node-local, gone with the pod or the node.
    joined("TORCH_FR_DUMP_TEMP_FILE=", placeholder("shared-dir"), "/nccl_trace_rank_"),
)
_DUMPS_LAND = (
    "one file per rank, in an existing directory every node shares; give that directory to triage "
    "with the logs"
)


def _timeout(facts: Facts) -> list[SuggestedCommand]:
    return [
        *sacct(
            facts, "JobID,State,ExitCode,Elapsed,NodeList", "each step's state and exit code, and its nodes"
        ),
        py_spy(facts),
        export(
            *_FLIGHT_RECORDER,
            why="the next timeout writes Flight Recorder dumps that name the call each rank was in, "
            + _DUMPS_LAND
            + " (§ 22)",
        ),
    ]


def _silent(facts: Facts) -> list[SuggestedCommand]:
    return [
        *sacct(facts, "JobID,State,ExitCode,Elapsed,NodeList", "how each step ended, and on which nodes"),
        kernel_log(
            facts,
            "grep -iE 'killed process|xid|segfault'",
            "the node's kernel log: an OOM kill, an Xid or a crash",
        ),
        export(*_FLIGHT_RECORDER, why=f"the next timeout writes Flight Recorder dumps, {_DUMPS_LAND} (§ 22)"),
    ]


def _mismatch(facts: Facts) -> list[SuggestedCommand]:
    return [
        export(
            "TORCH_DISTRIBUTED_DEBUG=DETAIL",
            why="for one diagnostic run (slower): PyTorch checks every collective and names the first that "
            "differs across ranks",
        )
    ]


def _network(facts: Facts) -> list[SuggestedCommand]:
    return [
        show_node(facts, "the node's state and the reason Slurm or Kubernetes gives for it"),
        kernel_log(
            facts, "grep -iE 'link (down|up)|pcie bus error|efa|mlx5'", "NIC link flaps and PCIe errors"
        ),
        on_node_filtered(
            facts,
            "ibv_devinfo",
            "grep -E 'hca_id|state|active_mtu'",
            "each RDMA port's state and MTU (EFA and InfiniBand): one not PORT_ACTIVE is the fault",
        ),
        exclude_node(facts, "rerun without the suspect node to prove or clear it"),
    ]


def _host_oom(facts: Facts) -> list[SuggestedCommand]:
    return [
        *sacct(
            facts, "JobID,State,MaxRSS,ReqMem,NodeList", "peak host memory of each step against what it asked"
        ),
        kernel_log(
            facts, "grep -iE 'killed process|out of memory|oom-kill'", "the kernel's OOM-killer lines"
        ),
        *resubmit(facts, "--mem=", "memory", "more host memory per node, or fewer DataLoader workers"),
    ]


def _peer_crashed(facts: Facts) -> list[SuggestedCommand]:
    peer = replace(facts, nodes=facts.peers, ranks=()) if facts.peers else facts
    pods = [] if facts.slurm else _rendezvous(facts)  # a worker that restarted or was OOMKilled
    return [
        *pods,
        *sacct(facts, "JobID,State,ExitCode,MaxRSS,NodeList", "which step ended first, and how"),
        kernel_log(
            peer,
            "grep -iE 'killed process|out of memory|oom-kill|segfault'",
            "whether the peer's process was killed for memory or crashed",
        ),
    ]


def _gpu_hardware(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_ecc(facts),
        kernel_log(facts, "grep -iE 'xid|sxid|fallen off'", "every Xid the driver logged"),
        reboot_node(
            facts, "rung 3 of the remediation ladder (operations.md § 9): reset the GPU by rebooting"
        ),
    ]


def _efa(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "fi_info -p efa", "the EFA devices libfabric sees"),
        export(
            "FI_PROVIDER=efa", why="a missing EFA device then fails at start instead of falling back to TCP"
        ),
    ]


def _efa_plugin_nodes(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "kubectl get nodes -L node.kubernetes.io/instance-type",
            why="the instance type of each node: the EFA device plugin belongs only on types with EFA",
            permission="nodes: list",
        ),
        suggest(
            "kubectl get ds -n kube-system -o wide",
            why="the device plugin's DaemonSet and the node selector that decides where it runs",
            permission="daemonsets: list",
        ),
    ]


def _rendezvous(facts: Facts) -> list[SuggestedCommand]:
    if facts.slurm:
        return sacct(
            facts, "JobID,State,Start,Elapsed,NodeList", "when each step started, and on which nodes"
        )
    return [
        suggest(
            "kubectl get pods -o wide -n",
            placeholder("namespace"),
            why="which workers were Pending, restarting or late",
            permission="pods: list",
        )
    ]


def _step_refused(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "scontrol show job",
            value(SlurmJobId, facts.job_id),
            why="what the job was allocated (TRES: memory, GPUs, CPUs per node) against what the step asked",
            permission=_SLURM_USER,
        )
    ]


def _members_missing(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_rendezvous(facts),
        *resubmit(
            facts,
            "--ntasks-per-node=",
            "gpus-per-node",
            "one task per GPU, so Slurm starts every process and gives each its own rank (with "
            "Lightning: devices = GPUs per node, num_nodes = the node count)",
        ),
    ]


def _address_in_use(facts: Facts) -> list[SuggestedCommand]:
    found = [
        suggest(
            *on_node(facts, "ss -ltnp"),
            joined("sport = :", value(TcpPort, facts.port)),
            why="which process holds the port" + _where(facts),
            permission=_SHELL_ON_NODE,
        )
    ]
    if facts.slurm:
        found.append(
            suggest("squeue -w", _node_word(facts), why="what else runs on the node", permission=_SLURM_USER)
        )
    return [*found, _own_port(facts)]


def _address_unavailable(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "ip -brief address",
            "the addresses the node has: an address a process binds must be one of them",
        ),
        on_node_check(
            facts, "ss -s", "sockets by state: tens of thousands in TIME_WAIT mean the local ports ran out"
        ),
        on_node_check(
            facts, "sysctl net.ipv4.ip_local_port_range", "the range of local ports a connect can use"
        ),
    ]


_PORT_BASE, _PORT_SPREAD = 20_000, 10_000  # below the ephemeral range, away from 29500


def _own_port(facts: Facts) -> SuggestedCommand:
    """A MASTER_PORT of the job's own: derived from the Slurm job id when the logs give it."""
    if facts.slurm and facts.job_id and facts.job_id.isdigit():
        port = value(TcpPort, str(_PORT_BASE + int(facts.job_id) % _PORT_SPREAD))
        why = f"a port of job {facts.job_id}'s own (20000 + job id mod 10000: jobs sharing a node differ)"
    else:
        port = placeholder("free-port")
        why = "a port no other job on the node listens on (on Slurm: 20000 + job id mod 10000)"
    return suggest(
        "export",
        joined("MASTER_PORT=", port),
        why=why,
        blast_radius=BlastRadius.CHANGES_CONFIG,
        permission=_JOB_SCRIPT,
    )


def _versions(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "python -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'",
            "the PyTorch and NCCL versions the job's Python loads (run it in the job's environment)",
        )
    ]


def _gpu_oom(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
            "which processes hold GPU memory (a foreign one means a stale process, not the model)",
        ),
        export(
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            why="less fragmentation; the real fix is a smaller batch or more sharding",
        ),
    ]


def _master_addr(facts: Facts) -> list[SuggestedCommand]:
    host = value(HostAddress, facts.store_host) if facts.store_host else placeholder("master-addr")
    return [
        suggest(
            *on_node(facts, "getent hosts"),
            host,
            why="whether MASTER_ADDR resolves from a worker" + _where(facts),
            permission=_SHELL_ON_NODE,
        )
    ]


def _tcp_fallback(facts: Facts) -> list[SuggestedCommand]:
    return _efa(facts)


def _storage(facts: Facts) -> list[SuggestedCommand]:
    return [kernel_log(facts, "grep -iE 'lustre|i/o error|nfs'", "the node's storage client errors")]


def _exception(facts: Facts) -> list[SuggestedCommand]:
    return lines_before(
        facts, "the lines the rank wrote up to the error: the traceback and what it was doing"
    )


def _scheduler(facts: Facts) -> list[SuggestedCommand]:
    events = suggest(
        "kubectl get events -n",
        placeholder("namespace"),
        "--sort-by=.lastTimestamp",
        why="on Kubernetes: who evicted, deleted or rescheduled the pods, newest last",
        permission="events: list",
    )
    if facts.kubernetes:
        return [events]
    if not facts.slurm:  # nothing says where it ran: the machine first, Kubernetes in case
        machine = on_node_check(
            facts,
            "last -x -F shutdown reboot",
            "whether the machine itself went down around the signal (a spot reclaim, maintenance)",
        )
        return [machine, events]
    return sacct(
        facts, "JobID,State,Elapsed,Timelimit,NodeList,ExitCode", "how the scheduler ended the job, and when"
    )


def _dev_shm_use(facts: Facts) -> SuggestedCommand:
    return on_node_check(
        facts, "df -h /dev/shm", "the size and use of /dev/shm (inside the container, if any)"
    )


def _limits(facts: Facts) -> list[SuggestedCommand]:
    checks = [_dev_shm_use(facts)]
    if facts.slurm:
        checks.insert(
            0,
            suggest(
                "srun -N1",
                joined("--nodelist=", _node_word(facts)),
                "bash -c 'ulimit -l'",
                why="the locked-memory limit Slurm jobs really get on the node",
                permission=_SLURM_USER,
            ),
        )
    return checks


def _container_shm(facts: Facts) -> list[SuggestedCommand]:
    if facts.kubernetes:  # a pod's /dev/shm is an emptyDir in its spec, not a flag
        return []
    return [
        suggest(
            "docker inspect --format '{{.HostConfig.ShmSize}} {{.HostConfig.IpcMode}}'",
            placeholder("container"),
            why="in a container: the /dev/shm size it was started with (67108864 is Docker's 64 MB "
            "default) and whether it shares the host's (ipc host)",
            permission="docker on the host",
        )
    ]


def _shm(facts: Facts) -> list[SuggestedCommand]:
    found = [_dev_shm_use(facts), *_container_shm(facts)]
    if not facts.kubernetes:
        found.append(
            suggest(
                "docker run --ipc=host --ulimit memlock=-1 --ulimit stack=67108864",
                placeholder("image"),
                placeholder("command"),
                why="in a container: start it again with the host's /dev/shm (the flags NVIDIA's NGC "
                "containers ask for), or with --shm-size=16g instead of --ipc=host",
                blast_radius=BlastRadius.RESTARTS_JOB,
                permission="docker on the host",
            )
        )
    found.append(
        suggest(
            *on_node(facts, "sudo mount -o remount,size=50% /dev/shm"),
            why="on a host without a container: a larger /dev/shm until the next boot" + _where(facts),
            blast_radius=BlastRadius.CHANGES_CONFIG,
            permission=_ROOT_ON_NODE,
        )
    )
    return found


def _topology(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "nvidia-smi topo -m", "how the node's GPUs and NICs connect (NVLink, PCIe)"),
        export("NCCL_NVLS_ENABLE=0", why="as a diagnostic only: whether the failure follows NVLS"),
    ]


def _topology_file(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "grep -H -e NCCL_TOPO_FILE -e NCCL_GRAPH_FILE /etc/nccl.conf",
            "whether the image hands NCCL a topology or graph file at start (a .nccl.conf in the home "
            "directory of the user who runs the job can set them too)",
        ),
        export(
            "NCCL_DEBUG=INFO",
            "NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH",
            why="the next run names the topology file it loads and who set it (`Loading topology file`, "
            "`NCCL_TOPO_FILE set by environment`); a network plugin before aws-ofi-nccl 1.11 sets its own",
        ),
        *_versions(facts),
    ]


def _plugin_unloadable(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "fi_info --version",
            "the libfabric this node loads: the plugin needs the version its error names",
        ),
        *_versions(facts),
    ]


def _cuda(facts: Facts) -> list[SuggestedCommand]:
    return [
        kernel_log(
            facts, "grep -iE 'xid'", "Xid lines: 13/31/43 point at the application, 48/79/95 at the hardware"
        ),
        export(
            "CUDA_LAUNCH_BLOCKING=1", why="on a small rerun: the error is raised at the call that caused it"
        ),
    ]


def _cuda_init(facts: Facts) -> list[SuggestedCommand]:
    return [
        in_container_check("nvidia-smi -L", "the GPUs the failing process's container sees: none fits"),
        suggest_chain(
            ["env"],
            "|",
            "grep -E 'CUDA|NVIDIA|LD_LIBRARY_PATH'",
            why="in the environment the launcher gives a remote worker (for DeepSpeed's pdsh launch: the "
            "variables of .deepspeed_env): what CUDA is given there; compare with a node whose ranks started",
            permission=_SHELL_IN_CONTAINER,
        ),
    ]


def _memlock(facts: Facts) -> list[SuggestedCommand]:
    return [
        in_container_check(
            "ulimit -l", "the locked-memory limit where the ranks run (unlimited rules it out)"
        ),
        on_node_check(
            facts,
            "uname -r",
            "with memlock unlimited: the node's kernel, against a node that works or the last good run "
            "(a kernel or driver update can break registration)",
        ),
    ]


def _jit_build_hung(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "find ~/.cache/torch_extensions megatron/fused_kernels/build -name lock",
            "a lock file a killed build left (as the job's user, from the job's directory): the next build "
            "waits on it for ever; remove it while no job runs",
        )
    ]


def _mesh_sidecar(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "kubectl get namespace -L istio-injection",
            why="the namespaces whose new pods get the sidecar (enabled): the job's among them",
            permission="namespaces: list",
        ),
        suggest(
            "kubectl describe pod",
            *_pod_words(facts),
            why="its containers: an istio-proxy beside the training container confirms it",
            permission="pods: get",
        ),
    ]


def _watchdog_hung(facts: Facts) -> list[SuggestedCommand]:
    return [
        kernel_log(
            facts,
            "grep -iE 'xid'",
            "a GPU or driver that stopped answering leaves Xid lines; none points at the teardown",
        ),
        py_spy(facts),
    ]


def _kernel_without_fd_sharing(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "uname -r", "the node's kernel: pidfd_getfd needs Linux 5.6 or later"),
        export(
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False",
            why="for the job, where the framework does not set it itself: CUDA memory is then shared without "
            "pidfd_getfd",
        ),
    ]


def _flight_recorder_missing(facts: Facts) -> list[SuggestedCommand]:
    return [py_spy(facts)]


def _flight_recorder_state(facts: Facts) -> list[SuggestedCommand]:
    return [
        export("CUDA_LAUNCH_BLOCKING=1", why="on a small rerun: which GPU call the rank was stuck behind")
    ]


# --- multinode.md ----------------------------------------------------------------------------------


def _fabric_manager(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "systemctl status nvidia-fabricmanager", "whether the fabric manager runs"),
        on_node_check(facts, "nvidia-smi -q", "the GPUs' fabric state and the driver version"),
    ]


def _interfaces_here(facts: Facts) -> SuggestedCommand:
    return on_node_check(
        facts, "ip -br addr", "the node's interfaces and addresses: pick the one the nodes share"
    )


def _interfaces(facts: Facts) -> list[SuggestedCommand]:
    return [
        _interfaces_here(facts),
        export("NCCL_SOCKET_IFNAME=^docker0,lo", why="keep NCCL off interfaces other nodes cannot reach"),
    ]


# --- the cluster's side: Kubernetes, HyperPod, Slurm, AWS (operations.md and friends) ----------


def _namespace(facts: Facts) -> str | None:
    """The namespace of the first pod the finding names, or None."""
    return facts.pods[0][0] if facts.pods else None


def _pod_words(facts: Facts) -> tuple[Word, ...]:
    namespace, pod = facts.pods[0] if facts.pods else (None, None)
    return value(PodName, pod), "-n", value(Namespace, namespace)


def _pods(facts: Facts) -> list[SuggestedCommand]:
    namespace = _namespace(facts)
    return [
        suggest(
            "kubectl describe pod",
            *_pod_words(facts),
            why="the pod's status, events and last state",
            permission="pods: get",
        ),
        suggest(
            "kubectl get events -n",
            value(Namespace, namespace),
            "--sort-by=.lastTimestamp",
            why="what the scheduler and the kubelet reported, newest last",
            permission="events: list",
        ),
    ]


def _failed_pods(facts: Facts) -> list[SuggestedCommand]:
    """A cause not established from a pasted `kubectl get pods` table: the failed container's own words."""
    if not facts.pods:
        return []
    return [
        suggest(
            "kubectl logs",
            *_pod_words(facts),
            "--previous",
            why="the log of the container that failed: the cause the table does not show",
            permission="pods/log: get",
        ),
        *_pods(facts),
    ]


def _iam(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "aws sts get-caller-identity", why="the principal the tool ran as, to grant it what § 2 lists"
        )
    ]


def _ssm(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "aws ssm describe-instance-information --region",
            value(Region, facts.region),
            why="which nodes' SSM agents are connected",
            permission="ssm:DescribeInstanceInformation",
        )
    ]


def _cloudwatch(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "aws logs describe-log-groups --log-group-name-prefix /aws/sagemaker/Clusters/ --region",
            value(Region, facts.region),
            why="the clusters' log groups CloudWatch holds",
            permission="logs:DescribeLogGroups",
        )
    ]


def _environment(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "kubectl describe pod",
            *_pod_words(facts),
            why="each container's environment as the pod sets it",
            permission="pods: get",
        )
    ]


def _control_plane(facts: Facts) -> list[SuggestedCommand]:
    """HyperPod's view of the instance next to Kubernetes' view of its node."""
    found = _node_health(facts)[:1] if facts.instance_id or facts.cluster else []
    found.append(
        suggest(
            "kubectl describe node",
            value(KubeNodeName, facts.node),
            why="the node's conditions and when its Ready condition last changed",
            permission="nodes: get",
        )
    )
    return found


def _lost_pod_logs(facts: Facts) -> list[SuggestedCommand]:
    """What a restarted container wrote before it restarted."""
    return [
        suggest(
            "kubectl logs --previous",
            *_pod_words(facts),
            why="the log of the container instance before its restart",
            permission="pods/log: get",
        )
    ]


def _node_health(facts: Facts) -> list[SuggestedCommand]:
    found = []
    if facts.instance_id or facts.cluster:
        found.append(
            suggest(
                "aws sagemaker describe-cluster-node --cluster-name",
                value(ClusterName, facts.cluster),
                "--node-id",
                value(InstanceId, facts.instance_id),
                "--region",
                value(Region, facts.region),
                why="HyperPod's status of the node and its message",
                permission="sagemaker:DescribeClusterNode",
            )
        )
    found.append(
        suggest(
            "kubectl get nodes -L",
            "sagemaker.amazonaws.com/node-health-status,sagemaker.amazonaws.com/fault-type",
            why="HyperPod's health label on every node",
            permission="nodes: list",
        )
    )
    return found


def _slurm_nodes(facts: Facts) -> list[SuggestedCommand]:
    found = [suggest("sinfo -R", why="every down or drained node with its reason", permission=_SLURM_USER)]
    if facts.node:
        found.append(
            suggest(
                "scontrol show node",
                value(SlurmNodeName, facts.node),
                why="the node's full state",
                permission=_SLURM_USER,
            )
        )
    return found


def _security_groups(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "aws ec2 describe-security-groups --group-ids",
            placeholder("sg-id"),
            "--region",
            value(Region, facts.region),
            why="the rules of the cluster's security group",
            permission="ec2:DescribeSecurityGroups",
        )
    ]


def _node_gpu_metrics(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "nvidia-smi -q -d PERFORMANCE",
            "clocks, throttle reasons and power as the driver sees them",
        )
    ]


def _gpu_lost(facts: Facts) -> list[SuggestedCommand]:
    return [on_node_check(facts, "nvidia-smi -q", "whether the driver still sees every GPU")]


def _ecc(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts, "nvidia-smi -q -d ECC,ROW_REMAPPER", "ECC counts and pending or failed row remaps"
        )
    ]


def _nvlink(facts: Facts) -> list[SuggestedCommand]:
    return [on_node_check(facts, "nvidia-smi nvlink -e", "each NVLink's error counters")]


def _mtu(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            *on_node(facts, "ping -M do -s 8973"),
            placeholder("peer-ip"),
            why="a 9001-MTU path test, don't-fragment set: small pings passing and this failing means drops",
            permission=_SHELL_ON_NODE,
        )
    ]


def _hostnames(facts: Facts) -> list[SuggestedCommand]:
    asked = [
        suggest(
            "ssh",
            value(HostAddress, address),
            "hostnamectl",
            why=f"the static hostname of the machine at {address}: two answering the same name is the fault",
            permission=_SHELL_ON_NODE,
        )
        for address in facts.addresses
    ] or [
        suggest(
            "hostnamectl",
            why="the machine's static hostname: run it on each machine of the job, by its address; two "
            "answering the same name is the fault",
            permission=_SHELL_ON_NODE,
        )
    ]
    renamed = (
        [  # the first machine keeps its name; each other one gets its own
            suggest(
                "ssh",
                value(HostAddress, address),
                "sudo hostnamectl set-hostname",
                placeholder("unique-name"),
                why=f"a name of its own for the machine at {address}: NCCL and the logs then tell them apart",
                blast_radius=BlastRadius.CHANGES_CONFIG,
                permission=_ROOT_ON_NODE,
            )
            for address in facts.addresses[1:]
        ]
        or [
            suggest(
                "sudo hostnamectl set-hostname",
                placeholder("unique-name"),
                why="one name per machine, so NCCL and the logs tell the machines apart",
                blast_radius=BlastRadius.CHANGES_CONFIG,
                permission=_ROOT_ON_NODE,
            )
        ]
    )
    return [*asked, *renamed]


def _first_contact(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_interfaces(facts)[:1],
        export(
            "NCCL_DEBUG=INFO",
            "NCCL_DEBUG_SUBSYS=INIT,NET",
            why="the next run names the transport and the call",
        ),
        export(
            "NCCL_IB_DISABLE=1",
            why="a test: a run that works with it means NCCL probed an IB/RoCE fabric it cannot use",
        ),
    ]


SECTION_STEPS: dict[str, Steps] = {
    "debugging-guide.md § 1": _timeout,
    "debugging-guide.md § 2": _mismatch,
    "debugging-guide.md § 3": _network,
    "debugging-guide.md § 4": _host_oom,
    "debugging-guide.md § 5": _gpu_hardware,
    "debugging-guide.md § 6": _efa,
    "debugging-guide.md § 7": _rendezvous,
    "debugging-guide.md § 8": _address_in_use,
    "debugging-guide.md § 10": _versions,
    "debugging-guide.md § 11": _gpu_oom,
    "debugging-guide.md § 12": _master_addr,
    "debugging-guide.md § 13": _tcp_fallback,
    "debugging-guide.md § 14": _storage,
    "debugging-guide.md § 15": _exception,
    "debugging-guide.md § 16": _scheduler,
    "debugging-guide.md § 17": _limits,
    "debugging-guide.md § 19": _topology,
    "debugging-guide.md § 20": _cuda,
    "debugging-guide.md § 22.1": _flight_recorder_missing,
    "debugging-guide.md § 22.3": _flight_recorder_state,
    "debugging-guide.md § 22.5": _flight_recorder_missing,
    "debugging-guide.md § 9": _pods,
    "multinode.md § 1": _fabric_manager,
    "multinode.md § 2": _interfaces,
    "multinode.md § 4": _mtu,
    "multinode.md § 8": _hostnames,
    "operations.md § 2": _iam,
    "operations.md § 3": _ssm,
    "operations.md § 4": _cloudwatch,
    "operations.md § 5": _environment,
    "operations.md § 6": _node_health,
    "operations.md § 6.1": _control_plane,
    "operations.md § 4.1": _lost_pod_logs,
    "operations.md § 7": _slurm_nodes,
    "operations.md § 8": _security_groups,
    "gpu-metrics.md § 3": _gpu_lost,
    "gpu-metrics.md § 4": _node_gpu_metrics,
    "gpu-metrics.md § 5": _node_gpu_metrics,
    "gpu-metrics.md § 6": _ecc,
    "gpu-metrics.md § 7": _nvlink,
    "gpu-metrics.md § 8": _node_gpu_metrics,
    "performance-testing.md § 5": _node_gpu_metrics,
    "performance-testing.md § 6": _node_gpu_metrics,
}


# --- findings a section's general commands do not fit --------------------------------------------


def _lustre(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "lfs check servers", "whether the node's Lustre client reaches every server")
    ]


def _disk_full(facts: Facts) -> list[SuggestedCommand]:
    return [on_node_check(facts, "df -h", "which volume is full")]


def _aistore(facts: Facts) -> list[SuggestedCommand]:
    return [suggest("ais show cluster", why="each AIStore target's state and resource pressure")]


def _gpudirect(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_filtered(
            facts, "lsmod", "grep nvidia_peermem", "whether GPUDirect RDMA's kernel module is loaded"
        )
    ]


def _load_peermem(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_gpudirect(facts),
        suggest(
            *on_node(facts, "sudo modprobe nvidia_peermem"),
            why="load GPUDirect RDMA's module (and list it in the node's boot-time modules to keep it)"
            + _where(facts),
            blast_radius=BlastRadius.CHANGES_CONFIG,
            permission=_ROOT_ON_NODE,
        ),
    ]


def _gdr_disabled(facts: Facts) -> list[SuggestedCommand]:
    return [*_load_peermem(facts), *_versions(facts)]


def _dmabuf(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_gpudirect(facts),
        export("NCCL_DMABUF_ENABLE=0", why="NCCL registers GPU memory through nvidia-peermem, not DMA-BUF"),
    ]


def _node_local_cache(facts: Facts) -> list[SuggestedCommand]:
    return [
        export(
            joined("HF_HOME=", placeholder("shared-path")),
            why="the Hugging Face caches (datasets, models) on storage every node mounts, so a file one node "
            "prepared is there for the others",
        )
    ]


def _gpus_on_node(facts: Facts) -> SuggestedCommand:
    return on_node_check(
        facts, "nvidia-smi -L", "the GPUs the node has, against the processes launched per node"
    )


def _gpu_count(facts: Facts) -> list[SuggestedCommand]:
    return [_gpus_on_node(facts)]


def _one_process_many_gpus(facts: Facts) -> list[SuggestedCommand]:
    return [
        _gpus_on_node(facts),
        export(
            "CUDA_VISIBLE_DEVICES=0",
            why="one GPU for a script written for one (or launch one process per GPU with torchrun "
            "--nproc_per_node, which DataParallel's gather does not need)",
        ),
    ]


def _libuv_missing(facts: Facts) -> list[SuggestedCommand]:
    return [export("USE_LIBUV=0", why="the launcher's store without libuv, which this PyTorch build lacks")]


def _too_many_peers(facts: Facts) -> list[SuggestedCommand]:
    return [
        _gpus_on_node(facts),
        export(
            "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
            why="at most 8 GPUs for a process that enables peer access between all of them (or launch one "
            "process per GPU, which needs no such limit)",
        ),
    ]


def _invalid_device(facts: Facts) -> list[SuggestedCommand]:
    return [_gpus_on_node(facts), *_cuda(facts)[1:]]


def _invalid_usage(facts: Facts) -> list[SuggestedCommand]:
    return [
        _gpus_on_node(facts),
        export(
            "NCCL_DEBUG=WARN",
            why="the next run names the check NCCL failed (a duplicate GPU, the world size)",
        ),
    ]


def _gpu_links(facts: Facts) -> SuggestedCommand:
    return on_node_check(facts, "nvidia-smi topo -m", "how the GPUs connect: no NVLink means P2P over PCIe")


def _p2p(facts: Facts) -> list[SuggestedCommand]:
    return [
        _gpu_links(facts),
        export("NCCL_P2P_DISABLE=1", why="where the GPUs cannot do peer-to-peer (consumer cards, IOMMU)"),
    ]


def _shm_not_shared(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts, "ls -l /dev/shm", "the segments this rank's /dev/shm holds: a peer's nccl-* is not there"
        ),
        *_container_shm(facts),
        export(
            "NCCL_SHM_DISABLE=1",
            why="as a diagnostic only: a rerun that completes says the segment was not shared",
        ),
    ]


def _nvls_fabric(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_fabric_manager(facts),
        suggest_chain(
            ["sudo systemctl stop nvidia-fabricmanager"],
            "&&",
            ["sudo nvidia-smi -r"],
            "&&",
            ["sudo systemctl start nvidia-fabricmanager"],
            why="with no job on the node: reset its GPUs with the fabric manager stopped (a reboot does "
            "both)" + _where(facts),
            blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
            permission=_ROOT_ON_NODE,
        ),
    ]


def _coordinator_unreachable(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts, "ss -ltn", "on the coordinator's host: whether it listens on the coordinator port"
        ),
        on_node_check(
            facts,
            "python -c 'import jax, jaxlib; print(jax.__version__, jaxlib.__version__)'",
            "on every host: one JAX release everywhere (the default coordinator port follows the release)",
        ),
    ]


def _open_mpi_version(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "mpirun --version", "which Open MPI this node runs (one version on every node)")
    ]


def _nccl_availability(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "python -c 'import torch, torch.distributed as dist; print(torch.__version__, "
            "dist.is_nccl_available(), torch.cuda.device_count())'",
            "in the job's environment: whether this PyTorch has NCCL, and how many GPUs the process sees",
        )
    ]


def _open_files_limit(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "ulimit -n",
            "in the job's environment: the open-files limit each process gets (1024 is low)",
        ),
        suggest(
            "ulimit -n 65536",
            why="in the job script before the launcher (up to the hard limit; a container takes "
            "--ulimit nofile=65536:65536, a systemd service LimitNOFILE=65536)",
            blast_radius=BlastRadius.CHANGES_CONFIG,
            permission=_JOB_SCRIPT,
        ),
    ]


def _named_interface(facts: Facts, variable: LiteralString, why: str) -> list[SuggestedCommand]:
    """The node's interfaces, then the setting that names the one to use (`GLOO_SOCKET_IFNAME=`)."""
    return [_interfaces_here(facts), export(joined(variable, placeholder("interface")), why=why)]


def _gloo_interface(facts: Facts) -> list[SuggestedCommand]:
    return _named_interface(
        facts,
        "GLOO_SOCKET_IFNAME=",
        "one interface name for gloo, the same on every node or pod (never NCCL's ^ exclusion list)",
    )


def _ub_multicast(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts, "nvidia-smi", "the GPU model and driver: CUDA Multicast needs Hopper with NVSwitch"
        ),
        export("UB_SKIPMC=1", why="Transformer Engine's overlap over CUDA IPC instead of Multicast"),
    ]


def _tensorpipe_listen(facts: Facts) -> list[SuggestedCommand]:
    return _named_interface(
        facts,
        "TP_SOCKET_IFNAME=",
        "TensorPipe listens on this interface's address instead of the one the hostname resolves to",
    )


def _slurm_step_launch(facts: Facts) -> list[SuggestedCommand]:
    return [
        suggest(
            "srun --mpi=list",
            why="the MPI plugin types this cluster's Slurm offers: the step's --mpi must be one of them, and "
            "work inside the container (pmi2 where pmix fails)",
        )
    ]


def _k8s_api_unreachable(facts: Facts) -> list[SuggestedCommand]:
    namespace = _namespace(facts)
    return [
        suggest(
            "kubectl get namespace",
            value(Namespace, namespace),
            "--show-labels",
            why="istio-injection=enabled (or a revision label) means every pod gets a sidecar that holds its "
            "traffic until the proxy starts, init containers included",
            permission="namespaces: get",
        ),
        suggest(
            "kubectl get networkpolicy -n",
            value(Namespace, namespace),
            why="policies that may keep the pod from the API server's address",
            permission="networkpolicies: list",
        ),
    ]


def _extension_build(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "nvcc --version", "the CUDA toolkit that compiles the extension"),
        on_node_check(
            facts,
            "python -c 'import torch; print(torch.__version__, torch.version.cuda)'",
            "the PyTorch build and the CUDA it was built with: the toolkit must fit it (run it in the job's "
            "environment)",
        ),
    ]


def _ddp_model_check_empty(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_interfaces(facts),
        export(
            "NCCL_DEBUG=INFO",
            "NCCL_DEBUG_SUBSYS=INIT,NET",
            why="for one run: the interface and transport each rank chose, to see which the nodes lack",
        ),
    ]


def _precision_unsupported(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "nvidia-smi --query-gpu=name,compute_cap --format=csv",
            "each GPU's compute capability: bf16 and FlashAttention need 8.0 (Ampere) or newer",
        )
    ]


def _nccl_shm_peer_access(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_versions(facts),
        export(
            "NCCL_CUMEM_HOST_ENABLE=0",
            why="NCCL's shared-memory buffers in plain host memory, as before 2.27: no peer access needed",
        ),
    ]


def _bootstrap_socket(facts: Facts) -> list[SuggestedCommand]:
    chosen = f" (NCCL bootstrapped from {', '.join(facts.addresses)} here)" if facts.addresses else ""
    return _named_interface(
        facts,
        "NCCL_SOCKET_IFNAME=",
        f"name the interface the nodes reach each other on, the same on every node{chosen}",
    )


_SOCKET_IFNAME: dict[str, LiteralString] = {"gloo": "GLOO_SOCKET_IFNAME=", "nccl": "NCCL_SOCKET_IFNAME="}


def _loopback_peer(facts: Facts) -> list[SuggestedCommand]:
    # The library whose connection failed; both when its lines name neither (a store, a launcher).
    libraries = sorted(facts.libraries) or ["gloo", "nccl"]
    return [
        on_node_check(
            facts,
            "hostname -i",
            "the addresses the node's hostname resolves to: 127.0.1.1 is the loopback alias",
        ),
        _interfaces_here(facts),
        export(
            *(joined(_SOCKET_IFNAME[name], placeholder("interface")) for name in libraries),
            why=f"the interface the nodes share, for {' and '.join(libraries)}, instead of the hostname's "
            "address",
        ),
    ]


def _mpi_tcp_interface(facts: Facts) -> list[SuggestedCommand]:
    return [
        _interfaces_here(facts),
        suggest(
            "mpirun --mca btl_tcp_if_include",
            placeholder("interface"),
            "--mca oob_tcp_if_include",
            placeholder("interface"),
            placeholder("the rest of the command"),
            why="Open MPI's own TCP traffic on the interface the nodes share, off bridges every host has",
            blast_radius=BlastRadius.RESTARTS_JOB,
            permission=_JOB_SCRIPT,
        ),
    ]


def _container_toolkit(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "nvidia-container-cli --version", "the container toolkit's version on the node"),
        on_node_check(facts, "nvidia-smi", "the node's driver version and the CUDA version it supports"),
    ]


def _ucx_transports(facts: Facts) -> list[SuggestedCommand]:
    return [on_node_check(facts, "ucx_info -d", "the devices and transports UCX can use on this node")]


def _custom_all_reduce(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "nvidia-smi topo -p2p r", "which GPU pairs can read each other's memory"),
        _gpu_links(facts),
    ]


def _init_stalled(facts: Facts) -> list[SuggestedCommand]:
    return [
        kernel_log(facts, "grep -i -e iommu -e DMAR", "whether an IOMMU sits between the GPUs"),
        _gpu_links(facts),
        export(
            "NCCL_P2P_DISABLE=1", why="as a diagnostic only: a rerun that completes says peer access hung"
        ),
    ]


def _gpu_bus_ids(facts: Facts) -> SuggestedCommand:
    return on_node_check(
        facts,
        "nvidia-smi --query-gpu=index,pci.bus_id --format=csv",
        "which GPU each PCI address is (the kernel names devices by address)",
    )


def _iommu(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "cat /proc/cmdline", "whether the kernel boots with iommu=pt (passthrough)"),
        _gpu_bus_ids(facts),
        *_init_stalled(facts),
        suggest(
            *on_node(facts, "sudo grubby --update-kernel=ALL --args=iommu=pt"),
            why="the fix, once a rerun with NCCL_P2P_DISABLE=1 completes: the IOMMU in passthrough from "
            "the next boot (RHEL, Amazon Linux; on Ubuntu add iommu=pt to GRUB_CMDLINE_LINUX in "
            f"/etc/default/grub and run update-grub), then reboot the node with no job on it{_where(facts)}",
            blast_radius=BlastRadius.DRAINS_OR_REBOOTS_NODE,
            permission=_ROOT_ON_NODE,
        ),
    ]


def _inside_one_node(facts: Facts) -> list[SuggestedCommand]:
    return [*_init_stalled(facts), _gpu_bus_ids(facts)]


def _bootstrap_refused(facts: Facts) -> list[SuggestedCommand]:
    return [*_interfaces(facts), *_rendezvous(facts)]


def _ib_protection(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_filtered(
            facts,
            "sudo lspci -vvv",
            "grep -i acsctl",
            "PCIe ACS settings that block the NIC from GPU memory",
            root=True,
        ),
        *_network(facts)[1:],
    ]


def _time_limit(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_scheduler(facts),
        *resubmit(facts, "--time=", "time-limit", "a longer time limit, or checkpoint more often"),
    ]


def _node_lost(facts: Facts) -> list[SuggestedCommand]:
    found = [*_scheduler(facts), show_node(facts, "the lost node's state and reason")]
    if facts.slurm:  # on EKS, HyperPod's node recovery replaces it (operations.md § 6)
        found.append(exclude_node(facts, "resubmit without the lost node, unless auto-resume replaces it"))
    return found


def _ddp_unused(facts: Facts) -> list[SuggestedCommand]:
    return [
        *lines_before(facts, "the error and the lines before it"),
        export(
            "TORCH_DISTRIBUTED_DEBUG=DETAIL", why="PyTorch then names the parameters that got no gradient"
        ),
    ]


def _unknown(facts: Facts) -> list[SuggestedCommand]:
    if facts.pods:
        return _failed_pods(facts)
    if not facts.nccl_quiet:
        return []
    return [
        export(
            "NCCL_DEBUG=INFO",
            "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV",
            why="NCCL printed nothing but the error (NCCL_DEBUG was off): the next run names the call that "
            "failed, the interfaces and topology it chose, and every setting it read",
        )
    ]


def _horovod_stall(facts: Facts) -> list[SuggestedCommand]:
    return [
        export(
            "HOROVOD_TIMELINE=/tmp/horovod_timeline.json",
            why="for one diagnostic run: the timeline records when each rank submitted each tensor; a tensor "
            "one rank never submits is a name or path that differs, a rank that submits nothing is stuck "
            "elsewhere (its own log says where)",
        )
    ]


def _illegal_instruction(facts: Facts) -> list[SuggestedCommand]:
    return [
        kernel_log(
            facts,
            "grep -i 'invalid opcode'",
            "the kernel's trap line names the library that held the instruction (`trap invalid opcode … in "
            "<library>`)",
        ),
        on_node_check(
            facts,
            "lscpu",
            "the node's CPU model and flags (avx2, avx512f): a binary built where they exist dies here if "
            "they do not",
        ),
    ]


def _container_gpu_access(facts: Facts) -> list[SuggestedCommand]:
    return [
        in_container_check("nvidia-smi", "whether the container reaches the driver at all"),
        on_node_check(
            facts,
            "docker info --format '{{.DefaultRuntime}}'",
            "on a Docker host: the runtime containers get unless told otherwise (nvidia is needed for GPUs)",
        ),
    ]


def _mpi_cuda_support(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_filtered(
            facts,
            "ompi_info --parsable --all",
            "grep mpi_built_with_cuda_support:value",
            "whether this Open MPI was built with CUDA (true) or not (false)",
        )
    ]


def _device_directory(facts: Facts) -> list[SuggestedCommand]:
    return [
        in_container_check(
            "ls -l /dev/dri/by-path",
            "the device links oneCCL opens: missing where /dev/dri came in with --device",
        )
    ]


def _pcie_fatal(facts: Facts) -> list[SuggestedCommand]:
    return [
        kernel_log(
            facts,
            "grep -iE 'aer|pcie bus error'",
            "which device's link failed, how, and whether corrected errors came before it",
        )
    ]


def _process_limit(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(facts, "ulimit -u", "the processes the job's user may run (run it in the job's shell)"),
        in_container_check(
            "cat /sys/fs/cgroup/pids.max", "the container's pids limit (cgroup v2), threads included"
        ),
    ]


def _gds_setup(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "/usr/local/cuda/gds/tools/gdscheck -p",
            "what GPUDirect Storage supports on the node: filesystems, drivers, compatibility mode",
        )
    ]


def _gds_module(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts, "modinfo nvidia_fs", "the nvidia-fs module's release, against the kernel and driver"
        ),
        kernel_log(facts, "grep -i nvidia-fs", "the module's I/O errors and when they began"),
    ]


def _collnet_unavailable(facts: Facts) -> list[SuggestedCommand]:
    return [
        export(
            "NCCL_COLLNET_ENABLE=0",
            why="where the fabric has no SHARP: NCCL stops trying in-network reductions",
        )
    ]


def _ccl_launcher_env(facts: Facts) -> list[SuggestedCommand]:
    return [
        export(
            "CCL_ZE_IPC_EXCHANGE=sockets",
            why="what oneCCL's own message asks for: it then finds each process's place without the launcher",
        ),
        export(
            "CCL_PROCESS_LAUNCHER=none",
            why="the other way: oneCCL takes each process's place from CCL_LOCAL_RANK and CCL_LOCAL_SIZE, "
            "set per process from the launcher's LOCAL_RANK and LOCAL_WORLD_SIZE (in the script, before "
            "the process group starts)",
        ),
    ]


def _heap_corruption(facts: Facts) -> list[SuggestedCommand]:
    return [
        *_versions(facts),
        on_node_check(
            facts,
            "nvidia-smi --query-gpu=name,driver_version --format=csv",
            "the GPU and driver to hold against the NCCL and CUDA release notes (Blackwell and GB200 need "
            "NCCL 2.25 or later)",
        ),
    ]


def _fd_sharing_denied(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "sysctl kernel.yama.ptrace_scope",
            "above 0, Yama forbids a process another's file descriptor (pidfd_getfd); in a container, "
            "CAP_SYS_PTRACE must be granted as well",
        ),
        suggest(
            *on_node(facts, "sudo sysctl kernel.yama.ptrace_scope=0"),
            why="allow it host-wide until the next boot (a file in /etc/sysctl.d keeps it); in a container, "
            "granting CAP_SYS_PTRACE to the job's container is the narrower change" + _where(facts),
            blast_radius=BlastRadius.CHANGES_CONFIG,
            permission=_ROOT_ON_NODE,
        ),
    ]


def _socket_over_ib(facts: Facts) -> list[SuggestedCommand]:
    return [
        in_container_check("ls /dev/infiniband", "whether the job's container sees the RDMA devices"),
        suggest_chain(
            ["ldconfig -p"],
            "|",
            "grep libibverbs",
            why="whether the image has the IB verbs library NCCL opens",
            permission=_SHELL_IN_CONTAINER,
        ),
        on_node_check(facts, "ibv_devinfo", "the node's HCAs and whether their ports are PORT_ACTIVE"),
    ]


def _cuda_feature_unsupported(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_filtered(
            facts,
            "nvidia-smi -q",
            "grep -i -A2 virtualization",
            "whether the GPU is virtual (vGPU, passthrough): a vGPU VM needs unified memory enabled",
        ),
        export(
            "NCCL_CUMEM_ENABLE=0",
            why="for one run: whether the failure follows NCCL's cuMem allocations or the whole platform",
        ),
    ]


def _foreign_connection(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "ss -tnp",
            "while the job runs: the programs holding connections to its ports (a scraper or probe that "
            "tries every port shows here)",
        ),
        *_versions(facts),
    ]


def _comm_overlap(facts: Facts) -> list[SuggestedCommand]:
    return [
        on_node_check(
            facts,
            "python -c 'import transformer_engine; print(transformer_engine.__version__)'",
            "the Transformer Engine the job loads: userbuffers with TP smaller than the world failed to "
            "bootstrap before 1.10 (run it in the job's environment)",
        ),
        *_versions(facts),
    ]


ID_STEPS: dict[str, Steps] = {
    "triage.nccl.silent_ranks": _silent,
    "triage.nccl.silent_exit": _silent,
    "triage.nccl.diverged_after_training": _mismatch,
    "triage.storage.lustre_evicted": _lustre,
    "triage.storage.disk_full": _disk_full,
    "triage.storage.short_write": _disk_full,
    "triage.storage.checkpoint_unwritable": _disk_full,
    "triage.config.first_contact": _first_contact,
    "triage.storage.ais_lost_objects": _aistore,
    "triage.storage.ais_stream_broken": _aistore,
    "triage.storage.ais_dropped": _aistore,
    "triage.storage.ais_pressure": _aistore,
    "triage.storage.ais_error": _aistore,
    "triage.storage.ais_error_counters": _aistore,
    "triage.config.gpudirect_rdma": _gpudirect,
    "triage.config.nvshmem_init": _load_peermem,
    "triage.config.gdr_disabled": _gdr_disabled,
    "triage.software.dmabuf_unsupported": _dmabuf,
    "triage.config.node_local_cache": _node_local_cache,
    "triage.config.srun_without_pmi": _slurm_step_launch,
    "triage.config.invalid_device": _invalid_device,
    "triage.software.nccl_invalid_usage": _invalid_usage,
    "triage.software.duplicate_gpu": _gpu_count,
    "triage.config.one_device_for_all": _gpu_count,
    "triage.config.dataparallel_gather": _one_process_many_gpus,
    "triage.config.address_unavailable": _address_unavailable,
    "triage.config.device_not_visible": _gpu_count,
    "triage.config.layout_indivisible": _gpu_count,
    "triage.config.container_gpu_access": _container_gpu_access,
    "triage.config.container_device_directory": _device_directory,
    "triage.config.container_config": _pods,
    "triage.software.mpi_without_cuda": _mpi_cuda_support,
    "triage.config.efa_plugin_no_device": _efa_plugin_nodes,
    "triage.config.p2p_unsupported": _p2p,
    "triage.software.custom_all_reduce_p2p": _custom_all_reduce,
    "triage.software.host_slots_as_name": _open_mpi_version,
    "triage.software.mpi_version_skew": _open_mpi_version,
    "triage.config.nccl_not_built": _nccl_availability,
    "triage.config.nccl_without_gpu": _nccl_availability,
    "triage.software.ucx_setup": _ucx_transports,
    "triage.config.library_files": _open_files_limit,
    "triage.config.open_files": _open_files_limit,
    "triage.config.gloo_interface": _gloo_interface,
    "triage.config.loopback_peer": _loopback_peer,
    "triage.config.gloo_loopback": _loopback_peer,
    "triage.config.bootstrap_socket": _bootstrap_socket,
    "triage.config.slurm_step_launch": _slurm_step_launch,
    "triage.software.tensorpipe_listen": _tensorpipe_listen,
    "triage.config.ub_multicast": _ub_multicast,
    "triage.config.k8s_api_unreachable": _k8s_api_unreachable,
    "triage.software.extension_build": _extension_build,
    "triage.config.precision_unsupported": _precision_unsupported,
    "triage.config.ddp_model_check_empty": _ddp_model_check_empty,
    "triage.software.nccl_shm_peer_access": _nccl_shm_peer_access,
    "triage.config.mpi_tcp_interface": _mpi_tcp_interface,
    "triage.software.container_toolkit": _container_toolkit,
    "triage.software.image_needs_newer_driver": _container_toolkit,
    "triage.config.coordinator_unreachable": _coordinator_unreachable,
    "triage.gpu.nvls_fabric": _nvls_fabric,
    "triage.config.nccl_init_stalled": _init_stalled,
    "triage.config.iommu_fault": _iommu,
    "triage.nccl.all_inside_one_node": _inside_one_node,
    "triage.software.nccl_topology": _topology_file,
    "triage.software.topology_attribute": _topology_file,
    "triage.config.nccl_injected_topology": _topology_file,
    "triage.software.net_plugin_unloadable": _plugin_unloadable,
    "triage.config.bootstrap_refused": _bootstrap_refused,
    "triage.network.peer_crashed": _peer_crashed,
    "triage.config.shm": _shm,
    "triage.config.sigbus": _shm,  # a bus error is a /dev/shm page that could not be backed
    "triage.config.shm_not_shared": _shm_not_shared,
    "triage.config.members_missing": _members_missing,
    "triage.config.slurm_step_refused": _step_refused,
    "triage.config.ib_local_protection": _ib_protection,
    "triage.infra.time_limit": _time_limit,
    "triage.infra.node_failure": _node_lost,
    "triage.infra.node_not_ready": _node_lost,
    "triage.software.ddp_unused_parameters": _ddp_unused,
    "triage.software.comm_overlap": _comm_overlap,
    "triage.software.illegal_instruction": _illegal_instruction,
    "triage.software.heap_corruption": _heap_corruption,
    "triage.config.process_limit": _process_limit,
    "triage.gpu.pcie_fatal": _pcie_fatal,
    "triage.network.nic_pcie_fatal": _pcie_fatal,
    "triage.config.ccl_launcher_env": _ccl_launcher_env,
    "triage.config.gds_setup": _gds_setup,
    "triage.software.gds_module": _gds_module,
    "triage.config.collnet_unavailable": _collnet_unavailable,
    "triage.config.fd_sharing_denied": _fd_sharing_denied,
    "triage.config.fd_sharing_unsupported": _kernel_without_fd_sharing,
    "triage.config.cuda_init": _cuda_init,
    "triage.software.watchdog_hung": _watchdog_hung,
    "triage.config.mesh_sidecar": _mesh_sidecar,
    "triage.software.jit_build_hung": _jit_build_hung,
    "triage.config.memlock": _memlock,
    "triage.config.socket_over_ib": _socket_over_ib,
    "triage.config.cuda_feature_unsupported": _cuda_feature_unsupported,
    "triage.software.foreign_connection": _foreign_connection,
    "triage.collective.horovod_stall": _horovod_stall,
    "triage.config.too_many_peers": _too_many_peers,
    "triage.software.libuv_missing": _libuv_missing,
    "triage.unknown.failure": _unknown,
}

# Findings no command fits, and why: the fix is in the training code or the job's own settings,
# which no command on a node or the scheduler reads.
_CODE = (
    "the fix is in the training code at the lines quoted; no command on a node or the scheduler shows more"
)
REASONS: dict[str, str] = {
    "triage.config.no_process_group": (
        "the fix is in the launch: start the script the way it expects (torchrun, which sets RANK and "
        "WORLD_SIZE, or the scheduler whose variables it reads), or call init_process_group before DDP"
    ),
    "triage.config.device_mismatch": (
        "the fix is in the training script: torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before the "
        "model is built; under mpirun, LOCAL_RANK from OMPI_COMM_WORLD_LOCAL_RANK"
    ),
    "triage.config.rpc_timeout": (
        "the fix is in the script's init_rpc options: a longer rpc_timeout (TensorPipeRpcBackendOptions) for "
        "calls that move large tensors"
    ),
    "triage.config.engine_world_size": (
        "the fix is in the launch command: as many processes as the engine's tensor × pipeline parallel size "
        "(mpirun -n <tp × pp>), or an engine built for the GPUs at hand"
    ),
    "triage.config.loss_scale_floor": (
        "the fix is in the training configuration: bf16 instead of fp16 (for a model pretrained in bf16), or "
        "a lower learning rate; the loss scaler only reports the overflow"
    ),
    "triage.collective.horovod_shutdown": (
        "the cause is in the log of the rank that left or raised, which these lines do not name: read every "
        "rank's log for the first exception, or for a loop that ended early (early stopping decided on one "
        "rank is fixed by broadcasting the decision from rank 0); `horovodrun --output-filename DIR` keeps "
        "one log per rank for the next run"
    ),
    "triage.config.device_map_distributed": (
        "the fix is in the training script: load the model with device_map={'': local_rank} (each rank on "
        "its own GPU), or without device_map under ZeRO-3 and FSDP"
    ),
    "triage.config.group_device_mismatch": (
        "the fix is in the training script: torch.cuda.set_device(local_rank) before init_process_group "
        "(and the tensors on that device), as every process of a node otherwise starts on GPU 0"
    ),
    "triage.config.tf_without_nccl": (
        "the fix is in the strategy: tf.distribute.MirroredStrategy(cross_device_ops="
        "tf.distribute.HierarchicalCopyAllReduce()) where TensorFlow has no NCCL (Windows)"
    ),
    "triage.storage.hub_rate_limited": (
        "the fix is in how the job fetches its model and data: download them once before the launch (to "
        "storage every node mounts, HF_HOME), then start the job with HF_HUB_OFFLINE=1 so no rank asks the "
        "hub"
    ),
    "triage.software.checkpoint_torn": (
        "the fix is in the training code: save the checkpoint from one rank only (rank 0, is_main_process) "
        "and let the others wait at a barrier; the file already written is lost, load an earlier one"
    ),
    "triage.nccl.pg_detected_mismatch": _CODE,
    "triage.nccl.nccl_detected_mismatch": _CODE,
    "triage.nccl.collective_shape": _CODE,
    "triage.software.wrapper_misuse": (
        "the fix is in the training code: reach the model inside the wrapper (model.module, "
        "accelerator.unwrap_model(model)) for its attributes, generation, saving and from_pretrained"
    ),
    "triage.config.bad_arguments": (
        "the fix is in the launch command or the script's argument parser: compare the arguments the "
        "line names with the usage argparse printed above it"
    ),
    "triage.config.trainer_misconfigured": (
        "the fix is in the Trainer's arguments the exception names (devices, strategy, precision): make "
        "them fit the GPUs this machine shows"
    ),
    "triage.software.sharded_load": (
        "the fix is in the loading code: load the checkpoint through DeepSpeed's or FSDP's own loader, or "
        "gather the partitioned parameters before load_state_dict"
    ),
    "triage.config.checkpoint_shape": (
        "the fix is the model's configuration or the checkpoint path: compare the shapes the line quotes "
        "with the configuration the checkpoint was saved with"
    ),
    "triage.config.resume_layout_changed": (
        "the fix is the launch layout: resume on the node and GPU count (and the tensor and pipeline "
        "parallel sizes) the checkpoint was saved with, or convert it (DeepSpeed's universal checkpoint, "
        "zero_to_fp32.py, Megatron's checkpoint converter) and resume from that"
    ),
    "triage.config.terminal_hangup": (
        "the fix is how the job is started: under sbatch, tmux or screen, or with setsid, so that no "
        "terminal or SSH session it hangs from can end it (nohup alone does not shield torchrun)"
    ),
    "triage.software.cut_traceback": (
        "no command reads the missing exception line: ask for the traceback to its end, from every rank "
        "that printed one (the job's full log, not a screen's worth)"
    ),
    "triage.software.ddp_model_differs": (
        "the fix is in the training code or its configuration: every rank must build the same model (no "
        "rank- or node-dependent layers, the same config file, checkpoint and library versions on every "
        "node)"
    ),
    "triage.software.local_rank_argument": (
        "the fix is in the script: read the local rank from the LOCAL_RANK environment variable (torchrun "
        "sets it), or declare both spellings: parser.add_argument('--local-rank', '--local_rank', type=int)"
    ),
    "triage.config.library_not_found": (
        "the fix is in the job's environment: install the library the line names there (the image, the "
        "virtualenv, the node), or add its directory to LD_LIBRARY_PATH"
    ),
    "triage.software.library_version_not_found": (
        "the fix is in the environment's versions: install the build made for the CUDA or library release "
        "the node has (the wheel's CUDA tag), or the release the build asks for"
    ),
    "triage.config.mpi_gtl_not_linked": (
        "the fix is in the build: rebuild the program (mpi4py, the application) with the Cray compiler "
        "wrappers and the GPU modules loaded so it links libmpi_gtl_cuda, or leave MPICH_GPU_SUPPORT_ENABLED "
        "unset where it hands MPI no GPU buffers"
    ),
    "triage.config.single_gpu_library": (
        "the fix is in the launch: give the process one GPU (CUDA_VISIBLE_DEVICES=0 before it starts), or "
        "use a library or edition that supports several"
    ),
    "triage.rendezvous.peers_not_ready": (
        "the fix is in the launch: run the same launch command on every node its list names (PaddlePaddle's "
        "--ips), each within the wait, and open the listed ports between the nodes"
    ),
    "triage.rendezvous.rank_claimed_twice": (
        "the fix is in the launch: a file:// init file that does not exist yet for every run (delete it "
        "between runs, or name it after the job id), and a distinct RANK or node rank for every process"
    ),
    "triage.config.local_rank_not_taken": (
        "the fix is in the launch: start the script with torchrun (it reads LOCAL_RANK from the "
        "environment), or add the argument the launcher passes: "
        "parser.add_argument('--local_rank', '--local-rank', type=int)"
    ),
    "triage.software.stale_file_handle": (
        "the fix is in the training code: give each node its own cache, lock or checkpoint path"
    ),
    "triage.nccl.busy_outside_nccl": (
        "the fix is in the training script: do the long CPU step before the first collective, or raise "
        "init_process_group's timeout for it"
    ),
    "triage.input.missing_ranks": (
        "the missing ranks' logs are needed first: collect every node's files and run the triage again"
    ),
    "triage.config.net_size_mismatch": (
        "the NCCL settings to compare are in each node's job environment: compare the NCCL_ variables the "
        "logs print (NCCL_DEBUG=INFO) across nodes"
    ),
    "flight_recorder.p2p_unmatched": (
        "the fix is in the pipeline schedule of the two stages quoted; no command on a node shows more"
    ),
    "flight_recorder.refused_dump": (
        "the file carries code, not a dump: do not load it anywhere (PyTorch never writes one like it)"
    ),
    "flight_recorder.coverage": "the dumps' limits: collect the missing ones and run the triage again",
    "triage.unknown.failure": (
        "the cause is not established: read the quoted lines, then the sections the detail names"
    ),
}

# Sections whose findings are about what the diagnostic itself could read: no command on the
# cluster fixes them; the detail says what to grant, enable or collect, then the rerun shows more.
SECTION_REASONS: dict[str, str] = {
    "operations.md § 9": "the diagnostic could not collect this input: fix what the detail names, rerun it",
    "gpu-metrics.md § 1": "the metrics the checks need are missing: enable what the detail names, rerun",
    "gpu-metrics.md § 2": "the metrics show a hang, not its cause: triage the job's logs for it",
    "debugging-guide.md § 15": "the fix is in the training code or the data the traceback names",
    "debugging-guide.md § 22.2": _CODE,
    "debugging-guide.md § 22.4": _CODE,
    "debugging-guide.md § 22.6": "the dumps' limits: collect the missing ones and run the triage again",
}
