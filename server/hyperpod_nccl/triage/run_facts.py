"""Lines that say how the run started: fresh rather than resumed from a checkpoint, and on how many
nodes the launcher was told to start it.

Kept apart from the failure catalogue (`patterns.py`): they describe the run, never a failure.
The scanner applies them as facts, with the same prefilter; their anchors are rare phrases, so
they cost nothing on the bytes that do not hold them.
"""

from __future__ import annotations

import re

from hyperpod_nccl.triage.patterns import Pattern

RUN_FACTS: tuple[Pattern, ...] = (
    Pattern(
        "fresh_start",
        ("from scratch", "checkpoint found", "checkpoints found", "resume_from_checkpoint"),
        re.compile(
            r"(?i)(?:(?:train\w{0,24}|start\w{0,24}|initiali[sz]\w{0,24}) from scratch"
            r"|no (?:valid |existing |previous )?checkpoints? (?:were |was )?found"
            r"|resume_from_checkpoint\s*[=:]\s*(?:None|null|False)\b)"
        ),
    ),
    # The launcher's node count (`torchrun --nnodes=2`, DeepSpeed's `nnodes=2, num_local_procs=8`,
    # Lightning's `num_nodes=2`, Slurm's `SLURM_NNODES=2`): a job across nodes even when one node's log
    # is all the input holds.
    Pattern(
        "launch_nodes",
        ("nnodes", "num_nodes", "num-nodes", "NNODES"),
        re.compile(r"(?:--nnodes[= ]|\bnnodes=|--num[_-]nodes[= ]|\bnum_nodes=|NNODES=)(?P<nodes>\d{1,6})"),
        key="nodes",
    ),
)
