"""Log block framing and content decoding, on the real Hudi log files and on hand-built blocks.

The four files under ``fixtures/log_files`` were written by Spark + Hudi: an Avro data block (one trips
upsert), a delete block (a Spark SQL DELETE of three keys), a Parquet data block and a rollback command block.
Expected values below were read from the bytes (``xxd``) and from the table each file came from.
"""

from __future__ import annotations

import collections
import functools
import io
import json
import re
import struct
import time
import tracemalloc
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from evt_toolkit.errors import LogFormatError, UnsupportedFeatureError
from evt_toolkit.format import logfile
from evt_toolkit.format.log_content import (
    DELETE_RECORD_LIST_SCHEMA,
    decode_avro_data_block,
    decode_data_block,
    decode_delete_block,
    decode_parquet_data_block,
    read_block_records,
)
from evt_toolkit.format.logfile import (
    MAGIC,
    BlockType,
    HeaderKey,
    LogBlock,
    read_block_content,
    read_log_blocks_bytes,
    scan_log_blocks,
    scan_log_bytes,
)
from tests.conftest import LOG_FILES_DIR, SKIP_NO_SHARED, TABLES_DIR

LOG_NAME_RE = re.compile(r"^\.(?P<file_id>.+)_(?P<instant>\d+)\.log\.(?P<version>\d+)_(?P<token>[^.]+)$")

# ---------------------------------------------------------------------------------------------------------------------
# A minimal block encoder (log format version 1, HoodieLogFormatWriter layout), for crafting test inputs.
# ---------------------------------------------------------------------------------------------------------------------


def encode_metadata(entries: Mapping[Any, bytes | str]) -> bytes:
    out = struct.pack(">i", len(entries))
    for key, value in entries.items():
        raw = value.encode("utf-8") if isinstance(value, str) else value
        out += struct.pack(">ii", key, len(raw)) + raw
    return out


def encode_block(
    block_type: int,
    header: Mapping[Any, bytes | str],
    content: bytes = b"",
    footer: Mapping[Any, bytes | str] | None = None,
    *,
    version: int = 1,
    content_length: int | None = None,
    block_size: int | None = None,
    reverse_pointer: int | None = None,
    magic: bytes = MAGIC,
) -> bytes:
    """Encodes one block; the keyword overrides let a test lie in any single field."""
    body = struct.pack(">ii", version, block_type) + encode_metadata(header)
    body += struct.pack(">q", len(content) if content_length is None else content_length) + content
    body += encode_metadata(footer or {})
    size = len(body) + 8 if block_size is None else block_size
    rp = size + len(MAGIC) if reverse_pointer is None else reverse_pointer
    return magic + struct.pack(">q", size) + body + struct.pack(">q", rp)


TRIPS_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "trips_record",
    "namespace": "hoodie.trips",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "_hoodie_record_key", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "ts", "type": ["null", "int"], "default": None},
        {"name": "fare", "type": ["null", "float"], "default": None},
        {"name": "rider", "type": ["null", "string"], "default": None},
    ],
}


def avro_content(schema: dict[str, Any], records: list[dict[str, Any]], *, version: int = 3) -> bytes:
    """HoodieAvroDataBlock content: version, count, then length-prefixed Avro binary records."""
    parsed = fastavro.parse_schema(schema)
    out = [struct.pack(">ii", version, len(records))]
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        out.append(struct.pack(">i", len(buf.getvalue())) + buf.getvalue())
    return b"".join(out)


def avro_block(records: list[dict[str, Any]], instant: str = "20250101000000000", **kw: Any) -> bytes:
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(TRIPS_SCHEMA)}
    return encode_block(BlockType.AVRO_DATA, header, avro_content(TRIPS_SCHEMA, records), **kw)


def delete_content(entries: list[dict[str, Any]], *, version: int = 3) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA), {"deleteRecordList": entries})
    return struct.pack(">ii", version, len(buf.getvalue())) + buf.getvalue()


def command_block(instant: str, target: str) -> bytes:
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.TARGET_INSTANT_TIME: target, HeaderKey.COMMAND_BLOCK_TYPE: "0"}
    return encode_block(BlockType.COMMAND, header)


RECORDS = [
    {"_hoodie_commit_time": "20250101000000000", "_hoodie_record_key": "k1", "ts": 1, "fare": 1.5, "rider": "a"},
    {"_hoodie_commit_time": "20250101000000000", "_hoodie_record_key": "k2", "ts": 2, "fare": None, "rider": "b"},
]

# ---------------------------------------------------------------------------------------------------------------------
# Real files
# ---------------------------------------------------------------------------------------------------------------------


def only_file(folder: str) -> Path:
    files = [p for p in (LOG_FILES_DIR / folder).iterdir() if p.is_file()]
    assert len(files) == 1, files
    return files[0]


@functools.cache
def real_log_files() -> tuple[Path, ...]:
    """Every log file (data and metadata tables) under the fixture tables, sorted."""
    if not TABLES_DIR.is_dir():
        return ()
    return tuple(sorted(p for p in TABLES_DIR.rglob(".*") if p.is_file() and LOG_NAME_RE.match(p.name)))


def scan_file(path: Path) -> list[LogBlock]:
    with path.open("rb") as f:
        return list(scan_log_blocks(f, path.stat().st_size, str(path)))


@SKIP_NO_SHARED
class TestRealAvroDataFile:
    def test_framing_matches_the_worked_example(self) -> None:
        path = only_file("valid_log_avro_data")
        data = path.read_bytes()
        [block] = read_log_blocks_bytes(data, str(path))
        assert len(data) == 1172
        assert (block.offset, block.size) == (0, 1172)
        assert struct.unpack(">q", data[6:14])[0] == 1158 == block.size - 14
        assert struct.unpack(">q", data[-8:])[0] == 1164
        assert block.block_type is BlockType.AVRO_DATA
        assert block.format_version == 1
        assert (block.content_offset, block.content_length) == (920, 240)
        assert dict(block.footer) == {}
        assert block.log_file == str(path)
        assert not block.is_corrupt and block.is_data

    def test_headers(self) -> None:
        path = only_file("valid_log_avro_data")
        [block] = read_log_blocks_bytes(path.read_bytes(), str(path))
        assert set(block.header) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA}
        assert block.instant_time == "20250316025828811"
        assert block.target_instant_time is None
        schema = json.loads(block.schema_json or "")
        assert schema["name"] == "trips_quickstart_mor_avro_record"
        assert [f["name"] for f in schema["fields"]][:5] == [
            "_hoodie_commit_time",
            "_hoodie_commit_seqno",
            "_hoodie_record_key",
            "_hoodie_partition_path",
            "_hoodie_file_name",
        ]
        assert block.compacted_block_times == ()
        assert block.is_partial is False
        assert block.min_event_time_header is None

    def test_content_bytes_by_hand(self) -> None:
        path = only_file("valid_log_avro_data")
        with path.open("rb") as f:
            [block] = list(scan_log_blocks(f, 1172, str(path)))
            content = read_block_content(f, block)
        # version 3, one record of 0xe4 bytes (hudi-format.md §6), filling the content exactly.
        assert struct.unpack(">iii", content[:12]) == (3, 1, 0xE4)
        assert len(content) == 12 + 0xE4

    def test_records(self) -> None:
        path = only_file("valid_log_avro_data")
        with path.open("rb") as f:
            [block] = list(scan_log_blocks(f, 1172, str(path)))
            table = read_block_records(f, block)
        assert table.num_rows == 1
        assert table.column_names == [
            "_hoodie_commit_time",
            "_hoodie_commit_seqno",
            "_hoodie_record_key",
            "_hoodie_partition_path",
            "_hoodie_file_name",
            "ts",
            "uuid",
            "rider",
            "driver",
            "fare",
            "city",
        ]
        row = table.to_pylist()[0]
        assert row["_hoodie_commit_time"] == "20250316025828811"
        assert row["_hoodie_commit_seqno"] == "20250316025828811_0_2"
        assert row["_hoodie_record_key"] == "334e26e9-8355-45cc-97c6-c31daf0df330"
        assert row["_hoodie_partition_path"] == "city=san_francisco"
        # In log records the file name meta column holds the file id only (hudi-format.md §7).
        assert row["_hoodie_file_name"] == "ff32ab89-5ad0-4968-83b4-89a34c95d32f-0"
        assert row["ts"] == 1695159649088
        assert row["rider"] == "rider-A"
        assert row["driver"] == "driver-K"
        assert row["fare"] == pytest.approx(29.1)
        assert table.schema.field("ts").type == pa.int64()
        assert table.schema.field("fare").type == pa.float64()


@SKIP_NO_SHARED
class TestRealDeleteFile:
    def test_headers_and_framing(self) -> None:
        path = only_file("valid_log_delete")
        [block] = scan_file(path)
        assert block.block_type is BlockType.DELETE
        assert (block.offset, block.size) == (0, path.stat().st_size)
        assert block.instant_time == "20250618054714114"
        assert json.loads(block.schema_json or "")["name"] == "v6_trips_8i3d_record"
        assert (block.content_offset, block.content_length) == (896, 190)

    def test_records_keep_java_wrappers(self) -> None:
        path = only_file("valid_log_delete")
        with path.open("rb") as f:
            [block] = list(scan_log_blocks(f, path.stat().st_size, str(path)))
            content = read_block_content(f, block)
            table = read_block_records(f, block)
        assert struct.unpack(">i", content[:4])[0] == 3
        assert table.column_names == [
            "_hoodie_record_key",
            "_hoodie_partition_path",
            "ordering_value",
            "ordering_wrapper",
        ]
        assert table.column("_hoodie_record_key").to_pylist() == [
            "e96c4396-3fad-413a-a942-4cb36106d721",
            "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
            "334e26e9-8355-45cc-97c6-c31daf0df330",
        ]
        assert table.column("_hoodie_partition_path").to_pylist() == ["city=san_francisco"] * 3
        # Spark SQL DELETE writes IntWrapper(0), union index 2 in Java's schema.
        assert table.column("ordering_wrapper").to_pylist() == ["IntWrapper"] * 3
        assert table.column("ordering_value").to_pylist() == [0, 0, 0]
        assert table.schema.field("ordering_value").type == pa.int32()


@SKIP_NO_SHARED
class TestRealParquetFile:
    def test_block_and_records(self) -> None:
        path = only_file("valid_log_parquet_data")
        with path.open("rb") as f:
            [block] = list(scan_log_blocks(f, path.stat().st_size, str(path)))
            content = read_block_content(f, block)
            table = read_block_records(f, block)
        assert block.block_type is BlockType.PARQUET_DATA
        assert (block.offset, block.size) == (0, 5311)
        assert block.instant_time == "20250113230424191"
        assert json.loads(block.schema_json or "")["name"] == "trips_quickstart_mor_parquet_record"
        assert content[:4] == b"PAR1" and content[-4:] == b"PAR1"
        assert table.num_rows == 1
        row = table.to_pylist()[0]
        assert row["_hoodie_commit_seqno"] == "20250113230424191_0_8"
        assert row["_hoodie_record_key"] == "334e26e9-8355-45cc-97c6-c31daf0df330"
        assert row["_hoodie_file_name"] == "ee2ace10-7667-40f5-9848-0a144b5ea064-0"
        assert row["fare"] == pytest.approx(29.1)


@SKIP_NO_SHARED
class TestRealRollbackFile:
    def test_command_block(self) -> None:
        path = only_file("valid_log_rollback")
        data = path.read_bytes()
        [block] = read_log_blocks_bytes(data, str(path))
        assert block.block_type is BlockType.COMMAND
        assert (block.offset, block.size, len(data)) == (0, 105, 105)
        assert struct.unpack(">q", data[-8:])[0] == 97
        assert dict(block.header) == {
            HeaderKey.INSTANT_TIME: "20250126040936578",
            HeaderKey.TARGET_INSTANT_TIME: "20250126040826878",
            HeaderKey.COMMAND_BLOCK_TYPE: "0",
        }
        assert block.content_length == 0
        assert not block.is_data
        with path.open("rb") as f:
            assert read_block_content(f, block) == b""


@SKIP_NO_SHARED
class TestEveryRealLog:
    def test_there_are_many(self) -> None:
        assert len(real_log_files()) > 80

    def test_header_scan_equals_in_memory_scan(self) -> None:
        counts: collections.Counter[BlockType] = collections.Counter()
        for path in real_log_files():
            streamed = scan_file(path)
            in_memory = read_log_blocks_bytes(path.read_bytes(), str(path))
            assert streamed == in_memory, path
            assert sum(b.size for b in streamed) == path.stat().st_size, path
            offsets = [b.offset for b in streamed]
            assert offsets == sorted(offsets) and offsets[0] == 0
            counts.update(b.block_type for b in streamed)
        for block_type in (BlockType.AVRO_DATA, BlockType.DELETE, BlockType.PARQUET_DATA, BlockType.HFILE_DATA):
            assert counts[block_type] > 0
        # Exactly one real corrupt block exists: the torn tail of mor_table_corrupt_tail_block.
        assert counts[BlockType.CORRUPT] == 1

    def test_block_type_counts_match_fixture_notes(self) -> None:
        for meta_path in sorted(TABLES_DIR.glob("*/fixture.json")):
            meta = json.loads(meta_path.read_text())
            table_dir = meta_path.parent / meta["table_dir"]
            counts: collections.Counter[str] = collections.Counter()
            for path in real_log_files():
                if table_dir in path.parents and ".hoodie" not in path.relative_to(table_dir).parts:
                    counts.update(b.block_type.name for b in scan_file(path))
            expected = {k.split("(")[0]: v for k, v in (meta.get("block_types") or {}).items()}
            assert dict(counts) == expected, meta_path.parent.name

    def test_header_scan_does_not_read_content(self, monkeypatch: pytest.MonkeyPatch) -> None:
        class CountingReader(io.BytesIO):
            read_bytes = 0
            reads = 0

            def read(self, n: int | None = -1) -> bytes:
                data = super().read(n)
                self.read_bytes += len(data)
                self.reads += 1
                return data

        path = only_file("valid_log_parquet_data")
        data = path.read_bytes()
        # A log smaller than the read-ahead is read whole, in one call.
        f = CountingReader(data)
        [block] = list(scan_log_blocks(f, len(data), str(path)))
        assert (f.reads, f.read_bytes) == (1, len(data))
        # With a read-ahead smaller than the content, the content is skipped: one read for the framing and headers,
        # one at the reverse pointer (which also brings the footer).
        assert block.content_offset < 1024 < block.content_offset + block.content_length
        monkeypatch.setattr(logfile, "READ_AHEAD", 1024)
        f = CountingReader(data)
        assert list(scan_log_blocks(f, len(data), str(path))) == [block]
        assert f.reads == 2
        assert f.read_bytes < len(data) - block.content_length + 1024

    def test_every_data_and_delete_block_decodes(self) -> None:
        decoded = collections.Counter[BlockType]()
        for path in real_log_files():
            with path.open("rb") as f:
                for block in scan_log_blocks(f, path.stat().st_size, str(path)):
                    if block.block_type is BlockType.HFILE_DATA:
                        with pytest.raises(UnsupportedFeatureError, match="HFILE"):
                            read_block_records(f, block)
                        continue
                    if not (block.is_data or block.block_type is BlockType.DELETE):
                        continue
                    table = read_block_records(f, block)
                    # Metadata-table file groups start with an empty delete block; data-table blocks never are.
                    if ".hoodie" not in path.parts:
                        assert table.num_rows > 0, (path, block.offset)
                    if block.block_type is BlockType.AVRO_DATA:
                        schema = json.loads(block.schema_json or "")
                        assert table.column_names == [fld["name"] for fld in schema["fields"]]
                    decoded[block.block_type] += 1
        assert decoded[BlockType.AVRO_DATA] >= 50 and decoded[BlockType.DELETE] >= 25
        assert decoded[BlockType.PARQUET_DATA] >= 5

    def test_corrupt_tail_fixture(self) -> None:
        folder = TABLES_DIR / "mor_table_corrupt_tail_block"
        blocks = [b for p in real_log_files() if folder in p.parents for b in scan_file(p)]
        corrupt = [b for b in blocks if b.is_corrupt]
        assert len(corrupt) == 1
        [bad] = corrupt
        assert bad.format_version is None and bad.content_offset == 0 and dict(bad.header) == {}
        assert bad.corrupt_reason is not None and "past EOF" in bad.corrupt_reason
        assert bad.offset + bad.size == Path(bad.log_file).stat().st_size

    def test_delete_ordering_types_across_fixtures(self) -> None:
        expected = {
            "mor_table_delete_ord_int": ("IntWrapper", pa.int32(), [4, 3]),
            "mor_table_delete_ord_long": ("LongWrapper", pa.int64(), [4000, 3000]),
            "mor_table_delete_ord_double": ("DoubleWrapper", pa.float64(), [6.0, 4.5]),
            "mor_table_delete_ord_string": ("StringWrapper", pa.string(), ["ord_4", "ord_3"]),
            "mor_table_delete_ord_decimal": (
                "DecimalWrapper",
                pa.decimal128(30, 15),
                [Decimal("4.000000000000000"), Decimal("3.000000000000000")],
            ),
            # Spark hands Hudi timestamps as epoch micros longs: LongWrapper, not TimestampMicrosWrapper.
            "mor_table_delete_ord_timestamp": ("LongWrapper", pa.int64(), [400000000000, 300000000000]),
        }
        for fixture, (wrapper, arrow_type, values) in expected.items():
            assert isinstance(values, list)
            tables = []
            for path in real_log_files():
                if TABLES_DIR / fixture in path.parents and ".hoodie" not in path.parts:
                    with path.open("rb") as f:
                        for block in scan_log_blocks(f, path.stat().st_size, str(path)):
                            if block.block_type is BlockType.DELETE:
                                tables.append(read_block_records(f, block))
            [table] = tables
            assert table.column("ordering_wrapper").to_pylist() == [wrapper] * len(values), fixture
            assert table.schema.field("ordering_value").type == arrow_type, fixture
            assert table.column("ordering_value").to_pylist() == values, fixture


# ---------------------------------------------------------------------------------------------------------------------
# Synthetic blocks: framing
# ---------------------------------------------------------------------------------------------------------------------


class TestSyntheticFraming:
    def test_round_trip_of_several_blocks(self) -> None:
        first = avro_block(RECORDS)
        second = command_block("20250102000000000", "20250101000000000")
        data = first + second
        blocks = read_log_blocks_bytes(data, "mem.log")
        assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA, BlockType.COMMAND]
        assert [(b.offset, b.size) for b in blocks] == [(0, len(first)), (len(first), len(second))]
        assert blocks[1].target_instant_time == "20250101000000000"
        assert blocks[1].header[HeaderKey.COMMAND_BLOCK_TYPE] == "0"
        table = read_block_records(io.BytesIO(data), blocks[0])
        assert table.to_pylist() == RECORDS

    def test_empty_file_has_no_blocks(self) -> None:
        assert read_log_blocks_bytes(b"", "empty.log") == []

    def test_a_log_read_whole_lists_what_the_scan_lists(self) -> None:
        """``scan_log_bytes`` (the storage layer's list of a small log read whole) answers a log of one sound block
        with one parse; every other shape — more blocks, a corrupt or torn tail, bytes past the listed size, fewer
        bytes than listed — is the scan's answer, block for block (or its error)."""
        first = avro_block(RECORDS)
        second = command_block("20250102000000000", "20250101000000000")
        shapes = {
            "one block": first,
            "two blocks": first + second,
            "a torn second block": first + second[:20],
            "a short tail": first + b"#HU",
            "a corrupt first block": avro_block(RECORDS, reverse_pointer=12345) + second,
            "no magic": b"garbage that is not a log file at all",
        }
        for what, data in shapes.items():
            for size in (len(data), len(data) - 3, len(first)):
                expected: list[LogBlock] | str
                got: list[LogBlock] | str
                try:
                    expected = list(scan_log_blocks(data, size, "w.log"))
                except LogFormatError as exc:
                    expected = str(exc)
                try:
                    got = scan_log_bytes(data, size, "w.log")
                except LogFormatError as exc:
                    got = str(exc)
                assert got == expected, (what, size)
        assert len(scan_log_bytes(first + second, len(first + second), "w.log")) == 2
        assert [b.block_type for b in scan_log_bytes(first + second[:20], len(first) + 20, "w.log")] == [
            BlockType.AVRO_DATA,
            BlockType.CORRUPT,
        ]

    def test_header_order_is_not_significant(self) -> None:
        a = encode_block(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: "1", HeaderKey.TARGET_INSTANT_TIME: "0"})
        b = encode_block(BlockType.COMMAND, {HeaderKey.TARGET_INSTANT_TIME: "0", HeaderKey.INSTANT_TIME: "1"})
        assert read_log_blocks_bytes(a, "x")[0].header == read_log_blocks_bytes(b, "x")[0].header

    def test_header_properties(self) -> None:
        header = {
            HeaderKey.INSTANT_TIME: "20250103000000000",
            HeaderKey.COMPACTED_BLOCK_TIMES: "20250101000000000, 20250102000000000,",
            HeaderKey.IS_PARTIAL: "TRUE",
            HeaderKey.MIN_EVENT_TIME: "1700000000123",
        }
        [block] = read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, header), "x")
        assert block.compacted_block_times == ("20250101000000000", "20250102000000000")
        assert block.is_partial is True
        assert block.min_event_time_header == 1700000000123

    def test_footer_is_read(self) -> None:
        [block] = read_log_blocks_bytes(encode_block(BlockType.COMMAND, {}, footer={HeaderKey.INSTANT_TIME: "7"}), "x")
        assert dict(block.footer) == {HeaderKey.INSTANT_TIME: "7"}

    def test_a_footer_count_without_its_entries_fails_every_path(self) -> None:
        # The sizes all add up (content, a 4-byte footer count, the reverse pointer) but the count says one entry: the
        # one-struct-call path must not take the block as sound; the field-by-field path names the count.
        good = encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "20250101000000000"}, b"\x00" * 40)
        bad = good[:-12] + struct.pack(">i", 1) + good[-8:]
        assert logfile.scan_log_ends(good[:30], good[-12:], len(good), "f.log") is None  # headers past the head
        assert logfile.scan_log_ends(good[:-20], good[-12:], len(good), "f.log") is not None
        assert logfile.scan_log_ends(bad[:-20], bad[-12:], len(bad), "f.log") is None
        for source in (bad, io.BytesIO(bad)):
            with pytest.raises(LogFormatError, match="footer entry count 1"):
                list(scan_log_blocks(source, len(bad), "f.log"))

    @pytest.mark.parametrize("value", ["12a", "", " 1_000", "١٢", "1.5"])
    def test_min_event_time_must_be_decimal(self, value: str) -> None:
        [block] = read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, {HeaderKey.MIN_EVENT_TIME: value}), "f.log")
        with pytest.raises(LogFormatError, match="MIN_EVENT_TIME"):
            _ = block.min_event_time_header

    def test_negative_min_event_time_is_accepted(self) -> None:
        [block] = read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, {HeaderKey.MIN_EVENT_TIME: "-5"}), "f.log")
        assert block.min_event_time_header == -5

    def test_long_header_values_are_shared_and_always_exact(self) -> None:
        # A writer schema repeats in every block: blocks listed together hold one string for it, whichever path parsed
        # them (B has a footer: the field-by-field path), and a value of the same length that differs in one byte is
        # its own text, never the shared one.
        schema = json.dumps(
            {"type": "record", "name": "r", "fields": [{"name": f"c{i}", "type": "long"} for i in range(9)]}
        )
        other = schema.replace('"c8"', '"c9"')
        assert len(other) == len(schema) >= logfile._SHARED_TEXT_MIN and other != schema
        a = encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1", HeaderKey.SCHEMA: schema})
        b = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema}, footer={HeaderKey.INSTANT_TIME: "2"})
        c = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: other})
        d = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema})
        blocks = read_log_blocks_bytes(bytearray(a + b + c + d), "x.log")
        assert [bl.schema_json for bl in blocks] == [schema, schema, other, schema]
        assert blocks[0].schema_json is blocks[1].schema_json
        # Another log (another buffer) with the schema: the same string again.
        [again] = read_log_blocks_bytes(a, "y.log")
        assert again.schema_json == schema and again.schema_json is blocks[3].schema_json

    def test_a_long_header_value_that_is_not_utf8_is_an_error_after_a_shared_one(self) -> None:
        schema = "s" * 100
        broken = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: b"s" * 99 + b"\xff"})
        good = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema})
        assert read_log_blocks_bytes(good, "x.log")[0].schema_json == schema
        with pytest.raises(LogFormatError, match="not valid UTF-8"):
            read_log_blocks_bytes(good + broken, "x.log")

    def test_shared_header_values_are_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(logfile, "_SHARED_TEXTS", {})
        monkeypatch.setattr(logfile, "_SHARED_TEXT_SLOTS", 4)
        values = ["v" * n for n in range(64, 74)]
        data = b"".join(encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: v}) for v in values)
        assert [bl.schema_json for bl in read_log_blocks_bytes(data, "x.log")] == values
        assert 0 < len(logfile._SHARED_TEXTS) <= 4
        # and by their bytes: a value over the budget is decoded, not kept; values that would pass it empty the map
        monkeypatch.setattr(logfile, "_SHARED_TEXT_BYTES", 200)
        monkeypatch.setattr(logfile, "_shared_text_bytes", 0)
        logfile._SHARED_TEXTS.clear()
        values = ["w" * 300, "x" * 90, "y" * 100, "z" * 120]
        data = b"".join(encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: v}) for v in values)
        assert [bl.schema_json for bl in read_log_blocks_bytes(data, "x.log")] == values
        assert [text for _, text in logfile._SHARED_TEXTS.values()] == ["z" * 120]

    def test_scan_window_boundary(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # A magic straddling two scan windows must still be found after a corrupt region.
        monkeypatch.setattr(logfile, "SCAN_WINDOW", 16)
        good = command_block("2", "1")
        for junk_len in range(1, 40):
            data = MAGIC + b"x" * junk_len + good  # a torn block: its size field is garbage
            blocks = read_log_blocks_bytes(data, "w.log")
            assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.COMMAND], junk_len
            assert blocks[0].size == 6 + junk_len and blocks[1].offset == 6 + junk_len


class TestCorruptBlocks:
    def test_truncation_at_every_point_is_reported_not_fatal(self) -> None:
        first = avro_block(RECORDS)
        second = avro_block(RECORDS, instant="20250102000000000")
        data = first + second
        for cut in range(len(first) + 1, len(data)):
            blocks = read_log_blocks_bytes(data[:cut], "cut.log")
            assert blocks[0].block_type is BlockType.AVRO_DATA and blocks[0].size == len(first), cut
            if cut - len(first) < len(MAGIC):  # not even a magic: the end of the file, as in Java
                assert len(blocks) == 1, cut
                continue
            assert [b.block_type for b in blocks[1:]] == [BlockType.CORRUPT], cut
            assert blocks[1].offset == len(first) and blocks[1].offset + blocks[1].size == cut

    def test_truncation_inside_the_first_block(self) -> None:
        data = avro_block(RECORDS)
        for cut in (1, 5):  # not even a magic: an empty file, as Java's hasNext (readMagic hits EOF) says
            assert read_log_blocks_bytes(data[:cut], "cut.log") == [], cut
        for cut in (6, 13, 14, 30, len(data) // 2, len(data) - 8, len(data) - 1):
            blocks = read_log_blocks_bytes(data[:cut], "cut.log")
            assert [b.block_type for b in blocks] == [BlockType.CORRUPT], cut
            assert blocks[0].size == cut

    def test_wrong_magic_at_the_start_is_an_error(self) -> None:
        # Java's hasNext throws CorruptedLogFileException and hudi-rs fails with "Invalid magic".
        bad = avro_block(RECORDS, magic=b"#HUDX#")
        good = command_block("2", "1")
        with pytest.raises(LogFormatError, match="does not start with the magic") as err:
            read_log_blocks_bytes(bad + good, "m.log")
        assert err.value.path == "m.log" and err.value.offset == 0

    def test_wrong_magic_without_further_magic_is_an_error(self) -> None:
        data = b"garbage that is not a log file at all"
        with pytest.raises(LogFormatError, match="does not start with the magic"):
            read_log_blocks_bytes(data, "g.log")

    def test_block_size_larger_than_file(self) -> None:
        data = avro_block(RECORDS, block_size=10_000) + command_block("2", "1")
        blocks = read_log_blocks_bytes(data, "big.log")
        assert blocks[0].is_corrupt and "past EOF" in (blocks[0].corrupt_reason or "")
        # The command block's magic ends the corrupt region, as in Java's forward scan.
        assert blocks[1].block_type is BlockType.COMMAND

    def test_reverse_pointer_mismatch(self) -> None:
        data = avro_block(RECORDS, reverse_pointer=12345)
        [block] = read_log_blocks_bytes(data, "rp.log")
        assert block.is_corrupt and "reverse pointer" in (block.corrupt_reason or "")

    def test_garbage_after_block(self) -> None:
        data = avro_block(RECORDS) + b"NOTMAGIC" + command_block("2", "1")
        blocks = read_log_blocks_bytes(data, "g.log")
        assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.COMMAND]
        assert "neither a magic nor EOF" in (blocks[0].corrupt_reason or "")

    def test_short_tail_after_sound_block(self) -> None:
        good = command_block("2", "1")
        for tail in (b"#", b"#HU", b"#HUDI", b"xyzzy"):  # fewer than 6 bytes: the end of the file, as in Java
            blocks = read_log_blocks_bytes(good + tail, "t.log")
            assert [b.block_type for b in blocks] == [BlockType.COMMAND], tail

    def test_block_size_2_pow_62_returns_quickly_without_allocation(self) -> None:
        data = MAGIC + struct.pack(">q", 2**62) + b"\x00" * 64
        tracemalloc.start()
        started = time.monotonic()
        try:
            blocks = read_log_blocks_bytes(data, "huge.log")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.monotonic() - started < 2
        assert peak < 1 << 20
        assert [b.block_type for b in blocks] == [BlockType.CORRUPT]

    def test_negative_block_size(self) -> None:
        data = MAGIC + struct.pack(">q", -(2**40)) + b"\x00" * 64
        [block] = read_log_blocks_bytes(data, "neg.log")
        assert block.is_corrupt


class TestHardErrors:
    def test_unknown_header_ordinal_names_file_and_offset(self) -> None:
        prefix = command_block("2", "1")
        data = prefix + encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1", 42: "x"})
        with pytest.raises(LogFormatError, match="Invalid metadata key: 42") as info:
            read_log_blocks_bytes(data, "/tables/t/.f1_1.log.1_0-1-1")
        # The key of the second entry: magic, size, version, type, count, first entry (4 + 4 + 1).
        key_offset = len(prefix) + 14 + 4 + 4 + 4 + 9
        assert info.value.path == "/tables/t/.f1_1.log.1_0-1-1"
        assert info.value.offset == key_offset
        assert f"/tables/t/.f1_1.log.1_0-1-1 @ byte {key_offset}" in str(info.value)

    def test_unknown_footer_ordinal(self) -> None:
        with pytest.raises(LogFormatError, match="Invalid metadata key: 9"):
            read_log_blocks_bytes(encode_block(BlockType.COMMAND, {}, footer={9: "x"}), "f.log")

    def test_min_event_time_ordinal_is_accepted(self) -> None:
        [block] = read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, {100: "42"}), "f.log")
        assert block.header == {HeaderKey.MIN_EVENT_TIME: "42"}

    @pytest.mark.parametrize("block_type", [7, 9, 255, -1])
    def test_unknown_block_type(self, block_type: int) -> None:
        with pytest.raises(LogFormatError, match=f"Invalid block type: {block_type}") as info:
            read_log_blocks_bytes(encode_block(block_type, {}), "t.log")
        assert info.value.offset == 18 and info.value.path == "t.log"

    def test_invalid_utf8_header(self) -> None:
        with pytest.raises(LogFormatError, match="UTF-8"):
            read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: b"\xff\xfe"}), "u.log")

    @pytest.mark.parametrize("version", [2, 3, -1, 1 << 20])
    def test_invalid_log_format_version(self, version: int) -> None:
        with pytest.raises(LogFormatError, match="Invalid log format version"):
            read_log_blocks_bytes(encode_block(BlockType.COMMAND, {}, version=version), "v.log")

    def test_legacy_version_zero(self) -> None:
        with pytest.raises(UnsupportedFeatureError, match="version 0"):
            read_log_blocks_bytes(encode_block(BlockType.COMMAND, {}, version=0), "v.log")

    def test_content_length_larger_than_file(self) -> None:
        data = encode_block(BlockType.AVRO_DATA, {}, b"abc", content_length=1 << 40)
        with pytest.raises(LogFormatError, match="content of 1099511627776 bytes runs past the end"):
            read_log_blocks_bytes(data, "c.log")

    def test_negative_content_length(self) -> None:
        with pytest.raises(LogFormatError, match="content"):
            read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, {}, b"abc", content_length=-3), "c.log")

    def test_content_length_too_small_leaves_bytes(self) -> None:
        with pytest.raises(LogFormatError):
            read_log_blocks_bytes(encode_block(BlockType.AVRO_DATA, {}, b"abcdefgh", content_length=4), "c.log")

    @pytest.mark.parametrize("count", [-1, 1025, 1 << 30])
    def test_header_entry_count_is_bounded(self, count: int) -> None:
        data = bytearray(encode_block(BlockType.AVRO_DATA, {}))
        data[22:26] = struct.pack(">i", count)
        with pytest.raises(LogFormatError, match="entry count"):
            read_log_blocks_bytes(bytes(data), "h.log")

    def test_header_value_length_larger_than_block(self) -> None:
        data = bytearray(encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}))
        data[30:34] = struct.pack(">i", 2**31 - 1)
        with pytest.raises(LogFormatError, match="runs past the end of the block"):
            read_log_blocks_bytes(bytes(data), "h.log")

    def test_read_block_content_short_file(self) -> None:
        data = avro_block(RECORDS)
        [block] = read_log_blocks_bytes(data, "s.log")
        with pytest.raises(LogFormatError, match="truncated"):
            read_block_content(io.BytesIO(data[: block.content_offset + 3]), block)


# ---------------------------------------------------------------------------------------------------------------------
# Synthetic blocks: content
# ---------------------------------------------------------------------------------------------------------------------


def single_block(data: bytes) -> tuple[LogBlock, bytes]:
    [block] = read_log_blocks_bytes(data, "content.log")
    return block, read_block_content(io.BytesIO(data), block)


class TestAvroContent:
    def test_decodes_with_writer_schema(self) -> None:
        block, content = single_block(avro_block(RECORDS))
        table = decode_avro_data_block(block, content)
        assert table.to_pylist() == RECORDS
        assert table.schema.field("ts").type == pa.int32()

    def test_zero_records(self) -> None:
        block, content = single_block(avro_block([]))
        table = decode_avro_data_block(block, content)
        assert table.num_rows == 0 and table.column_names[2] == "ts"

    def test_reader_schema_resolution(self) -> None:
        reader = json.loads(json.dumps(TRIPS_SCHEMA))
        reader["name"] = "renamed_table_record"
        fields = {f["name"]: f for f in reader["fields"]}
        fields["ts"]["type"] = ["null", "long"]
        fields["fare"]["type"] = ["null", "double"]
        fields["rider"]["type"] = ["null", "bytes"]
        reader["fields"] = [
            fields["rider"],
            fields["_hoodie_record_key"],
            fields["ts"],
            fields["fare"],
            {"name": "added_with_default", "type": "int", "default": 7},
            {"name": "added_nullable", "type": ["null", "string"], "default": None},
        ]
        block, content = single_block(avro_block(RECORDS))
        table = decode_avro_data_block(block, content, reader_schema=reader)
        assert table.column_names == [
            "rider",
            "_hoodie_record_key",
            "ts",
            "fare",
            "added_with_default",
            "added_nullable",
        ]
        assert table.schema.field("ts").type == pa.int64()
        assert table.schema.field("fare").type == pa.float64()
        assert table.schema.field("rider").type == pa.binary()
        assert table.column("rider").to_pylist() == [b"a", b"b"]
        assert table.column("fare").to_pylist() == [1.5, None]
        assert table.column("added_with_default").to_pylist() == [7, 7]
        assert table.column("added_nullable").to_pylist() == [None, None]

    def test_int_to_double_promotion(self) -> None:
        reader = json.loads(json.dumps(TRIPS_SCHEMA))
        reader["fields"][2]["type"] = ["null", "double"]
        block, content = single_block(avro_block(RECORDS))
        table = decode_avro_data_block(block, content, reader_schema=reader)
        assert table.column("ts").to_pylist() == [1.0, 2.0]

    def test_bad_content_version(self) -> None:
        header = {HeaderKey.SCHEMA: json.dumps(TRIPS_SCHEMA)}
        data = encode_block(BlockType.AVRO_DATA, header, avro_content(TRIPS_SCHEMA, RECORDS, version=2))
        block, content = single_block(data)
        with pytest.raises(LogFormatError, match="content version 2"):
            decode_avro_data_block(block, content)

    def test_record_length_exceeding_content(self) -> None:
        content = bytearray(avro_content(TRIPS_SCHEMA, RECORDS))
        content[8:12] = struct.pack(">i", 10_000)
        block, raw = single_block(
            encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: json.dumps(TRIPS_SCHEMA)}, bytes(content))
        )
        with pytest.raises(LogFormatError, match="record 0 length 10000 exceeds"):
            decode_avro_data_block(block, raw)

    @pytest.mark.parametrize("count", [-1, 3, 2**31 - 1])
    def test_record_count_not_matching(self, count: int) -> None:
        content = bytearray(avro_content(TRIPS_SCHEMA, RECORDS))
        content[4:8] = struct.pack(">i", count)
        block, raw = single_block(
            encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: json.dumps(TRIPS_SCHEMA)}, bytes(content))
        )
        with pytest.raises(LogFormatError):
            decode_avro_data_block(block, raw)

    def test_record_bodies_not_matching_schema(self) -> None:
        content = bytearray(avro_content(TRIPS_SCHEMA, RECORDS))
        content[13] = 0x09  # an out-of-range union branch inside the first record
        block, raw = single_block(
            encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: json.dumps(TRIPS_SCHEMA)}, bytes(content))
        )
        with pytest.raises(LogFormatError, match="cannot decode"):
            decode_avro_data_block(block, raw)

    def test_missing_or_invalid_schema_header(self) -> None:
        block, content = single_block(encode_block(BlockType.AVRO_DATA, {}, avro_content(TRIPS_SCHEMA, RECORDS)))
        with pytest.raises(LogFormatError, match="no SCHEMA header"):
            decode_avro_data_block(block, content)
        block, content = single_block(
            encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: "{not json"}, avro_content(TRIPS_SCHEMA, RECORDS))
        )
        with pytest.raises(LogFormatError, match="not valid JSON"):
            decode_avro_data_block(block, content)

    def test_short_content(self) -> None:
        block, _ = single_block(avro_block(RECORDS))
        with pytest.raises(LogFormatError):
            decode_avro_data_block(block, b"\x00\x00")


class TestDeleteContent:
    def wrap(self, name: str, value: Any) -> tuple[str, dict[str, Any]]:
        return (f"org.apache.hudi.avro.model.{name}", {"value": value})

    def decode(self, entries: list[dict[str, Any]]) -> pa.Table:
        block, content = single_block(encode_block(BlockType.DELETE, {}, delete_content(entries)))
        return decode_delete_block(block, content)

    @pytest.mark.parametrize(
        ("wrapper", "value", "arrow_type", "expected"),
        [
            ("BooleanWrapper", True, pa.bool_(), True),
            ("IntWrapper", 5, pa.int32(), 5),
            ("LongWrapper", 2**40, pa.int64(), 2**40),
            ("FloatWrapper", 1.5, pa.float32(), 1.5),
            ("DoubleWrapper", 2.25, pa.float64(), 2.25),
            ("BytesWrapper", b"\x01", pa.binary(), b"\x01"),
            ("StringWrapper", "s", pa.string(), "s"),
            ("DecimalWrapper", Decimal("1.5"), pa.decimal128(30, 15), Decimal("1.500000000000000")),
        ],
    )
    def test_each_wrapper(self, wrapper: str, value: Any, arrow_type: pa.DataType, expected: Any) -> None:
        table = self.decode([{"recordKey": "k", "partitionPath": "p", "orderingVal": self.wrap(wrapper, value)}])
        assert table.column("ordering_wrapper").to_pylist() == [wrapper]
        assert table.schema.field("ordering_value").type == arrow_type
        assert table.column("ordering_value").to_pylist() == [expected]

    def test_raw_temporal_wrappers(self) -> None:
        table = self.decode([{"recordKey": "k", "orderingVal": self.wrap("DateWrapper", 1)}])
        assert table.schema.field("ordering_value").type == pa.date32()
        assert str(table.column("ordering_value")[0]) == "1970-01-02"
        table = self.decode([{"recordKey": "k", "orderingVal": self.wrap("TimestampMicrosWrapper", 1_000_000)}])
        assert table.schema.field("ordering_value").type == pa.timestamp("us", tz="UTC")
        assert table.column("ordering_value").cast(pa.int64()).to_pylist() == [1_000_000]

    def test_union_indices_are_javas(self) -> None:
        # Hand-encoded datum: 1 entry, recordKey "k", partitionPath null, orderingVal branch 2 (IntWrapper) = 0.
        payload = bytes([0x02, 0x02, 0x02]) + b"k" + bytes([0x00, 0x04, 0x00, 0x00])
        content = struct.pack(">ii", 3, len(payload)) + payload
        block, raw = single_block(encode_block(BlockType.DELETE, {}, content))
        table = decode_delete_block(block, raw)
        assert table.to_pylist() == [
            {
                "_hoodie_record_key": "k",
                "_hoodie_partition_path": None,
                "ordering_value": 0,
                "ordering_wrapper": "IntWrapper",
            }
        ]

    def test_mixed_and_null_ordering(self) -> None:
        table = self.decode(
            [
                {"recordKey": "a", "orderingVal": self.wrap("IntWrapper", 1)},
                {"recordKey": "b", "orderingVal": self.wrap("StringWrapper", "x")},
                {"recordKey": "c", "orderingVal": None},
            ]
        )
        assert table.schema.field("ordering_value").type == pa.string()
        assert table.column("ordering_value").to_pylist() == ["1", "x", None]
        assert table.column("ordering_wrapper").to_pylist() == ["IntWrapper", "StringWrapper", None]
        table = self.decode([{"recordKey": "a", "orderingVal": None}])
        assert table.schema.field("ordering_value").type == pa.null()

    def test_empty_list(self) -> None:
        assert self.decode([]).num_rows == 0

    @pytest.mark.parametrize("version", [1, 2])
    def test_kryo_versions_unsupported(self, version: int) -> None:
        block, content = single_block(encode_block(BlockType.DELETE, {}, delete_content([], version=version)))
        with pytest.raises(UnsupportedFeatureError, match="Kryo"):
            decode_delete_block(block, content)

    def test_bad_version_and_length(self) -> None:
        block, content = single_block(encode_block(BlockType.DELETE, {}, delete_content([], version=4)))
        with pytest.raises(LogFormatError, match="version 4"):
            decode_delete_block(block, content)
        bad = struct.pack(">ii", 3, 1 << 30) + b"\x00"
        block, content = single_block(encode_block(BlockType.DELETE, {}, bad))
        with pytest.raises(LogFormatError, match="payload length"):
            decode_delete_block(block, content)

    def test_garbage_payload(self) -> None:
        bad = struct.pack(">ii", 3, 4) + b"\x02\x02\x7f\x7f"
        block, content = single_block(encode_block(BlockType.DELETE, {}, bad))
        with pytest.raises(LogFormatError):
            decode_delete_block(block, content)


class TestDispatch:
    @pytest.mark.parametrize("block_type", [BlockType.HFILE_DATA, BlockType.CDC_DATA])
    def test_unsupported_block_types(self, block_type: BlockType) -> None:
        block, content = single_block(encode_block(block_type, {}, b"xx"))
        with pytest.raises(UnsupportedFeatureError, match=f"{block_type.name}.*content.log @ byte 0"):
            decode_data_block(block, content)

    def test_command_block_is_not_data(self) -> None:
        block, content = single_block(command_block("2", "1"))
        with pytest.raises(LogFormatError, match="not a data block"):
            read_block_records(io.BytesIO(command_block("2", "1")), block)
        assert content == b""

    def test_parquet_block_round_trip_and_garbage(self) -> None:
        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(pa.table({"a": [1, 2]}), sink)
        block, content = single_block(encode_block(BlockType.PARQUET_DATA, {}, sink.getvalue()))
        assert decode_parquet_data_block(block, content).column("a").to_pylist() == [1, 2]
        block, content = single_block(encode_block(BlockType.PARQUET_DATA, {}, b"PAR1" + b"\x00" * 20 + b"PAR1"))
        with pytest.raises(LogFormatError, match="Parquet"):
            decode_parquet_data_block(block, content)
        with pytest.raises(LogFormatError, match="not a Parquet file"):
            decode_parquet_data_block(block, b"nope")

    @pytest.mark.parametrize("where", ["column name", "nested field name"])
    def test_parquet_block_with_invalid_utf8_is_a_log_format_error(self, where: str) -> None:
        """A Parquet block whose bytes decode but hold a field name that is not UTF-8 (a flipped byte in a log
        written by Hudi) is refused at the block, not handed on to fail later with a UnicodeDecodeError."""
        import pyarrow.parquet as pq

        data = pa.table(
            {
                "colname1": ["value111", "value222"],
                "outer": pa.array([{"nestedf1": 1}, {"nestedf1": 2}], pa.struct([("nestedf1", pa.int64())])),
            }
        )
        sink = io.BytesIO()
        pq.write_table(data, sink, store_schema=False, compression="NONE", use_dictionary=False)
        target = {"column name": b"colname1", "nested field name": b"nestedf1"}[where]
        raw = sink.getvalue()
        assert target in raw
        bad = raw.replace(target, target[:2] + b"\xb9" + target[3:])  # same length: the framing still holds
        block, content = single_block(encode_block(BlockType.PARQUET_DATA, {}, bad))
        with pytest.raises(LogFormatError, match="Parquet data block"):
            decode_parquet_data_block(block, content)
