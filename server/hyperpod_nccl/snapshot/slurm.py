"""What the Slurm collector saw on the controller: controller health, every node's state and
reason, the jobs, and for one job its batch script and the host files that shape its runtime.

Values are kept as Slurm printed them (state strings, reasons, time strings) next to the few
derived fields the analyzers need (base state and flags, seconds), so a bundle can be read by a
person and checked by code alike.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ControllerPing(_Model):
    host: str
    role: str = Field(description="`primary`, `backup`, `backup1`...")
    up: bool
    text: str = Field(description="The `scontrol ping` line as printed.")


class SlurmController(_Model):
    pings: list[ControllerPing] = Field(default_factory=list)
    reachable: bool | None = Field(
        default=None, description="False when Slurm commands could not contact slurmctld; None if unknown."
    )
    contact_error: str | None = Field(default=None, description="The error a Slurm command printed.")
    munge_ok: bool | None = Field(default=None, description="`munge -n | unmunge` succeeded; None if absent.")
    munge_text: str | None = None


class SlurmNode(_Model):
    name: str
    state: str = Field(description="Long state as `scontrol show node` printed it, e.g. `IDLE+DRAIN`.")
    compact_state: str | None = Field(default=None, description="`sinfo %t` form with flags, e.g. `drain*`.")
    base: str = Field(description="Base state: IDLE, ALLOCATED, MIXED, DOWN, FUTURE, UNKNOWN...")
    flags: list[str] = Field(default_factory=list, description="DRAIN, FAIL, NOT_RESPONDING, ...")
    reason: str | None = Field(default=None, description="The reason without its `[user@time]` stamp.")
    reason_stamp: str | None = Field(default=None, description="`user@time` the reason was set.")
    partitions: list[str] = Field(default_factory=list)
    gres: str | None = Field(default=None, description="Configured GRES, e.g. `gpu:8`.")
    address: str | None = None
    instance_id: str | None = Field(
        default=None, description="HyperPod instance id, when the cluster is known."
    )
    line: str = Field(description="The `scontrol -o show node` line, trimmed to the decisive fields.")


class SlurmJob(_Model):
    job_id: str
    source: Literal["squeue", "scontrol show job", "sacct"] = "squeue"
    name: str | None = None
    user: str | None = None
    state: str
    reason: str | None = Field(
        default=None, description="Pending/hold reason with spaces, e.g. `launch failed requeued held`."
    )
    partition: str | None = None
    num_nodes: int | None = None
    nodes: list[str] = Field(default_factory=list, description="Expanded node names.")
    node_list: str | None = Field(
        default=None, description="The node list as Slurm printed it, e.g. `n[1-4]`."
    )
    time_limit: str | None = None
    elapsed: str | None = None
    time_limit_s: int | None = Field(default=None, description="None for UNLIMITED or unknown.")
    elapsed_s: int | None = None
    exclusive: bool | None = Field(default=None, description="`OverSubscribe=NO` in `scontrol show job`.")
    restarts: int | None = None
    exit_code: str | None = None
    command: str | None = None


class HostSetting(_Model):
    """A line from a prolog/epilog, profile or limits file that sets IPC, memlock or NCCL env."""

    path: str
    line: int
    text: str


class SlurmSnapshot(_Model):
    source: Literal["local", "ssm", "replay"] = "local"
    controller_node: str | None = Field(default=None, description="Instance id or host the script ran on.")
    version: str | None = None
    controller: SlurmController = Field(default_factory=SlurmController)
    nodes: list[SlurmNode] = Field(default_factory=list)
    reason_lines: dict[str, str] = Field(
        default_factory=dict, description="Node → its `sinfo -R` line (REASON USER TIMESTAMP NODELIST)."
    )
    jobs: list[SlurmJob] = Field(default_factory=list)
    job_id: str | None = Field(default=None, description="The job the user asked about.")
    job: SlurmJob | None = Field(default=None, description="`scontrol show job -d` of that job.")
    batch_script: str | None = Field(default=None, description="`scontrol write batch_script` of that job.")
    config: dict[str, str] = Field(default_factory=dict, description="Selected `scontrol show config` keys.")
    host_settings: list[HostSetting] = Field(default_factory=list)
    host_files_read: list[str] = Field(
        default_factory=list, description="Host files that exist and were read."
    )
    command_errors: dict[str, str] = Field(
        default_factory=dict, description="Section → what the command printed when it failed."
    )
