"""The checks every writing operation makes before it touches a table — one place, so no path forgets one.

Writes, compaction schedules and runs, unschedules, cleans, rollbacks: each refuses, before writing anything, a
table it cannot keep consistent:

* a table version the operation is not written for: writes and the table services (compaction, clean, rollback,
  unschedule) handle 6, 8 and 9 (``docs/hudi-1x.md``);
* base files other than Parquet (``hoodie.table.base.file.format``: Hudi 1.1's LANCE, ORC, HFILE) and partition
  columns left out of the files (``hoodie.datasource.write.drop.partition.columns``);
* a table with a **metadata table** (``hoodie.table.metadata.partitions`` lists partitions, or ``.hoodie/metadata``
  exists) that :func:`~evt_toolkit.table.metadata_table.metadata_table_support` says the toolkit cannot keep
  consistent (version 6, an async indexer at work, a declared but missing metadata table, ...): stock readers list
  files through it, so a stock reader would miss new files or look for deleted ones. A maintainable one (v8/v9,
  ``files`` ready) is accepted: every writing operation mirrors its files into ``files``
  (:mod:`evt_toolkit.write.metadata_sync`). The way out is Hudi's own: disable it
  (``HudiTable.metadata_table.disable`` / ``evt metadata disable``, a dry run by default), which clears
  ``hoodie.table.metadata.partitions`` with a valid checksum and removes ``.hoodie/metadata``; stock writers with
  ``hoodie.metadata.enable=true`` rebuild it from storage later.

Example:
    >>> require_writable(t, "schedule a compaction")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable

from evt_toolkit.errors import UnsupportedTableError
from evt_toolkit.table.config import EVENT_TIME_ORDERING
from evt_toolkit.table.metadata_table import metadata_table_support
from evt_toolkit.table.table import Table

__all__ = [
    "METADATA_FOLDER",
    "METADATA_PARTITIONS_KEY",
    "TABLE_SERVICE_VERSIONS",
    "has_metadata_table",
    "require_supported_merge",
    "require_writable",
]

#: Table versions the table services (compaction schedule/run/unschedule, clean, rollback) are written for
#: (docs/hudi-1x.md §4.4 and §5).
TABLE_SERVICE_VERSIONS = (6, 8, 9)
METADATA_FOLDER = ".hoodie/metadata"
METADATA_PARTITIONS_KEY = "hoodie.table.metadata.partitions"
METADATA_INFLIGHT_KEY = "hoodie.table.metadata.partitions.inflight"


def metadata_partitions(table: Table) -> tuple[str, ...]:
    """The metadata-table partitions ``hoodie.properties`` lists as ready or inflight."""
    props = table.config.properties
    out: list[str] = []
    for key in (METADATA_PARTITIONS_KEY, METADATA_INFLIGHT_KEY):
        out.extend(p.strip() for p in (props.get(key) or "").split(",") if p.strip())
    return tuple(dict.fromkeys(out))


def has_metadata_table(table: Table) -> bool:
    """Whether the table has (or declares) a metadata table."""
    return bool(metadata_partitions(table)) or table.storage.exists(METADATA_FOLDER)


#: Table settings that give a merge rules this toolkit does not apply: a custom delete marker (Hudi 1.1 keeps it
#: under ``hoodie.record.merge.property.``; ``DefaultHoodieRecordPayload.DELETE_KEY``) and partial-update rules.
_MERGE_SETTINGS = (
    "hoodie.payload.delete.field",
    "hoodie.record.merge.property.hoodie.payload.delete.field",
    "hoodie.record.merge.property.hoodie.table.partial.update.custom.marker",
    "hoodie.table.partial.update.custom.marker",
)
#: ``hoodie.table.partial.update.mode`` values whose merge is the toolkit's (none, or ``IS_PARTIAL`` blocks).
_PARTIAL_UPDATE_MODES = ("", "NONE", "KEEP_VALUES")
#: Payload classes of older tables whose merge has such rules (delete markers, ignored defaults, partial updates).
_PAYLOADS_WITH_RULES = (
    "AWSDmsAvroPayload",
    "MySqlDebeziumAvroPayload",
    "PostgresDebeziumAvroPayload",
    "OverwriteNonDefaultsWithLatestAvroPayload",
    "PartialUpdateAvroPayload",
)


def require_supported_merge(table: Table, operation: str) -> None:
    """Refuse ``operation``, which merges records, on a table whose merge this toolkit would get wrong.

    * an event-time table ordered by several fields: Hudi 1.1 compares them as a tuple (``OrderingValues.create``,
      an ``ArrayComparable``); merged by the first alone, a tie on it would go to the later record where Hudi keeps
      the greater next field;
    * a custom delete marker or a partial-update mode (``DeleteContext``, ``PartialUpdateMode``), or a payload class
      with such rules: the toolkit knows ``_hoodie_is_deleted`` and ``IS_PARTIAL`` blocks only, and would read a row
      the table marks deleted as live.

    Raises:
        UnsupportedTableError: naming the table and the setting.
    """
    cfg = table.config
    props = cfg.properties
    where = f"cannot {operation} on {table.storage.uri}"
    if len(cfg.ordering_fields) > 1 and cfg.merge_mode == EVENT_TIME_ORDERING:
        raise UnsupportedTableError(
            f"{where}: its records are ordered by several fields ({','.join(cfg.ordering_fields)}), compared as a "
            "tuple by Hudi; this toolkit merges by one ordering field (the read-optimized view, which merges "
            "nothing, reads)"
        )
    rules = [f"{k}={props[k]}" for k in _MERGE_SETTINGS if (props.get(k) or "").strip()]
    mode = (props.get("hoodie.table.partial.update.mode") or "").strip().upper()
    if mode not in _PARTIAL_UPDATE_MODES:
        rules.append(f"hoodie.table.partial.update.mode={mode}")
    payload = (props.get("hoodie.compaction.payload.class") or props.get("hoodie.table.payload.class") or "").strip()
    if cfg.version < 9 and payload.rsplit(".", 1)[-1] in _PAYLOADS_WITH_RULES:
        rules.append(f"hoodie.compaction.payload.class={payload}")
    if rules:
        raise UnsupportedTableError(
            f"{where}: its merge has rules this toolkit does not apply ({'; '.join(rules)}); it would read rows "
            "the table marks deleted or partially updated otherwise than Hudi (the read-optimized view, which "
            "merges nothing, reads)"
        )


def require_writable(
    table: Table, operation: str, *, merge_on_read: bool = True, versions: Iterable[int] = (6,), merges: bool = False
) -> None:
    """Refuse ``operation`` on a table the toolkit cannot write safely; names the table and why.

    Args:
        table: the table.
        operation: what was asked, for the message (``"write"``, ``"schedule a compaction"``, ...).
        merge_on_read: the operation needs a MERGE_ON_READ table.
        versions: the table versions ``operation`` is written for (default 6; writes and table services pass
            6, 8 and 9).
        merges: ``operation`` merges records (a write de-duplicates its batch, a compaction merges slices): also
            :func:`require_supported_merge`.

    Raises:
        UnsupportedTableError: another table version or type, base files other than Parquet, partition columns
            left out of the files (:func:`require_partition_columns_stored`), or a metadata table the toolkit does
            not maintain.
    """
    cfg = table.config
    where = table.storage.uri
    if merge_on_read and cfg.table_type != "MERGE_ON_READ":
        raise UnsupportedTableError(f"cannot {operation} on {where}: it is a {cfg.table_type} table, not MERGE_ON_READ")
    if merges:
        require_supported_merge(table, operation)
    allowed = tuple(versions)
    if cfg.version not in allowed:
        raise UnsupportedTableError(
            f"cannot {operation} on {where}: table version {cfg.version} (timeline layout {cfg.timeline_layout}) is "
            f"read, but this operation is written for table version {', '.join(map(str, allowed))} only "
            "(docs/hudi-1x.md)"
        )
    require_partition_columns_stored(table, operation)
    if cfg.base_file_format != "PARQUET":
        # A compaction would read its base files as Parquet and fail half-way, with the plan left inflight.
        raise UnsupportedTableError(
            f"cannot {operation} on {where}: its base files are {cfg.base_file_format} "
            "(hoodie.table.base.file.format); this toolkit reads and writes Parquet base files only"
        )
    if has_metadata_table(table):
        support = metadata_table_support(table)
        if support.present and support.maintainable:
            return  # every writing operation mirrors its files into the `files` partition (docs/metadata-table.md §6)
        parts = ", ".join(metadata_partitions(table)) or "none listed"
        why = "; ".join(support.reasons) or "no metadata table folder"
        raise UnsupportedTableError(
            f"cannot {operation} on {where}: it has a metadata table ({METADATA_FOLDER}; partitions: {parts}) that "
            f"this toolkit cannot keep consistent ({why}), so stock readers listing files through it would miss or "
            "look for the wrong files. Disable it the way Hudi does — t.metadata_table.disable(dry_run=False) or "
            "`evt metadata disable --yes` — and let a stock writer with hoodie.metadata.enable=true rebuild it later"
        )


def require_meta_fields(table: Table, operation: str) -> None:
    """Refuse ``operation``, a compaction, on a table written with ``hoodie.populate.meta.fields=false``.

    The compaction task merges and writes records by their ``_hoodie_*`` meta fields; checked before a plan is
    written or marked inflight, so the refusal leaves the table as it was.

    Raises:
        UnsupportedTableError: naming the table and the setting.
    """
    if not table.config.populate_meta_fields:
        raise UnsupportedTableError(
            f"cannot {operation} on {table.storage.uri}: it is written without the _hoodie_* meta fields "
            "(hoodie.populate.meta.fields=false), which compaction needs; it reads as Hudi reads it"
        )


def require_partition_columns_stored(table: Table, operation: str) -> None:
    """Refuse ``operation`` on a partitioned table written with ``hoodie.datasource.write.drop.partition.columns``.

    Such a table's data files lack the partition columns; Spark's Hudi relation then takes their values from the
    partition path (``HoodieBaseRelation.shouldExtractPartitionValuesFromPartitionPath``, parsed per key generator by
    ``HoodieSparkUtils.parsePartitionColumnValues``), which this toolkit does not do: its rows would carry nulls.

    Raises:
        UnsupportedTableError: naming the table, the setting and the partition columns.
    """
    cfg = table.config
    if cfg.drop_partition_columns and cfg.partition_fields:
        raise UnsupportedTableError(
            f"cannot {operation} on {table.storage.uri}: it is written with "
            "hoodie.datasource.write.drop.partition.columns=true, so its partition columns "
            f"({', '.join(cfg.partition_fields)}) are not stored in its files and come from the partition path, "
            "which this toolkit does not parse"
        )
