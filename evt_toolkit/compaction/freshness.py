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
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.compaction.plan import EXTRA_LINK_MODE, EXTRA_LINK_TIMING, EXTRA_STRATEGY, EXTRA_THRESHOLD_MS
from evt_toolkit.errors import EvtError, StorageError
from evt_toolkit.format.eventtime import to_epoch_ms
from evt_toolkit.format.names import InstantFileName
from evt_toolkit.format.records import CommitMetadata, CompactionPlan
from evt_toolkit.format.text import iso_ms
from evt_toolkit.read.merge import IS_DELETED, KEY
from evt_toolkit.read.plan import ReadSpec
from evt_toolkit.read.slice_reader import decode_blocks, read_base_file, select_log_blocks
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

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.table.fs_view import FileSlice, LogFile
    from evt_toolkit.table.table import Table

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


def completed_compactions(table: Table) -> list[CompactionRecord]:
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
        plan: CompactionPlan | None
        try:
            plan = timeline.compaction_plan(inst)
        except EvtError:
            plan = None
        meta: CommitMetadata | None
        try:
            meta = timeline.commit_metadata(inst)
        except EvtError:
            meta = None
        extra: dict[str, str] = {}
        extra.update(plan.extra if plan is not None else {})
        extra.update(meta.extra if meta is not None else {})
        ops = plan.operations if plan is not None else ()
        stats = meta.write_stats if meta is not None else ()
        records = sum(st.num_writes for st in stats)
        size = sum(st.file_size or st.total_write_bytes for st in stats)
        out.append(
            CompactionRecord(
                instant=inst.time,
                completed_at=_completed_at(table, inst),
                strategy=extra.get(EXTRA_STRATEGY),
                threshold_ms=_int(extra.get(EXTRA_THRESHOLD_MS)),
                link_mode=extra.get(EXTRA_LINK_MODE),
                link_timing=extra.get(EXTRA_LINK_TIMING),
                operations=len(ops),
                log_files_compacted=sum(len(op.delta_files) for op in ops),
                links=sum(len(op.links) for op in ops),
                records_written=records,
                bytes_written=size,
                extra_metadata=extra,
            )
        )
    return out


def _completed_at(table: Table, inst: Instant) -> str | None:
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


def table_service_windows(table: Table) -> list[ServiceWindow]:
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
    """What the logs of the latest slices hold against a threshold T, and the freshness that is exactly true.

    Attributes:
        late_records: records with event time ≤ T in blocks written after the compaction was scheduled.
        late_log_files: their log files (paths relative to the base path), sorted.
        unexpected_records: records ≤ T in blocks written before it (should be 0).
        unexpected_log_files: their log files.
        blocks_decoded: log blocks decoded.
        min_log_event_time: the smallest event time of a live record in those logs (``None``: none).
        touched_ro_rows: rows of the RO view with event time ≤ T whose key a log updates or deletes.
        min_touched_ro_event_time: the smallest event time among them (``None``: none).
        exact_threshold_ms: the largest freshness ≤ T for which the RO view restricted to events ≤ it equals the
            snapshot restricted the same way (``None`` when no bound is below T).
    """

    late_records: int = 0
    late_log_files: tuple[str, ...] = ()
    unexpected_records: int = 0
    unexpected_log_files: tuple[str, ...] = ()
    blocks_decoded: int = 0
    min_log_event_time: int | None = None
    touched_ro_rows: int = 0
    min_touched_ro_event_time: int | None = None
    exact_threshold_ms: int | None = None


def pending_link_targets(table: Table) -> dict[tuple[str, str], dict[str, str]]:
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


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def late_data(table: Table, instant: str, threshold_ms: int, *, event_time_field: str | None = None) -> LateData:
    """Compare the logs of the latest (merged) file slices with the RO view at threshold ``threshold_ms``.

    Every visible block of those logs is decoded (the same blocks a snapshot reads: uncommitted ones skipped,
    rollbacks applied). Two things lower the freshness below T: a live log record with event time ≤ T (the RO view
    lacks that version — *late* when written after ``instant``), and a log record or delete of a key whose RO row has
    event time ≤ T (the RO view shows a version the snapshot replaced, or a row it deleted). The exact freshness is
    one millisecond below the smallest such event time; with neither, it is T.

    Args:
        table: the table.
        instant: the compaction instant ``C``: blocks written after it are *late*, earlier ones *unexpected*.
        threshold_ms: T.
        event_time_field: defaults to the plan's / table's event-time field.

    Raises:
        EvtError: a log block cannot be decoded (named in the message).

    Example:
        >>> d = late_data(t, "20250102000000000", 1735689600000)  # doctest: +SKIP
        >>> d.late_records, d.exact_threshold_ms  # doctest: +SKIP
        (5, 1735600000000)
    """
    field_name = event_time_field or table.config.event_time_field
    unit = table.config.event_time_unit
    if not field_name:
        return LateData()
    ctx = ReadSpec.of(table).context(None, storage=table.storage)
    if ctx.derives_keys or KEY not in ctx.schema.names:
        return LateData()
    pending_links = pending_link_targets(table)
    ro_bases = {(_partition_of(b.path), b.file_id): b for b in table.view.latest_base_files()}
    late = unexpected = decoded = touched_rows = 0
    late_files: set[str] = set()
    unexpected_files: set[str] = set()
    min_log: int | None = None
    min_touched: int | None = None
    for s in table.view.latest_merged_file_slices():
        logs = deduplicated_logs(s, pending_links.get((s.partition_path, s.file_id), {}))
        queued = select_log_blocks(ctx, tuple(logs))
        if not queued:
            continue
        touched: list[pa.Array] = []
        for q in queued:
            data, _, deletes, _ = decode_blocks(ctx, [q])
            decoded += 1
            touched.append(data[KEY].combine_chunks().cast(pa.string()))
            touched.append(deletes[KEY].combine_chunks().cast(pa.string()))
            if not data.num_rows or field_name not in data.column_names:
                continue
            live = data
            if IS_DELETED in data.column_names:
                live = data.filter(pc.invert(pc.fill_null(data[IS_DELETED].cast(pa.bool_()), False)))
            ms = to_epoch_ms(live[field_name], unit, field=field_name)
            if len(ms) and ms.null_count < len(ms):
                min_log = _min(min_log, int(pc.min(ms).as_py()))
            n = int(pc.sum(pc.less_equal(ms, threshold_ms)).as_py() or 0)
            if n and (q.block.instant_time or "") > instant:
                late += n
                late_files.add(q.log_file.path)
            elif n:
                unexpected += n
                unexpected_files.add(q.log_file.path)
        base = ro_bases.get((s.partition_path, s.file_id))
        if base is None:
            continue
        rows = read_base_file(ctx, base, [KEY, field_name])
        ms = to_epoch_ms(rows[field_name], unit, field=field_name)
        hit = pc.and_(
            pc.is_in(rows[KEY].cast(pa.string()), value_set=pa.concat_arrays(touched)),
            pc.fill_null(pc.less_equal(ms, threshold_ms), False),
        )
        hits = ms.filter(hit)
        if len(hits):
            touched_rows += len(hits)
            min_touched = _min(min_touched, int(pc.min(hits).as_py()))
    bound = threshold_ms
    for value in (min_log, min_touched):
        if value is not None and value - 1 < bound:
            bound = value - 1
    return LateData(
        late,
        tuple(sorted(late_files)),
        unexpected,
        tuple(sorted(unexpected_files)),
        decoded,
        min_log,
        touched_rows,
        min_touched,
        bound if bound < threshold_ms else None,
    )


def _partition_of(rel_path: str) -> str:
    return rel_path.rsplit("/", 1)[0] if "/" in rel_path else ""


# -- freshness ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Freshness:
    """The RO view's freshness: every event ≤ ``threshold_ms`` is in the base files (apart from late data).

    Attributes:
        threshold_ms: the exact freshness: the largest T' ≤ the last completed event-time compaction's T such that
            the RO view restricted to events ≤ T' equals the snapshot restricted the same way (``None`` when the
            serial rule was broken). Below the plan's T when logs hold late records ≤ T, or update or delete RO rows
            ≤ T; ``reason`` then says which.
        instant: that compaction's instant (also set when T is withheld), ``None`` without one.
        completed_at: when it completed (see :class:`CompactionRecord`).
        serial_rule_held: no other compaction/clustering was pending during its pending window.
        late_records: records ≤ T written after it was scheduled, still only in logs (not in the RO view).
        late_log_files: the log files holding them.
        lag_ms: ``now − T`` at ``computed_at_ms``; ``None`` without T.
        reason: why ``threshold_ms`` is ``None``, or why it is below the plan's T; ``None`` otherwise.
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
        if self.reason:
            return f"RO freshness: every event ≤ {self.threshold_iso} (compaction {self.instant}; {self.reason})"
        lag = "" if self.lag_ms is None else f", lag {self.lag_ms / 1000:.0f} s"
        late = (
            f"; {self.late_records} late record(s) in {len(self.late_log_files)} log file(s)"
            if self.late_records
            else ""
        )
        return f"RO freshness: every event ≤ {self.threshold_iso} (compaction {self.instant}{lag}){late}"


def ro_freshness(table: Table, *, now_ms: int | None = None) -> Freshness:
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
        none = (
            "no compaction has completed"
            if not history
            else "no completed compaction recorded an event-time threshold (only other strategies ran)"
        )
        return Freshness(None, None, None, False, 0, (), None, none, computed_at_ms=now)
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
    exact = data.exact_threshold_ms
    reason = None
    if exact is not None:
        why = []
        if data.min_log_event_time is not None and data.min_log_event_time - 1 == exact:
            why.append(f"{data.late_records + data.unexpected_records} record(s) with event time ≤ T are only in logs")
        if data.min_touched_ro_event_time is not None and data.min_touched_ro_event_time - 1 == exact:
            why.append(f"logs update or delete {data.touched_ro_rows} RO row(s) with event time ≤ T")
        reason = (
            f"lowered from the plan's T {iso_ms(last.threshold_ms)} to {iso_ms(exact)}: " + "; ".join(why)
            if why
            else None
        )
    threshold = exact if exact is not None else last.threshold_ms
    return Freshness(
        threshold,
        last.instant,
        last.completed_at,
        True,
        data.late_records,
        data.late_log_files,
        now - threshold,
        reason,
        data.unexpected_records,
        (),
        now,
        last.threshold_ms,
    )
