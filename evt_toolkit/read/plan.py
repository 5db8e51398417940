"""Planning a query: which file slices to read, how, and as of which instant — one planner for every reader.

The pure-Python reader (:mod:`evt_toolkit.read.query`), the Spark data source (:mod:`evt_toolkit.spark.datasource`)
and the compaction task all start here: :class:`ReadSpec` is everything a process needs to merge slices the way
the driver would (picklable, so Spark ships it), and :func:`plan_query` turns a query into :class:`SliceRead` s,
each read by :func:`evt_toolkit.read.slice_reader.read_slice`.

Every query type goes through the one retention check (:func:`evt_toolkit.table.retention.check_readable_at`):
time travel, read-optimized time travel and incremental windows are refused, not answered partially, when a clean
removed the files they need.

Example:
    >>> plan = plan_query(table, "incremental", begin="20250101000000000")  # doctest: +SKIP
    >>> [r.file_slice.file_id for r in plan.reads]  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa

from evt_toolkit.errors import ReadError
from evt_toolkit.read.merge import COMMIT_TIME, EVENT_TIME
from evt_toolkit.read.slice_reader import COMMIT_TIME_FIELD, CommitWindow, SliceReadContext, read_file_slice
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.options import StorageOptions
from evt_toolkit.table import guards
from evt_toolkit.table.fs_view import FileSlice
from evt_toolkit.table.guards import require_supported_merge
from evt_toolkit.table.retention import check_incremental_settled, check_readable_at, check_time_travel_settled
from evt_toolkit.table.schema import arrow_schema_for, latest_avro_schema, with_meta_fields
from evt_toolkit.table.table import Table
from evt_toolkit.table.timeline import DELTA_COMMIT, Timeline

__all__ = [
    "COMMIT_TIME_FIELD",
    "QUERY_TYPES",
    "CommitWindow",
    "QueryPlan",
    "ReadSpec",
    "SliceRead",
    "normalize_instant",
    "plan_query",
    "read_planned",
]

QUERY_TYPES = ("snapshot", "read_optimized", "incremental")


def normalize_instant(value: str | int, what: str) -> str:
    """Accept Hudi's instant formats (``yyyyMMddHHmmss[SSS]``, ``yyyy-MM-dd HH:mm:ss[.SSS]``) as a 17-char instant.

    14-digit (second-granularity) instants are padded with ``000`` only for comparisons against 17-digit instants,
    which keeps ``20250331030642`` ≤ ``20250331030642808`` as Hudi's string comparison does.

    Raises:
        ReadError: not an instant (names ``what``).
    """
    text = str(value).strip()
    digits = re.sub(r"[-: .T]", "", text)
    if not digits.isdigit() or len(digits) not in (8, 14, 17):
        raise ReadError(f"{what} {value!r} is not a Hudi instant (expected yyyyMMddHHmmss[SSS])")
    if len(digits) == 8:
        digits += "000000"
    return digits


@dataclass(frozen=True, slots=True)
class ReadSpec:
    """How any process merges the table's slices: schema, merge settings and the timeline's instants.

    The timeline travels without storage: which blocks count must be the planner's answer, not a later listing's.
    """

    table_uri: str
    schema: pa.Schema
    reader_avro_schema: dict[str, Any] | None
    ordering_field: str | None
    merge_mode: str
    record_key_fields: tuple[str, ...]
    complex_key: bool
    timeline: Timeline
    storage_options: StorageOptions | None = field(default=None, compare=False)

    @classmethod
    def of(cls, table: Table) -> ReadSpec:
        """The merged schema (latest writer schema, meta fields first, every column nullable) and merge settings.

        Raises:
            UnsupportedTableError: partition columns that only the partition path holds
                (:func:`~evt_toolkit.table.guards.require_partition_columns_stored`), or a bootstrapped table
                (:func:`~evt_toolkit.table.guards.require_not_bootstrapped`).
        """
        guards.require_partition_columns_stored(table, "run a query")
        guards.require_not_bootstrapped(table, "run a query")
        cfg = table.config
        avro = latest_avro_schema(cfg, table.timeline)
        reader_avro = with_meta_fields(avro) if avro is not None and cfg.populate_meta_fields else avro
        schema = arrow_schema_for(reader_avro) or pa.schema([])
        # Rows of different files are concatenated: a NOT NULL column in one writer schema must not make the
        # output schema disagree with a conformed (nullable) file.
        schema = pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)
        return cls(
            table_uri=table.path,
            schema=schema,
            reader_avro_schema=reader_avro,
            ordering_field=cfg.ordering_field,
            merge_mode=EVENT_TIME if cfg.merge_mode == EVENT_TIME else COMMIT_TIME,
            record_key_fields=cfg.record_key_fields,
            complex_key=len(cfg.record_key_fields) > 1 or "complex" in (cfg.key_generator or "").lower(),
            timeline=Timeline(table.timeline.instants, table.timeline.layout_version),
            storage_options=table.storage.options,
        )

    def context(
        self, query_instant: str | None, window: CommitWindow | None = None, storage: TableStorage | None = None
    ) -> SliceReadContext:
        """The slice-reader context in this process (storage is opened here: file systems are not shipped)."""
        is_visible = self.timeline.is_visible
        if window is not None and window.late:
            is_visible = partial(_visible_at_window_end, is_visible, window)
        return SliceReadContext(
            storage=storage if storage is not None else TableStorage.from_uri(self.table_uri, self.storage_options),
            schema=self.schema,
            reader_avro_schema=self.reader_avro_schema,
            ordering_field=self.ordering_field,
            merge_mode=self.merge_mode,
            query_instant=query_instant,
            is_visible=is_visible,
            record_key_fields=self.record_key_fields,
            complex_key=self.complex_key,
        )


def _visible_at_window_end(is_visible: Callable[[str], bool], window: CommitWindow, instant: str) -> bool:
    return is_visible(instant) and window.counts_block(instant)


@dataclass(frozen=True, slots=True)
class SliceRead:
    """One slice to read: merged (base + logs) or base only, as of an instant, optionally windowed."""

    file_slice: FileSlice
    base_only: bool
    query_instant: str | None
    window: CommitWindow | None = None


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """The slices a query reads, in order, and the spec to read them with."""

    spec: ReadSpec
    query_type: str
    reads: tuple[SliceRead, ...]

    def paths(self) -> list[str]:
        """Every base and log file the reads fetch (object stores prefetch them in parallel)."""
        out: list[str] = []
        for r in self.reads:
            s = r.file_slice
            if s.base_file is not None:
                out.append(s.base_file.path)
            if not r.base_only:
                out.extend(lf.path for lf in s.log_files)
        return out


#: Incremental begins that mean "from the start", as Hudi's ``hoodie.datasource.read.begin.instanttime`` takes them.
EARLIEST_BEGINS = frozenset({"earliest", "000", "0"})


def _partition_of(rel_path: str) -> str:
    return rel_path.rsplit("/", 1)[0] if "/" in rel_path else ""


def _incremental(table: Table, spec: ReadSpec, begin: str | None, end: str | None) -> tuple[SliceRead, ...]:
    if not table.config.populate_meta_fields:
        # MergeOnReadIncrementalRelation needs _hoodie_commit_time to tell which rows a window holds.
        raise ReadError(
            f"incremental reads of {table.path} need the _hoodie_* meta fields, and this table does not store them "
            "(hoodie.populate.meta.fields=false); read a snapshot with as_of instead"
        )
    b = "0" if begin is None or str(begin).strip().lower() in EARLIEST_BEGINS else normalize_instant(begin, "begin")
    e = normalize_instant(end, "end") if end is not None else None
    layout2 = table.config.timeline_layout >= 2
    admitted = []
    for inst in table.timeline.completed_commits():
        key = (inst.completion_time or inst.time) if layout2 else inst.time
        if key > b and (e is None or key <= e):
            admitted.append(inst)
    last = max((i.time for i in admitted), default=None)
    # A write still pending inside the window would change its answer when it completes (layout 1 only).
    check_incremental_settled(table.timeline, b, e if e is not None else last, table.path)
    if last is None:
        return ()
    check_readable_at(table.timeline, table.view, last, table.path, f"incremental read ({b}, {e or last}]")
    touched: set[tuple[str, str]] = set()
    for inst in admitted:
        meta = table.timeline.commit_metadata(inst)
        touched |= meta.file_groups()
    if layout2:
        # The table as of the window's end: every write completed by then, whatever its requested time, and none
        # completed after it (log blocks come from deltacommits; a compaction's own blocks go with its base file).
        late = frozenset(
            i.time
            for i in table.timeline.completed_commits()
            if i.action == DELTA_COMMIT and e is not None and (i.completion_time or i.time) > e
        )
        window = CommitWindow(b, e, frozenset(i.time for i in admitted), late)
        query_instant = None
    else:
        window = CommitWindow(b, e, None)  # requested times: every block up to the newest admitted commit
        query_instant = last
    return tuple(
        SliceRead(s, False, query_instant, window)
        for s in table.view.latest_merged_file_slices(last)
        if (s.partition_path, s.file_id) in touched
    )


def plan_query(
    table: Table,
    query_type: str = "snapshot",
    *,
    as_of: str | None = None,
    begin: str | None = None,
    end: str | None = None,
) -> QueryPlan:
    """Plan a query of ``table``.

    * ``snapshot``: the latest merged slices (a pending compaction's new slice merged with the one before it) as of
      ``as_of`` or the latest commit;
    * ``read_optimized``: the latest committed base file of each group, as of ``as_of``;
    * ``incremental``: records committed in ``(begin, end]`` — on layout 1 requested times bound the window, on
      layout 2 completion times — read from the slices of the file groups the admitted commits wrote, merged as
      the table stood at the window's end (every write completed by then), then rows kept by commit time: a key is
      in the answer when its row at the window's end was written in the window (:class:`CommitWindow`).

    Raises:
        ReadError: unknown query type, a bad instant, ``as_of`` with an incremental read, an incremental read of a
            table without meta fields, time travel at or after a write that has not completed (names it), a
            layout-1 incremental window holding the requested time of a write that has not completed (names it), or
            a state a clean removed (names the earliest readable instant).
        UnsupportedTableError: a merging query of a table whose merge the toolkit does not apply (several
            ordering fields, a custom delete marker, a partial-update mode).
    """
    # The view first: building it may load a newer timeline (Table.view), and the spec must carry that one.
    table.view  # noqa: B018
    spec = ReadSpec.of(table)
    if query_type not in QUERY_TYPES:
        raise ReadError(f"unknown query type {query_type!r}; expected one of {', '.join(QUERY_TYPES)}")
    if query_type != "read_optimized":
        require_supported_merge(table, f"read a {query_type} view")
    if query_type == "incremental":
        if as_of is not None:
            raise ReadError("as_of does not apply to incremental reads; use begin/end")
        return QueryPlan(spec, query_type, _incremental(table, spec, begin, end))
    if begin is not None or end is not None:
        raise ReadError(f"begin/end apply to incremental reads only, not to a {query_type} read")
    at = normalize_instant(as_of, "as_of") if as_of is not None else None
    if at is not None:
        check_time_travel_settled(table.timeline, at, table.path)
        check_readable_at(table.timeline, table.view, at, table.path, "time travel")
    view = table.view
    if query_type == "read_optimized":
        reads = tuple(
            SliceRead(FileSlice(_partition_of(b.path), b.file_id, b.instant, b, ()), True, at)
            for b in view.latest_base_files(at)
        )
        return QueryPlan(spec, query_type, reads)
    if at is None:
        last = table.timeline.last_completed_commit()
        if last is None:
            return QueryPlan(spec, query_type, ())
        query_instant = last.time
    else:
        query_instant = at
    reads = tuple(SliceRead(s, False, query_instant) for s in view.latest_merged_file_slices(at))
    return QueryPlan(spec, query_type, reads)


def read_planned(
    spec: ReadSpec, read: SliceRead, storage: TableStorage | None = None, columns: Sequence[str] | None = None
) -> pa.Table:
    """Read one planned slice (on the driver or on a Spark executor); ``columns``: only those, in that order."""
    ctx = spec.context(read.query_instant, read.window, storage)
    return read_file_slice(ctx, read.file_slice, base_only=read.base_only, window=read.window, columns=columns)
