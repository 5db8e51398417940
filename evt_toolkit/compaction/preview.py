"""What a compaction would do, without doing it: per-slice selection, bytes, links and RO freshness.

:func:`preview` answers "what would this strategy plan?" with no writes at all; :class:`PreviewModel` keeps the
columnar log table and its numpy arrays so that moving a threshold slider recomputes everything in milliseconds,
even for 100k log files. The event-time selection is the prefix rule of :mod:`evt_toolkit.compaction.prefix` in
its vectorized form, which the tests check against the scalar rule.

Figures, per slice (and summed in :class:`PreviewSummary`):

* logs compacted / kept, with names;
* ``bytes_read`` = base file + compacted logs (what the executor reads);
* ``bytes_written_estimate`` = base file + compacted log bytes × ``hoodie.logfile.to.parquet.compression.ratio``
  (0.35). Hudi uses that ratio to size log data as Parquet (``SparkUpsertDeltaCommitPartitioner``
  ``convertLogFilesSizeToExpectedParquetSize``); updates replacing records in the base make the real file smaller,
  so this is an upper-leaning estimate. Hudi's own plan metric ``TOTAL_IO_WRITE_MB`` (base size only) is
  in the plan operations;
* links to create: one per leftover log of a compacted slice; bytes copied in ``copy`` mode, 0 with ``symlink``;
* the same figures for a *full* compaction of every candidate slice, for comparison.

RO freshness: an event-time plan at T lets the RO view promise "every event ≤ T" only if plans run serially (no
compaction or clustering pending), every candidate slice is plannable (none held by a pending compaction), every
log left behind has a *known* min event time (> T by construction), and no log holds blocks of an uncommitted
write. Otherwise ``ro_freshness_ms`` is ``None`` and ``freshness_blockers`` says why.

Example:
    >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
    >>> from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy as E
    >>> s = SliceInfo("p", "f", "1", "b.parquet", 1000, (L.synthetic("f", 1, size=100, min_event_time=10),
    ...                                                   L.synthetic("f", 2, size=100, min_event_time=90)))
    >>> p = preview([s], E(threshold=50), now_ms=100)
    >>> p.summary.logs_compacted, p.summary.links, p.summary.ro_freshness_ms
    (1, 1, 50)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.compaction.model import LOG_FILES_SCHEMA, SliceInfo, SliceSet
from evt_toolkit.compaction.plan import LINK_MODES
from evt_toolkit.compaction.prefix import prefix_lengths_np, selected_mask_np
from evt_toolkit.compaction.strategy import (
    DEFAULT_LOGFILE_TO_PARQUET_COMPRESSION_RATIO,
    CompactionStrategy,
    EventTimeBasedCompactionStrategy,
    InvalidThresholdError,
    iso_ms,
    to_epoch_ms,
)
from evt_toolkit.errors import PlanValidationError
from evt_toolkit.format.text import format_bytes

__all__ = [
    "PER_LOG_SCHEMA",
    "PER_SLICE_SCHEMA",
    "CompactionPreview",
    "PreviewModel",
    "PreviewSummary",
    "preview",
]

PER_SLICE_SCHEMA = pa.schema(
    [
        pa.field("slice_index", pa.int32(), nullable=False),
        pa.field("partition_path", pa.string()),
        pa.field("file_id", pa.string()),
        pa.field("base_instant", pa.string()),
        pa.field("base_file", pa.string()),
        pa.field("base_file_size", pa.int64(), nullable=False),
        pa.field("pending_compaction", pa.string()),
        pa.field("candidate", pa.bool_(), nullable=False),
        pa.field("selected", pa.bool_(), nullable=False),
        pa.field("partial", pa.bool_(), nullable=False),
        pa.field("num_log_files", pa.int32(), nullable=False),
        pa.field("logs_compacted", pa.int32(), nullable=False),
        pa.field("logs_remaining", pa.int32(), nullable=False),
        pa.field("logs_forced", pa.int32(), nullable=False),
        pa.field("compacted_log_files", pa.list_view(pa.string())),
        pa.field("remaining_log_files", pa.list_view(pa.string())),
        pa.field("total_log_size", pa.int64(), nullable=False),
        pa.field("compacted_log_size", pa.int64(), nullable=False),
        pa.field("remaining_log_size", pa.int64(), nullable=False),
        pa.field("bytes_read", pa.int64(), nullable=False),
        pa.field("bytes_written_estimate", pa.int64(), nullable=False),
        pa.field("links", pa.int32(), nullable=False),
        pa.field("link_bytes_copied", pa.int64(), nullable=False),
        pa.field("min_event_time", pa.int64()),
        pa.field("min_event_time_remaining", pa.int64()),
        pa.field("unknown_min_remaining", pa.int32(), nullable=False),
        pa.field("uncommitted_blocks", pa.int32(), nullable=False),
        pa.field("full_logs_compacted", pa.int32(), nullable=False),
        pa.field("full_bytes_read", pa.int64(), nullable=False),
        pa.field("full_bytes_written_estimate", pa.int64(), nullable=False),
    ]
)
"""Columns of :attr:`CompactionPreview.per_slice`: one row per input slice. ``candidate``: has logs and no
pending compaction; ``selected``: the plan would hold an operation for it; ``partial``: and leave logs behind;
``logs_forced``: compacted only because a later log had to be (no data, unknown or > T); ``min_event_time``: over
all its logs with data; ``min_event_time_remaining``: over the logs it would keep; ``full_*``: a full compaction."""

PER_LOG_SCHEMA = pa.schema(
    [
        *LOG_FILES_SCHEMA,
        pa.field("unknown_min", pa.bool_(), nullable=False),
        pa.field("selected_by_threshold", pa.bool_(), nullable=False),
        pa.field("compacted", pa.bool_(), nullable=False),
        pa.field("forced", pa.bool_(), nullable=False),
        pa.field("link_version", pa.int32()),
    ]
)
"""Columns of :attr:`CompactionPreview.per_log`: the log table (:data:`~evt_toolkit.compaction.model.LOG_FILES_SCHEMA`)
plus ``unknown_min`` (data but no known min event time), ``selected_by_threshold`` (data with min ≤ T),
``compacted``, ``forced`` (compacted without being selected) and ``link_version`` (the version its link would get in
the new slice, null when not linked)."""


@dataclass(frozen=True, slots=True)
class PreviewSummary:
    """Table-wide figures of a preview (sums of :data:`PER_SLICE_SCHEMA` columns, plus freshness).

    Attributes:
        strategy: the strategy's class name.
        threshold_ms: T (event-time strategies), else ``None``.
        threshold_within_bound: T ≤ compaction time − data latency (a schedule would refuse otherwise).
        link_mode: ``copy`` or ``symlink``.
        ro_freshness_ms: the RO freshness the plan would give (T), ``None`` when it cannot be promised.
        freshness_blockers: why not, in words.
        full_ro_freshness_ms: after a full compaction, the max ingested event time (if recorded).
        logs_corrupt_compacted: compacted logs holding a corrupt block (a torn append): the schedule refuses the
            plan (``LogFormatError``) and writes nothing.
    """

    strategy: str
    threshold_ms: int | None
    threshold_within_bound: bool
    link_mode: str
    slices_total: int
    slices_candidate: int
    slices_selected: int
    slices_partial: int
    slices_pending_compaction: int
    logs_total: int
    logs_compacted: int
    logs_remaining_in_plan: int
    logs_forced: int
    unknown_min_logs: int
    unknown_min_remaining: int
    links: int
    bytes_read: int
    bytes_written_estimate: int
    link_bytes_copied: int
    ro_freshness_ms: int | None
    freshness_blockers: tuple[str, ...]
    full_slices: int
    full_logs_compacted: int
    full_bytes_read: int
    full_bytes_written_estimate: int
    full_ro_freshness_ms: int | None
    compression_ratio: float = DEFAULT_LOGFILE_TO_PARQUET_COMPRESSION_RATIO
    logs_corrupt_compacted: int = 0

    @property
    def copy_costs_more(self) -> bool:
        """The plan writes more (base files plus link copies) than a full compaction would: worth a warning."""
        return bool(self.link_bytes_copied) and (
            self.bytes_written_estimate + self.link_bytes_copied > self.full_bytes_written_estimate
        )

    def text(self) -> str:
        """A few lines for a notebook or the CLI."""
        t = "-" if self.threshold_ms is None else f"{iso_ms(self.threshold_ms)} ({self.threshold_ms})"
        lines = [
            f"strategy {self.strategy}, threshold T = {t}, link mode {self.link_mode}",
            f"slices: {self.slices_selected} of {self.slices_candidate} candidates compacted "
            f"({self.slices_partial} partially); {self.slices_pending_compaction} held by a pending compaction",
            f"logs: {self.logs_compacted} of {self.logs_total} compacted ({self.logs_forced} forced by the prefix "
            f"rule), {self.links} linked into new slices",
            f"bytes: read {format_bytes(self.bytes_read)}, write ≈ {format_bytes(self.bytes_written_estimate)} "
            f"(ratio {self.compression_ratio}), copy for links {format_bytes(self.link_bytes_copied)}",
            f"full compaction: {self.full_logs_compacted} logs in {self.full_slices} slices, read "
            f"{format_bytes(self.full_bytes_read)}, write ≈ {format_bytes(self.full_bytes_written_estimate)}",
        ]
        if self.logs_corrupt_compacted:
            lines.append(
                f"refused: {self.logs_corrupt_compacted} log(s) to compact hold a corrupt block (a torn append); "
                "the schedule writes nothing"
            )
        if self.ro_freshness_ms is not None:
            lines.append(f"RO freshness after the plan: every event ≤ {iso_ms(self.ro_freshness_ms)}")
        else:
            lines.append("RO freshness: not promised — " + ("; ".join(self.freshness_blockers) or "no threshold"))
        return "\n".join(lines)


@dataclass(frozen=True)
class CompactionPreview:
    """The outcome of :func:`preview`: Arrow tables with declared schemas and a summary.

    Attributes:
        per_slice: :data:`PER_SLICE_SCHEMA`.
        per_log: :data:`PER_LOG_SCHEMA`.
        summary: the table-wide figures.
    """

    per_slice: pa.Table
    per_log: pa.Table
    summary: PreviewSummary
    elapsed_ms: float = field(default=0.0, compare=False)

    def summary_text(self) -> str:
        """:meth:`PreviewSummary.text`."""
        return self.summary.text()

    @property
    def threshold_ms(self) -> int | None:
        """T of the preview (event-time strategies)."""
        return self.summary.threshold_ms

    @property
    def ro_freshness_ms(self) -> int | None:
        """The RO freshness the plan would give."""
        return self.summary.ro_freshness_ms


_I64_MAX = np.iinfo(np.int64).max


def _np(column: pa.ChunkedArray | pa.Array, dtype: type) -> npt.NDArray[Any]:
    """A non-null Arrow column as a numpy array of ``dtype``."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


class PreviewModel:
    """A preview kept live: the columnar log table is built once, :meth:`set_threshold` recomputes in milliseconds.

    Args:
        slices: the latest (merged) file slices (:func:`evt_toolkit.compaction.event_times.slice_infos`).
        strategy: any strategy; only event-time strategies accept :meth:`set_threshold`.
        now_ms: the compaction time used to resolve T (default: now).
        link_mode: ``copy`` or ``symlink``.
        pending_table_services: pending compaction/clustering instants (serial rule); e.g. from
            :class:`~evt_toolkit.compaction.trigger.TimelineFacts`.
        compression_ratio: ``hoodie.logfile.to.parquet.compression.ratio``.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
        >>> from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy as E
        >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=10),))
        >>> m = PreviewModel([s], E(threshold=5), now_ms=100)
        >>> m.set_threshold(20).summary.logs_compacted
        1
    """

    def __init__(
        self,
        slices: Sequence[SliceInfo] | SliceSet,
        strategy: CompactionStrategy,
        *,
        now_ms: int | None = None,
        link_mode: str = "copy",
        pending_table_services: Sequence[str] = (),
        compression_ratio: float = DEFAULT_LOGFILE_TO_PARQUET_COMPRESSION_RATIO,
    ) -> None:
        if link_mode not in LINK_MODES:
            raise PlanValidationError(f"link_mode must be one of {', '.join(LINK_MODES)}, got {link_mode!r}")
        if not compression_ratio > 0:
            raise PlanValidationError(f"compression ratio must be positive, got {compression_ratio}")
        self.slices: SliceSet = slices if isinstance(slices, SliceSet) else SliceSet.from_infos(slices)
        self.strategy = strategy
        self.now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        self.link_mode = link_mode
        self.pending_table_services = tuple(pending_table_services)
        self.compression_ratio = compression_ratio
        self.log_files = self.slices.log_files
        self._build_arrays()
        self.max_event_time_ms: int | None = pc.max(self.log_files.column("max_event_time")).as_py()
        self.threshold_ms: int | None = None
        self._fixed_prefix: npt.NDArray[np.int64] | None = None
        if isinstance(strategy, EventTimeBasedCompactionStrategy):
            self.threshold_ms = strategy.resolve_threshold(self.now_ms, self.max_event_time_ms)
        else:
            # Hudi's strategies take whole slices; which ones survive orderAndFilter is decided once.
            index = {id(s): i for i, s in enumerate(self.slices)}
            fixed = np.zeros(len(self.slices), dtype=np.int64)
            for op in strategy.select_operations(self.slices):
                fixed[index[id(op.slice)]] = len(op.to_compact)
            self._fixed_prefix = fixed

    # -- columnar state, built once ---------------------------------------------------------------------------------
    def _build_arrays(self) -> None:
        lt = self.log_files
        st = self.slices.slices
        n_slices = st.num_rows
        self._slice_index = _np(lt.column("slice_index"), np.int64)
        self._position = _np(lt.column("position"), np.int64)
        self._size = _np(lt.column("size"), np.int64)
        self._has_data = _np(lt.column("has_data"), bool)
        mins = lt.column("min_event_time").combine_chunks()
        self._known = np.asarray(mins.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        self._min = np.asarray(mins.fill_null(_I64_MAX).to_numpy(zero_copy_only=False), dtype=np.int64)
        self._uncommitted = _np(lt.column("uncommitted_blocks"), np.int64)
        self._corrupt = _np(lt.column("corrupt_blocks"), np.int64) > 0
        self._unknown = self._has_data & ~self._known
        self._names = lt.column("log_file").combine_chunks()
        self._n_logs = _np(st.column("num_log_files"), np.int64)
        self._start = np.zeros(n_slices, dtype=np.int64)
        if n_slices:
            self._start[1:] = np.cumsum(self._n_logs)[:-1]
        # Slices with logs, and where their rows start: the segments of the per-slice reductions.
        self._nonempty = self._n_logs > 0
        self._seg_start = self._start[self._nonempty]
        has_base = st.column("base_file").is_valid().to_numpy(zero_copy_only=False)
        base_size = st.column("base_file_size").fill_null(0)
        self._base_size = np.where(has_base, _np(base_size, np.int64), 0)
        self._pending_names = st.column("pending_compaction")
        self._pending = np.asarray(self._pending_names.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        self._candidate = (self._n_logs > 0) & ~self._pending
        self._csum_size = np.concatenate([[0], np.cumsum(self._size)])
        self._csum_unknown = np.concatenate([[0], np.cumsum(self._unknown.astype(np.int64))])
        self._total_log = self._csum_size[self._start + self._n_logs] - self._csum_size[self._start]
        csum_unc = np.concatenate([[0], np.cumsum(self._uncommitted)])
        self._total_unc = csum_unc[self._start + self._n_logs] - csum_unc[self._start]
        # Min event times where they count (data, known), _I64_MAX elsewhere.
        self._usable_min = np.where(self._has_data & self._known, self._min, _I64_MAX)
        self._slice_min = self._group_min(self._usable_min)
        self._unknown_arr = pa.array(self._unknown)
        self._meta = st.select(["slice_index", "partition_path", "file_id", "base_instant", "base_file"])

    def _group_min(self, values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Per slice, the minimum of ``values`` over its rows (``_I64_MAX`` for a slice without logs)."""
        out = np.full(len(self._n_logs), _I64_MAX, dtype=np.int64)
        if len(values):
            # Rows are grouped by slice, so one reduceat over the slices that have rows does it.
            out[self._nonempty] = np.minimum.reduceat(values, self._seg_start)
        return out

    def _range_sum(self, csum: npt.NDArray[np.int64], length: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Per slice, the sum over its first ``length`` logs (rows are sorted by slice, then position)."""
        result: npt.NDArray[np.int64] = csum[self._start + length] - csum[self._start]
        return result

    # -- recompute ------------------------------------------------------------------------------------------------
    def set_threshold(self, threshold: int | str | object) -> CompactionPreview:
        """Preview the event-time plan at ``threshold`` (epoch ms, datetime or ISO string); cheap.

        Raises:
            InvalidThresholdError: the strategy is not event-time based, or the threshold is malformed.
        """
        if not isinstance(self.strategy, EventTimeBasedCompactionStrategy):
            raise InvalidThresholdError(f"{self.strategy!r} does not take an event-time threshold")
        self.threshold_ms = to_epoch_ms(threshold)  # type: ignore[arg-type]
        return self.preview()

    def threshold_range(self) -> tuple[int, int] | None:
        """Smallest and largest known min event time over logs with data (a slider's range), if any."""
        usable = self._has_data & self._known
        if not usable.any():
            return None
        vals = self._min[usable]
        return int(vals.min()), int(vals.max())

    def preview(self) -> CompactionPreview:
        """The preview at the current threshold."""
        started = time.perf_counter()
        n_slices = len(self.slices)
        t = self.threshold_ms
        if self._fixed_prefix is not None:
            prefix = self._fixed_prefix
            sel_row = np.zeros(len(self._slice_index), dtype=bool)
        else:
            assert t is not None
            sel_row = selected_mask_np(self._has_data, self._min, self._known, t)
            prefix = prefix_lengths_np(self._slice_index, self._position, sel_row, n_slices)
            prefix = np.where(self._candidate, prefix, 0)
        selected = prefix > 0
        remaining = self._n_logs - prefix
        prefix_row = prefix[self._slice_index]  # each log's slice's prefix length
        compacted_row = self._position < prefix_row
        compacted_size = self._range_sum(self._csum_size, prefix)
        remaining_size = self._total_log - compacted_size
        links = np.where(selected, remaining, 0)
        link_bytes = np.where(selected, remaining_size, 0) if self.link_mode == "copy" else np.zeros(n_slices, np.int64)
        bytes_read = np.where(selected, self._base_size + compacted_size, 0)
        written = np.where(
            selected, self._base_size + np.rint(compacted_size * self.compression_ratio).astype(np.int64), 0
        )
        forced_row = compacted_row & ~sel_row if self._fixed_prefix is None else np.zeros_like(compacted_row)
        csum_forced = np.concatenate([[0], np.cumsum(forced_row, dtype=np.int64)])
        forced = self._range_sum(csum_forced, self._n_logs)
        unknown_remaining = self._range_sum(self._csum_unknown, self._n_logs) - self._range_sum(
            self._csum_unknown, prefix
        )
        min_remaining = self._group_min(np.where(compacted_row, _I64_MAX, self._usable_min))
        full_read = np.where(self._candidate, self._base_size + self._total_log, 0)
        full_written = np.where(
            self._candidate, self._base_size + np.rint(self._total_log * self.compression_ratio).astype(np.int64), 0
        )
        full_logs = np.where(self._candidate, self._n_logs, 0)

        def nullable_min(a: npt.NDArray[np.int64]) -> pa.Array:
            return pa.array(a, pa.int64(), mask=a == _I64_MAX)

        mask_arr = pa.array(compacted_row, pa.bool_())
        # A slice's compacted logs are a prefix of its rows and its remaining logs the rest: both list columns are
        # views (offset, size) over the one array of names, so no name is copied at any threshold.
        i32 = np.int32
        comp_start = self._start.astype(i32)
        comp_names = pa.ListViewArray.from_arrays(pa.array(comp_start), pa.array(prefix.astype(i32)), self._names)
        rem_names = pa.ListViewArray.from_arrays(
            pa.array(comp_start + prefix.astype(i32)), pa.array(remaining.astype(i32)), self._names
        )
        per_slice = pa.Table.from_arrays(
            [
                self._meta.column("slice_index"),
                self._meta.column("partition_path"),
                self._meta.column("file_id"),
                self._meta.column("base_instant"),
                self._meta.column("base_file"),
                pa.array(self._base_size),
                self._pending_names,
                pa.array(self._candidate),
                pa.array(selected),
                pa.array(selected & (remaining > 0)),
                pa.array(self._n_logs.astype(i32)),
                pa.array(prefix.astype(i32)),
                pa.array(remaining.astype(i32)),
                pa.array(forced.astype(i32)),
                comp_names,
                rem_names,
                pa.array(self._total_log),
                pa.array(compacted_size),
                pa.array(remaining_size),
                pa.array(bytes_read),
                pa.array(written),
                pa.array(links.astype(i32)),
                pa.array(link_bytes),
                nullable_min(self._slice_min),
                nullable_min(min_remaining),
                pa.array(unknown_remaining.astype(i32)),
                pa.array(self._total_unc.astype(i32)),
                pa.array(full_logs.astype(i32)),
                pa.array(full_read),
                pa.array(full_written),
            ],
            schema=PER_SLICE_SCHEMA,
        )
        linked_row = ~compacted_row & (prefix_row > 0)
        link_version = self._position - prefix_row + 1
        per_log = self.log_files
        for name, arr in (
            ("unknown_min", self._unknown_arr),
            ("selected_by_threshold", pa.array(sel_row)),
            ("compacted", mask_arr),
            ("forced", pa.array(forced_row)),
            ("link_version", pa.array(link_version.astype(i32), pa.int32(), mask=~linked_row)),
        ):
            per_log = per_log.append_column(PER_LOG_SCHEMA.field(name), arr)
        summary = self._summary(
            prefix,
            selected,
            remaining,
            forced,
            unknown_remaining,
            links,
            bytes_read,
            written,
            link_bytes,
            full_read,
            full_written,
            full_logs,
        )
        summary = replace(summary, logs_corrupt_compacted=int((self._corrupt & compacted_row).sum()))
        return CompactionPreview(per_slice, per_log, summary, (time.perf_counter() - started) * 1000)

    def _summary(
        self,
        prefix: npt.NDArray[np.int64],
        selected: npt.NDArray[np.bool_],
        remaining: npt.NDArray[np.int64],
        forced: npt.NDArray[np.int64],
        unknown_remaining: npt.NDArray[np.int64],
        links: npt.NDArray[np.int64],
        bytes_read: npt.NDArray[np.int64],
        written: npt.NDArray[np.int64],
        link_bytes: npt.NDArray[np.int64],
        full_read: npt.NDArray[np.int64],
        full_written: npt.NDArray[np.int64],
        full_logs: npt.NDArray[np.int64],
    ) -> PreviewSummary:
        t = self.threshold_ms
        strategy = self.strategy
        latency = strategy.data_latency_ms if isinstance(strategy, EventTimeBasedCompactionStrategy) else None
        within = t is None or t <= self.now_ms - (latency or 0)
        blockers: list[str] = []
        fresh: int | None = None
        if isinstance(strategy, EventTimeBasedCompactionStrategy) and t is not None:
            if self.pending_table_services:
                blockers.append(
                    f"compaction/clustering {', '.join(self.pending_table_services)} pending (plans must be serial)"
                )
            pending = int((self._pending & (self._n_logs > 0)).sum())
            if pending:
                blockers.append(f"{pending} file slice(s) with logs are held by a pending compaction")
            unknown = int(unknown_remaining.sum())
            if unknown:
                blockers.append(f"{unknown} log file(s) left behind have no known min event time")
            unc = int((self._total_unc > 0).sum())
            if unc:
                blockers.append(f"{unc} file slice(s) hold blocks of writes not yet committed")
            if not within:
                blockers.append(
                    f"T is later than compaction time − data latency ({iso_ms(self.now_ms - (latency or 0))})"
                )
            if not blockers:
                fresh = t
        else:
            blockers.append(f"{strategy.name} does not bound event time")
        all_fresh_known = bool(self._n_logs.sum()) and self.max_event_time_ms is not None
        return PreviewSummary(
            strategy=strategy.name,
            threshold_ms=t,
            threshold_within_bound=within,
            link_mode=self.link_mode,
            slices_total=len(self.slices),
            slices_candidate=int(self._candidate.sum()),
            slices_selected=int(selected.sum()),
            slices_partial=int((selected & (remaining > 0)).sum()),
            slices_pending_compaction=int(self._pending.sum()),
            logs_total=int(self._n_logs.sum()),
            logs_compacted=int(prefix.sum()),
            logs_remaining_in_plan=int(links.sum()),
            logs_forced=int(forced.sum()),
            unknown_min_logs=int(self._unknown.sum()),
            unknown_min_remaining=int(unknown_remaining.sum()),
            links=int(links.sum()),
            bytes_read=int(bytes_read.sum()),
            bytes_written_estimate=int(written.sum()),
            link_bytes_copied=int(link_bytes.sum()),
            ro_freshness_ms=fresh,
            freshness_blockers=tuple(blockers),
            full_slices=int((full_logs > 0).sum()),
            full_logs_compacted=int(full_logs.sum()),
            full_bytes_read=int(full_read.sum()),
            full_bytes_written_estimate=int(full_written.sum()),
            full_ro_freshness_ms=self.max_event_time_ms if all_fresh_known else None,
            compression_ratio=self.compression_ratio,
        )


def preview(
    slices: Sequence[SliceInfo],
    strategy: CompactionStrategy,
    *,
    now_ms: int | None = None,
    link_mode: str = "copy",
    pending_table_services: Sequence[str] = (),
    compression_ratio: float = DEFAULT_LOGFILE_TO_PARQUET_COMPRESSION_RATIO,
) -> CompactionPreview:
    """What ``strategy`` would plan over ``slices`` — no writes.

    Args:
        slices: the latest (merged) file slices.
        strategy: the compaction strategy; an event-time strategy resolves T at ``now_ms``.
        now_ms: the compaction time (default: now).
        link_mode: ``copy`` (link bytes are copied) or ``symlink``.
        pending_table_services: pending compaction/clustering instants; any of them voids the RO freshness.
        compression_ratio: ``hoodie.logfile.to.parquet.compression.ratio`` for the write estimate.

    Raises:
        InvalidThresholdError: T cannot be resolved or is later than the RFC allows.

    Example:
        >>> from evt_toolkit.compaction.strategy import LogFileSizeBasedCompactionStrategy
        >>> preview([], LogFileSizeBasedCompactionStrategy()).summary.slices_selected
        0
    """
    model = PreviewModel(
        slices,
        strategy,
        now_ms=now_ms,
        link_mode=link_mode,
        pending_table_services=pending_table_services,
        compression_ratio=compression_ratio,
    )
    return model.preview()
