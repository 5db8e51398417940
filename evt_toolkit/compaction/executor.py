"""Running a compaction plan: validate, inflight, links, one task per operation, then the driver writes ``C.commit``.

Steps (``hudi-format.md`` §4 "Execution", design §2.3 and §2.5, ``docs/data-safety.md``):

1. The table is checked writable (:func:`evt_toolkit.table.guards.require_writable`), and the plan is read back from
   ``C.compaction.requested`` and validated against storage before anything is written: every base and log file
   exists, and per operation the compacted logs plus the link targets are exactly the old slice's logs in replay
   order, compacted ones first (the prefix rule, re-checked because files may have changed since scheduling); the
   planned logs' block headers are read once, and a plan over partial-update, HFile or CDC blocks (one stock Hudi
   scheduled) is refused while it is still requested.
2. ``C.compaction.inflight`` (empty) is written unless present.
3. Links: every link made at schedule time must still stand for its target — a missing one is made again from the
   plan (recorded as the plan's before it is created), a different file under its name is an error naming it; with
   ``link_timing="execute"`` the driver records and creates them now. The plan is never committed without them.
4. The tasks' outputs are recorded (ownership records) and marked (Hudi's ``CREATE`` markers, so that a stock
   rollback of a run killed half-way deletes them), then one task per operation
   (:func:`~evt_toolkit.compaction.merge_task.run_merge_task`): locally, or on Spark with one partition per operation.
5. Right before committing, the driver lists every new slice again: if a write that landed in one since its task
   read the slice could change the task's decision (a commit-time delete, or a record of a key the task compacted
   past a commit-time delete), that task runs again (its outputs are deterministic), so the new slice still reads
   as the old one did.
6. Outputs of earlier attempts that the final attempts did not produce (recorded, so known exactly) are deleted.
7. The driver alone writes ``C.commit``: ``HoodieCommitMetadata`` JSON with plain ``HoodieWriteStat`` entries,
   ``compacted: true``, ``operationType: "COMPACT"``, ``extraMetadata`` with ``schema``, the plan's
   ``evt.compaction.*`` settings, ``evt.compaction.links``, the carry-over logs and the RFC's remaining-log figures;
   then the instant's record and marker folders are dropped, as Hudi drops markers.

A failure at any step before 7 leaves the plan pending: the view hides the partial outputs named with ``C`` and
readers keep merging the old slice, so the table reads as before; running again completes it with identical files,
and :func:`evt_toolkit.services.rollback.rollback` removes exactly the run's recorded outputs.

Example:
    >>> res = run_compaction(t, c.instant)  # doctest: +SKIP
    >>> res.operations, res.records_written  # doctest: +SKIP
    (12, 48211)
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from evt_toolkit.compaction.bounded_merge import MemoryBudget, configured_memory_budget, configured_spill_dir
from evt_toolkit.compaction.merge_task import (
    FaultHook,
    MergeResult,
    MergeTask,
    appended_writers,
    grown_compacted_log,
    landed_logs_matter,
    partition_listing,
    run_merge_task,
    task_outputs,
)
from evt_toolkit.compaction.plan import EXTRA_LINK_TIMING, EXTRA_THRESHOLD_MS
from evt_toolkit.compaction.plan_files import plan_file, unmergeable_blocks, validate_plan_files
from evt_toolkit.compaction.schedule import EXTRA_EXACT_SPLIT, EXTRA_REMAINING_PREFIX
from evt_toolkit.errors import (
    CompactionExecutionError,
    EvtError,
    PendingTableServiceError,
    PlanValidationError,
    TimelineError,
    UnsupportedFeatureError,
)
from evt_toolkit.faults import fault_point
from evt_toolkit.format.bloom import bloom_config_from_properties
from evt_toolkit.format.extra_metadata import COMPACTION_LINKS
from evt_toolkit.format.links import COPY, Link, encode_commit_links
from evt_toolkit.format.log_content import default_decode_threads
from evt_toolkit.format.logfile import LogBlock
from evt_toolkit.format.names import COMPLETED, INFLIGHT
from evt_toolkit.format.ownership import BASE, CARRY_OVER, LINK, RUN, SCHEDULE, OwnedFile
from evt_toolkit.format.records import CommitMetadata, CompactionPlan, WriteStat
from evt_toolkit.read.merge import EVENT_TIME
from evt_toolkit.read.plan import ReadSpec
from evt_toolkit.storage.calls import StartedCalls, run_spark_job
from evt_toolkit.storage.fs import FileEntry, TableStorage
from evt_toolkit.storage.links import check_link, create_link, held_by_another_file
from evt_toolkit.storage.ownership import (
    abandon_attempt,
    drop_ownership,
    mark_created,
    new_attempt,
    owned_files,
    record_ownership,
)
from evt_toolkit.table.guards import TABLE_SERVICE_VERSIONS, has_metadata_table, require_meta_fields, require_writable
from evt_toolkit.table.table import Table
from evt_toolkit.table.timeline import COMMIT, COMPACTION, Instant
from evt_toolkit.write.fence import require_compaction_running
from evt_toolkit.write.metadata_sync import added_files, sync_files_partition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CompactionResult",
    "ProgressCallback",
    "ProgressEvent",
    "ensure_plan_links",
    "load_pending_plan",
    "run_compaction",
]

#: How often a task runs again when writes keep landing in its new slice while the compaction commits.
_MAX_RERUNS = 3


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Progress of a compaction run: ``stage`` is ``links``, ``tasks`` or ``commit``."""

    stage: str
    done: int
    total: int
    message: str


ProgressCallback = Callable[[ProgressEvent], None]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a completed compaction did.

    Attributes:
        instant: ``C``.
        operations: plan operations (file groups) compacted.
        base_files_written: the new base files, relative to the base path.
        records_written: rows in the new base files.
        bytes_written: bytes of the new base files (plus carry-over logs).
        log_files_compacted: log files merged into base files.
        log_bytes_compacted: their bytes.
        links: link operations of the plan.
        threshold: T in epoch ms, for event-time plans.
        duration_s: wall time of the run.
        carried_over: records kept in carry-over logs (tombstones, kept keys, exact split).
        reruns: tasks run again because writes landed in their new slice during the run.
    """

    instant: str
    operations: int
    base_files_written: tuple[str, ...]
    records_written: int
    bytes_written: int
    log_files_compacted: int
    log_bytes_compacted: int
    links: int
    threshold: int | None
    duration_s: float
    carried_over: int = 0
    reruns: int = 0


def _find_instant(table: Table, instant: str) -> Instant:
    for inst in table.timeline.instants:
        if inst.time == instant and inst.action in (COMPACTION, COMMIT):
            return inst
    raise TimelineError(f"{table.storage.uri}: no compaction plan at instant {instant}")


def load_pending_plan(table: Table, instant: str) -> tuple[Instant, CompactionPlan]:
    """The pending compaction instant and its decoded plan.

    Raises:
        TimelineError: no such compaction, or it already completed.
        MetadataDecodeError: the plan file cannot be decoded (names it).
    """
    inst = _find_instant(table, instant)
    if inst.is_completed:
        raise TimelineError(f"compaction {instant} of {table.storage.uri} has already completed")
    return inst, table.timeline.compaction_plan(inst)


def _write_stat(r: MergeResult) -> WriteStat:
    """A plain ``HoodieWriteStat`` in Jackson's field order (compaction writes no delta stats)."""
    return WriteStat.of(
        r.partition_path,
        fileId=r.file_id,
        path=r.path,
        prevCommit=r.prev_commit,
        numWrites=r.num_writes,
        numDeletes=r.num_deletes,
        numUpdateWrites=r.num_update_writes,
        numInserts=r.num_inserts,
        totalWriteBytes=r.total_write_bytes,
        totalLogRecords=r.total_log_records,
        totalLogFilesCompacted=r.total_log_files_compacted,
        totalLogSizeCompacted=r.total_log_size_compacted,
        totalUpdatedRecordsCompacted=r.num_update_writes,
        totalLogBlocks=r.total_log_blocks,
        totalRollbackBlocks=r.total_rollback_blocks,
        fileSizeInBytes=r.total_write_bytes,
        minEventTime=r.min_event_time,
        maxEventTime=r.max_event_time,
        runtimeStats={"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": r.elapsed_ms},
    )


def _run_tasks(
    tasks: list[MergeTask],
    spark: SparkSession | None,
    progress: ProgressCallback | None,
    storage: TableStorage,
    listings: dict[str, list[FileEntry]] | None = None,
    scans: Mapping[tuple[str, int], list[LogBlock]] | None = None,
) -> list[MergeResult]:
    """Run ``tasks`` on Spark or here. ``listings`` and ``scans`` are the partitions' files and the compacted logs'
    block headers the driver read after the plan's links stood, for the tasks run here (Spark tasks list and scan
    for themselves)."""
    total = len(tasks)
    if spark is not None:
        # A Spark task may use the cores Spark reserves for it (locally, see _run_tasks_here).
        threads = int(spark.sparkContext.getConf().get("spark.task.cpus", "1") or 1)
        tasks = [replace(t, decode_threads=threads) for t in tasks]
    if spark is None:
        with _naming_the_run(tasks[0].instant if tasks else "?", storage.uri):
            return _run_tasks_here(tasks, progress, storage, listings, scans)
    sc = spark.sparkContext
    rdd = sc.parallelize(tasks, numSlices=max(1, total)).map(run_merge_task)
    instant = tasks[0].instant if tasks else "?"
    attempt = tasks[0].attempt if tasks else None

    def abandon() -> None:
        # Before the failure is reported: a task of the cancelled job, running on until Spark kills its worker,
        # re-checks this before it writes (merge_task).
        if attempt is not None:
            abandon_attempt(storage, instant, attempt)

    try:
        # toLocalIterator would serialize the tasks; collect runs them in parallel and reports per result.
        collected = run_spark_job(sc, f"hudi_evt compaction {instant}: {total} file groups", rdd.collect, abandon)
        results = []
        for i, r in enumerate(collected):
            results.append(r)
            if progress is not None:
                progress(ProgressEvent("tasks", i + 1, total, f"compacted file group {r.file_id}"))
        return results
    except Exception as exc:  # Py4J / PythonException carry the task's error text
        text = str(exc)
        lines = [ln for ln in text.splitlines() if "Error:" in ln or "error" in ln.lower()]
        detail = next((ln.strip() for ln in lines if "evt_toolkit" in ln), lines[0].strip() if lines else text[:500])
        raise CompactionExecutionError(
            f"compaction {instant} of {storage.uri}: a task failed on Spark (or its job was cancelled); nothing was "
            f"committed: {detail}"
        ) from exc


@contextlib.contextmanager
def _naming_the_run(instant: str, uri: str) -> Iterator[None]:
    """Add the compaction and the table to a task's refusal that does not name the table (a block the task does
    not merge, a log it cannot decode: raised deep in the readers, which know the file only); same error type."""
    try:
        yield
    except EvtError as exc:
        if uri in str(exc):
            raise
        try:
            named = type(exc)(f"compaction {instant} of {uri}: {exc}")
        except TypeError:  # an error type whose constructor takes more than a message
            raise exc from None
        named.__dict__.update(exc.__dict__)  # LogFormatError's path and offset
        raise named from exc


def local_task_slots(tasks: int) -> int:
    """Tasks a run without Spark runs side by side: one per CPU this process may use, at most one per task."""
    return max(1, min(default_decode_threads(), tasks))


def _run_tasks_here(
    tasks: list[MergeTask],
    progress: ProgressCallback | None,
    storage: TableStorage,
    listings: dict[str, list[FileEntry]] | None = None,
    scans: Mapping[tuple[str, int], list[LogBlock]] | None = None,
) -> list[MergeResult]:
    """Run the tasks in this process, :func:`local_task_slots` at a time, as an executor with that many cores would.

    Each task decodes on its share of the CPUs and, unless a budget is configured, gets its share of the default
    memory budget. Decoding, compressing and writing release the GIL, so side-by-side tasks overlap what one task
    leaves single-threaded (reducing by key, writing its base file). Results come back in completion order; the
    first failure (or Ctrl-C) cancels the tasks not yet started, stops the running ones at their next batch or part,
    and is raised once they have stopped.
    """
    total = len(tasks)
    slots = local_task_slots(total)
    results: list[MergeResult] = []

    def finished(done: int, result: MergeResult) -> None:
        results.append(result)
        fault_point("run.after_task")
        if progress is not None:
            progress(ProgressEvent("tasks", done, total, f"compacted file group {result.file_id}"))

    listings = _partition_listings(storage, tasks, listings)
    if slots == 1:
        for i, task in enumerate(tasks):
            finished(i + 1, run_merge_task(task, listings[task.partition_path], scans, storage))
        return results
    share = MemoryBudget.resolve(None).total // slots
    cancel = threading.Event()
    tasks = [
        replace(
            t,
            decode_threads=t.decode_threads or max(1, default_decode_threads() // slots),
            memory_budget=t.memory_budget if t.memory_budget is not None else share,
            cancel=cancel,
        )
        for t in tasks
    ]
    # Every task that started has stopped before this returns or raises, even when Ctrl-C lands while tasks are
    # submitted or while the first failure is handled (storage.calls): nothing of this run writes after it.
    calls = StartedCalls()
    run = calls.wrap(run_merge_task)
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="evt-compaction-task")
    try:
        futures = []
        for t in tasks:
            futures.append(pool.submit(run, t, listings[t.partition_path], scans, storage))
        for done, future in enumerate(as_completed(futures), 1):
            finished(done, future.result())
    except BaseException:
        # Ctrl-C or a failed task: tasks not started never start, running ones stop at their next batch or part
        # (their outputs are the run's, recorded before it started: a rollback or the next run removes them).
        cancel.set()
        calls.settle()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return results


def _partition_listings(
    storage: TableStorage, tasks: list[MergeTask], listings: dict[str, list[FileEntry]] | None = None
) -> dict[str, list[FileEntry]]:
    """One listing per partition for the tasks run here, taken before any of them starts and after the plan's links
    stand (``listings``: those the driver took since). Each task's own listing would be a few milliseconds younger,
    and no safer: a write landing after either is caught by the check before the commit (step 5)."""
    listings = {} if listings is None else listings
    for t in tasks:
        partition_listing(storage, t.partition_path, listings)
    return listings


def ensure_plan_links(table: Table, instant: str, links: list[Link], timing: str) -> int:
    """Make every link of the plan stand for its target; returns how many were (re)created.

    Schedule-time links belong to the plan: one found missing is made again from the plan, recorded under the
    schedule phase so that a rollback of this run keeps it. Execute-time links are the run's own.

    Raises:
        PlanValidationError: a link's target is gone, or another file holds a link's name (names both).
    """
    storage = table.storage
    missing = [link for link in links if not check_link(storage, link, deep=False).ok]
    if not missing:
        return 0
    # A name another file holds (a writer's committed log) is refused before anything records it as the run's or
    # the plan's: a record claims what a rollback or unschedule deletes.
    for link in missing:
        if held_by_another_file(storage, link):
            raise PlanValidationError(
                f"compaction {instant} of {storage.uri} cannot run: {storage.full_path(link.symlink_path)}, the name "
                f"of its link to {link.target}, is held by another file (a writer's log that did not know the plan's "
                "links); it is left as it is. Roll back the write that wrote it, then run the compaction"
            )
    phase = RUN if timing == "execute" else SCHEDULE
    record_ownership(storage, instant, phase, "links", [OwnedFile(link.symlink_path, LINK) for link in missing])
    if phase == RUN:
        mark_created(storage, instant, [link.symlink_path for link in missing])
    created = 0
    for link in missing:
        if not storage.exists(link.target_path):
            raise PlanValidationError(
                f"compaction {instant} cannot run: link {storage.full_path(link.symlink_path)} is missing and its "
                f"target {storage.full_path(link.target_path)} is gone too; the leftover log's data cannot be carried "
                "into the new slice (unschedule the plan and schedule again)"
            )
        created += create_link(storage, link) == "created"
    return created


def _stale_outputs(table: Table, instant: str, results: list[MergeResult]) -> list[str]:
    """Outputs recorded by earlier attempts of this run that the final attempts did not produce."""
    final = {p for r in results for p in r.outputs}
    return sorted(
        path
        for path, f in owned_files(table.storage, instant, [RUN]).items()
        if f.role in (BASE, CARRY_OVER) and path not in final
    )


def _refuse_grown(table: Table, instant: str, path: str, writers: tuple[str, ...], since: str) -> None:
    storage = table.storage
    raise PendingTableServiceError(
        f"compaction {instant} of {storage.uri}: log file {storage.full_path(path)} grew since {since} (write "
        f"{', '.join(writers) or 'unknown'} appended to it); its new blocks would be lost with the superseded slice. "
        "Nothing was committed: run the compaction again once that write completes or is rolled back (a copy the run "
        "made goes with a rollback of the compaction)"
    )


def _refuse_unmergeable_blocks(
    table: Table,
    instant: str,
    plan: CompactionPlan,
    listings: dict[str, list[FileEntry]],
    scans: dict[tuple[str, int], list[LogBlock]],
) -> None:
    """Refuse, before the plan goes inflight, a plan over a log holding blocks the tasks do not merge: one another
    scheduler wrote (stock Hudi 1.1 compacts partial updates), or an older schedule of this toolkit's. The planned
    logs' block headers are read once here (the schedule reads them too), so a refusal leaves the plan requested;
    the scans go into ``scans`` for the tasks run in this process, which then do not read them again.

    Raises:
        UnsupportedFeatureError: naming the compaction, the table, the log and the write.
    """
    storage = table.storage
    planned = []
    for op in plan.operations:
        sizes = {e.name: e for e in partition_listing(storage, op.partition_path, listings)}
        planned += [(e.path, e.size) for name in op.delta_files if (e := sizes.get(name)) is not None]
    found = unmergeable_blocks(table, planned, scans)
    if found is not None:
        where, what, write = found
        raise UnsupportedFeatureError(
            f"compaction {instant} of {storage.uri} cannot run: log file {where} holds {what} of write {write}, "
            f"which this toolkit reads but does not compact; nothing was changed (take the plan back with "
            f"t.compaction.unschedule('{instant}'), or run it with Hudi)"
        )


def _refuse_pending_rollback(table: Table, instant: str) -> None:
    """Refuse to run ``instant`` while a rollback of it is pending, before anything is written.

    A rollback of the run stopped half-way has already deleted some of the first attempt's files, or is about to: run
    again now, the compaction would complete and the rollback could never finish (a completed compaction is never
    rolled back), leaving it pending for good, and every later schedule refused. Hudi finishes such a rollback before
    it runs the compaction again (``rollbackInflightCompaction`` reuses the pending rollback's instant); so does the
    rollback this asks for, which also requests the plan again.

    Raises:
        PendingTableServiceError: naming the rollback, the compaction and the table.
    """
    pending = table.timeline.pending_rollback_of(instant)
    if pending is not None:
        uri = table.storage.uri
        raise PendingTableServiceError(
            f"cannot run compaction {instant} of {uri}: rollback {pending[0].time} of it is pending (a rollback of "
            f"its run was stopped half-way); finish it first (t.rollback('{instant}'), or evt rollback {uri} "
            f"{instant} --yes, resumes it and requests the plan again), then run the compaction"
        )


def run_compaction(
    table: Table,
    instant: str,
    *,
    spark: SparkSession | None = None,
    progress: ProgressCallback | None = None,
    exact_split: bool = False,
    fault_hook: FaultHook | None = None,
) -> CompactionResult:
    """Execute the pending compaction plan at ``instant`` and complete it as ``C.commit``.

    Args:
        table: the table.
        instant: the compaction instant ``C``.
        spark: run one Spark task per operation; ``None`` runs them in this process, one per CPU side by side.
        progress: called with :class:`ProgressEvent` s (``links``, ``tasks`` per finished operation, ``commit``).
        exact_split: keep records with event time > T out of the new base files (carried over instead); a plan
            scheduled with ``exact_split=True`` splits whatever this flag says.
        fault_hook: fault injection for tests (called inside each task), ``None`` otherwise.

    Raises:
        UnsupportedTableError: a table this toolkit does not write (version, type, metadata table).
        UnsupportedTableError: a table without meta fields (``hoodie.populate.meta.fields=false``).
        TimelineError: no pending compaction at ``instant``.
        MetadataDecodeError: the plan file is cut short or otherwise undecodable (names it).
        PlanValidationError: files of the plan are missing, a link cannot be made, or the prefix rule does not hold.
        PendingTableServiceError: a rollback of ``instant`` is pending (finish it first); (version 6) a compacted log
            holds blocks of a pending write, or grew while the run ran (a writer appended to it); nothing is committed.
        LogFormatError: a compacted log is corrupt (names it); nothing is committed.
        TableConfigError: ``hoodie.memory.compaction.max.size`` is not a positive number, or
            ``hoodie.memory.spillable.map.path`` is no absolute local path outside the table; refused before the
            plan goes inflight.
        CompactionExecutionError: a Spark task failed (its error text included), a task's spill disk failed, or
            writes kept landing in a new slice while committing; nothing is committed.
    """
    if not isinstance(instant, str) or not instant:
        raise PlanValidationError(f"a compaction instant such as '20250101000000000' is needed, not {instant!r}")
    require_meta_fields(table, f"run compaction {instant}")
    started = time.monotonic()
    table.refresh()
    require_writable(table, f"run compaction {instant}", versions=TABLE_SERVICE_VERSIONS, merges=True)
    _, plan = load_pending_plan(table, instant)
    _refuse_pending_rollback(table, instant)
    extra = dict(plan.extra)
    split = exact_split or extra.get(EXTRA_EXACT_SPLIT) == "true"
    # One listing per partition serves the checks below and, when the run makes no link, the tasks run here.
    listings: dict[str, list[FileEntry]] = {}
    problems = validate_plan_files(table, plan, instant, listings)
    if problems:
        raise PlanValidationError(f"compaction {instant} cannot run: " + "; ".join(problems))
    storage = table.storage
    # The tasks' settings are checked before anything changes: a bad one leaves the plan requested.
    props_source = storage.full_path(".hoodie/hoodie.properties")
    memory_budget = configured_memory_budget(table.config.properties, props_source)
    spill_dir = configured_spill_dir(
        table.config.properties, props_source, storage.full_path("") if storage.is_local else None
    )
    ops = plan.operations
    threshold_text = extra.get(EXTRA_THRESHOLD_MS)
    threshold = int(threshold_text) if threshold_text else None
    if split and threshold is None:
        raise PlanValidationError(f"compaction {instant}: exact_split needs an event-time plan (a threshold T)")
    link_timing = extra.get(EXTRA_LINK_TIMING, "schedule")

    # Checked before the plan goes inflight: settings Hudi would refuse leave the table as it was.
    bloom = bloom_config_from_properties(table.config.properties, storage.uri)
    scans: dict[tuple[str, int], list[LogBlock]] = {}
    _refuse_unmergeable_blocks(table, instant, plan, listings, scans)
    inflight = plan_file(table, instant, INFLIGHT)
    if not storage.exists(inflight):
        storage.write_bytes_atomic(inflight, b"")
    fault_point("run.after_inflight")

    links = list(plan.links)
    created = ensure_plan_links(table, instant, links, link_timing)
    if created:  # the partitions changed: the tasks list them again
        listings, scans = {}, {}
    if link_timing == "execute" and links:
        fault_point("run.after_links")
    if progress is not None:
        progress(ProgressEvent("links", len(links), len(links), f"{created} link(s) created, {len(links)} in plan"))

    cfg = table.config
    spec = ReadSpec.of(table)
    # A Spark run's tasks may outlive its job (a cancelled Python task runs until Spark kills it): they carry this
    # attempt's id and write nothing once the driver recorded it abandoned.
    attempt = new_attempt() if spark is not None else None
    tasks = [
        MergeTask(
            storage.uri,
            instant,
            i,
            op,
            spec,
            event_time_field=cfg.event_time_field,
            event_time_unit=cfg.event_time_unit,
            exact_split=split,
            threshold=threshold,
            memory_budget=memory_budget,
            spill_dir=spill_dir,
            outputs_recorded=True,
            timeline_path=cfg.timeline_path,
            bloom=bloom,
            fault_hook=fault_hook,
            attempt=attempt,
        )
        for i, op in enumerate(ops)
    ]
    # One record for every task's outputs (their names depend only on the plan), before any task starts; on Spark it
    # carries the run attempt's id, which the tasks check before they write (merge_task, write/fence.py).
    run_outputs = [f for t in tasks for f in task_outputs(t)]
    record_ownership(storage, instant, RUN, f"tasks-{attempt}" if attempt else "tasks", run_outputs)
    # Hudi's markers too: a stock client that rolls back or re-runs a run killed half-way goes by markers, and
    # deletes these outputs as it would its own (the plan's schedule-time links have none: they are the plan's).
    mark_created(storage, instant, [f.path for f in run_outputs])
    results = sorted(_run_tasks(tasks, spark, progress, storage, listings, scans), key=lambda r: r.index)
    reruns = 0
    # Listings taken after every task ran (and was run again), for the checks before the commit.
    after: dict[str, list[FileEntry]] = {}
    # Event-time tables, and any table whose tasks took a deleted key out of a base file: a write landed since the
    # task read its slice can change the task's decision (docs/data-safety.md §2).
    if (spec.merge_mode == EVENT_TIME and spec.ordering_field) or any(r.ct_sensitive_keys for r in results):
        for _round in range(_MAX_RERUNS):
            after = {}  # one listing per partition and round, after every task
            again = [t for t, r in zip(tasks, results, strict=True) if landed_logs_matter(t, r, storage, after)]
            if not again:
                break
            reruns += len(again)
            redone = {r.index: r for r in _run_tasks(again, None if len(again) < 2 else spark, None, storage)}
            results = [redone.get(r.index, r) for r in results]
        else:
            after = {}
            if any(landed_logs_matter(t, r, storage) for t, r in zip(tasks, results, strict=True)):
                raise CompactionExecutionError(
                    f"compaction {instant} of {storage.uri}: writes kept landing in its new file slices while it "
                    "committed; nothing was committed — run it again"
                )
    if table.config.timeline_layout < 2:
        # Version 6 on storage with append: a stock writer may have appended to a compacted log since its task read
        # it (1.x logs never change once written).
        for task, result in zip(tasks, results, strict=True):
            listing = partition_listing(storage, task.partition_path, after)
            grown = grown_compacted_log(storage, task, result, listing)
            if grown is not None:
                _refuse_grown(table, instant, *grown, "the compaction ran")
        # A leftover log copied into the new slice that a writer appended to since: the copy lacks those blocks.
        for link in links:
            if link.mode != COPY:
                continue
            sizes = {e.name: e.size for e in partition_listing(storage, link.partition_path, after)}
            copied, now = sizes.get(link.symlink), sizes.get(link.target)
            if copied is not None and now is not None and now > copied:
                writers = appended_writers(storage, link.partition_path, link.target, copied, now)
                _refuse_grown(table, instant, link.target_path, writers, f"the run copied it to {link.symlink}")
    for path in _stale_outputs(table, instant, results):
        storage.delete_file(path)

    commit_extra: dict[str, str] = {}
    if "schema" in extra:
        commit_extra["schema"] = extra["schema"]
    for k, v in extra.items():
        if k.startswith("evt.compaction.") or k == "hoodie.payload.event.time.field":
            commit_extra[k] = v
    commit_extra[EXTRA_EXACT_SPLIT] = "true" if split else "false"
    commit_extra[COMPACTION_LINKS] = encode_commit_links(links)
    carry_logs = [
        {
            "partition": r.partition_path,
            "log": r.carry_over_log,
            "records": r.carry_over_records,
            "tombstones": r.tombstones,
            "kept": r.kept,
            "split": r.split,
        }
        for r in results
        if r.carry_over_log
    ]
    commit_extra["evt.compaction.carry_over_logs"] = json.dumps(carry_logs, separators=(",", ":"))
    for k, v in extra.items():
        if k.startswith(EXTRA_REMAINING_PREFIX):
            commit_extra[k] = v
    meta = CommitMetadata.of(
        (_write_stat(r) for r in results), compacted=True, extra=commit_extra, operation_type="COMPACT"
    )
    if progress is not None:
        progress(ProgressEvent("commit", 0, 1, f"writing {instant}.commit"))
    # On 1.x the compaction completes *at* its requested time (``C_C.commit``, docs/hudi-1x.md §4.4): its links and
    # carry-over logs, named with C, then replay after base C and before every later write in every log order.
    completed = table.instant_file(instant, COMMIT, COMPLETED, completion=instant)
    # An unschedule or rollback cannot tell a running run from a crashed one: one that took the plan back while the
    # tasks ran deleted the plan, links and outputs it found, and committing now would complete a compaction whose
    # files are gone (and list them in the metadata table).
    require_compaction_running(
        storage, table.config.timeline_path, table.config.timeline_layout, instant, f"{completed}"
    )
    if has_metadata_table(table):
        # The metadata table lists C's base files, carry-over logs and links before C completes (docs/metadata-table.md
        # §6); they all carry C's name, so no reader counts them before C.commit either way.
        outputs = [p for r in results for p in r.outputs] + [link.symlink_path for link in links]
        sync_files_partition(table, instant, added=added_files(storage, outputs))
    fault_point("run.before_commit")
    storage.write_bytes_atomic(completed, table.format.encode_commit_metadata(meta.to_record()))
    # The records of a completed instant are no longer read; a folder left behind by a failure here is harmless.
    with contextlib.suppress(EvtError):
        drop_ownership(storage, instant)
    if progress is not None:
        progress(ProgressEvent("commit", 1, 1, f"compaction {instant} completed"))
    table.refresh()
    return CompactionResult(
        instant=instant,
        operations=len(results),
        base_files_written=tuple(r.path for r in results),
        records_written=sum(r.num_writes for r in results),
        bytes_written=sum(r.total_write_bytes + r.carry_over_size for r in results),
        log_files_compacted=sum(r.total_log_files_compacted for r in results),
        log_bytes_compacted=sum(r.total_log_size_compacted for r in results),
        links=len(links),
        threshold=threshold,
        duration_s=time.monotonic() - started,
        carried_over=sum(r.carry_over_records for r in results),
        reruns=reruns,
    )
