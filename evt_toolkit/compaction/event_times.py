"""Per-log-file event-time facts of a table's latest file slices — the one module of this package doing I/O.

:func:`slice_infos` turns a :class:`~evt_toolkit.table.table.HudiTable` into the
:class:`~evt_toolkit.compaction.model.SliceInfo` records the pure decision layer works on. Block facts come from
``Inspect.log_file_blocks`` (design §2.2: ``MIN_EVENT_TIME`` header → ``minEventTime`` write stat → scan of the
event-time column), so there is one implementation of that precedence — except where the committed write stats
account for every byte of a log file (:func:`facts_from_write_stats`): then they give the same facts without reading
the file, one GET per commit instead of one per log (on S3 the difference between seconds and a minute for 10,000
logs). Facts read from files are cached per log file (table, path, size, field, unit) in a module-level LRU: a log
file only grows, and a grown file has a new size, so a scan happens once per file state. Whether a block is
committed is *not* cached — it is re-read from the current timeline on every call, because a deltacommit completing
does not change the file. A name and size can come back with other contents, though: on version 6 the next write
into a slice takes the name (and, with a batch of the same shape, the size) of a log a rollback deleted. So only
facts whose every block counts on the timeline are kept, and a hit with a block that no longer counts is read again
(:func:`_all_visible`).

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> [lf.min_event_time for s in slice_infos(t, "ts") for lf in s.log_files]  # doctest: +SKIP
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from evt_toolkit.compaction.model import LOG_FILES_SCHEMA, SLICES_SCHEMA, LogFileInfo, SliceInfo, SliceSet
from evt_toolkit.errors import EventTimeError, EvtError
from evt_toolkit.format.logfile import BlockType, HeaderKey, LogBlock
from evt_toolkit.read.slice_reader import spurious_attempts
from evt_toolkit.table.inspect import Inspect
from evt_toolkit.table.schema import latest_avro_schema
from evt_toolkit.table.write_stats import LogWrite, delete_event_time_index, log_event_time_index, log_write_index

if TYPE_CHECKING:
    from evt_toolkit.format.eventtime import EpochUnit
    from evt_toolkit.format.extra_metadata import DeleteEventTimes
    from evt_toolkit.table.fs_view import FileSlice, LogFile
    from evt_toolkit.table.table import Table
    from evt_toolkit.table.timeline import Timeline

__all__ = [
    "BlockFacts",
    "clear_cache",
    "facts_from_write_stats",
    "max_ingested_event_time",
    "slice_infos",
    "slice_set",
]

#: The block type of facts taken from write stats: a data block whose format (Avro, Parquet, HFile) they do not say.
STAT_DATA_BLOCK = "DATA"
# Block types that carry records for the merged view; CDC blocks are change logs, not slice data.
_DATA_BLOCKS = frozenset({"AVRO_DATA", "PARQUET_DATA", "HFILE_DATA", STAT_DATA_BLOCK})
_WRITE_BLOCKS = _DATA_BLOCKS | {"DELETE"}
_CACHE_LIMIT = 200_000


@dataclass(frozen=True, slots=True)
class BlockFacts:
    """What is kept of one log block: its writer, type, record count and min event time with its source."""

    instant: str | None
    block_type: str
    record_count: int | None
    min_event_time: int | None
    min_event_time_source: str | None
    target: str | None = None  # a rollback command block's TARGET_INSTANT_TIME
    attempt: int | None = None  # the task attempt of its BLOCK_IDENTIFIER header (Hudi 0.14.0), None when absent


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


def _all_visible(blocks: Iterable[BlockFacts], timeline: Timeline) -> bool:
    """Whether every data and delete block was written by an instant ``timeline`` counts: the only facts the cache
    keeps, and the only ones it gives back.

    A log's name and size do not tell its contents apart. On version 6 a log is named after its slice and one version
    past the slice's newest log, so once a rollback deleted a write's log the next write into the slice takes the same
    name, and a batch of the same shape the same size. The deleted log was written by an instant that has not
    completed (a failed write) or no longer counts (a rolled-back one); the log written again, by one that counts. So
    facts with a block of an instant that does not count are neither kept nor taken: such a log is read again.
    """
    return all(b.block_type not in _WRITE_BLOCKS or _is_committed(timeline, b.instant) for b in blocks)


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
                r["target_instant_time"],
                _attempt_of(r),
            )
        )
    return out


def _attempt_of(row: Mapping[str, Any]) -> int | None:
    """The task attempt of a block row's ``BLOCK_IDENTIFIER`` header, parsed as the log reader parses it."""
    raw = dict(row.get("header") or ()).get(HeaderKey.BLOCK_IDENTIFIER.name)
    if not raw:
        return None
    probe = LogBlock(
        row["log_file"], row["offset"], 0, BlockType.AVRO_DATA, 1, {HeaderKey.BLOCK_IDENTIFIER: raw}, {}, 0, 0
    )
    ident = probe.block_identifier
    return ident[0] if ident is not None else None


def _load_block_facts(
    table: Table,
    wanted: Mapping[tuple[str, str], LogFile],
    field: str | None,
    unit: EpochUnit,
) -> dict[tuple[str, str], list[BlockFacts]]:
    """Block facts of the wanted logs, ``(partition, log name) -> blocks``, from their headers (one read per log)."""
    logs = [(partition, lf) for (partition, _), lf in wanted.items()]
    rows = Inspect(table).log_file_blocks(logs, event_time_field=field, event_time_unit=unit).to_pylist()
    return _rows_to_facts(rows)


def facts_from_write_stats(
    name: str,
    size: int,
    writes: Sequence[LogWrite],
    is_visible: Callable[[str], bool],
    deletes: Callable[[], Mapping[tuple[str, str], DeleteEventTimes]],
) -> tuple[BlockFacts, ...] | None:
    """The block facts of a log file taken from the write stats of the deltacommits that wrote it, or ``None``.

    Used only where they give exactly what the header scan would (design §2.2's precedence): the stats must cover
    every byte of the file — offsets from 0, contiguous, ending at its listed ``size`` — so no block of a failed or
    rolled-back write, no rollback command block and no corrupt tail can hide between or after them; each write is
    visible (a hidden write's blocks count one by one as uncommitted, which the stats cannot tell); each wrote
    records or deletes (an empty write is ambiguous); and each write with records carries ``minEventTime``, which is
    what the scan reports for its data blocks: the ``MIN_EVENT_TIME`` header the toolkit's writer derives from the
    same records, or this very stat where there is no header. Deletes take their event times from
    ``evt.write.delete_event_times``, as the scan does; a delete without them stays unknown.

    Args:
        name: the log file's name.
        size: its listed size in bytes.
        writes: the deltacommits' writes into it, by offset (:func:`~evt_toolkit.table.write_stats.log_write_index`).
        is_visible: the timeline's visibility rule.
        deletes: the delete event-time index (called only when a write deleted records).
    """
    if not writes or writes[0].offset != 0:
        return None
    out: list[BlockFacts] = []
    end = 0
    for w in writes:
        if w.offset != end or w.size <= 0 or (w.records <= 0 and w.deletes <= 0) or not is_visible(w.instant):
            return None
        end = w.offset + w.size
        if w.records > 0:
            if w.min_event_time is None:
                return None
            out.append(BlockFacts(w.instant, STAT_DATA_BLOCK, w.records, w.min_event_time, "write_stats"))
        if w.deletes > 0:
            d = deletes().get((name, w.instant))
            known = d is not None and d.known
            mn = d.min_ms if d is not None and known else None
            out.append(BlockFacts(w.instant, "DELETE", None, mn, "write_stats" if mn is not None else None))
    return tuple(out) if end == size else None


_LogFacts = tuple[int | None, str | None, bool, str | None, int | None, int, int]


def _log_facts(
    lf: LogFile,
    blocks: tuple[BlockFacts, ...],
    timeline: Timeline,
    max_index: dict[tuple[str, str], int],
) -> _LogFacts:
    """``(min event time, its source, has data, last instant, max event time, uncommitted blocks, corrupt blocks)``
    of one log."""
    has_data = False
    min_et: int | None = None
    min_src: str | None = None
    unknown = False
    max_et: int | None = None
    last_instant: str | None = None
    uncommitted = corrupt = 0
    for b in blocks:
        if b.block_type == "CORRUPT":
            corrupt += 1
            continue
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
    return min_et, min_src, has_data, last_instant, max_et, uncommitted, corrupt


def _without_rolled_back(
    logs: Sequence[tuple[BlockFacts, ...]],
) -> tuple[list[tuple[tuple[BlockFacts, ...], int]], list[tuple[int, int]]]:
    """Per log of one slice (in replay order), its blocks without those a later rollback command block of the slice
    removes (every earlier block of its target, as the log reader does) and those of a retried task's spurious
    attempt, and how many were removed.

    A rolled-back write's blocks hold no records of the slice: once archiving moved the timeline's start past its
    instant they look committed, but they must not lower a log's min event time nor make it hold data.
    """
    removed: set[tuple[int, int]] = set()
    seen: list[tuple[int, int, str | None]] = []
    for i, blocks in enumerate(logs):
        for j, b in enumerate(blocks):
            if b.block_type == "COMMAND" and b.target is not None:
                removed.update((li, bj) for li, bj, inst in seen if inst == b.target)
            else:
                seen.append((i, j, b.instant))
    # A retried task's spurious attempt: the blocks the log reader drops (``spurious_attempts``) hold no records.
    writes = [(i, j) for i, j, _ in seen if (i, j) not in removed and logs[i][j].block_type in _WRITE_BLOCKS]
    drop = spurious_attempts([(logs[i][j].instant, logs[i][j].attempt) for i, j in writes])
    removed.update(writes[k] for k in drop)
    retried = {logs[i][j].instant for k, (i, j) in enumerate(writes) if k in drop}
    spans: dict[str | None, tuple[int, int]] = {}
    for i, j in writes:
        inst = logs[i][j].instant
        if inst in retried:
            first, _ = spans.get(inst, (i, i))
            spans[inst] = (first, i)
    return [
        (
            tuple(b for j, b in enumerate(blocks) if (i, j) not in removed),
            sum(1 for j in range(len(blocks)) if (i, j) in removed),
        )
        for i, blocks in enumerate(logs)
    ], sorted(spans.values(), key=lambda span: span[1])


def _tie_attempt_spans(facts: list[_LogFacts], spans: Sequence[tuple[int, int]]) -> list[_LogFacts]:
    """``facts`` of one slice's logs, adjusted so that no compaction prefix ends inside a span of logs holding the
    blocks of a retried task's instant (:func:`~evt_toolkit.read.slice_reader.spurious_attempts`).

    Which attempt counts is decided among the blocks a slice holds: a prefix that took the attempt that counts into
    the new base file would leave the dropped attempt's blocks alone in the new slice, where they would count. So the
    last log of each span takes the smallest known min event time of the span (and counts as holding data), and when
    that last log's own min is unknown every log of the span becomes unknown: then the prefix rule either passes
    the whole span or stops before it. Both only ever lengthen or shorten a prefix to a span's edge, and a longer
    prefix is always a sound one.
    """
    out = list(facts)
    changed = bool(spans)
    while changed:
        changed = False
        for a, b in spans:
            known = [(mn, out[k][1]) for k in range(a, b + 1) if out[k][2] and (mn := out[k][0]) is not None]
            last = out[b]
            if last[2] and last[0] is None:
                for k in range(a, b):
                    if out[k][2] and out[k][0] is not None:
                        out[k] = (None, None, *out[k][2:])
                        changed = True
                continue
            if not known:
                continue
            low, src = min(known, key=lambda m: m[0])
            if not last[2] or last[0] is None or low < last[0]:
                out[b] = (low, src, True, *last[3:])
                changed = True
    return out


def _slice_log_facts(s: FileSlice, g: _Gathered) -> list[_LogFacts]:
    """The facts of each log of slice ``s`` (:func:`_log_facts`; rolled-back and spurious blocks count as
    uncommitted), tied across retried tasks' attempts (:func:`_tie_attempt_spans`)."""
    kept, spans = _without_rolled_back([g.blocks[(s.partition_path, lf.name)] for lf in s.log_files])
    facts: list[_LogFacts] = []
    for lf, (blocks, rolled) in zip(s.log_files, kept, strict=True):
        mn, src, has_data, instant, mx, unc, bad = _log_facts(lf, blocks, g.timeline, g.max_index)
        facts.append((mn, src, has_data, instant, mx, unc + rolled, bad))
    return _tie_attempt_spans(facts, spans)


@dataclass(frozen=True, slots=True)
class _Gathered:
    slices: list[FileSlice]
    pending: dict[tuple[str, str], str]
    blocks: dict[tuple[str, str], tuple[BlockFacts, ...]]
    timeline: Timeline
    max_index: dict[tuple[str, str], int]


def held_by_other_table_services(table: Table) -> dict[tuple[str, str], str]:
    """``(partition, file id) -> instant`` of the file groups a pending log compaction or clustering plan holds.

    Hudi's compaction planner leaves them out (``BaseHoodieCompactionPlanGenerator``: file groups in pending
    compaction, log compaction and clustering): a log compaction completing after a compaction of its file group
    would add its compacted log to the new slice, and a clustering would replace the file group the compaction
    wrote. A replace commit without a clustering plan (insert overwrite) names no file groups until it completes.
    """
    timeline = table.timeline
    out: dict[tuple[str, str], str] = {}
    for inst in timeline.pending_log_compactions():
        try:
            operations = timeline.compaction_plan(inst).operations
        except EvtError:
            continue  # no plan to read (yet): nothing known to leave out
        for op in operations:
            out[(op.partition_path, op.file_id)] = inst.time
    for inst in timeline.pending_clustering():
        try:
            plan = timeline.replace_requested(inst).get("clusteringPlan") or {}
        except EvtError:
            continue
        for group in plan.get("inputGroups") or ():
            for sl in group.get("slices") or ():
                out[(sl.get("partitionPath") or "", sl.get("fileId") or "")] = inst.time
    return out


def _gather(table: Table, event_time_field: str | None, unit: EpochUnit | None, use_write_stats: bool) -> _Gathered:
    field = event_time_field or table.config.event_time_field
    # The table's unit unless the caller names one: a scan must read integer epochs as the writer meant them.
    unit = unit or cast("EpochUnit", table.config.event_time_unit or "ms")
    view = table.view
    pending = held_by_other_table_services(table)
    pending.update({k: v.time for k, v in view.pending_compaction_operations.items()})
    merged: list[FileSlice] = view.latest_merged_file_slices()
    timeline = table.timeline
    keys: dict[tuple[str, str], _CacheKey] = {}
    wanted: dict[tuple[str, str], LogFile] = {}
    resolved: dict[tuple[str, str], tuple[BlockFacts, ...]] = {}
    from_stats: set[tuple[str, str]] = set()
    for s in merged:
        for lf in s.log_files:
            key: _CacheKey = (table.path, lf.path, lf.size, field, unit)
            keys[(s.partition_path, lf.name)] = key
            hit = _cache_get(key)
            if hit is None or not _all_visible(hit, timeline):
                wanted[(s.partition_path, lf.name)] = lf
            else:
                resolved[(s.partition_path, lf.name)] = hit
    # Write stats record the table's own event-time field (the one writers track): another field is read from the logs.
    if wanted and field and field == table.config.event_time_field and use_write_stats:
        # One GET per commit instead of one per log: logs whose every byte the committed write stats account for.
        writes = log_write_index(timeline)
        delete_index: dict[tuple[str, str], DeleteEventTimes] | None = None

        def deletes() -> dict[tuple[str, str], DeleteEventTimes]:
            nonlocal delete_index
            if delete_index is None:
                delete_index = delete_event_time_index(timeline)
            return delete_index

        for k, lf in list(wanted.items()):
            ws = writes.get(lf.path)
            facts = facts_from_write_stats(lf.name, lf.size, ws, timeline.is_visible, deletes) if ws else None
            if facts is not None:
                # Not cached: they depend on the timeline as well as the file (a restore can hide a write).
                resolved[k] = facts
                from_stats.add(k)
                del wanted[k]
    if wanted:
        loaded = _load_block_facts(table, wanted, field, unit)
        for k in wanted:
            blocks = tuple(loaded.get(k, ()))
            resolved[k] = blocks
            if _all_visible(blocks, timeline):
                _cache_put(keys[k], blocks)
    if from_stats:
        # Which attempt of a retried task counts depends on every block's BLOCK_IDENTIFIER header, which the write
        # stats do not tell: a slice with such headers has its logs taken from the stats scanned as well.
        rescan: dict[tuple[str, str], LogFile] = {}
        for s in merged:
            ks = [(s.partition_path, lf.name) for lf in s.log_files]
            if any(k in from_stats for k in ks) and any(
                b.attempt is not None for k in ks if k not in from_stats for b in resolved[k]
            ):
                rescan.update({k: lf for k, lf in zip(ks, s.log_files, strict=True) if k in from_stats})
        if rescan:
            loaded = _load_block_facts(table, rescan, field, unit)
            for k in rescan:
                resolved[k] = tuple(loaded.get(k, ()))
                if _all_visible(resolved[k], timeline):
                    _cache_put(keys[k], resolved[k])
    max_index = log_event_time_index(timeline, "maxEventTime") if field else {}
    return _Gathered(merged, pending, resolved, timeline, max_index)


def event_time_field_for(table: Table, strategy: object) -> str | None:
    """The event-time field a strategy works on: its own ``event_time_field``, else the table's
    (``hoodie.payload.event.time.field``). The preview and the schedule both read slices through it, so a schedule
    plans exactly what the preview showed.

    Raises:
        EventTimeError: the field is not a column of the table's latest schema (a misspelt field would leave every
            log without a min event time, so the preview would show nothing to compact and say nothing of why).
    """
    field = getattr(strategy, "event_time_field", None) or table.config.event_time_field
    if field:
        schema = latest_avro_schema(table.config, table.timeline)
        names = [str(f.get("name")) for f in (schema or {}).get("fields", []) if isinstance(f, dict)]
        if names and field.split(".")[0] not in names:
            raise EventTimeError(
                f"event-time field {field!r} is not a column of {table.storage.uri} (its columns: "
                f"{', '.join(n for n in names if not n.startswith('_hoodie_'))})"
            )
    return field


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


def slice_infos(
    table: Table, event_time_field: str | None = None, unit: EpochUnit | None = None, *, use_write_stats: bool = True
) -> list[SliceInfo]:
    """The latest merged file slices of ``table`` with per-log-file event-time facts.

    Args:
        table: the table.
        event_time_field: defaults to ``hoodie.payload.event.time.field``; without one, only ``MIN_EVENT_TIME``
            headers give a min event time.
        unit: unit of integer epoch event times (default: the table's, ``hoodie.evt.event.time.unit``, else ms).
        use_write_stats: take a log's block facts from the committed write stats where they account for the whole
            file (:func:`facts_from_write_stats`; one GET per commit instead of one per log); ``False`` reads every
            log's headers. Both give the same facts; only ``min_event_time_source`` says which was used.

    Returns:
        One :class:`SliceInfo` per file group (``getLatestMergedFileSlicesBeforeOrOn``), logs in replay order;
        groups held by a pending compaction carry its instant in ``pending_compaction``.
    """
    g = _gather(table, event_time_field, unit, use_write_stats)
    out: list[SliceInfo] = []
    for s in g.slices:
        logs = []
        for lf, (mn, src, has_data, instant, mx, unc, bad) in zip(s.log_files, _slice_log_facts(s, g), strict=True):
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
                    corrupt_blocks=bad,
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


def slice_set(
    table: Table, event_time_field: str | None = None, unit: EpochUnit | None = None, *, use_write_stats: bool = True
) -> SliceSet:
    """:func:`slice_infos` in columnar form, written straight into columns (no record per log file).

    What :class:`~evt_toolkit.compaction.preview.PreviewModel` is built from: a table with a million log files gives
    its preview without a million Python objects. Same arguments and facts as :func:`slice_infos`;
    ``list(slice_set(t)) == slice_infos(t)``.
    """
    g = _gather(table, event_time_field, unit, use_write_stats)
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
        for j, (lf, facts) in enumerate(zip(s.log_files, _slice_log_facts(s, g), strict=True)):
            mn, src, has_data, instant, mx, unc, bad = facts
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
                ("corrupt_blocks", bad),
            ):
                lg[k].append(v)
    return SliceSet(pa.table(sl, schema=SLICES_SCHEMA), pa.table(lg, schema=LOG_FILES_SCHEMA))
