"""The metadata table's ``files`` partition: records, their merge rule, the log block and the metadata-table commit.

Hudi's metadata table (MDT) is a Merge-On-Read table under ``.hoodie/metadata`` whose ``files`` partition lists the
data table's partitions and files. Each record is a ``HoodieMetadataRecord`` (``hudi-common`` ``HoodieMetadata.avsc``)
built by ``HoodieMetadataPayload``:

* key ``__all_partitions__``, ``type`` 1 (``createPartitionListRecord``): ``filesystemMetadata`` maps every
  partition identifier to ``{size: 0, isDeleted}``;
* key = the partition identifier (the partition path, ``"."`` for a non-partitioned table), ``type`` 2
  (``createPartitionFilesRecord``): file name → ``{size, isDeleted}``; deleted files carry ``{0, true}``.

Records are stored in HFiles keyed by the record key, with the ``key`` field of the Avro value emptied
(``HoodieHFileDataBlock.serializeRecord`` → ``truncateRecordKey``). Log files merge on top of the base file record by
record with ``HoodieMetadataPayload.combineFileSystemMetadata`` (:func:`merge_records`).

This module also encodes what a metadata-table deltacommit and rollback write (``HoodieCommitMetadata`` with one
write stat, ``HoodieRollbackPlan``/``HoodieRollbackMetadata``), and the two table-config edits Hudi makes when it
drops a metadata partition: ``hoodie.table.metadata.partitions`` (``HoodieTableConfig.setMetadataPartitionState``)
and the index definitions file (``HoodieTableMetaClient.deleteIndexDefinition``). Pure functions; see
``docs/metadata-table.md`` for where each rule comes from.

Example:
    >>> rec = partition_files_record("city=sf", {"f1.parquet": 10}, ["f0.parquet"])
    >>> merge_records(partition_files_record("city=sf", {"f0.parquet": 5}, []), rec).files["f1.parquet"]
    FileInfo(size=10, is_deleted=False)
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from evt_toolkit.errors import MetadataTableError
from evt_toolkit.format.hfile import GZIP_OS_UNKNOWN, encode_hfile, read_hfile
from evt_toolkit.format.log_writer import META_FIELDS, encode_block
from evt_toolkit.format.logfile import BlockType, HeaderKey
from evt_toolkit.format.metadata import encode_avro_container, encode_commit_metadata_avro, load_schema

__all__ = [
    "ALL_PARTITIONS_KEY",
    "COLUMN_STATS",
    "FILES",
    "FILES_FILE_ID",
    "FILE_LIST",
    "METADATA_FOLDER",
    "NON_PARTITIONED_NAME",
    "PARTITION_LIST",
    "RECORD_INDEX",
    "FileInfo",
    "FilesRecord",
    "decode_files_hfile",
    "encode_files_log_block",
    "encode_files_record",
    "encode_index_definitions",
    "encode_mdt_deltacommit",
    "encode_mdt_inflight",
    "encode_rollback_metadata",
    "encode_rollback_plan",
    "merge_records",
    "metadata_partitions_after_drop",
    "partition_files_record",
    "partition_identifier",
    "partition_list_record",
    "schema_without_meta_fields",
    "without_index_definitions",
]

METADATA_FOLDER = ".hoodie/metadata"
#: ``MetadataPartitionType`` partition paths (``getPartitionPath``) and the prefixes of per-index partitions.
FILES = "files"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
RECORD_INDEX = "record_index"
PARTITION_STATS = "partition_stats"
SECONDARY_INDEX_PREFIX = "secondary_index_"
EXPRESSION_INDEX_PREFIX = "expr_index_"
#: ``HoodieTableMetadataUtil.getFileIDForFileGroup(FILES, 0)``: the files partition has exactly one file group.
FILES_FILE_ID = "files-0000-0"
#: ``HoodieTableMetadata.RECORDKEY_PARTITION_LIST`` and ``NON_PARTITIONED_NAME``.
ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED_NAME = "."
#: ``MetadataPartitionType.ALL_PARTITIONS/FILES.getRecordType()``.
PARTITION_LIST = 1
FILE_LIST = 2
#: ``WriteOperationType.UPSERT_PREPPED``: how every metadata-table deltacommit after initialisation is recorded.
MDT_OPERATION = "UPSERT_PREPPED"


def partition_identifier(partition_path: str) -> str:
    """``HoodieTableMetadataUtil.getPartitionIdentifierForFilesPartition``: ``""`` (non-partitioned) becomes ``"."``."""
    return partition_path if partition_path else NON_PARTITIONED_NAME


def data_partition(identifier: str) -> str:
    """The data table's partition path of a files-partition key (``"."`` → ``""``)."""
    return "" if identifier == NON_PARTITIONED_NAME else identifier


@dataclass(frozen=True, slots=True)
class FileInfo:
    """``HoodieMetadataFileInfo``: a file's size, or a tombstone (``is_deleted``, size 0)."""

    size: int
    is_deleted: bool


@dataclass(frozen=True, slots=True)
class FilesRecord:
    """One record of the ``files`` partition.

    Attributes:
        key: ``__all_partitions__`` or a partition identifier (``"."`` for a non-partitioned table).
        record_type: ``PARTITION_LIST`` (1) or ``FILE_LIST`` (2).
        files: file name (or, for the partition list, partition identifier) → :class:`FileInfo`.
    """

    key: str
    record_type: int
    files: Mapping[str, FileInfo]

    def active(self) -> dict[str, int]:
        """Names (and sizes) not deleted — what a reader lists."""
        return {name: info.size for name, info in self.files.items() if not info.is_deleted}


def partition_list_record(added: Iterable[str] = (), deleted: Iterable[str] = ()) -> FilesRecord:
    """``HoodieMetadataPayload.createPartitionListRecord``: partitions (data paths) added and, for a clean or a
    ``DELETE_PARTITION``, deleted."""
    files = {partition_identifier(p): FileInfo(0, False) for p in sorted(set(added))}
    files.update({partition_identifier(p): FileInfo(0, True) for p in sorted(set(deleted))})
    return FilesRecord(ALL_PARTITIONS_KEY, PARTITION_LIST, files)


def partition_files_record(partition_path: str, added: Mapping[str, int], deleted: Iterable[str]) -> FilesRecord:
    """``HoodieMetadataPayload.createPartitionFilesRecord``: added file → size, deleted file → tombstone.

    Raises:
        MetadataTableError: an added file with a size ≤ 0 (Hudi's ``checkState(fileSize > 0)``), or a file both
            added and deleted.
    """
    files: dict[str, FileInfo] = {}
    for name, size in sorted(added.items()):
        if size <= 0:
            raise MetadataTableError(f"file {partition_path}/{name} added to the metadata table with size {size}")
        files[name] = FileInfo(int(size), False)
    for name in sorted(set(deleted)):
        if name in files:
            raise MetadataTableError(f"file {partition_path}/{name} is both added and deleted by one instant")
        files[name] = FileInfo(0, True)
    return FilesRecord(partition_identifier(partition_path), FILE_LIST, files)


def merge_records(older: FilesRecord, newer: FilesRecord) -> FilesRecord:
    """``HoodieMetadataPayload.combineFileSystemMetadata`` (also hudi-rs ``FilesPartitionMerger``).

    A tombstone removes an older live entry (and is dropped with it); a tombstone with no older entry, or over an
    older tombstone, is kept so that it can still cancel the entry when log records are later merged onto the base
    file; a live entry over an older one keeps the larger size (sizes only grow).

    Raises:
        MetadataTableError: the two records have different types (Hudi's ``preCombine`` check).
    """
    if older.record_type != newer.record_type:
        raise MetadataTableError(
            f"cannot merge metadata records of type {older.record_type} and {newer.record_type} (key {newer.key!r})"
        )
    merged: dict[str, FileInfo] = dict(older.files)
    for name, info in newer.files.items():
        old = merged.get(name)
        if old is None:
            merged[name] = info
        elif info.is_deleted:
            if old.is_deleted:
                merged[name] = info
            else:
                del merged[name]
        else:
            merged[name] = FileInfo(max(info.size, old.size), False)
    return FilesRecord(newer.key, newer.record_type, merged)


# -- Avro values ----------------------------------------------------------------------------------------------------

_parsed_cache: dict[str, Any] = {}


def _parsed(schema_json: str) -> Any:
    parsed = _parsed_cache.get(schema_json)
    if parsed is None:
        parsed = fastavro.parse_schema(json.loads(schema_json))
        _parsed_cache[schema_json] = parsed
    return parsed


def encode_files_record(record: FilesRecord, schema_json: str) -> bytes:
    """The Avro value Hudi stores in the HFile: ``key`` emptied, ``_hoodie_*`` and the other indexes' fields null.

    Args:
        record: the record.
        schema_json: the ``HoodieMetadataRecord`` writer schema (the table's own, see :func:`decode_files_hfile`).

    Raises:
        MetadataTableError: the schema is not a ``HoodieMetadataRecord`` schema this module can fill.
    """
    schema = json.loads(schema_json)
    value: dict[str, Any] = {}
    for f in schema.get("fields", []):
        name = f["name"]
        if name == "key":
            value[name] = ""
        elif name == "type":
            value[name] = record.record_type
        elif name == "filesystemMetadata":
            value[name] = {n: {"size": i.size, "isDeleted": i.is_deleted} for n, i in record.files.items()}
        else:
            ftype = f["type"]
            if not (isinstance(ftype, list) and "null" in ftype):
                raise MetadataTableError(f"metadata record field {name!r} is not nullable; cannot write a files record")
            value[name] = None
    if "filesystemMetadata" not in value or "type" not in value:
        raise MetadataTableError("schema is not a HoodieMetadataRecord schema (no filesystemMetadata/type field)")
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _parsed(schema_json), value)
    return out.getvalue()


def decode_files_record(key: str, value: bytes, schema_json: str, path: str) -> FilesRecord:
    """Decode one HFile value of the ``files`` partition (the key comes from the HFile, as Java and hudi-rs take it).

    Raises:
        MetadataTableError: the value does not decode with the schema, or is not a files record.
    """
    try:
        rec = fastavro.schemaless_reader(io.BytesIO(value), _parsed(schema_json), None)
    except Exception as exc:  # fastavro raises several unrelated types on bad input
        raise MetadataTableError(f"metadata record {key!r} in {path} does not decode: {exc}") from exc
    if not isinstance(rec, dict):
        raise MetadataTableError(f"metadata record {key!r} in {path} is not a record")
    record_type = rec.get("type")
    if record_type not in (PARTITION_LIST, FILE_LIST):
        raise MetadataTableError(f"record {key!r} in {path} has type {record_type}, not a files-partition record")
    files = {
        str(n): FileInfo(int(i.get("size") or 0), bool(i.get("isDeleted")))
        for n, i in (rec.get("filesystemMetadata") or {}).items()
    }
    return FilesRecord(key, int(record_type), files)


def decode_files_hfile(data: bytes, path: str, schema_json: str | None = None) -> tuple[list[FilesRecord], str]:
    """Every record of a ``files`` HFile (base file or log-block content) and the writer schema used.

    Args:
        data: the HFile bytes.
        path: named in errors.
        schema_json: the schema to decode with; default: the HFile's own ``schema`` file-info entry (Java takes
            the block's ``SCHEMA`` header, which Hudi writes identical).

    Raises:
        MetadataTableError: no schema to decode with, or a record that does not decode.
    """
    hfile = read_hfile(data, path)
    schema = schema_json or hfile.schema_json
    if schema is None:
        raise MetadataTableError(f"HFile {path} carries no Avro schema")
    return [decode_files_record(k, v, schema, path) for k, v in hfile.entries], schema


def encode_files_log_block(
    records: Sequence[FilesRecord],
    instant: str,
    schema_json: str,
    *,
    create_time_ms: int,
    gzip_os: int = GZIP_OS_UNKNOWN,
) -> bytes:
    """One ``HFILE_DATA`` log block holding ``records`` (``HoodieHFileDataBlock``), headers ``SCHEMA`` and
    ``INSTANT_TIME`` as Hudi writes them.

    Records sharing a key are merged first (an HFile holds each key once, Hudi's ``checkState``).
    """
    by_key: dict[str, FilesRecord] = {}
    for rec in records:
        prev = by_key.get(rec.key)
        by_key[rec.key] = rec if prev is None else merge_records(prev, rec)
    entries = [(k, encode_files_record(by_key[k], schema_json)) for k in sorted(by_key, key=lambda k: k.encode())]
    hfile = encode_hfile(
        entries, file_info={"schema": schema_json.encode("utf-8")}, create_time_ms=create_time_ms, gzip_os=gzip_os
    )
    header = {int(HeaderKey.SCHEMA): schema_json, int(HeaderKey.INSTANT_TIME): instant}
    return encode_block(int(BlockType.HFILE_DATA), header, hfile)


def schema_without_meta_fields(schema_json: str) -> str:
    """The ``HoodieMetadataRecord`` schema without its ``_hoodie_*`` fields — what a metadata-table commit records
    under ``extraMetadata.schema`` (the table populates no meta fields)."""
    schema = json.loads(schema_json)
    schema["fields"] = [f for f in schema.get("fields", []) if f.get("name") not in META_FIELDS]
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


# -- metadata-table timeline files ----------------------------------------------------------------------------------


def encode_mdt_deltacommit(
    instant: str,
    log_path: str,
    num_records: int,
    log_size: int,
    schema_json: str,
    *,
    upsert_time_ms: int = 0,
    sync_marker: bytes | None = None,
) -> bytes:
    """The completed metadata-table deltacommit: one ``HoodieDeltaWriteStat`` for the new ``files`` log, as
    ``HoodieAppendHandle`` on a v8+ table reports it (``prevCommit`` = the instant, ``baseFile`` empty, counters 0,
    ``logVersion`` 1), ``operationType`` ``UPSERT_PREPPED`` and ``extraMetadata.schema``.

    Args:
        instant: the deltacommit's requested time (= the data-table instant it mirrors).
        log_path: the log file, relative to the metadata table's base path (``files/.files-0000-0_…``).
        num_records: records in the block.
        log_size: the log file's size in bytes.
        schema_json: the block's writer schema (meta fields are dropped for ``extraMetadata.schema``).
        upsert_time_ms: ``runtimeStats.totalUpsertTime``.
        sync_marker: Avro sync marker (random by default).
    """
    stat = {
        "fileId": FILES_FILE_ID,
        "path": log_path,
        "prevCommit": instant,
        "numWrites": num_records,
        "numUpdateWrites": num_records,
        "totalWriteBytes": log_size,
        "partitionPath": FILES,
        "fileSizeInBytes": log_size,
        "logVersion": 1,
        "logOffset": 0,  # HoodieDeltaWriteStat's primitive long
        "baseFile": "",
        "logFiles": [log_path.rsplit("/", 1)[-1]],
        "runtimeStats": {"totalScanTime": 0, "totalCreateTime": 0, "totalUpsertTime": upsert_time_ms},
    }
    meta = {
        "partitionToWriteStats": {FILES: [stat]},
        "compacted": False,
        "extraMetadata": {"schema": schema_without_meta_fields(schema_json)},
        "operationType": MDT_OPERATION,
    }
    return encode_commit_metadata_avro(meta, sync_marker=sync_marker)


def encode_mdt_inflight(*, sync_marker: bytes | None = None) -> bytes:
    """The metadata-table ``.deltacommit.inflight``: an empty workload profile (what every fixture holds)."""
    meta = {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": MDT_OPERATION}
    return encode_commit_metadata_avro(meta, sync_marker=sync_marker)


def encode_rollback_plan(
    instant: str, action: str, files_by_partition: Mapping[str, Sequence[str]], *, sync_marker: bytes | None = None
) -> bytes:
    """``HoodieRollbackPlan`` of a v8+ listing-based rollback: one request per file to delete (full paths), no log
    blocks (``ListingBasedRollbackStrategy``, as the fixture ``mor_v9_nonpartitioned_rollback``'s MDT holds it)."""
    requests = [
        {
            "partitionPath": partition,
            "fileId": "",
            "latestBaseInstant": "",
            "filesToBeDeleted": [path],
            "logBlocksToBeDeleted": {},
        }
        for partition, paths in files_by_partition.items()
        for path in paths
    ]
    record = {
        "instantToRollback": {"commitTime": instant, "action": action},
        "RollbackRequests": requests,
        "version": 1,
    }
    return encode_avro_container(record, load_schema("HoodieRollbackPlan"), sync_marker=sync_marker)


def encode_rollback_metadata(
    rollback_instant: str,
    instant: str,
    action: str,
    deleted_by_partition: Mapping[str, Sequence[str]],
    *,
    time_taken_ms: int = 0,
    sync_marker: bytes | None = None,
) -> bytes:
    """``HoodieRollbackMetadata`` of that rollback: per partition the files deleted (full paths)."""
    record = {
        "startRollbackTime": rollback_instant,
        "timeTakenInMillis": time_taken_ms,
        "totalFilesDeleted": sum(len(v) for v in deleted_by_partition.values()),
        "commitsRollback": [instant],
        "partitionMetadata": {
            partition: {
                "partitionPath": partition,
                "successDeleteFiles": list(paths),
                "failedDeleteFiles": [],
                "rollbackLogFiles": {},
                "logFilesFromFailedCommit": {},
            }
            for partition, paths in deleted_by_partition.items()
        },
        "version": 1,
        "instantsRollback": [{"commitTime": instant, "action": action}],
    }
    return encode_avro_container(record, load_schema("HoodieRollbackMetadata"), sync_marker=sync_marker)


# -- dropping metadata partitions -----------------------------------------------------------------------------------

METADATA_PARTITIONS_KEY = "hoodie.table.metadata.partitions"
METADATA_INFLIGHT_KEY = "hoodie.table.metadata.partitions.inflight"


def split_partitions(value: str | None) -> list[str]:
    """A comma-separated ``hoodie.table.metadata.partitions*`` value as a list (empty entries dropped)."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def metadata_partitions_after_drop(props: Mapping[str, str], drop: Iterable[str]) -> dict[str, str]:
    """``hoodie.properties`` after ``HoodieTableConfig.setMetadataPartitionState(partition, false)`` for each of
    ``drop``: removed from both lists, written sorted and comma-joined; dropping ``files`` clears both lists.

    Example:
        >>> metadata_partitions_after_drop({METADATA_PARTITIONS_KEY: "files,record_index,column_stats"},
        ...                                ["record_index"])[METADATA_PARTITIONS_KEY]
        'column_stats,files'
    """
    ready = set(split_partitions(props.get(METADATA_PARTITIONS_KEY)))
    inflight = set(split_partitions(props.get(METADATA_INFLIGHT_KEY)))
    for partition in drop:
        if "," in partition:
            raise MetadataTableError(f"metadata partition name cannot contain a comma: {partition!r}")
        if partition == FILES:
            ready.clear()
            inflight.clear()
        else:
            ready.discard(partition)
            inflight.discard(partition)
    out = dict(props)
    out[METADATA_PARTITIONS_KEY] = ",".join(sorted(ready))
    out[METADATA_INFLIGHT_KEY] = ",".join(sorted(inflight))
    return out


def _jackson(value: Any, indent: int, out: list[str]) -> None:
    """Jackson's ``DefaultPrettyPrinter``: objects one entry per line (two-space indent, ``" : "``), arrays inline
    (``[ a, b ]``), empty containers ``{ }`` and ``[ ]``."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            out.append("{ }")
            return
        out.append("{\n")
        items = list(value.items())
        for i, (k, v) in enumerate(items):
            out.append(f"{pad}  {json.dumps(str(k), ensure_ascii=False)} : ")
            _jackson(v, indent + 1, out)
            out.append(",\n" if i < len(items) - 1 else "\n")
        out.append(pad + "}")
    elif isinstance(value, list):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, v in enumerate(value):
            _jackson(v, indent + 1, out)
            if i < len(value) - 1:
                out.append(", ")
        out.append(" ]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def encode_index_definitions(document: Mapping[str, Any]) -> str:
    """The index definitions file (``.hoodie/.index_defs/index.json``) as ``HoodieIndexMetadata.toJson`` writes it."""
    out: list[str] = []
    _jackson(dict(document), 0, out)
    return "".join(out)


def without_index_definitions(text: str, names: Iterable[str], path: str) -> tuple[str, tuple[str, ...]]:
    """The index definitions file with the definitions ``names`` removed, and the names actually removed.

    Raises:
        MetadataTableError: the file is not the JSON document Hudi writes.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetadataTableError(f"index definitions {path} are not JSON: {exc}") from exc
    defs = document.get("indexDefinitions") if isinstance(document, dict) else None
    if not isinstance(defs, dict):
        raise MetadataTableError(f"index definitions {path} have no indexDefinitions object")
    removed = tuple(n for n in names if n in defs)
    document["indexDefinitions"] = {k: v for k, v in defs.items() if k not in removed}
    return encode_index_definitions(document), removed
