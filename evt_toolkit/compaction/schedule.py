"""Scheduling a compaction: checks, selection, links, then ``C.compaction.requested`` (design §2.3).

Order of events, and why:

0. :func:`~evt_toolkit.table.guards.require_writable`: a table version or metadata table the toolkit does not write
   is refused before anything is written.
1. :func:`~evt_toolkit.compaction.trigger.check_can_schedule` — Hudi's guard: no write inflight before ``C``, no
   completed write or pending compaction at or after it.
2. The serial rule for event-time strategies: no compaction or clustering may be pending, or "every event ≤ T is
   compacted" breaks (:class:`~evt_toolkit.errors.PendingTableServiceError` names the pending instants).
3. :func:`~evt_toolkit.compaction.event_times.slice_infos`, the strategy's selection (prefix rule), ``build_plan``.
   An empty plan writes nothing and returns ``None``, as Hudi does. A planned log the run could not compact (a
   corrupt block; partial-update, HFile or CDC blocks) is refused here. Only once nothing can refuse any more do
   abandoned schedules' links go (:func:`remove_abandoned_schedules`; the plan is made again when any went), so a
   refused schedule leaves the table as it was.
4. With ``link_timing="schedule"`` the links are recorded as the plan's own (an ownership record in
   ``.hoodie/.temp/evt/C/``) and created *before* the plan file: stock writers then find versions ``1..k`` of slice
   ``C`` taken and append after them, and a stock executor of our plan still yields a correct slice. A crash between
   links and plan leaves recorded copies that a re-run with the same instant accepts.
5. ``C.compaction.requested`` (Avro, extended schema) is written atomically, and only then does the plan exist.

The executor's own output at the head of a new slice, the carry-over log, takes version 0, which no writer
produces, so no version needs reserving for it (:mod:`evt_toolkit.compaction.merge_task`).

Example:
    >>> import evt_toolkit as evt
    >>> from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> c = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold="2025-01-01T00:00:00Z"))  # doctest: +SKIP
    >>> c.instant, c.operations, len(c.links)  # doctest: +SKIP
    ('20250102000000000', 12, 7)
"""

from __future__ import annotations

import dataclasses
import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evt_toolkit.compaction.event_times import event_time_field_for, max_ingested_event_time, slice_infos
from evt_toolkit.compaction.model import LogFileInfo, OperationSelection, SliceInfo
from evt_toolkit.compaction.plan import (
    EXTRA_THRESHOLD_MS,
    LINK_MODES,
    LINK_TIMINGS,
    build_plan,
    encode_plan,
)
from evt_toolkit.compaction.plan_files import plan_file, unmergeable_blocks, validate_plan_files
from evt_toolkit.compaction.strategy import (
    CompactionStrategy,
    EventTimeBasedCompactionStrategy,
)
from evt_toolkit.compaction.strategy import max_ingested_event_time as max_event_time_of_slices
from evt_toolkit.compaction.trigger import check_can_schedule
from evt_toolkit.compaction.unschedule import unschedule_compaction
from evt_toolkit.errors import (
    EvtError,
    LogFormatError,
    PendingTableServiceError,
    PlanValidationError,
    TimelineError,
    UnsupportedFeatureError,
)
from evt_toolkit.faults import fault_point
from evt_toolkit.format.links import Link
from evt_toolkit.format.names import BaseFileName
from evt_toolkit.format.ownership import LINK, SCHEDULE, OwnedFile, OwnershipRecord
from evt_toolkit.format.records import CompactionPlan
from evt_toolkit.storage.links import create_links, delete_link_or_file, require_symlinks
from evt_toolkit.storage.ownership import drop_ownership, ownership_records, record_folders, record_ownership
from evt_toolkit.table.guards import TABLE_SERVICE_VERSIONS, require_meta_fields, require_writable
from evt_toolkit.write.instants import new_instant_time, timeline_times
from evt_toolkit.write.overtaken import retire_overtaken_rollbacks

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.table.table import Table

__all__ = [
    "EXTRA_EXACT_SPLIT",
    "EXTRA_REMAINING_PREFIX",
    "ScheduledCompaction",
    "abandoned_schedules",
    "remove_abandoned_schedules",
    "schedule_compaction",
]

#: ``extraMetadata`` key: ``"true"`` when records with event time > T stay out of the new base files.
EXTRA_EXACT_SPLIT = "evt.compaction.exact_split"
#: Prefix of the RFC's remaining-log figures (plan ``extraMetadata``, copied into ``C.commit``).
EXTRA_REMAINING_PREFIX = "evt.metrics.remaining."


@dataclass(frozen=True, slots=True)
class ScheduledCompaction:
    """A compaction plan written to the timeline.

    Attributes:
        instant: the compaction instant ``C``.
        plan: the ``HoodieCompactionPlan`` as written (with ``symlinkOperations``).
        threshold: T in epoch ms for event-time strategies, else ``None``.
        link_mode: ``copy`` or ``symlink``.
        link_timing: ``schedule`` (links exist already) or ``execute``.
        links: every link of the plan, with its partition.
        operations: number of plan operations (file groups).
    """

    instant: str
    plan: CompactionPlan
    threshold: int | None
    link_mode: str
    link_timing: str
    links: tuple[Link, ...]
    operations: int

    @property
    def exact_split(self) -> bool:
        """Whether records with event time > T are kept out of the new base files."""
        return self.plan.extra.get(EXTRA_EXACT_SPLIT) == "true"


def _resolve_threshold(
    table: Table, strategy: CompactionStrategy, slices: Sequence[SliceInfo], now_ms: int | None
) -> int | None:
    if not isinstance(strategy, EventTimeBasedCompactionStrategy):
        return None
    if strategy.mode == "allowed_lateness":
        # After a full compaction the logs alone may not tell the watermark; every commit's write stats do.
        max_et = max_event_time_of_slices(slices)
        if max_et is None:
            max_et = max_ingested_event_time(table)
        return strategy.resolve_threshold(now_ms, max_et)
    return strategy.resolve_for(slices, now_ms)


def _remaining_figures(slices: Sequence[SliceInfo], selections: Sequence[OperationSelection]) -> dict[str, str]:
    """The RFC's metrics over the logs that stay behind once the plan completes (as of scheduling)."""
    chosen = {(s.slice.partition_path, s.slice.file_id): s for s in selections if s.to_compact}
    remaining: list[tuple[str, str, LogFileInfo]] = []
    for s in slices:
        sel = chosen.get((s.partition_path, s.file_id))
        logs = sel.to_remain if sel is not None else s.log_files
        remaining.extend((s.partition_path, s.file_id, lf) for lf in logs)
    mins = [lf.min_event_time for _, _, lf in remaining if lf.has_data and lf.min_event_time is not None]
    return {
        EXTRA_REMAINING_PREFIX + "min_event_time": str(min(mins)) if mins else "",
        EXTRA_REMAINING_PREFIX + "slices_with_remaining_logs": str(len({(p, f) for p, f, _ in remaining})),
        EXTRA_REMAINING_PREFIX + "remaining_log_bytes": str(sum(lf.size for _, _, lf in remaining)),
        EXTRA_REMAINING_PREFIX + "remaining_log_files": str(len(remaining)),
    }


def schedule_compaction(
    table: Table,
    strategy: CompactionStrategy,
    *,
    link_mode: str = "copy",
    link_timing: str = "schedule",
    instant: str | None = None,
    now_ms: int | None = None,
    exact_split: bool = False,
) -> ScheduledCompaction | None:
    """Plan a compaction and write ``C.compaction.requested`` (after the links, by default).

    Args:
        table: the table (refreshed here: scheduling must see the latest timeline).
        strategy: which slices and logs to compact; event-time strategies resolve T at ``now_ms``.
        link_mode: ``copy`` or ``symlink``.
        link_timing: ``schedule`` (links before the plan) or ``execute`` (links when the plan runs).
        instant: the compaction instant (default: a new instant after every instant on the timeline).
        now_ms: the compaction time for T (default: the wall clock).
        exact_split: keep records with event time > T out of the new base files (needs an event-time strategy).

    Returns:
        The scheduled compaction, or ``None`` when the strategy selects nothing (nothing is written then).

    Raises:
        PendingTableServiceError: a write is inflight, or (event-time strategies) a compaction, clustering or log
            compaction is pending.
        TimelineError: ``instant`` is not later than every completed write / pending compaction.
        PlanValidationError: bad link settings, an existing different file under a link name, or writes kept
            changing the slices while the plan was made (the plan is taken back then; nothing is left).
        SymlinkUnsupportedError: ``symlink`` links on storage without symlinks.
        UnsupportedTableError: a table without meta fields (``hoodie.populate.meta.fields=false``), or one the
            table guard refuses (:func:`~evt_toolkit.table.guards.require_writable`).
        UnsupportedFeatureError: a planned log holds partial-update, HFile or CDC blocks of a committed write, which
            the run does not merge (nothing is written).
        LogFormatError: a planned log holds a corrupt block (nothing is written).
    """
    if link_mode not in LINK_MODES:
        raise PlanValidationError(f"link_mode must be one of {', '.join(LINK_MODES)}, got {link_mode!r}")
    if link_timing not in LINK_TIMINGS:
        raise PlanValidationError(f"link_timing must be one of {', '.join(LINK_TIMINGS)}, got {link_timing!r}")
    require_symlinks(table.storage, link_mode)
    require_meta_fields(table, "schedule a compaction")
    if exact_split and not strategy.event_time_aware:
        raise PlanValidationError(f"exact_split needs an event-time strategy (a threshold T), got {strategy!r}")
    for attempt in range(1, _SCHEDULE_ATTEMPTS + 1):
        scheduled = _schedule_once(table, strategy, link_mode, link_timing, instant, now_ms, exact_split)
        if scheduled is None:
            return None
        # A write that picked its slices before the plan existed, wrote its log after this schedule listed the slice
        # and completed before the plan was written saw no plan (its own check passed), so the plan misses its log
        # and could never run. Every such write finished writing before the plan file existed, so one look now finds
        # them all; later writers see the plan. The plan is taken back at once — before anyone could have run it, as
        # a run checks the same thing — and made again from the slices as they are now.
        problems = validate_plan_files(table, scheduled.plan, scheduled.instant)
        if not problems:
            rival = _rival_plan(table, scheduled)
            if rival is None:
                return scheduled
            _take_back(table, scheduled, f"beside compaction {rival}")
            if instant is not None or attempt == _SCHEDULE_ATTEMPTS:
                raise PendingTableServiceError(
                    f"compaction {scheduled.instant} of {table.storage.uri} was taken back right after scheduling: "
                    f"compaction {rival}, scheduled at the same time, plans the same file groups (or this is an "
                    "event-time plan, which waits for every pending plan); run it, then schedule again"
                )
            continue  # planned again: the rival's file groups are left out now, or an event-time plan is refused
        _take_back(table, scheduled, f"while a write changed its slices ({'; '.join(problems)})")
        if instant is not None or attempt == _SCHEDULE_ATTEMPTS:
            raise PlanValidationError(
                f"compaction {scheduled.instant} of {table.storage.uri} was taken back right after scheduling: "
                f"writes changed its slices while it was planned ({'; '.join(problems)}); nothing is left of it: "
                "schedule again"
            )
    raise AssertionError("unreachable")  # pragma: no cover


def _take_back(table: Table, scheduled: ScheduledCompaction, scheduled_how: str) -> None:
    """Unschedule the plan just written (with the unschedule's own checks); refused: PlanValidationError."""
    taken_back = unschedule_compaction(table, scheduled.instant, dry_run=False)
    if taken_back.refused_reason is not None:
        raise PlanValidationError(
            f"compaction {scheduled.instant} of {table.storage.uri} was scheduled {scheduled_how} and cannot be "
            f"taken back ({taken_back.refused_reason})"
        )


def _rival_plan(table: Table, scheduled: ScheduledCompaction) -> str | None:
    """Another pending plan that ``scheduled`` may not stand beside, else ``None``.

    A schedule refuses (event-time strategies) or leaves out (others) what pending plans hold, but two schedules
    that listed the table at the same moment see neither plan. Hudi schedules under a lock; here each looks at the
    pending plans again once its own is written. Of two rivals, the one that wrote its plan second sees the other,
    so at least one of them is taken back (both may be, when each looks after both wrote: each schedule then plans
    again). Rivals share a file group (``HoodieCompactionPlanGenerator`` leaves file groups of pending plans out), or
    ``scheduled`` is an event-time plan, which needs every pending plan to have run first.
    """
    mine = {(op.partition_path, op.file_id) for op in scheduled.plan.operations}
    event_time = EXTRA_THRESHOLD_MS in scheduled.plan.extra
    timeline = table.refresh().timeline
    for inst in timeline.pending_compactions():
        if inst.time == scheduled.instant:
            continue
        if event_time:
            return inst.time
        try:
            plan = timeline.compaction_plan(inst)
        except EvtError:
            continue  # taken back while this looked (unschedule deletes the plan file last but one)
        if mine & {(op.partition_path, op.file_id) for op in plan.operations}:
            return inst.time
    return None


#: How often :func:`schedule_compaction` plans again when writes keep changing the slices while it plans.
_SCHEDULE_ATTEMPTS = 3


def _schedule_once(
    table: Table,
    strategy: CompactionStrategy,
    link_mode: str,
    link_timing: str,
    instant: str | None,
    now_ms: int | None,
    exact_split: bool,
) -> ScheduledCompaction | None:
    table.refresh()
    require_writable(table, "schedule a compaction", versions=TABLE_SERVICE_VERSIONS, merges=True)
    _refuse_pending_rollbacks(table)
    timeline = table.timeline
    # On 1.x requested and completion times come from one clock: C must exceed every completion time too (fence 1 of
    # docs/hudi-1x.md §4.4 then makes every later write's instant exceed C).
    times = timeline_times(timeline.instants)
    c = instant or new_instant_time(times, table.config.timezone, scope=table.storage.uri)
    if table.config.timeline_layout >= 2 and instant is not None and times and instant <= max(times):
        raise TimelineError(
            f"cannot schedule compaction {instant} on {table.storage.uri}: on a 1.x table it must be later than every "
            f"requested and completion time on the timeline (latest {max(times)})"
        )
    check_can_schedule(timeline, c)
    if strategy.event_time_aware:
        pending = [f"compaction {i.time}" for i in timeline.pending_compactions()]
        pending += [f"clustering {i.time}" for i in timeline.pending_clustering()]
        pending += [f"log compaction {i.time}" for i in timeline.pending_log_compactions()]
        if pending:
            raise PendingTableServiceError(
                f"cannot schedule event-time compaction {c}: {', '.join(pending)} pending; event-time plans run one "
                'after the other, or "every event ≤ T is compacted" would not hold'
            )

    planned = _plan(table, strategy, c, link_mode, link_timing, now_ms)
    if planned is None:
        return None
    # Every refusal is behind: only now do abandoned schedules' links and rollbacks that can never finish go (a
    # refusal leaves the table as it was), and the plan is made again, on the timeline as it then is, when any went.
    retired = retire_overtaken_rollbacks(table)
    if remove_abandoned_schedules(table) or retired:
        table.refresh()
        planned = _plan(table, strategy, c, link_mode, link_timing, now_ms)
        if planned is None:
            return None
    slices, selections, threshold, plan = planned

    extra = {**plan.extra, EXTRA_EXACT_SPLIT: "true" if exact_split else "false"}
    extra.update(_remaining_figures(slices, selections))
    plan = dataclasses.replace(plan, extra=extra)
    links = list(plan.links)
    data = encode_plan(plan)

    if link_timing == "schedule":
        if links:
            record_ownership(table.storage, c, SCHEDULE, "links", [OwnedFile(x.symlink_path, LINK) for x in links])
            create_links(table.storage, links)
        fault_point("schedule.after_links")
    fault_point("schedule.before_plan")
    table.storage.write_bytes_atomic(plan_file(table, c), data)
    table.refresh()
    return ScheduledCompaction(
        instant=c,
        plan=plan,
        threshold=threshold,
        link_mode=link_mode,
        link_timing=link_timing,
        links=tuple(links),
        operations=len(plan.operations),
    )


def _plan(
    table: Table, strategy: CompactionStrategy, c: str, link_mode: str, link_timing: str, now_ms: int | None
) -> tuple[list[SliceInfo], list[OperationSelection], int | None, CompactionPlan] | None:
    """The slices, selections, threshold and plan of compaction ``c`` (``None``: nothing to compact); reads only.

    Raises:
        EventTimeError, InvalidThresholdError: a misspelt event-time field or a threshold the strategy refuses.
        LogFormatError, UnsupportedFeatureError: a planned log the run could not compact.
    """
    slices = list(slice_infos(table, event_time_field_for(table, strategy)))
    threshold = _resolve_threshold(table, strategy, slices, now_ms)
    selections = list(strategy.select_operations(slices, threshold=threshold))
    plan = build_plan(
        selections,
        c,
        strategy,
        threshold,
        link_mode,
        link_timing,
        event_time_field=table.config.event_time_field,
        extra_metadata=_schema_extra(table),
    )
    if plan is None:
        return None
    _refuse_corrupt_logs(table, c, slices, plan)
    _refuse_unmergeable_blocks(table, c, slices, plan)
    return slices, selections, threshold, plan


def _refuse_corrupt_logs(table: Table, c: str, slices: Sequence[SliceInfo], plan: CompactionPlan) -> None:
    """Refuse, before anything is written, a plan that compacts a log holding a corrupt block (a torn append).

    The run refuses such a log (compacting would drop the block for good), so a plan holding one could never run; and
    on version 6 a pending plan opens a new slice that writers write into, after which it cannot be unscheduled
    either. Refused here, the table stays as it was.
    """
    corrupt = {(lf.partition_path, lf.name): lf for s in slices for lf in s.log_files if lf.corrupt_blocks}
    if not corrupt:
        return
    for op in plan.operations:
        for name in op.delta_files:
            lf = corrupt.get((op.partition_path, name))
            if lf is not None:
                where = table.storage.full_path(lf.path)
                raise LogFormatError(
                    f"cannot schedule compaction {c} on {table.storage.uri}: log file {where} "
                    f"has {lf.corrupt_blocks} corrupt block(s) (a torn append); compacting it would lose that block's "
                    "records (repair or roll back the write first); nothing was written"
                )


def _refuse_pending_rollbacks(table: Table) -> None:
    """Refuse to plan while a rollback is pending, as Hudi finishes pending rollbacks before it schedules a table
    service (``rollbackFailedWrites``). Stopped before it un-committed its target, a rollback leaves the target
    committed: a plan would take its records into base files, and the rollback could then never finish.

    A pending rollback that can no longer finish (:meth:`~evt_toolkit.table.timeline.Timeline.rollback_overtaken_by`:
    killed before it changed anything, its target a write that later writes now depend on, or a compaction run to
    completion since) does not hold planning up: nothing a plan does could make it finishable again, and refusing
    would leave the table without compactions for good. Its resume is refused, and it changes nothing.

    Raises:
        PendingTableServiceError: naming the rollback, its target and the table.
    """
    timeline = table.timeline
    for inst, plan in timeline.pending_rollback_plans():
        if plan is not None and timeline.rollback_overtaken_by(plan):
            continue
        target = plan.target if plan is not None else "?"
        raise PendingTableServiceError(
            f"cannot schedule a compaction on {table.storage.uri}: rollback {inst.time} of {target} is pending; "
            f"finish it first (t.rollback('{target}'), or evt rollback {table.storage.uri} {target} --yes, resumes it)"
        )


def _refuse_unmergeable_blocks(table: Table, c: str, slices: Sequence[SliceInfo], plan: CompactionPlan) -> None:
    """Refuse, before anything is written, a plan that compacts a log holding a block the run does not merge
    (:func:`~evt_toolkit.compaction.plan_files.unmergeable_blocks`): every task of such a plan would refuse its file
    group, so the plan could never run (and on version 6 writers would put their logs into its new slices, after
    which it could not be unscheduled either). The planned logs' block headers are read here, as the run reads them.
    """
    logs = {(lf.partition_path, lf.name): lf for s in slices for lf in s.log_files}
    planned = [
        (lf.path, lf.size)
        for op in plan.operations
        for name in op.delta_files
        if (lf := logs.get((op.partition_path, name))) is not None
    ]
    found = unmergeable_blocks(table, planned)
    if found is not None:
        where, what, write = found
        raise UnsupportedFeatureError(
            f"cannot schedule compaction {c} on {table.storage.uri}: log file {where} holds {what} of write "
            f"{write}, which this toolkit reads but does not compact (every task of the plan would refuse its file "
            "group); nothing was written"
        )


#: How old a schedule's record must be before its links count as abandoned: a schedule still running in another
#: process (between its links and its plan) must not lose them.
ABANDONED_AFTER_S = 600.0


def left_by_a_dead_service(last_written_s: float | None, older_than_s: float, now: float) -> bool:
    """Whether files a schedule or an unschedule last wrote at ``last_written_s`` (epoch seconds; ``None``: no
    time known) are old enough that no such service can still be running and need them — the one age rule of
    :func:`abandoned_schedules` and of the repair's stale unschedule markers. ``older_than_s`` <= 0 takes every
    one (the caller knows that nothing runs)."""
    if older_than_s <= 0:
        return True
    return last_written_s is not None and now - last_written_s >= older_than_s


def abandoned_schedules(table: Table, *, older_than_s: float = ABANDONED_AFTER_S) -> dict[str, list[str]]:
    """``instant -> recorded files`` of schedules that died before writing their plan (no writes).

    A schedule records its links (in ``.hoodie/.temp/evt/<C>/``) and creates them before ``C.compaction.requested``.
    If it is killed in between, ``C`` never reaches the timeline: the links are named with an instant no reader
    knows, so they are invisible, but a symlink among them would dangle once its target is cleaned or rolled back.
    A record younger than ``older_than_s`` seconds may belong to a schedule still running, and is left alone; so is
    one of an instant older than the active timeline with a base file named after it: a compaction that ran and was
    archived (its files then read as committed).
    """
    storage = table.storage
    timeline = table.refresh().timeline
    known = {i.time for i in timeline.instants}
    now = time.time()
    out: dict[str, list[str]] = {}
    for instant, folders in record_folders(storage).items():
        if instant in known:
            continue
        records = ownership_records(storage, instant)
        if not records or any(r.phase != SCHEDULE for r in records):
            continue
        if timeline.is_before_timeline_start(instant) and _ran(storage, instant, records):
            # Its plan was written and run: a completed compaction that was archived (readers count files older
            # than the active timeline as committed) whose folder's drop was interrupted after the run's record went.
            continue
        files = [f for folder in folders for f in storage.list_dir(folder)[0]]
        written = [m.timestamp() for f in files if (m := storage.mtime(f.path)) is not None]
        if not left_by_a_dead_service(max(written, default=None), older_than_s, now):
            continue
        out[instant] = sorted({f.path for r in records for f in r.files})
    return out


def _ran(storage: TableStorage, instant: str, records: list[OwnershipRecord]) -> bool:
    """Whether a base file named with ``instant`` is in a partition of its recorded links: a run wrote it, so its
    plan existed (a schedule that died before its plan never has one)."""
    partitions = sorted({posixpath.dirname(f.path) for r in records for f in r.files})
    for partition in partitions:
        files, _ = storage.list_dir(partition)
        for f in files:
            base = BaseFileName.parse(f.name) if not f.name.startswith(".") else None
            if base is not None and base.instant == instant:
                return True
    return False


def remove_abandoned_schedules(table: Table, *, older_than_s: float = ABANDONED_AFTER_S) -> list[str]:
    """Delete the links of schedules that died before writing their plan; returns the files deleted.

    Table services call this once every check that can refuse them has passed, so a refusal changes nothing
    (:func:`abandoned_schedules` says why and which count). Should a schedule still
    running lose its links anyway (a clock far off), its plan, once written, has them made again by the run
    (:func:`evt_toolkit.compaction.executor.run_compaction`).
    """
    storage = table.storage
    deleted: list[str] = []
    for instant, paths in abandoned_schedules(table, older_than_s=older_than_s).items():
        deleted.extend(p for p in paths if delete_link_or_file(storage, p))
        drop_ownership(storage, instant)
    return deleted


def _schema_extra(table: Table) -> dict[str, str]:
    """``schema`` copied from the last commit that has one, as Hudi copies the triggering write's metadata."""
    for inst in reversed(table.timeline.completed_commits()):
        try:
            text = table.timeline.commit_metadata(inst).extra.get("schema")
        except EvtError:  # an undecodable old commit only means "look further back"
            continue
        if text:
            return {"schema": str(text)}
    text = table.config.properties.get("hoodie.table.create.schema")
    return {"schema": text} if text else {}
