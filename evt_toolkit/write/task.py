"""Write tasks: turn a batch into keyed records and write one file group's new log files.

:func:`prepare_batch` runs on the driver (or per Spark partition): it derives record keys, partition paths and
buckets, de-duplicates by key and splits deletes. :func:`write_file_group` runs once per file group, on a Spark
executor or locally: it opens storage from the job spec, writes a marker, encodes Avro data blocks and a delete block
into new log files and returns the ``HoodieDeltaWriteStat`` of each file.

Hudi classes mirrored: ``SimpleAvroKeyGenerator`` / ``ComplexAvroKeyGenerator`` / ``NonpartitionedAvroKeyGenerator``
(keys and partition paths), ``OverwriteWithLatestAvroPayload.preCombine`` (de-duplication), ``HoodieAppendHandle``
(blocks, stats, markers), ``HoodieLogFormatWriter`` (rollover), ``HoodiePartitionMetadata`` (partition metafile).
"""

from __future__ import annotations

import json
import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import EvtError, SchemaMismatchError, StorageError, WriteError
from evt_toolkit.faults import fault_point
from evt_toolkit.format.eventtime import EpochUnit, event_time_stats, to_epoch_ms
from evt_toolkit.format.extra_metadata import DeleteEventTimes
from evt_toolkit.format.keys import EMPTY_RECORDKEY_PLACEHOLDER, NULL_RECORDKEY_PLACEHOLDER
from evt_toolkit.format.log_writer import (
    META_FIELDS,
    check_ordering_values,
    check_values_fit,
    encode_avro_data_block,
    encode_avro_records,
    encode_delete_block,
    ordering_pylist,
)
from evt_toolkit.format.names import LogFileName, new_write_token
from evt_toolkit.format.ordering import comparable
from evt_toolkit.format.ownership import LOG, WRITE, OwnedFile
from evt_toolkit.format.properties import dump_properties
from evt_toolkit.format.records import WriteStat
from evt_toolkit.format.table_version import table_version_format
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.ownership import record_ownership
from evt_toolkit.write.bucket import bucket_ids
from evt_toolkit.write.create_handle import write_base_file
from evt_toolkit.write.fence import require_inflight, withdraw_if_decided
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec

__all__ = [
    "BUCKET_COLUMN",
    "DELETE_ORDERING_COLUMN",
    "PARTITION_METAFILE",
    "FileWritten",
    "check_required_fields",
    "partition_paths",
    "prepare_batch",
    "record_keys",
    "validate_batch",
    "write_file_group",
]

#: Column ``prepare_batch`` adds with each row's bucket; tasks drop it before encoding.
BUCKET_COLUMN = "_evt_bucket"
#: Ordering value column of the delete table (``DeleteRecord.orderingVal``).
DELETE_ORDERING_COLUMN = "ordering_value"
#: Epoch milliseconds of a deleted record's event time, when the delete batch carries the event-time field (recorded
#: in the write stats, so a log of deletes has a known min event time; ``docs/data-safety.md`` §3).
DELETE_EVENT_TIME_COLUMN = "_evt_event_time_ms"
PARTITION_METAFILE = ".hoodie_partition_metadata"
IS_DELETED_FIELD = "_hoodie_is_deleted"

# PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH.
DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
_NOT_FOLDER_NAMES = [".", "..", ".hoodie"]

_KEY, _PART, _COMMIT_TIME, _SEQNO, _FILE_NAME = (
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_file_name",
)
# Records of the first chunk encoded to estimate the average record size (HoodieAppendHandle samples too).
_SIZE_SAMPLE_ROWS = 256


# ---------------------------------------------------------------------------------------------------------------------
# Keys, partition paths, validation
# ---------------------------------------------------------------------------------------------------------------------


def _is_key_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)


def _as_strings(column: pa.Array | pa.ChunkedArray, field: str, what: str) -> pa.Array:
    """A key or partition column as Java's ``String.valueOf`` prints it (strings, integers and booleans only)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not _is_key_type(arr.type):
        raise SchemaMismatchError(
            f"{what} field {field!r} has type {arr.type}; only string, integer and boolean {what} fields are supported"
        )
    return pc.cast(arr, pa.string())


def record_keys(table: pa.Table, fields: Sequence[str], field_prefixed: bool = False) -> pa.Array:
    """``_hoodie_record_key`` of every row, as Hudi's Avro key generators build it.

    One field (``SimpleAvroKeyGenerator``, or the complex one storing bare values): the value itself, which may be
    neither null nor empty. Several fields, or one with ``field_prefixed`` (``ComplexAvroKeyGenerator``,
    :mod:`evt_toolkit.write.key_encoding`): ``f1:v1,f2:v2`` with ``__null__`` / ``__empty__`` placeholders, refused
    only when every field is null or empty (``KeyGenUtils.getRecordKey``).

    Raises:
        WriteError: a key is null or empty (naming the field and the count).
        SchemaMismatchError: a key field is missing or of an unsupported type.

    Example:
        >>> record_keys(pa.table({"a": [1], "b": ["x"]}), ["a", "b"]).to_pylist()
        ['a:1,b:x']
    """
    for f in fields:
        if f not in table.column_names:
            raise SchemaMismatchError(f"record key field {f!r} is missing from the data")
    if len(fields) == 1 and not field_prefixed:
        keys = _as_strings(table[fields[0]], fields[0], "record key")
        bad = pc.sum(pc.fill_null(pc.equal(pc.binary_length(keys), 0), True).cast(pa.int64())).as_py() or 0
        if bad:
            raise WriteError(f"record key field {fields[0]!r} is null or empty in {bad} rows; Hudi keys cannot be")
        return keys
    parts: list[pa.Array] = []
    usable = None
    for f in fields:
        v = _as_strings(table[f], f, "record key")
        empty = pc.equal(pc.binary_length(v), 0)
        present = pc.fill_null(pc.invert(empty), False)
        usable = present if usable is None else pc.or_(usable, present)
        v = pc.if_else(pc.is_null(v), NULL_RECORDKEY_PLACEHOLDER, pc.if_else(empty, EMPTY_RECORDKEY_PLACEHOLDER, v))
        parts.append(pc.binary_join_element_wise(f"{f}:", v, ""))
    assert usable is not None
    bad = table.num_rows - (pc.sum(usable.cast(pa.int64())).as_py() or 0)
    if bad:
        raise WriteError(f"record key fields {', '.join(fields)} are all null or empty in {bad} rows")
    return pc.binary_join_element_wise(*parts, ",")


def partition_paths(table: pa.Table, fields: Sequence[str], hive_style: bool) -> pa.Array:
    """``_hoodie_partition_path`` of every row (``f1=v1/f2=v2`` hive style, else ``v1/v2``; ``""`` unpartitioned).

    Null or empty values go to ``__HIVE_DEFAULT_PARTITION__`` (``PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH``).

    Raises:
        SchemaMismatchError: a partition field is missing or of an unsupported type.
        WriteError: a value contains ``/`` (it would silently add a partition level; URL encoding is off), or,
            without hive-style names, is ``.``, ``..`` or ``.hoodie`` (no partition folder of the table).

    Example:
        >>> partition_paths(pa.table({"r": ["eu", None]}), ["r"], True).to_pylist()
        ['r=eu', 'r=__HIVE_DEFAULT_PARTITION__']
    """
    if not fields:
        return pa.array([""] * table.num_rows, pa.string()) if table.num_rows else pa.array([], pa.string())
    parts: list[pa.Array] = []
    for f in fields:
        if f not in table.column_names:
            raise SchemaMismatchError(f"partition field {f!r} is missing from the data")
        v = _as_strings(table[f], f, "partition")
        if pc.any(pc.fill_null(pc.match_substring(v, "/"), False)).as_py():
            raise WriteError(f"partition field {f!r} has values containing '/', which would nest partitions")
        if not hive_style:
            # Named by the bare value, these folders are the partition's parent, the folder above it, or the one
            # Hudi's listing skips (FileSystemBackedTableMetadata): the records would never be read.
            bad = pc.fill_null(pc.is_in(v, pa.array(_NOT_FOLDER_NAMES)), False)
            if pc.any(bad).as_py():
                found = sorted(set(v.filter(bad).to_pylist()))
                raise WriteError(
                    f"partition field {f!r} has values {', '.join(map(repr, found))}, which cannot name a partition "
                    "folder without hive-style partitioning"
                )
        v = pc.if_else(pc.fill_null(pc.equal(pc.binary_length(v), 0), True), DEFAULT_PARTITION_PATH, v)
        parts.append(pc.binary_join_element_wise(f"{f}=", v, "") if hive_style else v)
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")


def data_field_names(spec: WriteJobSpec) -> list[str]:
    """User columns of the writer schema (meta fields excluded), in schema order."""
    schema = json.loads(spec.avro_schema_json)
    return [f["name"] for f in schema["fields"] if f["name"] not in META_FIELDS]


def check_required_fields(
    schema: pa.Schema,
    operation: str,
    record_key_fields: Sequence[str],
    partition_fields: Sequence[str],
    ordering_field: str | None,
    event_time_field: str | None,
) -> None:
    """Check that a batch has the key, partition, ordering and event-time fields the operation needs, usably typed.

    Deletes need only the key and partition fields.

    Raises:
        SchemaMismatchError: naming the missing or mistyped field.
    """
    names = set(schema.names)
    for f in record_key_fields:
        if f not in names:
            raise SchemaMismatchError(f"record key field {f!r} is missing from the data")
        if not _is_key_type(schema.field(f).type):
            raise SchemaMismatchError(f"record key field {f!r} has unsupported type {schema.field(f).type}")
    for f in partition_fields:
        if f not in names:
            raise SchemaMismatchError(f"partition field {f!r} is missing from the data")
        if not _is_key_type(schema.field(f).type):
            raise SchemaMismatchError(f"partition field {f!r} has unsupported type {schema.field(f).type}")
    if operation == "delete":
        return
    if ordering_field and ordering_field not in names:
        raise SchemaMismatchError(f"ordering (precombine) field {ordering_field!r} is missing from the data")
    if event_time_field:
        if event_time_field not in names:
            raise SchemaMismatchError(f"event-time field {event_time_field!r} is missing from the data")
        t = schema.field(event_time_field).type
        if not (pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date(t)):
            raise SchemaMismatchError(
                f"event-time field {event_time_field!r} has type {t}; expected an integer epoch, timestamp or date"
            )


def validate_batch(spec: WriteJobSpec, schema: pa.Schema) -> None:
    """Check that a batch carries every field the operation needs, with usable types. No data is read.

    Upserts and inserts need the record key, partition, ordering and event-time fields and every column of the writer
    schema; deletes need only the key and partition fields.

    Raises:
        SchemaMismatchError: naming the missing or mistyped field.
    """
    check_required_fields(
        schema,
        spec.operation,
        spec.record_key_fields,
        spec.partition_fields,
        spec.ordering_field,
        spec.event_time_field,
    )
    if spec.operation == "delete":
        return
    missing = [n for n in data_field_names(spec) if n not in set(schema.names)]
    if missing:
        raise SchemaMismatchError(f"columns {', '.join(map(repr, missing))} of the table schema are missing")


# ---------------------------------------------------------------------------------------------------------------------
# prepare_batch
# ---------------------------------------------------------------------------------------------------------------------


def _dedupe_indices(keys: pa.Array, partitions: pa.Array, ordering: pa.Array | None) -> pa.Array:
    """Row indices of the winner per record, in input order: greatest ordering value, ties (and no ordering) → later.

    A record is a ``HoodieKey``: the record key *and* the partition path, as Hudi's ``deduplicateRecords`` keys a
    batch under a non-global index (the only kind written here), so one key in two partitions is two records.
    ``OverwriteWithLatestAvroPayload.preCombine`` keeps the record with the greater ordering value; Hudi reduces
    records in arrival order, so among equal values the later one wins. A null ordering value sorts lowest.
    """
    n = len(keys)
    rows = pa.array(np.arange(n, dtype=np.int64))
    cols: dict[str, pa.Array] = {"k": keys, "p": partitions, "r": rows}
    sort_keys: list[tuple[str, str, str]] = [("k", "ascending", "at_start"), ("p", "ascending", "at_start")]
    if ordering is not None:
        cols["o"] = comparable(ordering)  # Hudi's order: floats as Java compares them
        sort_keys.append(("o", "ascending", "at_start"))
    sort_keys.append(("r", "ascending", "at_start"))
    t = pa.table(cols)
    order = pc.sort_indices(t, sort_keys=sort_keys)
    last = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)  # row i and row i + 1 (in sorted order) are one record
        for column in ("k", "p"):
            ordered = t[column].take(order)
            same &= pc.equal(ordered.slice(0, n - 1), ordered.slice(1)).to_numpy(zero_copy_only=False)
        last[:-1] = ~same
    winners = order.to_numpy()[last]
    return pa.array(np.sort(winners))


def _empty_deletes(ordering_type: pa.DataType) -> pa.Table:
    return pa.table(
        {
            _KEY: pa.array([], pa.string()),
            _PART: pa.array([], pa.string()),
            DELETE_ORDERING_COLUMN: pa.array([], ordering_type),
            BUCKET_COLUMN: pa.array([], pa.int32()),
            DELETE_EVENT_TIME_COLUMN: pa.array([], pa.int64()),
        }
    )


def require_ordering_values(
    ordering: pa.Array | pa.ChunkedArray | None, field: str | None, operation: str, table_uri: str
) -> None:
    """Refuse null ordering values in an upsert or insert, before any de-duplication (every row is checked).

    Hudi's writers refuse them (``HoodieAvroUtils.getNestedFieldVal``: "The value of <field> can not be null"): a
    null has no place in event-time order, and where a record sits (log or base) would decide its fate.

    Raises:
        WriteError: naming the field, the count and the table.
    """
    if ordering is not None and operation != "delete" and ordering.null_count:
        raise WriteError(
            f"ordering (precombine) field {field!r} is null in {ordering.null_count} rows of the batch "
            f"for table {table_uri}; every upserted or inserted record needs an ordering value"
        )


def prepare_batch(
    spec: WriteJobSpec,
    data: pa.Table,
    bucket_count: int,
    hash_fields: Sequence[str] | str,
) -> tuple[pa.Table, pa.Table]:
    """Key, bucket, de-duplicate and split a batch into data records and delete records.

    Args:
        spec: the job (operation, key/partition/ordering fields, writer schema, instant).
        data: the user's rows.
        bucket_count: ``hoodie.bucket.index.num.buckets``.
        hash_fields: ``hoodie.bucket.index.hash.field``.

    Returns:
        ``(upserts, deletes)``. ``upserts`` has the five meta columns (commit time, record key and partition path
        filled; sequence number and file name left null for the task), the writer schema's user columns and
        ``_evt_bucket``. ``deletes`` has ``_hoodie_record_key``, ``_hoodie_partition_path``, ``ordering_value`` and
        ``_evt_bucket``. For ``delete`` the ordering value is the row's ordering field when the data has it, else
        ``0`` as an int (Hudi's "natural order" delete, as ``EmptyHoodieRecordPayload`` and SQL ``DELETE`` write).
        ``_hoodie_is_deleted=true`` rows of an upsert stay data records, as in Hudi.

    Raises:
        SchemaMismatchError: a needed field is missing or mistyped, or an upsert's value does not fit the writer
            schema (:func:`~evt_toolkit.format.log_writer.check_values_fit`).
        WriteError: null/empty record keys, or null ordering values in an upsert or insert.

    Example:
        >>> spec = WriteJobSpec("/t", "20250101000000000", "upsert",
        ...     '{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"ts","type":"long"}]}',
        ...     ("id",), (), "ts", None, "ms", False, 1 << 30, "t")
        >>> up, de = prepare_batch(spec, pa.table({"id": [1, 1], "ts": [5, 3]}), 4, ["id"])
        >>> up["ts"].to_pylist(), de.num_rows
        ([5], 0)
    """
    validate_batch(spec, data.schema)
    if data.num_rows:
        data = data.combine_chunks()
    keys = record_keys(data, spec.record_key_fields, spec.field_prefixed_keys)
    partitions = partition_paths(data, spec.partition_fields, spec.hive_style_partitioning)
    has_ordering = bool(spec.ordering_field) and spec.ordering_field in data.column_names
    ordering = data[spec.ordering_field].combine_chunks() if has_ordering and spec.ordering_field else None
    if ordering is not None and pa.types.is_dictionary(ordering.type):
        ordering = ordering.dictionary_decode()
    require_ordering_values(ordering, spec.ordering_field, spec.operation, spec.table_uri)
    # Every value, before de-duplication: one that does not fit would fail its task after the instant was requested,
    # or be written as another value.
    if spec.operation != "delete":
        check_values_fit(data, json.loads(spec.avro_schema_json))
    elif ordering is not None and spec.ordering_field:
        check_ordering_values(ordering, spec.ordering_field)
    keep = _dedupe_indices(keys, partitions, ordering)
    keys, partitions = keys.take(keep), partitions.take(keep)
    # Hudi 1.x writers (table versions 8 and 9) split record keys into hash keys their own way (HUDI-8403).
    extraction = "1.x" if spec.table_version >= 8 else "0.x"
    buckets = pa.array(bucket_ids(keys, hash_fields, bucket_count, key_extraction=extraction), pa.int32())
    n = len(keys)

    if spec.operation == "delete":
        if ordering is not None:
            ordering_values: pa.Array = ordering.take(keep)
        else:
            ordering_values = pa.array(np.zeros(n, dtype=np.int32))
        field = spec.event_time_field
        if field and field in data.column_names:
            unit: EpochUnit = spec.event_time_unit
            event_ms = to_epoch_ms(data[field].take(keep), unit, field=field)
        else:
            event_ms = pa.nulls(n, pa.int64())
        deletes = pa.table(
            {
                _KEY: keys,
                _PART: partitions,
                DELETE_ORDERING_COLUMN: ordering_values,
                BUCKET_COLUMN: buckets,
                DELETE_EVENT_TIME_COLUMN: event_ms,
            }
        )
        return _empty_upserts(spec), deletes

    rows = data.take(keep)
    nulls = pa.nulls(n, pa.string())
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        _COMMIT_TIME: pa.array([spec.instant] * n, pa.string()) if n else pa.array([], pa.string()),
        _SEQNO: nulls,
        _KEY: keys,
        _PART: partitions,
        _FILE_NAME: nulls,
    }
    for name in data_field_names(spec):
        columns[name] = rows[name]
    columns[BUCKET_COLUMN] = buckets
    ordering_type = ordering.type if ordering is not None else pa.int32()
    return pa.table(columns), _empty_deletes(ordering_type)


def _empty_upserts(spec: WriteJobSpec) -> pa.Table:
    from evt_toolkit.format.avro_arrow import avro_to_arrow_schema

    schema = avro_to_arrow_schema(spec.avro_schema_json)
    fields = [f for f in schema if f.name not in META_FIELDS]
    meta = [pa.field(n, pa.string()) for n in META_FIELDS]
    return pa.schema([*meta, *fields, pa.field(BUCKET_COLUMN, pa.int32())]).empty_table()


# ---------------------------------------------------------------------------------------------------------------------
# write_file_group
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unit:
    """Blocks written by one ``appendBlocks`` call (the rollover check runs after each)."""

    blocks: tuple[bytes, ...]
    records: int
    deletes: int
    min_event_time: int | None
    max_event_time: int | None
    deleted: DeleteEventTimes | None = None


@dataclass(slots=True)
class _LogFileOut:
    version: int
    chunks: list[bytes]
    records: int = 0
    deletes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    deleted: DeleteEventTimes | None = None

    @property
    def size(self) -> int:
        return sum(len(c) for c in self.chunks)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _partition_depth(spec: WriteJobSpec) -> int:
    return len(spec.partition_fields)


def ensure_partition_metafile(storage: TableStorage, partition_path: str, instant: str, depth: int) -> None:
    """Write ``<partition>/.hoodie_partition_metadata`` unless present (``HoodiePartitionMetadata.trySave``).

    Written atomically (temp file + rename, like Java's ``_<taskId>`` temp name); a concurrent task that wins the race
    is fine, as both write the same facts.
    """
    rel = posixpath.join(partition_path, PARTITION_METAFILE) if partition_path else PARTITION_METAFILE
    if storage.exists(rel):
        return
    text = dump_properties({"commitTime": instant, "partitionDepth": str(depth)}, header_comment="partition metadata")
    try:
        storage.write_bytes_atomic(rel, text.encode("latin-1"))
    except StorageError:
        if not storage.exists(rel):
            raise


def _event_bounds(table: pa.Table, spec: WriteJobSpec) -> tuple[int | None, int | None]:
    field = spec.event_time_field
    if not field or field not in table.column_names or table.num_rows == 0:
        return None, None
    unit: EpochUnit = spec.event_time_unit
    st = event_time_stats(table[field], unit, field=field)
    return st.min_ms, st.max_ms


def _delete_event_bounds(deletes: pa.Table) -> tuple[bool, int | None, int | None]:
    """``(known, min, max)`` event time of the deleted records; known only when every one of them is.

    A delete of unknown event time could remove a row of any event time, so one unknown makes the bounds unknown.
    """
    if DELETE_EVENT_TIME_COLUMN not in deletes.column_names or not deletes.num_rows:
        return False, None, None
    ms = deletes[DELETE_EVENT_TIME_COLUMN]
    if ms.null_count:
        return False, None, None
    mm = pc.min_max(ms)
    return True, mm["min"].as_py(), mm["max"].as_py()


def _rows_per_block(records: pa.Table, schema: dict[str, Any], spec: WriteJobSpec) -> int:
    """Records per data block so a block stays near ``hoodie.logfile.data.block.max.size``.

    Like ``HoodieAppendHandle``, the average record size is estimated from a sample. The block target is also capped
    by ``hoodie.logfile.max.size`` so that a small log-size limit can take effect between blocks.
    """
    n = records.num_rows
    limit = max(1, min(spec.max_data_block_size, spec.max_log_file_size))
    sample = records.slice(0, min(n, _SIZE_SAMPLE_ROWS))
    sample_bytes = len(encode_avro_records(sample, schema)) - 8
    avg = max(1.0, sample_bytes / max(1, sample.num_rows))
    return max(1, int(limit // avg))


def _data_units(records: pa.Table, spec: WriteJobSpec) -> list[_Unit]:
    schema = json.loads(spec.avro_schema_json)
    n = records.num_rows
    if n == 0:
        return []
    per_block = _rows_per_block(records, schema, spec)
    units: list[_Unit] = []
    for start in range(0, n, per_block):
        chunk = records.slice(start, per_block)
        lo, hi = _event_bounds(chunk, spec)
        header_min = lo if spec.min_event_time_header else None
        block = encode_avro_data_block(chunk, spec.avro_schema_json, spec.instant, min_event_time=header_min)
        units.append(_Unit((block,), chunk.num_rows, 0, lo, hi))
    return units


def _delete_block(deletes: pa.Table, spec: WriteJobSpec) -> bytes:
    keys = deletes[_KEY].combine_chunks().to_pylist()
    parts = deletes[_PART].combine_chunks().to_pylist()
    ordering = deletes[DELETE_ORDERING_COLUMN].combine_chunks()
    ordering_type = None if pa.types.is_null(ordering.type) else ordering.type
    return encode_delete_block(
        list(zip(keys, parts, strict=True)),
        ordering_pylist(ordering),
        spec.instant,
        spec.avro_schema_json,
        ordering_type=ordering_type,
    )


def _fill_meta(upserts: pa.Table, spec: WriteJobSpec, fg: FileGroupWrite, task_partition_id: int) -> pa.Table:
    """Sequence numbers and file names, as ``HoodieAppendHandle.populateMetadataFields`` sets them in the task."""
    n = upserts.num_rows
    if BUCKET_COLUMN in upserts.column_names:
        upserts = upserts.drop_columns([BUCKET_COLUMN])
    seqnos = pc.binary_join_element_wise(
        f"{spec.instant}_{task_partition_id}_", pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), ""
    )
    names = [*META_FIELDS, *data_field_names(spec)]
    columns: list[pa.Array | pa.ChunkedArray] = []
    for name in names:
        if name == _SEQNO:
            columns.append(seqnos)
        elif name == _FILE_NAME:
            # Log records carry the file id only (the append handle calls setFileName(fileId)).
            columns.append(pa.array([fg.file_id] * n, pa.string()) if n else pa.array([], pa.string()))
        elif name == _COMMIT_TIME:
            columns.append(pa.array([spec.instant] * n, pa.string()) if n else pa.array([], pa.string()))
        else:
            if name not in upserts.column_names:
                raise SchemaMismatchError(f"column {name!r} of the writer schema is missing from the records")
            columns.append(upserts[name])
    return pa.Table.from_arrays(columns, names=names)


@dataclass(frozen=True, slots=True)
class FileWritten:
    """What a write task reports for one file it wrote: the file's write stat and, for a log with deletes, the
    event times of the records it deleted (not a ``HoodieWriteStat`` field: the driver records them in the commit's
    ``extraMetadata``)."""

    stat: WriteStat
    deleted: DeleteEventTimes | None = None


def _write_stat(
    fg: FileGroupWrite, out: _LogFileOut, name: str, elapsed_ms: int, overrides: dict[str, Any]
) -> WriteStat:
    """One ``HoodieDeltaWriteStat`` in Jackson's field order (``HoodieWriteStat`` then ``HoodieDeltaWriteStat``);
    ``overrides`` are the fields whose meaning the table version changed."""
    path = posixpath.join(fg.partition_path, name) if fg.partition_path else name
    size = out.size
    new_group = fg.is_new_file_group
    fields: dict[str, Any] = dict(
        fileId=fg.file_id,
        path=path,
        prevCommit=fg.prev_commit,
        numWrites=out.records,
        numDeletes=out.deletes,
        # The bucket index tags every record of an existing bucket with its location, so all of them are updates;
        # a new bucket's records are inserts.
        numUpdateWrites=0 if new_group else out.records,
        numInserts=out.records if new_group else 0,
        totalWriteBytes=size,
        fileSizeInBytes=size,
        minEventTime=out.min_event_time,
        maxEventTime=out.max_event_time,
        runtimeStats={"totalScanTime": 0, "totalUpsertTime": elapsed_ms, "totalCreateTime": 0},
        logVersion=out.version,
        # Every deltacommit starts a new file (no append on local/object stores), so its first block is at 0.
        logOffset=0,
        baseFile=fg.base_file or "",
        logFiles=[*fg.existing_log_files, name],
        recordsStats={"val": None},
    )
    fields.update(overrides)
    return WriteStat.of(fg.partition_path, **fields)


def write_file_group(
    spec: WriteJobSpec,
    fg: FileGroupWrite,
    upserts: pa.Table,
    deletes: pa.Table,
    task_partition_id: int,
    stage_id: int = 0,
    attempt_id: int = 0,
) -> list[FileWritten]:
    """Write one file group's new log file(s) for a deltacommit and return their write stats.

    Writes, in order: the partition metafile if the partition is new, a DIRECT ``APPEND`` marker, then the log files
    ``.{file_id}_{base_instant}.log.{v}_{token}`` (never appending to an existing file). Data records go into Avro
    data blocks of about ``max_data_block_size`` (with the ``MIN_EVENT_TIME`` header when the table opted in), the
    deletes into one delete block after them; after each append the file rolls over to version + 1 once it exceeds
    ``max_log_file_size`` (``HoodieLogFormatWriter.rolloverIfNeeded``).

    Args:
        spec: the job.
        fg: the file group write from the plan.
        upserts: de-duplicated data rows with the meta columns (see :func:`prepare_batch`).
        deletes: delete rows (``_hoodie_record_key``, ``_hoodie_partition_path``, ``ordering_value``).
        task_partition_id: Spark task partition id (write token and sequence numbers).
        stage_id: Spark stage id (write token).
        attempt_id: Spark task attempt id (write token).

    Returns:
        One ``HoodieDeltaWriteStat`` dict per log file written, in Hudi's JSON key order.

    Raises:
        WriteError: a log file to be written already exists (named), or encoding failed.

    Example:
        >>> write_file_group(spec, fg, upserts, deletes, task_partition_id=0)  # doctest: +SKIP
        [{'fileId': '00000001-...-0', 'path': 'region=eu/.00000001-..._20250101000000000.log.1_0-0-0', ...}]
    """
    if fg.creates_base_file:
        return [FileWritten(st) for st in write_base_file(spec, fg, upserts, task_partition_id, stage_id, attempt_id)]
    started = time.monotonic()
    storage = TableStorage.from_uri(spec.table_uri, spec.storage_options)
    token = new_write_token(task_partition_id, stage_id, attempt_id)
    fmt = table_version_format(spec.table_version)
    try:
        records = _fill_meta(upserts, spec, fg, task_partition_id)
        units = _data_units(records, spec)
        if deletes.num_rows:
            delete_block = _delete_block(deletes, spec)
            known, dmin, dmax = _delete_event_bounds(deletes)
            if units:
                last = units[-1]
                units[-1] = _Unit(
                    (*last.blocks, delete_block),
                    last.records,
                    deletes.num_rows,
                    last.min_event_time,
                    last.max_event_time,
                    DeleteEventTimes(known, dmin, dmax),
                )
            else:
                units.append(
                    _Unit((delete_block,), 0, deletes.num_rows, None, None, DeleteEventTimes(known, dmin, dmax))
                )
    except EvtError as exc:
        if isinstance(exc, WriteError):
            raise
        raise WriteError(f"instant {spec.instant}: cannot encode records for file group {fg.file_id}: {exc}") from exc
    if not units:
        return []

    files: list[_LogFileOut] = [_LogFileOut(fg.log_version, [])]
    for i, unit in enumerate(units):
        cur = files[-1]
        cur.chunks.extend(unit.blocks)
        cur.records += unit.records
        cur.deletes += unit.deletes
        cur.deleted = unit.deleted.merge(cur.deleted) if unit.deleted is not None else cur.deleted
        cur.min_event_time = _min(cur.min_event_time, unit.min_event_time)
        cur.max_event_time = _max(cur.max_event_time, unit.max_event_time)
        if cur.size > spec.max_log_file_size and i + 1 < len(units):
            files.append(_LogFileOut(cur.version + 1, []))

    name_instant = fmt.log_name_instant(slice_base_instant=fg.base_instant, write_instant=spec.instant)
    names = [LogFileName(fg.file_id, name_instant, "log", f.version, token).name for f in files]
    rels = [posixpath.join(fg.partition_path, n) if fg.partition_path else n for n in names]
    for rel in rels:
        if storage.exists(rel):
            raise WriteError(
                f"instant {spec.instant}: log file {storage.full_path(rel)} already exists; not overwriting"
            )

    what = f"the logs of file group {fg.file_id}"
    require_inflight(storage, spec, what)  # a late or speculative attempt writes nothing once the instant is decided
    # Recorded before they exist: a rollback deletes exactly these files of the instant, whatever their names.
    record_ownership(storage, spec.instant, WRITE, token, [OwnedFile(rel, LOG) for rel in rels])
    ensure_partition_metafile(storage, fg.partition_path, spec.instant, _partition_depth(spec))
    storage.create_empty(
        fmt.log_marker_path(
            spec.instant,
            fg.partition_path,
            name,
            file_id=fg.file_id,
            write_token=token,
            slice_base_instant=fg.base_instant,
        )
        for name in (names if fmt.logs_named_by_deltacommit else names[:1])
    )
    written: list[FileWritten] = []
    for out, name, rel in zip(files, names, rels, strict=True):
        try:
            storage.write_bytes_atomic(rel, b"".join(out.chunks))
        except StorageError as exc:
            raise WriteError(f"instant {spec.instant}: cannot write log file {storage.full_path(rel)}: {exc}") from exc
        elapsed = int((time.monotonic() - started) * 1000)
        overrides = fmt.delta_stat_fields(write_instant=spec.instant, log_file_name=name)
        written.append(FileWritten(_write_stat(fg, out, name, elapsed, overrides), out.deleted))
    withdraw_if_decided(storage, spec, rels, what)
    fault_point("write.after_task")
    return written
