"""Avro → Arrow type mapping and record conversion."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evt_toolkit.errors import LogFormatError, UnsupportedFeatureError
from evt_toolkit.format.avro_arrow import avro_to_arrow_schema, avro_to_arrow_type, records_to_arrow
from evt_toolkit.format.log_content import read_block_records
from evt_toolkit.format.logfile import BlockType, scan_log_blocks
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR


@pytest.mark.parametrize(
    ("avro", "arrow"),
    [
        ("boolean", pa.bool_()),
        ("int", pa.int32()),
        ("long", pa.int64()),
        ("float", pa.float32()),
        ("double", pa.float64()),
        ("string", pa.string()),
        ("bytes", pa.binary()),
        ("null", pa.null()),
        ({"type": "int", "logicalType": "date"}, pa.date32()),
        ({"type": "int", "logicalType": "time-millis"}, pa.time32("ms")),
        ({"type": "long", "logicalType": "time-micros"}, pa.time64("us")),
        ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("ms", tz="UTC")),
        ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us", tz="UTC")),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, pa.timestamp("ms")),
        ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us")),
        ({"type": "string", "logicalType": "uuid"}, pa.string()),
        ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, pa.decimal128(10, 2)),
        ({"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 5}, pa.decimal256(50, 5)),
        (
            {"type": "fixed", "name": "f", "size": 9, "logicalType": "decimal", "precision": 20, "scale": 2},
            pa.decimal128(20, 2),
        ),
        ({"type": "fixed", "name": "g", "size": 4}, pa.binary()),
        ({"type": "enum", "name": "e", "symbols": ["A", "B"]}, pa.string()),
        ({"type": "long", "logicalType": "some-future-type"}, pa.int64()),
        (["null", "long"], pa.int64()),
        (["long", "null"], pa.int64()),
        ({"type": "array", "items": "int"}, pa.list_(pa.field("element", pa.int32(), nullable=False))),
        ({"type": "map", "values": ["null", "string"]}, pa.map_(pa.string(), pa.string())),
    ],
)
def test_type_mapping(avro: Any, arrow: pa.DataType) -> None:
    assert avro_to_arrow_type(avro) == arrow


def test_nullability_follows_unions() -> None:
    schema = avro_to_arrow_schema(
        {
            "type": "record",
            "name": "r",
            "fields": [
                {"name": "required", "type": "long"},
                {"name": "optional", "type": ["null", "long"]},
                {"name": "items", "type": {"type": "array", "items": ["null", "string"]}},
            ],
        }
    )
    assert schema.field("required").nullable is False
    assert schema.field("optional").nullable is True
    assert schema.field("items").type.value_field.nullable is True


def test_named_type_references_and_namespaces() -> None:
    schema = avro_to_arrow_schema(
        json.dumps(
            {
                "type": "record",
                "name": "outer",
                "namespace": "ns",
                "fields": [
                    {
                        "name": "a",
                        "type": {"type": "record", "name": "inner", "fields": [{"name": "x", "type": "int"}]},
                    },
                    {"name": "b", "type": ["null", "inner"]},
                    {"name": "c", "type": "ns.inner"},
                    {
                        "name": "d",
                        "type": {
                            "type": "fixed",
                            "name": "money",
                            "size": 8,
                            "logicalType": "decimal",
                            "precision": 18,
                            "scale": 4,
                        },
                    },
                    {"name": "e", "type": "money"},
                ],
            }
        )
    )
    inner = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    assert [schema.field(n).type for n in "abc"] == [inner, inner, inner]
    assert schema.field("e").type == pa.decimal128(18, 4)


@pytest.mark.parametrize(
    ("schema", "error"),
    [
        (["null", "int", "string"], UnsupportedFeatureError),
        ({"type": "record", "name": "n", "fields": [{"name": "self", "type": ["null", "n"]}]}, UnsupportedFeatureError),
        ("{not json", LogFormatError),
        ({"type": "record", "name": "r"}, LogFormatError),
        ("unknown.Type", LogFormatError),
        ({"type": "bytes", "logicalType": "decimal", "precision": 0}, LogFormatError),
        ({"type": "bytes", "logicalType": "decimal", "precision": 100}, UnsupportedFeatureError),
    ],
)
def test_schema_errors(schema: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        avro_to_arrow_type(schema)


def test_record_schema_required() -> None:
    with pytest.raises(LogFormatError, match="must be a record"):
        avro_to_arrow_schema('"long"')


ALL_TYPES: dict[str, Any] = {
    "type": "record",
    "name": "all_types",
    "fields": [
        {"name": "ts_ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "ts_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "lts_us", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "t_ms", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
        {"name": "t_us", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "dec", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}]},
        {"name": "id", "type": ["null", {"type": "string", "logicalType": "uuid"}]},
        {"name": "raw", "type": ["null", "bytes"]},
        {"name": "color", "type": ["null", {"type": "enum", "name": "color_enum", "symbols": ["RED", "BLUE"]}]},
        {"name": "tags", "type": ["null", {"type": "map", "values": ["null", "long"]}]},
        {
            "name": "nested",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "nested_rec",
                    "fields": [
                        {"name": "m", "type": {"type": "map", "values": "string"}},
                        {"name": "l", "type": {"type": "array", "items": {"type": "string", "logicalType": "uuid"}}},
                    ],
                },
            ],
        },
    ],
}


def test_records_to_arrow_round_trips_fastavro_values() -> None:
    utc = dt.UTC
    uid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    row = {
        "ts_ms": dt.datetime(2025, 1, 2, 3, 4, 5, 6000, tzinfo=utc),
        "ts_us": dt.datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=utc),
        "lts_us": dt.datetime(2025, 1, 2, 3, 4, 5, 123456),
        "day": dt.date(2025, 2, 15),
        "t_ms": dt.time(1, 2, 3, 4000),
        "t_us": dt.time(1, 2, 3, 4567),
        "dec": Decimal("123456789.123"),
        "id": str(uid),
        "raw": b"\x00\x01",
        "color": "BLUE",
        "tags": {"a": 1, "b": None},
        "nested": {"m": {"k": "v"}, "l": [str(uid)]},
    }
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(ALL_TYPES), [row, dict.fromkeys(row)])
    records = [r for r in fastavro.reader(io.BytesIO(buf.getvalue())) if isinstance(r, dict)]
    table = records_to_arrow(records, avro_to_arrow_schema(ALL_TYPES))
    assert table.schema.field("ts_ms").type == pa.timestamp("ms", tz="UTC")
    out = table.to_pylist()
    assert out[0]["ts_us"] == row["ts_us"]
    assert out[0]["ts_ms"] == row["ts_ms"]
    assert out[0]["lts_us"] == row["lts_us"]
    assert out[0]["day"] == row["day"] and out[0]["t_us"] == row["t_us"] and out[0]["t_ms"] == row["t_ms"]
    assert out[0]["dec"] == row["dec"] and out[0]["id"] == str(uid) and out[0]["raw"] == b"\x00\x01"
    assert out[0]["color"] == "BLUE"
    assert out[0]["tags"] == [("a", 1), ("b", None)]
    assert out[0]["nested"] == {"m": [("k", "v")], "l": [str(uid)]}
    assert all(v is None for v in out[1].values())


def test_records_to_arrow_uuid_objects_and_missing_keys() -> None:
    schema = pa.schema([pa.field("id", pa.string()), pa.field("n", pa.int64())])
    uid = uuid.uuid4()
    table = records_to_arrow([{"id": uid}, {}], schema)
    assert table.to_pylist() == [{"id": str(uid), "n": None}, {"id": None, "n": None}]


@SKIP_NO_SHARED
def test_log_columns_match_base_file_types_for_all_data_types() -> None:
    """Log-decoded columns have the types pyarrow reads from the same table's base file (parquet-avro)."""
    table_dir = TABLES_DIR / "mor_table_all_data_types" / "table_all_data_types"
    [base] = sorted(table_dir.glob("*.parquet"))
    base_schema = pq.read_schema(base)
    logs = sorted(p for p in table_dir.glob(".*.log.*") if not p.name.endswith(".crc"))
    decoded = []
    for log in logs:
        with log.open("rb") as f:
            for block in scan_log_blocks(f, log.stat().st_size, str(log)):
                if block.block_type is BlockType.AVRO_DATA:
                    decoded.append(read_block_records(f, block))
    assert decoded
    for table in decoded:
        assert table.column_names == base_schema.names
        for name in base_schema.names:
            expected = base_schema.field(name).type
            actual = table.schema.field(name).type
            if pa.types.is_list(expected):
                # parquet-avro's legacy 2-level list names its item "array"; ours is the standard "element".
                assert actual.value_type == expected.value_type, name
            elif pa.types.is_map(expected):
                assert (actual.key_type, actual.item_type) == (expected.key_type, expected.item_type), name
            else:
                assert actual == expected, name
    first = decoded[0].to_pylist()[0]
    assert first["decimal_field"] == Decimal("1001.99")
    assert first["date_nullable_field"] == dt.date(2025, 2, 15)
    assert first["timestamp_micros_nullable_field"] == dt.datetime(2025, 2, 15, 12, 0, tzinfo=dt.UTC)
    assert first["nullable_map_field"] == [("mk_r2", {"nested_int": 40, "level": "ML_R2"})]
    assert first["array_field"] == [{"nested_int": 40, "level": "AL_R2"}]
