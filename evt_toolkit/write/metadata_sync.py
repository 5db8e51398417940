"""Keep a v8/v9 table's metadata table consistent: mirror each data-table instant into its ``files`` partition, roll
metadata-table instants back, and drop the index partitions the toolkit does not maintain — as Hudi does.

Every toolkit operation that adds or removes data files calls :func:`sync_files_partition` **after its files are
written (or deleted) and before its own instant completes**, exactly where Hudi's ``HoodieTable.writeTableMetadata``
/ ``HoodieBackedTableMetadataWriter.update`` runs. It writes one metadata-table deltacommit *with the data
instant's requested time* (``commitInternal``):

1. a pending or completed metadata-table instant of that time (an earlier attempt) is rolled back first;
2. ``<t>.deltacommit.requested`` (empty), ``<t>.deltacommit.inflight`` (empty workload profile);
3. a ``CREATE`` marker, then ``files/.files-0000-0_<t>.log.1_0-0-0`` holding one ``HFILE_DATA`` block: the
   ``__all_partitions__`` record (partitions written to, partitions deleted) and one record per partition
   (files added with their sizes, files deleted as tombstones) — ``HoodieTableMetadataUtil.convertMetadataTo
   FilesPartitionRecords`` for commits and cleans;
4. ``<t>_<completion>.deltacommit`` (``UPSERT_PREPPED``, one write stat), then the marker folder goes.

Until the data instant completes, readers skip the new block: Java and hudi-rs trust a metadata log block only when
its instant is a completed data instant, or a completed metadata deltacommit whose data instant is *not pending*
(``getValidInstantTimestamps``). A crash anywhere leaves either nothing visible or the whole change.

**Rollback** (:func:`rollback_metadata_instant`): a data-table rollback (or unschedule) of instant ``t`` must roll
back the metadata deltacommit ``t`` too, or once ``t`` is no longer pending the metadata table would list files
that no longer exist. As ``HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata)`` does on v8+: a rollback
instant in the metadata timeline with the data rollback's time, the files named ``t`` deleted, ``t``'s timeline
files removed (the fixture ``mor_v9_nonpartitioned_rollback`` shows each piece). A rollback interrupted by a crash is
finished by calling it again, or by the next sync (:func:`finish_pending_rollbacks`).

**Dropping indexes** (:func:`drop_unmaintained_partitions`): ``column_stats``, ``partition_stats``,
``record_index``, ``bloom_filters`` go the way ``HoodieTable.deleteMetadataIndexIfNecessary`` removes an index a
writer disabled (``column_stats`` also loses its index definition); secondary and expression indexes the way
``BaseHoodieWriteClient.dropIndex`` does (definition removed). Order: index definitions, then
``hoodie.properties`` (``setMetadataPartitionState(…, false)``: sorted, backup first, same checksum), then the
partition folders — a reader never finds a listed partition without its folder. A stock writer with an index
enabled rebuilds it from the ``files`` partition later.

It lives in the write layer because the writer (``write/``), the compaction executor (``compaction/``) and the
table services (``services/``) all call it before their own instant completes, and a layer only looks down.

Tables of version 6 with a metadata table are not maintained (their metadata table has another layout); they stay
refused, and ``t.metadata_table.disable()`` remains the way out.

Example:
    >>> sync_files_partition(t, "20260101000000000", added={"city=sf": {"f-0_0-1-0_20260101000000000.parquet": 431}})
    ... # doctest: +SKIP
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from evt_toolkit.errors import MetadataTableError, ObjectNotFoundError, PendingTableServiceError
from evt_toolkit.format.hfile import read_hfile
from evt_toolkit.format.logfile import BlockType, read_log_blocks_bytes
from evt_toolkit.format.mdt import (
    COLUMN_STATS,
    EXPRESSION_INDEX_PREFIX,
    FILES,
    FILES_FILE_ID,
    METADATA_FOLDER,
    SECONDARY_INDEX_PREFIX,
    FilesRecord,
    encode_files_log_block,
    encode_mdt_deltacommit,
    encode_mdt_inflight,
    encode_rollback_metadata,
    encode_rollback_plan,
    metadata_partitions_after_drop,
    partition_files_record,
    partition_list_record,
    without_index_definitions,
)
from evt_toolkit.format.metadata import read_avro_container
from evt_toolkit.format.names import DEFAULT_WRITE_TOKEN, BaseFileName, InstantFileName, LogFileName
from evt_toolkit.format.properties import HOODIE_PROPERTIES, HOODIE_PROPERTIES_BACKUP, dump_properties
from evt_toolkit.format.records import RollbackPlan
from evt_toolkit.format.table_version import create_marker, marker_folder
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import load_table_config
from evt_toolkit.table.metadata_table import (
    MetadataTable,
    load_metadata_table,
    metadata_table_support,
    unmaintained_partitions,
)
from evt_toolkit.table.table import Table
from evt_toolkit.write.instants import new_instant_time

__all__ = [
    "DropReport",
    "MetadataCommit",
    "MetadataRollback",
    "added_files",
    "drop_unmaintained_partitions",
    "finish_pending_rollbacks",
    "rollback_metadata_instant",
    "sync_files_partition",
]

_INDEX_DEFS_DEFAULT = ".hoodie/.index_defs/index.json"


@dataclass(frozen=True, slots=True)
class MetadataCommit:
    """A metadata-table deltacommit written for one data-table instant.

    Attributes:
        instant: its requested time (= the data instant's).
        completion_time: its completion time in the metadata timeline.
        log_file: the new ``files`` log, relative to the data table's base path.
        records: records in the log block.
        replaced: the rollback instant of an earlier attempt at the same instant, if one was rolled back first.
        dropped: index partitions dropped before writing (see :func:`drop_unmaintained_partitions`).
    """

    instant: str
    completion_time: str
    log_file: str
    records: int
    replaced: str | None
    dropped: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MetadataRollback:
    """A metadata-table rollback: its instant, the instant rolled back and the files deleted (relative paths)."""

    rollback_instant: str
    instant: str
    deleted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DropReport:
    """What dropping the unmaintained metadata partitions does (or did).

    Attributes:
        partitions: the metadata partitions dropped.
        index_definitions: the index definitions removed from ``hoodie.table.index.defs.path``.
        folders: the folders deleted (relative to the base path).
        dry_run: nothing was changed.
    """

    partitions: tuple[str, ...]
    index_definitions: tuple[str, ...]
    folders: tuple[str, ...]
    dry_run: bool


# -- helpers --------------------------------------------------------------------------------------------------------


def _mdt_path(rel: str) -> str:
    return f"{METADATA_FOLDER}/{rel}"


def _all_times(table: Table, mdt: MetadataTable) -> list[str]:
    times: list[str] = []
    for inst in table.timeline.instants:
        times.append(inst.time)
        if inst.completion_time:
            times.append(inst.completion_time)
    for m in mdt.instants:
        times.append(m.time)
        if m.completion_time:
            times.append(m.completion_time)
    return times


def _timezone(table: Table) -> str:
    return table.config.properties.get("hoodie.table.timeline.timezone", "LOCAL") or "LOCAL"


def _new_time(table: Table, mdt: MetadataTable) -> str:
    return new_instant_time(_all_times(table, mdt), _timezone(table), scope=table.storage.uri)


def _writer_schema(table: Table, mdt: MetadataTable) -> str:
    """The ``HoodieMetadataRecord`` schema this table's metadata table is written with: the base HFile's ``schema``
    entry (hudi-rs decodes every log record with it), else the newest ``HFILE_DATA`` block's ``SCHEMA`` header."""
    storage = table.storage
    if mdt.base_file is not None:
        hfile = read_hfile(storage.read_bytes(mdt.base_file.path), storage.full_path(mdt.base_file.path))
        if hfile.schema_json:
            return hfile.schema_json
    for log in reversed(mdt.log_files):
        data = storage.read_bytes(log.path)
        for block in reversed(read_log_blocks_bytes(data, storage.full_path(log.path))):
            if block.block_type is BlockType.HFILE_DATA and block.schema_json:
                return block.schema_json
    raise MetadataTableError(f"no HoodieMetadataRecord schema found in {storage.full_path(_mdt_path(FILES))}")


def _gzip_os(table: Table, mdt: MetadataTable) -> int:
    """The OS byte the table's own writers put in GZ headers (kept, so our blocks look like theirs)."""
    if mdt.base_file is None:
        return 255
    head = table.storage.read_range(mdt.base_file.path, 0, 64)
    return head[42] if len(head) > 42 and head[33:35] == b"\x1f\x8b" else 255


def _files_named(table: Table, mdt: MetadataTable, instant: str) -> dict[str, list[str]]:
    """Metadata-table files (per partition, relative paths) whose name carries ``instant``: what a v8+
    listing-based rollback deletes (``ListingBasedRollbackStrategy.getPathFilter``)."""
    out: dict[str, list[str]] = {}
    for partition in mdt.storage_partitions:
        for entry in table.storage.list_files(_mdt_path(partition)):
            if entry.name.startswith("."):
                log = LogFileName.parse(entry.name)
                named = log is not None and log.base_instant == instant
            else:
                base = BaseFileName.parse(entry.name)
                named = base is not None and base.instant == instant
            if named:
                out.setdefault(partition, []).append(entry.path)
    return out


def _write_properties(table: Table, props: Mapping[str, str]) -> None:
    """``HoodieTableConfig.update``: the backup first, then the file (same checksum: it depends on the names only),
    then the backup goes — a reader meeting a torn file falls back to the backup."""
    storage = table.storage
    saved = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    text = dump_properties(props, header_comment=f"Updated at {saved}").encode("latin-1")
    storage.write_bytes_atomic(HOODIE_PROPERTIES_BACKUP, storage.read_bytes(HOODIE_PROPERTIES), overwrite=True)
    storage.write_bytes_atomic(HOODIE_PROPERTIES, text, overwrite=True)
    storage.delete_file(HOODIE_PROPERTIES_BACKUP)
    table.config = load_table_config(storage)


# -- dropping unmaintained partitions -------------------------------------------------------------------------------


def drop_unmaintained_partitions(table: Table, *, dry_run: bool = False) -> DropReport:
    """Drop every metadata partition but ``files`` the way Hudi drops an index (see the module docstring).

    Idempotent: partitions already gone from ``hoodie.properties`` whose folders remain (an interrupted drop) are
    deleted too.

    Raises:
        PendingTableServiceError: an ``indexing`` instant is pending on the data table (an indexer is building a
            partition).
    """
    table.refresh()
    mdt = load_metadata_table(table)
    if mdt is None:
        return DropReport((), (), (), dry_run)
    drop = unmaintained_partitions(mdt)
    storage = table.storage
    props = table.config.properties
    defs_path = props.get("hoodie.table.index.defs.path") or _INDEX_DEFS_DEFAULT
    defs_names = tuple(
        p
        for p in drop
        if p == COLUMN_STATS or p.startswith(SECONDARY_INDEX_PREFIX) or p.startswith(EXPRESSION_INDEX_PREFIX)
    )
    defs_text: str | None = None
    removed: tuple[str, ...] = ()
    if defs_names and storage.exists(defs_path):
        defs_text, removed = without_index_definitions(
            storage.read_bytes(defs_path).decode("utf-8"), defs_names, storage.full_path(defs_path)
        )
    folders = tuple(_mdt_path(p) for p in drop if p in mdt.storage_partitions)
    report = DropReport(drop, removed, folders, dry_run)
    if dry_run or not drop:
        return report
    pending_indexing = [i.time for i in table.timeline.instants if i.action == "indexing" and not i.is_completed]
    if pending_indexing:
        raise PendingTableServiceError(
            f"cannot drop metadata partitions of {storage.uri} while indexing {', '.join(pending_indexing)} is "
            "pending: an indexer is building a partition (let it finish or roll it back)"
        )
    if defs_text is not None and removed:
        storage.write_bytes_atomic(defs_path, defs_text.encode("utf-8"), overwrite=True)
    listed = set(mdt.partitions) | set(mdt.inflight_partitions)
    if listed & set(drop):
        _write_properties(table, metadata_partitions_after_drop(props, drop))
    for folder in folders:
        storage.delete_dir(folder)
    table.refresh()
    return report


# -- rollback -------------------------------------------------------------------------------------------------------


def _rollback(table: Table, mdt: MetadataTable, instant: str, rollback_instant: str) -> MetadataRollback:
    """Roll back metadata instant ``instant`` under rollback instant ``rollback_instant``; resumable: a rollback
    interrupted at any step is finished by calling this again with the same two instants."""
    storage = table.storage
    target = mdt.instant(instant)
    previous = mdt.instant(rollback_instant)
    if previous is not None and previous.is_completed:
        return MetadataRollback(rollback_instant, instant, ())
    action = "deltacommit" if target is None or target.action in ("deltacommit", "logcompaction") else target.action
    files = _files_named(table, mdt, instant)
    full = {p: [storage.full_path(f) for f in fs] for p, fs in files.items()}
    started = time.monotonic()
    timeline = mdt.timeline_path
    requested = posixpath.join(timeline, InstantFileName(rollback_instant, "rollback", "REQUESTED").name)
    inflight = posixpath.join(timeline, InstantFileName(rollback_instant, "rollback", "INFLIGHT").name)
    if not storage.exists(requested):
        storage.put_if_absent(requested, encode_rollback_plan(instant, action, full))
    if not storage.exists(inflight):
        storage.put_if_absent(inflight, b"")
    target_files = target.files if target is not None else ()
    # The completed file goes first ("revert to inflight"): from then on no reader counts the files named ``instant``.
    for rel in target_files:
        parsed = InstantFileName.parse(rel.rsplit("/", 1)[-1])
        if parsed is not None and parsed.state == "COMPLETED":
            storage.delete_file(rel)
    deleted: list[str] = []
    for paths in files.values():
        for rel in paths:
            try:
                storage.delete_file(rel)
            except ObjectNotFoundError:
                continue
            deleted.append(rel)
    storage.delete_dir(posixpath.join(METADATA_FOLDER, marker_folder(instant)))
    for rel in target_files:
        if storage.exists(rel):
            storage.delete_file(rel)
    elapsed = int((time.monotonic() - started) * 1000)
    completion = new_instant_time(
        [*_all_times(table, mdt), rollback_instant], _timezone(table), scope=table.storage.uri
    )
    storage.put_if_absent(
        posixpath.join(timeline, InstantFileName(rollback_instant, "rollback", "COMPLETED", completion).name),
        encode_rollback_metadata(rollback_instant, instant, action, full, time_taken_ms=elapsed),
    )
    return MetadataRollback(rollback_instant, instant, tuple(sorted(deleted)))


def _pending_rollback_target(table: Table, mdt: MetadataTable, rollback_instant: str) -> str | None:
    """The instant a pending metadata-table rollback's plan names (``instantToRollback.commitTime``)."""
    inst = mdt.instant(rollback_instant)
    if inst is None or inst.is_completed or inst.action != "rollback":
        return None
    requested = next((f for f in inst.files if f.endswith(".rollback.requested")), None)
    if requested is None:
        return None
    data = table.storage.read_bytes(requested)
    if not data:
        return None
    target = RollbackPlan.from_record(read_avro_container(data, table.storage.full_path(requested))).target
    return target or None


def finish_pending_rollbacks(table: Table) -> tuple[MetadataRollback, ...]:
    """Finish every metadata-table rollback an interrupted operation left pending (its plan names what to roll back),
    as Hudi re-executes a pending rollback before anything else."""
    mdt = load_metadata_table(table)
    if mdt is None or mdt.table_version is None:
        return ()
    done: list[MetadataRollback] = []
    for inst in mdt.instants:
        if inst.action == "rollback" and not inst.is_completed:
            target = _pending_rollback_target(table, mdt, inst.time)
            if target is not None:
                done.append(_rollback(table, mdt, target, inst.time))
                refreshed = load_metadata_table(table)
                assert refreshed is not None
                mdt = refreshed
    return tuple(done)


def rollback_metadata_instant(
    table: Table, instant: str, rollback_instant: str | None = None
) -> MetadataRollback | None:
    """Roll back the metadata-table instant ``instant`` (pending or completed), as the data table's rollback of
    ``instant`` must — call it from a data-table rollback or unschedule of ``instant`` **before** that instant's
    own timeline files are removed (Hudi writes the metadata rollback before completing the data rollback).

    Resumable: a data rollback resumed after a crash calls it again with the same ``rollback_instant`` and the
    metadata rollback is finished where it stopped.

    Args:
        table: the data table.
        instant: the data (and metadata) instant rolled back.
        rollback_instant: the data table's rollback instant; the metadata rollback takes the same time (a new time
            when not given).

    Returns:
        What was rolled back, or ``None`` when the table has no metadata table, or it holds neither instant
        ``instant`` nor a pending rollback ``rollback_instant`` of it.
    """
    table.refresh()
    mdt = load_metadata_table(table)
    if mdt is None or mdt.table_version is None:
        return None
    resuming = rollback_instant is not None and _pending_rollback_target(table, mdt, rollback_instant) == instant
    if mdt.instant(instant) is None and not resuming:
        return None
    return _rollback(table, mdt, instant, rollback_instant or _new_time(table, mdt))


# -- sync -----------------------------------------------------------------------------------------------------------


def _records(
    added: Mapping[str, Mapping[str, int]], deleted: Mapping[str, Iterable[str]], partitions_deleted: Iterable[str]
) -> list[FilesRecord]:
    gone = sorted(set(partitions_deleted))
    records: list[FilesRecord] = []
    if added or gone:
        records.append(partition_list_record(added.keys(), gone))
    for partition in sorted(set(added) | set(deleted)):
        records.append(partition_files_record(partition, added.get(partition, {}), deleted.get(partition, ())))
    return records


def added_files(storage: TableStorage, paths: Iterable[str]) -> dict[str, dict[str, int]]:
    """``partition -> file name -> size`` of data files (paths relative to the base path), sizes from storage.

    The ``added`` argument of :func:`sync_files_partition`; a symlink counts with its target's size.
    """
    out: dict[str, dict[str, int]] = {}
    for rel in sorted(set(paths)):
        out.setdefault(posixpath.dirname(rel), {})[posixpath.basename(rel)] = storage.size(rel)
    return out


def sync_files_partition(
    table: Table,
    instant: str,
    *,
    added: Mapping[str, Mapping[str, int]] | None = None,
    deleted: Mapping[str, Iterable[str]] | None = None,
    partitions_deleted: Iterable[str] = (),
    drop_unmaintained: bool = True,
) -> MetadataCommit | None:
    """Mirror one data-table instant's file changes into the metadata table's ``files`` partition.

    Call after the instant's data files are written (or deleted) and before its completed timeline file is written.

    Args:
        table: the data table (version 8 or 9).
        instant: the data instant's requested time; the metadata deltacommit gets the same time.
        added: partition path (``""`` when not partitioned) → file name → size in bytes, every file the instant
            created: log files, base files, a compaction's carry-over logs and links (sizes as storage reports them,
            positive).
        deleted: partition path → names of the files the instant deleted (a clean).
        partitions_deleted: partitions the instant removed entirely (a clean of a whole partition).
        drop_unmaintained: drop the index partitions the toolkit does not maintain first (Hudi does this when a
            writer disables an index); ``False`` raises instead when any is listed.

    Returns:
        The metadata commit, or ``None`` when the table has no metadata table (nothing to keep consistent).

    Raises:
        MetadataTableError: a metadata table the toolkit cannot maintain (:func:`~evt_toolkit.table.metadata_table.
            metadata_table_support` says why), or unmaintained partitions with ``drop_unmaintained=False``; nothing
            was written to the metadata table.
    """
    added = {p: dict(fs) for p, fs in (added or {}).items()}
    deleted = {p: list(fs) for p, fs in (deleted or {}).items()}
    # The caller's timeline predates its own requested/inflight files; the trust rules need the current one.
    table.refresh()
    mdt = load_metadata_table(table)
    if mdt is None:
        return None
    if any(i.action == "rollback" and not i.is_completed for i in mdt.instants):
        finish_pending_rollbacks(table)
        mdt = load_metadata_table(table)
        assert mdt is not None
    support = metadata_table_support(table, mdt)
    if not support.maintainable:
        raise MetadataTableError(
            f"cannot keep the metadata table of {table.storage.uri} consistent: {'; '.join(support.reasons)}"
        )
    dropped: tuple[str, ...] = ()
    if support.to_drop:
        if not drop_unmaintained:
            raise MetadataTableError(
                f"the metadata table of {table.storage.uri} has partitions this toolkit does not maintain "
                f"({', '.join(support.to_drop)}); drop them first (drop_unmaintained_partitions)"
            )
        dropped = drop_unmaintained_partitions(table).partitions
        mdt = load_metadata_table(table)
        if mdt is None:  # pragma: no cover - dropping never removes the files partition
            return None
    storage = table.storage
    replaced: str | None = None
    if mdt.instant(instant) is not None:
        replaced = _rollback(table, mdt, instant, _new_time(table, mdt)).rollback_instant
        mdt = load_metadata_table(table)
        assert mdt is not None
    records = _records(added, deleted, partitions_deleted)
    if not records:
        records = [partition_list_record()]  # an empty commit still records that the instant was applied
    schema = _writer_schema(table, mdt)
    started = time.monotonic()
    timeline = mdt.timeline_path
    log_name = LogFileName(FILES_FILE_ID, instant, "log", 1, DEFAULT_WRITE_TOKEN).name
    log_rel = _mdt_path(f"{FILES}/{log_name}")
    block = encode_files_log_block(
        records, instant, schema, create_time_ms=int(time.time() * 1000), gzip_os=_gzip_os(table, mdt)
    )
    storage.put_if_absent(posixpath.join(timeline, InstantFileName(instant, "deltacommit", "REQUESTED").name), b"")
    storage.put_if_absent(
        posixpath.join(timeline, InstantFileName(instant, "deltacommit", "INFLIGHT").name), encode_mdt_inflight()
    )
    storage.create_empty([posixpath.join(METADATA_FOLDER, create_marker(instant, f"{FILES}/{log_name}"))])
    storage.put_if_absent(log_rel, block)
    completion = new_instant_time([*_all_times(table, mdt), instant], _timezone(table), scope=table.storage.uri)
    commit = encode_mdt_deltacommit(
        instant,
        f"{FILES}/{log_name}",
        len(records),
        len(block),
        schema,
        upsert_time_ms=int((time.monotonic() - started) * 1000),
    )
    storage.put_if_absent(
        posixpath.join(timeline, InstantFileName(instant, "deltacommit", "COMPLETED", completion).name), commit
    )
    storage.delete_dir(posixpath.join(METADATA_FOLDER, marker_folder(instant)))
    return MetadataCommit(instant, completion, log_rel, len(records), replaced, dropped)
