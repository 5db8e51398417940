"""Insert records into a new file group with a base file, as ``HoodieCreateHandle`` does for SIMPLE-index inserts.

Hudi's SIMPLE index finds keys in base files only (``HoodieSimpleIndex`` →
``HoodieIndexUtils.getLatestBaseFilesForAllPartitions``), so on a SIMPLE-index MOR table Spark writes inserts as new
Parquet base files of new file groups, even inside a deltacommit (every stock v8/v9 fixture's ``INSERT`` shows it);
a log-only group would be invisible to the next stock writer, which would then insert the key a second time.

The file is ``<fileId>_<writeToken>_<instant>.parquet`` with the five meta columns (``_hoodie_file_name`` is the
base file name), the writer schema's columns in Avro-derived Arrow types, and Hudi's footer keys
(``parquet.avro.schema``, ``writer.model.name``, the record keys' bloom filter ``org.apache.hudi.bloomfilter`` with
``hoodie_bloom_filter_type_code`` as ``HoodieBloomFilterWriteSupport`` writes them (:mod:`evt_toolkit.format.bloom`,
keys in row order), ``hoodie_min_record_key``/``hoodie_max_record_key`` in Java's UTF-16 string order), so a
BLOOM-index writer that later takes over the table finds every key. An ownership record
and a DIRECT ``CREATE`` marker precede the file, so our rollback and Hudi's marker-based one both find it.
"""

from __future__ import annotations

import posixpath
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evt_toolkit.errors import EvtError, SchemaMismatchError, StorageError, WriteError
from evt_toolkit.faults import fault_point
from evt_toolkit.format.avro_arrow import avro_to_arrow_schema
from evt_toolkit.format.bloom import MAX_RECORD_KEY, MIN_RECORD_KEY, BloomFilterBuilder, utf16_min_max_arrow
from evt_toolkit.format.eventtime import EpochUnit, event_time_stats
from evt_toolkit.format.log_writer import META_FIELDS
from evt_toolkit.format.names import BaseFileName, new_write_token
from evt_toolkit.format.ownership import BASE, WRITE, OwnedFile
from evt_toolkit.format.properties import dump_properties
from evt_toolkit.format.records import WriteStat
from evt_toolkit.format.table_version import create_marker
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.ownership import record_ownership
from evt_toolkit.write.fence import require_inflight, withdraw_if_decided
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec

__all__ = ["base_file_marker_path", "base_file_rows", "write_base_file"]

_COMMIT_TIME, _SEQNO, _KEY, _PART, _FILE_NAME = META_FIELDS[:5]
_PARTITION_METAFILE = ".hoodie_partition_metadata"
_SKIPPED = frozenset({"_evt_bucket"})


def base_file_marker_path(instant: str, partition_path: str, file_name: str) -> str:
    """``.hoodie/.temp/<instant>/<partition>/<base file>.marker.CREATE`` (``WriteMarkers.create``, IOType CREATE).

    Example:
        >>> base_file_marker_path("2", "p=a", "f-0_0-0-0_2.parquet")
        '.hoodie/.temp/2/p=a/f-0_0-0-0_2.parquet.marker.CREATE'
    """
    return create_marker(instant, posixpath.join(partition_path, file_name))


def base_file_rows(spec: WriteJobSpec, upserts: pa.Table, file_name: str, task_partition_id: int) -> pa.Table:
    """The rows of a new base file: meta columns filled as ``HoodieCreateHandle`` does, columns in Avro types.

    Sorted by record key (row-group statistics then bound the key range; Hudi's bulk insert sorts the same way).

    Raises:
        SchemaMismatchError: a column of the writer schema is missing or cannot be cast to its Avro type.
    """
    schema = avro_to_arrow_schema(spec.avro_schema_json)
    n = upserts.num_rows
    if n:
        upserts = upserts.take(pc.sort_indices(upserts, sort_keys=[(_KEY, "ascending")]))
    seqnos = pc.binary_join_element_wise(
        f"{spec.instant}_{task_partition_id}_", pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), ""
    )
    columns: list[pa.Array | pa.ChunkedArray] = []
    for field in schema:
        if field.name == _COMMIT_TIME:
            columns.append(pa.array([spec.instant] * n, pa.string()))
        elif field.name == _SEQNO:
            columns.append(seqnos)
        elif field.name == _FILE_NAME:
            columns.append(pa.array([file_name] * n, pa.string()))
        else:
            if field.name not in upserts.column_names:
                raise SchemaMismatchError(f"column {field.name!r} of the writer schema is missing from the records")
            column = upserts[field.name]
            try:
                columns.append(column if column.type == field.type else pc.cast(column, field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"column {field.name!r} ({column.type}) cannot be written as {field.type}: {exc}"
                ) from exc
    return pa.Table.from_arrays(columns, schema=schema)


def _parquet_bytes(rows: pa.Table, spec: WriteJobSpec) -> tuple[bytes, str | None, str | None]:
    lo = hi = None
    bounds = utf16_min_max_arrow(rows[_KEY]) if rows.num_rows else None
    meta = {b"parquet.avro.schema": spec.avro_schema_json.encode(), b"writer.model.name": b"avro"}
    if bounds is not None:
        lo, hi = bounds
        bloom = BloomFilterBuilder(spec.bloom)
        bloom.add_arrow(rows[_KEY])
        meta.update({k.encode(): v.encode() for k, v in bloom.footer().items()})
        meta[MIN_RECORD_KEY.encode()] = str(lo).encode()
        meta[MAX_RECORD_KEY.encode()] = str(hi).encode()
    rows = rows.replace_schema_metadata({**(rows.schema.metadata or {}), **meta})
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, compression="snappy", write_statistics=True)
    return sink.getvalue().to_pybytes(), lo, hi


def _ensure_partition_metafile(storage: TableStorage, spec: WriteJobSpec, partition_path: str) -> None:
    rel = posixpath.join(partition_path, _PARTITION_METAFILE) if partition_path else _PARTITION_METAFILE
    if storage.exists(rel):
        return
    props = {"commitTime": spec.instant, "partitionDepth": str(len(spec.partition_fields))}
    try:
        storage.write_bytes_atomic(rel, dump_properties(props, header_comment="partition metadata").encode("latin-1"))
    except StorageError:
        if not storage.exists(rel):
            raise


def write_base_file(
    spec: WriteJobSpec,
    fg: FileGroupWrite,
    upserts: pa.Table,
    task_partition_id: int,
    stage_id: int = 0,
    attempt_id: int = 0,
) -> list[WriteStat]:
    """Write a new file group's base file with ``upserts`` (all inserts) and return its ``HoodieWriteStat``.

    Args:
        spec: the job.
        fg: the new file group (``fg.creates_base_file``).
        upserts: the records, with the meta columns :func:`~evt_toolkit.write.task.prepare_batch` fills.
        task_partition_id: Spark task partition id (write token and sequence numbers).
        stage_id: Spark stage id (write token).
        attempt_id: Spark task attempt id (write token).

    Raises:
        WriteError: the base file exists already, or cannot be written.
    """
    started = time.monotonic()
    if upserts.num_rows == 0:
        return []
    storage = TableStorage.from_uri(spec.table_uri, spec.storage_options)
    token = new_write_token(task_partition_id, stage_id, attempt_id)
    name = BaseFileName(fg.file_id, token, spec.instant, ".parquet").name
    rel = posixpath.join(fg.partition_path, name) if fg.partition_path else name
    try:
        rows = base_file_rows(
            spec, upserts.drop_columns([c for c in upserts.column_names if c in _SKIPPED]), name, task_partition_id
        )
        payload, _lo, _hi = _parquet_bytes(rows, spec)
    except EvtError as exc:
        if isinstance(exc, WriteError):
            raise
        raise WriteError(f"instant {spec.instant}: cannot encode records for file group {fg.file_id}: {exc}") from exc
    if storage.exists(rel):
        raise WriteError(f"instant {spec.instant}: base file {storage.full_path(rel)} already exists; not overwriting")
    what = f"the base file of file group {fg.file_id}"
    require_inflight(storage, spec, what)  # a late or speculative attempt writes nothing once the instant is decided
    # Recorded before it exists: a rollback deletes exactly the recorded files of the instant (docs/hudi-1x.md §5).
    record_ownership(storage, spec.instant, WRITE, token, [OwnedFile(rel, BASE)])
    _ensure_partition_metafile(storage, spec, fg.partition_path)
    storage.create_empty([base_file_marker_path(spec.instant, fg.partition_path, name)])
    try:
        storage.write_bytes_atomic(rel, payload)
    except StorageError as exc:
        raise WriteError(f"instant {spec.instant}: cannot write base file {storage.full_path(rel)}: {exc}") from exc
    withdraw_if_decided(storage, spec, [rel], what)
    lo_et = hi_et = None
    fld = spec.event_time_field
    if fld and fld in rows.column_names and rows.num_rows:
        unit: EpochUnit = spec.event_time_unit
        st = event_time_stats(rows[fld], unit, field=fld)
        lo_et, hi_et = st.min_ms, st.max_ms
    elapsed = int((time.monotonic() - started) * 1000)
    fault_point("write.after_task")
    return [
        WriteStat.of(
            fg.partition_path,
            fileId=fg.file_id,
            path=rel,
            prevCommit="null",
            numWrites=rows.num_rows,
            numInserts=rows.num_rows,
            totalWriteBytes=len(payload),
            fileSizeInBytes=len(payload),
            minEventTime=lo_et,
            maxEventTime=hi_et,
            runtimeStats={"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": elapsed},
        )
    ]
