"""The typed view of ``hoodie.properties`` (``HoodieTableConfig``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from evt_toolkit.errors import ObjectNotFoundError, StorageError, TableConfigError, UnsupportedTableError
from evt_toolkit.format.eventtime import EpochUnit
from evt_toolkit.format.properties import (
    HOODIE_PROPERTIES,
    HOODIE_PROPERTIES_BACKUP,
    parse_properties,
    validate_checksum,
)

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage

__all__ = [
    "COMMIT_TIME_ORDERING",
    "EVENT_TIME_ORDERING",
    "SUPPORTED_TABLE_VERSIONS",
    "TableConfig",
    "load_table_config",
]

COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
SUPPORTED_TABLE_VERSIONS = frozenset({6, 8, 9})

#: Our extension key: the writer records ``MIN_EVENT_TIME`` in log block headers.
EVENT_TIME_UNIT_KEY = "hoodie.evt.event.time.unit"
MIN_EVENT_TIME_HEADER_KEY = "hoodie.evt.min.event.time.header"

# HoodieRecordMerger strategy ids (HoodieRecordMerger.*_MERGE_STRATEGY_UUID).
_EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
_COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"

_COMMIT_TIME_PAYLOADS = frozenset({"OverwriteWithLatestAvroPayload"})
_EVENT_TIME_PAYLOADS = frozenset({"DefaultHoodieRecordPayload", "EventTimeAvroPayload"})

_REQUIRED_KEYS = ("hoodie.table.name", "hoodie.table.type", "hoodie.table.version", "hoodie.timeline.layout.version")


def _split_fields(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(f.strip() for f in value.split(",") if f.strip())


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    if value is None or not value.strip():
        return default
    return value.strip().lower() == "true"


_EPOCH_UNITS: dict[str, EpochUnit] = {"s": "s", "ms": "ms", "us": "us", "ns": "ns"}


def _event_time_unit(props: Mapping[str, str], source: str) -> EpochUnit:
    unit = (props.get(EVENT_TIME_UNIT_KEY) or "ms").strip()
    known = _EPOCH_UNITS.get(unit)
    if known is None:
        raise TableConfigError(f"{source}: {EVENT_TIME_UNIT_KEY}={unit!r} is not one of s, ms, us, ns")
    return known


def _int(props: Mapping[str, str], key: str, source: str) -> int:
    raw = props[key]
    try:
        return int(raw.strip())
    except ValueError:
        raise TableConfigError(f"{source}: {key}={raw!r} is not an integer") from None


def _payload_merge_mode(payload_class: str | None) -> str | None:
    if not payload_class:
        return None
    simple = payload_class.rsplit(".", 1)[-1]
    if simple in _COMMIT_TIME_PAYLOADS:
        return COMMIT_TIME_ORDERING
    if simple in _EVENT_TIME_PAYLOADS:
        return EVENT_TIME_ORDERING
    return None


def _strategy_merge_mode(strategy_id: str | None, version: int) -> str | None:
    if not strategy_id:
        return None
    if strategy_id == _COMMIT_TIME_STRATEGY_ID:
        return COMMIT_TIME_ORDERING
    # On v6 the event-time UUID is merely the default written into every table (0.13+), so it says nothing about the
    # payload's semantics; only v8+ writers set it deliberately.
    if strategy_id == _EVENT_TIME_STRATEGY_ID and version >= 8:
        return EVENT_TIME_ORDERING
    return None


def resolve_merge_mode(props: Mapping[str, str], version: int, ordering_field: str | None) -> str:
    """Resolve the record merge mode as hudi-rs ``resolver.rs`` and Java ``inferMergingConfigsForPreV9Table`` do.

    Order: ``hoodie.record.merge.mode`` if set; then the payload class (first on v6) or strategy id (first on v8+);
    then an ordering field means event time, none means commit time.

    Args:
        props: the table properties.
        version: the table version.
        ordering_field: the resolved ordering field.

    Raises:
        UnsupportedTableError: for ``CUSTOM`` or an unknown merge mode.
    """
    explicit = (props.get("hoodie.record.merge.mode") or "").strip()
    if explicit:
        if explicit in (COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING):
            return explicit
        raise UnsupportedTableError(f"hoodie.record.merge.mode={explicit} is not supported")
    payload = props.get("hoodie.compaction.payload.class") or props.get("hoodie.table.payload.class")
    strategy = props.get("hoodie.record.merge.strategy.id") or props.get("hoodie.compaction.record.merger.strategy")
    by_payload = _payload_merge_mode(payload)
    by_strategy = _strategy_merge_mode(strategy, version)
    ordered = (by_payload, by_strategy) if version < 8 else (by_strategy, by_payload)
    for mode in ordered:
        if mode is not None:
            return mode
    return EVENT_TIME_ORDERING if ordering_field else COMMIT_TIME_ORDERING


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Typed, validated table configuration.

    Attributes:
        properties: every property, read-only.
        name: ``hoodie.table.name``.
        table_type: ``MERGE_ON_READ`` or ``COPY_ON_WRITE``.
        version: table version (6, 8 or 9).
        timeline_layout: 1 for v6, 2 for v8/v9.
        timeline_path: ``.hoodie`` (layout 1) or ``.hoodie/<hoodie.timeline.path>`` (layout 2).
        record_key_fields: ``hoodie.table.recordkey.fields``.
        partition_fields: ``hoodie.table.partition.fields`` (empty when non-partitioned).
        ordering_field: v9 ``hoodie.table.ordering.fields`` (first field), else ``hoodie.table.precombine.field``.
        merge_mode: ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING``.
        payload_class: ``hoodie.compaction.payload.class``.
        key_generator: ``hoodie.table.keygenerator.class``, else ``hoodie.table.keygenerator.type``.
        hive_style_partitioning: partition folders are ``field=value``.
        url_encode_partitions: partition values are URL-encoded.
        populate_meta_fields: the ``_hoodie_*`` meta columns are written.
        base_file_format: ``PARQUET`` (default), ``HFILE``, ``ORC`` or ``LANCE``.
        event_time_field: ``hoodie.payload.event.time.field``.
        min_event_time_header: our extension ``hoodie.evt.min.event.time.header=true``.
        event_time_unit: unit of integer epoch event times (our extension ``hoodie.evt.event.time.unit``, default ms).
        drop_partition_columns: ``hoodie.datasource.write.drop.partition.columns``.
        timezone: ``hoodie.table.timeline.timezone`` (``LOCAL`` or ``UTC``).
        ordering_fields: every ordering field (Hudi 1.1 orders by several, compared as a tuple).
    """

    properties: Mapping[str, str]
    name: str
    table_type: str
    version: int
    timeline_layout: int
    timeline_path: str
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    ordering_field: str | None
    merge_mode: str
    payload_class: str | None
    key_generator: str | None
    hive_style_partitioning: bool
    url_encode_partitions: bool
    populate_meta_fields: bool
    base_file_format: str
    event_time_field: str | None
    min_event_time_header: bool
    event_time_unit: EpochUnit
    drop_partition_columns: bool
    timezone: str
    ordering_fields: tuple[str, ...] = ()

    @property
    def is_mor(self) -> bool:
        """True for a Merge-On-Read table."""
        return self.table_type == "MERGE_ON_READ"

    @classmethod
    def from_properties(cls, props: Mapping[str, str], source: str = "hoodie.properties") -> TableConfig:
        """Build and validate a configuration from raw properties.

        Args:
            props: the parsed ``hoodie.properties``.
            source: the file name used in error messages.

        Raises:
            TableConfigError: a required key is missing or a value is malformed.
            UnsupportedTableError: table version not 6/8/9, a layout that does not match the version, or an
                unsupported table type or merge mode.

        Example:
            >>> cfg = TableConfig.from_properties({"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ",
            ...     "hoodie.table.version": "6", "hoodie.timeline.layout.version": "1"})
            >>> (cfg.is_mor, cfg.timeline_path, cfg.merge_mode)
            (True, '.hoodie', 'COMMIT_TIME_ORDERING')
        """
        # hudi-rs validation.rs: name, type, version and the layout version are required.
        for key in _REQUIRED_KEYS:
            if not (props.get(key) or "").strip():
                raise TableConfigError(f"{source}: missing required key {key}")
        version = _int(props, "hoodie.table.version", source)
        if version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedTableError(f"{source}: table version {version} is not supported (only 6, 8 and 9)")
        layout = _int(props, "hoodie.timeline.layout.version", source)
        expected_layout = 1 if version == 6 else 2
        if layout != expected_layout:
            raise UnsupportedTableError(
                f"{source}: table version {version} needs timeline layout {expected_layout}, found {layout}"
            )
        table_type = props["hoodie.table.type"].strip()
        if table_type not in ("MERGE_ON_READ", "COPY_ON_WRITE"):
            raise UnsupportedTableError(f"{source}: unknown hoodie.table.type {table_type}")

        if layout == 1:
            timeline_path = ".hoodie"
        else:
            sub = (props.get("hoodie.timeline.path") or "timeline").strip().strip("/")
            timeline_path = f".hoodie/{sub}"

        ordering_fields = _split_fields(props.get("hoodie.table.ordering.fields"))
        if not ordering_fields:
            ordering_fields = _split_fields(props.get("hoodie.table.precombine.field"))
        ordering_field = ordering_fields[0] if ordering_fields else None

        payload_class = (props.get("hoodie.compaction.payload.class") or "").strip() or None
        key_generator = (
            (props.get("hoodie.table.keygenerator.class") or "").strip()
            or (props.get("hoodie.table.keygenerator.type") or "").strip()
            or None
        )
        base_format = (
            (props.get("hoodie.table.base.file.format") or props.get("hoodie.table.ro.file.format") or "PARQUET")
            .strip()
            .upper()
        )
        return cls(
            properties=MappingProxyType(dict(props)),
            name=props["hoodie.table.name"].strip(),
            table_type=table_type,
            version=version,
            timeline_layout=layout,
            timeline_path=timeline_path,
            record_key_fields=_split_fields(props.get("hoodie.table.recordkey.fields")),
            partition_fields=_split_fields(props.get("hoodie.table.partition.fields")),
            ordering_field=ordering_field,
            ordering_fields=ordering_fields,
            merge_mode=resolve_merge_mode(props, version, ordering_field),
            payload_class=payload_class,
            key_generator=key_generator,
            hive_style_partitioning=_flag(props, "hoodie.datasource.write.hive_style_partitioning", False),
            url_encode_partitions=_flag(props, "hoodie.datasource.write.partitionpath.urlencode", False),
            populate_meta_fields=_flag(props, "hoodie.populate.meta.fields", True),
            base_file_format=base_format,
            event_time_field=(props.get("hoodie.payload.event.time.field") or "").strip() or None,
            min_event_time_header=_flag(props, MIN_EVENT_TIME_HEADER_KEY, False),
            event_time_unit=_event_time_unit(props, source),
            drop_partition_columns=_flag(props, "hoodie.datasource.write.drop.partition.columns", False),
            timezone=(props.get("hoodie.table.timeline.timezone") or "LOCAL").strip().upper(),
        )


def load_table_config(storage: TableStorage) -> TableConfig:
    """Read, validate and type ``.hoodie/hoodie.properties``.

    Args:
        storage: the table's storage.

    Raises:
        TableConfigError: missing/invalid file or keys.
        UnsupportedTableError: unsupported version, layout or type.

    Example:
        >>> from evt_toolkit.storage.fs import TableStorage
        >>> cfg = load_table_config(TableStorage.from_uri("/data/trips"))  # doctest: +SKIP
    """
    props = read_table_properties(storage)
    return TableConfig.from_properties(props, storage.full_path(HOODIE_PROPERTIES))


class _Missing(Exception):
    """The properties file is not there (read_table_properties then tries the backup)."""


def _read_validated(storage: TableStorage, rel: str) -> dict[str, str]:
    source = storage.full_path(rel)
    try:
        # Properties.load(InputStream) decodes ISO-8859-1; Properties.store escapes everything else.
        text = storage.read_bytes(rel).decode("latin-1")
    except ObjectNotFoundError as exc:
        raise _Missing(source) from exc
    except StorageError as exc:
        raise TableConfigError(f"cannot read {source}: {exc}") from exc
    try:
        props = parse_properties(text)
    except ValueError as exc:
        raise TableConfigError(f"{source}: {exc}") from exc
    validate_checksum(props, source)
    return props


def read_table_properties(storage: TableStorage) -> dict[str, str]:
    """Read and validate ``.hoodie/hoodie.properties``.

    Like ``HoodieTableConfig.fetchConfigs``, an invalid or unreadable main file is retried from
    ``hoodie.properties.backup`` (a writer may have been interrupted while updating it); if that fails too, the
    error about the main file is raised.

    Args:
        storage: the table's storage.

    Returns:
        The table properties.

    Raises:
        TableConfigError: the file is missing ("not a Hudi table"), unreadable, malformed or has a bad checksum.
    """
    # Each file is read straight away (one request on an object store), not asked for first.
    first_error: TableConfigError | None = None
    for rel in (HOODIE_PROPERTIES, HOODIE_PROPERTIES_BACKUP):
        try:
            return _read_validated(storage, rel)
        except _Missing:
            continue
        except TableConfigError as exc:
            if first_error is None:
                first_error = exc
    if first_error is None:
        raise TableConfigError(f"{storage.full_path(HOODIE_PROPERTIES)} not found: not a Hudi table")
    raise first_error
