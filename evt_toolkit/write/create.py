"""Create an empty Merge-On-Read table (version 6, 8 or 9) with Hudi's simple bucket index.

Mirrors ``HoodieTableMetaClient.initTableAndGetMetaClient``: the ``.hoodie`` folders Hudi creates at init and a
``hoodie.properties`` holding the keys Spark's datasource writes (format notes §1), plus the bucket-index and payload
settings this toolkit writes with and two keys of our own (``hoodie.evt.*``). No metadata table is created and
``hoodie.table.metadata.partitions`` stays unset, so every reader lists storage (design §2.1).

Version 6 stays the default: Hudi 0.x and 1.x both read and write it. Versions 8 (Hudi 1.0) and 9 (Hudi 1.1) get the
keys their own writers record (``hoodie.record.merge.mode``, ``hoodie.table.initial.version``, the layout-2 timeline
paths; v9's ``hoodie.table.ordering.fields`` instead of ``hoodie.table.precombine.field``), copied key for key from
the real v8/v9 tables of the fixtures (docs/hudi-1x.md §2).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from evt_toolkit.errors import StorageError, TableConfigError
from evt_toolkit.format.log_writer import AVRO_NAME_PATTERN
from evt_toolkit.format.properties import HOODIE_PROPERTIES, dump_properties, table_checksum
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import EVENT_TIME_UNIT_KEY, MIN_EVENT_TIME_HEADER_KEY
from evt_toolkit.table.table import Table

__all__ = [
    "EVENT_TIME_UNIT_KEY",
    "INIT_FOLDERS",
    "TABLE_VERSIONS",
    "TIMELINE_V2_FOLDERS",
    "create_table",
    "table_properties",
]

#: Folders ``HoodieTableMetaClient.initTableAndGetMetaClient`` creates.
INIT_FOLDERS = (
    ".hoodie",
    ".hoodie/.schema",
    ".hoodie/archived",
    ".hoodie/.temp",
    ".hoodie/.aux",
    ".hoodie/.aux/.bootstrap/.partitions",
    ".hoodie/.aux/.bootstrap/.fileids",
)
#: Our extension key: unit of integer epoch event times (``s``, ``ms``, ``us``, ``ns``).

#: Extra folders of a layout-2 (v8/v9) table: the active timeline and its LSM history (``hoodie.timeline.path``,
#: ``hoodie.timeline.history.path``).
TIMELINE_V2_FOLDERS = (".hoodie/timeline", ".hoodie/timeline/history")

_KEYGEN = "org.apache.hudi.keygen."
#: ``KeyGeneratorType`` names 1.x records in ``hoodie.table.keygenerator.type`` for our three key generators.
_KEYGEN_TYPES = {
    "NonpartitionedKeyGenerator": "NON_PARTITION",
    "SimpleKeyGenerator": "SIMPLE",
    "ComplexKeyGenerator": "COMPLEX",
}
#: ``RecordMergeMode`` and the merge strategy id 1.0 records with it (``HoodieRecordMerger.*_MERGE_STRATEGY_UUID``).
_RECORD_MERGE_MODES = {
    "commit_time": ("COMMIT_TIME_ORDERING", "ce9acb64-bde0-424c-9b91-f6ebba25356d"),
    "event_time": ("EVENT_TIME_ORDERING", "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"),
}
TABLE_VERSIONS = (6, 8, 9)
_PAYLOAD = "org.apache.hudi.common.model."
#: ``HoodieRecordMerger.DEFAULT_MERGER_STRATEGY_UUID``: what every 0.14/0.15 table records, whatever the payload.
_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
_MERGE_MODES = {"commit_time": "OverwriteWithLatestAvroPayload", "event_time": "DefaultHoodieRecordPayload"}
_UNITS = ("s", "ms", "us", "ns")


#: A field the table is keyed, partitioned or ordered by: an Avro name, or a dotted path of them (a nested field).
_FIELD_PATH = re.compile(rf"{AVRO_NAME_PATTERN}(\.{AVRO_NAME_PATTERN})*")


def _field_path(name: str, what: str) -> str:
    """``name`` if Avro can hold it: a field it cannot (``a/b``, ``a b``, ``1x``) is refused by every write, so a
    table created with it could never be written."""
    if not _FIELD_PATH.fullmatch(name):
        raise TableConfigError(
            f"{what} {name!r} is not an Avro field name (letters, digits and '_', not starting with a digit): no "
            "write could hold it"
        )
    return name


def _fields(value: str | Sequence[str] | None, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            name = part.strip()
            if name:
                out.append(_field_path(name, what))
    if len(set(out)) != len(out):
        raise TableConfigError(f"{what} lists a field twice: {out}")
    return tuple(out)


def _v6_properties(
    name: str,
    database: str,
    keys: tuple[str, ...],
    partitions: tuple[str, ...],
    ordering_field: str | None,
    keygen: str,
    merge_mode: str,
) -> dict[str, str]:
    """The version-6 keys of Spark's datasource (0.14/0.15): payload class and the default merger strategy."""
    props: dict[str, str] = {
        "hoodie.table.name": name,
        "hoodie.database.name": database,
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.recordkey.fields": ",".join(keys),
    }
    if ordering_field:
        props["hoodie.table.precombine.field"] = ordering_field
    if partitions:
        props["hoodie.table.partition.fields"] = ",".join(partitions)
    props.update(
        {
            "hoodie.table.keygenerator.class": _KEYGEN + keygen,
            "hoodie.archivelog.folder": "archived",
            "hoodie.compaction.payload.class": _PAYLOAD + _MERGE_MODES[merge_mode],
            "hoodie.compaction.record.merger.strategy": _MERGER_STRATEGY,
        }
    )
    return props


def _v8_properties(
    version: int,
    name: str,
    database: str,
    keys: tuple[str, ...],
    partitions: tuple[str, ...],
    ordering_field: str | None,
    keygen: str,
    merge_mode: str,
) -> dict[str, str]:
    """The keys Hudi 1.0 (v8) and 1.1 (v9) record at create (``HoodieTableConfig``, checked on the fixtures).

    v8: ``hoodie.table.precombine.field``, the payload class and ``hoodie.record.merge.strategy.id`` beside
    ``hoodie.record.merge.mode`` (as ``v8_trips_8i3u1d``). v9 renames the ordering key to
    ``hoodie.table.ordering.fields``, records the merge mode alone and adds ``hoodie.table.format=native`` (as the
    ``mor_v9_*`` tables). Both carry ``hoodie.table.initial.version``, the layout-2 timeline paths and
    ``hoodie.table.keygenerator.type``.
    """
    mode, strategy_id = _RECORD_MERGE_MODES[merge_mode]
    props: dict[str, str] = {
        "hoodie.table.name": name,
        "hoodie.database.name": database,
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": str(version),
        "hoodie.table.initial.version": str(version),
        "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.path": "timeline",
        "hoodie.timeline.history.path": "history",
        "hoodie.table.recordkey.fields": ",".join(keys),
    }
    if ordering_field:
        props["hoodie.table.ordering.fields" if version >= 9 else "hoodie.table.precombine.field"] = ordering_field
    if partitions:
        props["hoodie.table.partition.fields"] = ",".join(partitions)
    props["hoodie.table.keygenerator.type"] = _KEYGEN_TYPES[keygen]
    props["hoodie.archivelog.folder"] = "archived"
    props["hoodie.record.merge.mode"] = mode
    if version == 8:
        props["hoodie.compaction.payload.class"] = _PAYLOAD + _MERGE_MODES[merge_mode]
        props["hoodie.record.merge.strategy.id"] = strategy_id
    else:
        props["hoodie.table.format"] = "native"
    return props


def table_properties(
    name: str,
    record_key: str | Sequence[str],
    partition_by: str | Sequence[str] | None = None,
    ordering_field: str | None = None,
    event_time_field: str | None = None,
    buckets: int = 4,
    merge_mode: str = "commit_time",
    min_event_time_header: bool = False,
    hive_style_partitioning: bool = True,
    database: str = "default",
    event_time_unit: str = "ms",
    timezone: str = "UTC",
    table_version: int = 6,
) -> dict[str, str]:
    """The ``hoodie.properties`` of a new table, in the order they are written. Pure; see :func:`create_table`.

    Raises:
        TableConfigError: an argument is invalid (named).

    Example:
        >>> p = table_properties("t", "id", partition_by="region", ordering_field="ts")
        >>> p["hoodie.table.keygenerator.class"], p["hoodie.bucket.index.num.buckets"]
        ('org.apache.hudi.keygen.SimpleKeyGenerator', '4')
    """
    if not name or not name.strip():
        raise TableConfigError("a table needs a name")
    keys = _fields(record_key, "record_key")
    if not keys:
        raise TableConfigError("a table needs at least one record key field")
    partitions = _fields(partition_by, "partition_by")
    for value, what in ((ordering_field, "ordering_field"), (event_time_field, "event_time_field")):
        if value:
            _field_path(value, what)
    if merge_mode not in _MERGE_MODES:
        raise TableConfigError(f"merge_mode must be 'commit_time' or 'event_time', got {merge_mode!r}")
    if merge_mode == "event_time" and not ordering_field:
        raise TableConfigError("merge_mode='event_time' orders records by ordering_field, which is not set")
    if min_event_time_header and not event_time_field:
        raise TableConfigError("min_event_time_header=True needs event_time_field")
    if isinstance(buckets, bool) or not isinstance(buckets, int) or not 0 < buckets <= 99_999_999:
        raise TableConfigError(f"buckets must be a positive int (at most 99999999), got {buckets!r}")
    if event_time_unit not in _UNITS:
        raise TableConfigError(f"event_time_unit must be one of {', '.join(_UNITS)}, got {event_time_unit!r}")
    tz = timezone.strip().upper()
    if tz not in ("UTC", "LOCAL"):
        raise TableConfigError(f"timezone must be 'UTC' or 'LOCAL', got {timezone!r}")
    if isinstance(table_version, bool) or table_version not in TABLE_VERSIONS:
        raise TableConfigError(f"table_version must be 6, 8 or 9, got {table_version!r}")

    if not partitions:
        keygen = "NonpartitionedKeyGenerator"
    elif len(keys) == 1 and len(partitions) == 1:
        keygen = "SimpleKeyGenerator"
    else:
        keygen = "ComplexKeyGenerator"
    if table_version == 6:
        props = _v6_properties(name, database, keys, partitions, ordering_field, keygen, merge_mode)
    else:
        props = _v8_properties(table_version, name, database, keys, partitions, ordering_field, keygen, merge_mode)
    props.update(
        {
            "hoodie.datasource.write.hive_style_partitioning": str(hive_style_partitioning).lower(),
            "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.table.timeline.timezone": tz,
            "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": str(buckets),
            "hoodie.bucket.index.hash.field": ",".join(keys),
        }
    )
    if event_time_field:
        props["hoodie.payload.event.time.field"] = event_time_field
    props[MIN_EVENT_TIME_HEADER_KEY] = str(bool(min_event_time_header)).lower()
    props[EVENT_TIME_UNIT_KEY] = event_time_unit
    props["hoodie.table.checksum"] = str(table_checksum(name, database))
    return props


def create_table(
    path: str | os.PathLike[str],
    name: str,
    record_key: str | Sequence[str],
    partition_by: str | Sequence[str] | None = None,
    ordering_field: str | None = None,
    event_time_field: str | None = None,
    buckets: int = 4,
    merge_mode: str = "commit_time",
    min_event_time_header: bool = False,
    hive_style_partitioning: bool = True,
    database: str = "default",
    event_time_unit: str = "ms",
    timezone: str = "UTC",
    storage_options: Mapping[str, Any] | None = None,
    table_version: int = 6,
) -> Table:
    """Create an empty MERGE_ON_READ table (version 6, 8 or 9; bucket index) and open it.

    Args:
        path: the base path (local path or URI); must not hold a table yet.
        storage_options: object-store settings (``aws_endpoint_url``, credentials, ...; see ``docs/storage.md``).
        name: ``hoodie.table.name``.
        record_key: record key field(s); several make a ``ComplexKeyGenerator`` key ``f1:v1,f2:v2``.
        partition_by: partition field(s); none makes a non-partitioned table.
        ordering_field: ``hoodie.table.precombine.field``: de-duplicates a batch and, with ``event_time``, orders
            records at merge time.
        event_time_field: ``hoodie.payload.event.time.field``: recorded as min/max event time in every write stat.
        buckets: ``hoodie.bucket.index.num.buckets`` (file groups per partition).
        merge_mode: ``commit_time`` (``OverwriteWithLatestAvroPayload``: the last write wins) or ``event_time``
            (``DefaultHoodieRecordPayload``: the greater ordering value wins).
        min_event_time_header: write the ``MIN_EVENT_TIME`` log block header (design §2.2). **Stock Hudi readers
            (Java, hudi-rs) fail on such tables.**
        hive_style_partitioning: partition folders ``field=value`` rather than ``value``.
        database: ``hoodie.database.name`` (part of the checksum).
        event_time_unit: unit of integer epoch event times.
        timezone: ``hoodie.table.timeline.timezone`` of instant times: ``UTC`` or ``LOCAL``.
        table_version: ``6`` (default; read and written by Hudi 0.14+ and 1.x), ``8`` (Hudi 1.0) or ``9``
            (Hudi 1.1): timeline layout 2 under ``.hoodie/timeline``, Avro commit metadata, logs named by their
            deltacommit (docs/hudi-1x.md).

    Returns:
        The new table.

    Raises:
        TableConfigError: a table (or a ``.hoodie`` folder) already exists at ``path``, or an argument is invalid.

    Example:
        >>> t = create_table("/tmp/trips", "trips", "uuid", partition_by="city", ordering_field="ts",
        ...                  event_time_field="ts")  # doctest: +SKIP
        >>> t.properties["hoodie.table.type"]  # doctest: +SKIP
        'MERGE_ON_READ'
    """
    props = table_properties(
        name,
        record_key,
        partition_by,
        ordering_field,
        event_time_field,
        buckets,
        merge_mode,
        min_event_time_header,
        hive_style_partitioning,
        database,
        event_time_unit,
        timezone,
        table_version,
    )
    storage = TableStorage.from_uri(path, storage_options)
    if storage.exists(HOODIE_PROPERTIES) or storage.exists(".hoodie"):
        raise TableConfigError(f"{storage.full_path('.hoodie')} already exists: refusing to create a table over it")
    try:
        for folder in INIT_FOLDERS + (TIMELINE_V2_FOLDERS if table_version >= 8 else ()):
            storage.makedirs(folder)
    except OSError as exc:
        raise StorageError(f"cannot create {storage.full_path('.hoodie')}: {exc}") from exc
    saved = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    text = dump_properties(props, header_comment=f"Properties saved on {saved}")
    # Properties.store writes ISO-8859-1; dump_properties already escaped everything else as \\uXXXX.
    storage.write_bytes_atomic(HOODIE_PROPERTIES, text.encode("latin-1"))
    return Table.open(path, storage_options=storage_options)
