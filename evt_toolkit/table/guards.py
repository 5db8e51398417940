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
  ``hoodie.metadata.enable=true`` rebuild it from storage later;
* a table feature that changes what a writer, compactor, cleaner or rollback must do and that the toolkit does not
  do (:func:`require_table_features`): change data capture, a bootstrapped table, log or base file formats other
  than Hudi's log and Parquet, another table format, schema-on-read evolution, or a restore in progress.

Example:
    >>> require_writable(t, "schedule a compaction")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evt_toolkit.errors import EvtError, UnsupportedTableError
from evt_toolkit.table.config import EVENT_TIME_ORDERING
from evt_toolkit.table.metadata_table import metadata_table_support
from evt_toolkit.table.table import Table
from evt_toolkit.table.timeline import RESTORE

__all__ = [
    "METADATA_FOLDER",
    "METADATA_PARTITIONS_KEY",
    "TABLE_SERVICE_VERSIONS",
    "has_metadata_table",
    "require_not_bootstrapped",
    "require_supported_merge",
    "require_table_features",
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
    return bool(metadata_partitions(table)) or table.storage.is_dir(METADATA_FOLDER)


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


#: The payload classes whose merge is event-time or commit-time ordering (``inferRecordMergeModeFromPayloadClass``).
_BUILT_IN_PAYLOADS = frozenset(
    {
        "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        "org.apache.hudi.common.model.EventTimeAvroPayload",
        "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    }
)
#: Merge strategy ids of event-time and commit-time ordering, and the payload-based one (the payload class decides).
_BUILT_IN_STRATEGY_IDS = frozenset(
    {
        "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
        "ce9acb64-bde0-424c-9b91-f6ebba25356d",
        "00000000-0000-0000-0000-000000000000",
    }
)


def require_supported_merge(table: Table, operation: str) -> None:
    """Refuse ``operation``, which merges records, on a table whose merge this toolkit would get wrong.

    * an event-time table ordered by several fields: Hudi 1.1 compares them as a tuple (``OrderingValues.create``,
      an ``ArrayComparable``); merged by the first alone, a tie on it would go to the later record where Hudi keeps
      the greater next field;
    * a custom delete marker or a partial-update mode (``DeleteContext``, ``PartialUpdateMode``), or a payload class
      with such rules: the toolkit knows ``_hoodie_is_deleted`` and ``IS_PARTIAL`` blocks only, and would read a row
      the table marks deleted as live;
    * on versions 6 and 8, a payload class or (version 8) a merge strategy id of the table's own, which Hudi infers
      as the CUSTOM merge mode: merged by the ordering field instead, a row would be read otherwise than Hudi reads
      it.

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
    elif cfg.version < 9 and payload and payload not in _BUILT_IN_PAYLOADS:
        # HoodieTableConfig.inferRecordMergeModeFromPayloadClass: any other class is the table's own merge (CUSTOM).
        rules.append(f"hoodie.compaction.payload.class={payload} (a payload class of the table's own)")
    strategy = (
        props.get("hoodie.record.merge.strategy.id") or props.get("hoodie.compaction.record.merger.strategy") or ""
    ).strip()
    if cfg.version == 8 and strategy and strategy not in _BUILT_IN_STRATEGY_IDS:
        # inferRecordMergeModeFromMergeStrategyId: on version 8 the strategy id decides; any other id is CUSTOM.
        rules.append(f"hoodie.record.merge.strategy.id={strategy} (a merger of the table's own)")
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
            left out of the files (:func:`require_partition_columns_stored`), a table feature the toolkit does not
            keep (:func:`require_table_features`), or a metadata table the toolkit does not maintain.
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
    require_table_features(table, operation)
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


def _flag_set(props: Mapping[str, str], key: str) -> bool:
    return (props.get(key) or "").strip().lower() == "true"


def table_feature_refusals(table: Table) -> list[str]:
    """The stock Hudi table features of ``table`` that no writing operation of this toolkit keeps, in words.

    Each changes what a writer, compactor, cleaner or rollback must do beyond what the toolkit does:

    * ``hoodie.table.cdc.enabled=true``: stock writers and compactions also write ``.cdc`` change logs
      (``HoodieCDCLogger``) and cleans and rollbacks delete them; a write or compaction of this toolkit would leave
      CDC queries missing its changes;
    * ``hoodie.bootstrap.base.path``: a bootstrapped table's base files are skeletons whose data lives in the source
      files the bootstrap index maps them to; a compaction would write the skeleton alone;
    * ``hoodie.table.log.file.format`` other than ``HOODIE_LOG``, ``hoodie.table.multiple.base.file.formats.enable``,
      ``hoodie.table.format`` other than ``native``: files or commits this toolkit does not write;
    * schema-on-read evolution (an internal schema, ``latest_schema``, which Hudi's writers with
      ``hoodie.schema.on.read.enable=true`` put into every commit, in the newest commit carrying a schema): columns
      are matched by id, so a renamed or dropped column would be read and written by name wrongly;
    * a restore in progress (``.restore`` requested or inflight): Hudi finishes it before anything else writes.
    """
    props = table.config.properties
    out: list[str] = []
    if _flag_set(props, "hoodie.table.cdc.enabled"):
        out.append(
            "change data capture is on (hoodie.table.cdc.enabled=true): stock writers and compactions also write "
            ".cdc change logs, which this toolkit does not, so CDC queries would miss its changes"
        )
    bootstrap = _bootstrap_refusal(table)
    if bootstrap:
        out.append(bootstrap)
    log_format = (props.get("hoodie.table.log.file.format") or props.get("hoodie.table.rt.file.format") or "").strip()
    if log_format and log_format.upper() != "HOODIE_LOG":
        out.append(f"its log files are {log_format} (hoodie.table.log.file.format); this toolkit writes HOODIE_LOG")
    if _flag_set(props, "hoodie.table.multiple.base.file.formats.enable"):
        out.append(
            "it may hold base files of several formats (hoodie.table.multiple.base.file.formats.enable=true); this "
            "toolkit reads and writes Parquet base files only"
        )
    table_format = (props.get("hoodie.table.format") or "").strip()
    if table_format and table_format.lower() != "native":
        out.append(f"it is kept in the {table_format} table format (hoodie.table.format); this toolkit writes native")
    schema_on_read = _schema_on_read_evidence(table)
    if schema_on_read:
        out.append(
            f"it evolves its schema on read ({schema_on_read}): columns are matched by id, so this toolkit, which "
            "matches them by name, would read and write renamed or dropped columns wrongly"
        )
    restores = [i.time for i in table.timeline.instants if i.action == RESTORE and not i.is_completed]
    if restores:
        out.append(
            f"restore {', '.join(restores)} is in progress; finish it with a stock Hudi client first, as Hudi does "
            "before any other write"
        )
    return out


def _bootstrap_refusal(table: Table) -> str:
    base = (table.config.properties.get("hoodie.bootstrap.base.path") or "").strip()
    if not base:
        return ""
    return (
        f"it is a bootstrapped table (hoodie.bootstrap.base.path={base}): its base files may be skeletons whose data "
        "lives in the bootstrap source files, which this toolkit does not read or merge"
    )


def require_not_bootstrapped(table: Table, operation: str) -> None:
    """Refuse ``operation`` (a query) on a bootstrapped table: Spark reads a skeleton base file's columns from the
    source file the bootstrap index maps it to (``HoodieBootstrapRelation``); read alone, its rows would carry nulls.

    Raises:
        UnsupportedTableError: naming the table and the setting.
    """
    why = _bootstrap_refusal(table)
    if why:
        raise UnsupportedTableError(f"cannot {operation} on {table.storage.uri}: {why}")


def _schema_on_read_evidence(table: Table) -> str:
    """Why ``table`` evolves its schema on read (``""`` when it does not)."""
    timeline = table.timeline
    for inst in reversed(timeline.completed_commits()):
        try:
            extra = timeline.commit_metadata(inst).extra
        except EvtError:
            continue
        if extra.get("latest_schema"):
            return f"commit {inst.time} carries an internal schema, latest_schema"
        if extra.get("schema"):
            break
    return ""


def require_table_features(table: Table, operation: str) -> None:
    """Refuse ``operation``, which writes, on a table with a feature no writing operation of this toolkit keeps
    (:func:`table_feature_refusals`); checked before anything is written.

    Raises:
        UnsupportedTableError: naming the table and every such setting.
    """
    reasons = table_feature_refusals(table)
    if reasons:
        raise UnsupportedTableError(f"cannot {operation} on {table.storage.uri}: {'; '.join(reasons)}")
