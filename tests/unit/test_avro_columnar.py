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

from evt_toolkit.format import log_content as lc
from evt_toolkit.format.log_writer import encode_avro_data_block
from evt_toolkit.format.logfile import BlockType, read_block_content, read_log_blocks_bytes, scan_log_blocks
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR


def _both(block, content: bytes, reader=None) -> tuple[pa.Table, pa.Table]:  # type: ignore[no-untyped-def]
    fast = lc.decode_avro_data_block(block, content, reader)
    original = lc._columnar_decodable
    lc._columnar_decodable = lambda *_: False  # type: ignore[assignment]
    try:
        slow = lc.decode_avro_data_block(block, content, reader)
    finally:
        lc._columnar_decodable = original
    return fast, slow


@SKIP_NO_SHARED
def test_every_real_avro_block_decodes_identically() -> None:
    compared = columnar = 0
    for path in sorted(TABLES_DIR.rglob(".*.log.*")):
        if "/.hoodie/" in str(path):
            continue
        with open(path, "rb") as f:
            for block in scan_log_blocks(f, os.path.getsize(path), str(path)):
                if block.block_type != BlockType.AVRO_DATA:
                    continue
                content = read_block_content(f, block)
                fast, slow = _both(block, content)
                assert fast.equals(slow), path
                compared += 1
                columnar += lc._columnar_decodable(lc._writer_schema(block), None)
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
