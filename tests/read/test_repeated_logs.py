"""Which logs of a slice repeat an earlier one (a pending compaction's links read beside their targets): pure.

The end-to-end case — a run stopped among its links, read while pending — is in ``tests/safety/test_defects.py``.
"""

from __future__ import annotations

from evt_toolkit.format.logfile import BlockType, HeaderKey, LogBlock
from evt_toolkit.read.slice_reader import repeated_logs
from evt_toolkit.table.fs_view import LogFile

OLD, NEW = "20250101000000000", "20250102000000000"


def log(instant: str, version: int, token: str = "0-0-0") -> LogFile:
    name = f".f_{instant}.log.{version}_{token}"
    return LogFile(name, name, "f", instant, version, token, "", 1000)


def block(offset: int, instant: str, size: int = 100) -> LogBlock:
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: '{"type":"record"}'}
    return LogBlock("x", offset, size, BlockType.AVRO_DATA, 1, header, {}, offset + 40, size - 60)


def test_a_copy_of_an_earlier_log_named_with_another_instant_repeats_it() -> None:
    target = [block(0, "w1"), block(100, "w1")]
    per_log = [(log(OLD, 1), target), (log(OLD, 2), [block(0, "w2")]), (log(NEW, 1), list(target))]
    assert repeated_logs(per_log) == {log(NEW, 1).path}


def test_a_copy_made_before_the_target_grew_repeats_its_first_blocks() -> None:
    target = [block(0, "w1"), block(100, "w1"), block(200, "w3")]
    assert repeated_logs([(log(OLD, 1), target), (log(NEW, 1), target[:2])]) == {log(NEW, 1).path}


def test_logs_that_are_not_copies_are_replayed() -> None:
    target = [block(0, "w1"), block(100, "w1")]
    cases = [
        [block(0, "w4"), block(100, "w4")],  # another write, same sizes: its own instant
        [block(0, "w1"), block(100, "w1", size=120)],  # same instant, different bytes
        [*target, block(200, "w1")],  # longer than the earlier log
        [],  # empty
    ]
    for later in cases:
        assert repeated_logs([(log(OLD, 1), target), (log(NEW, 1), later)]) == set(), later


def test_two_logs_of_one_write_are_never_taken_for_copies() -> None:
    blocks = [block(0, "w1")]
    per_log = [(log(OLD, 1, "0-0-0"), blocks), (log(OLD, 1, "1-0-0"), list(blocks))]
    assert repeated_logs(per_log) == set()
