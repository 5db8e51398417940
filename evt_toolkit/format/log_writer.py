"""Encode Hudi log blocks (log format version 1, block content version 3) as bytes.

The write side of the log format: every function here is pure and returns ``bytes`` that a caller appends to a log
file. The layout mirrors Hudi's Java writer, byte for byte where Java is deterministic:

* block framing — ``HoodieLogFormatWriter.appendBlocks`` / ``HoodieLogBlock.getLogMetadataBytes``;
* Avro data block content — ``HoodieAvroDataBlock.serializeRecords``;
* delete block content — ``HoodieDeleteBlock.serializeV3`` with ``AvroUtils.wrapValueIntoAvro`` for ordering values;
* rollback command block — ``HoodieCommandBlock`` as written by ``BaseRollbackHelper``;
* Avro schema of Spark-written tables — Spark's ``SchemaConverters.toAvroType`` as called by Hudi's
  ``AvroConversionUtils.convertStructTypeToAvroSchema``, printed like Java's ``Schema.toString()``.

Java keeps block headers in a ``HashMap`` keyed by enum, so its header order is not stable between JVM runs; we emit
``INSTANT_TIME`` then ``SCHEMA`` (and, for command blocks, the order seen in real rollback logs). Readers accept any
order.

Example:
    >>> import pyarrow as pa
    >>> schema = with_meta_fields(arrow_to_avro_schema(pa.schema([("id", pa.int64())]), "t_record", "hoodie.t"))
    >>> block = encode_avro_data_block([{"id": 1}], schema, "20250101000000000")
    >>> block[:6]
    b'#HUDI#'
"""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import LogFormatError, SchemaMismatchError, UnsupportedFeatureError
from evt_toolkit.format.avro_binary import avro_bytes, zigzag_long
from evt_toolkit.format.delete_schema import (
    DECIMAL_WRAPPER_PRECISION,
    DECIMAL_WRAPPER_SCALE,
    ORDERING_UNION_INDEX,
)
from evt_toolkit.format.logfile import BlockType, HeaderKey

# ---------------------------------------------------------------------------------------------------------------------
# Constants of the log format (HoodieLogFormat, HoodieLogBlock).
# ---------------------------------------------------------------------------------------------------------------------

#: Magic that starts every block (``HoodieLogFormat.MAGIC``).
MAGIC: Final = b"#HUDI#"
#: ``HoodieLogFormat.CURRENT_VERSION``: the only log format version any Hudi release writes.
LOG_FORMAT_VERSION: Final = 1
#: ``HoodieLogBlock.version`` for Avro data blocks and delete blocks since Hudi 0.12.
BLOCK_CONTENT_VERSION: Final = 3

# Block type and header ordinals come from the reader's enums, so both sides share one definition.
_COMMAND_BLOCK: Final = BlockType.COMMAND
_DELETE_BLOCK: Final = BlockType.DELETE
_AVRO_DATA_BLOCK: Final = BlockType.AVRO_DATA
_INSTANT_TIME: Final = HeaderKey.INSTANT_TIME
_TARGET_INSTANT_TIME: Final = HeaderKey.TARGET_INSTANT_TIME
_SCHEMA: Final = HeaderKey.SCHEMA
_COMMAND_BLOCK_TYPE: Final = HeaderKey.COMMAND_BLOCK_TYPE
_MIN_EVENT_TIME: Final = HeaderKey.MIN_EVENT_TIME  # ordinal 100: opt-in extension, design §2.2

#: ``HoodieCommandBlock.HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK`` ordinal, the only command Hudi defines.
ROLLBACK_COMMAND: Final = 0

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1

#: Hudi's meta columns in the order ``HoodieRecord.HOODIE_META_COLUMNS`` lists them.
META_FIELDS: Final[tuple[str, ...]] = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

# ---------------------------------------------------------------------------------------------------------------------
# Block framing
# ---------------------------------------------------------------------------------------------------------------------


def _encode_metadata_map(entries: Mapping[int, str] | None, what: str) -> bytes:
    """``HoodieLogBlock.getLogMetadataBytes``: int32 count, then per entry int32 ordinal, int32 length, UTF-8."""
    if not entries:
        return b"\x00\x00\x00\x00"
    out = bytearray(struct.pack(">i", len(entries)))
    for key, value in entries.items():
        if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= _INT32_MAX:
            raise LogFormatError(f"{what} key must be a non-negative int32 ordinal, got {key!r}")
        if not isinstance(value, str):
            raise LogFormatError(f"{what} value for ordinal {key} must be a str, got {type(value).__name__}")
        # Java's String.getBytes(UTF_8) replaces unpaired surrogates by '?'; errors="replace" does the same.
        data = value.encode("utf-8", errors="replace")
        out += struct.pack(">ii", key, len(data))
        out += data
    return bytes(out)


def encode_block(
    block_type: int,
    header: Mapping[int, str],
    content: bytes,
    footer: Mapping[int, str] | None = None,
) -> bytes:
    """Frame one log block exactly as ``HoodieLogFormatWriter.appendBlocks`` writes it.

    Layout (big-endian): magic ``#HUDI#``; int64 block size (every byte after this field, reverse pointer included);
    int32 log format version 1; int32 block type ordinal; header map; int64 content length; content; footer map;
    int64 reverse pointer (the block's length without this last field).

    Args:
        block_type: ``HoodieLogBlockType`` ordinal (0 command, 1 delete, 3 Avro data, 5 Parquet data, ...).
        header: header ordinal → value, written in the mapping's iteration order.
        content: the block content bytes.
        footer: footer ordinal → value; Hudi never writes footers, so the default is an empty map.

    Returns:
        The complete block, ready to append to a log file.

    Raises:
        LogFormatError: a header/footer key is not an int32 ordinal, a value is not a string, or the block type is
            out of range.

    Example:
        >>> b = encode_block(0, {0: "20250101000000000"}, b"")
        >>> len(b), b[-8:] == (len(b) - 8).to_bytes(8, "big")
        (71, True)
    """
    if isinstance(block_type, bool) or not isinstance(block_type, int) or not 0 <= block_type <= _INT32_MAX:
        raise LogFormatError(f"block type must be a non-negative int32 ordinal, got {block_type!r}")
    content = bytes(content)
    body = b"".join(
        (
            struct.pack(">ii", LOG_FORMAT_VERSION, block_type),
            _encode_metadata_map(header, "header"),
            struct.pack(">q", len(content)),
            content,
            _encode_metadata_map(footer, "footer"),
        )
    )
    block_size = len(body) + 8
    reverse_pointer = len(MAGIC) + 8 + len(body)
    return b"".join((MAGIC, struct.pack(">q", block_size), body, struct.pack(">q", reverse_pointer)))


def commit_seqno(instant: str, task_partition: int, counter: int) -> str:
    """``_hoodie_commit_seqno`` as ``HoodieRecord.generateSequenceId`` builds it: ``<instant>_<task>_<counter>``.

    Example:
        >>> commit_seqno("20250331030642808", 0, 3)
        '20250331030642808_0_3'
    """
    return f"{instant}_{task_partition}_{counter}"


def commit_seqnos(instant: str, task_partition: int, count: int, start: int = 0) -> pa.Array:
    """``count`` consecutive commit sequence numbers starting at ``start``, as an Arrow string array.

    Example:
        >>> commit_seqnos("1", 0, 2).to_pylist()
        ['1_0_0', '1_0_1']
    """
    prefix = f"{instant}_{task_partition}_"
    return pa.array([prefix + str(i) for i in range(start, start + count)], type=pa.string())


# ---------------------------------------------------------------------------------------------------------------------
# Avro schema: Arrow → Avro (Spark/Hudi naming) and Java's Schema.toString()
# ---------------------------------------------------------------------------------------------------------------------

_NAMED_TYPES: Final = frozenset({"record", "error", "enum", "fixed"})
_RECORD_RESERVED: Final = frozenset({"type", "name", "namespace", "doc", "fields", "aliases"})
_FIELD_RESERVED: Final = frozenset({"name", "type", "doc", "default", "order", "aliases"})
_ENUM_RESERVED: Final = frozenset({"type", "name", "namespace", "doc", "symbols", "aliases", "default"})
_FIXED_RESERVED: Final = frozenset({"type", "name", "namespace", "doc", "size", "aliases"})


def _split_name(schema: Mapping[str, Any], enclosing_ns: str | None) -> tuple[str, str | None]:
    name = str(schema["name"])
    if "." in name:
        ns, short = name.rsplit(".", 1)
        return short, ns
    ns = schema.get("namespace", enclosing_ns)
    return name, (ns if ns else None)


def _full_name(short: str, ns: str | None) -> str:
    return f"{ns}.{short}" if ns else short


def _to_java_json(schema: Any, space: str | None, defined: set[str]) -> Any:
    """Rebuild ``schema`` with keys in the order Java's ``Schema.toJson`` writes them (Avro 1.10/1.11)."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return [_to_java_json(branch, space, defined) for branch in schema]
    if not isinstance(schema, Mapping):
        raise LogFormatError(f"not an Avro schema: {schema!r}")
    kind = schema.get("type")
    if isinstance(kind, (list, Mapping)):
        # {"type": <schema>} with no other attribute is just that schema.
        return _to_java_json(kind, space, defined)
    if kind in _NAMED_TYPES:
        short, ns = _split_name(schema, space)
        full = _full_name(short, ns)
        if full in defined:
            # Java writes a reference to an already defined type by name, qualified unless in the current space.
            return short if ns == space else full
        defined.add(full)
        out: dict[str, Any] = {"type": kind, "name": short}
        if ns is not None:
            if ns != space:
                out["namespace"] = ns
        elif space is not None:
            out["namespace"] = ""
        if schema.get("doc") is not None:
            out["doc"] = schema["doc"]
        if kind in ("record", "error"):
            fields = []
            for field in schema["fields"]:
                f: dict[str, Any] = {"name": field["name"], "type": _to_java_json(field["type"], ns, defined)}
                if field.get("doc") is not None:
                    f["doc"] = field["doc"]
                if "default" in field:
                    f["default"] = field["default"]
                if field.get("order", "ascending") != "ascending":
                    f["order"] = field["order"]
                f.update((k, v) for k, v in field.items() if k not in _FIELD_RESERVED)
                if field.get("aliases"):
                    f["aliases"] = field["aliases"]
                fields.append(f)
            out["fields"] = fields
            out.update((k, v) for k, v in schema.items() if k not in _RECORD_RESERVED)
        elif kind == "enum":
            out["symbols"] = list(schema["symbols"])
            out.update((k, v) for k, v in schema.items() if k not in _ENUM_RESERVED)
        else:
            out["size"] = schema["size"]
            out.update((k, v) for k, v in schema.items() if k not in _FIXED_RESERVED)
        if schema.get("aliases"):
            out["aliases"] = schema["aliases"]
        if kind == "enum" and schema.get("default") is not None:
            out["default"] = schema["default"]
        return out
    if kind == "array":
        out = {"type": "array", "items": _to_java_json(schema["items"], space, defined)}
        out.update((k, v) for k, v in schema.items() if k not in ("type", "items"))
        return out
    if kind == "map":
        out = {"type": "map", "values": _to_java_json(schema["values"], space, defined)}
        out.update((k, v) for k, v in schema.items() if k not in ("type", "values"))
        return out
    # A primitive, possibly carrying properties such as logicalType: Java prints a bare name when it has none.
    props = {k: v for k, v in schema.items() if k != "type"}
    return {"type": kind, **props} if props else kind


def avro_schema_json(schema: Mapping[str, Any] | Sequence[Any] | str) -> str:
    """Print an Avro schema as Java's ``Schema.toString()`` does (compact JSON, Java's key order).

    This is the text of the ``SCHEMA`` log block header and of ``extraMetadata.schema`` in commit metadata. Named
    types already printed are referenced by name, and ``namespace`` is omitted when it equals the enclosing one.

    Args:
        schema: the schema as parsed JSON (a dict, a union list or a primitive name).

    Returns:
        Compact JSON text.

    Example:
        >>> avro_schema_json({"name": "r", "type": "record", "fields": [{"type": "int", "name": "a"}]})
        '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'
    """
    return json.dumps(_to_java_json(schema, None, set()), separators=(",", ":"), ensure_ascii=False)


def _min_bytes_for_precision(precision: int) -> int:
    """Spark's ``SchemaConverters`` fixed size for a decimal: smallest n with 2^(8n-1) >= 10^precision."""
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


def _arrow_type_to_avro(dtype: pa.DataType, nullable: bool, name: str, namespace: str) -> Any:
    """Spark ``SchemaConverters.toAvroType`` for the Spark type the Arrow type maps to; nullable → ["null", T]."""
    t = pa.types
    avro: Any
    if t.is_dictionary(dtype):
        return _arrow_type_to_avro(dtype.value_type, nullable, name, namespace)
    if t.is_boolean(dtype):
        avro = "boolean"
    elif t.is_int8(dtype) or t.is_int16(dtype) or t.is_int32(dtype) or t.is_uint8(dtype) or t.is_uint16(dtype):
        avro = "int"  # Spark ByteType/ShortType/IntegerType all become Avro int.
    elif t.is_int64(dtype) or t.is_uint32(dtype) or t.is_uint64(dtype):
        avro = "long"
    elif t.is_float16(dtype) or t.is_float32(dtype):
        avro = "float"
    elif t.is_float64(dtype):
        avro = "double"
    elif t.is_string(dtype) or t.is_large_string(dtype) or getattr(t, "is_string_view", lambda _: False)(dtype):
        avro = "string"
    elif t.is_binary(dtype) or t.is_large_binary(dtype) or t.is_fixed_size_binary(dtype):
        avro = "bytes"
    elif t.is_decimal(dtype):
        if dtype.precision > 38:
            # Spark's DecimalType and Hudi's readers (Java and hudi-rs, decimal128) stop at 38 digits.
            raise UnsupportedFeatureError(
                f"decimal column {name!r} has precision {dtype.precision}; Hudi tables hold at most 38 digits"
            )
        # Spark names the fixed "<namespace>.<field>.fixed"; Java prints that as name "fixed" in that namespace.
        avro = {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}" if namespace else name,
            "size": _min_bytes_for_precision(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    elif t.is_date(dtype):
        avro = {"type": "int", "logicalType": "date"}
    elif t.is_timestamp(dtype):
        # Spark has one timestamp type (micros). Naive Arrow timestamps are taken as UTC rather than mapped to
        # local-timestamp-micros, which 0.14-era readers do not all understand.
        avro = {"type": "long", "logicalType": "timestamp-micros"}
    elif t.is_time32(dtype):
        avro = {"type": "int", "logicalType": "time-millis"}
    elif t.is_time64(dtype):
        avro = {"type": "long", "logicalType": "time-micros"}
    elif t.is_struct(dtype):
        if dtype.num_fields == 0:
            # Parquet has no empty group: no compaction could write the column to a base file.
            raise UnsupportedFeatureError(f"struct column {name!r} has no fields; Parquet base files cannot hold it")
        child_ns = f"{namespace}.{name}" if namespace else name
        avro = {
            "type": "record",
            "name": name,
            "namespace": namespace,
            "fields": [_arrow_field_to_avro(dtype.field(i), child_ns) for i in range(dtype.num_fields)],
        }
    elif t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype):
        vf = dtype.value_field
        avro = {"type": "array", "items": _arrow_type_to_avro(vf.type, vf.nullable, name, namespace)}
    elif t.is_map(dtype):
        if not (t.is_string(dtype.key_type) or t.is_large_string(dtype.key_type)):
            raise UnsupportedFeatureError(f"Avro maps need string keys; field {name!r} has {dtype.key_type}")
        vf = dtype.item_field
        avro = {"type": "map", "values": _arrow_type_to_avro(vf.type, vf.nullable, name, namespace)}
    elif t.is_null(dtype):
        return "null"
    else:
        raise UnsupportedFeatureError(f"Arrow type {dtype} of field {name!r} has no Avro equivalent in Hudi")
    return ["null", avro] if nullable else avro


def _arrow_field_to_avro(field: pa.Field, namespace: str) -> dict[str, Any]:
    if not _AVRO_NAME.fullmatch(field.name):
        # Avro's Schema.Parser (Java) and apache-avro (hudi-rs) refuse such a name: no stock reader could parse the
        # table schema again.
        raise SchemaMismatchError(
            f"column {field.name!r} cannot be an Avro field name ([A-Za-z_][A-Za-z0-9_]*), which every Hudi table "
            "schema is; rename it"
        )
    avro_type = _arrow_type_to_avro(field.type, field.nullable, field.name, namespace)
    out: dict[str, Any] = {"name": field.name, "type": avro_type}
    if field.nullable and not pa.types.is_null(field.type):
        out["default"] = None
    return out


#: An Avro name (``[A-Za-z_][A-Za-z0-9_]*``), as the Avro specification and Java's ``Schema.validateName`` define it.
AVRO_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
_AVRO_NAME = re.compile(AVRO_NAME_PATTERN)


def arrow_to_avro_schema(schema: pa.Schema, record_name: str, namespace: str) -> dict[str, Any]:
    """The Avro schema Hudi's Spark writer derives from a table's columns.

    Mirrors ``AvroConversionUtils.convertStructTypeToAvroSchema`` (Hudi) → ``SchemaConverters.toAvroType`` (Spark):
    the top record is ``<table>_record`` in namespace ``hoodie.<table>``; nullable columns become ``["null", T]`` with
    default null; nested structs are records named after their field in namespace ``<parent namespace>.<parent
    name>``; decimals are ``fixed`` of Spark's minimal size; timestamps are ``timestamp-micros``; dates ``date``.
    Meta columns are not added: see :func:`with_meta_fields`.

    Args:
        schema: the Arrow schema of the user columns.
        record_name: top-level record name, by Hudi's convention ``f"{table}_record"``.
        namespace: top-level namespace, by Hudi's convention ``f"hoodie.{table}"``.

    Returns:
        The Avro schema as a JSON-compatible dict.

    Raises:
        UnsupportedFeatureError: a column type has no Avro counterpart (durations, non-string map keys, ...).
        SchemaMismatchError: a column or nested field name is not an Avro name.

    Example:
        >>> arrow_to_avro_schema(pa.schema([("ts", pa.int64())]), "t_record", "hoodie.t")["fields"]
        [{'name': 'ts', 'type': ['null', 'long'], 'default': None}]
    """
    child_ns = f"{namespace}.{record_name}" if namespace else record_name
    return {
        "type": "record",
        "name": record_name,
        "namespace": namespace,
        "fields": [_arrow_field_to_avro(f, child_ns) for f in schema],
    }


def with_meta_fields(avro_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Prepend Hudi's five meta columns (``HoodieAvroUtils.addMetadataFields``) to a record schema.

    Each is ``["null","string"]`` with ``"doc":""`` and default null, as in every real log block's ``SCHEMA`` header.
    Meta fields already present are kept where they are and not added twice.

    Example:
        >>> [f["name"] for f in with_meta_fields({"type": "record", "name": "r", "fields": []})["fields"]][:2]
        ['_hoodie_commit_time', '_hoodie_commit_seqno']
    """
    existing = {f["name"] for f in avro_schema["fields"]}
    meta = [
        {"name": name, "type": ["null", "string"], "doc": "", "default": None}
        for name in META_FIELDS
        if name not in existing
    ]
    out = dict(avro_schema)
    out["fields"] = [*meta, *avro_schema["fields"]]
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Avro data block
# ---------------------------------------------------------------------------------------------------------------------


def _non_null_branch(avro_type: Any) -> Any:
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        return branches[0] if len(branches) == 1 else None
    return avro_type


def _logical(avro_type: Any) -> tuple[str | None, str | None]:
    if isinstance(avro_type, Mapping):
        kind = avro_type.get("type")
        if isinstance(kind, (Mapping, list)):
            return _logical(kind)
        return (kind if isinstance(kind, str) else None), avro_type.get("logicalType")
    if isinstance(avro_type, str):
        return avro_type, None
    return None, None


_TS_UNITS: Final = {"timestamp-micros": "us", "timestamp-millis": "ms", "local-timestamp-micros": "us"}
_TS_UNITS_MS: Final = {"local-timestamp-millis": "ms"}


def _column_to_avro_values(arr: pa.Array, avro_type: Any) -> list[Any]:
    """Arrow column → Python values fastavro encodes as ``avro_type``, converting whole columns at a time."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    dtype = arr.type
    if pa.types.is_dictionary(dtype):
        arr = arr.dictionary_decode()
        dtype = arr.type
    target = _non_null_branch(avro_type)
    kind, logical = _logical(target)
    t = pa.types
    if t.is_timestamp(dtype) and kind == "long":
        unit = {**_TS_UNITS, **_TS_UNITS_MS}.get(logical or "", "us")
        # Spark truncates sub-microsecond precision; so do we (safe=False) rather than refusing the write.
        return pc.cast(arr, pa.timestamp(unit, tz=dtype.tz), safe=False).cast(pa.int64()).to_pylist()
    if (t.is_date32(dtype) or t.is_date64(dtype)) and kind == "int":
        return arr.cast(pa.date32()).cast(pa.int32()).to_pylist()
    if t.is_time32(dtype) or t.is_time64(dtype):
        if kind == "long":
            return pc.cast(arr, pa.time64("us"), safe=False).cast(pa.int64()).to_pylist()
        if kind == "int":
            return pc.cast(arr, pa.time32("ms"), safe=False).cast(pa.int32()).to_pylist()
    if t.is_float16(dtype):
        return arr.cast(pa.float32()).to_pylist()
    if t.is_fixed_size_binary(dtype) and kind == "bytes":
        return arr.cast(pa.binary()).to_pylist()
    if t.is_struct(dtype) and kind == "record" and isinstance(target, Mapping):
        by_name = {f["name"]: f["type"] for f in target["fields"]}
        names = [dtype.field(i).name for i in range(dtype.num_fields)]
        children = [
            _column_to_avro_values(arr.field(i), by_name.get(names[i], "null")) for i in range(dtype.num_fields)
        ]
        valid = arr.is_valid().to_pylist()
        if not children:
            return [{} if ok else None for ok in valid]
        rows = zip(*children, strict=True)
        return [dict(zip(names, vals, strict=True)) if ok else None for ok, vals in zip(valid, rows, strict=True)]
    if (t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype)) and kind == "array":
        assert isinstance(target, Mapping)
        if t.is_fixed_size_list(dtype):
            arr = arr.cast(pa.list_(dtype.value_field))
        offsets = arr.offsets.to_pylist()
        values = _column_to_avro_values(arr.values, target["items"])
        base = offsets[0] if offsets else 0
        valid = arr.is_valid().to_pylist()
        return [values[offsets[i] - base : offsets[i + 1] - base] if ok else None for i, ok in enumerate(valid)]
    if t.is_map(dtype) and kind == "map":
        assert isinstance(target, Mapping)
        offsets = arr.offsets.to_pylist()
        keys = arr.keys.to_pylist()
        items = _column_to_avro_values(arr.items, target["values"])
        base = offsets[0] if offsets else 0
        valid = arr.is_valid().to_pylist()
        out: list[Any] = []
        for i, ok in enumerate(valid):
            if not ok:
                out.append(None)
                continue
            lo, hi = offsets[i] - base, offsets[i + 1] - base
            out.append(dict(zip(keys[lo:hi], items[lo:hi], strict=True)))
        return out
    return arr.to_pylist()


_DAY: Final = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_UNIT_RANK: Final = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _misfit(column: str, what: str, arr: pa.Array, bad: pa.Array) -> SchemaMismatchError:
    first = pc.index(bad, True).as_py()
    return SchemaMismatchError(f"column {column!r}: {what} (value {first} of {len(arr)})")


def _check_fits(arr: pa.Array, avro_type: Any, column: str) -> None:
    """Raise when a value of ``arr`` cannot be written as ``avro_type`` — or would be written as another value."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    nullable = avro_type == "null" or (isinstance(avro_type, list) and "null" in avro_type)
    if arr.null_count and not nullable:
        raise _misfit(column, "null in a NOT NULL field", arr, arr.is_null())
    target = _non_null_branch(avro_type)
    kind, logical = _logical(target)
    t = pa.types
    dtype = arr.type
    if arr.null_count:
        arr = arr.filter(arr.is_valid())  # nulls fit; and a null struct, list or map holds no values to check
    if not len(arr):
        return
    if t.is_struct(dtype) and kind == "record" and isinstance(target, Mapping):
        by_name = {f["name"]: f["type"] for f in target["fields"]}
        for i in range(dtype.num_fields):
            name = dtype.field(i).name
            if name in by_name:
                _check_fits(arr.field(i), by_name[name], f"{column}.{name}")
    elif (t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype)) and kind == "array":
        assert isinstance(target, Mapping)
        _check_fits(arr.flatten(), target["items"], f"{column}[]")
    elif t.is_map(dtype) and kind == "map":
        assert isinstance(target, Mapping)
        entries = pa.ListArray.from_arrays(arr.offsets, arr.items).flatten()
        _check_fits(entries, target["values"], f"{column}{{}}")
    elif t.is_integer(dtype) and kind in ("int", "long"):
        bits = 32 if kind == "int" else 64
        lo, hi = (v.as_py() for v in pc.min_max(arr).values())
        if lo < -(2 ** (bits - 1)) or hi > 2 ** (bits - 1) - 1:
            too_big = pc.greater(arr, pa.scalar(min(2 ** (bits - 1) - 1, hi), dtype))
            out = (
                too_big
                if lo >= -(2 ** (bits - 1))
                else pc.or_(too_big, pc.less(arr, pa.scalar(-(2 ** (bits - 1)), dtype)))
            )
            raise _misfit(column, f"{dtype} value outside Avro {kind}'s range", arr, out)
    elif t.is_timestamp(dtype) and kind == "long":
        unit = {**_TS_UNITS, **_TS_UNITS_MS}.get(logical or "", "us")
        if _UNIT_RANK[dtype.unit] < _UNIT_RANK[unit]:
            try:
                pc.cast(arr, pa.timestamp(unit, tz=dtype.tz))
            except pa.ArrowInvalid:
                scale = 10 ** (3 * (_UNIT_RANK[unit] - _UNIT_RANK[dtype.unit]))
                raw = arr.view(pa.int64())
                out = pc.or_(pc.greater(raw, (2**63 - 1) // scale), pc.less(raw, -(2**63) // scale))
                raise _misfit(column, f"{dtype} value whose {unit} overflow the Avro long", arr, out) from None
    elif t.is_date64(dtype) and kind == "int":
        ms = arr.view(pa.int64())
        off = pc.not_equal(pc.subtract(ms, pc.multiply(pc.divide(ms, 86_400_000), 86_400_000)), 0)
        if pc.any(off).as_py():
            raise _misfit(column, "date64 value that is not a whole day (Avro dates are days)", arr, off)
    elif t.is_time32(dtype) or t.is_time64(dtype):
        raw = arr.view(pa.int32() if t.is_time32(dtype) else pa.int64())
        out = pc.or_(pc.less(raw, 0), pc.greater_equal(raw, _DAY[dtype.unit]))
        if pc.any(out).as_py():
            raise _misfit(column, f"{dtype} value outside the day [00:00, 24:00)", arr, out)


def check_values_fit(table: pa.Table, avro_schema: Mapping[str, Any]) -> None:
    """Check that every value of ``table`` can be written as its column's type in ``avro_schema``, exactly.

    :func:`encode_avro_records` would fail on the first value that does not fit (a null in a NOT NULL field at any
    depth, an integer outside ``int``/``long``) — in a write task, after the write's instant was requested — or
    write another value (a timestamp in seconds or milliseconds whose microseconds overflow ``long``, a time of day
    outside the day, which Avro's time types and every reader take modulo nothing). Run on the whole batch first.

    Args:
        table: the rows, columns named as the schema's fields (columns the schema lacks are not checked).
        avro_schema: the writer schema (a record).

    Raises:
        SchemaMismatchError: naming the column (``a.b`` in a struct, ``a[]`` a list's elements, ``a{}`` a map's
            values) and what does not fit.

    Example:
        >>> s = {"type": "record", "name": "r", "fields": [{"name": "v", "type": "long"}]}
        >>> check_values_fit(pa.table({"v": pa.array([1, None])}), s)
        Traceback (most recent call last):
        ...
        evt_toolkit.errors.SchemaMismatchError: column 'v': null in a NOT NULL field (value 1 of 2)
    """
    field_types = {f["name"]: f["type"] for f in avro_schema["fields"]}
    for name in table.column_names:
        if name in field_types:
            column = table[name]
            arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            _check_fits(arr, field_types[name], name)


def _table_to_records(table: pa.Table, avro_schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    field_types = {f["name"]: f["type"] for f in avro_schema["fields"]}
    names = table.column_names
    columns = [_column_to_avro_values(table.column(n), field_types.get(n, "null")) for n in names]
    if not names:
        return [{} for _ in range(table.num_rows)]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def encode_avro_records(records: pa.Table | Iterable[Mapping[str, Any]], avro_schema: Mapping[str, Any]) -> bytes:
    """Content of an Avro data block (``HoodieAvroDataBlock.serializeRecords``, version 3).

    int32 content version 3, int32 record count, then per record an int32 length and the record's Avro binary.

    Args:
        records: an Arrow table (converted column-wise: timestamps to epoch micros/millis per the schema's logical
            type, dates to epoch days, times to micros/millis, structs/lists/maps recursively) or dicts already in
            fastavro's Python representation.
        avro_schema: the writer schema (normally with meta fields).

    Returns:
        The block content bytes.

    Raises:
        LogFormatError: a record does not fit the schema.
    """
    rows = _table_to_records(records, avro_schema) if isinstance(records, pa.Table) else list(records)
    try:
        parsed = fastavro.parse_schema(dict(avro_schema))
    except Exception as exc:  # fastavro raises several unrelated types for a bad schema
        raise LogFormatError(f"invalid Avro writer schema: {exc}") from exc
    buf = io.BytesIO()
    ends: list[int] = []
    write = fastavro.schemaless_writer
    try:
        for row in rows:
            write(buf, parsed, row)
            ends.append(buf.tell())
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
        raise LogFormatError(f"record {len(ends)} does not match the Avro writer schema: {exc}") from exc
    data = buf.getbuffer()
    out = bytearray(struct.pack(">ii", BLOCK_CONTENT_VERSION, len(ends)))
    start = 0
    for end in ends:
        out += struct.pack(">i", end - start)
        out += data[start:end]
        start = end
    return bytes(out)


def encode_avro_data_block(
    records: pa.Table | Iterable[Mapping[str, Any]],
    avro_schema: Mapping[str, Any] | str,
    instant_time: str,
    *,
    min_event_time: int | None = None,
) -> bytes:
    """A complete ``AVRO_DATA_BLOCK`` as Hudi's append handle writes it.

    Headers: ``INSTANT_TIME`` and ``SCHEMA`` (Java ``Schema.toString()`` of the writer schema), then
    ``MIN_EVENT_TIME`` (ordinal 100, decimal epoch milliseconds) only when ``min_event_time`` is given. That last
    header is this toolkit's opt-in extension: stock Hudi readers fail on any block carrying it (design §2.2).

    Args:
        records: the rows, as an Arrow table or as fastavro-ready dicts (see :func:`encode_avro_records`).
        avro_schema: the writer schema with meta fields, as a dict or as its exact JSON text (used verbatim for the
            ``SCHEMA`` header — handy to reproduce a block written by Java).
        instant_time: the writing instant (``yyyyMMddHHmmssSSS``).
        min_event_time: epoch ms of the smallest event time in the block, for the ``MIN_EVENT_TIME`` header.

    Returns:
        The framed block.

    Raises:
        LogFormatError: a record does not match the schema.

    Example:
        >>> s = with_meta_fields(arrow_to_avro_schema(pa.schema([("id", pa.int32())]), "t_record", "hoodie.t"))
        >>> blk = encode_avro_data_block(pa.table({"id": pa.array([1], pa.int32())}), s, "1", min_event_time=5)
        >>> b'\\x00\\x00\\x00\\x64\\x00\\x00\\x00\\x015' in blk
        True
    """
    if isinstance(avro_schema, str):
        schema_text = avro_schema
        schema_dict: Mapping[str, Any] = json.loads(avro_schema)
    else:
        schema_dict = avro_schema
        schema_text = avro_schema_json(avro_schema)
    header: dict[int, str] = {_INSTANT_TIME: instant_time, _SCHEMA: schema_text}
    if min_event_time is not None:
        if isinstance(min_event_time, bool) or not isinstance(min_event_time, int):
            raise LogFormatError(f"min_event_time must be int epoch milliseconds, got {min_event_time!r}")
        header[_MIN_EVENT_TIME] = str(min_event_time)
    return encode_block(_AVRO_DATA_BLOCK, header, encode_avro_records(records, schema_dict))


# ---------------------------------------------------------------------------------------------------------------------
# Delete block
# ---------------------------------------------------------------------------------------------------------------------


def _java_big_integer_bytes(n: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement (Java's bitLength excludes the sign)."""
    bit_length = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(bit_length // 8 + 1, "big", signed=True)


def _decimal_wrapper_bytes(value: decimal.Decimal) -> bytes:
    """``AvroUtils.wrapValueIntoAvro`` for BigDecimal: ``tryUpcastDecimal`` to scale 15 without rounding, then
    ``Conversions.DecimalConversion.toBytes`` (the unscaled value's ``toByteArray``)."""
    if not value.is_finite():
        raise LogFormatError(f"cannot encode non-finite decimal ordering value {value}")
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    scaled = value.scaleb(DECIMAL_WRAPPER_SCALE, context=decimal.Context(prec=200))
    if scaled != scaled.to_integral_value():
        raise LogFormatError(
            f"cannot encode decimal with scale {-exponent} as scale {DECIMAL_WRAPPER_SCALE} without rounding"
        )
    unscaled = int(scaled)
    precision = len(str(abs(unscaled))) if unscaled else 1
    if precision > DECIMAL_WRAPPER_PRECISION:
        raise LogFormatError(
            f"cannot encode decimal with precision {precision} as max precision {DECIMAL_WRAPPER_PRECISION}"
        )
    return _java_big_integer_bytes(unscaled)


_EPOCH_DATE: Final = _dt.date(1970, 1, 1)
_EPOCH_UTC: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _datetime_micros(value: _dt.datetime) -> int:
    """Epoch microseconds; naive datetimes are taken as UTC (like Spark's session in UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    delta = value - _EPOCH_UTC
    # Sub-microsecond digits (pandas.Timestamp) are dropped, as Spark truncates them.
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time_micros(value: _dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _check_int(value: int, lo: int, hi: int, wrapper: str) -> int:
    if not lo <= value <= hi:
        raise LogFormatError(f"ordering value {value} does not fit {wrapper}")
    return value


def wrap_ordering_value(value: object, arrow_type: pa.DataType | None = None) -> tuple[str, Any]:
    """Choose the ``orderingVal`` union branch Java would write for ``value`` and normalize the value.

    Without ``arrow_type`` this follows ``AvroUtils.wrapValueIntoAvro`` on the Python value's type: ``None`` → null,
    ``bool`` → BooleanWrapper, ``int`` → LongWrapper (Python has one integer type; Java Integer needs the
    Arrow type), ``float`` → DoubleWrapper, ``bytes`` → BytesWrapper, ``str`` → StringWrapper, ``date`` →
    DateWrapper (epoch days), ``Decimal`` → DecimalWrapper (scale 15, two's complement bytes), ``time`` →
    TimeMicrosWrapper, ``datetime`` → TimestampMicrosWrapper (epoch micros, naive = UTC).

    With ``arrow_type`` (the type of the ordering column) it follows what Spark hands to that function, i.e. the
    Avro value of the field after ``HoodieAvroUtils.getNestedFieldVal``: int8/16/32 → IntWrapper, int64 →
    LongWrapper, float32 → FloatWrapper, date → DateWrapper, decimal → DecimalWrapper, and **timestamp →
    LongWrapper of epoch micros** (Spark keeps timestamps as raw longs there, as real delete blocks show); time32 →
    IntWrapper of millis, time64 → LongWrapper of micros.

    Args:
        value: the ordering value of one deleted key.
        arrow_type: the Arrow type of the ordering field, when known.

    Returns:
        ``(wrapper name or "null", value as written in the wrapper's ``value`` field)``; for DecimalWrapper the
        value is the unscaled two's complement bytes.

    Raises:
        LogFormatError: the value has no wrapper, does not fit it, or a decimal would need rounding.

    Example:
        >>> wrap_ordering_value(0, pa.int32())
        ('IntWrapper', 0)
        >>> wrap_ordering_value(0)
        ('LongWrapper', 0)
    """
    if value is None:
        return "null", None
    if hasattr(value, "item") and not isinstance(value, (bytes, str)) and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, pa.Scalar):
        value = value.as_py()
        if value is None:
            return "null", None
    t = pa.types
    if arrow_type is not None:
        if t.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        if t.is_null(arrow_type):
            return "null", None
        if t.is_boolean(arrow_type):
            return "BooleanWrapper", bool(value)
        if t.is_integer(arrow_type):
            iv = _as_int(value)
            if arrow_type.bit_width <= 16 or t.is_int32(arrow_type):
                return "IntWrapper", _check_int(iv, _INT32_MIN, _INT32_MAX, "IntWrapper")
            return "LongWrapper", _check_int(iv, _INT64_MIN, _INT64_MAX, "LongWrapper")
        if t.is_float16(arrow_type) or t.is_float32(arrow_type):
            return "FloatWrapper", float(_as_number(value))
        if t.is_float64(arrow_type):
            return "DoubleWrapper", float(_as_number(value))
        if t.is_decimal(arrow_type):
            return "DecimalWrapper", _decimal_wrapper_bytes(_as_decimal(value))
        if t.is_date(arrow_type):
            return "DateWrapper", _check_int(_as_days(value), _INT32_MIN, _INT32_MAX, "DateWrapper")
        if t.is_timestamp(arrow_type):
            if isinstance(value, _dt.datetime):
                micros = _datetime_micros(value)
            else:
                per_micro = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}[arrow_type.unit]
                micros = _as_int(value) * per_micro if arrow_type.unit != "ns" else _as_int(value) // 1000
            return "LongWrapper", _check_int(micros, _INT64_MIN, _INT64_MAX, "LongWrapper")
        if t.is_time32(arrow_type):
            ms = _time_micros(value) // 1000 if isinstance(value, _dt.time) else _as_int(value)
            return "IntWrapper", _check_int(ms, _INT32_MIN, _INT32_MAX, "IntWrapper")
        if t.is_time64(arrow_type):
            us = _time_micros(value) if isinstance(value, _dt.time) else _as_int(value)
            return "LongWrapper", _check_int(us, _INT64_MIN, _INT64_MAX, "LongWrapper")
        if t.is_string(arrow_type) or t.is_large_string(arrow_type):
            if not isinstance(value, str):
                raise LogFormatError(f"ordering value {value!r} is not a str for Arrow type {arrow_type}")
            return "StringWrapper", value
        if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or t.is_fixed_size_binary(arrow_type):
            return "BytesWrapper", bytes(value)  # type: ignore[call-overload]
        raise LogFormatError(f"no Hudi ordering wrapper for Arrow type {arrow_type}")
    if isinstance(value, bool):
        return "BooleanWrapper", value
    if isinstance(value, int):
        return "LongWrapper", _check_int(value, _INT64_MIN, _INT64_MAX, "LongWrapper")
    if isinstance(value, float):
        return "DoubleWrapper", value
    if isinstance(value, decimal.Decimal):
        return "DecimalWrapper", _decimal_wrapper_bytes(value)
    if isinstance(value, _dt.datetime):
        return "TimestampMicrosWrapper", _check_int(_datetime_micros(value), _INT64_MIN, _INT64_MAX, "LongWrapper")
    if isinstance(value, _dt.date):
        return "DateWrapper", (value - _EPOCH_DATE).days
    if isinstance(value, _dt.time):
        return "TimeMicrosWrapper", _time_micros(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "BytesWrapper", bytes(value)
    if isinstance(value, str):
        return "StringWrapper", value
    raise LogFormatError(f"no Hudi ordering wrapper for a value of type {type(value).__name__}: {value!r}")


def _as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise LogFormatError(f"ordering value {value!r} is not an integer")
    return value


def _as_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        raise LogFormatError(f"ordering value {value!r} is not a number")
    return float(value)


def _as_decimal(value: object) -> decimal.Decimal:
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if isinstance(value, str):
        try:
            return decimal.Decimal(value)
        except decimal.InvalidOperation as exc:
            raise LogFormatError(f"ordering value {value!r} is not a decimal") from exc
    if isinstance(value, float) and math.isfinite(value):
        return decimal.Decimal(repr(value))
    raise LogFormatError(f"ordering value {value!r} is not a decimal")


def _as_days(value: object) -> int:
    if isinstance(value, _dt.datetime):
        return (value.date() - _EPOCH_DATE).days
    if isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days
    return _as_int(value)


def ordering_pylist(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Python values of an ordering column as :func:`wrap_ordering_value` takes them with the column's Arrow type.

    Dates, times and timestamps are given as their integer counts (days; milliseconds for ``time32``, microseconds
    for ``time64``; the timestamp's own unit), not as ``datetime`` objects, which stop at years 1 and 9999: a date of
    day 2**30 is a valid ``DateWrapper``. A ``date64`` that is not a whole day raises ``ArrowInvalid``.
    """
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    t = pa.types
    if t.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    dtype = arr.type
    if t.is_date64(dtype):
        arr, dtype = arr.cast(pa.date32()), pa.date32()
    elif t.is_time32(dtype) and dtype.unit == "s":
        arr, dtype = arr.cast(pa.time32("ms")), pa.time32("ms")
    elif t.is_time64(dtype) and dtype.unit == "ns":
        arr, dtype = pc.cast(arr, pa.time64("us"), safe=False), pa.time64("us")
    if t.is_date32(dtype) or t.is_time32(dtype):
        return arr.view(pa.int32()).to_pylist()
    if t.is_time64(dtype) or t.is_timestamp(dtype):
        return arr.view(pa.int64()).to_pylist()
    return arr.to_pylist()


def check_ordering_values(values: pa.Array | pa.ChunkedArray, field: str) -> None:
    """Check that every delete's ordering value fits the wrapper record Hudi's delete blocks carry it in.

    Raises:
        SchemaMismatchError: naming the field and the value (a decimal that ``DecimalWrapper``'s scale 15 and 30
            digits cannot hold without rounding, a ``date64`` that is not a whole day, ...).
    """
    arrow_type = None if pa.types.is_null(values.type) else values.type
    try:
        pylist = ordering_pylist(values)
    except pa.ArrowInvalid as exc:
        raise SchemaMismatchError(f"ordering field {field!r}: {exc}") from exc
    for v in pylist:
        try:
            wrap_ordering_value(v, arrow_type)
        except LogFormatError as exc:
            raise SchemaMismatchError(
                f"ordering field {field!r}: {exc}; a delete block cannot carry it as Hudi's writers do"
            ) from exc


def _encode_wrapped(wrapper: str, value: Any) -> bytes:
    """Avro binary of the ``orderingVal`` union: branch index, then the wrapper's single ``value`` field."""
    branch = zigzag_long(ORDERING_UNION_INDEX[wrapper])
    if wrapper == "null":
        return branch
    if wrapper == "BooleanWrapper":
        return branch + (b"\x01" if value else b"\x00")
    if wrapper in ("IntWrapper", "LongWrapper", "DateWrapper", "TimeMicrosWrapper", "TimestampMicrosWrapper"):
        return branch + zigzag_long(value)
    if wrapper == "FloatWrapper":
        return branch + struct.pack("<f", value)
    if wrapper == "DoubleWrapper":
        return branch + struct.pack("<d", value)
    if wrapper in ("BytesWrapper", "DecimalWrapper"):
        return branch + avro_bytes(value)
    if wrapper == "StringWrapper":
        return branch + avro_bytes(value.encode("utf-8", errors="replace"))
    raise AssertionError(wrapper)


def _encode_optional_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    return b"\x02" + avro_bytes(value.encode("utf-8", errors="replace"))


def encode_delete_records(
    keys: Sequence[tuple[str | None, str | None]],
    ordering_values: Sequence[object] | None = None,
    *,
    ordering_type: pa.DataType | None = None,
) -> bytes:
    """Avro binary of one ``HoodieDeleteRecordList`` (the payload of a version-3 delete block).

    Args:
        keys: ``(record_key, partition_path)`` per deleted record.
        ordering_values: one ordering value per key (see :func:`wrap_ordering_value`); ``None`` for all-null.
        ordering_type: Arrow type of the ordering field, to pick the wrapper Java would (IntWrapper for int32, ...).

    Returns:
        The Avro binary, without the block's version and length prefix.
    """
    if ordering_values is None:
        ordering_values = [None] * len(keys)
    if len(ordering_values) != len(keys):
        raise LogFormatError(f"{len(keys)} delete keys but {len(ordering_values)} ordering values")
    out = bytearray()
    if keys:
        # GenericDatumWriter.writeArray: one block holding every item, then the 0 terminator.
        out += zigzag_long(len(keys))
        for (record_key, partition_path), ordering in zip(keys, ordering_values, strict=True):
            out += _encode_optional_string(record_key)
            out += _encode_optional_string(partition_path)
            out += _encode_wrapped(*wrap_ordering_value(ordering, ordering_type))
    out += b"\x00"
    return bytes(out)


def encode_delete_block(
    keys: Sequence[tuple[str | None, str | None]],
    ordering_values: Sequence[object] | None,
    instant_time: str,
    schema_json: str,
    *,
    ordering_type: pa.DataType | None = None,
) -> bytes:
    """A complete ``DELETE_BLOCK`` (``HoodieDeleteBlock``, content version 3).

    Content: int32 version 3, int32 payload length, payload = Avro binary of ``HoodieDeleteRecordList`` with Java's
    wrapper-record union for ordering values (:mod:`evt_toolkit.format.delete_schema`). Headers: ``INSTANT_TIME``
    and ``SCHEMA`` (the table's writer schema with meta fields, as Java's append handle writes it).

    Args:
        keys: ``(record_key, partition_path)`` per deleted record; partition path ``""`` for non-partitioned tables.
        ordering_values: ordering value per key, or ``None`` for none. Spark SQL ``DELETE`` writes ``0`` as an
            IntWrapper ("natural order"): pass ``[0] * n`` with ``ordering_type=pa.int32()`` to do the same.
        instant_time: the writing instant.
        schema_json: text of the ``SCHEMA`` header (see :func:`avro_schema_json`).
        ordering_type: Arrow type of the ordering field, to choose the wrapper Java would.

    Returns:
        The framed block.

    Raises:
        LogFormatError: an ordering value cannot be wrapped, or the counts differ.

    Example:
        >>> blk = encode_delete_block([("k1", "")], [0], "1", "{}", ordering_type=pa.int32())
        >>> blk[-8 - 4 - 18 : -8 - 4].hex()  # version 3, payload length 10, HoodieDeleteRecordList
        '000000030000000a0202046b310200040000'
    """
    payload = encode_delete_records(keys, ordering_values, ordering_type=ordering_type)
    content = struct.pack(">ii", BLOCK_CONTENT_VERSION, len(payload)) + payload
    return encode_block(_DELETE_BLOCK, {_INSTANT_TIME: instant_time, _SCHEMA: schema_json}, content)


# ---------------------------------------------------------------------------------------------------------------------
# Command block
# ---------------------------------------------------------------------------------------------------------------------


def encode_rollback_command_block(instant_time: str, target_instant_time: str) -> bytes:
    """A ``COMMAND_BLOCK`` that rolls back every block of ``target_instant_time`` written before it in the slice.

    What ``BaseRollbackHelper`` appends for a failed deltacommit on a v6 table: empty content, headers
    ``INSTANT_TIME`` (the rollback instant), ``COMMAND_BLOCK_TYPE`` = ``"0"`` (ROLLBACK_BLOCK) and
    ``TARGET_INSTANT_TIME`` (the failed instant), in the order found in real 0.15 rollback logs.

    Example:
        >>> len(encode_rollback_command_block("20250126040936578", "20250126040826878"))
        105
    """
    header: dict[int, str] = {
        _INSTANT_TIME: instant_time,
        _COMMAND_BLOCK_TYPE: str(ROLLBACK_COMMAND),
        _TARGET_INSTANT_TIME: target_instant_time,
    }
    return encode_block(_COMMAND_BLOCK, header, b"")


__all__ = [
    "AVRO_NAME_PATTERN",
    "BLOCK_CONTENT_VERSION",
    "LOG_FORMAT_VERSION",
    "MAGIC",
    "META_FIELDS",
    "ROLLBACK_COMMAND",
    "arrow_to_avro_schema",
    "avro_schema_json",
    "check_ordering_values",
    "check_values_fit",
    "commit_seqno",
    "commit_seqnos",
    "encode_avro_data_block",
    "encode_avro_records",
    "encode_block",
    "encode_delete_block",
    "encode_delete_records",
    "encode_rollback_command_block",
    "ordering_pylist",
    "with_meta_fields",
    "wrap_ordering_value",
]
