"""Arrow ↔ Spark type mapping for the ``hudi_evt`` data source.

Spark's Python data source checks every Arrow batch a reader yields against the Arrow form of the declared Spark
schema (``to_arrow_schema(schema, timezone="UTC")``) and refuses any difference, so the reader declares its schema
with :func:`spark_schema_for` and casts its batches to :func:`batch_schema_for` of that schema.

Mapping (pyspark's own Arrow conversion): timestamps with a zone → ``TimestampType`` (instants, shown in the
session zone), timestamps without one (Avro ``local-timestamp-*``) → ``TimestampNTZType``; times (Avro
``time-millis`` and ``time-micros``) → ``TimeType``; decimals, maps, structs, lists and binary map to their Spark
counterparts. Every field is declared nullable: Hudi columns are nullable unions in almost every table, and a
non-null declaration Spark trusts would be unsafe after schema evolution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from evt_toolkit.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType


def _nullable(dt: DataType) -> DataType:
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(dt, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return ArrayType(_nullable(dt.elementType), True)
    if isinstance(dt, MapType):
        # Map keys are never null in Spark; only values become nullable.
        return MapType(_nullable(dt.keyType), _nullable(dt.valueType), True)
    return dt


def _as_spark_holds(t: pa.DataType) -> pa.DataType:
    """``t`` with ``time32`` (Avro ``time-millis``), which pyspark does not map, as the ``time64`` Spark's times are;
    the batches are cast the same way (:func:`conform_batches`), exactly."""
    if pa.types.is_time32(t):
        return pa.time64("us")
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_as_spark_holds(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(_as_spark_holds(t.item_type)))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_as_spark_holds(t.value_type)))
    return t


def spark_schema_for(schema: pa.Schema) -> StructType:
    """The Spark schema for a table's merged Arrow schema.

    Args:
        schema: the Arrow schema the pure-Python reader produces.

    Raises:
        UnsupportedFeatureError: a column has an Arrow type Spark cannot represent.

    Example:
        >>> import pyarrow as pa
        >>> spark_schema_for(pa.schema([("ts", pa.timestamp("us", tz="UTC"))])).simpleString()
        'struct<ts:timestamp>'
    """
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    fields = []
    for f in schema:
        try:
            dt = from_arrow_type(_as_spark_holds(f.type), prefer_timestamp_ntz=True)
        except Exception as exc:  # pyspark raises its own error classes for unsupported Arrow types
            raise UnsupportedFeatureError(f"column {f.name!r} has Arrow type {f.type} that Spark cannot hold") from exc
        fields.append(StructField(f.name, _nullable(dt), True))
    return StructType(fields)


def batch_schema_for(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects of a reader's batches for ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def conform_batches(table: pa.Table, target: pa.Schema, max_rows: int = 65536) -> list[pa.RecordBatch]:
    """Cast ``table`` to ``target`` (same column names) and split it into record batches.

    Args:
        table: rows in the reader's Arrow schema.
        target: the schema from :func:`batch_schema_for`.
        max_rows: largest batch handed to Spark.
    """
    table = table.select(target.names)
    if not table.schema.equals(target):
        table = table.cast(target)
    return table.to_batches(max_chunksize=max_rows)
