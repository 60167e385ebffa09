"""One real-world incident as stored under `cases/<NN-slug>/`: its pasted logs and `case.json`.

The logs are the text people pasted into a public thread, unchanged; `case.json` records where
the thread is and what it established. Scoring and the integrity tests both load cases here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hyperpod_nccl.models import Category

CASES_DIR = Path(__file__).resolve().parent / "cases"
RECORD_NAME = "case.json"


class CaseRecord(BaseModel):
    """The contents of `case.json`: the thread, the cause it established, and how it was pasted."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(pattern=r"^https?://\S+$", description="Address of the thread.")
    title: str = Field(min_length=1)
    where: str = Field(min_length=1, description="`github:owner/repo#N` or the forum's name.")
    category: Category = Field(description="The root-cause category the thread established.")
    culprit_ranks: list[int] = Field(description="Origin ranks, only when the log itself shows them.")
    culprit_nodes: list[str] = Field(description="Origin hosts, only when the log itself shows them.")
    established_by: str = Field(min_length=1, max_length=300, description="Quote that settled the cause.")
    conclusion: str = Field(min_length=1)
    decisive_lines: list[str] = Field(min_length=1, description="Exact substrings of the logs.")
    truncated: bool = Field(description="The search excerpt cut the paste short.")
    layout: str = Field(min_length=1, description="How the logs were produced and pasted.")


@dataclass(frozen=True)
class Case:
    name: str
    directory: Path
    record: CaseRecord

    @property
    def log_files(self) -> list[Path]:
        """Every file of the case except its record: the input the engine is given."""
        return sorted(p for p in self.directory.rglob("*") if p.is_file() and p.name != RECORD_NAME)

    def log_text(self) -> dict[str, str]:
        """Each log file's text keyed by its path relative to the case directory."""
        return {
            str(path.relative_to(self.directory)): path.read_text(encoding="utf-8", errors="replace")
            for path in self.log_files
        }


def load_case(directory: Path) -> Case:
    record = CaseRecord.model_validate_json((directory / RECORD_NAME).read_text(encoding="utf-8"))
    return Case(name=directory.name, directory=directory, record=record)


def load_cases(root: Path = CASES_DIR) -> list[Case]:
    """Every case directory under `root` (a directory holding `case.json`), in name order."""
    return [load_case(d) for d in sorted(root.iterdir()) if (d / RECORD_NAME).is_file()]
