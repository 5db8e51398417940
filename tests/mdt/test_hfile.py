"""HFile v3 as Hudi writes it (format/hfile.py): real metadata-table files decoded, Hudi 1.1's bytes reproduced."""

from __future__ import annotations

import glob
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.errors import MetadataTableError, UnsupportedFeatureError
from evt_toolkit.format.hfile import CODEC_NONE, encode_hfile, java_hashmap_order, read_hfile
from evt_toolkit.format.logfile import BlockType, read_log_blocks_bytes
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR


def _files_partition_blocks() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for path in sorted(glob.glob(str(TABLES_DIR / "*/*/.hoodie/metadata/files/.files-*"))):
        if ".log." not in Path(path).name or path.endswith(".crc"):
            continue  # the files partition's HFile base files and Hadoop's .crc side files are not logs
        data = Path(path).read_bytes()
        for b in read_log_blocks_bytes(data, path):
            if b.block_type is BlockType.HFILE_DATA:
                out.append((path, data[b.content_offset : b.content_offset + b.content_length]))
    return out


@SKIP_NO_SHARED
def test_every_hudi_1_1_log_block_is_rebuilt_byte_for_byte() -> None:
    """Decode every HFILE_DATA block of the fixtures' files partitions; re-encode its entries with the same file
    info: Hudi 1.1-written blocks (comparator + NULL checksums) come out identical, 1.0 (HBase-written) ones decode."""
    blocks = _files_partition_blocks()
    rebuilt = hbase = 0
    for path, content in blocks:
        h = read_hfile(content, path)
        assert h.entries and h.schema_json and "HoodieMetadataRecord" in h.schema_json
        checksum_type = content[24]
        if checksum_type != 0:  # HBase's writer (Hudi 1.0): CRC32C checksums, full keys in the index
            hbase += 1
            continue
        created = struct.unpack(">q", h.file_info["hfile.CREATE_TIME_TS"])[0]
        again = encode_hfile(
            list(h.entries), file_info={"schema": h.file_info["schema"]}, create_time_ms=created, gzip_os=content[42]
        )
        assert again == content, path
        rebuilt += 1
    assert rebuilt >= 40 and hbase >= 5, (rebuilt, hbase)


@SKIP_NO_SHARED
def test_base_hfiles_with_bloom_meta_blocks_decode() -> None:
    paths = sorted(glob.glob(str(TABLES_DIR / "*/*/.hoodie/metadata/*/*.hfile")))
    assert len(paths) > 20
    for path in paths:
        h = read_hfile(Path(path).read_bytes(), path)
        assert len(h.entries) == h.trailer.entry_count
        keys = [k.encode() for k, _ in h.entries]
        assert keys == sorted(keys), path


def test_file_info_follows_java_hashmap_order() -> None:
    # The order of a real 1.1 log block's file info (checked byte for byte above) and of a base file's.
    assert java_hashmap_order(
        [
            "MAX_MEMSTORE_TS_KEY",
            "schema",
            "hfile.LASTKEY",
            "hfile.AVG_KEY_LEN",
            "hfile.CREATE_TIME_TS",
            "hfile.AVG_VALUE_LEN",
            "KEY_VALUE_VERSION",
        ]
    ) == [
        "schema",
        "hfile.LASTKEY",
        "hfile.AVG_VALUE_LEN",
        "hfile.AVG_KEY_LEN",
        "KEY_VALUE_VERSION",
        "MAX_MEMSTORE_TS_KEY",
        "hfile.CREATE_TIME_TS",
    ]


_keys = st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=40, unique_by=lambda k: k.encode())


@settings(max_examples=40, deadline=None)
@given(keys=_keys, value_size=st.integers(0, 3000), small_blocks=st.booleans(), gz=st.booleans())
def test_round_trip(keys: list[str], value_size: int, small_blocks: bool, gz: bool) -> None:
    entries = [
        (k, (k.encode() * (value_size // max(1, len(k)) + 1))[:value_size]) for k in sorted(keys, key=str.encode)
    ]
    data = encode_hfile(
        entries, create_time_ms=7, block_size=256 if small_blocks else 1 << 20, codec=1 if gz else CODEC_NONE
    )
    h = read_hfile(data, "x.hfile")
    assert list(h.entries) == entries
    assert h.trailer.data_index_count >= (2 if small_blocks and len(entries) > 1 and value_size > 256 else 1)
    assert h.file_info["hfile.LASTKEY"][2:] == entries[-1][0].encode()


def test_writer_refuses_unsorted_or_empty_input() -> None:
    with pytest.raises(MetadataTableError, match="strictly increasing"):
        encode_hfile([("b", b""), ("a", b"")], create_time_ms=0)
    with pytest.raises(MetadataTableError, match="strictly increasing"):
        encode_hfile([("a", b""), ("a", b"")], create_time_ms=0)
    with pytest.raises(MetadataTableError, match="at least one"):
        encode_hfile([], create_time_ms=0)


def test_reader_names_the_file_on_bad_input() -> None:
    good = encode_hfile([("a", b"1")], create_time_ms=0)
    with pytest.raises(MetadataTableError, match=r"y\.hfile.*trailer"):
        read_hfile(b"\x00" * 10, "y.hfile")
    with pytest.raises(MetadataTableError, match=r"z\.hfile"):
        read_hfile(b"\x00" * 100 + good[100:], "z.hfile")
    bad_version = good[:-4] + b"\x00\x00\x00\x02"
    with pytest.raises(UnsupportedFeatureError, match="major version 2"):
        read_hfile(bad_version, "v.hfile")
    bad_codec = bytearray(good)
    bad_codec[-4096 + 8 :] = bytes(bad_codec[-4096 + 8 :]).replace(b"\x60\x01", b"\x60\x05", 1)
    with pytest.raises(UnsupportedFeatureError, match="codec id 5"):
        read_hfile(bytes(bad_codec), "c.hfile")
