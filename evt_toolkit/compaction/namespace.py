"""``table.compaction``: preview, schedule, run, validate and unschedule compactions of one table.

A thin, stateless front over the compaction modules: every call reads the table's current timeline, and every call
that writes refreshes the table afterwards so ``table.timeline`` and ``table.file_slices()`` show the result.

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> s = evt.EventTimeBasedCompactionStrategy(data_latency=3_600_000)  # doctest: +SKIP
    >>> print(t.compaction.preview(s).summary_text())  # doctest: +SKIP
    >>> c = t.compaction.schedule(s)  # doctest: +SKIP
    >>> result = t.compaction.run(c)  # doctest: +SKIP
    >>> t.compaction.validate(c).ok, t.ro_freshness().threshold_ms == c.threshold  # doctest: +SKIP
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from evt_toolkit.compaction.event_times import slice_infos
from evt_toolkit.compaction.freshness import completed_compactions
from evt_toolkit.compaction.preview import CompactionPreview, preview
from evt_toolkit.compaction.strategy import CompactionStrategy
from evt_toolkit.compaction.trigger import TimelineFacts
from evt_toolkit.table.timeline import Instant

if TYPE_CHECKING:
    from evt_toolkit.compaction.executor import CompactionResult, ProgressEvent
    from evt_toolkit.compaction.schedule import ScheduledCompaction
    from evt_toolkit.compaction.validate import UnscheduleReport, ValidationReport
    from evt_toolkit.table.table import Table

__all__ = ["HISTORY_SCHEMA", "CompactionNamespace"]

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
    if isinstance(c, str):
        return c
    if isinstance(c, Instant):
        return c.time
    return str(c.instant)


class CompactionNamespace:
    """Compaction operations of one table (``table.compaction``).

    Args:
        table: the table.

    Example:
        >>> t.compaction.pending()  # doctest: +SKIP
        []
    """

    def __init__(self, table: Table) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"CompactionNamespace({self._table!r})"

    def _field(self, strategy: CompactionStrategy) -> str | None:
        return getattr(strategy, "event_time_field", None) or self._table.config.event_time_field

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
        slices = slice_infos(table, self._field(strategy))
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
        from evt_toolkit.compaction.validate import validate_compaction

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
        from evt_toolkit.compaction.schedule import schedule_compaction

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
        from evt_toolkit.compaction.executor import run_compaction

        if "exact_split" not in kwargs and getattr(c, "exact_split", False):
            # A plan scheduled with exact_split reserved the carry-over slot; run it the way it was planned.
            kwargs["exact_split"] = True
        try:
            return run_compaction(self._table, _instant_of(c), spark=spark, progress=progress, **kwargs)
        finally:
            self._table.refresh()

    def unschedule(self, c: ScheduledCompaction | str | Instant, dry_run: bool = True) -> UnscheduleReport:
        """Remove a pending compaction that has not started (dry run by default: lists what would be deleted).

        Example:
            >>> t.compaction.unschedule(c).files_to_delete  # doctest: +SKIP
            >>> t.compaction.unschedule(c, dry_run=False).deleted  # doctest: +SKIP
        """
        from evt_toolkit.compaction.validate import unschedule_compaction

        try:
            return unschedule_compaction(self._table, _instant_of(c), dry_run=dry_run)
        finally:
            if not dry_run:
                self._table.refresh()
