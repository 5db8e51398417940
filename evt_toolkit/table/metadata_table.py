"""The metadata table of a data table, as readers see it: its layout, timeline, and what its ``files`` partition lists.

Hudi's metadata table (MDT) is a Merge-On-Read table at ``.hoodie/metadata`` of the same table version as the data
table, keyed by ``key``, with HFile base files (``HoodieBackedTableMetadataWriter.initializeMetaClient``). Stock
readers list a v8+ data table's files through its ``files`` partition whenever ``files`` is in
``hoodie.table.metadata.partitions`` (Java ``HoodieBackedTableMetadata``, hudi-rs ``metadata/table``). This module
reads that listing the way they do, so tests and the writer can compare it with storage:

* **Slices** (:func:`load_metadata_table`): the ``files`` partition has one file group, ``files-0000-0``. Files whose
  name instant is not a completed MDT instant are ignored; on layout 2 a log joins the slice with the greatest base
  instant ≤ its deltacommit's completion time, as in the data table. The latest slice is read: its base HFile,
  then its logs in ``HoodieLogFile.LogFileComparator`` order (name instant, version, write token).
* **Trusted blocks** (:func:`valid_instants`): a log block counts only when its ``INSTANT_TIME`` is in
  ``HoodieTableMetadataUtil.getValidInstantTimestamps`` — every completed data-table instant; every completed MDT
  deltacommit whose data instant is not pending (async indexing); MDT initialisation commits (``00000000000000…``);
  the commits rolled back by completed data-table rollbacks; MDT rollbacks. The MDT is written *before* the data
  instant completes, so this set is what keeps a failed write's listing out. hudi-rs 0.5 (``metadata/table``
  ``valid_instant_timestamps``) builds the same set.
* **Records** (:func:`read_files_partition`): base records, then log records merged key by key with
  ``HoodieMetadataPayload.combineFileSystemMetadata`` (:func:`evt_toolkit.format.mdt.merge_records`); a reader lists
  the entries not deleted.

:func:`metadata_table_support` says whether the toolkit can keep a table's MDT consistent (and what it would drop
first); :mod:`evt_toolkit.write.metadata_sync` does it.

Example:
    >>> listing = read_files_partition(t)  # doctest: +SKIP
    >>> sorted(listing.files["city=sf"])  # doctest: +SKIP
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from evt_toolkit.errors import MetadataTableError, StorageError, TableConfigError
from evt_toolkit.format.log_content import decode_delete_block
from evt_toolkit.format.logfile import BlockType, HeaderKey, read_block_content, scan_log_blocks
from evt_toolkit.format.mdt import (
    ALL_PARTITIONS_KEY,
    FILES,
    FILES_FILE_ID,
    METADATA_FOLDER,
    METADATA_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    FilesRecord,
    data_partition,
    decode_files_hfile,
    merge_records,
    split_partitions,
)
from evt_toolkit.format.metadata import read_avro_container
from evt_toolkit.format.names import COMPLETED, BaseFileName, InstantFileName, LogFileName
from evt_toolkit.format.properties import parse_properties
from evt_toolkit.table.table import Table

__all__ = [
    "MDT_PROPERTIES",
    "MdtFile",
    "MdtInstant",
    "MetadataTable",
    "MetadataTableListing",
    "MetadataTableSupport",
    "compaction_holding",
    "load_metadata_table",
    "maintained_partitions",
    "metadata_table_support",
    "read_files_partition",
    "unmaintained_partitions",
    "valid_instants",
]

MDT_PROPERTIES = f"{METADATA_FOLDER}/.hoodie/hoodie.properties"
#: ``HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP`` prefix: MDT partition initialisations (``…000``, ``…001``, …).
SOLO_COMMIT_PREFIX = "00000000000000"
#: The partitions this toolkit keeps consistent; every other index partition is dropped before a write.
_MAINTAINED = frozenset({FILES})
_COMPARABLE = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}
_ROLLBACK_ACTIONS = ("rollback", "restore")


@dataclass(frozen=True, slots=True)
class MdtInstant:
    """One instant of the metadata table's timeline, at its highest state.

    Attributes:
        time: requested time.
        action: the action in the file name of the highest state (a completed compaction is ``commit``).
        state: ``REQUESTED``, ``INFLIGHT`` or ``COMPLETED``.
        completion_time: layout-2 completion time, ``None`` when pending.
        files: every timeline file of the instant (relative to the data table's base path), lowest state first.
    """

    time: str
    action: str
    state: str
    completion_time: str | None
    files: tuple[str, ...]

    @property
    def is_completed(self) -> bool:
        """The instant completed."""
        return self.state == COMPLETED


def compaction_holding(mdt: MetadataTable, completion_time: str) -> str | None:
    """The latest completed metadata-table compaction if its base file already holds a data instant that completed
    at ``completion_time``, else ``None`` — pure.

    Such an instant cannot be rolled back: rolling back its metadata deltacommit removes its log, but the compacted
    base file goes on listing the instant's files. Hudi refuses it
    (``HoodieBackedTableMetadataWriter.validateRollback``: the commit's completion time is at or before the latest
    compaction's requested time; a restore is the way).
    """
    compactions = [i.time for i in mdt.instants if i.action == "commit" and i.is_completed]
    if not compactions:
        return None
    latest = max(compactions)
    return latest if len(latest) == len(completion_time) and completion_time <= latest else None


@dataclass(frozen=True, slots=True)
class MdtFile:
    """A file of the ``files`` partition: path relative to the data table's base path, name, name instant."""

    path: str
    name: str
    instant: str
    version: int
    write_token: str
    size: int


@dataclass(frozen=True, slots=True)
class MetadataTable:
    """What is on storage of a data table's metadata table.

    Attributes:
        table_version: the MDT's ``hoodie.table.version`` (``None`` when ``.hoodie/metadata`` has no properties).
        properties: the MDT's ``hoodie.properties``.
        timeline_path: the MDT's timeline folder, relative to the data table's base path.
        instants: the MDT timeline, by requested time.
        partitions: ``hoodie.table.metadata.partitions`` of the data table.
        inflight_partitions: ``hoodie.table.metadata.partitions.inflight`` of the data table.
        storage_partitions: folders under ``.hoodie/metadata`` (``.hoodie`` excluded).
        base_file: the base HFile of the latest ``files`` slice, if any.
        log_files: the logs of the latest ``files`` slice in replay order.
        other_files: ``files`` partition files outside that slice or of another file group (names).
    """

    table_version: int | None
    properties: Mapping[str, str]
    timeline_path: str
    instants: tuple[MdtInstant, ...]
    partitions: tuple[str, ...]
    inflight_partitions: tuple[str, ...]
    storage_partitions: tuple[str, ...]
    base_file: MdtFile | None
    log_files: tuple[MdtFile, ...]
    other_files: tuple[str, ...] = field(default=())

    def instant(self, time: str) -> MdtInstant | None:
        """The MDT instant requested at ``time`` (any action), if any."""
        return next((i for i in self.instants if i.time == time), None)

    def completion_time(self, time: str) -> str | None:
        """Completion time of the completed MDT instant requested at ``time``."""
        inst = self.instant(time)
        return inst.completion_time if inst is not None and inst.is_completed else None


def _mdt_timeline(table: Table, timeline_path: str) -> tuple[MdtInstant, ...]:
    try:
        files, _ = table.storage.list_dir(timeline_path)
    except StorageError:
        return ()
    groups: dict[tuple[str, str], list[tuple[InstantFileName, str]]] = {}
    for entry in files:
        parsed = InstantFileName.parse(entry.name)
        if parsed is None:
            continue
        key = (parsed.requested_time, _COMPARABLE.get(parsed.action, parsed.action))
        groups.setdefault(key, []).append((parsed, entry.path))
    rank = {"REQUESTED": 0, "INFLIGHT": 1, "COMPLETED": 2}
    out: list[MdtInstant] = []
    for (time, _), found in groups.items():
        found.sort(key=lambda fp: rank[fp[0].state])
        top = found[-1][0]
        out.append(MdtInstant(time, top.action, top.state, top.completion_time, tuple(p for _, p in found)))
    return tuple(sorted(out, key=lambda i: (i.time, i.action)))


def _mdt_partitions_on_storage(table: Table) -> tuple[str, ...]:
    try:
        _, dirs = table.storage.list_dir(METADATA_FOLDER)
    except StorageError:
        return ()
    names = [d.rsplit("/", 1)[-1] for d in dirs]
    return tuple(sorted(n for n in names if not n.startswith(".")))


def load_metadata_table(table: Table) -> MetadataTable | None:
    """Read the metadata table's properties, timeline and latest ``files`` slice; ``None`` when the table neither
    lists metadata partitions nor has ``.hoodie/metadata``.

    Raises:
        MetadataTableError: ``.hoodie/metadata`` exists but its ``hoodie.properties`` cannot be read.
    """
    props = table.config.properties
    partitions = tuple(split_partitions(props.get(METADATA_PARTITIONS_KEY)))
    inflight = tuple(split_partitions(props.get(METADATA_INFLIGHT_KEY)))
    storage = table.storage
    if not storage.exists(METADATA_FOLDER):
        if not partitions and not inflight:
            return None
        return MetadataTable(None, {}, "", (), partitions, inflight, (), None, ())
    if not storage.exists(MDT_PROPERTIES):
        return MetadataTable(None, {}, "", (), partitions, inflight, _mdt_partitions_on_storage(table), None, ())
    try:
        mdt_props = parse_properties(storage.read_bytes(MDT_PROPERTIES).decode("latin-1"))
    except (StorageError, ValueError, TableConfigError) as exc:
        raise MetadataTableError(f"cannot read {storage.full_path(MDT_PROPERTIES)}: {exc}") from exc
    version_text = mdt_props.get("hoodie.table.version", "")
    version = int(version_text) if version_text.isdigit() else None
    layout = int(mdt_props.get("hoodie.timeline.layout.version", "1") or 1)
    meta = f"{METADATA_FOLDER}/.hoodie"
    timeline_path = posixpath.join(meta, mdt_props.get("hoodie.timeline.path", "timeline")) if layout >= 2 else meta
    instants = _mdt_timeline(table, timeline_path)
    base, logs, others = _latest_files_slice(table, instants, layout)
    return MetadataTable(
        version,
        mdt_props,
        timeline_path,
        instants,
        partitions,
        inflight,
        _mdt_partitions_on_storage(table),
        base,
        logs,
        others,
    )


def _latest_files_slice(
    table: Table, instants: tuple[MdtInstant, ...], layout: int
) -> tuple[MdtFile | None, tuple[MdtFile, ...], tuple[str, ...]]:
    try:
        entries = table.storage.list_files(f"{METADATA_FOLDER}/{FILES}")
    except StorageError:
        return None, (), ()
    completion = {i.time: (i.completion_time or i.time) for i in instants if i.is_completed}
    bases: list[MdtFile] = []
    logs: list[MdtFile] = []
    others: list[str] = []
    for e in entries:
        if e.name.startswith("."):
            log = LogFileName.parse(e.name)
            if log is None or log.extension != "log":
                continue  # .hoodie_partition_metadata and side files
            if log.file_id != FILES_FILE_ID:
                others.append(e.name)
                continue
            if log.base_instant in completion:
                logs.append(MdtFile(e.path, e.name, log.base_instant, log.version, log.write_token or "", e.size))
            continue
        parsed = BaseFileName.parse(e.name)
        if parsed is None or parsed.extension != ".hfile":
            continue
        if parsed.file_id != FILES_FILE_ID:
            others.append(e.name)
        elif parsed.instant in completion:
            bases.append(MdtFile(e.path, e.name, parsed.instant, 0, parsed.write_token, e.size))
    latest = max(bases, key=lambda b: (b.instant, b.name), default=None)
    in_slice: list[MdtFile] = []
    for lf in logs:
        # Layout 2 slices by completion time; layout 1 names logs with the slice's base instant.
        key = completion[lf.instant] if layout >= 2 else lf.instant
        if latest is None or key >= latest.instant:
            in_slice.append(lf)
        else:
            others.append(lf.name)
    if latest is not None:
        others.extend(b.name for b in bases if b is not latest)
    in_slice.sort(key=lambda f: (f.instant, f.version, f.write_token))
    return latest, tuple(in_slice), tuple(sorted(others))


def valid_instants(table: Table, mdt: MetadataTable) -> frozenset[str]:
    """``HoodieTableMetadataUtil.getValidInstantTimestamps``: the instants whose MDT log blocks a reader trusts."""
    timeline = table.timeline
    data_pending = {i.time for i in timeline.instants if not i.is_completed}
    valid = {i.time for i in timeline.instants if i.is_completed}
    valid.update(
        i.time for i in mdt.instants if i.is_completed and i.action == "deltacommit" and i.time not in data_pending
    )
    valid.update(i.time for i in mdt.instants if i.is_completed and i.time.startswith(SOLO_COMMIT_PREFIX))
    earliest = min(valid) if valid else SOLO_COMMIT_PREFIX
    for inst in timeline.instants:
        if inst.action in _ROLLBACK_ACTIONS and inst.is_completed and inst.time > earliest:
            valid.update(_rolled_back(table, inst.file_name))
    valid.update(i.time for i in mdt.instants if i.is_completed and i.action in _ROLLBACK_ACTIONS)
    return frozenset(valid)


def _rolled_back(table: Table, rel: str) -> list[str]:
    try:
        data = table.storage.read_bytes(rel)
        record = read_avro_container(data, table.storage.full_path(rel)) if data else {}
    except Exception:  # an unreadable rollback only narrows the set, as Java falls back to the plan
        return []
    commits = record.get("commitsRollback") or []
    restore = record.get("hoodieRestoreMetadata") or {}
    for rollbacks in restore.values():
        for rb in rollbacks or []:
            commits.extend(rb.get("commitsRollback") or [])
    return [str(c) for c in commits]


@dataclass(frozen=True, slots=True)
class MetadataTableListing:
    """What the ``files`` partition lists, merged as readers merge it.

    Attributes:
        partitions: data partition paths the ``__all_partitions__`` record lists (``""`` for non-partitioned).
        files: data partition path → file name → size, for every partition record (not deleted).
        records: the merged records by key (tombstones included).
        blocks_read: ``INSTANT_TIME`` of every log block merged, in order.
        blocks_skipped: ``INSTANT_TIME`` of log blocks skipped as untrusted.
    """

    partitions: frozenset[str]
    files: Mapping[str, Mapping[str, int]]
    records: Mapping[str, FilesRecord]
    blocks_read: tuple[str, ...]
    blocks_skipped: tuple[str, ...]


def read_files_partition(table: Table, mdt: MetadataTable | None = None) -> MetadataTableListing:
    """The data table's partitions and files as the metadata table lists them (Java's ``HoodieBackedTableMetadata``:
    base file, then trusted log blocks, merged per key).

    Raises:
        MetadataTableError: no metadata table or no ``files`` slice, an undecodable HFile, a delete block with
            records, or a log-compacted block (not read by this toolkit).
    """
    mdt = mdt if mdt is not None else load_metadata_table(table)
    if mdt is None or mdt.table_version is None:
        raise MetadataTableError(f"{table.storage.uri} has no metadata table to read")
    if mdt.base_file is None and not mdt.log_files:
        raise MetadataTableError(f"the metadata table of {table.storage.uri} has no committed files partition")
    storage = table.storage
    merged: dict[str, FilesRecord] = {}
    schema: str | None = None
    if mdt.base_file is not None:
        records, schema = decode_files_hfile(
            storage.read_bytes(mdt.base_file.path), storage.full_path(mdt.base_file.path)
        )
        merged.update((r.key, r) for r in records)
    valid = valid_instants(table, mdt)
    read: list[str] = []
    skipped: list[str] = []
    for log in mdt.log_files:
        data = storage.read_bytes(log.path)
        full = storage.full_path(log.path)
        f = io.BytesIO(data)
        for block in scan_log_blocks(f, len(data), full):
            if block.is_corrupt or block.block_type is BlockType.COMMAND:
                continue
            instant = block.instant_time or ""
            if instant not in valid:
                skipped.append(instant)
                continue
            if HeaderKey.COMPACTED_BLOCK_TIMES in block.header:
                raise MetadataTableError(f"{full} holds a log-compacted block, which this toolkit does not read")
            if block.block_type is BlockType.DELETE:
                if decode_delete_block(block, read_block_content(f, block)).num_rows:
                    raise MetadataTableError(f"{full} holds a delete block with records in the files partition")
                continue
            if block.block_type is not BlockType.HFILE_DATA:
                raise MetadataTableError(f"{full} holds a {block.block_type.name} block in the files partition")
            records, _ = decode_files_hfile(read_block_content(f, block), full, schema or block.schema_json)
            read.append(instant)
            for rec in records:
                prev = merged.get(rec.key)
                merged[rec.key] = rec if prev is None else merge_records(prev, rec)
    all_parts = merged.get(ALL_PARTITIONS_KEY)
    partitions = frozenset(data_partition(p) for p in (all_parts.active() if all_parts else {}))
    files = {data_partition(k): rec.active() for k, rec in merged.items() if k != ALL_PARTITIONS_KEY}
    return MetadataTableListing(partitions, files, merged, tuple(read), tuple(skipped))


# -- can the toolkit keep it consistent? ----------------------------------------------------------------------------


def maintained_partitions() -> frozenset[str]:
    """The metadata partitions this toolkit updates on every operation (``files``)."""
    return _MAINTAINED


def unmaintained_partitions(mdt: MetadataTable) -> tuple[str, ...]:
    """Listed (ready or inflight) or stored metadata partitions other than ``files``: they must be dropped before
    the toolkit writes, or stock readers would use stale indexes (``column_stats`` data skipping, ``record_index``
    lookups, secondary indexes)."""
    names = set(mdt.partitions) | set(mdt.inflight_partitions) | set(mdt.storage_partitions)
    return tuple(sorted(names - _MAINTAINED))


@dataclass(frozen=True, slots=True)
class MetadataTableSupport:
    """Whether the toolkit can keep a table's metadata table consistent.

    Attributes:
        present: the table has (or declares) a metadata table.
        maintainable: it can be kept consistent (after dropping ``to_drop``).
        reasons: why not, one sentence each, naming the file or instant.
        to_drop: index partitions to drop first (see :func:`unmaintained_partitions`).
    """

    present: bool
    maintainable: bool
    reasons: tuple[str, ...]
    to_drop: tuple[str, ...]


def metadata_table_support(table: Table, mdt: MetadataTable | None = None) -> MetadataTableSupport:
    """Decide whether :mod:`evt_toolkit.write.metadata_sync` can keep this table's MDT consistent.

    Maintainable means: table version 8 or 9 with ``files`` ready; ``.hoodie/metadata`` of the same version on
    timeline layout 2 with HFile base files; no partition being built by an async indexer
    (``…partitions.inflight``); no pending MDT compaction, log compaction or clean (a pending MDT rollback is
    finished by the sync); no pending MDT deltacommit
    whose data instant is not itself a pending (failed or running) write; a ``files`` slice with a base HFile and
    only the ``files-0000-0`` file group.
    """
    mdt = mdt if mdt is not None else load_metadata_table(table)
    if mdt is None:
        return MetadataTableSupport(False, False, (), ())
    where = table.storage.full_path(METADATA_FOLDER)
    reasons: list[str] = []
    version = table.config.version
    if version not in (8, 9):
        reasons.append(
            f"table version {version}: the toolkit maintains metadata tables of versions 8 and 9 only (the v6 metadata "
            "table names logs by base instant and compacts under '<instant>001' instants; not written here)"
        )
    if FILES not in mdt.partitions:
        reasons.append(
            f"hoodie.table.metadata.partitions does not list 'files' ({', '.join(mdt.partitions) or 'none'})"
        )
    if mdt.inflight_partitions:
        reasons.append(
            f"metadata partitions {', '.join(mdt.inflight_partitions)} are being built by an async indexer "
            "(hoodie.table.metadata.partitions.inflight)"
        )
    if mdt.table_version is None:
        reasons.append(f"{where} has no hoodie.properties (the table declares a metadata table it does not have)")
    else:
        if mdt.table_version != version:
            reasons.append(f"{where} is table version {mdt.table_version}, the data table {version}")
        if mdt.properties.get("hoodie.timeline.layout.version", "1") != "2":
            reasons.append(f"{where} is not on timeline layout 2")
        if (mdt.properties.get("hoodie.table.base.file.format") or "HFILE").upper() != "HFILE":
            reasons.append(f"{where} does not store HFile base files")
        data_pending = {i.time for i in table.timeline.instants if not i.is_completed}
        for inst in mdt.instants:
            # A pending rollback is finished by the next sync or rollback (write/metadata_sync.py).
            if inst.is_completed or inst.action == "rollback":
                continue
            if inst.action != "deltacommit":
                reasons.append(f"metadata-table {inst.action} {inst.time} is pending (let its writer finish it)")
            elif inst.time not in data_pending:
                reasons.append(
                    f"metadata-table deltacommit {inst.time} is pending and no data-table instant {inst.time} is: "
                    "a stock writer left it (roll it back with Hudi first)"
                )
        if mdt.base_file is None:
            reasons.append(f"the files partition of {where} has no committed base HFile")
        strays = [n for n in mdt.other_files if FILES_FILE_ID not in n]
        if strays:
            reasons.append(f"the files partition of {where} holds other file groups: {', '.join(strays[:3])}")
    return MetadataTableSupport(True, not reasons, tuple(reasons), unmaintained_partitions(mdt))
