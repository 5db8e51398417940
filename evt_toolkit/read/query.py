"""Query types over a table: snapshot, read-optimized, time travel and incremental (Arrow in, Arrow out)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import ReadError
from evt_toolkit.read.merge import COMMIT_TIME, EVENT_TIME
from evt_toolkit.read.schema import arrow_schema_for, latest_avro_schema, with_meta_fields
from evt_toolkit.read.slice_reader import SliceReadContext, read_base_file, read_file_slice
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import TableConfig
from evt_toolkit.table.fs_view import FileSlice, FileSystemView, list_table_files
from evt_toolkit.table.timeline import Timeline

QUERY_TYPES = ("snapshot", "read_optimized", "incremental")


def slice_paths(slices: Sequence[FileSlice]) -> list[str]:
    """Base and log files of ``slices`` (what a read fetches; object stores prefetch them in parallel)."""
    return [p for s in slices for p in ([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files]]


def normalize_instant(value: str | int, what: str) -> str:
    """Accept Hudi's instant formats (``yyyyMMddHHmmss[SSS]``, ``yyyy-MM-dd HH:mm:ss[.SSS]``) as a 17-char instant.

    14-digit (second-granularity) instants are padded with ``000`` only for comparisons against 17-digit instants,
    which keeps ``20250331030642`` ≤ ``20250331030642808`` as Hudi's string comparison does.
    """
    text = str(value).strip()
    digits = re.sub(r"[-: .T]", "", text)
    if not digits.isdigit() or len(digits) not in (8, 14, 17):
        raise ReadError(f"{what} {value!r} is not a Hudi instant (expected yyyyMMddHHmmss[SSS])")
    if len(digits) == 8:
        digits += "000000"
    return digits


@dataclass(frozen=True, slots=True)
class TableReader:
    """Reads a table's data for a given timeline and listing."""

    storage: TableStorage
    config: TableConfig
    timeline: Timeline
    view: FileSystemView

    @classmethod
    def create(cls, storage: TableStorage, config: TableConfig, timeline: Timeline) -> TableReader:
        return cls(storage, config, timeline, FileSystemView(config, timeline, list_table_files(storage)))

    # -- schema --------------------------------------------------------------------------------------
    def _context(self, query_instant: str | None) -> SliceReadContext:
        avro = latest_avro_schema(self.config, self.timeline)
        reader_avro = with_meta_fields(avro) if avro is not None and self.config.populate_meta_fields else avro
        schema = arrow_schema_for(reader_avro)
        if schema is None:
            schema = pa.schema([])
        mode = EVENT_TIME if self.config.merge_mode == EVENT_TIME else COMMIT_TIME
        tl = self.timeline

        def committed(instant: str) -> bool:
            return tl.is_completed_commit_time(instant) or tl.is_before_timeline_start(instant)

        return SliceReadContext(
            storage=self.storage,
            schema=schema,
            reader_avro_schema=reader_avro,
            ordering_field=self.config.ordering_field,
            merge_mode=mode,
            query_instant=query_instant,
            is_committed=committed,
            record_key_fields=self.config.record_key_fields,
            complex_key=len(self.config.record_key_fields) > 1
            or "complex" in (self.config.key_generator or "").lower(),
        )

    def _check_retained(self, as_of: str) -> None:
        """Refuse time travel before the last clean's earliest retained commit, as Hudi's
        ``TimelineUtils.validateTimestampAsOf`` does: the files that state needs may be gone."""
        from evt_toolkit.services.clean import check_as_of

        check_as_of(self.timeline, self.view, as_of, self.storage.uri)

    def _project(self, table: pa.Table, columns: Sequence[str] | None) -> pa.Table:
        if columns is None:
            return table
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise ReadError(f"unknown column(s) {missing}; the table has {table.column_names}")
        return table.select(list(columns))

    def _concat(self, parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
        return pa.concat_tables(parts) if parts else schema.empty_table()

    # -- query types ---------------------------------------------------------------------------------
    def snapshot(self, as_of: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """Snapshot (``_rt``) view, optionally as of an instant (time travel)."""
        if as_of is not None:
            as_of = normalize_instant(as_of, "as_of")
            self._check_retained(as_of)
            query_instant: str | None = as_of
        else:
            last = self.timeline.last_completed_commit()
            query_instant = last.time if last is not None else None
        ctx = self._context(query_instant)
        if query_instant is None:
            return self._project(ctx.schema.empty_table(), columns)
        slices = self.view.latest_merged_file_slices(as_of)
        self.storage.prefetch(slice_paths(slices))
        parts = [read_file_slice(ctx, s) for s in slices]
        return self._project(self._concat(parts, ctx.schema), columns)

    def read_optimized(self, as_of: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """Read-optimized (``_ro``) view: latest committed base files only."""
        if as_of is not None:
            as_of = normalize_instant(as_of, "as_of")
            self._check_retained(as_of)
        ctx = self._context(as_of)
        bases = self.view.latest_base_files(as_of)
        self.storage.prefetch(b.path for b in bases)
        parts = [read_base_file(ctx, b) for b in bases]
        return self._project(self._concat(parts, ctx.schema), columns)

    def incremental(self, begin: str | None, end: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """Records committed in ``(begin, end]``: each record's latest version in the window, once.

        On timeline layout 1 the window bounds requested instant times and rows are kept when
        ``begin < _hoodie_commit_time <= end`` (Spark's ``MergeOnReadIncrementalRelation``); on layout 2 it bounds
        completion times and rows are kept when their commit is one of the admitted instants (hudi-rs, Spark 1.x).
        """
        b = normalize_instant(begin, "begin") if begin is not None else "0"
        e = normalize_instant(end, "end") if end is not None else None
        layout2 = self.config.timeline_layout >= 2
        admitted = []
        for inst in self.timeline.completed_commits():
            key = (inst.completion_time or inst.time) if layout2 else inst.time
            if key > b and (e is None or key <= e):
                admitted.append(inst)
        ctx0 = self._context(None)
        if not admitted:
            return self._project(ctx0.schema.empty_table(), columns)
        last = max(i.time for i in admitted)
        touched: set[tuple[str, str]] = set()
        for inst in admitted:
            meta = self.timeline.commit_metadata(inst)
            for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
                for st in stats or []:
                    fid = st.get("fileId")
                    if fid:
                        touched.add((partition or "", fid))
        admitted_times = frozenset(i.time for i in admitted)
        if layout2:

            def in_range(instant: str) -> bool:
                return instant in admitted_times
        else:

            def in_range(instant: str) -> bool:
                return instant > b and (e is None or instant <= e)

        # Like Spark's MergeOnReadIncrementalRelation (and hudi-rs), the log scanner only merges blocks of the
        # window's instants; rows are then kept by commit time. A later-arriving update that loses to a record
        # outside the window is therefore still reported as the window's change.
        ctx = replace(self._context(last), in_instant_range=in_range)
        slices: list[FileSlice] = [
            s for s in self.view.latest_merged_file_slices(last) if (s.partition_path, s.file_id) in touched
        ]
        self.storage.prefetch(slice_paths(slices))
        table = self._concat([read_file_slice(ctx, s) for s in slices], ctx.schema)
        commit_time = table["_hoodie_commit_time"]
        if layout2:
            mask = pc.is_in(commit_time, value_set=pa.array(sorted(admitted_times), pa.string()))
        else:
            mask = pc.greater(commit_time, b)
            if e is not None:
                mask = pc.and_(mask, pc.less_equal(commit_time, e))
        return self._project(table.filter(pc.fill_null(mask, False)), columns)
