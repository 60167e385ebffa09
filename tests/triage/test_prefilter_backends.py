"""Hyperscan accelerates the prefilter; the regex scanners are the fallback. Both must select
every line holding an anchor, or a platform without hyperscan would diagnose differently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hyperpod_nccl.triage.lines import NO_NUMPY
from hyperpod_nccl.triage.patterns import EVENT_PATTERNS, FACT_PATTERNS, anchors_of
from hyperpod_nccl.triage.prefilter import (
    DISABLE_HYPERSCAN,
    _regex_scanner,
    compile_literals,
    hyperscan_matcher,
    minimal,
)

hyperscan = pytest.importorskip("hyperscan", reason="hyperscan has no wheel for this platform")

BLOCK = (
    b"0: [2026-03-02 10:00:20,000] [INFO] [train.py:241] [rank 0] step=1 loss=2.9427\n"
    b"[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
    b"operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
    b"Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
    b"ip-10-1-2-3:185:1027 [7] NCCL INFO [Service thread] Connection closed by localRank 0\n"
    b"\n[2026-01-01 12:08:32] node-0:194:710 [0] misc/socket.cc:50 NCCL WARN socketProgress: "
    b"Connection closed by remote peer\n"
    b"[Tue Mar  2 10:31:40 2026] NVRM: Xid (PCI:0000:53:00): 79, pid=1234, GPU has fallen off the bus.\n"
    b"plain progress line with nothing in it\n"
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def _lines(block: bytes, hits: list[tuple[int, int]]) -> set[bytes]:
    return {block[block.rfind(b"\n", 0, hit) + 1 : block.find(b"\n", hit)] for hit, _ in hits}


def test_both_scanners_select_every_line_holding_an_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DISABLE_HYPERSCAN, raising=False)
    literals = minimal([anchor.encode() for anchor in anchors_of(EVENT_PATTERNS + FACT_PATTERNS)])
    accelerated = hyperscan_matcher(literals)
    assert accelerated is not None
    selected = _lines(BLOCK, accelerated(BLOCK))
    # The regex scanners match anchors cut to 16 bytes, so they may also pick lines holding only
    # an anchor's prefix; the full patterns drop those later. Every line holding a whole anchor
    # must be picked by both.
    by_regex = _lines(BLOCK, _regex_scanner(literals)(BLOCK))
    assert selected <= by_regex
    assert not [line for line in by_regex - selected if any(anchor in line for anchor in literals)]
    assert any(b"Watchdog caught" in line for line in selected)
    assert any(b"NVRM: Xid" in line for line in selected)
    assert b"plain progress line with nothing in it" not in selected


EXAMPLE = Path(__file__).parents[2] / "examples" / "training-hang" / "logs"


def _triage_json(env_extra: dict[str, str]) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "triage", str(EXAMPLE), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env_extra},
    )
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def test_the_whole_triage_is_the_same_without_hyperscan_or_numpy() -> None:
    accelerated = _triage_json({})
    assert _triage_json({DISABLE_HYPERSCAN: "1"}) == accelerated
    assert _triage_json({NO_NUMPY: "1"}) == accelerated
    assert accelerated["root_cause"]["culprit_ranks"] == [43]


def test_pure_literals_and_escaped_regexes_find_the_same_anchors() -> None:
    literals = minimal([anchor.encode() for anchor in anchors_of(EVENT_PATTERNS + FACT_PATTERNS)])

    def matches(pure: bool) -> list[tuple[int, int]]:
        database = compile_literals(hyperscan, literals, pure=pure)
        found: list[tuple[int, int]] = []
        database.scan(BLOCK, match_event_handler=lambda index, _s, end, _f, _c: found.append((index, end)))
        return sorted(found)

    assert matches(pure=True) == matches(pure=False)
    assert len(matches(pure=True)) >= 8


def test_the_anchors_the_block_scan_found_pick_the_same_patterns_as_a_scan_of_the_message() -> None:
    from hyperpod_nccl.triage.prefixes import strip
    from hyperpod_nccl.triage.scanner import _log_dispatcher

    dispatcher = _log_dispatcher()
    found_at: dict[int, set[int]] = {}
    for offset, index in dispatcher.find_hits(BLOCK):
        found_at.setdefault(BLOCK.rfind(b"\n", 0, offset) + 1, set()).add(index)
    assert len(found_at) >= 5
    for start, found in found_at.items():
        message = strip(BLOCK[start : BLOCK.find(b"\n", start)].decode()).message
        by_block = dispatcher.candidates(message, frozenset(found))
        assert by_block == dispatcher.candidates(message), message
