"""``storage.log_blocks.scan_logs``: the one way logs' blocks are listed on storage, batched local reads included.

Checked against the parser run on the file's bytes read independently (``Path.read_bytes``), on a local table
folder: small logs (read 32 at a time with ``pread``), a log over ``READ_AHEAD`` (streamed), multi-block logs, a log
that grew after it was listed, one shorter than listed (scanned as the stream path scans it), a missing one and a
folder standing under a log's name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evt_toolkit.errors import ObjectNotFoundError, StorageError
from evt_toolkit.format.log_writer import encode_block, encode_rollback_command_block
from evt_toolkit.format.logfile import READ_AHEAD, BlockType, LogBlock, scan_log_blocks
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.log_blocks import scan_log, scan_logs

AVRO_DATA = 3


def _data_block(instant: str, content_len: int) -> bytes:
    return encode_block(AVRO_DATA, {0: instant, 2: '{"type":"record","name":"r","fields":[]}'}, b"\x07" * content_len)


def _logs(root: Path, n: int) -> list[tuple[str, int]]:
    """``n`` logs of one to three blocks; every seventh holds a block larger than ``READ_AHEAD``."""
    out = []
    for i in range(n):
        rel = f"p{i % 3}/.f{i}_20250101000000000.log.1_0-1-0"
        data = _data_block(f"2025010100000{i % 10:01d}000", 100 + 37 * i)
        if i % 2:
            data += encode_rollback_command_block(f"2025010200000{i % 10}000", f"2025010100000{i % 10}000")
        if i % 7 == 3:
            data += _data_block("20250103000000000", READ_AHEAD + 10)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out.append((rel, len(data)))
    return out


def _expected(root: Path, rel: str, size: int) -> list[LogBlock]:
    return list(scan_log_blocks(root.joinpath(rel).read_bytes()[:size], size, rel))


def test_scan_logs_matches_the_parser_on_independently_read_bytes(tmp_path: Path) -> None:
    logs = _logs(tmp_path, 75)  # more than two batches of 32, small and large logs mixed
    assert any(size > READ_AHEAD for _, size in logs) and any(size <= READ_AHEAD for _, size in logs)
    storage = TableStorage.from_uri(str(tmp_path))
    got = list(scan_logs(storage, logs))
    assert len(got) == len(logs)
    for (rel, size), blocks in zip(logs, got, strict=True):
        assert blocks == _expected(tmp_path, rel, size), rel
        assert blocks and blocks[0].block_type is BlockType.AVRO_DATA
    assert scan_log(storage, *logs[5]) == got[5]


def test_bytes_appended_after_the_listing_are_not_read(tmp_path: Path) -> None:
    logs = _logs(tmp_path, 4)
    rel, size = logs[0]
    with tmp_path.joinpath(rel).open("ab") as f:  # an append (a v6 writer) after the listing
        f.write(_data_block("20250105000000000", 50))
    storage = TableStorage.from_uri(str(tmp_path))
    blocks = scan_log(storage, rel, size)
    assert blocks == _expected(tmp_path, rel, size)
    assert len(scan_log(storage, rel, tmp_path.joinpath(rel).stat().st_size)) == len(blocks) + 1


def test_a_log_shorter_than_listed_is_scanned_as_the_stream_scans_it(tmp_path: Path) -> None:
    logs = _logs(tmp_path, 2)
    rel, size = logs[1]
    storage = TableStorage.from_uri(str(tmp_path))
    blocks = scan_log(storage, rel, size + 40)  # the listing said 40 bytes more than the file holds
    with storage.open_input(rel) as f:
        assert blocks == list(scan_log_blocks(f, size + 40, rel))
    # the last block's end is not where the listed size says the file goes on: it is not taken for sound
    assert blocks[-1].block_type is BlockType.CORRUPT
    assert blocks[:-1] == _expected(tmp_path, rel, size)[:-1]


def test_a_missing_log_fails_when_reached_after_the_logs_before_it(tmp_path: Path) -> None:
    logs = _logs(tmp_path, 6)
    gone, _ = logs[3]
    tmp_path.joinpath(gone).unlink()
    storage = TableStorage.from_uri(str(tmp_path))
    it = scan_logs(storage, logs, full_paths=True)
    for rel, size in logs[:3]:
        blocks = next(it)
        assert blocks[0].log_file == storage.full_path(rel)
        assert [b.offset for b in blocks] == [b.offset for b in _expected(tmp_path, rel, size)]
    with pytest.raises(ObjectNotFoundError, match=gone.split("/")[1]):
        next(it)


def test_a_folder_under_a_log_name_is_unreadable_not_missing(tmp_path: Path) -> None:
    logs = _logs(tmp_path, 2)
    rel = "p0/.f9_20250101000000000.log.1_0-1-0"
    tmp_path.joinpath(rel).mkdir(parents=True)
    storage = TableStorage.from_uri(str(tmp_path))
    with pytest.raises(StorageError, match="directory") as info:
        list(scan_logs(storage, [*logs, (rel, 10)]))
    assert not isinstance(info.value, ObjectNotFoundError)


def test_read_prefixes_puts_each_error_in_place_and_counts_one_get_per_file(tmp_path: Path) -> None:
    tmp_path.joinpath("a").write_bytes(b"0123456789")
    tmp_path.joinpath("c").write_bytes(b"xyz")
    storage = TableStorage.from_uri(str(tmp_path))
    before = storage.request_counts()
    out = storage.read_prefixes([("a", 4), ("b", 4), ("c", 10), ("a", 0)])
    assert out[0] == b"0123" and out[2] == b"xyz" and out[3] == b""
    assert isinstance(out[1], ObjectNotFoundError) and "b" in str(out[1])
    counts = storage.request_counts() - before
    assert counts.get == 4 and counts.bytes_read == 7
