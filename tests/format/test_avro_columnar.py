"""The columnar Avro decoder (polars) and the record decoder (fastavro) give identical Arrow tables."""

from __future__ import annotations

import datetime as dt
import io
import os
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.errors import LogFormatError
from evt_toolkit.format import log_content as lc
from evt_toolkit.format.log_writer import encode_avro_data_block
from evt_toolkit.format.logfile import BlockType, read_block_content, read_log_blocks_bytes, scan_log_blocks
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR


def _both(block, content: bytes, reader=None) -> tuple[pa.Table, pa.Table]:  # type: ignore[no-untyped-def]
    fast = lc.decode_avro_data_block(block, content, reader)
    # The record-by-record path (fastavro), called directly: the columnar path is chosen once per schema and cached.
    slow = lc._decode_records(block, content, lc._block_schema(block, reader), reader)
    return fast, slow


@SKIP_NO_SHARED
def test_every_real_avro_block_decodes_identically() -> None:
    compared = columnar = 0
    for path in sorted(TABLES_DIR.rglob(".*.log.*")):
        if "/.hoodie/" in str(path) or path.name.endswith(".crc"):  # ``..*.crc``: Hadoop checksum side files
            continue
        with open(path, "rb") as f:
            for block in scan_log_blocks(f, os.path.getsize(path), str(path)):
                if block.block_type != BlockType.AVRO_DATA:
                    continue
                content = read_block_content(f, block)
                fast, slow = _both(block, content)
                assert fast.equals(slow), path
                compared += 1
                plan = lc._block_schema(block, None)
                if plan.container_header is not None:
                    # A sound block of a columnar schema really is decoded by the columnar path.
                    assert lc._decode_columnar([content], plan) is not None, path
                    columnar += 1
    assert compared >= 40
    assert columnar >= 10  # the fast path is really exercised on real files


SCHEMA = {
    "type": "record",
    "name": "r",
    "namespace": "hoodie.t",
    "fields": [
        {"name": "k", "type": "string"},
        {"name": "i", "type": ["null", "int"], "default": None},
        {"name": "l", "type": ["null", "long"], "default": None},
        {"name": "d", "type": ["null", "double"], "default": None},
        {"name": "b", "type": ["null", "boolean"], "default": None},
        {"name": "s", "type": ["null", "string"], "default": None},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
    ],
}

_row = st.fixed_dictionaries(
    {
        "k": st.text(max_size=8),
        "i": st.none() | st.integers(-(2**31), 2**31 - 1),
        "l": st.none() | st.integers(-(2**63), 2**63 - 1),
        "d": st.none() | st.floats(allow_nan=False),
        "b": st.none() | st.booleans(),
        "s": st.none() | st.text(max_size=20),
        "day": st.none() | st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 1, 1)),
        "ts": st.none()
        | st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)).map(
            lambda x: x.replace(tzinfo=dt.UTC)
        ),
    }
)


@settings(max_examples=int(os.environ.get("EVT_PROPERTY_EXAMPLES", "40")), deadline=None)
@given(st.lists(_row, min_size=1, max_size=30))
def test_random_flat_records_decode_identically(rows: list[dict[str, object]]) -> None:
    data = encode_avro_data_block(rows, SCHEMA, "20250101000000000")
    (block,) = read_log_blocks_bytes(data, "mem.log")
    fast, slow = _both(block, data[block.content_offset : block.content_offset + block.content_length])
    assert fast.equals(slow)
    assert fast.num_rows == len(rows)


def test_reader_schema_with_added_nullable_column_uses_fast_path() -> None:
    rows = [{"k": "a", "i": 1, "l": None, "d": 1.0, "b": True, "s": "x", "day": None, "ts": None}]
    data = encode_avro_data_block(rows, SCHEMA, "20250101000000000")
    (block,) = read_log_blocks_bytes(data, "mem.log")
    reader = dict(SCHEMA)
    reader["fields"] = [*SCHEMA["fields"], {"name": "extra", "type": ["null", "string"], "default": None}]
    # int → long promotion too
    reader["fields"][1] = {"name": "i", "type": ["null", "long"], "default": None}
    assert lc._columnar_decodable(SCHEMA, reader)
    content = data[block.content_offset : block.content_offset + block.content_length]
    fast, slow = _both(block, content, reader)
    assert fast.equals(slow)
    assert fast.schema.field("i").type == pa.int64()
    assert fast["extra"].to_pylist() == [None]


def test_non_null_default_falls_back_to_avro_resolution() -> None:
    reader = dict(SCHEMA)
    reader["fields"] = [*SCHEMA["fields"], {"name": "extra", "type": "string", "default": "dflt"}]
    assert not lc._columnar_decodable(SCHEMA, reader)


def test_nested_schema_is_not_columnar() -> None:
    nested = dict(SCHEMA)
    nested["fields"] = [
        {"name": "r", "type": {"type": "record", "name": "n", "fields": [{"name": "x", "type": "int"}]}}
    ]
    assert not lc._columnar_decodable(nested, None)


def test_fastavro_container_reference(tmp_path: Path) -> None:
    """Sanity: the hand-built container is a valid Avro file for fastavro as well."""
    rows = [{"k": "a", "i": 1, "l": 2, "d": 1.5, "b": False, "s": None, "day": dt.date(2020, 1, 1), "ts": None}]
    data = encode_avro_data_block(rows, SCHEMA, "20250101000000000")
    (block,) = read_log_blocks_bytes(data, "mem.log")
    content = data[block.content_offset : block.content_offset + block.content_length]
    count, body = lc._record_bodies(block, content)
    container = lc._object_container(block.schema_json or "", count, body)
    assert [r["k"] for r in fastavro.reader(io.BytesIO(container))] == ["a"]
    with pytest.raises(Exception):  # noqa: B017 - any decoder error on a truncated container
        list(fastavro.reader(io.BytesIO(container[:-20])))


def _blocks_of(data: bytes, name: str) -> list[tuple[object, bytes]]:
    return [
        (b, data[b.content_offset : b.content_offset + b.content_length])
        for b in read_log_blocks_bytes(data, name)
        if b.block_type == BlockType.AVRO_DATA
    ]


@SKIP_NO_SHARED
def test_batch_decode_equals_block_by_block_on_real_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several blocks per decoder call, several calls in parallel: the same tables as one block at a time."""
    items = []
    for path in sorted(TABLES_DIR.rglob(".*.log.*")):
        if "/.hoodie/" not in str(path) and not path.name.endswith(".crc"):
            items += _blocks_of(path.read_bytes(), str(path))
    assert len(items) >= 40
    expected = [lc.decode_avro_data_block(b, c) for b, c in items]  # type: ignore[arg-type]
    for chunk_bytes, workers in ((lc.DECODE_CHUNK_BYTES, None), (1, 2), (50_000, 1), (50_000, 3)):
        monkeypatch.setattr(lc, "DECODE_CHUNK_BYTES", chunk_bytes)
        got = lc.decode_avro_data_blocks(items, max_workers=workers)  # type: ignore[arg-type]
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert g.equals(e)


@settings(max_examples=int(os.environ.get("EVT_PROPERTY_EXAMPLES", "40")), deadline=None)
@given(st.lists(st.lists(_row, min_size=1, max_size=10), min_size=1, max_size=5), st.booleans())
def test_batch_decode_of_random_blocks(blocks_rows: list[list[dict[str, object]]], with_reader: bool) -> None:
    reader = None
    if with_reader:
        reader = dict(SCHEMA)
        reader["fields"] = [*SCHEMA["fields"], {"name": "extra", "type": ["null", "string"], "default": None}]
    data = b"".join(encode_avro_data_block(rows, SCHEMA, f"2025010100000000{i}") for i, rows in enumerate(blocks_rows))
    items = _blocks_of(data, "mem.log")
    got = lc.decode_avro_data_blocks(items, reader, max_workers=2)  # type: ignore[arg-type]
    for (b, c), g, rows in zip(items, got, blocks_rows, strict=True):
        fast, slow = _both(b, c, reader)
        assert g.equals(fast) and g.equals(slow)
        assert g.num_rows == len(rows)


def test_batch_decode_names_the_first_faulty_block() -> None:
    rows = [{"k": "a", "i": 1, "l": None, "d": 1.0, "b": True, "s": "x", "day": None, "ts": None}]
    data = b"".join(encode_avro_data_block(rows * 3, SCHEMA, f"2025010100000000{i}") for i in range(4))
    items = _blocks_of(data, "mem.log")
    # Block 1's second record length runs past the content; block 3's record count is garbage.
    b1, c1 = items[1]
    bad1 = bytearray(c1)
    first_len = int.from_bytes(bad1[8:12], "big")
    bad1[12 + first_len : 16 + first_len] = (10_000).to_bytes(4, "big")
    b3, c3 = items[3]
    bad3 = bytearray(c3)
    bad3[4:8] = (2**30).to_bytes(4, "big")
    items[1] = (b1, bytes(bad1))
    items[3] = (b3, bytes(bad3))
    with pytest.raises(LogFormatError) as one:
        lc.decode_avro_data_block(b1, bytes(bad1))  # type: ignore[arg-type]
    with pytest.raises(LogFormatError) as many:
        lc.decode_avro_data_blocks(items, max_workers=2)  # type: ignore[arg-type]
    assert str(many.value) == str(one.value)
    assert b1.content_offset <= many.value.offset < b1.content_offset + b1.content_length  # type: ignore[attr-defined]
    assert "record 1 length 10000 exceeds" in str(many.value)
    # Alone, the sound blocks still decode.
    sound = [items[0], items[2]]
    assert [t.num_rows for t in lc.decode_avro_data_blocks(sound)] == [3, 3]  # type: ignore[arg-type]
