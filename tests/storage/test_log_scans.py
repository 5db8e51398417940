"""``storage.log_blocks.scan_logs``: the one way logs' blocks are listed on storage, batched local reads included.

Checked against the parser run on the file's bytes read independently (``Path.read_bytes``), on a local table
folder: small logs (read 32 at a time with ``pread``), logs over ``READ_AHEAD`` (by their two ends when they hold one
block, else streamed), multi-block logs, a log that grew after it was listed, one shorter than listed (scanned as the
stream path scans it), a missing one and a folder standing under a log's name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evt_toolkit.errors import ObjectNotFoundError, StorageError
from evt_toolkit.format.log_writer import encode_block, encode_rollback_command_block
from evt_toolkit.format.logfile import READ_AHEAD, BlockType, LogBlock, scan_log_blocks
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.log_blocks import scan_log, scan_logs
from tests.conftest import S3Server

AVRO_DATA = 3


def _data_block(instant: str, content_len: int) -> bytes:
    return encode_block(AVRO_DATA, {0: instant, 2: '{"type":"record","name":"r","fields":[]}'}, b"\x07" * content_len)


def _logs(root: Path, n: int) -> list[tuple[str, int]]:
    """``n`` logs of one to three blocks; every seventh holds a block larger than ``READ_AHEAD``."""
    datas = []
    for i in range(n):
        data = _data_block(f"2025010100000{i % 10:01d}000", 100 + 37 * i)
        if i % 2:
            data += encode_rollback_command_block(f"2025010200000{i % 10}000", f"2025010100000{i % 10}000")
        if i % 7 == 3:
            data += _data_block("20250103000000000", READ_AHEAD + 10)
        datas.append(data)
    return _write_logs(root, "f", datas, partitions=3)


def _write_logs(root: Path, name: str, datas: list[bytes], partitions: int = 2) -> list[tuple[str, int]]:
    """One log per ``datas`` item over ``partitions`` partitions, named ``.<name><i>``; their ``(rel, size)``."""
    out = []
    for i, data in enumerate(datas):
        rel = f"p{i % partitions}/.{name}{i}_20250101000000000.log.1_0-1-0"
        root.joinpath(rel).parent.mkdir(parents=True, exist_ok=True)
        root.joinpath(rel).write_bytes(data)
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


def test_read_ends_puts_each_error_in_place_and_counts_each_read(tmp_path: Path) -> None:
    tmp_path.joinpath("a").write_bytes(b"0123456789")
    tmp_path.joinpath("c").write_bytes(b"xyz")
    storage = TableStorage.from_uri(str(tmp_path))
    before = storage.request_counts()
    out = storage.read_ends([("a", 4), ("b", 4), ("c", 10), ("a", 0), ("a", 9)], 3, 2)
    assert out[0] == b"0123" and out[2] == (b"xyz", b"") and out[3] == b"" and out[4] == (b"012", b"78")
    assert isinstance(out[1], ObjectNotFoundError) and "b" in str(out[1])
    counts = storage.request_counts() - before
    assert counts.get == 7 and counts.bytes_read == 12  # two reads for each file read by its ends


def test_read_ends_on_an_object_store(s3_server: S3Server, s3_bucket: str) -> None:
    storage = TableStorage.from_uri(f"s3a://{s3_bucket}/t", s3_server.options)
    storage.write_bytes_atomic("a", bytes(range(200)))
    out = storage.read_ends([("a", 10), ("gone", 10), ("a", 150)], 40, 12)
    assert out[0] == bytes(range(10)) and out[2] == (bytes(range(40)), bytes(range(138, 150)))
    assert isinstance(out[1], ObjectNotFoundError)


def _one_block_logs(root: Path, schema_fields: int, n: int) -> list[tuple[str, int]]:
    """``n`` one-block logs of 4 KiB of content and more, with a schema header of ``schema_fields`` fields (wide
    enough, it does not fit in the scan's first head)."""
    schema = json.dumps(
        {"type": "record", "name": "r", "fields": [{"name": f"c{i:04d}", "type": "long"} for i in range(schema_fields)]}
    )
    datas = [
        encode_block(
            AVRO_DATA, {0: f"2025010100000{i % 10}000", 2: schema, 100: str(1000 + i)}, b"\x05" * (4096 + 97 * i)
        )
        for i in range(n)
    ]
    return _write_logs(root, f"g{schema_fields}-", datas)


@pytest.mark.parametrize("schema_fields", [3, 150, 1520])
def test_one_block_logs_read_by_their_ends_scan_as_the_whole_file(tmp_path: Path, schema_fields: int) -> None:
    """Logs above the head-and-tail bound are read by their two ends when their headers fit in the head (a few bytes
    of each log read). A wide schema's headers (150 columns) do not fit: the first batch of 32 logs is read again
    whole, and the scan goes on with a head of those headers' length and a quarter more. Headers too long for that
    (1,520 columns) leave the rest of the scan reading whole. The answer is the same every way."""
    logs = _one_block_logs(tmp_path, schema_fields, 70)
    storage = TableStorage.from_uri(str(tmp_path))
    before = storage.request_counts()
    got = list(scan_logs(storage, logs))
    read = (storage.request_counts() - before).bytes_read
    for (rel, size), blocks in zip(logs, got, strict=True):
        assert blocks == _expected(tmp_path, rel, size), rel
        assert [b.min_event_time_header for b in blocks] == [1000 + int(rel.split("-")[1].split("_")[0])]
    total = sum(size for _, size in logs)
    first, rest = logs[:32], logs[32:]
    if schema_fields == 3:
        # a log above the bound is read by its 4,096 + 12 bytes of ends only; the content between is not read
        assert read == sum(min(size, 4096 + 12) for _, size in logs) < total * 0.6
        return
    need = got[0][0].content_offset
    assert need > 4096 and len({blocks[0].content_offset for blocks in got}) == 1
    retried = sum(4096 + 12 + size for _, size in first)
    if schema_fields == 150:
        head = need + need // 4
        assert read == retried + sum(min(size, head + 12) for _, size in rest) < total * 1.05
        assert all(size > head + 12 for _, size in rest)  # the rest were read by their ends
    else:
        assert need + need // 4 + 12 > READ_AHEAD and all(size <= READ_AHEAD for _, size in logs)
        assert read == retried + sum(size for _, size in rest)


def test_a_one_block_log_shorter_or_longer_than_listed_is_scanned_as_listed(tmp_path: Path) -> None:
    logs = _one_block_logs(tmp_path, 3, 8)
    rel, size = logs[5]
    assert size > 4096 + 12
    storage = TableStorage.from_uri(str(tmp_path))
    with tmp_path.joinpath(rel).open("ab") as f:  # grown after the listing: the listed bytes are what is scanned
        f.write(_data_block("20250105000000000", 50))
    assert scan_log(storage, rel, size) == _expected(tmp_path, rel, size)
    blocks = scan_log(storage, rel, size + 40 + 6 + 8 + 50 + 100)  # listed longer than the file holds
    with storage.open_input(rel) as f:
        assert blocks == list(scan_log_blocks(f, size + 40 + 6 + 8 + 50 + 100, rel))


def test_multi_block_logs_are_read_whole_after_one_batch_of_trying_their_ends(tmp_path: Path) -> None:
    """Logs of two blocks are not answered by their ends: each is read again whole, and once a batch of 32 was mostly
    such logs, the rest of the scan reads its small logs whole at once (no second read each)."""
    logs = _write_logs(
        tmp_path,
        "m",
        [_data_block("20250101000000000", 3000 + i) + _data_block("20250102000000000", 2000) for i in range(70)],
    )
    assert all(4096 + 12 < size <= READ_AHEAD for _, size in logs)
    storage = TableStorage.from_uri(str(tmp_path))
    before = storage.request_counts()
    got = list(scan_logs(storage, logs))
    read = (storage.request_counts() - before).bytes_read
    for (rel, size), blocks in zip(logs, got, strict=True):
        assert blocks == _expected(tmp_path, rel, size) and len(blocks) == 2, rel
    first = logs[:32]
    assert read == sum(4096 + 12 + size for _, size in first) + sum(size for _, size in logs[32:])


def test_large_one_block_logs_are_read_by_their_ends(tmp_path: Path) -> None:
    """A log of one block over ``READ_AHEAD`` (a compaction-sized append) is known by its two ends, like a small one:
    two reads of 4,096 + 12 bytes in all per log, no stream, the content between never read."""
    logs = _write_logs(
        tmp_path, "big", [_data_block(f"2025010100000{i % 10}000", READ_AHEAD + 1000 * i) for i in range(40)]
    )
    storage = TableStorage.from_uri(str(tmp_path))
    before = storage.request_counts()
    got = list(scan_logs(storage, logs))
    counts = storage.request_counts() - before
    for (rel, size), blocks in zip(logs, got, strict=True):
        assert blocks == _expected(tmp_path, rel, size) and len(blocks) == 1, rel
    assert counts.get == 2 * len(logs)  # an open of a stream would count one more each
    assert counts.bytes_read == len(logs) * (4096 + 12) < sum(size for _, size in logs) // 10


def test_large_multi_block_logs_go_to_streams_after_one_batch_of_trying_their_ends(tmp_path: Path) -> None:
    """Logs over ``READ_AHEAD`` of several blocks: the first batch of 32 is read by the ends, then each through a
    stream; the rest of the scan goes straight to streams (reads of a local stream are not counted in bytes, its
    open is one request)."""
    logs = _write_logs(
        tmp_path,
        "bm",
        [
            _data_block("20250101000000000", READ_AHEAD + 10 * i) + _data_block("20250102000000000", 3000)
            for i in range(50)
        ],
    )
    storage = TableStorage.from_uri(str(tmp_path))
    before = storage.request_counts()
    got = list(scan_logs(storage, logs))
    counts = storage.request_counts() - before
    for (rel, size), blocks in zip(logs, got, strict=True):
        assert blocks == _expected(tmp_path, rel, size) and len(blocks) == 2, rel
    assert counts.bytes_read == 32 * (4096 + 12)
    assert counts.get == 32 * 2 + len(logs)  # the first batch's ends, then one stream per log
