"""Which index a write uses, and whether a table can be written at all: decided before anything changes.

Hudi keeps the index type in the *writer's* configuration (``hoodie.index.type``), not in ``hoodie.properties``, so
a table does not say how its writers find existing records. Writing with another index than theirs corrupts the
table for them (a bucket writer on a SIMPLE-index table creates duplicates; a writer without bloom filters breaks
BLOOM-index writers; a non-global index breaks a global one). So this module only writes with:

* ``BUCKET`` (Hudi's simple bucket index, ``HoodieSimpleBucketIndex``) — tables ``HudiTable.create`` makes record it
  in ``hoodie.properties``; for a stock table the caller names it with ``hoodie.index.type=BUCKET`` and
  ``hoodie.bucket.index.num.buckets`` in the write options;
* ``SIMPLE`` (``HoodieSimpleIndex``, Spark's default) on table versions 8 and 9 — named with
  ``hoodie.index.type=SIMPLE`` in the write options: keys are looked up in the latest base files of their
  partition, updates and deletes go to the file group holding the key, inserts to new file groups with a base file.

Everything else is refused with the reason: other index types, consistent-hashing or partition-level buckets (named
in the options, or found by their layout in ``.hoodie/.bucket_index``), a metadata table this
toolkit does not maintain (``table.guards.require_writable`` refuses it, with Hudi's way to disable it), a table
without meta fields.

Example:
    >>> idx = resolve_write_index({"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"}, {},
    ...                           version=9, where="/t", record_key_fields=("id",))
    >>> idx.kind, idx.num_buckets, idx.hash_fields
    ('BUCKET', 4, 'id')
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evt_toolkit.errors import UnsupportedTableError, WriteError
from evt_toolkit.write.simple_index import check_simple_index_table

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = [
    "BUCKET",
    "INDEX_TYPE_KEY",
    "SIMPLE",
    "WriteIndex",
    "check_record_layout",
    "check_writable_1x",
    "refuse_bucket_layout_metadata",
    "resolve_write_index",
]

INDEX_TYPE_KEY = "hoodie.index.type"
NUM_BUCKETS_KEY = "hoodie.bucket.index.num.buckets"
HASH_FIELD_KEY = "hoodie.bucket.index.hash.field"
BUCKET_ENGINE_KEY = "hoodie.index.bucket.engine"
BUCKET = "BUCKET"
SIMPLE = "SIMPLE"

#: Why each other ``HoodieIndex.IndexType`` is refused (the caller's message names the table).
_REFUSED = {
    "BLOOM": "BLOOM-index writers look keys up through bloom filters in base-file footers; this writer writes "
    "them but looks keys up only with the SIMPLE or bucket index",
    "GLOBAL_BLOOM": "global indexes keep a key unique across partitions; this writer looks keys up per partition",
    "GLOBAL_SIMPLE": "global indexes keep a key unique across partitions; this writer looks keys up per partition",
    "RECORD_INDEX": "the record index lives in the metadata table, which this writer does not maintain",
    "GLOBAL_RECORD_LEVEL_INDEX": "the record index lives in the metadata table, which this writer does not maintain",
    "RECORD_LEVEL_INDEX": "the record index lives in the metadata table, which this writer does not maintain",
    "HBASE": "HBase-index writers keep key locations in HBase, which this writer does not update",
    "INMEMORY": "the in-memory index keeps no state a second writer could use",
    "FLINK_STATE": "Flink-state-index writers keep key locations in Flink state, which this writer does not update",
}


@dataclass(frozen=True, slots=True)
class WriteIndex:
    """The index a write uses.

    Attributes:
        kind: ``BUCKET`` or ``SIMPLE``.
        num_buckets: ``hoodie.bucket.index.num.buckets`` (BUCKET only).
        hash_fields: ``hoodie.bucket.index.hash.field`` (BUCKET only; the record key fields by default).
    """

    kind: str
    num_buckets: int = 0
    hash_fields: str = ""


def _setting(options: Mapping[str, str], props: Mapping[str, str], key: str) -> str:
    return str(options.get(key, props.get(key)) or "").strip()


def resolve_write_index(
    props: Mapping[str, str],
    options: Mapping[str, str],
    *,
    version: int,
    where: str,
    record_key_fields: Sequence[str],
) -> WriteIndex:
    """The index to write ``props``' table with, from its properties and the write ``options``.

    Args:
        props: ``hoodie.properties``.
        options: the write options (they win over settings the properties leave out, as a Hudi writer config would;
            one naming another index than the properties record is refused).
        version: the table version.
        where: the table, for messages.
        record_key_fields: the record key fields (default hash fields).

    Raises:
        UnsupportedTableError: no index declared, or one this writer cannot keep consistent (named, with why).
        WriteError: a malformed bucket count.
    """
    _refuse_options_against_the_table(props, options, where)
    kind = _setting(options, props, INDEX_TYPE_KEY).upper()
    num_buckets_text = _setting(options, props, NUM_BUCKETS_KEY)
    if not kind and num_buckets_text:
        kind = BUCKET  # tables created before the toolkit recorded hoodie.index.type
    if not kind:
        raise UnsupportedTableError(
            f"{where}: hoodie.properties does not say which index this table's writers use (Hudi keeps it in the "
            "writer's configuration). Pass it as a write option if it is one this toolkit keeps consistent: "
            f"options={{'{INDEX_TYPE_KEY}': 'SIMPLE'}} (Spark's default) or 'BUCKET' with "
            f"'{NUM_BUCKETS_KEY}'; BLOOM, global and record-level indexes cannot be written"
        )
    if kind in _REFUSED:
        raise UnsupportedTableError(f"{where}: cannot write a {kind}-index table: {_REFUSED[kind]}")
    if kind == BUCKET:
        engine = _setting(options, props, BUCKET_ENGINE_KEY).upper()
        if engine and engine != "SIMPLE":
            raise UnsupportedTableError(
                f"{where}: cannot write a {engine} bucket-index table: only the simple bucket engine's fixed bucket "
                "count is reproduced"
            )
        if not num_buckets_text:
            raise UnsupportedTableError(
                f"{where}: a BUCKET-index write needs {NUM_BUCKETS_KEY} (in hoodie.properties or the write options)"
            )
        try:
            num_buckets = int(num_buckets_text)
        except ValueError:
            raise WriteError(f"{where}: {NUM_BUCKETS_KEY}={num_buckets_text!r} is not an integer") from None
        if not 0 < num_buckets <= 99_999_999:
            raise WriteError(f"{where}: {NUM_BUCKETS_KEY} must be in 1..99999999, got {num_buckets}")
        hash_fields = _setting(options, props, HASH_FIELD_KEY) or ",".join(record_key_fields)
        return WriteIndex(BUCKET, num_buckets, hash_fields)
    if kind == SIMPLE:
        if version < 8:
            raise UnsupportedTableError(
                f"{where}: SIMPLE-index writes are supported on table versions 8 and 9; version {version} tables are "
                "written with the bucket index"
            )
        return WriteIndex(SIMPLE)
    raise UnsupportedTableError(f"{where}: unknown {INDEX_TYPE_KEY}={kind}")


def _normalized(key: str, value: str) -> str:
    value = value.strip()
    if key == NUM_BUCKETS_KEY:
        return value.lstrip("0") or "0"
    if key == HASH_FIELD_KEY:
        return ",".join(f.strip() for f in value.split(",") if f.strip())
    return value.upper()


def _refuse_options_against_the_table(props: Mapping[str, str], options: Mapping[str, str], where: str) -> None:
    """Refuse write options that name another index than the one ``hoodie.properties`` records for the table.

    A table that records its index (``HudiTable.create`` records the bucket index: type, bucket count, hash field)
    is written by its writers with it: another index, bucket count or hash field would put a key into another file
    group than they look in, and the key would then live twice. (The options otherwise win, as a Hudi writer
    config does: a stock table records no index.)

    Raises:
        UnsupportedTableError: naming the table, the setting and both values.
    """
    declared = {k: (props.get(k) or "").strip() for k in (INDEX_TYPE_KEY, NUM_BUCKETS_KEY, HASH_FIELD_KEY)}
    declared[BUCKET_ENGINE_KEY] = (props.get(BUCKET_ENGINE_KEY) or "").strip()
    if not declared[INDEX_TYPE_KEY] and declared[NUM_BUCKETS_KEY]:
        declared[INDEX_TYPE_KEY] = BUCKET  # tables created before the toolkit recorded hoodie.index.type
    for key, recorded in declared.items():
        asked = (options.get(key) or "").strip()
        if recorded and asked and _normalized(key, asked) != _normalized(key, recorded):
            raise UnsupportedTableError(
                f"{where}: the write options name {key}={asked}, but the table records {key}={recorded} in "
                "hoodie.properties: its writers would look for the written keys in other file groups"
            )


#: Key generators whose keys and partition paths :mod:`evt_toolkit.write.task` reproduces, by class or 1.x type.
SUPPORTED_KEY_GENERATORS = frozenset(
    {"SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator", "SIMPLE", "COMPLEX", "NON_PARTITION"}
)


#: Where Hudi keeps the bucket layout of a consistent-hashing bucket index (``HASHING_METADATA_FOLDER_NAME``) and of
#: Hudi 1.1's partition-level bucket index (``PARTITION_BUCKET_INDEX_HASHING_FOLDER``); neither exists otherwise.
BUCKET_INDEX_FOLDER = ".hoodie/.bucket_index"


def refuse_bucket_layout_metadata(table: Table) -> None:
    """Refuse a write to a table whose bucket layout lives in ``.hoodie/.bucket_index``.

    A consistent-hashing table maps key hashes to file groups through ``consistent_hashing_metadata`` (and resizes
    them by clustering); a partition-level bucket index gives partitions their own bucket counts
    (``partition_bucket_index_meta``). This writer places records by one fixed bucket count (or by a SIMPLE look-up
    that puts new keys into new file groups), so a later stock writer would hash a key it wrote to another file group
    and write it twice.

    Raises:
        UnsupportedTableError: naming the table and what the folder holds.
    """
    files, folders = table.storage.list_dir(BUCKET_INDEX_FOLDER)
    if files or folders:
        held = ", ".join(sorted(posixpath.basename(p) for p in [*(f.path for f in files), *folders]))
        raise UnsupportedTableError(
            f"{table.storage.uri}: cannot write a table whose bucket layout Hudi keeps in {BUCKET_INDEX_FOLDER} "
            f"({held}: a consistent-hashing or partition-level bucket index); this writer places records by one "
            "fixed bucket count or the SIMPLE index, so stock writers would find its keys in other file groups"
        )


def check_record_layout(table: Table) -> None:
    """Refuse a table (any version) whose records this writer would not key or place as stock Hudi writers do.

    Meta fields, record key, key generator, Parquet base files, raw partition values and no bucket layout in
    ``.hoodie/.bucket_index`` (:func:`refuse_bucket_layout_metadata`): a table with
    ``hoodie.datasource.write.partitionpath.urlencode=true`` has its partition values escaped by Hudi's writers
    (``x:y`` → ``x%3Ay``), so a record written under the raw value would sit in another folder than its key.
    Shared by the version-6 and the version-8/9 paths, so that no setting is checked on one and forgotten on the
    other.

    Raises:
        UnsupportedTableError: naming the table and the setting.
    """
    cfg = table.config
    where = table.storage.uri
    if not cfg.populate_meta_fields:
        raise UnsupportedTableError(f"{where}: tables without meta fields (hoodie.populate.meta.fields=false)")
    if not cfg.record_key_fields:
        raise UnsupportedTableError(f"{where}: hoodie.table.recordkey.fields is not set")
    keygen = (cfg.key_generator or "").rsplit(".", 1)[-1]
    if keygen and keygen not in SUPPORTED_KEY_GENERATORS:
        raise UnsupportedTableError(f"{where}: key generator {cfg.key_generator} is not supported for writes")
    if cfg.base_file_format != "PARQUET":
        raise UnsupportedTableError(f"{where}: base file format {cfg.base_file_format} is not written (Parquet only)")
    if cfg.url_encode_partitions:
        raise UnsupportedTableError(
            f"{where}: URL-encoded partition paths (hoodie.datasource.write.partitionpath.urlencode=true) are not "
            "written"
        )
    refuse_bucket_layout_metadata(table)


def check_writable_1x(table: Table, options: Mapping[str, str]) -> WriteIndex:
    """Refuse a version-8/9 table this writer cannot keep consistent; else the index to write it with.

    Checked before the instant is allocated, so a refused write changes nothing (after
    :func:`~evt_toolkit.table.guards.require_writable` has refused other table types and metadata tables): the
    record layout (:func:`check_record_layout`), a declared index this writer keeps consistent (and, for SIMPLE, no
    log-only file group).

    Raises:
        UnsupportedTableError: naming the table and the reason.
    """
    cfg = table.config
    where = table.storage.uri
    check_record_layout(table)
    index = resolve_write_index(
        cfg.properties, options, version=cfg.version, where=where, record_key_fields=cfg.record_key_fields
    )
    if index.kind == SIMPLE:
        check_simple_index_table(table)
    return index
