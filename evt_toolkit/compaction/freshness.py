"""Read-optimized freshness: the threshold T up to which the RO view holds every event (design §1.4, §2.3).

After an event-time compaction ``C`` at threshold ``T`` completes, every log left in the latest file slices has
min event time > T, so the RO view (base files only) holds every event ≤ T — provided the plans ran serially and
nothing was written with events ≤ T after ``C`` was scheduled. :func:`ro_freshness` checks both on the timeline and
on the logs, and reports what it finds instead of promising more than holds.

Decisions:

* **Which compaction.** The last *completed* compaction whose plan (or ``C.commit``) records an event-time
  threshold (``evt.compaction.threshold.ms``). Compactions of other strategies and clusterings that complete after
  it do not void T: they only move records from logs into base files, which can never take an event ≤ T out of
  the RO view. A later event-time compaction replaces it, even with a lower T (the reported T then is the later
  plan's — a true, if conservative, bound).
* **Serial rule.** T is reported only if no other compaction, log compaction or clustering was pending at any
  moment between ``C``'s schedule and its completion (their pending windows do not overlap). Windows come from the
  timeline: on layout 2 the requested and completion times; on layout 1 (table version 6), which records no
  completion time, the modification times of the instant files — Hudi 0.14 derives ``stateTransitionTime`` the
  same way. Otherwise ``threshold_ms`` is ``None`` and ``reason`` names the overlapping instant; no earlier plan is
  used instead, because silently moving freshness backwards would hide the problem.
* **Late data.** Records with event time ≤ T in committed data blocks of the latest (merged) file slices' logs,
  written by instants after ``C`` was scheduled: counted exactly (their event-time column is decoded) and their
  log files listed. They are not hidden: the RO view does *not* hold them, and ``late_records`` says how many.
  Delete blocks carry no event time and are not counted. Records ≤ T in blocks written *before* ``C`` (which the
  plan should have compacted — only possible when a log's min event time was unknown at planning) are reported
  separately as ``unexpected_records``.
* Links of a pending compaction scheduled with ``link_timing="schedule"`` duplicate their targets inside the same
  merged slice; they are counted once.

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> f = ro_freshness(t)  # doctest: +SKIP
    >>> f.threshold_iso, f.late_records  # doctest: +SKIP
    ('2025-01-01T00:00:00.000Z', 0)
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any, cast

import pyarrow.compute as pc

from evt_toolkit.compaction.event_times import slice_infos
from evt_toolkit.compaction.plan import EXTRA_LINK_MODE, EXTRA_LINK_TIMING, EXTRA_STRATEGY, EXTRA_THRESHOLD_MS
from evt_toolkit.compaction.strategy import iso_ms
from evt_toolkit.errors import EvtError, StorageError
from evt_toolkit.eventtime import EpochUnit, to_epoch_ms
from evt_toolkit.format.log_content import read_block_records
from evt_toolkit.format.logfile import BlockType, scan_log_blocks
from evt_toolkit.format.names import InstantFileName
from evt_toolkit.table.timeline import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    Instant,
    InstantState,
    Timeline,
)
from evt_toolkit.table.write_stats import log_event_time_index

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.table.fs_view import FileSlice, LogFile
    from evt_toolkit.table.table import HudiTable

__all__ = [
    "CompactionRecord",
    "Freshness",
    "LateData",
    "ServiceWindow",
    "completed_compactions",
    "deduplicated_logs",
    "late_data",
    "overlapping",
    "pending_link_targets",
    "ro_freshness",
    "table_service_windows",
]

_RECORD_BLOCKS = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA})


# -- completed compactions ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One completed compaction as the timeline records it.

    Attributes:
        instant: the compaction instant ``C``.
        completed_at: when it completed (``yyyyMMddHHmmssSSS``): the layout-2 completion time, else the UTC
            modification time of ``C.commit``; ``None`` when unknown.
        strategy: the strategy class from ``extraMetadata`` (``None`` for plans not written by this toolkit).
        threshold_ms: T (event-time plans), else ``None``.
        link_mode: ``copy``/``symlink`` (event-time plans).
        link_timing: ``schedule``/``execute``.
        operations: plan operations (file slices compacted).
        log_files_compacted: logs merged (``deltaFilePaths`` of the plan).
        links: links recorded in the plan.
        records_written: ``numWrites`` summed over the commit's write stats.
        bytes_written: ``fileSizeInBytes`` (else ``totalWriteBytes``) summed over the write stats.
        extra_metadata: the commit's ``extraMetadata`` over the plan's.
    """

    instant: str
    completed_at: str | None
    strategy: str | None
    threshold_ms: int | None
    link_mode: str | None
    link_timing: str | None
    operations: int
    log_files_compacted: int
    links: int
    records_written: int
    bytes_written: int
    extra_metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_event_time(self) -> bool:
        """The plan recorded an event-time threshold."""
        return self.threshold_ms is not None


def _requested_action(timeline: Timeline, inst: Instant) -> str | None:
    rel = timeline.state_file(inst, InstantState.REQUESTED)
    if rel is None:
        return None
    parsed = InstantFileName.parse(posixpath.basename(rel))
    return parsed.action if parsed is not None else None


def _is_compaction(timeline: Timeline, inst: Instant) -> bool:
    if inst.action == COMPACTION:
        return True
    return inst.action == COMMIT and _requested_action(timeline, inst) == COMPACTION


def _mtime_instant(storage: TableStorage | None, rel: str | None) -> str | None:
    """A file's modification time as a UTC instant string (layout 1 has no completion times)."""
    if storage is None or rel is None:
        return None
    try:
        mtime = storage.mtime(rel)
    except (OSError, StorageError):
        return None
    if mtime is None:
        return None
    dt = mtime if mtime.tzinfo is not None else mtime.replace(tzinfo=UTC)
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y%m%d%H%M%S") + f"{dt.microsecond // 1000:03d}"


def _int(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None


def completed_compactions(table: HudiTable) -> list[CompactionRecord]:
    """Every completed compaction on the active timeline, oldest first.

    Example:
        >>> [c.threshold_ms for c in completed_compactions(t)]  # doctest: +SKIP
        [1735689600000]
    """
    timeline = table.timeline
    out: list[CompactionRecord] = []
    for inst in timeline.completed():
        if not _is_compaction(timeline, inst):
            continue
        try:
            plan = timeline.compaction_plan(inst)
        except EvtError:
            plan = {}
        try:
            meta = timeline.commit_metadata(inst)
        except EvtError:
            meta = {}
        extra: dict[str, str] = {}
        extra.update({str(k): str(v) for k, v in (plan.get("extraMetadata") or {}).items() if v is not None})
        extra.update({str(k): str(v) for k, v in (meta.get("extraMetadata") or {}).items() if v is not None})
        ops = plan.get("operations") or []
        records = 0
        size = 0
        for stats in (meta.get("partitionToWriteStats") or {}).values():
            for st in stats or []:
                records += _int(st.get("numWrites")) or 0
                size += _int(st.get("fileSizeInBytes")) or _int(st.get("totalWriteBytes")) or 0
        out.append(
            CompactionRecord(
                instant=inst.time,
                completed_at=_completed_at(table, inst),
                strategy=extra.get(EXTRA_STRATEGY),
                threshold_ms=_int(extra.get(EXTRA_THRESHOLD_MS)),
                link_mode=extra.get(EXTRA_LINK_MODE),
                link_timing=extra.get(EXTRA_LINK_TIMING),
                operations=len(ops),
                log_files_compacted=sum(len(op.get("deltaFilePaths") or []) for op in ops),
                links=sum(len(op.get("symlinkOperations") or []) for op in ops),
                records_written=records,
                bytes_written=size,
                extra_metadata=extra,
            )
        )
    return out


def _completed_at(table: HudiTable, inst: Instant) -> str | None:
    if inst.completion_time is not None:
        return inst.completion_time
    if not inst.is_completed:
        return None
    return _mtime_instant(table.storage, table.timeline.state_file(inst, InstantState.COMPLETED))


# -- serial rule -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServiceWindow:
    """The pending window of one table service: scheduled at ``start``, completed at ``end`` (``None``: pending).

    ``start``/``end`` are comparable instant strings: requested/completion times on layout 2, the instant files'
    UTC modification times on layout 1.
    """

    instant: str
    kind: str
    start: str
    end: str | None


def _service_kind(timeline: Timeline, inst: Instant) -> str | None:
    if inst.action in (COMPACTION, LOG_COMPACTION):
        return inst.action
    if inst.action in (REPLACE_COMMIT, CLUSTERING):
        return "clustering"
    if inst.is_completed and inst.action in (COMMIT, DELTA_COMMIT):
        requested = _requested_action(timeline, inst)
        if requested in (COMPACTION, LOG_COMPACTION):
            return requested
    return None


def table_service_windows(table: HudiTable) -> list[ServiceWindow]:
    """Pending windows of every compaction, log compaction and clustering (replacecommit) on the timeline.

    Example:
        >>> [(w.instant, w.kind, w.end is None) for w in table_service_windows(t)]  # doctest: +SKIP
        [('20250101000000000', 'compaction', False)]
    """
    timeline = table.timeline
    layout2 = timeline.layout_version >= 2
    out: list[ServiceWindow] = []
    for inst in timeline.instants:
        kind = _service_kind(timeline, inst)
        if kind is None:
            continue
        if layout2:
            start: str | None = inst.time
            end = inst.completion_time if inst.is_completed else None
        else:
            first = None
            for state in (InstantState.REQUESTED, InstantState.INFLIGHT, InstantState.COMPLETED):
                first = timeline.state_file(inst, state)
                if first is not None:
                    break
            start = _mtime_instant(table.storage, first)
            end = _completed_at(table, inst) if inst.is_completed else None
        # Without a modification time the requested time is the best estimate of the schedule moment.
        out.append(ServiceWindow(inst.time, kind, start or inst.time, end))
    return out


def overlapping(windows: Iterable[ServiceWindow], c: ServiceWindow) -> list[ServiceWindow]:
    """Windows other than ``c`` that were pending at some moment while ``c`` was (touching ends do not count).

    Example:
        >>> c = ServiceWindow("2", "compaction", "2", "5")
        >>> [w.instant for w in overlapping([ServiceWindow("1", "clustering", "1", "3"),
        ...                                  ServiceWindow("5", "compaction", "5", None), c], c)]
        ['1']
    """
    out = []
    for w in windows:
        if w.instant == c.instant:
            continue
        # Two intervals [s, e) overlap iff each starts before the other ends; an open end is +infinity.
        starts_before_c_ends = c.end is None or w.start < c.end
        ends_after_c_starts = w.end is None or w.end > c.start
        if starts_before_c_ends and ends_after_c_starts:
            out.append(w)
    return out


# -- late data ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LateData:
    """Records with event time ≤ T still in logs of the latest slices.

    Attributes:
        late_records: in blocks written after the compaction was scheduled.
        late_log_files: their log files (paths relative to the base path), sorted.
        unexpected_records: in blocks written before it (should be 0).
        unexpected_log_files: their log files.
        blocks_decoded: data blocks whose event-time column was decoded.
    """

    late_records: int = 0
    late_log_files: tuple[str, ...] = ()
    unexpected_records: int = 0
    unexpected_log_files: tuple[str, ...] = ()
    blocks_decoded: int = 0


def pending_link_targets(table: HudiTable) -> dict[tuple[str, str], dict[str, str]]:
    """``(partition, fileId) -> {link name: target name}`` of the pending compaction plans.

    Links created at schedule time sit in the pending plan's new slice while their targets are still in the old
    one; the merged slice holds both, and counting either figure twice would be wrong.
    """
    from evt_toolkit.compaction.plan import plan_links

    out: dict[tuple[str, str], dict[str, str]] = {}
    for inst in table.timeline.pending_compactions():
        try:
            plan = table.timeline.compaction_plan(inst)
        except EvtError:
            continue
        for key, links in plan_links(plan).items():
            out.setdefault(key, {}).update({x.symlink: x.target for x in links})
    return out


def deduplicated_logs(file_slice: FileSlice, links: Mapping[str, str]) -> list[LogFile]:
    """The slice's logs without links of a pending plan whose target is in the same merged slice."""
    names = {lf.name for lf in file_slice.log_files}
    return [lf for lf in file_slice.log_files if not (lf.name in links and links[lf.name] in names)]


def late_data(table: HudiTable, instant: str, threshold_ms: int, *, event_time_field: str | None = None) -> LateData:
    """Count records with event time ≤ ``threshold_ms`` in the logs of the latest (merged) file slices.

    Blocks are skipped without decoding when their ``MIN_EVENT_TIME`` header or their writer's ``minEventTime``
    write stat is > T; all others are decoded and counted exactly.

    Args:
        table: the table.
        instant: the compaction instant ``C``: blocks written after it are *late*, earlier ones *unexpected*.
        threshold_ms: T.
        event_time_field: defaults to the plan's / table's event-time field.

    Raises:
        EvtError: a log block cannot be decoded (named in the message).

    Example:
        >>> d = late_data(t, "20250102000000000", 1735689600000)  # doctest: +SKIP
        >>> d.late_records, d.late_log_files  # doctest: +SKIP
        (5, ('r0/.fg-1_20250102000000000.log.3_0-0-0',))
    """
    field_name = event_time_field or table.config.event_time_field
    timeline = table.timeline
    unit = cast(EpochUnit, table.config.event_time_unit or "ms")
    stat_mins = log_event_time_index(timeline, "minEventTime")
    pending_links = pending_link_targets(table)
    # File-level facts (cached per log file by slice_infos) rule out most logs without opening them: a file whose
    # committed data all has min event time > T cannot hold a late record.
    facts = {(s.partition_path, lf.name): lf for s in slice_infos(table, field_name, unit) for lf in s.log_files}
    late = unexpected = decoded = 0
    late_files: set[str] = set()
    unexpected_files: set[str] = set()
    for s in table.view.latest_merged_file_slices():
        for lf in deduplicated_logs(s, pending_links.get((s.partition_path, s.file_id), {})):
            info = facts.get((s.partition_path, lf.name))
            if info is not None and (
                not info.has_data or (info.min_event_time is not None and info.min_event_time > threshold_ms)
            ):
                continue
            with table.storage.open_input(lf.path) as f:
                for blk in scan_log_blocks(f, lf.size, lf.path):
                    inst = blk.instant_time
                    if blk.block_type not in _RECORD_BLOCKS or blk.corrupt_reason or inst is None:
                        continue
                    if not (timeline.is_completed_commit_time(inst) or timeline.is_before_timeline_start(inst)):
                        continue  # uncommitted blocks are invisible to every reader
                    header_min = blk.min_event_time_header
                    known_min = header_min if header_min is not None else stat_mins.get((lf.name, inst))
                    if known_min is not None and known_min > threshold_ms:
                        continue
                    if not field_name:
                        continue
                    records = read_block_records(f, blk)
                    decoded += 1
                    if field_name not in records.column_names:
                        continue
                    ms = to_epoch_ms(records[field_name], unit, field=field_name)
                    n = int(pc.sum(pc.less_equal(ms, threshold_ms)).as_py() or 0)
                    if n == 0:
                        continue
                    if inst > instant:
                        late += n
                        late_files.add(lf.path)
                    else:
                        unexpected += n
                        unexpected_files.add(lf.path)
    return LateData(late, tuple(sorted(late_files)), unexpected, tuple(sorted(unexpected_files)), decoded)


# -- freshness ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Freshness:
    """The RO view's freshness: every event ≤ ``threshold_ms`` is in the base files (apart from late data).

    Attributes:
        threshold_ms: T of the last completed event-time compaction when the serial rule held, else ``None``.
        instant: that compaction's instant (also set when T is withheld), ``None`` without one.
        completed_at: when it completed (see :class:`CompactionRecord`).
        serial_rule_held: no other compaction/clustering was pending during its pending window.
        late_records: records ≤ T written after it was scheduled, still only in logs (not in the RO view).
        late_log_files: the log files holding them.
        lag_ms: ``now − T`` at ``computed_at_ms``; ``None`` without T.
        reason: why ``threshold_ms`` is ``None`` (``None`` when it is set).
        unexpected_records: records ≤ T in logs written before the compaction (see the module notes).
        overlapping: instants that broke the serial rule.
        computed_at_ms: the wall-clock time the figures were taken (epoch ms).
        planned_threshold_ms: T recorded by the plan, even when withheld.

    Example:
        >>> Freshness(None, None, None, False, 0, (), None, "no event-time compaction has completed").fresh
        False
    """

    threshold_ms: int | None
    instant: str | None
    completed_at: str | None
    serial_rule_held: bool
    late_records: int
    late_log_files: tuple[str, ...]
    lag_ms: int | None
    reason: str | None = None
    unexpected_records: int = 0
    overlapping: tuple[str, ...] = ()
    computed_at_ms: int = 0
    planned_threshold_ms: int | None = None

    @property
    def fresh(self) -> bool:
        """A freshness threshold is published."""
        return self.threshold_ms is not None

    @property
    def threshold_iso(self) -> str | None:
        """T as ISO-8601 UTC."""
        return None if self.threshold_ms is None else iso_ms(self.threshold_ms)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict (adds ``threshold_iso``)."""
        return {
            "threshold_ms": self.threshold_ms,
            "threshold_iso": self.threshold_iso,
            "instant": self.instant,
            "completed_at": self.completed_at,
            "serial_rule_held": self.serial_rule_held,
            "late_records": self.late_records,
            "late_log_files": list(self.late_log_files),
            "lag_ms": self.lag_ms,
            "reason": self.reason,
            "unexpected_records": self.unexpected_records,
            "overlapping": list(self.overlapping),
            "computed_at_ms": self.computed_at_ms,
            "planned_threshold_ms": self.planned_threshold_ms,
        }

    def text(self) -> str:
        """One line for a notebook or the CLI."""
        if self.threshold_ms is None:
            return f"RO freshness: none ({self.reason})"
        lag = "" if self.lag_ms is None else f", lag {self.lag_ms / 1000:.0f} s"
        late = (
            f"; {self.late_records} late record(s) in {len(self.late_log_files)} log file(s)"
            if self.late_records
            else ""
        )
        return f"RO freshness: every event ≤ {self.threshold_iso} (compaction {self.instant}{lag}){late}"


def ro_freshness(table: HudiTable, *, now_ms: int | None = None) -> Freshness:
    """The RO view's freshness (see the module notes for the rules).

    Args:
        table: the table.
        now_ms: "now" for ``lag_ms`` (default: the wall clock).

    Example:
        >>> f = ro_freshness(t)  # doctest: +SKIP
        >>> f.threshold_ms, f.serial_rule_held, f.late_records  # doctest: +SKIP
        (1735689600000, True, 0)
    """
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    history = completed_compactions(table)
    event_time = [c for c in history if c.is_event_time]
    if not event_time:
        reason = (
            "no compaction has completed"
            if not history
            else "no completed compaction recorded an event-time threshold (only other strategies ran)"
        )
        return Freshness(None, None, None, False, 0, (), None, reason, computed_at_ms=now)
    last = event_time[-1]
    assert last.threshold_ms is not None
    windows = table_service_windows(table)
    mine = next((w for w in windows if w.instant == last.instant), None)
    overlap = overlapping(windows, mine) if mine is not None else []
    field_name = last.extra_metadata.get("hoodie.payload.event.time.field") or None
    data = late_data(table, last.instant, last.threshold_ms, event_time_field=field_name)
    if overlap:
        names = ", ".join(f"{w.kind} {w.instant}" + ("" if w.end is not None else " (still pending)") for w in overlap)
        return Freshness(
            None,
            last.instant,
            last.completed_at,
            False,
            data.late_records,
            data.late_log_files,
            None,
            f"serial rule broken: {names} was pending while compaction {last.instant} was; the plan skipped the "
            "file groups it held, so events ≤ T may remain only in logs",
            data.unexpected_records,
            tuple(w.instant for w in overlap),
            now,
            last.threshold_ms,
        )
    return Freshness(
        last.threshold_ms,
        last.instant,
        last.completed_at,
        True,
        data.late_records,
        data.late_log_files,
        now - last.threshold_ms,
        None,
        data.unexpected_records,
        (),
        now,
        last.threshold_ms,
    )
