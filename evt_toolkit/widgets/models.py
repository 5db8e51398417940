"""Plain models behind the notebook widgets: every decision and figure lives here, testable without a browser.

Each widget in :mod:`evt_toolkit.widgets.views` is a thin view over one model of this module. The models read the
table through its public API (``file_slices``, ``inspect.log_blocks``, ``compaction``, ``ro_freshness``) and
:func:`~evt_toolkit.compaction.event_times.slice_infos`, and hand the views Arrow tables, pandas frames and small
frozen records. Nothing here imports ipywidgets or plotly.

One way to write things, everywhere: times as ISO-8601 UTC with milliseconds (:func:`format_ms`, the form the table
API's own texts and ``--threshold`` use), counts with thousands separators (:func:`format_count`), sizes in binary
units (:func:`format_bytes`), durations in words (:func:`format_duration`).

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
from datetime import datetime
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
from evt_toolkit.compaction.preview import CompactionPreview, PreviewModel
from evt_toolkit.compaction.strategy import (
    STRATEGY_CLASSES,
    STRATEGY_NAMES,
    CompactionStrategy,
    EventTimeBasedCompactionStrategy,
    InvalidThresholdError,
    to_epoch_ms,
)
from evt_toolkit.errors import EvtError, InvalidActionError, TimelineError
from evt_toolkit.format.records import CompactionPlan
from evt_toolkit.format.text import format_bytes, format_count, format_duration, format_ms
from evt_toolkit.table.timeline import COMPACTION, LOG_COMPACTION

if TYPE_CHECKING:
    from evt_toolkit.api import HudiTable
    from evt_toolkit.compaction.executor import CompactionResult, ProgressEvent
    from evt_toolkit.compaction.freshness import Freshness
    from evt_toolkit.compaction.schedule import ScheduledCompaction
    from evt_toolkit.compaction.unschedule import UnscheduleReport
    from evt_toolkit.compaction.validate import ValidationReport

__all__ = [
    "BLOCK_FILTERS",
    "BLOCK_SORTS",
    "HEATMAP_SLICE_THRESHOLD",
    "MAX_REPLAY_SLICES",
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
    "format_count",
    "format_duration",
    "format_ms",
    "ms_to_timestamps",
]

#: Above this many file slices the distribution shows a slice × time heatmap instead of one line per slice.
HEATMAP_SLICE_THRESHOLD = 200

#: The replay chart draws at most this many slices (one line each); beyond, the slices with the most out-of-order
#: logs are drawn and the rest counted.
MAX_REPLAY_SLICES = 40

#: Strategy names the preview and runner accept, in the order a selector shows them.
STRATEGIES: tuple[str, ...] = STRATEGY_NAMES

#: How T is fixed for the event-time strategy (the three modes of ``EventTimeBasedCompactionStrategy``).
THRESHOLD_MODES: tuple[str, ...] = ("threshold", "data_latency", "allowed_lateness")

#: ``HoodieCommandBlock.HoodieCommandBlockTypeEnum`` ordinals (the only one Hudi has is the rollback block).
_COMMAND_TYPES = {"0": "ROLLBACK_BLOCK"}

#: Event times before this (1973-03-03, 1e11 ms) are almost always epoch *seconds* read as milliseconds.
_PLAUSIBLE_MS = 100_000_000_000


# -- formatting -------------------------------------------------------------------------------------------------


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


def log_label(name: str) -> str:
    """The part of a log file name that tells it from its neighbours: ``log.12_0-1-0`` (version and write token).

    The file id and base instant before it are the same for every log of a slice.

    Example:
        >>> log_label(".00000000-d6b8-451f-8853-345f2b9aa84b-0_20261122030319696.log.12_0-1-0")
        'log.12_0-1-0'
    """
    i = name.rfind(".log.")
    return name[i + 1 :] if i >= 0 else name


def epoch_unit_hint(values_ms: Sequence[int] | np.ndarray) -> str | None:
    """Why event times that all fall before 1973 are suspicious (epoch seconds read as milliseconds), else ``None``."""
    vals = [int(v) for v in values_ms]
    if vals and max(vals) < _PLAUSIBLE_MS:
        return (
            f"every event time is before {format_ms(_PLAUSIBLE_MS)}: the field probably holds epoch seconds (or "
            "another unit), while integer event times are read as milliseconds — check the event-time field"
        )
    return None


# -- log header inspector -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SelectedPath:
    """What the inspector shows: every log block of the table's latest slices (``whole_table``), or of one file
    slice (partition → file group → slice by its base instant)."""

    partition: str | None = None
    file_id: str | None = None
    base_instant: str | None = None
    whole_table: bool = False


@dataclass(frozen=True, slots=True)
class BlockRow:
    """One log block as the inspector shows it.

    Attributes:
        key: unique within the table (``partition/log_file@offset``).
        replay: position in replay order within the scope shown (0-based).
        index: position of the block in its log file.
        log_file: the log file's name; ``log`` its distinguishing tail (:func:`log_label`).
        status: ``ok``, ``uncommitted`` (written by an instant that is not a completed commit: inflight, failed or
            rolled back — readers skip it), ``rolled_back`` (targeted by a rollback command block of the same log
            file) or ``corrupt``.
        command_type: for command blocks, Hudi's command (``ROLLBACK_BLOCK``).
        schema_fields: number of fields of the ``SCHEMA`` header (0 without one).
        header: every header entry, by Hudi's header name.
    """

    key: str
    replay: int
    partition: str
    file_id: str
    log_file: str
    log: str
    version: int
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
    schema_fields: int
    status: str
    header: Mapping[str, str]

    @property
    def min_event_time_text(self) -> str:
        """The min event time, readable, with where it came from."""
        if self.min_event_time is None:
            return "-"
        return f"{format_ms(self.min_event_time)} ({self.min_event_time_source})"

    @property
    def status_text(self) -> str:
        """The status in words."""
        return {
            "ok": "committed",
            "uncommitted": "NOT COMMITTED (readers skip it)",
            "rolled_back": "ROLLED BACK",
            "corrupt": f"CORRUPT: {self.corrupt_reason or ''}",
        }[self.status]


#: Sort orders of the inspector table: name → (label, key function).
BLOCK_SORTS: dict[str, tuple[str, Callable[[BlockRow], Any]]] = {
    "replay": ("replay order", lambda r: r.replay),
    "min_event_time": (
        "min event time",
        lambda r: (r.min_event_time is None, r.min_event_time if r.min_event_time is not None else 0, r.replay),
    ),
    "instant": ("instant", lambda r: (r.instant_time or "", r.replay)),
    "records": ("records", lambda r: (r.record_count or 0, r.replay)),
    "size": ("size", lambda r: (r.size, r.replay)),
    "type": ("block type", lambda r: (r.block_type, r.replay)),
    "status": ("status", lambda r: (r.status != "ok", r.status, r.replay)),
}

#: Filters of the inspector table: name → (label, predicate).
BLOCK_FILTERS: dict[str, tuple[str, Callable[[BlockRow], bool]]] = {
    "all": ("all blocks", lambda r: True),
    "data": ("data blocks", lambda r: r.block_type in ("AVRO_DATA", "PARQUET_DATA", "HFILE_DATA", "CDC_DATA")),
    "delete": ("delete blocks", lambda r: r.block_type == "DELETE"),
    "command": ("command blocks", lambda r: r.block_type == "COMMAND"),
    "problems": ("not committed, rolled back or corrupt", lambda r: r.status != "ok"),
    "no_event_time": (
        "data without a known min event time",
        lambda r: bool(r.record_count) and r.min_event_time is None,
    ),
}


class LogHeaderModel:
    """Every log block of a file slice (or of all the latest slices) as a sortable, filterable table, and each
    block's full header.

    Block facts come from ``table.inspect.log_blocks`` (headers only, unless a min event time needs a scan), loaded
    once per file group (or once for the whole table) and kept until :meth:`refresh`.

    Args:
        table: the table.
        event_time_field: field whose min event time is shown; defaults to the table's.
        whole_table: start on every block of the table's latest slices instead of the first slice.

    Example:
        >>> m = LogHeaderModel(t)  # doctest: +SKIP
        >>> m.set_sort("min_event_time"); m.visible_rows[0].min_event_time  # doctest: +SKIP
        >>> m.header_details(m.visible_rows[0].key)["INSTANT_TIME"]  # doctest: +SKIP
    """

    LEVELS: tuple[str, ...] = ("partition", "file_id", "base_instant")

    def __init__(self, table: HudiTable, event_time_field: str | None = None, *, whole_table: bool = False) -> None:
        self.table = table
        self.event_time_field = event_time_field
        self._blocks: dict[tuple[str, str] | None, pa.Table] = {}
        self._groups: dict[tuple[str, str], list[tuple[str, tuple[str, ...], str | None]]] = {}
        self.selected = SelectedPath(whole_table=whole_table)
        self.options: dict[str, list[str]] = {level: [] for level in self.LEVELS}
        self.rows: list[BlockRow] = []
        self.sort_by = "replay"
        self.descending = False
        self.filter = "all"
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
        s = self.selected
        self.select(s.partition, s.file_id, s.base_instant, whole_table=s.whole_table)

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
        *,
        whole_table: bool = False,
    ) -> SelectedPath:
        """Choose what to show: one slice (a level left ``None``, or no longer present, falls back to its first
        option, preferring a slice with log files) or, with ``whole_table``, every latest slice.

        Example:
            >>> m.select(partition="origin=JFK").file_id  # doctest: +SKIP
        """

        def pick(options: list[str], wanted: str | None, prefer: Callable[[str], bool] = lambda _: True) -> str | None:
            if wanted is not None and wanted in options:
                return wanted
            return next((o for o in options if prefer(o)), options[0] if options else None)

        opts: dict[str, list[str]] = {level: [] for level in self.LEVELS}
        opts["partition"] = self.partitions()
        # The first slice with log files, not an empty one: an inspector that opens on nothing explains nothing.
        p = pick(opts["partition"], partition, lambda pp: any(self._has_logs(pp, f) for f in self.file_groups(pp)))
        opts["file_id"] = self.file_groups(p) if p is not None else []
        f = pick(opts["file_id"], file_id, lambda ff: p is not None and self._has_logs(p, ff))
        opts["base_instant"] = self.file_slices(p, f) if p is not None and f is not None else []
        b = pick(opts["base_instant"], base_instant)
        self.options = opts
        self.selected = SelectedPath(p, f, b, whole_table)
        self.rows = self._load_rows()
        return self.selected

    def _has_logs(self, partition: str, file_id: str) -> bool:
        slices = self._groups.get((partition, file_id), [])
        return bool(slices and slices[0][1])

    # -- blocks ---------------------------------------------------------------------------------------------------
    def _blocks_of(self, key: tuple[str, str] | None) -> pa.Table:
        tbl = self._blocks.get(key)
        if tbl is None:
            if key is None:
                tbl = self.table.inspect.log_blocks(event_time_field=self.event_time_field)
            else:
                tbl = self.table.inspect.log_blocks(
                    key[0], key[1], event_time_field=self.event_time_field, all_slices=True
                )
            self._blocks[key] = tbl
        return tbl

    def _load_rows(self) -> list[BlockRow]:
        sel = self.selected
        if sel.whole_table:
            records = self._blocks_of(None).to_pylist()
        elif sel.partition is None or sel.file_id is None or sel.base_instant is None:
            return []
        else:
            names = set(self.log_files(sel.partition, sel.file_id, sel.base_instant))
            records = [r for r in self._blocks_of((sel.partition, sel.file_id)).to_pylist() if r["log_file"] in names]
        # Hudi's rollback command block names the instant it undoes; that instant's blocks in the same file are dead.
        rolled_back = {
            (r["partition_path"], r["log_file"], r["target_instant_time"])
            for r in records
            if r["block_type"] == "COMMAND" and r["target_instant_time"] is not None
        }
        out: list[BlockRow] = []
        index_in_file: dict[tuple[str, str], int] = {}
        for i, r in enumerate(records):
            header = {str(k): str(v) for k, v in (r["header"] or [])}
            file_key = (r["partition_path"] or "", r["log_file"])
            index = index_in_file.get(file_key, 0)
            index_in_file[file_key] = index + 1
            if r["block_type"] == "CORRUPT":
                status = "corrupt"
            elif r["block_type"] != "COMMAND" and (*file_key, r["instant_time"]) in rolled_back:
                status = "rolled_back"
            elif r["committed"] is False:
                status = "uncommitted"
            else:
                status = "ok"
            cmd = header.get("COMMAND_BLOCK_TYPE")
            out.append(
                BlockRow(
                    key=f"{file_key[0]}/{file_key[1]}@{int(r['offset'])}",
                    replay=i,
                    partition=file_key[0],
                    file_id=str(r["file_id"]),
                    log_file=r["log_file"],
                    log=log_label(r["log_file"]),
                    version=int(r["version"] or 0),
                    index=index,
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
                    schema_fields=_schema_field_count(header.get("SCHEMA")),
                    status=status,
                    header=header,
                )
            )
        return out

    # -- the table ----------------------------------------------------------------------------------------------------
    def set_sort(self, column: str, descending: bool = False) -> None:
        """Sort the table by one of :data:`BLOCK_SORTS`."""
        if column not in BLOCK_SORTS:
            raise InvalidActionError(f"cannot sort by {column!r}; choose one of {', '.join(BLOCK_SORTS)}")
        self.sort_by, self.descending = column, descending

    def set_filter(self, name: str) -> None:
        """Show only the blocks of one of :data:`BLOCK_FILTERS`."""
        if name not in BLOCK_FILTERS:
            raise InvalidActionError(f"unknown filter {name!r}; choose one of {', '.join(BLOCK_FILTERS)}")
        self.filter = name

    @property
    def visible_rows(self) -> list[BlockRow]:
        """The rows of the scope, filtered and sorted."""
        keep = BLOCK_FILTERS[self.filter][1]
        rows = sorted((r for r in self.rows if keep(r)), key=BLOCK_SORTS[self.sort_by][1], reverse=self.descending)
        if self.sort_by == "min_event_time":
            # Blocks without a min event time go last whichever way the column is sorted.
            rows = [r for r in rows if r.min_event_time is not None] + [r for r in rows if r.min_event_time is None]
        return rows

    def row(self, key: str) -> BlockRow:
        """The block with ``key``.

        Raises:
            KeyError: no such block in the scope.
        """
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(key)

    def summary(self) -> dict[str, Any]:
        """Figures of the scope: slices, log files, blocks by status, records, bytes, min event time range."""
        rows = self.rows
        known = [r.min_event_time for r in rows if r.min_event_time is not None]
        data = [r for r in rows if BLOCK_FILTERS["data"][1](r)]
        return {
            "log_files": len({(r.partition, r.log_file) for r in rows}),
            "blocks": len(rows),
            "data_blocks": len(data),
            "delete_blocks": sum(1 for r in rows if r.block_type == "DELETE"),
            "command_blocks": sum(1 for r in rows if r.block_type == "COMMAND"),
            "not_ok": sum(1 for r in rows if r.status != "ok"),
            "records": sum(r.record_count or 0 for r in rows),
            "bytes": sum(r.size for r in rows),
            "min_event_time": min(known) if known else None,
            "max_min_event_time": max(known) if known else None,
            "unknown_event_time": sum(1 for r in data if r.record_count and r.min_event_time is None),
            "sources": sorted({r.min_event_time_source for r in rows if r.min_event_time_source}),
        }

    def header_details(self, key: str) -> dict[str, str]:
        """Every header entry of one block but ``SCHEMA`` (see :meth:`schema_details`); ``MIN_EVENT_TIME`` readable.

        Raises:
            KeyError: no such block.
        """
        out = {k: v for k, v in self.row(key).header.items() if k != "SCHEMA"}
        if "MIN_EVENT_TIME" in out:
            with contextlib.suppress(ValueError):
                out["MIN_EVENT_TIME"] = f"{out['MIN_EVENT_TIME']} ({format_ms(int(out['MIN_EVENT_TIME']))})"
        return out

    def schema_details(self, key: str) -> tuple[str, str] | None:
        """``(one-line summary, pretty-printed JSON)`` of a block's ``SCHEMA`` header, ``None`` without one."""
        schema = self.row(key).header.get("SCHEMA")
        if not schema:
            return None
        try:
            parsed = json.loads(schema)
        except ValueError:
            return ("SCHEMA (not JSON)", schema)  # a schema header that is not JSON is itself worth seeing
        fields = [f.get("name", "?") for f in parsed.get("fields", [])] if isinstance(parsed, dict) else []
        own = [f for f in fields if not f.startswith("_hoodie_")]
        name = parsed.get("name", "record") if isinstance(parsed, dict) else "record"
        summary = f"{name}: {len(fields)} fields ({len(fields) - len(own)} Hudi meta fields, then {', '.join(own[:6])}"
        summary += ", …)" if len(own) > 6 else ")"
        return summary, json.dumps(parsed, indent=2)

    def frame(self) -> pd.DataFrame:
        """The visible rows as a pandas frame (without the headers)."""
        cols = [
            "replay",
            "partition",
            "log",
            "index",
            "block_type",
            "instant_time",
            "status",
            "record_count",
            "size",
            "min_event_time",
            "min_event_time_source",
            "schema_fields",
        ]
        return pd.DataFrame([{c: getattr(r, c) for c in cols} for r in self.visible_rows], columns=cols)


def _schema_field_count(schema: str | None) -> int:
    if not schema:
        return 0
    try:
        parsed = json.loads(schema)
    except ValueError:
        return 0
    return len(parsed.get("fields", [])) if isinstance(parsed, dict) else 0


# -- event-time distribution ----------------------------------------------------------------------------------------

DISTRIBUTION_MODES: tuple[str, ...] = ("auto", "replay", "heatmap")


class DistributionModel:
    """Per file slice, the min event time of each log in replay order: out-of-order logs and, with T, the logs a
    compaction at T selects and the ones the prefix rule forces in.

    A log is *out of order* when its min event time is older than the min event time of a log replayed before it
    in the same slice (it arrived late). An event-time compaction takes, per slice, the shortest prefix in replay
    order holding every log with min event time ≤ T: the logs inside that prefix whose own min is > T are *forced*.

    Args:
        table: the table (``None`` when ``slices`` are given).
        event_time_field: defaults to the table's.
        threshold: T to draw (epoch ms, datetime or ISO string).
        slices: precomputed slices (tests, benchmarks) instead of reading the table.
        mode: ``auto`` (heatmap above :data:`HEATMAP_SLICE_THRESHOLD` slices), ``replay`` or ``heatmap``.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
        >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=50),
        ...                                             L.synthetic("f", 2, min_event_time=10)))
        >>> m = DistributionModel(slices=[s], threshold=20)
        >>> m.points[["position", "out_of_order", "selected", "forced"]].values.tolist()
        [[0, False, False, True], [1, True, True, False]]
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
        self.logs = pd.DataFrame()
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
        logs["slice"] = [labels[i] for i in logs["slice_index"]] if len(logs) else pd.Series(dtype=str)
        self.slice_labels = labels
        self.logs = logs
        known = logs[logs["has_data"] & logs["min_event_time"].notna()].copy()
        known["min_event_time"] = known["min_event_time"].astype("int64")
        known["time"] = ms_to_timestamps(known["min_event_time"].to_numpy()).to_numpy()
        # Out of order: older than a log replayed before it in the same slice (running max of the earlier minimums).
        earlier_max = known.groupby("slice_index")["min_event_time"].cummax().groupby(known["slice_index"]).shift(1)
        known["out_of_order"] = (known["min_event_time"] < earlier_max).fillna(False).astype(bool)
        self._known = known.reset_index(drop=True)
        # Logs with data but no known min event time cannot be placed on a time axis; count them instead.
        self.unknown = logs[logs["has_data"] & logs["min_event_time"].isna()][
            ["slice_index", "slice", "log_file"]
        ].reset_index(drop=True)
        self._mark()

    def _mark(self) -> None:
        """Selected (min ≤ T) and forced (inside a slice's prefix, min > T) flags for the current T."""
        pts = self._known.copy()
        t = self.threshold_ms
        if t is None or pts.empty:
            pts["selected"] = False
            pts["forced"] = False
        else:
            pts["selected"] = pts["min_event_time"] <= t
            # The prefix of a slice ends at its last log (any log, by position) whose min is ≤ T.
            logs = self.logs
            sel_all = logs["has_data"] & logs["min_event_time"].notna() & (logs["min_event_time"] <= t)
            last = logs[sel_all].groupby("slice_index")["position"].max()
            prefix_end = pts["slice_index"].map(last)
            pts["forced"] = (~pts["selected"]) & prefix_end.notna() & (pts["position"] < prefix_end.fillna(-1))
        self.points = pts[
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
                "out_of_order",
                "selected",
                "forced",
            ]
        ]

    # -- settings -----------------------------------------------------------------------------------------------------
    def set_threshold(self, threshold: Any) -> None:
        """Set T (epoch ms, datetime or ISO string; ``None`` hides the line)."""
        self.threshold_ms = None if threshold is None else to_epoch_ms(threshold)
        self._mark()

    def set_mode(self, mode: str) -> None:
        """``auto``, ``replay`` or ``heatmap``."""
        if mode not in DISTRIBUTION_MODES:
            raise InvalidActionError(f"mode must be one of {', '.join(DISTRIBUTION_MODES)}, got {mode!r}")
        self.mode = mode

    @property
    def use_heatmap(self) -> bool:
        """Whether the per-slice chart is a heatmap (forced, or auto above the slice threshold)."""
        if self.mode == "auto":
            return len(self.slices) > HEATMAP_SLICE_THRESHOLD
        return self.mode == "heatmap"

    # -- states -------------------------------------------------------------------------------------------------------
    @property
    def empty_reason(self) -> str | None:
        """Why there is nothing to plot, in words; ``None`` when there is."""
        if not len(self.logs):
            return "no file slice has log files: there is nothing an event-time compaction could select"
        if self.points.empty:
            n = int(self.logs["has_data"].sum())
            if not n:
                return (
                    f"the {len(self.logs):,} log file(s) hold no data blocks (deletes or commands only): "
                    "they have no event time to plot"
                )
            return (
                f"none of the {n:,} log file(s) with data has a known min event time: no MIN_EVENT_TIME header, no "
                "minEventTime write stat, and no event-time field to scan (set the event-time field)"
            )
        return None

    @property
    def unit_hint(self) -> str | None:
        """A warning when the min event times look like epoch seconds."""
        return epoch_unit_hint(self.points["min_event_time"].to_numpy()) if len(self.points) else None

    # -- frames -------------------------------------------------------------------------------------------------------
    def replay_slices(self, limit: int = MAX_REPLAY_SLICES) -> list[int]:
        """Slice indexes the replay chart draws: all, or the ``limit`` with the most out-of-order logs."""
        have = self.points["slice_index"].drop_duplicates().tolist() if len(self.points) else []
        if len(have) <= limit:
            return [int(i) for i in have]
        ooo = self.points.groupby("slice_index")["out_of_order"].sum().sort_values(ascending=False, kind="stable")
        return sorted(int(i) for i in ooo.index[:limit])

    def per_slice(self) -> pd.DataFrame:
        """One row per slice with logs of known min event time: count, out-of-order logs, min, median, max (ms)."""
        cols = ["slice", "logs", "out_of_order", "min", "median", "max"]
        if self.points.empty:
            return pd.DataFrame(columns=cols)
        g = self.points.groupby("slice", sort=False)
        out = pd.DataFrame(
            {
                "logs": g.size(),
                "out_of_order": g["out_of_order"].sum(),
                "min": g["min_event_time"].min(),
                "median": g["min_event_time"].median(),
                "max": g["min_event_time"].max(),
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

    def bin_width_ms(self, bins: int = 50) -> int:
        """The histogram's bin width (ms): the range of min event times split into ``bins`` equal bins."""
        h = self.histogram(bins)
        return int((h["end_ms"] - h["start_ms"]).iloc[0]) if len(h) else 0

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
        return int(self.points["selected"].sum()) if len(self.points) else 0

    def counts(self) -> dict[str, int]:
        """Slices, logs, logs with a known min event time, out of order, selected and forced at T, unknown."""
        p = self.points
        return {
            "slices": len(self.slices),
            "log_files": len(self.logs),
            "known": len(p),
            "out_of_order": int(p["out_of_order"].sum()) if len(p) else 0,
            "slices_out_of_order": int(p.groupby("slice_index")["out_of_order"].any().sum()) if len(p) else 0,
            "selected": int(p["selected"].sum()) if len(p) else 0,
            "forced": int(p["forced"].sum()) if len(p) else 0,
            "unknown": len(self.unknown),
        }


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
    :meth:`set_threshold`, so it stays interactive on 10k file slices. Hudi's stock strategies that cannot apply
    to the table (day-based on partitions that are not ``yyyy/MM/dd``) are found once and left out of
    :attr:`strategy_choices`, with the reason in :attr:`unavailable`.

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
            # The table as it is now (as the other views read it), not the listing the handle cached earlier.
            slices = slice_set(table.refresh(), field_name)
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
        self.max_event_time_ms: int | None = event_model.max_event_time_ms
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
        self.unavailable: dict[str, str] = {}
        for name in STRATEGIES:
            if name == "event_time":
                continue
            try:
                self._model(name)
            except EvtError as exc:
                self.unavailable[name] = str(exc)
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

    @property
    def strategy_choices(self) -> list[str]:
        """The strategies that apply to this table, in :data:`STRATEGIES` order."""
        return [s for s in STRATEGIES if s not in self.unavailable]

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
        if mode == "allowed_lateness" and self.max_event_time_ms is None:
            raise InvalidThresholdError(
                "allowed lateness needs the max ingested event time, and no log of this table records one "
                "(maxEventTime write stats): choose an explicit threshold or data latency"
            )
        t = strategy.resolve_threshold(self.now_ms, self.max_event_time_ms)
        self.threshold_ms = t
        self.threshold_mode, self.mode_value_ms = mode, value
        if self.strategy_name == "event_time":
            self._recompute()
        return self

    def set_strategy(self, name: str) -> ThresholdPreviewModel:
        """Switch the strategy (:data:`STRATEGIES`); Hudi's strategies take whole slices.

        Raises:
            InvalidActionError: unknown strategy name, or one that does not apply to this table (the reason is in
                the message; the current strategy stays).
        """
        if name not in STRATEGIES:
            raise InvalidActionError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
        if name in self.unavailable:
            raise InvalidActionError(f"{name} does not apply to this table: {self.unavailable[name]}")
        self.strategy_name = name
        self._recompute()
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
    def empty_reason(self) -> str | None:
        """Why no event-time threshold can select anything on this table, in words; ``None`` when one can."""
        s = self.preview.summary
        if s.logs_total == 0:
            return "the table has no log files: there is nothing to compact (its read-optimized view is its snapshot)"
        if self.range_ms is None:
            return (
                f"none of its {s.logs_total:,} log file(s) has a known min event time (no data blocks, or no "
                "event-time field to read it from): an event-time compaction cannot select anything"
            )
        return None

    @property
    def freshness(self) -> int | None:
        """The RO freshness (epoch ms) the plan would give, ``None`` when it cannot be promised or when the plan
        would compact nothing (a plan that changes nothing promises nothing new)."""
        s = self.preview.summary
        return s.ro_freshness_ms if s.logs_compacted else None

    @property
    def freshness_text(self) -> str:
        """The freshness, or why there is none, in words."""
        s = self.preview.summary
        if self.empty_reason is not None:
            return "RO freshness: no plan — " + self.empty_reason
        if not s.logs_compacted:
            return "RO freshness: unchanged — this plan would compact nothing"
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
            "written_total": s.bytes_written_estimate + s.link_bytes_copied,
            "full_logs": s.full_logs_compacted,
            "full_bytes_read": s.full_bytes_read,
            "full_bytes_written": s.full_bytes_written_estimate,
            "ro_freshness_ms": self.freshness,
        }

    def totals_lines(self) -> list[str]:
        """The totals as lines of plain text (what the widget shows)."""
        t = self.totals
        full_logs = t["full_logs"] or 0
        share = f" ({100 * t['selected_logs'] / full_logs:.0f}% of a full compaction)" if full_logs else ""
        threshold = "-" if t["threshold_ms"] is None else format_ms(t["threshold_ms"])
        return [
            f"strategy: {t['strategy']}",
            f"threshold T: {threshold}",
            f"selected logs: {t['selected_logs']:,} of {t['logs_total']:,}{share}",
            f"forced logs: {t['forced_logs']:,} (compacted only because a later log of their slice holds events ≤ T)",
            f"kept logs: {t['kept_logs']:,}",
            f"slices compacted: {t['slices_selected']:,} of {t['slices_candidate']:,} with logs "
            f"({t['slices_partial']:,} partially)",
            f"bytes to read: {format_bytes(t['bytes_read'])} (full compaction: {format_bytes(t['full_bytes_read'])})",
            f"bytes to write: {format_bytes(t['written_total'])} = base files ≈ {format_bytes(t['bytes_written'])} + "
            f"link copies {format_bytes(t['link_bytes_copied'])} (full compaction: "
            f"{format_bytes(t['full_bytes_written'])})",
            f"links: {t['links']:,}",
        ]

    def warnings(self) -> list[str]:
        """What an operator should know before scheduling this plan, in words."""
        s = self.preview.summary
        out: list[str] = []
        if s.copy_costs_more:
            out.append(
                f"copying the {s.links:,} leftover log(s) ({format_bytes(s.link_bytes_copied)}) makes this plan write "
                f"{format_bytes(s.bytes_written_estimate + s.link_bytes_copied)}, more than a full compaction "
                f"(≈ {format_bytes(s.full_bytes_written_estimate)}): compact everything, or link by symlink "
                "where the storage has them"
            )
        if self.strategy_name == "event_time" and self.range_ms is not None:
            lo, hi = self.range_ms
            how = {
                "data_latency": "T = compaction time − data latency",
                "allowed_lateness": "T = max event time − lateness",
            }.get(self.threshold_mode, "T")
            if self.threshold_ms > hi:
                out.append(
                    f"{how} = {format_ms(self.threshold_ms)} is after every log's min event time (the latest is "
                    f"{format_ms(hi)}): the plan takes every log with data"
                    + (
                        " — on a table replaying history, allowed lateness fits better than data latency"
                        if self.threshold_mode == "data_latency"
                        else ""
                    )
                )
            elif self.threshold_ms < lo:
                out.append(
                    f"{how} = {format_ms(self.threshold_ms)} is before every log's min event time (the earliest is "
                    f"{format_ms(lo)}): the plan compacts nothing"
                )
            hint = epoch_unit_hint([lo, hi])
            if hint:
                out.append(hint)
        return out

    def notes(self) -> list[str]:
        """Strategies left out of the selector, and why."""
        return [f"{name} is not offered: {reason}" for name, reason in self.unavailable.items()]

    def slider_range(self) -> tuple[int, int]:
        """``(lo, hi)`` epoch ms for a threshold slider: the min event times of the logs (through the max event
        time recorded), widened to at least an hour and to the current T."""
        t = self.threshold_ms
        if self.range_ms is None:
            lo, hi = t - 3_600_000, t
        else:
            lo, hi = self.range_ms
            if self.max_event_time_ms is not None and lo <= self.max_event_time_ms <= lo + 366 * 86_400_000:
                hi = max(hi, self.max_event_time_ms)
        lo, hi = min(lo, t), max(hi, t)
        if hi - lo < 3_600_000:
            mid = lo + (hi - lo) // 2
            lo, hi = mid - 1_800_000, mid + 1_800_000
        return int(lo), int(hi)

    def cost_curve(self, points: int = 48) -> pd.DataFrame:
        """The event-time plan's figures for ``points`` thresholds across :meth:`slider_range` — what compacting up
        to each T costs, next to a full compaction.

        Columns: ``threshold_ms``, ``threshold`` (timestamp), ``logs_compacted``, ``forced``, ``links``,
        ``bytes_read``, ``bytes_written`` (base files), ``link_bytes_copied``, ``written_total``, ``full_bytes_read``,
        ``full_bytes_written``.
        """
        lo, hi = self.slider_range()
        model = self._model("event_time")
        ts = np.unique(np.linspace(lo, hi, max(2, points)).astype(np.int64))
        rows = []
        for t in ts:
            s = model.set_threshold(int(t)).summary
            rows.append(
                {
                    "threshold_ms": int(t),
                    "logs_compacted": s.logs_compacted,
                    "forced": s.logs_forced,
                    "links": s.links,
                    "bytes_read": s.bytes_read,
                    "bytes_written": s.bytes_written_estimate,
                    "link_bytes_copied": s.link_bytes_copied,
                    "written_total": s.bytes_written_estimate + s.link_bytes_copied,
                    "full_bytes_read": s.full_bytes_read,
                    "full_bytes_written": s.full_bytes_written_estimate,
                }
            )
        model.set_threshold(self.threshold_ms)  # the live model is shared: put it back where the slider is
        frame = pd.DataFrame(rows)
        frame["threshold"] = ms_to_timestamps(frame["threshold_ms"].to_numpy()).to_numpy()
        return frame

    def chart_frame(self, max_bars: int = HEATMAP_SLICE_THRESHOLD) -> pd.DataFrame:
        """Compacted (selected by T, forced) vs kept logs per bar: one bar per slice, or per partition (then per
        slice range) when there are more slices than ``max_bars`` — a bar per slice is unreadable long before 10k.

        Columns: ``label``, ``compacted`` (all compacted, forced included), ``forced``, ``kept``.
        """
        ps = self.preview.per_slice
        compacted = ps.column("logs_compacted").to_numpy().astype(np.int64)
        forced = ps.column("logs_forced").to_numpy().astype(np.int64)
        total = ps.column("num_log_files").to_numpy().astype(np.int64)
        kept = total - compacted
        n = ps.num_rows
        if n <= max_bars:
            pairs = zip(ps.column("partition_path").to_pylist(), ps.column("file_id").to_pylist(), strict=True)
            labels = slice_labels(list(pairs))
            return pd.DataFrame({"label": labels, "compacted": compacted, "forced": forced, "kept": kept})
        parts = ps.column("partition_path").to_pandas().fillna("")
        frame = pd.DataFrame({"label": parts, "compacted": compacted, "forced": forced, "kept": kept})
        grouped = frame.groupby("label", sort=False, as_index=False).sum()
        if len(grouped) <= max_bars:
            return grouped
        group = np.arange(n) * max_bars // n
        out = (
            pd.DataFrame({"g": group, "compacted": compacted, "forced": forced, "kept": kept})
            .groupby("g", as_index=False)
            .sum()
        )
        starts = np.searchsorted(group, out["g"].to_numpy())
        ends = np.append(starts[1:], n) - 1
        out["label"] = [f"slices {s}-{e}" for s, e in zip(starts, ends, strict=True)]
        return out[["label", "compacted", "forced", "kept"]]


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
        head = f"RO rows: {self.ro_rows:,}; snapshot rows: {self.snapshot_rows:,}"
        if self.threshold_ms is None:
            return head + "; no published RO freshness to check"
        verdict = "OK" if self.ok else "FAILED"
        return (
            f"{head}; snapshot rows with event time ≤ {format_ms(self.threshold_ms)}: {self.snapshot_rows_le_t:,}; "
            f"missing from RO: {self.missing_from_ro:,} (late records: {self.late_records:,}) — "
            f"RO ⊇ snapshot events ≤ T: {verdict}"
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


def freshness_sentence(f: Freshness) -> str:
    """A :class:`~evt_toolkit.compaction.freshness.Freshness` in words, times and lag formatted."""
    if f.threshold_ms is None:
        return f"RO freshness: none ({f.reason})"
    text = f"RO freshness: every event ≤ {format_ms(f.threshold_ms)} (compaction {f.instant}"
    text += "" if f.lag_ms is None else f", lag {format_duration(f.lag_ms)}"
    text += ")"
    if f.late_records:
        text += f"; {f.late_records:,} late record(s) in {len(f.late_log_files):,} log file(s)"
    return text


RUNNER_STATES: tuple[str, ...] = ("idle", "scheduled", "running", "done", "failed")

#: The states in which each runner action makes sense (the buttons are enabled exactly then).
RUNNER_ACTIONS: dict[str, tuple[str, ...]] = {
    "schedule": ("idle", "done", "failed"),
    "run": ("scheduled",),
    "validate": ("scheduled", "done", "failed"),
    "unschedule": ("scheduled", "failed"),
}

#: Files an unschedule dry run lists, by kind (the first pattern that matches names the kind).
_FILE_KINDS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("timeline file", lambda p: p.startswith(".hoodie/")),
    ("link", lambda p: ".log." in p),
    ("base file", lambda p: p.endswith(".parquet")),
)


def _stopped(exc: BaseException, what: str, then: str) -> str:
    """The runner's line for an action that an interrupt or an error outside the ``EvtError`` hierarchy stopped."""
    why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
    return f"{what} did not complete ({why}); {then}"


class CompactionRunnerModel:
    """Schedule → run → validate a compaction, as a small state machine: ``idle → scheduled → running → done``
    (or ``failed``); ``unschedule`` returns a scheduled plan to ``idle``.

    Actions never raise :class:`~evt_toolkit.errors.EvtError`: they record it in :attr:`last_error` and return
    ``None``, so a notebook widget can show it plainly. An action that does not fit the state (run before schedule)
    is refused before the table is touched. An interrupt (Ctrl-C, the notebook's *interrupt kernel*) or another
    exception is recorded too and then raised; an interrupted run ends ``failed``, like a run that failed, so that its
    plan can be unscheduled.

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
        self.event_time_field: str | None = getattr(strategy, "event_time_field", None)
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

    def _fail(self, exc: BaseException | str, state: str | None = None) -> None:
        self.last_error = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        if state is not None:
            self.state = state
        self._notify()

    def enabled(self) -> dict[str, bool]:
        """Which actions fit the current state (what the buttons show as enabled)."""
        return {action: self.state in states for action, states in RUNNER_ACTIONS.items()}

    @property
    def next_action(self) -> str | None:
        """The action a user most likely wants next (the highlighted button): schedule, then run."""
        return {"idle": "schedule", "scheduled": "run", "failed": "unschedule"}.get(self.state)

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
            # The schedule plans the table as it is; "before" must describe that table too, not the listing this
            # handle cached while the notebook sat open (its logs may be rolled back or cleaned since).
            self.freshness_before = self.table.refresh().ro_freshness()
            c = self.table.compaction.schedule(strategy, link_mode=self.link_mode, link_timing=self.link_timing)
        except EvtError as exc:
            self._fail(exc, "idle")
            return None
        except BaseException as exc:
            self._fail(_stopped(exc, "the schedule", "a plan it wrote is among the table's pending compactions"))
            raise
        if c is None:
            self.state = "idle"
            self.message = f"nothing to compact with {strategy!r}: no plan written"
        else:
            self.scheduled = c
            self.state = "scheduled"
            t = "" if c.threshold is None else f" at T = {format_ms(c.threshold)}"
            self.message = (
                f"scheduled compaction {c.instant}{t}: {c.operations:,} operation(s), {len(c.links):,} link(s)"
            )
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
            field_name = self.event_time_field or self.table.config.event_time_field
            # Check the freshness the table publishes, which may be below the plan's T (deleted or late data).
            published = self.freshness_after.threshold_ms
            self.check = ro_snapshot_check(self.table, published, field_name, self.freshness_after.late_records)
        except EvtError as exc:
            self._fail(exc, "failed")
            return None
        except BaseException as exc:
            # Interrupted (Ctrl-C, the notebook's interrupt) or failing otherwise: the plan stays pending, as after a
            # failed run — unschedule it, or schedule again — and the interrupt goes on to the caller.
            self._fail(
                _stopped(exc, f"the run of compaction {c.instant}", "unschedule it, or schedule again"), "failed"
            )
            raise
        self.state = "done"
        r = self.result
        self.message = (
            f"compaction {r.instant} completed: {r.operations:,} operation(s), {r.log_files_compacted:,} log file(s) "
            f"compacted, {r.links:,} link(s), {r.records_written:,} records written in "
            f"{format_duration(r.duration_s * 1000)}"
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
            f"OK ({v.checked:,} checks)" if v.ok else "problems: " + "; ".join(v.problems)
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
        except BaseException as exc:
            self._fail(_stopped(exc, f"the unschedule of {self.scheduled.instant}", "unschedule it again"))
            raise
        self.unschedule_report = report
        if report.refused_reason:
            self.last_error = f"unschedule refused: {report.refused_reason}"
        elif dry_run:
            self.message = f"dry run: would delete {self.files_summary(report.files_to_delete)}"
        else:
            self.message = f"unscheduled {report.instant}: deleted {self.files_summary(report.files_to_delete)}"
            self.state = "idle"
            self.scheduled = None
        self._notify()
        return report

    # -- figures -------------------------------------------------------------------------------------------------------
    @staticmethod
    def files_by_kind(files: Sequence[str]) -> dict[str, list[str]]:
        """Files grouped by kind: timeline file, link, base file, other."""
        out: dict[str, list[str]] = {}
        for f in files:
            kind = next((k for k, match in _FILE_KINDS if match(f)), "other file")
            out.setdefault(kind, []).append(f)
        return out

    @classmethod
    def files_summary(cls, files: Sequence[str]) -> str:
        """``306 files: 2 timeline files, 304 links`` — a count per kind instead of a list."""
        kinds = cls.files_by_kind(files)
        parts = [f"{len(v):,} {k}{'' if len(v) == 1 else 's'}" for k, v in kinds.items()]
        return f"{len(files):,} file(s)" + (f": {', '.join(parts)}" if parts else "")

    def freshness_lines(self) -> list[str]:
        """RO freshness before and after the run, and how the published T compares with the plan's, in words."""
        lines: list[str] = []
        if self.freshness_before is not None:
            lines.append("before: " + freshness_sentence(self.freshness_before))
        if self.freshness_after is not None:
            lines.append("after: " + freshness_sentence(self.freshness_after))
            planned = self.scheduled.threshold if self.scheduled is not None else None
            published = self.freshness_after.threshold_ms
            if planned is not None and published == planned:
                lines.append(f"the RO view now promises the plan's T ({format_ms(planned)})")
            elif planned is not None and published is not None:
                lines.append(
                    f"the RO view promises {format_ms(published)}, earlier than the plan's T ({format_ms(planned)})"
                )
            elif planned is not None:
                lines.append(f"the plan's T was {format_ms(planned)}; the table publishes no freshness (see why above)")
        return lines

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


def plan_summary(instant: str, plan: CompactionPlan) -> PlanSummary:
    """Summarize a ``HoodieCompactionPlan``."""
    extra = plan.extra
    ops: list[dict[str, Any]] = []
    n_logs = n_links = 0
    for op in plan.operations:
        n_logs += len(op.delta_files)
        n_links += len(op.links)
        ops.append(
            {
                "partition_path": op.partition_path,
                "file_id": op.file_id,
                "base_instant": op.base_instant,
                "base_file": op.data_file,
                "log_files": list(op.delta_files),
                "links": [f"{x.symlink} → {x.target}" for x in op.links],
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

    @property
    def newest_first(self) -> list[InstantRow]:
        """The instants, newest first (how an operator reads a timeline)."""
        return self.rows[::-1]

    def counts(self) -> dict[str, int]:
        """Instants per action, pending ones under ``pending``."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.action] = out.get(r.action, 0) + 1
        out["pending"] = sum(1 for r in self.rows if r.pending)
        return out

    def chart_frame(self) -> pd.DataFrame:
        """One row per instant for a timeline chart: ``requested`` and ``completed`` (timestamps parsed from the
        instant times, in the timeline's own zone), ``action``, ``state``, ``pending``, ``label`` (hover text),
        ``threshold_ms`` of compactions."""
        rows = []
        for r in self.rows:
            label = f"{r.action} {r.time} ({r.state})"
            if r.plan is not None:
                p = r.plan
                label += f"<br>{p.operations:,} operation(s), {p.log_files:,} log(s), {p.links:,} link(s)"
                if p.threshold_ms is not None:
                    label += f"<br>T = {format_ms(p.threshold_ms)}"
            rows.append(
                {
                    "instant": r.time,
                    "requested": instant_to_datetime(r.time),
                    "completed": instant_to_datetime(r.completion_time) if r.completion_time else None,
                    "action": r.action,
                    "state": r.state,
                    "pending": r.pending,
                    "label": label,
                    "threshold_ms": r.plan.threshold_ms if r.plan is not None else None,
                }
            )
        cols = ["instant", "requested", "completed", "action", "state", "pending", "label", "threshold_ms"]
        return pd.DataFrame(rows, columns=cols)

    def frame(self) -> pd.DataFrame:
        """Instants newest first as a pandas frame (``time``, ``action``, ``state``, ``completion_time``, plan
        figures)."""
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
                for r in self.newest_first
            ],
            columns=["time", "action", "state", "completion_time", "operations", "log_files", "links", "threshold_ms"],
        )


def instant_to_datetime(instant: str | None) -> datetime | None:
    """A Hudi instant time (``yyyyMMddHHmmss[SSS]``) as a naive datetime; ``None`` when it is not one.

    Example:
        >>> instant_to_datetime("20130105000000123")
        datetime.datetime(2013, 1, 5, 0, 0, 0, 123000)
    """
    if not instant or not instant.isdigit() or len(instant) not in (14, 17):
        return None
    try:
        dt = datetime.strptime(instant[:14], "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return dt.replace(microsecond=int(instant[14:] or 0) * 1000)
