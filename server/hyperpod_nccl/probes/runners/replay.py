"""Recorded probe output, served as if a node had just printed it: for tests, demos and bundles.

Recordings are keyed by instance id or host name. A directory holds one `<key>.txt` per node.
A per-node delay simulates a slow session; a delay beyond the time limit yields a timeout with
the first half of the recording, as a node that stalled midway would.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import anyio

from hyperpod_nccl.probes.catalog import ProbeScript
from hyperpod_nccl.probes.runners.base import NodeTarget, ProbeResult

Recording = str | ProbeResult


class ReplayRunner:
    def __init__(
        self, recordings: Mapping[str, Recording], delay_s: float | Mapping[str, float] = 0.0
    ) -> None:
        self._recordings = dict(recordings)
        self._delay_s = delay_s

    @classmethod
    def from_directory(cls, directory: Path, delay_s: float | Mapping[str, float] = 0.0) -> ReplayRunner:
        recordings = {path.stem: path.read_text(encoding="utf-8") for path in sorted(directory.glob("*.txt"))}
        return cls(recordings, delay_s)

    def _key(self, target: NodeTarget) -> str | None:
        for key in (target.instance_id, target.hostname, "local"):
            if key is not None and key in self._recordings:
                return key
        return None

    def _delay(self, key: str) -> float:
        if isinstance(self._delay_s, Mapping):
            return self._delay_s.get(key, 0.0)
        return self._delay_s

    async def run(self, script: ProbeScript, target: NodeTarget, timeout_s: float) -> ProbeResult:
        key = self._key(target)
        if key is None:
            return ProbeResult(
                target=target,
                script=script.name,
                status="unreachable",
                error="no recorded output for this node",
            )
        recording = self._recordings[key]
        delay = self._delay(key)
        await anyio.sleep(min(delay, timeout_s))
        if isinstance(recording, ProbeResult):
            return recording.model_copy(update={"target": target, "script": script.name})
        if delay > timeout_s:
            return ProbeResult(
                target=target,
                script=script.name,
                status="timeout",
                output=recording[: len(recording) // 2],
                error=f"timed out after {timeout_s:.0f} s; partial output kept",
                duration_s=timeout_s,
            )
        return ProbeResult(target=target, script=script.name, status="ok", output=recording, duration_s=delay)
