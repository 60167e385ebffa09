"""The streaming line reader: bounded memory, exact line numbers, damage read through."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from hyperpod_nccl.triage import lines
from hyperpod_nccl.triage.lines import (
    CHUNK_BYTES,
    HEAD_LINES,
    MAX_LINE_BYTES,
    NO_NUMPY,
    BinaryInput,
    ReadReport,
    select_lines,
)


@pytest.fixture(autouse=True, params=["numpy", "bytes.count"])
def line_counter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test twice: lines numbered by numpy's newline search and by bytes.count."""
    if request.param == "numpy":
        pytest.importorskip("numpy", reason="numpy is not installed here")
        monkeypatch.delenv(NO_NUMPY, raising=False)
    else:
        monkeypatch.setenv(NO_NUMPY, "1")
    monkeypatch.setattr(lines._COUNTER, "numpy", None)
    lines._numpy.cache_clear()
    lines.load_line_counter()  # numpy, or bytes.count where NO_NUMPY is set
    yield
    lines._numpy.cache_clear()


def test_numpy_is_loaded_only_for_an_input_that_pays_for_its_import(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy", reason="numpy is not installed here")
    monkeypatch.delenv(NO_NUMPY, raising=False)
    monkeypatch.setattr(lines._COUNTER, "numpy", None)
    lines._numpy.cache_clear()
    lines.prepare_line_counter(lines.NUMPY_PAYS_FROM_BYTES - 1)
    assert lines._COUNTER.numpy is None
    lines.prepare_line_counter(lines.NUMPY_PAYS_FROM_BYTES)
    assert lines._COUNTER.numpy is not None


def find_word(word: bytes):
    def find(view: memoryview) -> list[tuple[int, int]]:
        block = bytes(view)
        hits, position = [], block.find(word)
        while position >= 0:
            hits.append((position, 0))
            position = block.find(word, position + 1)
        return hits

    return find


def read(data: bytes, word: bytes = b"Watchdog") -> tuple[list[tuple[int, str]], ReadReport]:
    report = ReadReport()
    selected = list(select_lines(io.BytesIO(data), find_word(word), report))
    return selected, report


def filler(count: int) -> bytes:
    return b"".join(b"step=%d loss=2.0\n" % i for i in range(count))


def test_only_the_head_and_lines_with_a_hit_are_yielded_with_1_based_numbers() -> None:
    data = filler(HEAD_LINES + 10) + b"[Rank 3] Watchdog caught collective operation timeout\n" + filler(5)
    selected, report = read(data)
    assert [number for number, _ in selected] == [*range(1, HEAD_LINES + 1), HEAD_LINES + 11]
    assert selected[-1][1] == "[Rank 3] Watchdog caught collective operation timeout"
    assert report.lines == HEAD_LINES + 16


def test_crlf_is_stripped_and_invalid_utf8_is_replaced_not_fatal() -> None:
    data = filler(HEAD_LINES) + b"bad \xff\xfe bytes Watchdog\r\n"
    selected, _ = read(data)
    assert selected[-1] == (HEAD_LINES + 1, "bad \ufffd\ufffd bytes Watchdog")


def test_a_line_across_a_chunk_boundary_is_read_whole_with_its_number() -> None:
    head = filler(HEAD_LINES)
    padding = b"x" * (CHUNK_BYTES - len(head) - 10) + b"\n"
    data = head + padding + b"[Rank 7] Watchdog caught\n"
    selected, _ = read(data)
    assert selected[-1] == (HEAD_LINES + 2, "[Rank 7] Watchdog caught")


def test_an_overlong_line_is_truncated_and_the_lines_after_it_keep_their_numbers() -> None:
    huge = b"Watchdog" + b"y" * (3 * CHUNK_BYTES) + b"\n"
    data = filler(HEAD_LINES) + huge + b"after Watchdog\n"
    selected, report = read(data)
    numbers = {number: text for number, text in selected}
    assert len(numbers[HEAD_LINES + 1]) <= MAX_LINE_BYTES
    assert numbers[HEAD_LINES + 2] == "after Watchdog"
    assert report.truncated and report.truncated[0][0] == HEAD_LINES + 1
    assert report.truncated[0][1] > 2 * CHUNK_BYTES


def test_a_file_without_a_final_newline_still_yields_its_last_line() -> None:
    selected, report = read(filler(HEAD_LINES) + b"last Watchdog")
    assert selected[-1] == (HEAD_LINES + 1, "last Watchdog")
    assert report.lines == HEAD_LINES + 1


def test_nul_bytes_at_the_start_mean_a_binary_file() -> None:
    with pytest.raises(BinaryInput):
        read(b"\x7fELF\x00\x00\x00 Watchdog\n")


def test_the_report_says_which_yielded_lines_hold_a_hit() -> None:
    data = filler(3) + b"[Rank 3] Watchdog caught\n" + filler(HEAD_LINES)
    report = ReadReport()
    flagged = [
        (number, report.hit) for number, _ in select_lines(io.BytesIO(data), find_word(b"Watchdog"), report)
    ]
    assert flagged[:5] == [(1, False), (2, False), (3, False), (4, True), (5, False)]
    assert [number for number, hit in flagged if hit] == [4]


def test_two_readers_interleaved_in_one_thread_do_not_share_a_buffer() -> None:
    first = filler(CHUNK_BYTES // 8) + b"one Watchdog\n"
    second = b"".join(b"other line %d\n" % i for i in range(CHUNK_BYTES // 4)) + b"two Watchdog\n"
    alone = [read(data)[0] for data in (first, second)]
    readers = [
        select_lines(io.BytesIO(data), find_word(b"Watchdog"), ReadReport()) for data in (first, second)
    ]
    together: list[list[tuple[int, str]]] = [[], []]
    for _ in range(HEAD_LINES + 1):
        for index, reader in enumerate(readers):
            together[index].append(next(reader))
    assert together == alone
