"""Property test: mutated real log files either decode or fail with an ``EvtError``, promptly.

Each example takes one real log file (Avro, delete, Parquet and command blocks), applies a handful of random
byte mutations (bit flips, overwrites, inserts, deletes, truncation), then scans it and decodes every data
and delete block. Anything other than success or an ``EvtError`` subclass, or taking longer than a few
seconds, fails the test. ``EVT_FUZZ_EXAMPLES`` sets the number of examples per file (default 60).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evt_toolkit.errors import EvtError
from evt_toolkit.format import logfile
from evt_toolkit.format.log_content import read_block_records
from evt_toolkit.format.logfile import (
    MAGIC,
    BlockType,
    LogBlock,
    read_log_blocks_bytes,
    scan_log_blocks,
    scan_log_bytes,
    scan_log_ends,
)
from tests.conftest import LOG_FILES_DIR, SKIP_NO_SHARED, TABLES_DIR

FUZZ_EXAMPLES = int(os.environ.get("EVT_FUZZ_EXAMPLES", "60"))
PER_EXAMPLE_SECONDS = 10
#: The real-log properties' settings: ``EVT_FUZZ_EXAMPLES`` examples, derandomized unless ``EVT_FUZZ_RANDOM`` is set.
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("EVT_FUZZ_RANDOM") is None,
)


def fuzz_inputs() -> list[Path]:
    """The four reference logs plus a few table logs with other shapes (multi-block, Parquet, nested types)."""
    if not LOG_FILES_DIR.is_dir():
        return []
    files = sorted(p for p in LOG_FILES_DIR.glob("*/.*") if p.is_file())
    for fixture in ("mor_table_all_data_types", "mor_table_parquet_log_block", "mor_table_delete_ord_decimal"):
        table_logs = sorted(
            p
            for p in (TABLES_DIR / fixture).rglob(".*.log.*")
            if p.is_file() and not p.name.endswith(".crc") and ".hoodie" not in p.parts
        )
        files.extend(table_logs[:1])
    return files


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fails the example instead of hanging the suite (SIGALRM; the suite runs on Linux)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"decoding took longer than {seconds}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def scan_and_decode(data: bytes) -> None:
    f = io.BytesIO(data)
    for block in scan_log_blocks(f, len(data), "fuzz.log"):
        if block.is_data or block.block_type is BlockType.DELETE:
            try:
                read_block_records(f, block)
            except EvtError:
                # A block whose content is damaged must not stop the scan of the following blocks.
                continue


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(min_value=0), st.integers(min_value=0, max_value=7)),
    st.tuples(st.just("overwrite"), st.integers(min_value=0), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("insert"), st.integers(min_value=0), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), st.integers(min_value=0), st.integers(min_value=1, max_value=16)),
    st.tuples(st.just("truncate"), st.integers(min_value=0), st.just(0)),
    # Big-endian size-like values dropped on top of length fields.
    st.tuples(
        st.just("overwrite"),
        st.integers(min_value=0),
        st.sampled_from([2**31 - 1, 2**62, -1, 0, 1 << 20]).map(lambda n: struct.pack(">q", n)),
    ),
)


def mutate(data: bytes, ops: list[tuple[str, int, object]]) -> bytes:
    buf = bytearray(data)
    for kind, where, arg in ops:
        if not buf:
            break
        pos = where % len(buf)
        if kind == "flip":
            assert isinstance(arg, int)
            buf[pos] ^= 1 << arg
        elif kind == "overwrite":
            assert isinstance(arg, bytes)
            buf[pos : pos + len(arg)] = arg
        elif kind == "insert":
            assert isinstance(arg, bytes)
            buf[pos:pos] = arg
        elif kind == "delete":
            assert isinstance(arg, int)
            del buf[pos : pos + arg]
        else:
            del buf[pos:]
    return bytes(buf)


@SKIP_NO_SHARED
@pytest.mark.parametrize("path", fuzz_inputs(), ids=lambda p: p.parent.name)
def test_mutated_real_logs_fail_cleanly(path: Path) -> None:
    original = path.read_bytes()
    scan_and_decode(original)  # sanity: the unmutated file is sound

    @FUZZ_SETTINGS
    @given(ops=st.lists(mutation, min_size=1, max_size=4))
    def check(ops: list[tuple[str, int, object]]) -> None:
        data = mutate(original, ops)
        with time_limit(PER_EXAMPLE_SECONDS), contextlib.suppress(EvtError):
            scan_and_decode(data)

    check()


def scan_outcome(source: object, size: int, read_ahead: int) -> list[LogBlock] | tuple[str, str, object]:
    """The blocks of a scan, or the error it ended with (type, message, offset)."""
    saved = logfile.READ_AHEAD
    logfile.READ_AHEAD = read_ahead
    try:
        return list(scan_log_blocks(source, size, "fuzz.log"))  # type: ignore[arg-type]
    except EvtError as exc:
        return (type(exc).__name__, str(exc), getattr(exc, "offset", None))
    finally:
        logfile.READ_AHEAD = saved


@SKIP_NO_SHARED
@pytest.mark.parametrize("path", fuzz_inputs()[:4], ids=lambda p: p.parent.name)
def test_read_size_does_not_change_the_outcome(path: Path) -> None:
    """The scanner reads a file in windows; however small they are, it sees what a scan of the bytes sees."""
    original = path.read_bytes()

    @settings(FUZZ_SETTINGS, max_examples=max(10, FUZZ_EXAMPLES // 2))
    @given(ops=st.lists(mutation, min_size=0, max_size=3), read_ahead=st.sampled_from([1, 7, 64, 1 << 16]))
    def check(ops: list[tuple[str, int, object]], read_ahead: int) -> None:
        data = mutate(original, ops)
        expected = scan_outcome(data, len(data), read_ahead)
        assert scan_outcome(io.BytesIO(data), len(data), read_ahead) == expected
        assert scan_outcome(memoryview(data), len(data), read_ahead) == expected
        # pyarrow's files (the storage layer's) are read with read_at instead of seek + read.
        assert scan_outcome(pa.BufferReader(data), len(data), read_ahead) == expected
        # The storage layer's list of a log read whole (one parse for a log of one sound block) says the same.
        try:
            listed: list[LogBlock] | tuple[str, str, object] = scan_log_bytes(data, len(data), "fuzz.log")
        except EvtError as exc:
            listed = (type(exc).__name__, str(exc), getattr(exc, "offset", None))
        assert listed == expected

    check()


@SKIP_NO_SHARED
@pytest.mark.parametrize("path", fuzz_inputs(), ids=lambda p: p.parent.name)
def test_a_log_known_by_its_two_ends_is_known_as_its_whole_bytes_say(path: Path) -> None:
    """``scan_log_ends`` answers from a log's first and last bytes only what a scan of every byte answers.

    On the real one-block logs: the first bytes through the content length (and the 12 bytes of footer count and
    reverse pointer) are enough, one byte fewer is not. On mutated copies, with other head and tail sizes: whenever it
    answers, the answer equals the full scan's blocks (a mutation of the skipped content leaves the block sound).
    """
    original = path.read_bytes()
    whole = scan_outcome(original, len(original), 1 << 16)
    assert isinstance(whole, list) and len(whole) == 1
    need = whole[0].content_offset
    assert scan_log_ends(original[:need], original[-12:], len(original), "fuzz.log") == whole
    assert scan_log_ends(original[: need - 1], original[-12:], len(original), "fuzz.log") is None
    assert scan_log_ends(original[:need], original[-11:], len(original), "fuzz.log") is None
    assert scan_log_ends(original, original[-12:], len(original), "fuzz.log") is None  # the head is the whole file
    answered = 0

    @FUZZ_SETTINGS
    @given(
        ops=st.lists(mutation, min_size=0, max_size=3),
        head=st.sampled_from([26, 100, need, need + 40, 4096]),
        tail=st.sampled_from([12, 20, 64]),
    )
    @example(ops=[], head=need, tail=12)
    def check(ops: list[tuple[str, int, object]], head: int, tail: int) -> None:
        nonlocal answered
        data = mutate(original, ops)
        got = scan_log_ends(data[:head], data[-tail:], len(data), "fuzz.log")
        if got is not None:
            answered += 1
            assert got == scan_outcome(data, len(data), 1 << 16)

    check()
    assert answered  # the unmutated file with a head of `need` bytes is among the examples, and it is answered


def header_entries_at(data: bytes, offset: int) -> dict[int, str]:
    """The header map of the sound block whose magic is at ``offset``, read from its bytes with ``struct`` alone
    (magic, block size, version, type, entry count, then per entry key, length and UTF-8 value; a repeated key keeps
    its last value, as Java's ``HashMap`` does)."""
    p = offset + len(MAGIC) + 8 + 4 + 4
    (count,) = struct.unpack_from(">i", data, p)
    p += 4
    out: dict[int, str] = {}
    for _ in range(count):
        key, n = struct.unpack_from(">ii", data, p)
        out[key] = data[p + 8 : p + 8 + n].decode("utf-8")
        p += 8 + n
    return out


@SKIP_NO_SHARED
@pytest.mark.parametrize("path", fuzz_inputs(), ids=lambda p: p.parent.name)
def test_header_values_are_what_each_block_s_bytes_say(path: Path) -> None:
    """Long header values (a writer schema) are decoded once and shared by the blocks that repeat them; a block's
    header still says exactly what its own bytes say. Mutated copies — flips in the first block's headers, where a
    value keeps its length but not its bytes, and anything else — are scanned right after the original (whose values
    are then the shared ones), and every sound block's header is compared with :func:`header_entries_at`."""
    original = path.read_bytes()
    [first, *_] = read_log_blocks_bytes(original, "orig.log")
    headers_end = first.content_offset - 8  # the first block's header entries end before its content length
    in_headers = st.tuples(st.just("flip"), st.integers(min_value=30, max_value=headers_end - 1), st.integers(0, 7))
    compared = 0

    @FUZZ_SETTINGS
    @given(ops=st.lists(st.one_of(in_headers, in_headers, mutation), min_size=1, max_size=3))
    @example(ops=[("flip", headers_end - 1, 0)])
    def check(ops: list[tuple[str, int, object]]) -> None:
        nonlocal compared
        data = mutate(original, ops)
        read_log_blocks_bytes(original, "orig.log")
        try:
            blocks = read_log_blocks_bytes(data, "fuzz.log")
        except EvtError:
            return
        for b in blocks:
            if not b.is_corrupt:
                assert {k.value: v for k, v in b.header.items()} == header_entries_at(data, b.offset)
                compared += 1

    check()
    assert compared


@given(data=st.binary(max_size=256))
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
def test_random_bytes_fail_cleanly(data: bytes) -> None:
    with time_limit(PER_EXAMPLE_SECONDS):
        with contextlib.suppress(EvtError):
            scan_and_decode(data)
        with contextlib.suppress(EvtError):
            scan_and_decode(MAGIC + data)


def test_absurd_block_size_is_not_allocated() -> None:
    import tracemalloc

    data = MAGIC + struct.pack(">q", 2**62) + struct.pack(">ii", 1, 3) + b"\x00" * 32
    tracemalloc.start()
    started = time.monotonic()
    try:
        with time_limit(PER_EXAMPLE_SECONDS):
            blocks = read_log_blocks_bytes(data, "huge.log")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 1
    assert peak < 1 << 20
    assert [b.block_type for b in blocks] == [BlockType.CORRUPT]
    assert blocks[0].size == len(data)
