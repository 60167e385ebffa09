"""Regenerate the committed demo incident: `python -m tests.triage.make_example "
"examples/training-hang/logs`."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.triage.scenarios import training_hang_example


def main(argv: list[str]) -> int:
    target = Path(argv[1]) if len(argv) > 1 else Path("examples/training-hang/logs")
    shutil.rmtree(target, ignore_errors=True)
    planted = training_hang_example(target)
    for evidence in planted.evidence:
        print(
            f"planted {planted.category}: ranks {list(planted.culprit_ranks)} on "
            f"{list(planted.culprit_nodes)}; "
            f"decisive line {evidence.file}:{evidence.line}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
