"""Lines that say how the run started: fresh, rather than resumed from a checkpoint.

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
            r"(?i)(?:(?:train\w*|start\w*|initiali[sz]\w*) from scratch|no (?:valid |existing |previous )?"
            r"checkpoints? (?:were |was )?found|resume_from_checkpoint\s*[=:]\s*(?:None|null|False)\b)"
        ),
    ),
)
