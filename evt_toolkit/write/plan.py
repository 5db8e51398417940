"""Write planning: which file group and file slice each (partition, bucket) of a batch goes to. Pure, no I/O.

Mirrors Hudi's simple bucket index on a Merge-On-Read table (``HoodieSimpleBucketIndex``, ``HoodieAppendHandle``):

* a bucket that already has a file group in the partition gets a new log file in that group's latest slice;
* a bucket with no file group gets a new file group whose only slice is *log-only*, keyed by the writing instant
  (the bucket index cannot find records in logs it did not write, so Hudi's MOR bucket writers append from the start);
* while a compaction ``C`` is pending on a file group, writes go to the empty slice ``C`` opened for it
  (``AbstractTableFileSystemView.addNewFileSliceAtInstant``), after every log version that slice already holds or
  that the plan reserves for its leftover-log links (design §2.3 "Links").

Every deltacommit writes a *new* log version: local and object stores cannot append (``StorageSchemes``), so Hudi rolls
over to ``max version + 1`` as well.

Example:
    >>> fg = plan_file_group_writes("20250101000000000", [("p=a", 3)], [], [], new_file_id=lambda b: f"{b:08d}-x-0")
    >>> fg[0].file_id, fg[0].base_instant, fg[0].log_version, fg[0].prev_commit
    ('00000003-x-0', '20250101000000000', 1, 'null')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from evt_toolkit.errors import EvtError, WriteError
from evt_toolkit.format.bloom import DEFAULT_BLOOM_CONFIG, BloomFilterConfig
from evt_toolkit.format.eventtime import EpochUnit
from evt_toolkit.format.names import LogFileName
from evt_toolkit.format.records import CompactionOperation
from evt_toolkit.storage.options import StorageOptions
from evt_toolkit.write.bucket import bucket_id_from_file_id, new_bucket_file_id

__all__ = [
    "DEFAULT_MAX_DATA_BLOCK_SIZE",
    "DEFAULT_MAX_LOG_FILE_SIZE",
    "ExistingSlice",
    "FileGroupWrite",
    "PendingCompactionReservation",
    "WriteJobSpec",
    "next_log_version",
    "plan_file_group_writes",
]

#: ``hoodie.logfile.max.size`` default (``HoodieStorageConfig.LOGFILE_MAX_SIZE``): 1 GiB.
DEFAULT_MAX_LOG_FILE_SIZE = 1024 * 1024 * 1024
#: ``hoodie.logfile.data.block.max.size`` default (``HoodieStorageConfig.LOGFILE_DATA_BLOCK_MAX_SIZE``): 256 MiB.
DEFAULT_MAX_DATA_BLOCK_SIZE = 256 * 1024 * 1024

OPERATIONS = ("upsert", "insert", "delete")


@dataclass(frozen=True, slots=True)
class WriteJobSpec:
    """Table-level facts every write task needs (picklable, so Spark can ship it to executors).

    Attributes:
        table_uri: the table's base path or URI; each task opens its own storage from it.
        instant: the deltacommit instant being written.
        operation: ``upsert``, ``insert`` or ``delete``.
        avro_schema_json: the writer schema *with* meta fields, as the log blocks' ``SCHEMA`` header carries it.
        record_key_fields: ``hoodie.table.recordkey.fields``.
        partition_fields: ``hoodie.table.partition.fields`` (empty: non-partitioned).
        ordering_field: ``hoodie.table.precombine.field``.
        event_time_field: ``hoodie.payload.event.time.field``.
        event_time_unit: unit of integer epoch event times (``s``, ``ms``, ``us``, ``ns``).
        min_event_time_header: write the ``MIN_EVENT_TIME`` header extension (design §2.2).
        max_log_file_size: ``hoodie.logfile.max.size``: roll over to a new version once a file exceeds it.
        table_name: ``hoodie.table.name``.
        hive_style_partitioning: partition folders are ``field=value``.
        field_prefixed_keys: a single-field key is stored ``field:value`` (the complex key generator's encoding,
            :mod:`evt_toolkit.write.key_encoding`).
        max_data_block_size: ``hoodie.logfile.data.block.max.size``: records are split into blocks of about this size.
        storage_options: how tasks reach the table's storage (credentials are redacted in the repr).
        table_version: ``hoodie.table.version`` (6, 8 or 9): how log files, markers and delta stats are named
            (:mod:`evt_toolkit.format.table_version`).
        bloom: the record-key bloom filter written in a new base file's footer (``hoodie.bloom.index.filter.type``
            and sizes from the table properties and write options, Hudi's defaults otherwise).
    """

    table_uri: str
    instant: str
    operation: str
    avro_schema_json: str
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    ordering_field: str | None
    event_time_field: str | None
    event_time_unit: EpochUnit
    min_event_time_header: bool
    max_log_file_size: int
    table_name: str
    hive_style_partitioning: bool = True
    field_prefixed_keys: bool = False
    max_data_block_size: int = DEFAULT_MAX_DATA_BLOCK_SIZE
    storage_options: StorageOptions | None = None
    table_version: int = 6
    bloom: BloomFilterConfig = DEFAULT_BLOOM_CONFIG


@dataclass(frozen=True, slots=True)
class FileGroupWrite:
    """What one write task does: append to one file group's slice.

    Attributes:
        partition_path: relative partition path (``""`` when non-partitioned).
        file_id: the file group id (its first 8 characters are the bucket).
        bucket: the bucket id.
        base_instant: the slice the new log belongs to: latest base file instant, the pending compaction instant, or
            for a new file group the write instant itself.
        base_file: base file name of that slice, ``None`` for log-only and pending-compaction slices.
        log_version: version of the first new log file.
        existing_log_files: the slice's log files, newest first (``FileSlice`` order, as the stat's ``logFiles``).
        prev_commit: ``"null"`` for a new file group, else the slice's base instant (``HoodieWriteStat.prevCommit``).
        creates_base_file: the records are inserts written as the base file of a new file group
            (``HoodieCreateHandle``; SIMPLE-index tables), not log files.
    """

    partition_path: str
    file_id: str
    bucket: int
    base_instant: str
    base_file: str | None
    log_version: int
    existing_log_files: tuple[str, ...]
    prev_commit: str
    creates_base_file: bool = False

    @property
    def is_new_file_group(self) -> bool:
        """True when this write creates the file group (its records count as inserts)."""
        return self.prev_commit == "null"


@dataclass(frozen=True, slots=True)
class ExistingSlice:
    """The latest committed slice of an existing file group, as the planner needs it.

    Attributes:
        partition_path: relative partition path.
        file_id: the file group id.
        base_instant: the slice's base instant.
        base_file: base file name, or ``None`` for a log-only slice.
        log_files: log file names of the slice (any order).
    """

    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PendingCompactionReservation:
    """A file group in a pending compaction plan, and the log versions the plan reserves in the new slice.

    Attributes:
        partition_path: relative partition path.
        file_id: the file group id.
        instant: the pending compaction instant ``C``.
        reserved_versions: versions of the link names (``symlinkOperations[].symlink``) named with ``C``.
    """

    partition_path: str
    file_id: str
    instant: str
    reserved_versions: tuple[int, ...] = ()


def next_log_version(existing_versions: Iterable[int], reserved_versions: Iterable[int] = ()) -> int:
    """The log version a new log file takes: one past every existing or reserved version, 1 if there is none.

    ``HoodieLogFormatWriter`` rolls over to ``max(listed versions) + 1`` (``FSUtils.getLatestLogVersion``);
    versions reserved by a pending plan's links count as taken (RFC point 6).

    Example:
        >>> next_log_version([]), next_log_version([1, 3]), next_log_version([1], [1, 2])
        (1, 4, 3)
    """
    return max((*existing_versions, *reserved_versions), default=0) + 1


def _log_versions(names: Iterable[str], file_id: str, base_instant: str) -> list[int]:
    versions: list[int] = []
    for name in names:
        parsed = LogFileName.parse(name)
        if parsed is not None and parsed.file_id == file_id and parsed.base_instant == base_instant:
            versions.append(parsed.version)
    return versions


def _newest_first(names: Iterable[str]) -> tuple[str, ...]:
    """Log names in ``FileSlice`` order (``LogFileComparator`` reversed): newest first."""
    parsed = [(LogFileName.parse(n), n) for n in names]
    ordered = sorted(
        parsed,
        key=lambda p: p[0].sort_key() if p[0] is not None else ("", 0, (0, ""), p[1]),
        reverse=True,
    )
    return tuple(n for _, n in ordered)


#: Plan ``extraMetadata`` flag: version 1 of every new slice is kept for the compaction's carry-over log.
CARRY_OVER_KEY = "evt.compaction.carry_over"


def reserved_versions(
    operation: CompactionOperation, compaction_instant: str, plan_extra: Mapping[str, str] | None
) -> tuple[int, ...]:
    """All versions a pending plan operation keeps from writers in slice ``compaction_instant``.

    These are the link versions, plus version 1 when the plan reserves it for a carry-over log (exact split, or
    event-time tombstones): a write landing between schedule and run must not take it, or the carry-over could no
    longer replay first.

    Example:
        >>> reserved_versions(CompactionOperation.from_record({"fileId": "f-0"}), "C", {CARRY_OVER_KEY: "true"})
        (1,)
    """
    versions = set(reserved_link_versions(operation, compaction_instant))
    if (plan_extra or {}).get(CARRY_OVER_KEY) == "true":
        versions.add(1)
    return tuple(sorted(versions))


def reserved_link_versions(operation: CompactionOperation, compaction_instant: str) -> tuple[int, ...]:
    """Versions of the link names a compaction plan operation reserves in slice ``compaction_instant``.

    Args:
        operation: one ``HoodieCompactionOperation`` (possibly with our ``symlinkOperations`` extension).
        compaction_instant: the plan's instant.

    Example:
        >>> op = CompactionOperation.from_record(
        ...     {"fileId": "f-0", "symlinkOperations": [{"symlink": ".f-0_C.log.2_1-0-1", "target": "x"}]}, "C")
        >>> reserved_link_versions(op, "C")
        (2,)
    """
    names = [link.symlink.rsplit("/", 1)[-1] for link in operation.links]
    return tuple(_log_versions(names, operation.file_id, compaction_instant))


def plan_file_group_writes(
    instant: str,
    targets: Iterable[tuple[str, int]],
    latest_slices: Sequence[ExistingSlice],
    pending_compactions: Sequence[PendingCompactionReservation],
    *,
    new_file_id: Callable[[int], str] = new_bucket_file_id,
) -> list[FileGroupWrite]:
    """One :class:`FileGroupWrite` per distinct ``(partition, bucket)`` of the batch, sorted by that pair.

    Args:
        instant: the write instant (the base instant of any new file group).
        targets: the ``(partition path, bucket)`` pairs present in the batch.
        latest_slices: the latest committed slice of every file group of the table (for pending-compaction groups,
            the slice the compaction opened).
        pending_compactions: file groups in pending compaction plans, with their reserved link versions.
        new_file_id: file id for a new bucket's file group (``BucketIdentifier.newBucketFileIdPrefix`` + ``-0``).

    Returns:
        The writes, sorted by (partition, bucket).

    Raises:
        WriteError: a file group is not named after a bucket, or two file groups share a bucket in one partition
            (the bucket index could not tell which to write).

    Example:
        >>> s = ExistingSlice("", "00000001-a-0", "20250101000000000", "00000001-a-0_0-1-0_20250101000000000.parquet",
        ...                   (".00000001-a-0_20250101000000000.log.1_0-2-0",))
        >>> w = plan_file_group_writes("20250102000000000", [("", 1)], [s], [])[0]
        >>> w.log_version, w.prev_commit, w.base_file is not None
        (2, '20250101000000000', True)
    """
    by_bucket: dict[tuple[str, int], ExistingSlice] = {}
    for s in latest_slices:
        try:
            bucket = bucket_id_from_file_id(s.file_id)
        except EvtError as exc:
            raise WriteError(
                f"file group {s.file_id} in partition {s.partition_path!r} is not a bucket-index file group; "
                "this table cannot be written with the bucket index"
            ) from exc
        key = (s.partition_path, bucket)
        other = by_bucket.get(key)
        if other is not None:
            raise WriteError(
                f"partition {s.partition_path!r} has two file groups for bucket {bucket}: {other.file_id} and "
                f"{s.file_id}"
            )
        by_bucket[key] = s
    pending = {(p.partition_path, p.file_id): p for p in pending_compactions}

    out: list[FileGroupWrite] = []
    for partition, bucket in sorted(set(targets)):
        existing = by_bucket.get((partition, bucket))
        if existing is None:
            out.append(FileGroupWrite(partition, new_file_id(bucket), bucket, instant, None, 1, (), "null"))
            continue
        reservation = pending.get((partition, existing.file_id))
        if reservation is not None:
            # Writes land in the slice the pending compaction opened (named with C), never in the slice being
            # compacted: the compaction's output would otherwise miss them.
            c = reservation.instant
            logs_in_c = tuple(n for n in existing.log_files if _log_versions([n], existing.file_id, c))
            version = next_log_version(_log_versions(logs_in_c, existing.file_id, c), reservation.reserved_versions)
            out.append(
                FileGroupWrite(partition, existing.file_id, bucket, c, None, version, _newest_first(logs_in_c), c)
            )
            continue
        base = existing.base_instant
        version = next_log_version(_log_versions(existing.log_files, existing.file_id, base))
        out.append(
            FileGroupWrite(
                partition,
                existing.file_id,
                bucket,
                base,
                existing.base_file,
                version,
                _newest_first(existing.log_files),
                base,
            )
        )
    return out
