"""``HudiTable``: the public facade over a Hudi table — reads, writes, compaction and table services.

It is a :class:`evt_toolkit.table.table.Table` (storage, config, timeline, file-system view) with entry points on
top; the layers below take a ``Table`` and never import this module (``docs/architecture.md``).

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> t.read(query_type="snapshot").num_rows  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any, Self

import pyarrow as pa

from evt_toolkit.compaction.event_times import event_time_field_for, slice_set
from evt_toolkit.compaction.executor import CompactionResult, ProgressEvent, run_compaction
from evt_toolkit.compaction.freshness import Freshness, completed_compactions, ro_freshness
from evt_toolkit.compaction.metrics import TableMetrics, metrics
from evt_toolkit.compaction.preview import CompactionPreview, preview
from evt_toolkit.compaction.schedule import ABANDONED_AFTER_S, ScheduledCompaction, schedule_compaction
from evt_toolkit.compaction.strategy import CompactionStrategy
from evt_toolkit.compaction.trigger import TimelineFacts
from evt_toolkit.compaction.unschedule import UnscheduleReport, unschedule_compaction
from evt_toolkit.compaction.validate import ValidationReport, validate_compaction
from evt_toolkit.errors import PlanValidationError
from evt_toolkit.read.query import read_table
from evt_toolkit.services.clean import CleanResult, clean
from evt_toolkit.services.metadata_table import MetadataTableReport, disable_metadata_table
from evt_toolkit.services.repair import RepairReport, repair_compactions
from evt_toolkit.services.rollback import RollbackResult, rollback
from evt_toolkit.spark.executor import spark_executor, write_dataframe
from evt_toolkit.table.guards import has_metadata_table, metadata_partitions
from evt_toolkit.table.inspect import Inspect
from evt_toolkit.table.table import Table, listed_files_may_be_gone
from evt_toolkit.table.timeline import Instant
from evt_toolkit.write.create import create_table
from evt_toolkit.write.writer import write

__all__ = ["HISTORY_SCHEMA", "CompactionNamespace", "HudiTable", "MetadataTableNamespace"]


class HudiTable(Table):
    """A Hudi table (Merge-On-Read or Copy-On-Write, table version 6, 8 or 9).

    Example:
        >>> import evt_toolkit as evt
        >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
        >>> t.read(query_type="snapshot").num_rows  # doctest: +SKIP
    """

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        name: str,
        record_key: str | Sequence[str],
        partition_by: str | Sequence[str] | None = None,
        ordering_field: str | None = None,
        event_time_field: str | None = None,
        buckets: int = 4,
        merge_mode: str = "commit_time",
        min_event_time_header: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Create an empty MERGE_ON_READ table (bucket index; version 6, or 8/9 with ``table_version=``); see
        :func:`evt_toolkit.write.create.create_table` for every argument.

        Example:
            >>> t = HudiTable.create("/tmp/trips", "trips", "uuid", partition_by="city", ordering_field="ts",
            ...                      event_time_field="ts")  # doctest: +SKIP
        """

        create_table(
            path,
            name,
            record_key,
            partition_by,
            ordering_field,
            event_time_field,
            buckets,
            merge_mode,
            min_event_time_header,
            storage_options=storage_options,
            **kwargs,
        )
        return cls.open(path, storage_options)

    def write(
        self,
        data: Any,
        operation: str = "upsert",
        spark: Any = None,
        *,
        executor: Any = None,
        options: Mapping[str, str] | None = None,
    ) -> str:
        """Write a batch (Arrow, pandas or Spark) as one deltacommit and return its instant.

        With ``spark``, the file-group tasks run as one Spark task per file group: a Spark DataFrame is keyed,
        de-duplicated and shuffled on Spark and never collected to the driver
        (:func:`evt_toolkit.spark.executor.write_dataframe`); Arrow or pandas data is planned on the driver and
        its tasks shipped to Spark (:func:`evt_toolkit.spark.executor.spark_executor`). Without ``spark`` the
        tasks run in this process. See :func:`evt_toolkit.write.writer.write`.

        Example:
            >>> t.write(pa.table({"uuid": ["a"], "ts": [1], "city": ["x"]}))  # doctest: +SKIP
            '20250101000000000'
        """

        # A write that fails after changing storage (its commit file written, then an error) must not leave this
        # object reading the table as it was: the listing and timeline are dropped whatever happens.
        try:
            if spark is not None and executor is None:
                if type(data).__module__.startswith("pyspark"):
                    return write_dataframe(self, data, operation, options=options)
                executor = spark_executor(spark)
            return write(self, data, operation, spark, executor=executor, options=options)
        finally:
            self.refresh()

    @cached_property
    def inspect(self) -> Inspect:
        """Metadata views (``log_blocks``) as Arrow tables."""
        return Inspect(self)

    def refresh(self) -> Self:
        """Forget the loaded timeline, listing and inspection caches (after another writer changed the table)."""
        self.__dict__.pop("inspect", None)
        return super().refresh()

    # -- reads ----------------------------------------------------------------------------------------------
    def read(
        self,
        query_type: str = "snapshot",
        as_of: str | None = None,
        begin: str | None = None,
        end: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Read the table with Hudi's query semantics.

        Args:
            query_type: ``snapshot`` (base merged with logs), ``read_optimized`` (base files only) or
                ``incremental`` (records committed in ``(begin, end]``).
            as_of: time travel instant for snapshot and read-optimized reads.
            begin: exclusive start of an incremental window (default, or ``earliest``/``000``: the beginning).
                A consumer passes its checkpoint: the previous window's end.
            end: inclusive end of an incremental window (default: the latest commit). Windows bound requested times
                on timeline layout 1 (v6) and completion times on layout 2 (v8/v9); the end is the next checkpoint.
            columns: projection, in the order wanted.

        Raises:
            ReadError: unknown query type, bad instant or unknown column; time travel or an incremental window a
                clean removed the files of; time travel at or after a write that has not completed, or (layout 1)
                an incremental window holding the requested time of one — its answer would change when it completes.
        """
        return read_table(self, query_type, as_of=as_of, begin=begin, end=end, columns=columns)

    # -- compaction, freshness, metrics ----------------------------------------------------------------------
    @cached_property
    def compaction(self) -> CompactionNamespace:
        """Preview, schedule, run, validate and unschedule compactions (:class:`CompactionNamespace`).

        Example:
            >>> t.compaction.pending()  # doctest: +SKIP
            []
        """

        return CompactionNamespace(self)

    def ro_freshness(self, now_ms: int | None = None) -> Freshness:
        """The RO view's freshness T, with late data; see :func:`evt_toolkit.compaction.freshness.ro_freshness`.

        Example:
            >>> t.ro_freshness().threshold_ms  # doctest: +SKIP
            1735689600000
        """

        with listed_files_may_be_gone():
            return ro_freshness(self, now_ms=now_ms)

    def metrics(self, now_ms: int | None = None) -> TableMetrics:
        """The RFC's compaction metrics; see :func:`evt_toolkit.compaction.metrics.metrics`.

        Example:
            >>> print(t.metrics().to_prometheus())  # doctest: +SKIP
        """

        with listed_files_may_be_gone():
            return metrics(self, now_ms)

    @cached_property
    def metadata_table(self) -> MetadataTableNamespace:
        """The table's metadata table: whether there is one, and disabling it (``MetadataTableNamespace``).

        Example:
            >>> t.metadata_table.disable().files_to_delete  # doctest: +SKIP
        """
        return MetadataTableNamespace(self)

    # -- table services: clean and rollback ------------------------------------------------------------------------
    def clean(
        self, policy: str = "KEEP_LATEST_COMMITS", retained: int | None = None, dry_run: bool = True
    ) -> CleanResult:
        """Delete old file slices with Hudi's cleaner policies, never a file a live link or pending plan needs.

        A dry run (the default) returns exactly the files the real run deletes; a real run writes a Hudi clean
        instant (``clean.requested``/``.inflight``/``clean``). See :func:`evt_toolkit.services.clean.clean`.

        Args:
            policy: ``KEEP_LATEST_COMMITS`` or ``KEEP_LATEST_FILE_VERSIONS``.
            retained: commits (default 10) or file versions (default 3) to retain.
            dry_run: only report.

        Returns:
            A :class:`evt_toolkit.services.clean.CleanResult`.

        Example:
            >>> t.clean(retained=2).files  # doctest: +SKIP
        """

        try:
            return clean(self, policy, retained, dry_run=dry_run)
        finally:
            if not dry_run:
                self.refresh()

    def rollback(self, instant: str) -> RollbackResult:
        """Roll back a failed deltacommit (or the last completed one) or an inflight compaction.

        See :func:`evt_toolkit.services.rollback.rollback`.

        Returns:
            A :class:`evt_toolkit.services.rollback.RollbackResult`.

        Example:
            >>> t.rollback("20250101000000000").deleted  # doctest: +SKIP
        """

        # A rollback that fails half-way (its target's commit file gone, some files deleted) must not leave this
        # object reading the target's data from its old listing and timeline.
        try:
            return rollback(self, instant)
        finally:
            self.refresh()


HISTORY_SCHEMA = pa.schema(
    [
        pa.field("instant", pa.string()),
        pa.field("completed_at", pa.string()),
        pa.field("strategy", pa.string()),
        pa.field("threshold_ms", pa.int64()),
        pa.field("threshold", pa.timestamp("ms", tz="UTC")),
        pa.field("link_mode", pa.string()),
        pa.field("link_timing", pa.string()),
        pa.field("operations", pa.int64()),
        pa.field("log_files_compacted", pa.int64()),
        pa.field("links", pa.int64()),
        pa.field("records_written", pa.int64()),
        pa.field("bytes_written", pa.int64()),
    ]
)
"""Columns of :meth:`CompactionNamespace.history`: one row per completed compaction, oldest first."""


def _instant_of(c: ScheduledCompaction | str | Instant) -> str:
    if isinstance(c, str) and c:
        return c
    if isinstance(c, Instant):
        return c.time
    if isinstance(c, ScheduledCompaction):
        return c.instant
    raise PlanValidationError(
        f"expected a scheduled compaction, an Instant or an instant string such as '20250101000000000', not {c!r}"
    )


class CompactionNamespace:
    """Compaction operations of one table (``table.compaction``).

    Args:
        table: the table.

    Example:
        >>> t.compaction.pending()  # doctest: +SKIP
        []
    """

    def __init__(self, table: HudiTable) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"CompactionNamespace({self._table!r})"

    def _field(self, strategy: CompactionStrategy) -> str | None:
        return event_time_field_for(self._table, strategy)

    # -- no writes -----------------------------------------------------------------------------------------------------
    def preview(self, strategy: CompactionStrategy, **kwargs: Any) -> CompactionPreview:
        """What ``strategy`` would plan now — per slice selection, bytes, links and RO freshness; writes nothing.

        Pending compactions and clusterings are passed on, so the preview says when they void the freshness.

        Args:
            strategy: any compaction strategy.
            **kwargs: passed to :func:`evt_toolkit.compaction.preview.preview` (``now_ms``, ``link_mode``,
                ``compression_ratio``, ``pending_table_services``).

        Example:
            >>> p = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold="2025-01-01"))  # doctest: +SKIP
            >>> p.summary.logs_compacted  # doctest: +SKIP
            14
        """
        table = self._table
        with listed_files_may_be_gone():
            slices = slice_set(table, self._field(strategy))
        if "pending_table_services" not in kwargs:
            tl = table.timeline
            kwargs["pending_table_services"] = tuple(
                i.time for i in tl.pending_compactions() + tl.pending_clustering() + tl.pending_log_compactions()
            )
        return preview(slices, strategy, **kwargs)

    def pending(self) -> list[Instant]:
        """Requested or inflight compactions, oldest first."""
        return self._table.timeline.pending_compactions()

    def history(self) -> pa.Table:
        """Completed compactions (:data:`HISTORY_SCHEMA`), with threshold, link settings, operations and bytes.

        Example:
            >>> t.compaction.history().select(["instant", "threshold", "operations"]).to_pylist()  # doctest: +SKIP
        """
        rows = completed_compactions(self._table)
        cols: dict[str, list[Any]] = {f.name: [] for f in HISTORY_SCHEMA}
        for r in rows:
            cols["instant"].append(r.instant)
            cols["completed_at"].append(r.completed_at)
            cols["strategy"].append(r.strategy)
            cols["threshold_ms"].append(r.threshold_ms)
            cols["threshold"].append(r.threshold_ms)
            cols["link_mode"].append(r.link_mode)
            cols["link_timing"].append(r.link_timing)
            cols["operations"].append(r.operations)
            cols["log_files_compacted"].append(r.log_files_compacted)
            cols["links"].append(r.links)
            cols["records_written"].append(r.records_written)
            cols["bytes_written"].append(r.bytes_written)
        return pa.table(cols, schema=HISTORY_SCHEMA)

    def can_schedule(self, instant: str) -> TimelineFacts:
        """The timeline facts a schedule at ``instant`` would be judged on (pending services, inflight writes)."""
        return TimelineFacts.from_timeline(self._table.timeline, instant)

    def validate(self, c: ScheduledCompaction | str | Instant) -> ValidationReport:
        """Check a compaction (pending or completed): plan, prefix rule, links, files.

        Example:
            >>> t.compaction.validate("20250101000000000").ok  # doctest: +SKIP
            True
        """

        return validate_compaction(self._table, _instant_of(c))

    # -- writes --------------------------------------------------------------------------------------------------------
    def schedule(
        self,
        strategy: CompactionStrategy,
        link_mode: str = "copy",
        link_timing: str = "schedule",
        exact_split: bool = False,
        **kwargs: Any,
    ) -> ScheduledCompaction | None:
        """Write ``C.compaction.requested`` (and, with ``link_timing="schedule"``, the links) for ``strategy``.

        Args:
            strategy: the compaction strategy.
            link_mode: ``copy`` (default) or ``symlink``.
            link_timing: ``schedule`` (default) or ``execute``.
            exact_split: keep records with event time > T out of the new base files.
            **kwargs: passed on (``instant``, ``now_ms``).

        Returns:
            The scheduled compaction, or ``None`` when there is nothing to compact.

        Raises:
            PendingTableServiceError: a compaction/clustering is pending or a write is inflight.

        Example:
            >>> c = t.compaction.schedule(EventTimeBasedCompactionStrategy(data_latency=0))  # doctest: +SKIP
            >>> c.instant, c.threshold  # doctest: +SKIP
        """

        try:
            return schedule_compaction(
                self._table,
                strategy,
                link_mode=link_mode,
                link_timing=link_timing,
                exact_split=exact_split,
                **kwargs,
            )
        finally:
            self._table.refresh()

    def run(
        self,
        c: ScheduledCompaction | str | Instant,
        spark: Any = None,
        progress: Callable[[ProgressEvent], None] | None = None,
        **kwargs: Any,
    ) -> CompactionResult:
        """Execute a scheduled compaction (in Spark when ``spark`` is given) and commit it.

        Args:
            c: the scheduled compaction or its instant.
            spark: a Spark session (one task per plan operation), else in-process.
            progress: called with each :class:`~evt_toolkit.compaction.executor.ProgressEvent`.
            **kwargs: passed on (``exact_split``: defaults to how a :class:`ScheduledCompaction` was planned).

        Example:
            >>> r = t.compaction.run(c, progress=lambda e: print(e.stage, e.done, e.total))  # doctest: +SKIP
        """

        try:
            return run_compaction(self._table, _instant_of(c), spark=spark, progress=progress, **kwargs)
        finally:
            self._table.refresh()

    def repair(self, dry_run: bool = True, older_than_s: float = ABANDONED_AFTER_S) -> RepairReport:
        """Put compaction artifacts back in order (dry run by default): delete abandoned schedules' links, make
        pending plans' missing links again, drop ownership records of completed instants; see
        :func:`evt_toolkit.services.repair.repair_compactions`.

        Example:
            >>> t.compaction.repair().clean  # doctest: +SKIP
            True
        """
        try:
            return repair_compactions(self._table, dry_run=dry_run, older_than_s=older_than_s)
        finally:
            if not dry_run:
                self._table.refresh()

    def unschedule(self, c: ScheduledCompaction | str | Instant, dry_run: bool = True) -> UnscheduleReport:
        """Remove a pending compaction that has not started (dry run by default: lists what would be deleted).

        Example:
            >>> t.compaction.unschedule(c).files_to_delete  # doctest: +SKIP
            >>> t.compaction.unschedule(c, dry_run=False).deleted  # doctest: +SKIP
        """

        try:
            return unschedule_compaction(self._table, _instant_of(c), dry_run=dry_run)
        finally:
            if not dry_run:
                self._table.refresh()


class MetadataTableNamespace:
    """The metadata table of one table (``table.metadata_table``): the toolkit does not maintain one, and refuses to
    write tables that have one; :meth:`disable` is Hudi's documented way out.

    Args:
        table: the table.
    """

    def __init__(self, table: HudiTable) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"MetadataTableNamespace({self._table!r})"

    def exists(self) -> bool:
        """Whether the table has (or declares) a metadata table."""
        return has_metadata_table(self._table)

    def partitions(self) -> tuple[str, ...]:
        """The metadata-table partitions ``hoodie.properties`` lists (ready or inflight)."""
        return metadata_partitions(self._table)

    def disable(self, dry_run: bool = True) -> MetadataTableReport:
        """Disable the metadata table as Hudi does (dry run by default); see
        :func:`evt_toolkit.services.metadata_table.disable_metadata_table`.

        Example:
            >>> t.metadata_table.disable(dry_run=False).partitions  # doctest: +SKIP
            ('files', 'column_stats')
        """
        try:
            return disable_metadata_table(self._table, dry_run=dry_run)
        finally:
            self._table.refresh()
