"""Decoding the content of log blocks into Arrow tables.

Content layouts (``HoodieAvroDataBlock``, ``HoodieParquetDataBlock``, ``HoodieDeleteBlock``):

* Avro data: int32 content version (3), int32 record count, then per record an int32 length and the
  record's Avro binary encoding under the writer schema from the ``SCHEMA`` header.
* Parquet data: a complete Parquet file.
* Delete: int32 version (3), int32 payload length, then one Avro datum of ``HoodieDeleteRecordList``.

Every malformed input surfaces as :class:`~evt_toolkit.errors.LogFormatError` naming the file and the block
offset, whatever library the bytes were handed to.
"""

from __future__ import annotations

import copy
import io
import json
import os
import struct
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO, Final, TypeVar, cast

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evt_toolkit.errors import EvtError, LogFormatError, UnsupportedFeatureError
from evt_toolkit.format.avro_arrow import avro_to_arrow_schema, records_to_arrow
from evt_toolkit.format.avro_binary import avro_bytes, zigzag_long
from evt_toolkit.format.logfile import BlockType, LogBlock, read_block_content

# HoodieLogBlock.version: the only content version written since Hudi 0.6 (1 and 2 were Kryo based).
_CONTENT_VERSION = 3

_T = TypeVar("_T")
_II = struct.Struct(">ii").unpack_from


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "namespace": "org.apache.hudi.avro.model",
        "fields": [{"name": "value", "type": value_type}],
    }


# Union order of HoodieDeleteRecord.orderingVal in apache/hudi's HoodieDeleteRecordList.avsc; the wrapper
# records are those of HoodieMetadata.avsc. Union indices on disk are positions in this list, so the order is
# load-bearing. (hudi-rs bundles a schema whose union lists primitive types instead, which does not match the
# indices Java writes.) DateWrapper and TimestampMicrosWrapper deliberately carry no logical type, as in Java.
_ORDERING_WRAPPERS: list[dict[str, Any]] = [
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
    _wrapper("DateWrapper", "int"),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", "long"),
]

DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {"name": "orderingVal", "type": ["null", *_ORDERING_WRAPPERS], "default": None},
                    ],
                },
            },
        }
    ],
}

_PARSED_DELETE_SCHEMA = fastavro.parse_schema(copy.deepcopy(DELETE_RECORD_LIST_SCHEMA))


def _guard(block: LogBlock, what: str, fn: Callable[[], _T]) -> _T:
    """Runs a decoder over untrusted bytes; any failure becomes a LogFormatError at the block."""
    try:
        return fn()
    except EvtError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # fastavro/pyarrow raise a wide variety of types on garbage input
        raise LogFormatError(
            f"cannot decode {what}: {type(exc).__name__}: {exc}", block.log_file, block.offset
        ) from exc


def _int32(content: bytes, pos: int, block: LogBlock, what: str) -> int:
    if pos + 4 > len(content):
        raise LogFormatError(f"{what} runs past the end of the block content", block.log_file, block.offset)
    return int(struct.unpack_from(">i", content, pos)[0])


def _writer_schema(block: LogBlock) -> Any:
    text = block.schema_json
    if text is None:
        raise LogFormatError("data block has no SCHEMA header", block.log_file, block.offset)
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogFormatError(f"SCHEMA header is not valid JSON: {exc}", block.log_file, block.offset) from exc
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise LogFormatError("SCHEMA header is not an Avro record schema", block.log_file, block.offset)
    return schema


def _object_container(schema_json: str, count: int, body: bytes) -> bytes:
    """Wraps concatenated Avro record bodies in a one-block, uncompressed Avro object container.

    A log block's records are exactly what a container block holds (datums back to back), so one
    ``fastavro.reader`` pass decodes them all, far faster than one ``schemaless_reader`` call per record, and
    the trailing sync marker check catches record bodies that do not add up to the bytes framed.
    """
    sync = os.urandom(16)
    meta = zigzag_long(2) + avro_bytes(b"avro.schema") + avro_bytes(schema_json.encode("utf-8"))
    meta += avro_bytes(b"avro.codec") + avro_bytes(b"null") + zigzag_long(0)
    return b"Obj\x01" + meta + sync + zigzag_long(count) + zigzag_long(len(body)) + body + sync


def _record_bodies(block: LogBlock, content: bytes) -> tuple[int, bytes]:
    """Validates the Avro data block framing and returns the record count and the concatenated bodies."""
    version = _int32(content, 0, block, "content version")
    if version != _CONTENT_VERSION:
        # hudi-rs: "Only support log block version 3"; versions 1/2 predate Hudi 0.6.
        raise LogFormatError(f"unsupported Avro data block content version {version}", block.log_file, block.offset)
    count = _int32(content, 4, block, "record count")
    # Each record needs at least its 4-byte length, which bounds a believable count.
    if count < 0 or count * 4 > len(content) - 8:
        raise LogFormatError(f"invalid record count {count}", block.log_file, block.offset)
    pos = 8
    parts: list[bytes] = []
    for i in range(count):
        length = _int32(content, pos, block, f"length of record {i}")
        pos += 4
        if length < 0 or length > len(content) - pos:
            raise LogFormatError(
                f"record {i} length {length} exceeds the {len(content) - pos} bytes left in the block content",
                block.log_file,
                block.content_offset + pos - 4,
            )
        parts.append(content[pos : pos + length])
        pos += length
    if pos != len(content):
        raise LogFormatError(
            f"{len(content) - pos} unexpected bytes after the last record", block.log_file, block.content_offset + pos
        )
    return count, b"".join(parts)


def _align_record_name(writer: dict[str, Any], reader: dict[str, Any]) -> dict[str, Any]:
    # Avro resolution matches records by name, but Hudi's table schema and a block's writer schema often name
    # the top-level record differently (e.g. after a table rename); Hudi resolves them positionally by field
    # name regardless, so the reader's top-level name is aligned with the writer's.
    if reader.get("name") == writer.get("name") and reader.get("namespace") == writer.get("namespace"):
        return reader
    aligned = dict(reader)
    aligned["name"] = writer.get("name")
    if "namespace" in writer:
        aligned["namespace"] = writer["namespace"]
    else:
        aligned.pop("namespace", None)
    return aligned


@dataclass(frozen=True, slots=True)
class _BlockSchema:
    """What decoding needs of a (writer schema, reader schema) pair, worked out once and shared by its blocks.

    Attributes:
        writer: the block's writer schema (parsed ``SCHEMA`` header).
        target: the schema records are resolved to (the reader schema named like the writer, else the writer).
        arrow_schema: the Arrow schema of the decoded table.
        container_header: for the columnar path, the object-container header (magic, metadata with the framed
            schema, sync marker) that turns block bodies into a readable Avro file; ``None`` when the schema needs
            the record-by-record path.
        sync: the container's sync marker.
        raw_writer_json: the writer schema without its temporal and uuid logical types (:func:`_raw_logical`), for
            the record-by-record path.
        raw_target: ``target`` the same way.
    """

    writer: dict[str, Any]
    target: dict[str, Any]
    arrow_schema: pa.Schema
    container_header: bytes | None
    sync: bytes
    raw_writer_json: str = ""
    raw_target: dict[str, Any] | None = None


# A table's blocks share a handful of writer schemas and one reader schema, so parsing the SCHEMA header, converting
# it to Arrow and building the container header happen once per pair, not once per block. Keyed by the header text
# and the reader schema object's id; a hit is confirmed against a copy of that reader schema (it may be mutated).
_SCHEMAS: dict[tuple[str, int], tuple[dict[str, Any] | None, _BlockSchema]] = {}
_SCHEMAS_LIMIT = 256


#: Logical types fastavro turns into Python objects that cannot hold every value of their Avro type: ``datetime``,
#: ``date`` and ``time`` stop at years 1 and 9999 and at one day, ``UUID`` needs a well-formed string. A date of day
#: 2**30 or a timestamp of 2**62 microseconds is a valid Avro value (Spark's and hudi-rs's types hold it, and so do
#: Arrow's): decoded as datetimes, one such value made its whole block unreadable. The record-by-record path decodes
#: them as their plain ``int``/``long``/``string`` and builds the Arrow column of the logical type from those.
_RAW_LOGICAL: Final = frozenset(
    {
        "date",
        "time-millis",
        "time-micros",
        "timestamp-millis",
        "timestamp-micros",
        "timestamp-nanos",
        "local-timestamp-millis",
        "local-timestamp-micros",
        "local-timestamp-nanos",
        "uuid",
    }
)


def _raw_logical(schema: Any) -> Any:
    """``schema`` without the logical types of :data:`_RAW_LOGICAL` (every other attribute kept)."""
    if isinstance(schema, list):
        return [_raw_logical(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _raw_logical(v) if k in ("type", "items", "values") else v for k, v in schema.items()}
    if out.get("logicalType") in _RAW_LOGICAL:
        del out["logicalType"]
    if isinstance(schema.get("fields"), list):
        out["fields"] = [
            {k: _raw_logical(v) if k == "type" else v for k, v in f.items()} if isinstance(f, dict) else f
            for f in schema["fields"]
        ]
    return out


def _block_schema(block: LogBlock, reader_schema: dict[str, Any] | None) -> _BlockSchema:
    text = block.schema_json
    key = (text or "", id(reader_schema))
    hit = _SCHEMAS.get(key)
    if hit is not None and text is not None and hit[0] == reader_schema:
        return hit[1]
    writer = _writer_schema(block)
    target = _align_record_name(writer, reader_schema) if reader_schema is not None else writer
    arrow_schema = _guard(block, "Avro schema", lambda: avro_to_arrow_schema(target))
    sync = os.urandom(16)
    header = None
    if _columnar_decodable(writer, reader_schema):
        framed = dict(writer)
        framed["fields"] = [_LENGTH_FIELD, *writer["fields"]]
        meta = zigzag_long(2) + avro_bytes(b"avro.schema") + avro_bytes(json.dumps(framed).encode("utf-8"))
        meta += avro_bytes(b"avro.codec") + avro_bytes(b"null") + zigzag_long(0)
        header = b"Obj\x01" + meta + sync
    raw_writer = _raw_logical(writer)
    plan = _BlockSchema(writer, target, arrow_schema, header, sync, json.dumps(raw_writer), _raw_logical(target))
    if len(_SCHEMAS) >= _SCHEMAS_LIMIT:
        _SCHEMAS.clear()
    _SCHEMAS[key] = (copy.deepcopy(reader_schema), plan)
    return plan


def decode_avro_data_block(block: LogBlock, content: bytes, reader_schema: dict[str, Any] | None = None) -> pa.Table:
    """Decodes an Avro data block into an Arrow table.

    Args:
        block: the block (its ``SCHEMA`` header is the writer schema).
        content: the block's content bytes.
        reader_schema: optional Avro reader schema (parsed JSON). Records are resolved to it with Avro schema
            resolution: added fields take their defaults, ``int``→``long``/``float``/``double``,
            ``long``→``float``/``double``, ``float``→``double`` and ``string``↔``bytes`` promotions apply.

    Returns:
        One row per record, columns in reader (else writer) schema order, typed by
        :func:`~evt_toolkit.format.avro_arrow.avro_to_arrow_schema`.

    Raises:
        LogFormatError: bad content version, record framing, schema or record bytes.
    """
    plan = _block_schema(block, reader_schema)
    if plan.container_header is not None:
        fast = _decode_columnar([content], plan)
        if fast is not None:
            return fast[0]
    return _decode_records(block, content, plan, reader_schema)


def decode_avro_data_blocks(
    blocks: Sequence[tuple[LogBlock, bytes]],
    reader_schema: dict[str, Any] | None = None,
    *,
    max_workers: int | None = None,
) -> list[pa.Table]:
    """Decodes many Avro data blocks: ``[decode_avro_data_block(b, c, reader_schema) for b, c in blocks]``, faster.

    Runs of blocks with the same writer schema are handed to the decoder together, as one object container of
    several Avro blocks, in chunks of about :data:`DECODE_CHUNK_BYTES`; the decoded table is cast to the Arrow
    schema once per chunk and sliced per block (no copy). polars decodes without holding the GIL, so chunks are
    decoded on ``max_workers`` threads (default: the CPUs this process may use, at most 8). A chunk whose framing
    does not check out is decoded block by block, which names the block at fault.

    Args:
        blocks: ``(block, content)`` pairs of Avro data blocks, in any order.
        reader_schema: as in :func:`decode_avro_data_block`.
        max_workers: threads for the decoding; 1 decodes on the calling thread.

    Returns:
        One table per block, in the order given.

    Raises:
        LogFormatError: as :func:`decode_avro_data_block`, for the first faulty block in the order given.
    """
    out: list[pa.Table | None] = [None] * len(blocks)
    chunks: list[tuple[_BlockSchema | None, list[int]]] = []
    chunk_bytes = 0
    # Enough chunks to keep every worker busy (decoding is most of a compaction task), none under MIN_CHUNK_BYTES.
    total = sum(len(c) for _, c in blocks)
    target = min(DECODE_CHUNK_BYTES, max(MIN_CHUNK_BYTES, -(-total // _workers(max_workers, len(blocks)))))
    for i, (block, content) in enumerate(blocks):
        try:
            plan: _BlockSchema | None = _block_schema(block, reader_schema)
        except EvtError:
            plan = None  # raised again below, in the order of the blocks
        if plan is not None and chunks and chunks[-1][0] is plan and chunk_bytes + len(content) <= target:
            chunks[-1][1].append(i)
            chunk_bytes += len(content)
        else:
            chunks.append((plan, [i]))
            chunk_bytes = len(content)

    def run(chunk: tuple[_BlockSchema | None, list[int]]) -> list[pa.Table] | None:
        plan, idx = chunk
        if plan is None or plan.container_header is None:
            return None
        return _decode_columnar([blocks[i][1] for i in idx], plan)

    workers = _workers(max_workers, len(chunks))
    decoded = list(_decode_pool(workers).map(run, chunks)) if workers > 1 else [run(c) for c in chunks]
    for (plan, idx), tables in zip(chunks, decoded, strict=True):
        if tables is None:
            tables = [
                _decode_records(blocks[i][0], blocks[i][1], plan, reader_schema)
                if plan is not None and len(idx) == 1
                else decode_avro_data_block(blocks[i][0], blocks[i][1], reader_schema)
                for i in idx
            ]
        for i, table in zip(idx, tables, strict=True):
            out[i] = table
    return [cast(pa.Table, t) for t in out]


#: Target size of the block bodies handed to the decoder in one call by :func:`decode_avro_data_blocks`.
DECODE_CHUNK_BYTES = 8 << 20
#: Smallest chunk split off to give another thread work: below it the decoder's fixed cost per call and the hand-off
#: outweigh the parallelism (B3 small's 1.4 MB tasks gained nothing from two chunks; medium's 7 MB tasks took 20 %
#: less time on an idle two-core machine with two).
MIN_CHUNK_BYTES = 2 << 20


_POOL: tuple[int, int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _decode_pool(workers: int) -> ThreadPoolExecutor:
    """A decoding thread pool kept for the process (starting threads costs ~1 ms each, per call otherwise).

    Made again in a forked child (Spark's Python workers fork), whose copy of the parent's threads is gone, and
    when more workers are asked for than it has. The smaller pool it replaces is not shut down: a task running beside
    the one asking (compaction tasks side by side, a read beside a compaction) may have just got it and be handing it
    its chunks; its idle threads end once the last caller drops it.
    """
    global _POOL
    with _POOL_LOCK:
        pid = os.getpid()
        if _POOL is None or _POOL[0] != pid or _POOL[1] < workers:
            _POOL = (pid, workers, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evt-decode"))
        return _POOL[2]


def default_decode_threads() -> int:
    """Threads :func:`decode_avro_data_blocks` decodes on when not told: the CPUs this process may use, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _workers(requested: int | None, chunks: int) -> int:
    return max(1, min(default_decode_threads() if requested is None else requested, chunks))


def _decode_records(
    block: LogBlock, content: bytes, plan: _BlockSchema, reader_schema: dict[str, Any] | None
) -> pa.Table:
    """The record-by-record path: validates every length prefix and names the record at fault."""
    count, body = _record_bodies(block, content)
    if count == 0:
        return plan.arrow_schema.empty_table()
    container = _object_container(plan.raw_writer_json, count, body)
    target = plan.raw_target if plan.raw_target is not None else plan.target

    def decode() -> list[dict[str, Any]]:
        parsed_reader = fastavro.parse_schema(copy.deepcopy(target)) if reader_schema is not None else None
        records = cast(list[dict[str, Any]], list(fastavro.reader(io.BytesIO(container), reader_schema=parsed_reader)))
        if len(records) != count:
            raise LogFormatError(f"decoded {len(records)} records, expected {count}", block.log_file, block.offset)
        return records

    records = _guard(block, "Avro records", decode)
    return _guard(block, "Avro records to Arrow", lambda: records_to_arrow(records, plan.arrow_schema))


# -- columnar fast path -------------------------------------------------------------------------------------------
# fastavro builds one Python dict per record, which then has to be turned into Arrow columns: ~20-50 µs a record.
# polars' Avro reader (Rust) decodes an object container straight into Arrow columns, an order of magnitude
# faster. It is used for the schemas Hudi tables mostly have — flat records of primitives, dates and timestamps,
# nullable or not — where its Arrow types are exactly avro_to_arrow_schema's (tests check both paths agree on
# every real log block and on random data); anything else goes through fastavro.
_COLUMNAR_PRIMITIVES = frozenset({"boolean", "int", "long", "float", "double", "bytes", "string"})
_COLUMNAR_LOGICAL = frozenset(
    {
        ("int", "date"),
        ("long", "timestamp-millis"),
        ("long", "timestamp-micros"),
        ("long", "local-timestamp-millis"),
        ("long", "local-timestamp-micros"),
    }
)


def _columnar_type_ok(avro_type: Any) -> bool:
    if isinstance(avro_type, str):
        return avro_type in _COLUMNAR_PRIMITIVES
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        return len(avro_type) == 2 and len(branches) == 1 and _columnar_type_ok(branches[0])
    if isinstance(avro_type, dict):
        base = avro_type.get("type")
        logical = avro_type.get("logicalType")
        if logical is None:
            return isinstance(base, str) and base in _COLUMNAR_PRIMITIVES
        return (base, logical) in _COLUMNAR_LOGICAL
    return False


def _columnar_decodable(writer: dict[str, Any], reader: dict[str, Any] | None) -> bool:
    fields = writer.get("fields") or []
    if not fields or not all(_columnar_type_ok(f.get("type")) for f in fields):
        return False
    if reader is None:
        return True
    # Resolution the columnar path reproduces with Arrow casts: same-named fields (promotions), and reader-only
    # fields whose default is null. Other defaults need Avro resolution proper.
    names = {f["name"] for f in fields}
    for f in reader.get("fields") or []:
        if f["name"] in names:
            continue
        if "default" in f and f["default"] is not None:
            return False
    return True


_LENGTH_FIELD = {"name": "__evt_record_length", "type": {"type": "fixed", "name": "__evt_int32_be", "size": 4}}


def _decode_columnar(contents: Sequence[bytes], plan: _BlockSchema) -> list[pa.Table] | None:
    """Decode whole Avro data blocks in one columnar pass, or return None to use the record-by-record path.

    A block's content after its 8-byte header is ``count`` times (int32 big-endian length, record). Declaring the
    length as an Avro ``fixed(4)`` field in front of the writer's fields makes that byte range a valid Avro block
    body, so no Python loop has to split the records, and several blocks become several Avro blocks of one
    container, decoded in one call. The framing is then checked per block on the decoded lengths: all
    non-negative and adding up to exactly the block's content size. Anything unexpected (a decoder error, a count
    or size mismatch) falls back to the record-by-record path, which reports the precise fault.
    """
    header = plan.container_header
    assert header is not None
    sync = plan.sync
    parts: list[bytes | memoryview] = [header]
    counts: list[int] = []
    for content in contents:
        if len(content) < 8:
            return None
        version, count = _II(content, 0)
        if version != _CONTENT_VERSION or count <= 0 or count * 4 > len(content) - 8:
            return None
        counts.append(count)
        parts += [zigzag_long(count), zigzag_long(len(content) - 8), memoryview(content)[8:], sync]
    try:
        import polars as pl

        # compat_level newest hands strings over as Arrow string views, without the copy into large strings; the
        # one cast below turns them into the schema's strings.
        decoded = pl.read_avro(io.BytesIO(b"".join(parts))).to_arrow(compat_level=pl.CompatLevel.newest())
    except Exception:  # any decoder complaint means: let the precise path explain it
        return None
    except BaseException as exc:
        # Rust panics surface as pyo3's PanicException, a BaseException; they mean malformed input too.
        if type(exc).__name__ == "PanicException":
            return None
        raise
    total = sum(counts)
    if decoded.num_rows != total:
        return None
    lengths_col = decoded.column(0).combine_chunks().cast(pa.large_binary())
    offsets = np.frombuffer(lengths_col.buffers()[1], dtype=np.int64)[: total + 1]
    data = lengths_col.buffers()[2]
    if data is None or offsets[-1] - offsets[0] != 4 * total:
        return None
    lengths = np.frombuffer(data, dtype=">i4", count=total, offset=int(offsets[0])).astype(np.int64)
    if (lengths < 0).any():
        return None
    ends = np.cumsum(counts)
    sums = np.add.reduceat(lengths, np.concatenate([[0], ends[:-1]]))
    for content, count, body_sum in zip(contents, counts, sums.tolist(), strict=True):
        if body_sum + 4 * count != len(content) - 8:
            return None
    arrow_schema = plan.arrow_schema
    names = set(decoded.column_names)
    try:
        # Only the columns whose type differs (string views, mostly) are cast: a cast of an equal type is a call
        # per column per batch for nothing.
        columns: list[pa.Array | pa.ChunkedArray] = []
        for f in arrow_schema:
            if f.name not in names:
                columns.append(pa.nulls(total, f.type))
                continue
            col = decoded[f.name]
            columns.append(col if col.type == f.type else col.cast(f.type))
        table = pa.Table.from_arrays(columns, schema=arrow_schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if len(contents) == 1:
        return [table]
    starts = [0, *ends[:-1].tolist()]
    return [table.slice(start, count) for start, count in zip(starts, counts, strict=True)]


def decode_parquet_data_block(block: LogBlock, content: bytes) -> pa.Table:
    """Decodes a Parquet data block (its content is a complete Parquet file).

    Args:
        block: the block.
        content: the block's content bytes.

    Returns:
        The Parquet file's table.

    Raises:
        LogFormatError: the content is not a readable Parquet file.
    """
    if len(content) < 12 or content[:4] != b"PAR1" or content[-4:] != b"PAR1":
        raise LogFormatError("Parquet data block content is not a Parquet file", block.log_file, block.offset)
    return _guard(block, "Parquet data block", lambda: _checked(pq.read_table(pa.BufferReader(content))))


def _field_names(t: pa.DataType) -> None:
    for i in range(t.num_fields):
        _ = t.field(i).name
        _field_names(t.field(i).type)


def check_decoded_names(schema: pa.Schema) -> None:
    """Raises ``UnicodeDecodeError`` when a field name of ``schema``, nested ones included, is not UTF-8.

    Arrow decodes a Parquet file's field names to ``str`` only when they are asked for, so a flipped byte in a name
    would otherwise surface far from the file that holds it.
    """
    for f in schema:
        _ = f.name
        _field_names(f.type)


def _checked(table: pa.Table) -> pa.Table:
    check_decoded_names(table.schema)
    table.validate()
    return table


# Arrow type of each wrapper's unwrapped value. DateWrapper and TimestampMicrosWrapper hold raw days and
# microseconds (Java writes them without logical types); they are given their temporal Arrow types here.
_WRAPPER_ARROW_TYPES: dict[str, pa.DataType] = {
    "BooleanWrapper": pa.bool_(),
    "IntWrapper": pa.int32(),
    "LongWrapper": pa.int64(),
    "FloatWrapper": pa.float32(),
    "DoubleWrapper": pa.float64(),
    "BytesWrapper": pa.binary(),
    "StringWrapper": pa.string(),
    "DateWrapper": pa.date32(),
    "DecimalWrapper": pa.decimal128(30, 15),
    "TimeMicrosWrapper": pa.time64("us"),
    "TimestampMicrosWrapper": pa.timestamp("us", tz="UTC"),
}


def _ordering_array(values: list[Any], wrappers: list[str | None]) -> pa.Array:
    """Arrow array of unwrapped ordering values.

    One wrapper type across the block gives that wrapper's Arrow type (so a block's type does not depend on
    the values it happens to hold); a block mixing wrappers gives strings; all-null gives the null type.
    """
    kinds = {w for w in wrappers if w is not None}
    if not kinds:
        return pa.nulls(len(values))
    if len(kinds) > 1:
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())
    arrow_type = _WRAPPER_ARROW_TYPES[kinds.pop()]
    if pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type):
        # Raw day / microsecond counts: build the integer array and reinterpret it.
        storage = pa.int32() if pa.types.is_date(arrow_type) else pa.int64()
        return pa.array(values, type=storage).view(arrow_type)
    return pa.array(values, type=arrow_type)


def decode_delete_block(block: LogBlock, content: bytes) -> pa.Table:
    """Decodes a delete block (content version 3).

    Args:
        block: the block.
        content: the block's content bytes.

    Returns:
        Columns ``_hoodie_record_key`` (string), ``_hoodie_partition_path`` (string), ``ordering_value``
        and ``ordering_wrapper`` (the wrapper record's name such as ``"IntWrapper"``, null when
        ``orderingVal`` is null). ``ordering_value`` holds the unwrapped values typed by their wrapper:
        Boolean→bool, Int→int32, Long→int64, Float→float32, Double→float64, Bytes→binary, String→string,
        Date→date32, Decimal→decimal128(30, 15), TimeMicros→time64('us'), TimestampMicros→timestamp('us', 'UTC');
        strings when a block mixes wrapper types; the null type when every value is null.

    Raises:
        UnsupportedFeatureError: a Kryo-serialized delete block (content versions 1 and 2).
        LogFormatError: any other malformed content.
    """
    version = _int32(content, 0, block, "delete block version")
    if version in (1, 2):
        raise UnsupportedFeatureError(
            f"delete block content version {version} (Kryo-serialized, Hudi < 0.13) is not supported "
            f"[{block.log_file} @ byte {block.offset}]"
        )
    if version != _CONTENT_VERSION:
        raise LogFormatError(f"unsupported delete block version {version}", block.log_file, block.offset)
    length = _int32(content, 4, block, "delete payload length")
    if length < 0 or length > len(content) - 8:
        raise LogFormatError(
            f"delete payload length {length} exceeds the {len(content) - 8} bytes of content",
            block.log_file,
            block.offset,
        )
    payload = content[8 : 8 + length]

    def decode() -> list[dict[str, Any]]:
        datum = fastavro.schemaless_reader(io.BytesIO(payload), _PARSED_DELETE_SCHEMA, None, return_record_name=True)
        if not isinstance(datum, dict):
            raise LogFormatError("delete payload is not a record", block.log_file, block.offset)
        return list(datum["deleteRecordList"])

    entries = _guard(block, "delete block payload", decode)
    keys: list[str | None] = []
    partitions: list[str | None] = []
    values: list[Any] = []
    wrappers: list[str | None] = []
    for entry in entries:
        keys.append(entry.get("recordKey"))
        partitions.append(entry.get("partitionPath"))
        ordering = entry.get("orderingVal")
        if ordering is None:
            values.append(None)
            wrappers.append(None)
        else:
            # return_record_name=True yields (full name, record) for union branches that are records.
            name, record = ordering
            wrappers.append(str(name).rsplit(".", 1)[-1])
            values.append(record["value"])
    return pa.table(
        {
            "_hoodie_record_key": pa.array(keys, type=pa.string()),
            "_hoodie_partition_path": pa.array(partitions, type=pa.string()),
            "ordering_value": _guard(block, "delete ordering values", lambda: _ordering_array(values, wrappers)),
            "ordering_wrapper": pa.array(wrappers, type=pa.string()),
        }
    )


def decode_data_block(block: LogBlock, content: bytes, reader_schema: dict[str, Any] | None = None) -> pa.Table:
    """Decodes a data block of any supported type.

    Args:
        block: an Avro or Parquet data block.
        content: the block's content bytes.
        reader_schema: optional Avro reader schema for Avro blocks (Parquet blocks are returned as written).

    Returns:
        The block's records.

    Raises:
        UnsupportedFeatureError: HFile (metadata-table) and CDC blocks.
        LogFormatError: the block is not a data block, or its content is malformed.
    """
    if block.block_type is BlockType.AVRO_DATA:
        return decode_avro_data_block(block, content, reader_schema)
    if block.block_type is BlockType.PARQUET_DATA:
        return decode_parquet_data_block(block, content)
    if block.block_type in (BlockType.HFILE_DATA, BlockType.CDC_DATA):
        raise UnsupportedFeatureError(
            f"{block.block_type.name} blocks are not supported [{block.log_file} @ byte {block.offset}]"
        )
    raise LogFormatError(f"{block.block_type.name} block is not a data block", block.log_file, block.offset)


def read_block_records(f: BinaryIO, block: LogBlock, reader_schema: dict[str, Any] | None = None) -> pa.Table:
    """Reads and decodes the records of a data or delete block.

    Args:
        f: a seekable binary stream over the block's log file.
        block: a data or delete block from :func:`~evt_toolkit.format.logfile.scan_log_blocks`.
        reader_schema: optional Avro reader schema for Avro data blocks.

    Returns:
        The block's records (see :func:`decode_data_block` and :func:`decode_delete_block`).

    Raises:
        LogFormatError: malformed content, or a command/corrupt block.
        UnsupportedFeatureError: HFile/CDC blocks, Kryo delete blocks.
    """
    content = read_block_content(f, block)
    if block.block_type is BlockType.DELETE:
        return decode_delete_block(block, content)
    return decode_data_block(block, content, reader_schema)


__all__ = [
    "DECODE_CHUNK_BYTES",
    "DELETE_RECORD_LIST_SCHEMA",
    "check_decoded_names",
    "decode_avro_data_block",
    "decode_avro_data_blocks",
    "decode_data_block",
    "decode_delete_block",
    "decode_parquet_data_block",
    "default_decode_threads",
    "read_block_records",
]
