"""Plain models behind the notebook widgets: every decision and figure lives here, testable without a browser.

Each widget in :mod:`evt_toolkit.widgets.views` is a thin view over one model of this module. The models read the
table through its public API (``file_slices``, ``inspect.log_blocks``, ``compaction``, ``ro_freshness``) and
:func:`~evt_toolkit.compaction.event_times.slice_infos`, and hand the views Arrow tables, pandas frames and small
frozen records. Nothing here imports ipywidgets or plotly.

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/flights")  # doctest: +SKIP
    >>> m = ThresholdPreviewModel(t)  # doctest: +SKIP
    >>> m.set_threshold("2013-01-01T12:00:00Z").totals["selected_logs"]  # doctest: +SKIP
    57
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.compaction.event_times import slice_infos, slice_set
from evt_toolkit.compaction.model import SliceInfo, SliceSet, log_files_table
from evt_toolkit.compaction.plan import (
    EXTRA_LINK_MODE,
    EXTRA_LINK_TIMING,
    EXTRA_STRATEGY,
    EXTRA_THRESHOLD_MS,
    LINK_MODES,
    LINK_TIMINGS,
)
from evt_toolkit.compaction.preview import CompactionPreview, PreviewModel, format_bytes
from evt_toolkit.compaction.strategy import (
    STRATEGY_CLASSES,
    STRATEGY_NAMES,
    CompactionStrategy,
    EventTimeBasedCompactionStrategy,
    InvalidThresholdError,
    to_epoch_ms,
)
from evt_toolkit.errors import EvtError, InvalidActionError, TimelineError
from evt_toolkit.table.inspect import schema_summary
from evt_toolkit.table.timeline import COMPACTION, LOG_COMPACTION

if TYPE_CHECKING:
    from evt_toolkit.api import HudiTable
    from evt_toolkit.compaction.executor import CompactionResult, ProgressEvent
    from evt_toolkit.compaction.freshness import Freshness
    from evt_toolkit.compaction.schedule import ScheduledCompaction
    from evt_toolkit.compaction.validate import ValidationReport
    from evt_toolkit.services.unschedule import UnscheduleReport

__all__ = [
    "HEATMAP_SLICE_THRESHOLD",
    "STRATEGIES",
    "THRESHOLD_MODES",
    "BlockRow",
    "CompactionRunnerModel",
    "DistributionModel",
    "InstantRow",
    "InvalidActionError",
    "LogHeaderModel",
    "PlanSummary",
    "RoSnapshotCheck",
    "SelectedPath",
    "ThresholdPreviewModel",
    "TimelineModel",
    "format_bytes",
    "format_ms",
    "ms_to_timestamps",
]

#: Above this many file slices the distribution shows a slice × time heatmap instead of one strip per slice:
#: a strip per slice stops being readable (and plotly stops being quick) long before 10k categories.
HEATMAP_SLICE_THRESHOLD = 200

#: Strategy names the preview and runner accept, in the order a selector shows them.
STRATEGIES: tuple[str, ...] = STRATEGY_NAMES

#: How T is fixed for the event-time strategy (the three modes of ``EventTimeBasedCompactionStrategy``).
THRESHOLD_MODES: tuple[str, ...] = ("threshold", "data_latency", "allowed_lateness")

#: ``HoodieCommandBlock.HoodieCommandBlockTypeEnum`` ordinals (the only one Hudi has is the rollback block).
_COMMAND_TYPES = {"0": "ROLLBACK_BLOCK"}


# -- formatting -------------------------------------------------------------------------------------------------


def format_ms(ms: int | None) -> str:
    """Epoch milliseconds as a readable UTC time (``2013-01-01 05:00:00 UTC``), ``-`` for ``None``.

    Example:
        >>> format_ms(1357016400000)
        '2013-01-01 05:00:00 UTC'
    """
    if ms is None:
        return "-"
    dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=int(ms))
    text = dt.strftime("%Y-%m-%d %H:%M:%S")
    if dt.microsecond:
        text += f".{dt.microsecond // 1000:03d}"
    return text + " UTC"


def ms_to_timestamps(values: Sequence[int | None] | np.ndarray) -> pd.Series:
    """Epoch ms as naive UTC pandas timestamps (what plotly puts on a date axis without shifting zones)."""
    return pd.to_datetime(pd.Series(values, dtype="Int64"), unit="ms")


def slice_label(partition_path: str, file_id: str) -> str:
    """A short label for a file slice on a chart axis: ``partition/fileId-prefix``."""
    short = file_id[:13] if len(file_id) > 13 else file_id
    return f"{partition_path}/{short}" if partition_path else short


def slice_labels(pairs: Sequence[tuple[str | None, str | None]]) -> list[str]:
    """Labels for ``(partition, file id)`` pairs, unique: a shortened label that collides uses the full file id
    (a chart would otherwise merge two slices into one category).

    Example:
        >>> slice_labels([("p", "00000000-aaaa-1"), ("p", "00000000-aaaa-2")])
        ['p/00000000-aaaa-1', 'p/00000000-aaaa-2']
    """
    short = [slice_label(p or "", f or "") for p, f in pairs]
    counts: dict[str, int] = {}
    for label in short:
        counts[label] = counts.get(label, 0) + 1
    return [
        label if counts[label] == 1 else (f"{p}/{f}" if p else str(f))
        for label, (p, f) in zip(short, pairs, strict=True)
    ]


# -- log header inspector -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SelectedPath:
    """The inspector's cascade: partition → file group → file slice (base instant) → log file."""

    partition: str | None = None
    file_id: str | None = None
    base_instant: str | None = None
    log_file: str | None = None


@dataclass(frozen=True, slots=True)
class BlockRow:
    """One log block as the inspector shows it.

    Attributes:
        index: position of the block in its log file.
        status: ``ok``, ``uncommitted`` (written by an instant that is not a completed commit: inflight, failed or
            rolled back — readers skip it), ``rolled_back`` (targeted by a rollback command block of the same log
            file) or ``corrupt``.
        command_type: for command blocks, Hudi's command (``ROLLBACK_BLOCK``).
        schema: a compact one-line view of the ``SCHEMA`` header.
        header: every header entry, by Hudi's header name.
    """

    index: int
    offset: int
    size: int
    block_type: str
    instant_time: str | None
    target_instant_time: str | None
    committed: bool | None
    corrupt_reason: str | None
    record_count: int | None
    min_event_time: int | None
    min_event_time_source: str | None
    command_type: str | None
    schema: str
    status: str
    header: Mapping[str, str]

    @property
    def min_event_time_text(self) -> str:
        """The min event time, readable, with where it came from."""
        if self.min_event_time is None:
            return "-"
        return f"{format_ms(self.min_event_time)} ({self.min_event_time_source})"


class LogHeaderModel:
    """Cascade over partitions, file groups, file slices and log files, and the blocks of the chosen log file.

    Block facts come from ``table.inspect.log_blocks`` (headers only, unless a min event time needs a scan), loaded
    per file group and kept until :meth:`refresh`.

    Args:
        table: the table.
        event_time_field: field whose min event time is shown; defaults to the table's.

    Example:
        >>> m = LogHeaderModel(t)  # doctest: +SKIP
        >>> m.options["partition"], m.selected.log_file  # doctest: +SKIP
        >>> m.header_details(0)["INSTANT_TIME"]  # doctest: +SKIP
    """

    LEVELS: tuple[str, ...] = ("partition", "file_id", "base_instant", "log_file")

    def __init__(self, table: HudiTable, event_time_field: str | None = None) -> None:
        self.table = table
        self.event_time_field = event_time_field
        self._blocks: dict[tuple[str, str], pa.Table] = {}
        self._groups: dict[tuple[str, str], list[tuple[str, tuple[str, ...], str | None]]] = {}
        self.selected = SelectedPath()
        self.options: dict[str, list[str]] = {level: [] for level in self.LEVELS}
        self.rows: list[BlockRow] = []
        self.refresh()

    def refresh(self) -> None:
        """Reload the table's file groups and forget cached blocks (after writes or a compaction)."""
        self.table.refresh()
        self._blocks.clear()
        self._groups.clear()
        for g in self.table.view.file_groups():
            # Newest slice first, as the view orders them; the latest slice is the default choice.
            self._groups[(g.partition_path, g.file_id)] = [
                (s.base_instant, tuple(lf.name for lf in s.log_files), s.base_file.name if s.base_file else None)
                for s in g.slices
            ]
        self.select(self.selected.partition, self.selected.file_id, self.selected.base_instant, self.selected.log_file)

    # -- options per level --------------------------------------------------------------------------------------------
    def partitions(self) -> list[str]:
        """Partition paths with at least one file group (``""`` for a non-partitioned table)."""
        return sorted({p for p, _ in self._groups})

    def file_groups(self, partition: str) -> list[str]:
        """File ids of ``partition``."""
        return sorted(f for p, f in self._groups if p == partition)

    def file_slices(self, partition: str, file_id: str) -> list[str]:
        """Base instants of the group's slices, newest first."""
        return [s[0] for s in self._groups.get((partition, file_id), [])]

    def log_files(self, partition: str, file_id: str, base_instant: str) -> list[str]:
        """Log file names of one slice, in replay order."""
        for inst, logs, _ in self._groups.get((partition, file_id), []):
            if inst == base_instant:
                return list(logs)
        return []

    def base_file(self, partition: str, file_id: str, base_instant: str) -> str | None:
        """Base file name of one slice (``None`` for a log-only slice)."""
        for inst, _, base in self._groups.get((partition, file_id), []):
            if inst == base_instant:
                return base
        return None

    def select(
        self,
        partition: str | None = None,
        file_id: str | None = None,
        base_instant: str | None = None,
        log_file: str | None = None,
    ) -> SelectedPath:
        """Choose a path; a level left ``None`` (or no longer present) falls back to its first option.

        Example:
            >>> m.select(partition="origin=JFK").file_id  # doctest: +SKIP
        """

        def pick(options: list[str], wanted: str | None) -> str | None:
            if wanted is not None and wanted in options:
                return wanted
            return options[0] if options else None

        opts: dict[str, list[str]] = {level: [] for level in self.LEVELS}
        opts["partition"] = self.partitions()
        p = pick(opts["partition"], partition)
        opts["file_id"] = self.file_groups(p) if p is not None else []
        # A new partition invalidates the lower levels' choices unless they still exist there.
        f = pick(opts["file_id"], file_id)
        opts["base_instant"] = self.file_slices(p, f) if p is not None and f is not None else []
        b = pick(opts["base_instant"], base_instant)
        opts["log_file"] = self.log_files(p, f, b) if p is not None and f is not None and b is not None else []
        lf = pick(opts["log_file"], log_file)
        self.options = opts
        self.selected = SelectedPath(p, f, b, lf)
        self.rows = self._rows_for(self.selected)
        return self.selected

    # -- blocks ---------------------------------------------------------------------------------------------------
    def blocks_of_group(self, partition: str, file_id: str) -> pa.Table:
        """``inspect.log_blocks`` of every slice of one file group (cached)."""
        key = (partition, file_id)
        tbl = self._blocks.get(key)
        if tbl is None:
            tbl = self.table.inspect.log_blocks(
                partition, file_id, event_time_field=self.event_time_field, all_slices=True
            )
            self._blocks[key] = tbl
        return tbl

    def _rows_for(self, sel: SelectedPath) -> list[BlockRow]:
        if sel.partition is None or sel.file_id is None or sel.log_file is None:
            return []
        tbl = self.blocks_of_group(sel.partition, sel.file_id)
        mine = tbl.filter(pc.equal(tbl.column("log_file"), sel.log_file)).to_pylist()
        # Hudi's rollback command block names the instant it undoes; its earlier blocks in this file are dead.
        rolled_back = {
            r["target_instant_time"]
            for r in mine
            if r["block_type"] == "COMMAND" and r["target_instant_time"] is not None
        }
        out: list[BlockRow] = []
        for i, r in enumerate(mine):
            header = {str(k): str(v) for k, v in (r["header"] or [])}
            if r["block_type"] == "CORRUPT":
                status = "corrupt"
            elif r["block_type"] != "COMMAND" and r["instant_time"] in rolled_back:
                status = "rolled_back"
            elif r["committed"] is False:
                status = "uncommitted"
            else:
                status = "ok"
            cmd = header.get("COMMAND_BLOCK_TYPE")
            out.append(
                BlockRow(
                    index=i,
                    offset=int(r["offset"]),
                    size=int(r["size"]),
                    block_type=str(r["block_type"]),
                    instant_time=r["instant_time"],
                    target_instant_time=r["target_instant_time"],
                    committed=r["committed"],
                    corrupt_reason=r["corrupt_reason"],
                    record_count=r["record_count"],
                    min_event_time=r["min_event_time"],
                    min_event_time_source=r["min_event_time_source"],
                    command_type=None if cmd is None else _COMMAND_TYPES.get(cmd, cmd),
                    schema=schema_summary(header.get("SCHEMA")),
                    status=status,
                    header=header,
                )
            )
        return out

    def header_details(self, block_index: int) -> dict[str, str]:
        """Every header entry of one block of the selected log file; ``SCHEMA`` pretty-printed.

        Raises:
            IndexError: no such block.
        """
        row = self.rows[block_index]
        out = dict(row.header)
        schema = out.get("SCHEMA")
        if schema:
            # A schema header that is not JSON stays as written: it is itself worth seeing.
            with contextlib.suppress(ValueError):
                out["SCHEMA"] = json.dumps(json.loads(schema), indent=2)
        if "MIN_EVENT_TIME" in out:
            with contextlib.suppress(ValueError):
                out["MIN_EVENT_TIME"] = f"{out['MIN_EVENT_TIME']} ({format_ms(int(out['MIN_EVENT_TIME']))})"
        return out

    def frame(self) -> pd.DataFrame:
        """The selected log file's blocks as a pandas frame (without the full header)."""
        cols = [
            "index",
            "block_type",
            "offset",
            "size",
            "record_count",
            "instant_time",
            "min_event_time",
            "min_event_time_source",
            "command_type",
            "target_instant_time",
            "status",
            "schema",
        ]
        return pd.DataFrame([{c: getattr(r, c) for c in cols} for r in self.rows], columns=cols)


# -- event-time distribution ----------------------------------------------------------------------------------------


class DistributionModel:
    """Per file slice, the min event times of its log files, as frames for strip/box, histogram and heatmap.

    Args:
        table: the table (``None`` when ``slices`` are given).
        event_time_field: defaults to the table's.
        threshold: T to draw (epoch ms, datetime or ISO string).
        slices: precomputed slices (tests, benchmarks) instead of reading the table.
        mode: ``auto`` (heatmap above :data:`HEATMAP_SLICE_THRESHOLD` slices), ``strip`` or ``heatmap``.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
        >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=10),))
        >>> m = DistributionModel(slices=[s])
        >>> len(m.points), m.use_heatmap
        (1, False)
    """

    def __init__(
        self,
        table: HudiTable | None = None,
        event_time_field: str | None = None,
        threshold: Any = None,
        *,
        slices: Sequence[SliceInfo] | None = None,
        mode: str = "auto",
    ) -> None:
        if table is None and slices is None:
            raise InvalidActionError("DistributionModel needs a table or slices")
        self.table = table
        self.event_time_field = event_time_field
        self.threshold_ms: int | None = None if threshold is None else to_epoch_ms(threshold)
        self.mode = "auto"
        self.set_mode(mode)
        self._given = None if slices is None else list(slices)
        self.slices: list[SliceInfo] = []
        self.points = pd.DataFrame()
        self.unknown = pd.DataFrame()
        self.refresh()

    def refresh(self) -> None:
        """Re-read the table's latest slices."""
        if self._given is not None:
            self.slices = self._given
        else:
            assert self.table is not None
            self.table.refresh()
            self.slices = slice_infos(self.table, self.event_time_field)
        logs = log_files_table(self.slices).to_pandas()
        labels = slice_labels([(s.partition_path, s.file_id) for s in self.slices])
        if len(logs):
            logs["slice"] = [labels[i] for i in logs["slice_index"]]
        else:
            logs["slice"] = pd.Series(dtype=str)
        self.slice_labels = labels
        known = logs[logs["has_data"] & logs["min_event_time"].notna()].copy()
        known["min_event_time"] = known["min_event_time"].astype("int64")
        known["time"] = ms_to_timestamps(known["min_event_time"].to_numpy()).to_numpy()
        self.points = known[
            [
                "slice_index",
                "slice",
                "partition_path",
                "file_id",
                "log_file",
                "position",
                "size",
                "min_event_time",
                "min_event_time_source",
                "time",
            ]
        ].reset_index(drop=True)
        # Logs with data but no known min event time cannot be placed on a time axis; count them instead.
        self.unknown = logs[logs["has_data"] & logs["min_event_time"].isna()][
            ["slice_index", "slice", "log_file"]
        ].reset_index(drop=True)

    # -- settings -----------------------------------------------------------------------------------------------------
    def set_threshold(self, threshold: Any) -> None:
        """Set T (epoch ms, datetime or ISO string; ``None`` hides the line)."""
        self.threshold_ms = None if threshold is None else to_epoch_ms(threshold)

    def set_mode(self, mode: str) -> None:
        """``auto``, ``strip`` or ``heatmap``."""
        if mode not in ("auto", "strip", "heatmap"):
            raise InvalidActionError(f"mode must be auto, strip or heatmap, got {mode!r}")
        self.mode = mode

    @property
    def use_heatmap(self) -> bool:
        """Whether the per-slice chart is a heatmap (forced, or auto above the slice threshold)."""
        if self.mode == "auto":
            return len(self.slices) > HEATMAP_SLICE_THRESHOLD
        return self.mode == "heatmap"

    # -- frames -------------------------------------------------------------------------------------------------------
    def per_slice(self) -> pd.DataFrame:
        """One row per slice with logs of known min event time: count, min, quartiles, max (epoch ms)."""
        cols = ["slice", "logs", "min", "q1", "median", "q3", "max"]
        if self.points.empty:
            return pd.DataFrame(columns=cols)
        g = self.points.groupby("slice", sort=False)["min_event_time"]
        out = pd.DataFrame(
            {
                "logs": g.size(),
                "min": g.min(),
                "q1": g.quantile(0.25),
                "median": g.median(),
                "q3": g.quantile(0.75),
                "max": g.max(),
            }
        ).reset_index()
        return out[cols]

    def histogram(self, bins: int = 50) -> pd.DataFrame:
        """Counts of log files by min event time: ``start_ms``, ``end_ms``, ``start``, ``end``, ``count``."""
        vals = self.points["min_event_time"].to_numpy(dtype=np.int64) if len(self.points) else np.array([], np.int64)
        edges = _edges(vals, bins)
        counts = np.histogram(vals, bins=edges)[0] if len(vals) else np.zeros(len(edges) - 1, dtype=np.int64)
        return pd.DataFrame(
            {
                "start_ms": edges[:-1].astype(np.int64),
                "end_ms": edges[1:].astype(np.int64),
                "start": ms_to_timestamps(edges[:-1].astype(np.int64)).to_numpy(),
                "end": ms_to_timestamps(edges[1:].astype(np.int64)).to_numpy(),
                "count": counts.astype(np.int64),
            }
        )

    def heatmap(self, time_bins: int = 60) -> pd.DataFrame:
        """Slice × time-bin counts of log files (rows: slice labels in table order; columns: bin start times)."""
        vals = self.points["min_event_time"].to_numpy(dtype=np.int64) if len(self.points) else np.array([], np.int64)
        edges = _edges(vals, time_bins)
        n = len(edges) - 1
        z = np.zeros((len(self.slices), n), dtype=np.int64)
        if len(vals):
            col = np.clip(np.searchsorted(edges, vals, side="right") - 1, 0, n - 1)
            np.add.at(z, (self.points["slice_index"].to_numpy(dtype=np.int64), col), 1)
        columns = ms_to_timestamps(edges[:-1].astype(np.int64))
        return pd.DataFrame(z, index=pd.Index(self.slice_labels, name="slice"), columns=pd.Index(columns, name="bin"))

    def logs_at_or_below_threshold(self) -> int:
        """Log files whose min event time is ≤ T (0 without T)."""
        if self.threshold_ms is None or self.points.empty:
            return 0
        return int((self.points["min_event_time"] <= self.threshold_ms).sum())


def _edges(vals: np.ndarray, bins: int) -> np.ndarray:
    """Bin edges (int64 ms) covering ``vals``; one-wide bins when all values are equal or there are none."""
    bins = max(1, int(bins))
    if not len(vals):
        return np.arange(bins + 1, dtype=np.int64)
    lo, hi = int(vals.min()), int(vals.max())
    if hi == lo:
        hi = lo + 1
    edges = np.linspace(lo, hi, bins + 1)
    edges[-1] = hi
    return np.floor(edges).astype(np.int64)


# -- threshold preview ----------------------------------------------------------------------------------------------


def make_strategy(name: str, threshold_ms: int | None = None, **kwargs: Any) -> CompactionStrategy:
    """A strategy from its selector name (:data:`STRATEGIES`).

    Example:
        >>> make_strategy("event_time", 1000)
        EventTimeBasedCompactionStrategy(threshold='1970-01-01T00:00:01.000Z')
    """
    if name not in STRATEGY_CLASSES:
        raise InvalidActionError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
    if name == "event_time" and not kwargs:
        return EventTimeBasedCompactionStrategy(threshold=threshold_ms)
    return STRATEGY_CLASSES[name](**kwargs)


def _duration_strategy(
    mode: str, value_ms: int, event_time_field: str | None = None
) -> EventTimeBasedCompactionStrategy:
    """The event-time strategy with T fixed by ``data_latency`` or ``allowed_lateness``."""
    if mode == "data_latency":
        return EventTimeBasedCompactionStrategy(data_latency=value_ms, event_time_field=event_time_field)
    return EventTimeBasedCompactionStrategy(allowed_lateness=value_ms, event_time_field=event_time_field)


class ThresholdPreviewModel:
    """What a compaction would select as the threshold (or strategy) changes: a live
    :class:`~evt_toolkit.compaction.preview.PreviewModel` per strategy, built once.

    The event-time preview keeps its columnar log table and only recomputes the prefix selection on
    :meth:`set_threshold`, so it stays interactive on 10k file slices.

    Args:
        table: the table (``None`` when ``slices`` are given).
        strategy: initial strategy name (:data:`STRATEGIES`).
        event_time_field: defaults to the table's.
        slices: precomputed slices instead of reading the table.
        now_ms: the compaction time that resolves data latency and bounds T (default: now, taken once).
        link_mode: ``copy`` or ``symlink`` (bytes copied for links).
        pending_table_services: pending compaction/clustering instants (default: from the table's timeline).
        threshold: initial T; default: the middle of the min event times.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
        >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=10),
        ...                                             L.synthetic("f", 2, min_event_time=90)))
        >>> m = ThresholdPreviewModel(slices=[s], now_ms=1000)
        >>> m.set_threshold(50).totals["selected_logs"], m.totals["kept_logs"], m.freshness
        (1, 1, 50)
    """

    def __init__(
        self,
        table: HudiTable | None = None,
        strategy: str = "event_time",
        event_time_field: str | None = None,
        *,
        slices: Sequence[SliceInfo] | None = None,
        now_ms: int | None = None,
        link_mode: str = "copy",
        pending_table_services: Sequence[str] | None = None,
        threshold: Any = None,
    ) -> None:
        if table is None and slices is None:
            raise InvalidActionError("ThresholdPreviewModel needs a table or slices")
        self.table = table
        self.event_time_field = event_time_field
        self.now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        self.link_mode = link_mode
        if slices is None:
            assert table is not None
            field_name = event_time_field or table.config.event_time_field
            slices = slice_set(table, field_name)
        if pending_table_services is None and table is not None:
            tl = table.timeline
            pending_table_services = tuple(
                i.time for i in tl.pending_compactions() + tl.pending_clustering() + tl.pending_log_compactions()
            )
        # Columnar once, shared by the model of every strategy.
        self.slices = slices if isinstance(slices, SliceSet) else SliceSet.from_infos(slices)
        self.pending_table_services = tuple(pending_table_services or ())
        self._models: dict[str, PreviewModel] = {}
        # T = now is always within the RFC's bound, so the live model can be built before the data range is known.
        event_model = self._model("event_time")
        rng = event_model.threshold_range()
        self.range_ms: tuple[int, int] | None = rng
        self.threshold_mode = "threshold"
        self.mode_value_ms: int | None = None
        if threshold is not None:
            default = to_epoch_ms(threshold)
        elif rng is not None:
            default = rng[0] + (rng[1] - rng[0]) // 2
        else:
            default = self.now_ms
        self.threshold_ms: int = default
        self.strategy_name = "event_time"
        self.last_elapsed_ms = 0.0
        self.preview: CompactionPreview = event_model.set_threshold(default)
        if strategy != "event_time":
            self.set_strategy(strategy)

    def _model(self, name: str) -> PreviewModel:
        model = self._models.get(name)
        if model is None:
            strategy = EventTimeBasedCompactionStrategy(data_latency=0) if name == "event_time" else make_strategy(name)
            model = PreviewModel(
                self.slices,
                strategy,
                now_ms=self.now_ms,
                link_mode=self.link_mode,
                pending_table_services=self.pending_table_services,
            )
            self._models[name] = model
        return model

    # -- inputs -------------------------------------------------------------------------------------------------------
    def set_threshold(self, threshold: Any) -> ThresholdPreviewModel:
        """Move T (epoch ms, datetime or ISO string) and recompute the event-time preview.

        With another strategy selected, T is remembered for when the event-time strategy is chosen again.

        Raises:
            InvalidThresholdError: a malformed threshold.
        """
        self.threshold_ms = to_epoch_ms(threshold)
        self.threshold_mode = "threshold"
        self.mode_value_ms = None
        if self.strategy_name == "event_time":
            self._recompute()
        return self

    def set_mode(self, mode: str, value_ms: int | None = None) -> ThresholdPreviewModel:
        """Fix T by ``threshold`` (keep the current T), ``data_latency`` (T = now − value) or ``allowed_lateness``
        (T = max ingested event time − value).

        Raises:
            InvalidThresholdError: unknown mode, negative value, or no max event time for ``allowed_lateness``.
        """
        if mode not in THRESHOLD_MODES:
            raise InvalidThresholdError(f"threshold mode must be one of {', '.join(THRESHOLD_MODES)}, got {mode!r}")
        if mode == "threshold":
            self.threshold_mode, self.mode_value_ms = mode, None
            return self
        value = int(value_ms or 0)
        strategy = _duration_strategy(mode, value)  # validates the value (≥ 0)
        t = strategy.resolve_threshold(self.now_ms, self._model("event_time").max_event_time_ms)
        self.threshold_ms = t
        self.threshold_mode, self.mode_value_ms = mode, value
        if self.strategy_name == "event_time":
            self._recompute()
        return self

    def set_strategy(self, name: str) -> ThresholdPreviewModel:
        """Switch the strategy (:data:`STRATEGIES`); Hudi's strategies take whole slices.

        Raises:
            InvalidActionError: unknown strategy name.
        """
        if name not in STRATEGIES:
            raise InvalidActionError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
        previous = self.strategy_name
        self.strategy_name = name
        try:
            self._recompute()
        except EvtError:
            # e.g. DayBasedCompactionStrategy on partitions that are not yyyy/MM/dd: keep the last good preview.
            self.strategy_name = previous
            raise
        return self

    def _recompute(self) -> None:
        started = time.perf_counter()
        model = self._model(self.strategy_name)
        if self.strategy_name == "event_time":
            self.preview = model.set_threshold(self.threshold_ms)
        else:
            self.preview = model.preview()
        self.last_elapsed_ms = (time.perf_counter() - started) * 1000

    # -- outputs ------------------------------------------------------------------------------------------------------
    def strategy(self) -> CompactionStrategy:
        """The strategy the current settings stand for (what :class:`CompactionRunnerModel` would schedule)."""
        if self.strategy_name != "event_time":
            return make_strategy(self.strategy_name)
        if self.threshold_mode == "threshold":
            return EventTimeBasedCompactionStrategy(threshold=self.threshold_ms, event_time_field=self.event_time_field)
        return _duration_strategy(self.threshold_mode, self.mode_value_ms or 0, self.event_time_field)

    @property
    def per_slice(self) -> pa.Table:
        """:data:`~evt_toolkit.compaction.preview.PER_SLICE_SCHEMA` of the current preview."""
        return self.preview.per_slice

    @property
    def per_log(self) -> pa.Table:
        """:data:`~evt_toolkit.compaction.preview.PER_LOG_SCHEMA` of the current preview."""
        return self.preview.per_log

    @property
    def freshness(self) -> int | None:
        """The RO freshness (epoch ms) the plan would give, ``None`` when it cannot be promised."""
        return self.preview.summary.ro_freshness_ms

    @property
    def freshness_text(self) -> str:
        """The freshness, or why there is none, in words."""
        s = self.preview.summary
        if s.ro_freshness_ms is not None:
            return f"RO freshness after the plan: every event ≤ {format_ms(s.ro_freshness_ms)}"
        return "RO freshness: not promised — " + ("; ".join(s.freshness_blockers) or "no threshold")

    @property
    def totals(self) -> dict[str, Any]:
        """Table-wide figures of the plan against a full compaction (plain ints; ``None`` where not defined)."""
        s = self.preview.summary
        return {
            "strategy": s.strategy,
            "threshold_ms": s.threshold_ms,
            "threshold_within_bound": s.threshold_within_bound,
            "slices_total": s.slices_total,
            "slices_candidate": s.slices_candidate,
            "slices_selected": s.slices_selected,
            "slices_partial": s.slices_partial,
            "logs_total": s.logs_total,
            "selected_logs": s.logs_compacted,
            "kept_logs": s.logs_total - s.logs_compacted,
            "forced_logs": s.logs_forced,
            "links": s.links,
            "bytes_read": s.bytes_read,
            "bytes_written": s.bytes_written_estimate,
            "link_bytes_copied": s.link_bytes_copied,
            "full_logs": s.full_logs_compacted,
            "full_bytes_read": s.full_bytes_read,
            "full_bytes_written": s.full_bytes_written_estimate,
            "ro_freshness_ms": s.ro_freshness_ms,
        }

    def totals_lines(self) -> list[str]:
        """The totals as lines of plain text (what the widget shows)."""
        t = self.totals
        full_logs = t["full_logs"] or 0
        share = f" ({100 * t['selected_logs'] / full_logs:.0f}% of a full compaction)" if full_logs else ""
        threshold = "-" if t["threshold_ms"] is None else f"{format_ms(t['threshold_ms'])} ({t['threshold_ms']})"
        return [
            f"strategy: {t['strategy']}",
            f"threshold T: {threshold}",
            f"selected logs: {t['selected_logs']} of {t['logs_total']}{share}",
            f"kept logs: {t['kept_logs']}",
            f"slices compacted: {t['slices_selected']} of {t['slices_candidate']} ({t['slices_partial']} partially)",
            f"bytes to read: {t['bytes_read']} ({format_bytes(t['bytes_read'])}); full: {t['full_bytes_read']}",
            f"bytes to write: {t['bytes_written']} ({format_bytes(t['bytes_written'])}); "
            f"full: {t['full_bytes_written']}",
            f"links: {t['links']} ({format_bytes(t['link_bytes_copied'])} copied)",
            f"full compaction logs: {full_logs}",
        ]

    def chart_frame(self, max_bars: int = HEATMAP_SLICE_THRESHOLD) -> pd.DataFrame:
        """Compacted vs kept logs per bar: one bar per slice, or per partition (then per slice range) when there
        are more slices than ``max_bars`` — a bar per slice is unreadable long before 10k slices.

        Columns: ``label``, ``compacted``, ``kept``.
        """
        ps = self.preview.per_slice
        compacted = ps.column("logs_compacted").to_numpy().astype(np.int64)
        total = ps.column("num_log_files").to_numpy().astype(np.int64)
        kept = total - compacted
        n = ps.num_rows
        if n <= max_bars:
            pairs = zip(ps.column("partition_path").to_pylist(), ps.column("file_id").to_pylist(), strict=True)
            labels = slice_labels(list(pairs))
            return pd.DataFrame({"label": labels, "compacted": compacted, "kept": kept})
        parts = ps.column("partition_path").to_pandas().fillna("")
        frame = pd.DataFrame({"label": parts, "compacted": compacted, "kept": kept})
        grouped = frame.groupby("label", sort=False, as_index=False).sum()
        if len(grouped) <= max_bars:
            return grouped
        group = np.arange(n) * max_bars // n
        out = pd.DataFrame({"g": group, "compacted": compacted, "kept": kept}).groupby("g", as_index=False).sum()
        starts = np.searchsorted(group, out["g"].to_numpy())
        ends = np.append(starts[1:], n) - 1
        out["label"] = [f"slices {s}-{e}" for s, e in zip(starts, ends, strict=True)]
        return out[["label", "compacted", "kept"]]


# -- compaction runner ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoSnapshotCheck:
    """Sanity check after a run: every snapshot record with event time ≤ T is in the RO view (by key).

    Late data (events ≤ T written after the plan was scheduled) is the one allowed exception, so
    ``ok`` means ``missing_from_ro ≤ late_records``.
    """

    ro_rows: int
    snapshot_rows: int
    threshold_ms: int | None
    snapshot_rows_le_t: int
    missing_from_ro: int
    late_records: int

    @property
    def ok(self) -> bool:
        """No record ≤ T is missing from the RO view beyond the reported late data."""
        return self.missing_from_ro <= self.late_records

    def text(self) -> str:
        """One paragraph of plain text."""
        head = f"RO rows: {self.ro_rows}; snapshot rows: {self.snapshot_rows}"
        if self.threshold_ms is None:
            return head + "; no event-time threshold to check"
        verdict = "OK" if self.ok else "FAILED"
        return (
            f"{head}; snapshot rows with event time ≤ T: {self.snapshot_rows_le_t}; missing from RO: "
            f"{self.missing_from_ro} (late records: {self.late_records}) — RO ⊇ snapshot events ≤ T: {verdict}"
        )


def ro_snapshot_check(
    table: HudiTable, threshold_ms: int | None, event_time_field: str | None, late: int
) -> RoSnapshotCheck:
    """Compare the RO and snapshot views of ``table`` at T (see :class:`RoSnapshotCheck`)."""
    keys = ["_hoodie_partition_path", "_hoodie_record_key"]
    ro = table.read("read_optimized")
    snap = table.read("snapshot")
    if threshold_ms is None or not event_time_field or event_time_field not in snap.column_names:
        return RoSnapshotCheck(ro.num_rows, snap.num_rows, threshold_ms, 0, 0, late)
    et = snap.column(event_time_field)
    if pa.types.is_timestamp(et.type) or pa.types.is_date(et.type):
        et = pc.cast(pc.cast(et, pa.timestamp("ms")), pa.int64())
    le = snap.filter(pc.fill_null(pc.less_equal(et, threshold_ms), False)).select(keys)
    joined = le.join(
        ro.select(keys).append_column("_in_ro", pa.repeat(True, ro.num_rows)), keys, join_type="left outer"
    )
    missing = int(pc.sum(pc.is_null(joined.column("_in_ro"))).as_py() or 0)
    return RoSnapshotCheck(ro.num_rows, snap.num_rows, threshold_ms, le.num_rows, missing, late)


RUNNER_STATES: tuple[str, ...] = ("idle", "scheduled", "running", "done", "failed")


class CompactionRunnerModel:
    """Schedule → run → validate a compaction, as a small state machine: ``idle → scheduled → running → done``
    (or ``failed``); ``unschedule`` returns a scheduled plan to ``idle``.

    Actions never raise :class:`~evt_toolkit.errors.EvtError`: they record it in :attr:`last_error` and return
    ``None``, so a notebook widget can show it plainly. An action that does not fit the state (run before schedule)
    is refused before the table is touched.

    Args:
        table: the table.
        strategy: a strategy, a :class:`ThresholdPreviewModel` (its current settings are used at schedule time), or
            ``None`` (event-time strategy at :meth:`set_threshold`, else ``data_latency=0``).
        spark: run the compaction on Spark (one task per plan operation); ``None`` runs it in this process.
        link_mode: ``copy`` or ``symlink``.
        link_timing: ``schedule`` or ``execute``.

    Example:
        >>> s = EventTimeBasedCompactionStrategy(threshold="2013-01-01T12:00Z")
        >>> m = CompactionRunnerModel(t, s)  # doctest: +SKIP
        >>> m.schedule(); m.run(); m.state  # doctest: +SKIP
        'done'
    """

    def __init__(
        self,
        table: HudiTable,
        strategy: CompactionStrategy | ThresholdPreviewModel | None = None,
        spark: Any = None,
        *,
        link_mode: str = "copy",
        link_timing: str = "schedule",
    ) -> None:
        self.table = table
        self.strategy_source = strategy
        self.spark = spark
        self.link_mode = link_mode
        self.link_timing = link_timing
        self.threshold_override: int | None = None
        self.state = "idle"
        self.last_error: str | None = None
        self.message = ""
        self.scheduled: ScheduledCompaction | None = None
        self.result: CompactionResult | None = None
        self.validation: ValidationReport | None = None
        self.unschedule_report: UnscheduleReport | None = None
        self.progress_events: list[ProgressEvent] = []
        self.freshness_before: Freshness | None = None
        self.freshness_after: Freshness | None = None
        self.check: RoSnapshotCheck | None = None
        self.listeners: list[Callable[[CompactionRunnerModel], None]] = []

    # -- settings -----------------------------------------------------------------------------------------------------
    def set_threshold(self, threshold: Any) -> int | None:
        """Use an event-time strategy at explicit T (epoch ms, datetime or ISO string); ``""``/``None`` clears it.

        A malformed threshold is recorded in :attr:`last_error` and returns ``None``.
        """
        self.last_error = None
        if threshold is None or (isinstance(threshold, str) and not threshold.strip()):
            self.threshold_override = None
            return None
        try:
            self.threshold_override = to_epoch_ms(threshold)
        except EvtError as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None
        return self.threshold_override

    def set_links(self, link_mode: str | None = None, link_timing: str | None = None) -> None:
        """Change the link mode/timing used by the next :meth:`schedule`."""
        if link_mode is not None:
            if link_mode not in LINK_MODES:
                raise InvalidActionError(f"link_mode must be one of {', '.join(LINK_MODES)}, got {link_mode!r}")
            self.link_mode = link_mode
        if link_timing is not None:
            if link_timing not in LINK_TIMINGS:
                raise InvalidActionError(f"link_timing must be one of {', '.join(LINK_TIMINGS)}, got {link_timing!r}")
            self.link_timing = link_timing

    def strategy(self) -> CompactionStrategy:
        """The strategy the next :meth:`schedule` uses."""
        if self.threshold_override is not None:
            return EventTimeBasedCompactionStrategy(threshold=self.threshold_override)
        src = self.strategy_source
        if isinstance(src, ThresholdPreviewModel):
            return src.strategy()
        if src is None:
            return EventTimeBasedCompactionStrategy(data_latency=0)
        return src

    # -- plumbing -----------------------------------------------------------------------------------------------------
    def _notify(self) -> None:
        for fn in list(self.listeners):
            fn(self)

    def _fail(self, exc: BaseException, state: str | None = None) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"
        if state is not None:
            self.state = state
        self._notify()

    def _require(self, action: str, states: Sequence[str]) -> bool:
        if self.state in states:
            return True
        hint = {
            "run": "schedule a compaction first",
            "validate": "schedule a compaction first",
            "unschedule": "only a scheduled compaction that has not run can be unscheduled",
            "schedule": "run or unschedule the scheduled compaction first",
        }.get(action, "")
        self._fail(InvalidActionError(f"cannot {action} while {self.state}: {hint}"))
        return False

    # -- actions ------------------------------------------------------------------------------------------------------
    def schedule(self) -> ScheduledCompaction | None:
        """Write the compaction plan (and its links, with ``link_timing="schedule"``)."""
        if not self._require("schedule", ("idle", "done", "failed")):
            return None
        self.last_error = None
        self.result = self.validation = self.unschedule_report = self.check = None
        self.freshness_after = None
        self.progress_events = []
        try:
            strategy = self.strategy()
            self.freshness_before = self.table.ro_freshness()
            c = self.table.compaction.schedule(strategy, link_mode=self.link_mode, link_timing=self.link_timing)
        except EvtError as exc:
            self._fail(exc, "idle")
            return None
        if c is None:
            self.state = "idle"
            self.message = f"nothing to compact with {strategy!r}: no plan written"
        else:
            self.scheduled = c
            self.state = "scheduled"
            t = "" if c.threshold is None else f" at T = {format_ms(c.threshold)}"
            self.message = f"scheduled compaction {c.instant}{t}: {c.operations} operation(s), {len(c.links)} link(s)"
        self._notify()
        return c

    def run(self, progress: Callable[[ProgressEvent], None] | None = None) -> CompactionResult | None:
        """Execute the scheduled compaction; ``progress`` gets each progress event as it happens."""
        if not self._require("run", ("scheduled",)):
            return None
        assert self.scheduled is not None
        self.last_error = None
        self.state = "running"
        self.progress_events = []
        self._notify()

        def on_progress(event: ProgressEvent) -> None:
            self.progress_events.append(event)
            if progress is not None:
                progress(event)

        c = self.scheduled
        try:
            self.result = self.table.compaction.run(c, spark=self.spark, progress=on_progress)
            self.freshness_after = self.table.ro_freshness()
            field_name = self.table.config.event_time_field
            self.check = ro_snapshot_check(self.table, c.threshold, field_name, self.freshness_after.late_records)
        except EvtError as exc:
            self._fail(exc, "failed")
            return None
        self.state = "done"
        r = self.result
        self.message = (
            f"compaction {r.instant} completed: {r.operations} operation(s), {r.log_files_compacted} log file(s) "
            f"compacted, {r.links} link(s), {r.records_written} records written in {r.duration_s:.1f} s"
        )
        self._notify()
        return self.result

    def validate(self) -> ValidationReport | None:
        """Check the scheduled (or completed) compaction: plan, prefix rule, links, files."""
        if not self._require("validate", ("scheduled", "done", "failed")):
            return None
        assert self.scheduled is not None
        self.last_error = None
        try:
            self.validation = self.table.compaction.validate(self.scheduled)
        except EvtError as exc:
            self._fail(exc)
            return None
        v = self.validation
        self.message = f"validation of {self.scheduled.instant}: " + (
            f"OK ({v.checked} checks)" if v.ok else "problems: " + "; ".join(v.problems)
        )
        self._notify()
        return v

    def unschedule(self, dry_run: bool = True) -> UnscheduleReport | None:
        """Remove the scheduled plan and its links (dry run by default: only lists what would be deleted)."""
        if not self._require("unschedule", ("scheduled", "failed")):
            return None
        assert self.scheduled is not None
        self.last_error = None
        try:
            report = self.table.compaction.unschedule(self.scheduled, dry_run=dry_run)
        except EvtError as exc:
            self._fail(exc)
            return None
        self.unschedule_report = report
        if report.refused_reason:
            self.last_error = f"unschedule refused: {report.refused_reason}"
        elif dry_run:
            self.message = f"dry run: would delete {len(report.files_to_delete)} file(s)"
        else:
            self.message = f"unscheduled {report.instant}: deleted {len(report.files_to_delete)} file(s)"
            self.state = "idle"
            self.scheduled = None
        self._notify()
        return report

    # -- figures -------------------------------------------------------------------------------------------------------
    def progress_fraction(self) -> tuple[int, int]:
        """``(done, total)`` steps of the current run: one per plan operation, plus the commit."""
        total_tasks = self.scheduled.operations if self.scheduled is not None else 0
        done = 0
        for e in self.progress_events:
            if e.stage == "tasks":
                total_tasks = e.total
                done = e.done
            elif e.stage == "commit" and e.done >= e.total:
                done = total_tasks + 1
        return done, total_tasks + 1


# -- timeline -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanSummary:
    """A compaction plan read from the timeline: operations, logs, links and the event-time settings."""

    instant: str
    operations: int
    log_files: int
    links: int
    threshold_ms: int | None
    strategy: str | None
    link_mode: str | None
    link_timing: str | None
    operation_rows: tuple[dict[str, Any], ...] = field(default=())


@dataclass(frozen=True, slots=True)
class InstantRow:
    """One instant of the timeline, with its plan when it is a compaction."""

    time: str
    action: str
    state: str
    completion_time: str | None
    pending: bool
    plan: PlanSummary | None


def plan_summary(instant: str, plan: Mapping[str, Any]) -> PlanSummary:
    """Summarize a decoded ``HoodieCompactionPlan``."""
    extra = dict(plan.get("extraMetadata") or {})
    ops: list[dict[str, Any]] = []
    n_logs = n_links = 0
    for op in plan.get("operations") or []:
        deltas = list(op.get("deltaFilePaths") or [])
        links = list(op.get("symlinkOperations") or [])
        n_logs += len(deltas)
        n_links += len(links)
        ops.append(
            {
                "partition_path": op.get("partitionPath") or "",
                "file_id": op.get("fileId"),
                "base_instant": op.get("baseInstantTime"),
                "base_file": op.get("dataFilePath"),
                "log_files": deltas,
                "links": [f"{x.get('symlink')} → {x.get('target')}" for x in links],
            }
        )
    t = extra.get(EXTRA_THRESHOLD_MS)
    strategy = extra.get(EXTRA_STRATEGY)
    return PlanSummary(
        instant=instant,
        operations=len(ops),
        log_files=n_logs,
        links=n_links,
        threshold_ms=int(t) if t not in (None, "") else None,
        strategy=strategy.rsplit(".", 1)[-1] if strategy else None,
        link_mode=extra.get(EXTRA_LINK_MODE),
        link_timing=extra.get(EXTRA_LINK_TIMING),
        operation_rows=tuple(ops),
    )


class TimelineModel:
    """The active timeline as rows, pending and completed compaction plans decoded.

    Example:
        >>> m = TimelineModel(t)  # doctest: +SKIP
        >>> [(r.time, r.action, r.state) for r in m.rows][-1]  # doctest: +SKIP
    """

    def __init__(self, table: HudiTable) -> None:
        self.table = table
        self.rows: list[InstantRow] = []
        self.refresh()

    def refresh(self) -> None:
        """Re-read the timeline."""
        self.table.refresh()
        tl = self.table.timeline
        rows: list[InstantRow] = []
        for inst in tl.instants:
            plan: PlanSummary | None = None
            if inst.action in (COMPACTION, LOG_COMPACTION) or (inst.action == "commit" and inst.is_completed):
                try:
                    plan = plan_summary(inst.time, tl.compaction_plan(inst))
                except TimelineError:
                    plan = None  # a plain commit (COW write), not a completed compaction
            rows.append(
                InstantRow(
                    time=inst.time,
                    action=inst.action,
                    state=str(inst.state.value),
                    completion_time=inst.completion_time,
                    pending=not inst.is_completed,
                    plan=plan,
                )
            )
        self.rows = rows

    @property
    def pending_plans(self) -> list[PlanSummary]:
        """Plans of pending compactions, oldest first."""
        return [r.plan for r in self.rows if r.pending and r.plan is not None]

    def frame(self) -> pd.DataFrame:
        """Instants as a pandas frame (``time``, ``action``, ``state``, ``completion_time``, plan figures)."""
        return pd.DataFrame(
            [
                {
                    "time": r.time,
                    "action": r.action,
                    "state": r.state,
                    "completion_time": r.completion_time,
                    "operations": r.plan.operations if r.plan else None,
                    "log_files": r.plan.log_files if r.plan else None,
                    "links": r.plan.links if r.plan else None,
                    "threshold_ms": r.plan.threshold_ms if r.plan else None,
                }
                for r in self.rows
            ],
            columns=["time", "action", "state", "completion_time", "operations", "log_files", "links", "threshold_ms"],
        )
