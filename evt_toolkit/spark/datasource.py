"""``hudi_evt``: a PySpark Python Data Source over Hudi tables, backed by evt_toolkit's pure-Python reader.

Reads plan the file slices on the driver with the shared planner, pack them into Spark input partitions by size as
Spark packs files for its own file scans (:mod:`evt_toolkit.spark.splits`: ``spark.sql.files.maxPartitionBytes``,
``spark.sql.files.openCostInBytes`` and the default parallelism, so a small table is read by as many tasks as there
are cores, not one task per slice), and merge each slice on an executor with
:func:`evt_toolkit.read.plan.read_planned` (the one slice read), so Spark answers exactly what ``HudiTable.read``
answers.
Options use Hudi's own names:

* ``hoodie.datasource.query.type``: ``snapshot`` (default), ``read_optimized`` or ``incremental``;
* ``as.of.instant``: time travel for snapshot and read-optimized reads;
* ``hoodie.datasource.read.begin.instanttime`` / ``hoodie.datasource.read.end.instanttime``: the incremental
  window ``(begin, end]``. As in Hudi, an incremental read needs a begin instant (``earliest`` or ``000`` reads
  from the start of the timeline); the end defaults to the latest commit;
* ``path`` (or the argument of ``load``/``save``): the table's base path or URI;
* ``hoodie.evt.read.partition.pruning`` (default ``false``): push filters on partition columns down to drop whole
  slices at planning time. Off by default because Spark 4.3.0 keeps the read plan of the last filter pushdown on the
  relation shared by every query of one DataFrame: after ``df.filter("city = 'x'").count()``, a later ``df.count()``
  on the *same* DataFrame object can reuse the pruned slices and miss rows (newer Spark keeps that plan per scan).
  With the option on, load a fresh DataFrame per filtered query. Spark also refuses a reader that accepts filters
  unless ``spark.sql.python.filterPushdown.enabled`` is true (sessions from :func:`get_or_create_session` set it).

Writes (``df.write.format("hudi_evt")``) take ``hoodie.datasource.write.operation`` (``upsert``, ``insert`` or
``delete``), ``hoodie.datasource.write.recordkey.field``, ``hoodie.datasource.write.partitionpath.field``,
``hoodie.datasource.write.precombine.field`` and ``hoodie.table.name`` (the last four only when the table is created).
See :class:`HudiEvtWriter` for how the Python Data Source write protocol is mapped onto a Hudi commit.

Any other ``hoodie.*`` option is refused with the closest known name (``hoodie.datasource.query.typ`` → did you
mean ``hoodie.datasource.query.type``?), except the few Hudi read options that only steer how Hudi lists files
(:data:`IGNORED_READ_OPTIONS`), which do not change the answer.

Example:
    >>> from evt_toolkit.spark.session import get_or_create_session  # doctest: +SKIP
    >>> spark = get_or_create_session()  # doctest: +SKIP
    >>> df = (spark.read.format("hudi_evt")  # doctest: +SKIP
    ...       .option("hoodie.datasource.query.type", "incremental")
    ...       .option("hoodie.datasource.read.begin.instanttime", "20250101000000000")
    ...       .load("/data/trips"))
"""

from __future__ import annotations

import contextlib
import dataclasses
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
    WriterCommitMessage,
)

from evt_toolkit.errors import EvtError, ReadError, UnsupportedFeatureError, WriteError
from evt_toolkit.read.plan import QUERY_TYPES, ReadSpec, SliceRead, normalize_instant, plan_query, read_planned
from evt_toolkit.spark.splits import SplitConf, pack_slice_reads
from evt_toolkit.spark.types import batch_schema_for, conform_batches, spark_schema_for
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.options import StorageOptions
from evt_toolkit.table.fs_view import FileSlice
from evt_toolkit.table.table import Table
from evt_toolkit.write.create import create_table
from evt_toolkit.write.writer import write

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceWriter
    from pyspark.sql.types import StructType

FORMAT_NAME = "hudi_evt"

QUERY_TYPE_OPT = "hoodie.datasource.query.type"
AS_OF_OPT = "as.of.instant"
BEGIN_OPT = "hoodie.datasource.read.begin.instanttime"
END_OPT = "hoodie.datasource.read.end.instanttime"
PRUNING_OPT = "hoodie.evt.read.partition.pruning"

OPERATION_OPT = "hoodie.datasource.write.operation"
RECORD_KEY_OPT = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH_OPT = "hoodie.datasource.write.partitionpath.field"
PRECOMBINE_OPT = "hoodie.datasource.write.precombine.field"
TABLE_NAME_OPT = "hoodie.table.name"
EVENT_TIME_OPT = "hoodie.payload.event.time.field"
BUCKETS_OPT = "hoodie.bucket.index.num.buckets"
MERGE_MODE_OPT = "hoodie.record.merge.mode"
HIVE_STYLE_OPT = "hoodie.datasource.write.hive_style_partitioning"
MIN_EVENT_TIME_HEADER_OPT = "hoodie.evt.min.event.time.header"
#: The ``hoodie.*`` options hudi_evt reads and writes take; any other ``hoodie.*`` option is refused with the nearest
#: known name (a misspelled option silently ignored would change the answer without a word).
READ_OPTIONS = frozenset({QUERY_TYPE_OPT, BEGIN_OPT, END_OPT, PRUNING_OPT})
WRITE_OPTIONS = frozenset(
    {
        OPERATION_OPT,
        RECORD_KEY_OPT,
        PARTITION_PATH_OPT,
        PRECOMBINE_OPT,
        TABLE_NAME_OPT,
        EVENT_TIME_OPT,
        BUCKETS_OPT,
        MERGE_MODE_OPT,
        HIVE_STYLE_OPT,
        MIN_EVENT_TIME_HEADER_OPT,
    }
)
#: Hudi options that only steer how Hudi's own reader lists or skips files: hudi_evt lists storage and reads every
#: slice, so its answer is the one Hudi gives with or without them. Accepted and ignored.
IGNORED_READ_OPTIONS = frozenset(
    {
        "hoodie.metadata.enable",
        "hoodie.enable.data.skipping",
        "hoodie.file.index.enable",
        "hoodie.datasource.read.file.index.listing.mode",
        "hoodie.datasource.read.file.index.listing.partition-path-prefix.analysis.enabled",
    }
)
#: ``hoodie.datasource.read.begin.instanttime`` values that mean "from the start", as Hudi reads them.
EARLIEST_INSTANTS = frozenset({"earliest", "000", "0"})

#: Rows staged by write tasks until the driver commits them; under Hudi's temp folder, which readers never list.
STAGING_DIR = ".hoodie/.temp/hudi_evt_staging"


#: Key generators whose partition folders hold the partition columns' plain values; other generators (timestamp
#: based, custom) derive folders from values, so a folder cannot prove what a column holds.
_VALUE_PRESERVING_KEYGENS = ("SIMPLE", "COMPLEX", "SIMPLEKEYGENERATOR", "COMPLEXKEYGENERATOR")
#: Folder names Hudi writes for null or empty partition values (hive-style and plain).
_NULL_PARTITION_VALUES = ("__HIVE_DEFAULT_PARTITION__", "default")

PARTITION_PATH_FIELD = "_hoodie_partition_path"


# -- options --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Parsed read options (see the module docstring for the option names)."""

    path: str
    query_type: str = "snapshot"
    as_of: str | None = None
    begin: str | None = None
    end: str | None = None
    partition_pruning: bool = False
    storage_options: StorageOptions = field(default_factory=StorageOptions)

    @classmethod
    def from_options(cls, options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> ReadOptions:
        """Parse Spark reader options (keys are case-insensitive in Spark; values are strings).

        Raises:
            ReadError: no path, an unknown query type, a malformed instant, or options that do not fit the
                query type.
        """
        opts = {k.lower(): v for k, v in options.items()}
        path = opts.get("path")
        if not path:
            raise ReadError("hudi_evt needs a table path: load(path) or option('path', ...)")
        check_hoodie_options(opts, READ_OPTIONS | IGNORED_READ_OPTIONS, "read", ReadError)
        raw_type = (opts.get(QUERY_TYPE_OPT) or "snapshot").strip().lower()
        query_type = raw_type
        if query_type not in QUERY_TYPES:
            raise ReadError(f"unknown {QUERY_TYPE_OPT} {raw_type!r}; expected one of {', '.join(QUERY_TYPES)}")
        as_of = _instant(opts.get(AS_OF_OPT), AS_OF_OPT)
        raw_begin = (opts.get(BEGIN_OPT) or "").strip()
        if query_type == "incremental" and not raw_begin:
            # Hudi's IncrementalRelation refuses the same way: an open start would silently mean "everything".
            raise ReadError(
                f"Specify the begin instant time to pull from using option {BEGIN_OPT} "
                f"('earliest' reads from the start of the timeline)"
            )
        begin = None if raw_begin.lower() in EARLIEST_INSTANTS else _instant(raw_begin, BEGIN_OPT)
        end = _instant(opts.get(END_OPT), END_OPT)
        if query_type == "incremental" and as_of is not None:
            raise ReadError(f"{AS_OF_OPT} does not apply to incremental reads; use {BEGIN_OPT}/{END_OPT}")
        if query_type != "incremental" and (begin is not None or end is not None):
            raise ReadError(f"{BEGIN_OPT}/{END_OPT} only apply when {QUERY_TYPE_OPT}=incremental")
        pruning = (opts.get(PRUNING_OPT) or "false").strip().lower() == "true"
        return cls(path, query_type, as_of, begin, end, pruning, storage_options_from(options, path, defaults))


def storage_options_from(
    options: Mapping[str, str], path: str, defaults: Mapping[str, str] | None = None
) -> StorageOptions:
    """Storage options of a read or write: Spark's ``spark.hadoop.fs.s3a.*`` (``defaults``), then S3A keys given
    as ``.option("fs.s3a.endpoint", ...)``, then object-store keys (``aws_endpoint_url``, ...) — later ones win."""
    from evt_toolkit.storage.options import EVT_KEYS, options_from_hadoop_conf, split_uri

    parts = split_uri(path)
    bucket = parts[1] if parts is not None else None
    merged = dict(options_from_hadoop_conf(defaults or {}, bucket))
    merged.update(options_from_hadoop_conf(options, bucket))
    for k, v in options.items():
        key = k.lower()
        if key.startswith(("aws_", "google_", "azure_")) or key in EVT_KEYS:
            merged[key] = v
    return StorageOptions.of(merged)


def check_hoodie_options(opts: Mapping[str, str], known: frozenset[str], kind: str, error: type[EvtError]) -> None:
    """Refuse ``hoodie.*`` options that hudi_evt does not take, naming the closest known one.

    Raises:
        error: an unknown ``hoodie.*`` option.

    Example:
        >>> try:
        ...     check_hoodie_options({"hoodie.datasource.query.typ": "x"}, READ_OPTIONS, "read", ReadError)
        ... except ReadError as exc:
        ...     print(str(exc).split(";")[1].split("?")[0])
         did you mean 'hoodie.datasource.query.type'
    """
    import difflib

    unknown = sorted(k for k in opts if k.startswith("hoodie.") and k not in known)
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listed = [k for k in (QUERY_TYPE_OPT, BEGIN_OPT, END_OPT, PRUNING_OPT) if k in known] if kind == "read" else []
    listed = listed or sorted(k for k in known if k in WRITE_OPTIONS)
    extra = ", as.of.instant, path" if kind == "read" else ", path"
    raise error(f"unknown hudi_evt {kind} option {key!r}{hint} (hudi_evt {kind}s take: {', '.join(listed)}{extra})")


def _instant(value: str | None, what: str) -> str | None:
    if value is None or not value.strip():
        return None
    return normalize_instant(value, what)


# -- read planning (driver) ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileSlicesInputPartition(InputPartition):
    """One Spark input partition: planned slice reads (:class:`evt_toolkit.read.plan.SliceRead`), packed by size
    the way Spark packs files (:func:`evt_toolkit.spark.splits.pack_slice_reads`) and read one after the other."""

    reads: tuple[SliceRead, ...]

    @property
    def file_slices(self) -> tuple[FileSlice, ...]:
        """The slices this partition reads."""
        return tuple(r.file_slice for r in self.reads)


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Slices to read, before partition pruning and packing."""

    spec: ReadSpec
    reads: tuple[SliceRead, ...]


def plan_read(table: Table, options: ReadOptions) -> ReadPlan:
    """Plan a read with the shared planner (:func:`evt_toolkit.read.plan.plan_query`)."""
    plan = plan_query(table, options.query_type, as_of=options.as_of, begin=options.begin, end=options.end)
    return ReadPlan(plan.spec, plan.reads)


def input_partitions(reads: Sequence[SliceRead], split: SplitConf) -> list[FileSlicesInputPartition]:
    """Spark input partitions for planned slice reads (every read in exactly one partition)."""
    return [FileSlicesInputPartition(group) for group in pack_slice_reads(reads, split)]


# -- executor side ----------------------------------------------------------------------------------------------------
def read_input_partition(
    spec: ReadSpec, partition: FileSlicesInputPartition, target: pa.Schema | None = None
) -> Iterator[pa.RecordBatch]:
    """Merge the partition's slices one at a time (runs on an executor): each slice's rows in the table schema,
    windowed for incremental reads, cast to ``target`` (Spark's Arrow form of the declared schema) when given.

    One slice is held at a time, so a task's memory follows its largest slice, not the partition's size.
    """
    storage = TableStorage.from_uri(spec.table_uri, spec.storage_options)
    limit = storage.options.whole_object_limit
    for read in partition.reads:
        s = read.file_slice
        sized = [] if s.base_file is None else [(s.base_file.path, s.base_file.size)]
        if not read.base_only:
            sized.extend((lf.path, lf.size) for lf in s.log_files)
        # Object stores: the slice's small files in parallel (a no-op on local disks). This storage has listed
        # nothing, so the planned sizes keep larger files to ranged reads, as a listed storage would.
        storage.prefetch([path for path, size in sized if size <= limit])
        table = read_planned(spec, read, storage)
        yield from (table.to_batches() if target is None else conform_batches(table, target))


# -- partition pruning ----------------------------------------------------------------------------------------------
def partition_values(
    partition_path: str, fields: Sequence[str], *, hive_style: bool, url_encoded: bool
) -> dict[str, str]:
    """Read the partition columns' values off a partition path; columns it cannot prove are left out.

    Example:
        >>> partition_values("city=sf/day=1", ["city", "day"], hive_style=True, url_encoded=False)
        {'city': 'sf', 'day': '1'}
        >>> partition_values("a/b/c", ["city", "day"], hive_style=False, url_encoded=False)
        {}
    """
    if not fields or not partition_path:
        return {}
    segments = partition_path.split("/")
    # A value containing "/" makes segments and fields disagree: nothing can be proven then.
    if len(segments) != len(fields):
        return {}
    out: dict[str, str] = {}
    for name, seg in zip(fields, segments, strict=True):
        if hive_style:
            key, sep, value = seg.partition("=")
            if not sep or key != name:
                return {}
        else:
            value = seg
        if url_encoded:
            value = urllib.parse.unquote(value)
        if value in _NULL_PARTITION_VALUES:
            continue
        out[name] = value
    return out


def _typed(text: str, typ: pa.DataType) -> Any:
    """The Python value Spark would compare for ``text`` in a column of ``typ``; ``None`` if not comparable."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return text
    if pa.types.is_integer(typ) or pa.types.is_date32(typ):
        try:
            return pa.scalar(text).cast(typ).as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    return None


def _known(f: Filter, values: Mapping[str, Any]) -> bool | None:
    """Whether every row with these partition values satisfies ``f``: True, False, or None (cannot tell)."""
    if isinstance(f, Not):
        inner = _known(f.child, values)
        return None if inner is None else not inner
    attr = getattr(f, "attribute", None)
    if attr is None or len(attr) != 1 or attr[0] not in values:
        return None
    v = values[attr[0]]
    want: Any = getattr(f, "value", None)
    try:
        if isinstance(f, EqualTo | EqualNullSafe):
            return bool(v == want)
        if isinstance(f, In):
            return v in want
        if isinstance(f, GreaterThan):
            return bool(v > want)
        if isinstance(f, GreaterThanOrEqual):
            return bool(v >= want)
        if isinstance(f, LessThan):
            return bool(v < want)
        if isinstance(f, LessThanOrEqual):
            return bool(v <= want)
        if isinstance(f, StringStartsWith):
            return isinstance(v, str) and v.startswith(want)
        if isinstance(f, StringEndsWith):
            return isinstance(v, str) and v.endswith(want)
        if isinstance(f, StringContains):
            return isinstance(v, str) and want in v
    except TypeError:  # a filter value of another type than the column (Spark would have cast it)
        return None
    return None


@dataclass(frozen=True, slots=True)
class PartitionPruner:
    """Decides from a slice's partition path whether pushed filters can match any of its rows.

    Pruning is conservative: a slice is dropped only when a filter is provably false for every row (the
    partition value read off the folder contradicts it). Spark still evaluates every filter on the rows.
    """

    fields: tuple[str, ...]
    types: Mapping[str, pa.DataType]
    hive_style: bool
    url_encoded: bool
    has_partition_path_column: bool
    filters: tuple[Filter, ...] = field(default_factory=tuple)

    @classmethod
    def for_table(cls, table: Table, schema: pa.Schema) -> PartitionPruner:
        cfg = table.config
        keygen = (cfg.key_generator or "").rsplit(".", 1)[-1].upper()
        value_columns = not keygen or keygen in _VALUE_PRESERVING_KEYGENS
        fields = tuple(f for f in cfg.partition_fields if f in schema.names) if value_columns else ()
        if len(fields) != len(cfg.partition_fields):
            fields = ()
        return cls(
            fields=fields,
            types={f: schema.field(f).type for f in fields},
            hive_style=cfg.hive_style_partitioning,
            url_encoded=cfg.url_encode_partitions,
            has_partition_path_column=PARTITION_PATH_FIELD in schema.names,
        )

    def columns(self) -> set[str]:
        """Columns whose filters can prune slices."""
        cols = set(self.fields)
        if self.has_partition_path_column:
            cols.add(PARTITION_PATH_FIELD)
        return cols

    def values_of(self, partition_path: str) -> dict[str, Any]:
        texts = partition_values(partition_path, self.fields, hive_style=self.hive_style, url_encoded=self.url_encoded)
        values: dict[str, Any] = {}
        for name, text in texts.items():
            v = _typed(text, self.types[name])
            if v is not None:
                values[name] = v
        if self.has_partition_path_column:
            values[PARTITION_PATH_FIELD] = partition_path
        return values

    def may_match(self, partition_path: str) -> bool:
        """False only if some pushed filter is false for every row of ``partition_path``."""
        if not self.filters:
            return True
        values = self.values_of(partition_path)
        return all(_known(f, values) is not False for f in self.filters)


def _filter_columns(f: Filter) -> set[str]:
    if isinstance(f, Not):
        return _filter_columns(f.child)
    attr = getattr(f, "attribute", None)
    return {attr[0]} if attr is not None and len(attr) == 1 else set()


# -- the data source ------------------------------------------------------------------------------------------------
class HudiEvtReader(DataSourceReader):
    """Batch reader: plans on the driver (in the planner's Python worker), merges slices on executors.

    Spark pickles the reader into the command of every read task (before it asks for the partitions). A task needs
    the spec and the batch schema only, so the plan of the whole table (``reads``) and the pruner stay on the
    driver: without that, each task would carry every slice of the table.
    """

    def __init__(self, options: ReadOptions, schema: StructType, split: SplitConf | None = None) -> None:
        table = Table.open(options.path, storage_options=options.storage_options.as_dict())
        plan = plan_read(table, options)
        self.spec = plan.spec
        self.reads: tuple[SliceRead, ...] | None = plan.reads
        self.pruner: PartitionPruner | None = PartitionPruner.for_table(table, plan.spec.schema)
        self.split = split if split is not None else SplitConf()
        self.batch_schema = batch_schema_for(schema)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["reads"] = None
        state["pruner"] = None
        return state

    def partitions(self) -> list[InputPartition]:
        """The planned slices the pushed filters do not rule out, packed into partitions as Spark packs files."""
        if self.reads is None or self.pruner is None:
            raise ReadError(f"hudi_evt reader of {self.spec.table_uri} was shipped to a task: plan on the driver")
        pruner = self.pruner
        kept = [r for r in self.reads if pruner.may_match(r.file_slice.partition_path)]
        return list(input_partitions(kept, self.split))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Merge the partition's slices and hand Spark Arrow batches in the declared schema."""
        # Spark substitutes one InputPartition(None) when the plan is empty (no slices): nothing to read.
        if not isinstance(partition, FileSlicesInputPartition):
            return iter(())
        return read_input_partition(self.spec, partition, self.batch_schema)


class HudiEvtPruningReader(HudiEvtReader):
    """:class:`HudiEvtReader` that accepts filters on partition columns to drop slices at planning time."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep filters on partition columns for pruning; hand every filter back so Spark evaluates it on rows.

        Slice pruning is a superset test (a kept slice may still hold non-matching rows, e.g. rows whose
        partition column changed under a non-default key generator), so no filter is reported as fully applied.
        """
        if self.pruner is None:
            raise ReadError(f"hudi_evt reader of {self.spec.table_uri} was shipped to a task: push filters first")
        cols = self.pruner.columns()
        usable = tuple(f for f in filters if _filter_columns(f) and _filter_columns(f) <= cols)
        self.pruner = dataclasses.replace(self.pruner, filters=usable)
        return filters


class HudiEvtDataSource(DataSource):
    """The ``hudi_evt`` data source (see the module docstring for options).

    ``session_storage_options`` holds the session's ``spark.hadoop.fs.s3a.*`` settings and ``session_split_conf``
    its file-scan packing settings, captured when :func:`evt_toolkit.spark.session.get_or_create_session` registers
    the source (the planner's Python worker cannot read the session configuration itself).
    """

    session_storage_options: Mapping[str, str] = {}
    session_split_conf: SplitConf | None = None

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        """The table's merged schema (latest writer schema with Hudi's meta fields) as a Spark schema."""
        options = ReadOptions.from_options(self.options, self.session_storage_options)
        table = Table.open(options.path, storage_options=options.storage_options.as_dict())
        return spark_schema_for(ReadSpec.of(table).schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = ReadOptions.from_options(self.options, self.session_storage_options)
        if options.partition_pruning:
            return HudiEvtPruningReader(options, schema, self.session_split_conf)
        return HudiEvtReader(options, schema, self.session_split_conf)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Create the table if absent (from the write options), then stage rows per task and commit on the driver."""
        options = WriteOptions.from_options(self.options, self.session_storage_options)
        if overwrite:
            raise UnsupportedFeatureError(
                f"hudi_evt does not overwrite tables ({options.path}); use mode('append') with "
                f"{OPERATION_OPT}=upsert|insert|delete"
            )
        options.open_or_create()
        return HudiEvtWriter(options, f"{STAGING_DIR}/{uuid.uuid4().hex}")


# -- writes -----------------------------------------------------------------------------------------------------------
def _fields(value: str | None) -> list[str]:
    return [f.strip() for f in (value or "").split(",") if f.strip()]


def _flag(value: str | None, default: bool) -> bool:
    return default if value is None or not value.strip() else value.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Parsed write options (Hudi's names; the table-shape options only matter when the table is created)."""

    path: str
    operation: str = "upsert"
    table_name: str | None = None
    record_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    ordering_field: str | None = None
    event_time_field: str | None = None
    buckets: int | None = None
    merge_mode: str | None = None
    hive_style_partitioning: bool = True
    min_event_time_header: bool = False
    storage_options: StorageOptions = field(default_factory=StorageOptions)

    @classmethod
    def from_options(cls, options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> WriteOptions:
        """Parse Spark writer options.

        Raises:
            WriteError: no path, an unknown operation, or a malformed number.
        """
        opts = {k.lower(): v for k, v in options.items()}
        path = opts.get("path")
        if not path:
            raise WriteError("hudi_evt needs a table path: save(path) or option('path', ...)")
        check_hoodie_options(opts, WRITE_OPTIONS, "write", WriteError)
        operation = (opts.get(OPERATION_OPT) or "upsert").strip().lower()
        if operation not in ("upsert", "insert", "delete"):
            raise WriteError(f"unknown {OPERATION_OPT} {operation!r}; expected upsert, insert or delete")
        buckets_text = (opts.get(BUCKETS_OPT) or "").strip()
        if buckets_text and not buckets_text.isdigit():
            raise WriteError(f"{BUCKETS_OPT} must be a positive integer, got {buckets_text!r}")
        merge_mode = (opts.get(MERGE_MODE_OPT) or "").strip().upper() or None
        return cls(
            path=path,
            operation=operation,
            table_name=(opts.get(TABLE_NAME_OPT) or "").strip() or None,
            record_key=tuple(_fields(opts.get(RECORD_KEY_OPT))),
            partition_by=tuple(_fields(opts.get(PARTITION_PATH_OPT))),
            ordering_field=(opts.get(PRECOMBINE_OPT) or "").strip() or None,
            event_time_field=(opts.get(EVENT_TIME_OPT) or "").strip() or None,
            buckets=int(buckets_text) if buckets_text else None,
            merge_mode={"EVENT_TIME_ORDERING": "event_time", "COMMIT_TIME_ORDERING": "commit_time"}.get(
                merge_mode or "", merge_mode.lower() if merge_mode else None
            ),
            hive_style_partitioning=_flag(opts.get(HIVE_STYLE_OPT), True),
            min_event_time_header=_flag(opts.get(MIN_EVENT_TIME_HEADER_OPT), False),
            storage_options=storage_options_from(options, path, defaults),
        )

    def open_or_create(self) -> Table:
        """Open the table at ``path``, or create it from these options when no table is there yet.

        Raises:
            WriteError: the table does not exist and no record key is given.
        """
        storage = TableStorage.from_uri(self.path, self.storage_options)
        if storage.exists(".hoodie/hoodie.properties"):
            return Table.open(self.path, storage_options=self.storage_options.as_dict())
        if not self.record_key:
            raise WriteError(f"no Hudi table at {self.path}; set {RECORD_KEY_OPT} to create one")
        name = self.table_name or self.path.rstrip("/").rsplit("/", 1)[-1]
        kwargs: dict[str, Any] = {
            "partition_by": list(self.partition_by) or None,
            "ordering_field": self.ordering_field,
            "event_time_field": self.event_time_field,
            "min_event_time_header": self.min_event_time_header,
            "hive_style_partitioning": self.hive_style_partitioning,
        }
        if self.buckets is not None:
            kwargs["buckets"] = self.buckets
        if self.merge_mode is not None:
            kwargs["merge_mode"] = self.merge_mode
        return create_table(
            self.path, name, list(self.record_key), storage_options=self.storage_options.as_dict(), **kwargs
        )


@dataclass(frozen=True)
class StagedRows(WriterCommitMessage):
    """What a write task staged: an Arrow IPC file under the job's staging folder (``None`` when it had no rows)."""

    path: str | None
    num_rows: int


class HudiEvtWriter(DataSourceArrowWriter):
    """Maps Spark's data source write protocol onto one Hudi deltacommit.

    The Python Data Source API runs ``write`` once per *input* partition and ``commit`` once on the driver; it has
    no way to ask Spark to cluster rows by file group before the write tasks. So the tasks only stage their rows
    (Arrow IPC under ``.hoodie/.temp``), and ``commit`` runs the whole deltacommit with
    :func:`evt_toolkit.write.writer.write` in the driver's Python worker, where no Spark session is reachable: the
    file groups are written there, one after the other. For one Spark task per file group use
    :func:`evt_toolkit.spark.executor.write_dataframe` (or ``HudiTable.write(df, executor=spark_executor(spark))``).
    A failed task or commit removes the staged rows and leaves the table as it was.
    """

    def __init__(self, options: WriteOptions, staging: str) -> None:
        self.options = options
        self.staging = staging

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedRows:
        """Stage this task's rows (runs on an executor)."""
        from pyspark import TaskContext

        batches = [b for b in iterator if b.num_rows]
        if not batches:
            return StagedRows(None, 0)
        table = pa.Table.from_batches(batches)
        ctx = TaskContext.get()
        name = f"part-{ctx.partitionId()}-{ctx.taskAttemptId()}.arrow" if ctx else f"part-{uuid.uuid4().hex}.arrow"
        rel = f"{self.staging}/{name}"
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        storage = TableStorage.from_uri(self.options.path, self.options.storage_options)
        storage.write_bytes_atomic(rel, sink.getvalue().to_pybytes())
        return StagedRows(rel, table.num_rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Write every staged row as one deltacommit, then drop the staging folder."""
        storage = TableStorage.from_uri(self.options.path, self.options.storage_options)
        try:
            parts = []
            for m in messages:
                if isinstance(m, StagedRows) and m.path is not None:
                    with storage.open_input(m.path) as f:
                        parts.append(pa.ipc.open_stream(f).read_all())
            if not parts:
                return
            table = Table.open(self.options.path, storage_options=self.options.storage_options.as_dict())
            write(table, pa.concat_tables(parts), self.options.operation)
        finally:
            self._drop_staging(storage)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Drop the staged rows: nothing reached the timeline."""
        self._drop_staging(TableStorage.from_uri(self.options.path, self.options.storage_options))

    def _drop_staging(self, storage: TableStorage) -> None:
        with contextlib.suppress(OSError, EvtError):
            storage.delete_dir(self.staging)
