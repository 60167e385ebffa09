"""A Python traceback cut before its exception line: an exception in the code its frames run.

Pastes often stop at the frames (the reporter copied a screen, an issue template cut the block).
Nothing after the deepest frame says what was raised, but a traceback that ended the process
through the training code, a trainer or a model library is an exception there: `software`, a low
guess that asks for the missing line. Frames in code that wraps the outside world — the process
group and its store, Horovod's collectives, CUDA's device set-up, a DataLoader, files and the
network — could hold any cause, so they stay unknown.
"""

from __future__ import annotations

import re

from hyperpod_nccl.models import Category, Finding, Priority, Status
from hyperpod_nccl.triage.events import Event
from hyperpod_nccl.triage.findings import evidence
from hyperpod_nccl.triage.model import Incident
from hyperpod_nccl.triage.patterns import EXCEPTION_NAME
from hyperpod_nccl.triage.prefixes import strip
from hyperpod_nccl.triage.rules.outcome import Outcome, blamed

CUT_TRACEBACK_ID = "triage.software.cut_traceback"
DEVICE_NOT_VISIBLE_ID = "triage.config.device_not_visible"
_WEIGHT = 10  # below every rule that names a cause; above "a failure was seen" alone
# Lines that say what the traceback raised, or that something else failed after its frames.
_CONTINUED = frozenset(
    {"exception", "nccl_error", "nccl_warn", "cuda_error", "cuda_oom", "crash", "async_error", "last_words"}
)
# Frames in code that talks to the outside world, or that only passes the call on: any cause may be
# behind them. The interpreter's own start-up frames (`<frozen runpy>`: `python -m`) say only that the
# paste stopped near its top.
_OUTSIDE = re.compile(
    r"^<frozen |torch/distributed/|bin/torchrun|/c10d|/horovod/|torch/cuda/|torch/utils/data/"
    r"|serialization\.py|/multiprocessing/"
    # PyTorch's module call and its DDP / DataParallel wrappers: the model's own frames, cut, come below
    r"|torch/nn/parallel/|torch/nn/modules/module\.py"
    r"|socket\.py|/ssl\.py"
    r"|/urllib|/requests/|/http/|/(?:shutil|os|pathlib)\.py|/fsspec/|/boto"
)
# ...and functions that fetch over the network wherever they live (`maybe_download`, `urlretrieve`):
# a proxy, DNS, a sidecar not yet up or the server itself may be behind them.
_FETCHING = re.compile(r"(?i)download|urlretrieve|urlopen|fetch")
_RAISED = re.compile(r"[\s^~]*" + EXCEPTION_NAME + r":")
_FILE = re.compile(r'File "(?P<file>[^"\n]{1,500})", line (?P<line>\d+), in (?P<function>\S+)')


def _continues(event: Event) -> bool:
    """A line after the frames that says what was raised, or that something else failed; an exception
    line another pattern read first counts (`subprocess.CalledProcessError: … returned non-zero exit
    status 1.` is a worker's exit as well)."""
    return event.kind in _CONTINUED or _RAISED.match(strip(event.text).message) is not None


def _after_a_stop(incident: Incident, frame: Event) -> bool:
    """The traceback follows its process being told to stop (torchrun's `Received 15 death signal`):
    the shutdown the signal raised, not an exception of the code."""
    return any(
        e.source == frame.source and e.line < frame.line and "death" in e.fields
        for e in incident.index.kind("sigterm")
    )


def cut_traceback(incident: Incident) -> Outcome:
    frames = incident.index.kind("traceback_frame")
    if not frames:
        return Outcome()
    deepest: dict[str, int] = {}
    for frame in frames:
        deepest[frame.source] = max(frame.line, deepest.get(frame.source, 0))
    continued = {
        event.source
        for event in incident.index.events
        if event.line > deepest.get(event.source, event.line) and _continues(event)
    }
    cut = [frame for frame in frames if frame.source not in continued and frame.line == deepest[frame.source]]
    frame = incident.first(cut)
    if frame is None or _after_a_stop(incident, frame):
        return Outcome()
    where = _FILE.search(frame.text)
    if where is not None and where["function"] == "set_device" and "cuda" in where["file"]:
        # What fails there is nearly always an index beyond the GPUs the process can see.
        return _guess(
            incident,
            frame,
            DEVICE_NOT_VISIBLE_ID,
            Category.CONFIG,
            "A process stopped while selecting its GPU (`torch.cuda.set_device`), the exception cut from the "
            "input: most often a device index beyond the GPUs it can see (a local rank larger than the GPUs "
            "the scheduler or CUDA_VISIBLE_DEVICES left each process, as with Slurm's --ntasks-per-gpu or "
            "--gpus-per-task)",
            "Each process selects `cuda:<local rank>`; where the launcher gives every process one GPU of its "
            "own, that GPU is `cuda:0` in it. Ask for the exception line (`invalid device ordinal` confirms) "
            "and compare the processes per node with the GPUs each one sees.",
            "debugging-guide.md § 20",
            "Probably a process asking for a GPU it cannot see (the traceback stops in "
            "torch.cuda.set_device)",
        )
    if where is None or _OUTSIDE.search(where["file"]) or _FETCHING.search(where["function"]):
        return Outcome()
    at = f"{where['file'].rsplit('/', 1)[-1]}:{where['line']} in {where['function']}"
    return _guess(
        incident,
        frame,
        CUT_TRACEBACK_ID,
        Category.SOFTWARE,
        f"A Python traceback ended the process, its exception line cut from the input: the deepest frame is "
        f"{at}, in the training code or a library it calls",
        "The frames say where the exception was raised, not what it was: the line after the last frame "
        "names it (the exception class and its message). Ask for the traceback to its end, on every rank "
        "that printed one; the earliest rank's is the origin.",
        "debugging-guide.md § 15",
        f"Probably an exception in the code the traceback ran (deepest frame {at}); its exception line is "
        "not in the input",
    )


def _guess(
    incident: Incident,
    frame: Event,
    finding_id: str,
    category: Category,
    title: str,
    detail: str,
    reference: str,
    cause: str,
) -> Outcome:
    """A low-confidence cause read from the deepest frame of a traceback cut before its exception."""
    finding = Finding(
        id=finding_id,
        status=Status.FAIL,
        priority=Priority.P0,
        title=title,
        reference=reference,
        detail=detail,
        ranks=[frame.rank] if frame.rank is not None else [],
        nodes=[node] if (node := incident.node_of_line(frame)) else [],
        evidence=[evidence(frame, incident.topology)],
    )
    return blamed(
        incident,
        finding,
        category=category,
        weight=_WEIGHT,
        title=cause,
        ranks=finding.ranks,
        first=frame,
        confidence="low",
    )
