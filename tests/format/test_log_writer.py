"""Log block writer: byte equality with real Hudi-written blocks, and round trips through our reader.

The fixtures are real log files written by Hudi's Java writer (0.15-era Spark for v6, 1.x for v8/v9; the block
byte layout and content version 3 are the same in all of them). Every non-corrupt, non-metadata-table block is
re-encoded from its parsed parts and must come out byte-identical:

* framing (`HoodieLogFormatWriter.appendBlocks`) for every block, with the header order found in the file;
* the `SCHEMA` header text (Java `Schema.toString()`) re-printed from the parsed JSON;
* Avro data block content (`HoodieAvroDataBlock.serializeRecords`) re-encoded from the decoded records;
* delete block content (`HoodieDeleteBlock.serializeV3`) re-encoded from the decoded keys and ordering values —
  the `mor_table_delete_ord_*` tables cover IntWrapper, LongWrapper (also for timestamps, as Spark writes them),
  DoubleWrapper, StringWrapper and DecimalWrapper;
* the rollback command block of `valid_log_rollback`, from its two instants alone.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import struct
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evt_toolkit.errors import EvtError, LogFormatError, UnsupportedFeatureError
from evt_toolkit.format.delete_schema import DELETE_RECORD_LIST_SCHEMA, ORDERING_UNION_INDEX, ORDERING_WRAPPER_NAMES
from evt_toolkit.format.log_content import decode_avro_data_block, decode_delete_block
from evt_toolkit.format.log_writer import (
    MAGIC,
    arrow_to_avro_schema,
    avro_schema_json,
    commit_seqno,
    commit_seqnos,
    encode_avro_data_block,
    encode_avro_records,
    encode_block,
    encode_delete_block,
    encode_delete_records,
    encode_rollback_command_block,
    with_meta_fields,
    wrap_ordering_value,
)
from evt_toolkit.format.logfile import BlockType, HeaderKey, LogBlock, read_log_blocks_bytes
from tests.conftest import FIXTURES_DIR, LOG_FILES_DIR, TABLES_DIR

INSTANT = "20250401120000123"


def _fixture_log_files() -> list[Path]:
    if not FIXTURES_DIR.is_dir():
        return []
    files = [p for p in LOG_FILES_DIR.rglob(".*.log.*")] + [p for p in TABLES_DIR.rglob(".*.log.*")]
    # Metadata-table logs hold HFile blocks we never write, and ``..*.crc`` are Hadoop checksum side files.
    return sorted(
        p for p in files if ".hoodie" not in p.relative_to(FIXTURES_DIR).parts and not p.name.endswith(".crc")
    )


FIXTURE_LOGS = _fixture_log_files()


def _rel(p: Path) -> str:
    return str(p.relative_to(FIXTURES_DIR))


def _blocks(path: Path) -> tuple[bytes, list[LogBlock]]:
    data = path.read_bytes()
    return data, [b for b in read_log_blocks_bytes(data, str(path)) if not b.is_corrupt]


def _content(data: bytes, block: LogBlock) -> bytes:
    return data[block.content_offset : block.content_offset + block.content_length]


def _raw_avro_records(content: bytes, schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Hand decoding of an Avro data block's content (version, count, length-prefixed records)."""
    parsed = fastavro.parse_schema(schema)
    version, count = struct.unpack(">ii", content[:8])
    assert version == 3
    pos, out = 8, list[dict[str, Any]]()
    for _ in range(count):
        (length,) = struct.unpack(">i", content[pos : pos + 4])
        pos += 4
        record = fastavro.schemaless_reader(io.BytesIO(content[pos : pos + length]), parsed, None)
        assert isinstance(record, dict)
        out.append(record)
        pos += length
    assert pos == len(content)
    return out


def _decode_single(block_bytes: bytes) -> tuple[LogBlock, bytes]:
    blocks = read_log_blocks_bytes(block_bytes, "mem.log")
    assert len(blocks) == 1 and not blocks[0].is_corrupt
    b = blocks[0]
    return b, block_bytes[b.content_offset : b.content_offset + b.content_length]


# ---------------------------------------------------------------------------------------------------------------------
# Byte equality with real Hudi-written blocks
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.fixtures
@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=_rel)
def test_reencode_real_blocks_byte_identical(path: Path, shared_fixtures: Path) -> None:
    data, blocks = _blocks(path)
    assert blocks
    rebuilt = bytearray()
    for b in blocks:
        header = {int(k): v for k, v in b.header.items()}
        footer = {int(k): v for k, v in b.footer.items()}
        raw = data[b.offset : b.offset + b.size]
        assert encode_block(int(b.block_type), header, _content(data, b), footer) == raw
        rebuilt += raw
        if b.schema_json is not None:
            assert avro_schema_json(json.loads(b.schema_json)) == b.schema_json
    # Blocks tile the file: nothing before, between or after them that we would fail to write.
    if all(not x.is_corrupt for x in read_log_blocks_bytes(data, str(path))):
        assert bytes(rebuilt) == data


@pytest.mark.fixtures
@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=_rel)
def test_reencode_real_block_contents(path: Path, shared_fixtures: Path) -> None:
    data, blocks = _blocks(path)
    ordering_types = {
        "IntWrapper": pa.int32(),
        "LongWrapper": pa.int64(),
        "DecimalWrapper": pa.decimal128(30, 15),
        "DoubleWrapper": pa.float64(),
        "StringWrapper": pa.string(),
    }
    for b in blocks:
        content = _content(data, b)
        if b.block_type is BlockType.AVRO_DATA:
            assert b.schema_json is not None
            schema = json.loads(b.schema_json)
            assert encode_avro_records(_raw_avro_records(content, schema), schema) == content
        elif b.block_type is BlockType.DELETE:
            t = decode_delete_block(b, content)
            keys = list(zip(t["_hoodie_record_key"].to_pylist(), t["_hoodie_partition_path"].to_pylist(), strict=True))
            wrappers = set(t["ordering_wrapper"].to_pylist())
            assert len(wrappers) == 1
            payload = encode_delete_records(
                keys, t["ordering_value"].to_pylist(), ordering_type=ordering_types[wrappers.pop()]
            )
            assert struct.pack(">ii", 3, len(payload)) + payload == content


@pytest.mark.fixtures
def test_real_avro_data_log_file_identical(shared_fixtures: Path) -> None:
    """valid_log_avro_data: one block, headers INSTANT_TIME then SCHEMA — exactly our order."""
    (path,) = (shared_fixtures / "log_files" / "valid_log_avro_data").iterdir()
    data, (block,) = _blocks(path)
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert block.schema_json is not None and block.instant_time is not None
    records = _raw_avro_records(_content(data, block), json.loads(block.schema_json))
    assert encode_avro_data_block(records, block.schema_json, block.instant_time) == data
    # The dict form of the schema prints back to the same header text.
    assert encode_avro_data_block(records, json.loads(block.schema_json), block.instant_time) == data
    # _hoodie_file_name in log records is the file id, and the seqno is <instant>_<task>_<counter>.
    assert records[0]["_hoodie_file_name"] == path.name[1:].split("_")[0]
    instant, task, counter = records[0]["_hoodie_commit_seqno"].split("_")
    assert commit_seqno(instant, int(task), int(counter)) == records[0]["_hoodie_commit_seqno"]


@pytest.mark.fixtures
def test_real_delete_log_file_identical(shared_fixtures: Path) -> None:
    """valid_log_delete (v6, Spark SQL DELETE): ordering values are IntWrapper(0); Java wrote SCHEMA first."""
    (path,) = (shared_fixtures / "log_files" / "valid_log_delete").iterdir()
    data, (block,) = _blocks(path)
    content = _content(data, block)
    t = decode_delete_block(block, content)
    assert set(t["ordering_wrapper"].to_pylist()) == {"IntWrapper"}
    keys = list(zip(t["_hoodie_record_key"].to_pylist(), t["_hoodie_partition_path"].to_pylist(), strict=True))
    assert block.schema_json is not None and block.instant_time is not None
    ours = encode_delete_block(keys, [0] * len(keys), block.instant_time, block.schema_json, ordering_type=pa.int32())
    ours_block, ours_content = _decode_single(ours)
    assert ours_content == content
    assert ours_block.header == block.header
    # Same bytes as the file once the header order Java happened to pick is used.
    java_order = {int(k): v for k, v in block.header.items()}
    assert encode_block(BlockType.DELETE, java_order, ours_content) == data


@pytest.mark.fixtures
def test_real_rollback_command_block_identical(shared_fixtures: Path) -> None:
    (path,) = (shared_fixtures / "log_files" / "valid_log_rollback").iterdir()
    data, (block,) = _blocks(path)
    assert block.instant_time is not None and block.target_instant_time is not None
    assert encode_rollback_command_block(block.instant_time, block.target_instant_time) == data


@pytest.mark.fixtures
def test_arrow_schema_maps_like_spark(shared_fixtures: Path) -> None:
    """The Spark-written v6 complex-key table's SCHEMA header, rebuilt from the equivalent Arrow schema."""
    paths = list((shared_fixtures / "tables" / "mor_v6_complexkeygen_hivestyle").rglob(".*.log.*"))
    _, blocks = _blocks(paths[0])
    expected = blocks[0].schema_json
    arrow = pa.schema(
        [
            ("id", pa.int32()),
            ("name", pa.string()),
            ("isActive", pa.bool_()),
            ("intField", pa.int32()),
            ("longField", pa.int64()),
            ("floatField", pa.float32()),
            ("doubleField", pa.float64()),
            ("decimalField", pa.decimal128(10, 5)),
            ("dateField", pa.date32()),
            ("timestampField", pa.timestamp("us", tz="UTC")),
            ("binaryField", pa.binary()),
            ("arrayField", pa.list_(pa.struct([("arr_struct_f1", pa.string()), ("arr_struct_f2", pa.int32())]))),
            (
                "mapField",
                pa.map_(
                    pa.string(),
                    pa.struct([("map_field_value_struct_f1", pa.float64()), ("map_field_value_struct_f2", pa.bool_())]),
                ),
            ),
            (
                "structField",
                pa.struct(
                    [
                        ("field1", pa.string()),
                        ("field2", pa.int32()),
                        (
                            "child_struct",
                            pa.struct([("child_field1", pa.float64()), ("child_field2", pa.bool_())]),
                        ),
                    ]
                ),
            ),
            ("byteField", pa.int8()),
            ("shortField", pa.int16()),
        ]
    )
    table = "v6_complexkeygen_hivestyle"
    schema = with_meta_fields(arrow_to_avro_schema(arrow, f"{table}_record", f"hoodie.{table}"))
    assert avro_schema_json(schema) == expected


# ---------------------------------------------------------------------------------------------------------------------
# Framing
# ---------------------------------------------------------------------------------------------------------------------


def test_encode_block_layout() -> None:
    block = encode_block(3, {0: "x", 2: "é"}, b"abc")
    assert block[:6] == MAGIC
    (block_size,) = struct.unpack(">q", block[6:14])
    assert len(block) == 6 + 8 + block_size
    assert struct.unpack(">ii", block[14:22]) == (1, 3)
    assert struct.unpack(">i", block[22:26]) == (2,)
    assert block[26:39] == struct.pack(">ii", 0, 1) + b"x" + struct.pack(">i", 2)[:4]
    (reverse,) = struct.unpack(">q", block[-8:])
    assert reverse == block_size + 6 == len(block) - 8
    assert block[-12:-8] == b"\x00\x00\x00\x00"  # empty footer
    parsed, content = _decode_single(block)
    assert content == b"abc" and parsed.header == {HeaderKey.INSTANT_TIME: "x", HeaderKey.SCHEMA: "é"}


def test_encode_block_rejects_bad_input() -> None:
    with pytest.raises(LogFormatError):
        encode_block(-1, {}, b"")
    with pytest.raises(LogFormatError):
        encode_block(3, {-2: "x"}, b"")
    with pytest.raises(LogFormatError):
        encode_block(3, {0: 5}, b"")  # type: ignore[dict-item]
    assert issubclass(LogFormatError, EvtError)


def test_lone_surrogate_header_is_replaced_like_java() -> None:
    block = encode_block(0, {0: "a\ud800b"}, b"")
    assert b"a?b" in block


def test_commit_seqnos() -> None:
    assert commit_seqno("20250331030642808", 0, 3) == "20250331030642808_0_3"
    assert commit_seqnos("1", 2, 3, start=5).to_pylist() == ["1_2_5", "1_2_6", "1_2_7"]


# ---------------------------------------------------------------------------------------------------------------------
# Avro data blocks: round trips through the reader
# ---------------------------------------------------------------------------------------------------------------------


def _data_block_roundtrip(table: pa.Table, **kwargs: Any) -> tuple[LogBlock, pa.Table]:
    schema = with_meta_fields(arrow_to_avro_schema(table.schema, "t_record", "hoodie.t"))
    block_bytes = encode_avro_data_block(table, schema, INSTANT, **kwargs)
    block, content = _decode_single(block_bytes)
    assert block.block_type is BlockType.AVRO_DATA
    assert block.instant_time == INSTANT
    assert block.schema_json == avro_schema_json(schema)
    return block, decode_avro_data_block(block, content)


def test_avro_roundtrip_all_types() -> None:
    utc = dt.UTC
    table = pa.table(
        {
            "b": pa.array([True, None, False], pa.bool_()),
            "i8": pa.array([1, -128, None], pa.int8()),
            "i16": pa.array([300, None, -1], pa.int16()),
            "i32": pa.array([2**31 - 1, -(2**31), None], pa.int32()),
            "i64": pa.array([2**63 - 1, None, -(2**63)], pa.int64()),
            "f32": pa.array([1.5, None, -0.0], pa.float32()),
            "f64": pa.array([1e300, float("inf"), None], pa.float64()),
            "s": pa.array(["a", "é\U0001f600", None]),
            "bin": pa.array([b"\x00\xff", None, b""], pa.binary()),
            "dec": pa.array([decimal.Decimal("123.45"), decimal.Decimal("-0.01"), None], pa.decimal128(10, 2)),
            "d": pa.array([dt.date(2024, 2, 29), None, dt.date(1969, 12, 31)], pa.date32()),
            "ts_us": pa.array(
                [dt.datetime(2025, 1, 1, 12, 0, 0, 123456, tzinfo=utc), None, dt.datetime(1960, 1, 1, tzinfo=utc)],
                pa.timestamp("us", tz="UTC"),
            ),
            "ts_ms": pa.array([0, 1_700_000_000_123, None], pa.timestamp("ms", tz="UTC")),
            "ts_ns": pa.array([1_700_000_000_123_456_789, None, -1], pa.timestamp("ns", tz="UTC")),
            "st": pa.array(
                [{"x": 1, "y": "a"}, None, {"x": None, "y": None}], pa.struct([("x", pa.int32()), ("y", pa.string())])
            ),
            "lst": pa.array([[1, None, 3], None, []], pa.list_(pa.int64())),
            "lst_st": pa.array([[{"z": 1.0}], [None], None], pa.list_(pa.struct([("z", pa.float64())]))),
            "mp": pa.array([[("k", 1), ("l", None)], None, []], pa.map_(pa.string(), pa.int32())),
        }
    )
    _, out = _data_block_roundtrip(table)
    assert out.num_rows == 3
    for name in ("b", "i32", "i64", "f32", "s", "bin", "dec", "d", "lst"):
        assert out[name].to_pylist() == table[name].to_pylist(), name
    assert out["f64"].to_pylist()[:2] == [1e300, float("inf")]
    assert out["i8"].to_pylist() == [1, -128, None] and out["i16"].to_pylist() == [300, None, -1]
    assert out["ts_us"].to_pylist() == table["ts_us"].to_pylist()
    assert out["ts_ms"].cast(pa.int64()).to_pylist() == [0, 1_700_000_000_123_000, None]
    # Spark keeps microseconds; nanoseconds are truncated toward zero... as Arrow's unsafe cast does.
    assert out["ts_ns"].cast(pa.int64()).to_pylist() == [1_700_000_000_123_456, None, 0]
    assert out["st"].to_pylist() == [{"x": 1, "y": "a"}, None, {"x": None, "y": None}]
    assert out["lst_st"].to_pylist() == [[{"z": 1.0}], [None], None]
    mp = out["mp"].to_pylist()
    assert mp[1] is None and dict(mp[0]) == {"k": 1, "l": None} and not mp[2]
    assert out.column_names[:5] == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    ]


def test_avro_meta_columns_and_naive_timestamps() -> None:
    table = pa.table(
        {
            "_hoodie_commit_time": [INSTANT, INSTANT],
            "_hoodie_commit_seqno": commit_seqnos(INSTANT, 0, 2),
            "_hoodie_record_key": ["k1", "k2"],
            "_hoodie_partition_path": ["", ""],
            "_hoodie_file_name": ["fid-0", "fid-0"],
            "ts": pa.array([dt.datetime(2025, 1, 1), None], pa.timestamp("us")),
        }
    )
    schema = arrow_to_avro_schema(table.schema, "t_record", "hoodie.t")
    meta_schema = with_meta_fields(schema)
    assert [f["name"] for f in meta_schema["fields"]] == table.column_names  # not duplicated
    block, content = _decode_single(encode_avro_data_block(table, meta_schema, INSTANT))
    out = decode_avro_data_block(block, content)
    assert out["_hoodie_commit_seqno"].to_pylist() == [f"{INSTANT}_0_0", f"{INSTANT}_0_1"]
    # Naive timestamps are written as UTC epoch micros.
    assert out["ts"].cast(pa.int64()).to_pylist() == [1_735_689_600_000_000, None]


def test_avro_list_of_dicts_and_empty() -> None:
    schema = with_meta_fields(arrow_to_avro_schema(pa.schema([("id", pa.int64())]), "t_record", "hoodie.t"))
    block, content = _decode_single(encode_avro_data_block([{"id": 7, "_hoodie_record_key": "7"}], schema, INSTANT))
    out = decode_avro_data_block(block, content)
    assert out["id"].to_pylist() == [7] and out["_hoodie_record_key"].to_pylist() == ["7"]
    empty = encode_avro_data_block([], schema, INSTANT)
    block, content = _decode_single(empty)
    assert content == struct.pack(">ii", 3, 0)
    assert decode_avro_data_block(block, content).num_rows == 0


def test_avro_record_not_matching_schema() -> None:
    schema = arrow_to_avro_schema(pa.schema([pa.field("id", pa.int64(), nullable=False)]), "t_record", "hoodie.t")
    assert schema["fields"] == [{"name": "id", "type": "long"}]
    with pytest.raises(LogFormatError):
        encode_avro_data_block([{"id": "nope"}], schema, INSTANT)


def test_min_event_time_header() -> None:
    table = pa.table({"id": pa.array([1], pa.int32())})
    block, _ = _data_block_roundtrip(table, min_event_time=1_735_689_600_000)
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA, HeaderKey.MIN_EVENT_TIME]
    assert block.header[HeaderKey.MIN_EVENT_TIME] == "1735689600000"
    assert int(HeaderKey.MIN_EVENT_TIME) == 100
    assert block.min_event_time_header == 1_735_689_600_000
    negative, _ = _data_block_roundtrip(table, min_event_time=-5)
    assert negative.min_event_time_header == -5
    plain, _ = _data_block_roundtrip(table)
    assert HeaderKey.MIN_EVENT_TIME not in plain.header and plain.min_event_time_header is None
    with pytest.raises(LogFormatError):
        encode_avro_data_block([], {"type": "record", "name": "r", "fields": []}, INSTANT, min_event_time=1.5)  # type: ignore[arg-type]


def test_unsupported_arrow_types() -> None:
    with pytest.raises(UnsupportedFeatureError):
        arrow_to_avro_schema(pa.schema([("d", pa.duration("s"))]), "r", "n")
    with pytest.raises(UnsupportedFeatureError):
        arrow_to_avro_schema(pa.schema([("m", pa.map_(pa.int32(), pa.int32()))]), "r", "n")


def test_schema_json_java_rules() -> None:
    """Java prints a named type once, then by name; namespace only where it differs from the enclosing one."""
    inner = {"type": "record", "name": "In", "namespace": "a.b", "fields": [{"name": "x", "type": "int"}]}
    schema = {
        "fields": [
            {"default": None, "type": ["null", inner], "name": "p"},
            {"name": "q", "type": ["null", "a.b.In"], "default": None},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"], "namespace": "a"}},
            {"name": "t", "type": {"logicalType": "date", "type": "int"}},
        ],
        "namespace": "a",
        "name": "Top",
        "type": "record",
    }
    assert avro_schema_json(schema) == (
        '{"type":"record","name":"Top","namespace":"a","fields":['
        '{"name":"p","type":["null",{"type":"record","name":"In","namespace":"a.b","fields":'
        '[{"name":"x","type":"int"}]}],"default":null},'
        '{"name":"q","type":["null","a.b.In"],"default":null},'
        '{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},'
        '{"name":"t","type":{"type":"int","logicalType":"date"}}]}'
    )


# ---------------------------------------------------------------------------------------------------------------------
# Delete blocks
# ---------------------------------------------------------------------------------------------------------------------

_WRAPPER_CASES: list[tuple[object, pa.DataType | None, str, object]] = [
    (None, None, "null", None),
    (True, None, "BooleanWrapper", True),
    (7, pa.int32(), "IntWrapper", 7),
    (-(2**31), pa.int16(), "IntWrapper", -(2**31)),
    (2**40, None, "LongWrapper", 2**40),
    (1.5, pa.float32(), "FloatWrapper", 1.5),
    (0.1, None, "DoubleWrapper", 0.1),
    (b"\x00\x01", None, "BytesWrapper", b"\x00\x01"),
    ("ord_é", None, "StringWrapper", "ord_é"),
    (dt.date(2024, 2, 29), None, "DateWrapper", dt.date(2024, 2, 29)),
    (decimal.Decimal("-12.5"), None, "DecimalWrapper", decimal.Decimal("-12.500000000000000")),
    (dt.time(1, 2, 3, 4), None, "TimeMicrosWrapper", dt.time(1, 2, 3, 4)),
    (
        dt.datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC),
        None,
        "TimestampMicrosWrapper",
        dt.datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC),
    ),
    (dt.datetime(2025, 1, 1), pa.timestamp("us"), "LongWrapper", 1_735_689_600_000_000),
    (1_735_689_600_000, pa.timestamp("ms"), "LongWrapper", 1_735_689_600_000_000),
    (dt.date(1970, 1, 2), pa.date32(), "DateWrapper", dt.date(1970, 1, 2)),
    (3, pa.decimal128(10, 2), "DecimalWrapper", decimal.Decimal("3.000000000000000")),
]


@pytest.mark.parametrize(("value", "arrow_type", "wrapper", "decoded"), _WRAPPER_CASES)
def test_delete_block_roundtrip_each_wrapper(value: object, arrow_type: Any, wrapper: str, decoded: object) -> None:
    keys = [("k1", "p=1"), ("k2", "")]
    block_bytes = encode_delete_block(keys, [value, value], INSTANT, '{"type":"null"}', ordering_type=arrow_type)
    block, content = _decode_single(block_bytes)
    assert block.block_type is BlockType.DELETE
    assert block.header == {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: '{"type":"null"}'}
    t = decode_delete_block(block, content)
    assert t["_hoodie_record_key"].to_pylist() == ["k1", "k2"]
    assert t["_hoodie_partition_path"].to_pylist() == ["p=1", ""]
    assert t["ordering_wrapper"].to_pylist() == [None if wrapper == "null" else wrapper] * 2
    assert t["ordering_value"].to_pylist() == [decoded, decoded]
    # The payload is exactly what fastavro writes for Java's schema, with the branch chosen by name.
    datum = {
        "deleteRecordList": [
            {"recordKey": k, "partitionPath": p, "orderingVal": _fastavro_branch(value, arrow_type)} for k, p in keys
        ]
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA), datum)
    assert content[8:] == buf.getvalue()


def _fastavro_branch(value: object, arrow_type: Any) -> Any:
    name, normalized = wrap_ordering_value(value, arrow_type)
    if name == "null":
        return None
    if name == "DecimalWrapper":
        normalized = decimal.Decimal(int.from_bytes(normalized, "big", signed=True)).scaleb(-15)
    if name == "TimeMicrosWrapper":
        normalized = dt.time(0) if normalized == 0 else value
    return (f"org.apache.hudi.avro.model.{name}", {"value": normalized})


def test_wrapper_union_order_is_javas() -> None:
    assert ORDERING_WRAPPER_NAMES == (
        "BooleanWrapper",
        "IntWrapper",
        "LongWrapper",
        "FloatWrapper",
        "DoubleWrapper",
        "BytesWrapper",
        "StringWrapper",
        "DateWrapper",
        "DecimalWrapper",
        "TimeMicrosWrapper",
        "TimestampMicrosWrapper",
    )
    assert ORDERING_UNION_INDEX["null"] == 0 and ORDERING_UNION_INDEX["TimestampMicrosWrapper"] == 11


def test_decimal_wrapper_bytes_match_java_big_integer() -> None:
    """``BigInteger.toByteArray`` is minimal two's complement: -128·10^-15 is one byte 0x80."""
    assert wrap_ordering_value(decimal.Decimal("4"))[1] == bytes.fromhex("0e35fa931a0000")  # real v9 delete block
    assert wrap_ordering_value(decimal.Decimal("-128e-15"))[1] == b"\x80"
    assert wrap_ordering_value(decimal.Decimal("128e-15"))[1] == b"\x00\x80"
    assert wrap_ordering_value(decimal.Decimal(0))[1] == b"\x00"
    with pytest.raises(LogFormatError, match="without rounding"):
        wrap_ordering_value(decimal.Decimal("1e-16"))
    with pytest.raises(LogFormatError, match="precision"):
        wrap_ordering_value(decimal.Decimal("1e15"))


def test_delete_value_errors() -> None:
    with pytest.raises(LogFormatError):
        wrap_ordering_value(2**31, pa.int32())
    with pytest.raises(LogFormatError):
        wrap_ordering_value(2**63)
    with pytest.raises(LogFormatError):
        wrap_ordering_value(object())
    with pytest.raises(LogFormatError):
        encode_delete_block([("k", "")], [1, 2], INSTANT, "{}")


def test_empty_and_null_key_delete_block() -> None:
    assert encode_delete_records([]) == b"\x00"
    block, content = _decode_single(encode_delete_block([(None, None)], None, INSTANT, "{}"))
    t = decode_delete_block(block, content)
    assert t["_hoodie_record_key"].to_pylist() == [None] and t["ordering_wrapper"].to_pylist() == [None]


# ---------------------------------------------------------------------------------------------------------------------
# Command blocks
# ---------------------------------------------------------------------------------------------------------------------


def test_rollback_command_block_roundtrip() -> None:
    block, content = _decode_single(encode_rollback_command_block("20250126040936578", "20250126040826878"))
    assert block.block_type is BlockType.COMMAND and content == b""
    assert block.instant_time == "20250126040936578"
    assert block.target_instant_time == "20250126040826878"
    assert block.header[HeaderKey.COMMAND_BLOCK_TYPE] == "0"


def test_blocks_concatenate_into_a_log_file() -> None:
    schema = with_meta_fields(arrow_to_avro_schema(pa.schema([("id", pa.int64())]), "t_record", "hoodie.t"))
    data = b"".join(
        [
            encode_avro_data_block([{"id": 1}], schema, "1"),
            encode_delete_block([("1", "")], [0], "2", avro_schema_json(schema), ordering_type=pa.int32()),
            encode_rollback_command_block("3", "2"),
        ]
    )
    blocks = read_log_blocks_bytes(data, "f.log")
    assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA, BlockType.DELETE, BlockType.COMMAND]
    assert [b.instant_time for b in blocks] == ["1", "2", "3"]
    assert blocks[-1].offset + blocks[-1].size == len(data)


# ---------------------------------------------------------------------------------------------------------------------
# Property: random small tables survive encode → read
# ---------------------------------------------------------------------------------------------------------------------

_COLUMN_STRATEGIES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.text(st.characters(exclude_categories=["Cs"]), max_size=8)),
    "binary": (pa.binary(), st.binary(max_size=8)),
    "date": (pa.date32(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    "timestamp": (
        pa.timestamp("us", tz="UTC"),
        st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)),
    ),
    "decimal": (
        pa.decimal128(12, 3),
        st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False, allow_infinity=False),
    ),
    "list": (pa.list_(pa.int32()), st.lists(st.none() | st.integers(-5, 5), max_size=3)),
}


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    names = draw(st.lists(st.sampled_from(sorted(_COLUMN_STRATEGIES)), min_size=1, max_size=5, unique=True))
    rows = draw(st.integers(0, 6))
    columns = {}
    for name in names:
        arrow_type, values = _COLUMN_STRATEGIES[name]
        columns[name] = pa.array(draw(st.lists(st.none() | values, min_size=rows, max_size=rows)), arrow_type)
    return pa.table(columns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=_tables())
def test_property_roundtrip_random_tables(table: pa.Table) -> None:
    _, out = _data_block_roundtrip(table)
    assert out.select(table.column_names).to_pylist() == table.to_pylist()


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.tuples(st.text(max_size=5) | st.none(), st.text(max_size=5) | st.none()), max_size=5),
    value=st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.binary(max_size=5)
    | st.dates(),
)
def test_property_delete_roundtrip(keys: list[tuple[str | None, str | None]], value: object) -> None:
    block, content = _decode_single(encode_delete_block(keys, [value] * len(keys), INSTANT, "{}"))
    t = decode_delete_block(block, content)
    assert t["_hoodie_record_key"].to_pylist() == [k for k, _ in keys]
    assert t["_hoodie_partition_path"].to_pylist() == [p for _, p in keys]
    assert t["ordering_value"].to_pylist() == [value] * len(keys)
