"""Per-log-file event-time facts of a table's latest file slices — the one module of this package doing I/O.

:func:`slice_infos` turns a :class:`~evt_toolkit.table.table.HudiTable` into the
:class:`~evt_toolkit.compaction.model.SliceInfo` records the pure decision layer works on. Block facts come from
``Inspect.log_blocks`` (design §2.2: ``MIN_EVENT_TIME`` header → ``minEventTime`` write stat → scan of the
event-time column), so there is one implementation of that precedence. They are cached per log file
(table, path, size, field, unit) in a module-level LRU: a log file only grows, and a grown file has a new size, so a
scan happens once per file state. Whether a block is committed is *not* cached — it is re-read from the current
timeline on every call, because a deltacommit completing does not change the file.

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> [lf.min_event_time for s in slice_infos(t, "ts") for lf in s.log_files]  # doctest: +SKIP
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from evt_toolkit.compaction.model import LOG_FILES_SCHEMA, SLICES_SCHEMA, LogFileInfo, SliceInfo, SliceSet
from evt_toolkit.errors import EvtError
from evt_toolkit.table.inspect import Inspect
from evt_toolkit.table.write_stats import log_event_time_index

if TYPE_CHECKING:
    from evt_toolkit.format.eventtime import EpochUnit
    from evt_toolkit.table.fs_view import FileSlice, LogFile
    from evt_toolkit.table.table import Table
    from evt_toolkit.table.timeline import Timeline

__all__ = ["BlockFacts", "clear_cache", "max_ingested_event_time", "slice_infos", "slice_set"]

# Block types that carry records for the merged view; CDC blocks are change logs, not slice data.
_DATA_BLOCKS = frozenset({"AVRO_DATA", "PARQUET_DATA", "HFILE_DATA"})
_WRITE_BLOCKS = _DATA_BLOCKS | {"DELETE"}
_CACHE_LIMIT = 200_000
#: Calling ``log_blocks`` once per file group rebuilds the file-system view each time; past this many uncached
#: groups one table-wide call is cheaper.
_PER_GROUP_LIMIT = 8


@dataclass(frozen=True, slots=True)
class BlockFacts:
    """What is kept of one log block: its writer, type, record count and min event time with its source."""

    instant: str | None
    block_type: str
    record_count: int | None
    min_event_time: int | None
    min_event_time_source: str | None


_CacheKey = tuple[str, str, int, str | None, str]
_CACHE: OrderedDict[_CacheKey, tuple[BlockFacts, ...]] = OrderedDict()


def clear_cache() -> None:
    """Forget every cached log file (tests, or after files were rewritten in place)."""
    _CACHE.clear()


def _cache_get(key: _CacheKey) -> tuple[BlockFacts, ...] | None:
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
    return hit


def _cache_put(key: _CacheKey, value: tuple[BlockFacts, ...]) -> None:
    _CACHE[key] = value
    _CACHE.move_to_end(key)
    while len(_CACHE) > _CACHE_LIMIT:
        _CACHE.popitem(last=False)


def _is_committed(timeline: Timeline, instant: str | None) -> bool:
    return instant is not None and timeline.is_visible(instant)


def max_ingested_event_time(table: Table) -> int | None:
    """Max ``maxEventTime`` over every completed commit's write stats (base and log files), ``None`` if none.

    The watermark of ``EventTimeBasedCompactionStrategy(allowed_lateness=...)`` when the logs alone do not tell
    (e.g. after a full compaction).
    """
    best: int | None = None
    for inst in table.timeline.completed_commits():
        try:
            meta = table.timeline.commit_metadata(inst)
        except EvtError:
            continue
        for st in meta.write_stats:
            value = st.max_event_time
            if value is not None and (best is None or value > best):
                best = value
    return best


def _rows_to_facts(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], list[BlockFacts]]:
    out: dict[tuple[str, str], list[BlockFacts]] = {}
    for r in rows:
        out.setdefault((r["partition_path"] or "", r["log_file"]), []).append(
            BlockFacts(
                r["instant_time"],
                r["block_type"],
                r["record_count"],
                r["min_event_time"],
                r["min_event_time_source"],
            )
        )
    return out


def _load_block_facts(
    table: Table,
    wanted: dict[tuple[str, str], list[LogFile]],
    merged_groups: set[tuple[str, str]],
    field: str | None,
    unit: EpochUnit,
) -> dict[tuple[str, str], list[BlockFacts]]:
    """Block facts of the wanted logs, ``(partition, log name) -> blocks``, through ``inspect.log_blocks``."""
    facts: dict[tuple[str, str], list[BlockFacts]] = {}
    inspect = Inspect(table)
    groups = {(p, lf.file_id) for (p, _), lfs in wanted.items() for lf in lfs}
    # A pending compaction's merged slice spans two slices; log_blocks only covers older ones with all_slices.
    per_group = [g for g in groups if g in merged_groups]
    rest = [g for g in groups if g not in merged_groups]
    if len(rest) > _PER_GROUP_LIMIT:
        facts.update(_rows_to_facts(inspect.log_blocks(event_time_field=field, event_time_unit=unit).to_pylist()))
    else:
        per_group.extend(rest)
    for partition, file_id in per_group:
        tbl = inspect.log_blocks(
            partition,
            file_id,
            event_time_field=field,
            event_time_unit=unit,
            all_slices=(partition, file_id) in merged_groups,
        )
        facts.update(_rows_to_facts(tbl.to_pylist()))
    return facts


_LogFacts = tuple[int | None, str | None, bool, str | None, int | None, int]


def _log_facts(
    lf: LogFile,
    blocks: tuple[BlockFacts, ...],
    timeline: Timeline,
    max_index: dict[tuple[str, str], int],
) -> _LogFacts:
    """``(min event time, its source, has data, last instant, max event time, uncommitted blocks)`` of one log."""
    has_data = False
    min_et: int | None = None
    min_src: str | None = None
    unknown = False
    max_et: int | None = None
    last_instant: str | None = None
    uncommitted = 0
    for b in blocks:
        if b.block_type not in _WRITE_BLOCKS:
            continue  # command blocks, corrupt blocks, CDC: no records of the slice
        if not _is_committed(timeline, b.instant):
            uncommitted += 1
            continue
        if last_instant is None or (b.instant is not None and b.instant > last_instant):
            last_instant = b.instant
        if b.block_type in _DATA_BLOCKS and b.record_count == 0:
            continue
        # Delete blocks count like data: a delete of a row with event time ≤ T must be compacted for the RO view
        # to agree with the snapshot, and one of unknown event time makes the file's min unknown.
        has_data = True
        if b.min_event_time is None:
            unknown = True  # one block of unknown min makes the file's min unknown: it could be the smallest
        elif min_et is None or b.min_event_time < min_et:
            min_et, min_src = b.min_event_time, b.min_event_time_source
        mx = max_index.get((lf.name, b.instant or ""))
        if mx is not None and (max_et is None or mx > max_et):
            max_et = mx
    if unknown:
        min_et, min_src = None, None
    return min_et, min_src, has_data, last_instant, max_et, uncommitted


@dataclass(frozen=True, slots=True)
class _Gathered:
    slices: list[FileSlice]
    pending: dict[tuple[str, str], str]
    blocks: dict[tuple[str, str], tuple[BlockFacts, ...]]
    timeline: Timeline
    max_index: dict[tuple[str, str], int]


def _gather(table: Table, event_time_field: str | None, unit: EpochUnit | None) -> _Gathered:
    field = event_time_field or table.config.event_time_field
    # The table's unit unless the caller names one: a scan must read integer epochs as the writer meant them.
    unit = unit or cast("EpochUnit", table.config.event_time_unit or "ms")
    view = table.view
    pending = {k: v.time for k, v in view.pending_compaction_operations.items()}
    merged: list[FileSlice] = view.latest_merged_file_slices()
    timeline = table.timeline
    keys: dict[tuple[str, str], _CacheKey] = {}
    wanted: dict[tuple[str, str], list[LogFile]] = {}
    resolved: dict[tuple[str, str], tuple[BlockFacts, ...]] = {}
    for s in merged:
        for lf in s.log_files:
            key: _CacheKey = (table.path, lf.path, lf.size, field, unit)
            keys[(s.partition_path, lf.name)] = key
            hit = _cache_get(key)
            if hit is None:
                wanted.setdefault((s.partition_path, lf.name), []).append(lf)
            else:
                resolved[(s.partition_path, lf.name)] = hit
    if wanted:
        loaded = _load_block_facts(table, wanted, set(pending), field, unit)
        for k in wanted:
            blocks = tuple(loaded.get(k, ()))
            resolved[k] = blocks
            _cache_put(keys[k], blocks)
    max_index = log_event_time_index(timeline, "maxEventTime") if field else {}
    return _Gathered(merged, pending, resolved, timeline, max_index)


def event_time_field_for(table: Table, strategy: object) -> str | None:
    """The event-time field a strategy works on: its own ``event_time_field``, else the table's
    (``hoodie.payload.event.time.field``). The preview and the schedule both read slices through it, so a schedule
    plans exactly what the preview showed."""
    return getattr(strategy, "event_time_field", None) or table.config.event_time_field


def reporting_event_time_field(table: Table, given: str | None = None) -> tuple[str | None, str]:
    """The event-time field to show a table with, and where it came from: ``given`` (``"given"``), else the table's
    ``hoodie.payload.event.time.field`` (``"table"``), else its ordering field (``"ordering field"``), else none.

    The ``evt`` command and the notebooks both follow this rule, so they report the same min event times.
    """
    c = table.config
    if given:
        return given, "given"
    if c.event_time_field:
        return c.event_time_field, "table"
    if c.ordering_field:
        return c.ordering_field, "ordering field"
    return None, "none"


def slice_infos(table: Table, event_time_field: str | None = None, unit: EpochUnit | None = None) -> list[SliceInfo]:
    """The latest merged file slices of ``table`` with per-log-file event-time facts.

    Args:
        table: the table.
        event_time_field: defaults to ``hoodie.payload.event.time.field``; without one, only ``MIN_EVENT_TIME``
            headers give a min event time.
        unit: unit of integer epoch event times (default: the table's, ``hoodie.evt.event.time.unit``, else ms).

    Returns:
        One :class:`SliceInfo` per file group (``getLatestMergedFileSlicesBeforeOrOn``), logs in replay order;
        groups held by a pending compaction carry its instant in ``pending_compaction``.
    """
    g = _gather(table, event_time_field, unit)
    out: list[SliceInfo] = []
    for s in g.slices:
        logs = []
        for lf in s.log_files:
            mn, src, has_data, instant, mx, unc = _log_facts(
                lf, g.blocks[(s.partition_path, lf.name)], g.timeline, g.max_index
            )
            logs.append(
                LogFileInfo(
                    path=lf.path,
                    name=lf.name,
                    file_id=lf.file_id,
                    partition_path=s.partition_path,
                    version=lf.version,
                    write_token=lf.write_token,
                    base_instant=lf.instant,
                    size=lf.size,
                    min_event_time=mn,
                    min_event_time_source=src,
                    has_data=has_data,
                    instant=instant,
                    max_event_time=mx,
                    uncommitted_blocks=unc,
                )
            )
        out.append(
            SliceInfo(
                partition_path=s.partition_path,
                file_id=s.file_id,
                base_instant=s.base_instant,
                base_file=s.base_file.name if s.base_file else None,
                base_file_size=s.base_file.size if s.base_file else None,
                log_files=tuple(logs),
                pending_compaction=g.pending.get((s.partition_path, s.file_id)),
            )
        )
    return out


def slice_set(table: Table, event_time_field: str | None = None, unit: EpochUnit | None = None) -> SliceSet:
    """:func:`slice_infos` in columnar form, written straight into columns (no record per log file).

    What :class:`~evt_toolkit.compaction.preview.PreviewModel` is built from: a table with a million log files gives
    its preview without a million Python objects. Same arguments and facts as :func:`slice_infos`;
    ``list(slice_set(t)) == slice_infos(t)``.
    """
    g = _gather(table, event_time_field, unit)
    sl: dict[str, list[Any]] = {f.name: [] for f in SLICES_SCHEMA}
    lg: dict[str, list[Any]] = {f.name: [] for f in LOG_FILES_SCHEMA}
    for i, s in enumerate(g.slices):
        sl["slice_index"].append(i)
        sl["partition_path"].append(s.partition_path)
        sl["file_id"].append(s.file_id)
        sl["base_instant"].append(s.base_instant)
        sl["base_file"].append(s.base_file.name if s.base_file else None)
        sl["base_file_size"].append(s.base_file.size if s.base_file else None)
        sl["num_log_files"].append(len(s.log_files))
        sl["total_log_size"].append(sum(lf.size for lf in s.log_files))
        sl["pending_compaction"].append(g.pending.get((s.partition_path, s.file_id)))
        for j, lf in enumerate(s.log_files):
            mn, src, has_data, instant, mx, unc = _log_facts(
                lf, g.blocks[(s.partition_path, lf.name)], g.timeline, g.max_index
            )
            for k, v in (
                ("slice_index", i),
                ("position", j),
                ("partition_path", s.partition_path),
                ("file_id", lf.file_id),
                ("log_file", lf.name),
                ("version", lf.version),
                ("write_token", lf.write_token),
                ("size", lf.size),
                ("min_event_time", mn),
                ("min_event_time_source", src),
                ("max_event_time", mx),
                ("has_data", has_data),
                ("instant", instant),
                ("uncommitted_blocks", unc),
            ):
                lg[k].append(v)
    return SliceSet(pa.table(sl, schema=SLICES_SCHEMA), pa.table(lg, schema=LOG_FILES_SCHEMA))
