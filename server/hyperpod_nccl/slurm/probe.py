"""From the `slurm_controller.sh` output to a `SlurmSnapshot`.

Shared by every way the script runs (this host, SSM to the controller, recorded output), so a
replayed bundle and a live run are read by exactly the same code.
"""

from __future__ import annotations

from typing import Literal

from hyperpod_nccl.slurm.parse import (
    Section,
    contact_error,
    host_files_read,
    parse_config,
    parse_host_files,
    parse_job,
    parse_munge,
    parse_nodes,
    parse_ping,
    parse_sacct,
    parse_sinfo_reasons,
    parse_squeue,
    parse_version,
    split_sections,
)
from hyperpod_nccl.snapshot.slurm import SlurmController, SlurmSnapshot

SCRIPT = "slurm_controller"
# Sections whose failure is worth reporting (a missing sacct or batch script is not a fault).
_REPORTED = ("ping", "sinfo", "nodes", "squeue", "job", "batch_script")


def _controller(sections: dict[str, Section]) -> SlurmController:
    ping = sections.get("ping", Section("", None))
    errors = [contact_error(sections[name].body) for name in ("ping", "nodes", "sinfo") if name in sections]
    error = next((e for e in errors if e), None)
    pings = parse_ping(ping.body)
    reachable: bool | None = None
    if pings or error:
        reachable = error is None and any(p.up for p in pings)
    munge_ok, munge_text = parse_munge(sections.get("munge"))
    return SlurmController(
        pings=pings, reachable=reachable, contact_error=error, munge_ok=munge_ok, munge_text=munge_text
    )


def _command_errors(sections: dict[str, Section]) -> dict[str, str]:
    errors = {}
    for name in _REPORTED:
        section = sections.get(name)
        if section is not None and section.failed:
            errors[name] = section.body.strip()[:500] or f"exit status {section.exit_code}"
    return errors


def snapshot_from_output(
    output: str,
    *,
    job_id: str | None = None,
    source: Literal["local", "ssm", "replay"] = "local",
    controller_node: str | None = None,
) -> SlurmSnapshot:
    sections = split_sections(output)

    def body(name: str) -> str:
        return sections[name].body if name in sections else ""

    batch = sections.get("batch_script")
    host_body = body("host_files")
    return SlurmSnapshot(
        source=source,
        controller_node=controller_node,
        version=parse_version(body("version")),
        controller=_controller(sections),
        nodes=parse_nodes(body("nodes"), body("sinfo")),
        reason_lines=parse_sinfo_reasons(body("sinfo_reasons")),
        jobs=parse_squeue(body("squeue")),
        job_id=job_id,
        job=(parse_job(body("job")) or parse_sacct(body("sacct"))) if job_id else None,
        batch_script=batch.body + "\n"
        if batch is not None and not batch.failed and batch.body.strip()
        else None,
        config=parse_config(body("config")),
        host_settings=parse_host_files(host_body),
        host_files_read=host_files_read(host_body),
        command_errors=_command_errors(sections),
    )
