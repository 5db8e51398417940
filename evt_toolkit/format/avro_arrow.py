"""Avro schema → Arrow schema, and decoded Avro records → Arrow tables.

Type choices follow what parquet-avro (Hudi's base-file writer) produces, so that columns decoded from log
blocks line up with the same columns read from base files by ``pyarrow.parquet``:

============================== ==========================================
Avro                           Arrow
============================== ==========================================
boolean/int/long/float/double  bool/int32/int64/float32/float64
string, enum, uuid             string
bytes, fixed                   binary
decimal (bytes or fixed)       decimal128(p, s) (decimal256 when p > 38)
date                           date32
time-millis / time-micros      time32('ms') / time64('us')
timestamp-millis / -micros     timestamp('ms', 'UTC') / timestamp('us', 'UTC')
local-timestamp-millis/-micros timestamp('ms') / timestamp('us') (no zone)
record                         struct
array                          list<element>
map                            map<string, value>
[null, X] / [X, null]          nullable X
============================== ==========================================

Nullability comes from the schema: a field is nullable only when its type is a union with ``null`` (or
``null`` itself). Unions of two or more non-null branches have no faithful Arrow counterpart that Spark or
Hudi would agree on, and are rejected.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from evt_toolkit.errors import LogFormatError, UnsupportedFeatureError

AvroSchema = Any  # a parsed Avro schema: str (primitive or named reference), dict or list (union)

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def _full_name(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


class _Converter:
    """Walks one schema, remembering named types so later references by name resolve."""

    def __init__(self) -> None:
        self.named: dict[str, pa.DataType] = {}
        self.in_progress: set[str] = set()

    def register(self, schema: Mapping[str, Any], namespace: str | None) -> tuple[str, str | None]:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise LogFormatError(f"Avro named type without a name: {str(schema)[:80]}")
        ns = schema.get("namespace", namespace)
        full = _full_name(name, ns if isinstance(ns, str) else None)
        new_ns = full.rsplit(".", 1)[0] if "." in full else None
        return full, new_ns

    def remember(self, full: str, arrow_type: pa.DataType) -> None:
        self.named[full] = arrow_type
        self.named.setdefault(full.rsplit(".", 1)[-1], arrow_type)

    def field_type(self, schema: AvroSchema, namespace: str | None) -> tuple[pa.DataType, bool]:
        """Arrow type and nullability of a schema used as a field, list item or map value."""
        if isinstance(schema, list):
            branches = [b for b in schema if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
            nullable = len(branches) != len(schema)
            if len(branches) == 0:
                return pa.null(), True
            if len(branches) > 1:
                raise UnsupportedFeatureError(
                    f"Avro union of several non-null types is not supported: {json.dumps(schema)[:120]}"
                )
            return self.convert(branches[0], namespace), nullable
        arrow_type = self.convert(schema, namespace)
        return arrow_type, arrow_type == pa.null()

    def convert(self, schema: AvroSchema, namespace: str | None) -> pa.DataType:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema]
            for candidate in (_full_name(schema, namespace), schema):
                if candidate in self.named:
                    return self.named[candidate]
                if candidate in self.in_progress:
                    raise UnsupportedFeatureError(f"recursive Avro type {schema!r} has no Arrow counterpart")
            raise LogFormatError(f"unknown Avro type name {schema!r}")
        if isinstance(schema, list):
            arrow_type, _ = self.field_type(schema, namespace)
            return arrow_type
        if not isinstance(schema, dict):
            raise LogFormatError(f"invalid Avro schema node: {str(schema)[:80]}")
        avro_type = schema.get("type")
        logical = schema.get("logicalType")
        if isinstance(avro_type, (dict, list)):
            # {"type": {...}} wraps a full schema.
            return self.convert(avro_type, namespace)
        if avro_type == "record" or avro_type == "error":
            full, ns = self.register(schema, namespace)
            self.in_progress.add(full)
            fields = schema.get("fields")
            if not isinstance(fields, list):
                raise LogFormatError(f"Avro record {full} has no field list")
            arrow_fields = []
            for fld in fields:
                if not isinstance(fld, dict) or not isinstance(fld.get("name"), str) or "type" not in fld:
                    raise LogFormatError(f"invalid field in Avro record {full}: {str(fld)[:80]}")
                ftype, nullable = self.field_type(fld["type"], ns)
                arrow_fields.append(pa.field(fld["name"], ftype, nullable=nullable))
            self.in_progress.discard(full)
            struct = pa.struct(arrow_fields)
            self.remember(full, struct)
            return struct
        if avro_type == "enum":
            full, _ = self.register(schema, namespace)
            self.remember(full, pa.string())
            return pa.string()
        if avro_type == "fixed":
            full, _ = self.register(schema, namespace)
            arrow_type = _decimal_type(schema) if logical == "decimal" else pa.binary()
            self.remember(full, arrow_type)
            return arrow_type
        if avro_type == "array":
            item_type, item_nullable = self.field_type(schema.get("items"), namespace)
            return pa.list_(pa.field("element", item_type, nullable=item_nullable))
        if avro_type == "map":
            value_type, value_nullable = self.field_type(schema.get("values"), namespace)
            return pa.map_(pa.string(), pa.field("value", value_type, nullable=value_nullable))
        if not isinstance(avro_type, str) or avro_type not in _PRIMITIVES:
            # A named reference written as {"type": "some.Name"}.
            if isinstance(avro_type, str):
                return self.convert(avro_type, namespace)
            raise LogFormatError(f"invalid Avro type: {str(avro_type)[:80]}")
        return _logical_type(avro_type, logical, schema)


def _decimal_type(schema: Mapping[str, Any]) -> pa.DataType:
    precision = schema.get("precision")
    scale = schema.get("scale", 0)
    if not isinstance(precision, int) or not isinstance(scale, int) or precision < 1 or not 0 <= scale <= precision:
        raise LogFormatError(f"invalid Avro decimal precision/scale: {precision}/{scale}")
    if precision <= 38:
        return pa.decimal128(precision, scale)
    if precision <= 76:
        return pa.decimal256(precision, scale)
    raise UnsupportedFeatureError(f"Avro decimal precision {precision} exceeds Arrow's 76 digits")


def _logical_type(avro_type: str, logical: object, schema: Mapping[str, Any]) -> pa.DataType:
    # Unknown logical types fall back to the underlying type, as the Avro specification requires.
    if avro_type == "int":
        if logical == "date":
            return pa.date32()
        if logical == "time-millis":
            return pa.time32("ms")
    elif avro_type == "long":
        if logical == "timestamp-millis":
            return pa.timestamp("ms", tz="UTC")
        if logical == "timestamp-micros":
            return pa.timestamp("us", tz="UTC")
        if logical == "local-timestamp-millis":
            return pa.timestamp("ms")
        if logical == "local-timestamp-micros":
            return pa.timestamp("us")
        if logical == "time-micros":
            return pa.time64("us")
    elif avro_type == "bytes" and logical == "decimal":
        return _decimal_type(schema)
    return _PRIMITIVES[avro_type]


def _parse(avro_schema: Mapping[str, Any] | Sequence[Any] | str) -> AvroSchema:
    if isinstance(avro_schema, str):
        text = avro_schema.strip()
        if text in _PRIMITIVES:
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise LogFormatError(f"Avro schema is not valid JSON: {exc}") from exc
    return avro_schema


def avro_to_arrow_type(avro_schema: Mapping[str, Any] | Sequence[Any] | str) -> pa.DataType:
    """Arrow type of an Avro schema (see the module table).

    Args:
        avro_schema: a parsed Avro schema (dict, union list or primitive name) or its JSON text.

    Returns:
        The Arrow type; a ``[null, X]`` union maps to X.

    Raises:
        LogFormatError: the schema is malformed.
        UnsupportedFeatureError: the schema uses a construct with no Arrow counterpart (multi-branch unions,
            recursive types).

    Example:
        >>> avro_to_arrow_type({"type": "long", "logicalType": "timestamp-micros"})
        TimestampType(timestamp[us, tz=UTC])
    """
    return _Converter().convert(_parse(avro_schema), None)


def avro_to_arrow_schema(avro_schema: Mapping[str, Any] | str) -> pa.Schema:
    """Arrow schema of an Avro record schema, one Arrow field per Avro field, in order.

    Args:
        avro_schema: a parsed Avro record schema or its JSON text.

    Returns:
        The Arrow schema.

    Raises:
        LogFormatError: the schema is malformed or not a record.
        UnsupportedFeatureError: see :func:`avro_to_arrow_type`.

    Example:
        >>> avro_to_arrow_schema({"type": "record", "name": "r", "fields": [{"name": "a", "type": ["null", "int"]}]})
        a: int32
    """
    arrow_type = avro_to_arrow_type(avro_schema)
    if not isinstance(arrow_type, pa.StructType):
        raise LogFormatError("Avro schema of a log block must be a record")
    return pa.schema([arrow_type.field(i) for i in range(arrow_type.num_fields)])


def _normalize(value: Any, arrow_type: pa.DataType) -> Any:
    """Adapts one fastavro value to what ``pyarrow.array`` accepts for ``arrow_type``.

    pyarrow takes datetimes, dates, times, Decimals, bytes and dicts (for structs and maps) as they are;
    only ``uuid.UUID`` objects, possibly nested in containers, need rebuilding.
    """
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        return {
            arrow_type.field(i).name: _normalize(value.get(arrow_type.field(i).name), arrow_type.field(i).type)
            for i in range(arrow_type.num_fields)
        }
    if pa.types.is_map(arrow_type):
        item_type = arrow_type.item_type
        return [(k, _normalize(v, item_type)) for k, v in value.items()]
    if pa.types.is_list(arrow_type):
        item_type = arrow_type.value_type
        return [_normalize(v, item_type) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def records_to_arrow(records: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Builds an Arrow table from records decoded by fastavro.

    fastavro returns logical types as Python objects (``datetime`` aware for ``timestamp-*``, naive for
    ``local-timestamp-*``, ``date``, ``time``, ``Decimal``, ``uuid.UUID``), maps as dicts and ``fixed``/``bytes``
    as ``bytes``; each is converted to the column's Arrow type. Missing keys become nulls.

    Args:
        records: the decoded records.
        schema: the target Arrow schema, e.g. from :func:`avro_to_arrow_schema`.

    Returns:
        A table with exactly ``schema``.
    """
    columns = []
    for fld in schema:
        values = [r.get(fld.name) for r in records]
        try:
            column = pa.array(values, type=fld.type)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            # Rare (uuid.UUID objects): rebuild the column's values, then let a genuine mismatch raise.
            column = pa.array([_normalize(v, fld.type) for v in values], type=fld.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


__all__ = ["avro_to_arrow_schema", "avro_to_arrow_type", "records_to_arrow"]
