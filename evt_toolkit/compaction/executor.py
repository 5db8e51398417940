"""Running a compaction plan: validate, inflight, links, one task per operation, then the driver writes ``C.commit``.

Steps (``hudi-format.md`` §4 "Execution", design §2.3 and §2.5):

1. The plan is read back from ``C.compaction.requested`` and validated against storage before anything is written:
   every base and log file exists, and per operation the compacted logs plus the link targets are exactly the old
   slice's logs in replay order, compacted ones first (the prefix rule, re-checked because files may have changed
   since scheduling).
2. ``C.compaction.inflight`` (empty) is written unless present.
3. With ``link_timing="execute"`` the driver creates the links now (idempotently).
4. One task per operation (:func:`~evt_toolkit.compaction.merge_task.run_merge_task`): locally, or on Spark with one
   partition per operation, each task reopening storage from the table URI and sending its figures back.
5. The driver alone writes ``C.commit``: ``HoodieCommitMetadata`` JSON with plain ``HoodieWriteStat`` entries,
   ``compacted: true``, ``operationType: "COMPACT"``, ``extraMetadata`` with ``schema``, the plan's
   ``evt.compaction.*`` settings, ``evt.compaction.links`` and the RFC's remaining-log figures.

A failure at any step before 5 leaves the plan pending: the view hides the partial outputs named with ``C`` and
readers keep merging the old slice, so the table reads as before; running again completes it with identical files.

Example:
    >>> res = run_compaction(t, c.instant)  # doctest: +SKIP
    >>> res.operations, res.records_written  # doctest: +SKIP
    (12, 48211)
"""

from __future__ import annotations

import json
import posixpath
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evt_toolkit.compaction.links import PartitionLink, create_links
from evt_toolkit.compaction.merge_task import FaultHook, MergeTask, carry_over_name, run_merge_task
from evt_toolkit.compaction.plan import EXTRA_LINK_MODE, EXTRA_LINK_TIMING, EXTRA_THRESHOLD_MS
from evt_toolkit.compaction.schedule import EXTRA_CARRY_OVER, EXTRA_EXACT_SPLIT, EXTRA_REMAINING_PREFIX, plan_file
from evt_toolkit.errors import EvtError, PlanValidationError, TimelineError
from evt_toolkit.faults import fault_point
from evt_toolkit.format.metadata import encode_commit_metadata_json, write_stat
from evt_toolkit.format.names import COMPLETED, INFLIGHT, InstantFileName, LogFileName
from evt_toolkit.table.timeline import COMMIT, COMPACTION, Instant

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from evt_toolkit.table.table import HudiTable

__all__ = [
    "CompactionExecutionError",
    "CompactionResult",
    "ProgressCallback",
    "ProgressEvent",
    "load_pending_plan",
    "run_compaction",
    "validate_plan_files",
]


class CompactionExecutionError(EvtError):
    """A compaction task failed (on Spark); the message carries the task's own error, which names the file."""


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


def _find_instant(table: HudiTable, instant: str) -> Instant:
    for inst in table.timeline.instants:
        if inst.time == instant and inst.action in (COMPACTION, COMMIT):
            return inst
    raise TimelineError(f"{table.storage.uri}: no compaction plan at instant {instant}")


def load_pending_plan(table: HudiTable, instant: str) -> tuple[Instant, dict[str, Any]]:
    """The pending compaction instant and its decoded plan.

    Raises:
        TimelineError: no such compaction, or it already completed.
        MetadataDecodeError: the plan file cannot be decoded (names it).
    """
    inst = _find_instant(table, instant)
    if inst.is_completed:
        raise TimelineError(f"compaction {instant} of {table.storage.uri} has already completed")
    return inst, table.timeline.compaction_plan(inst)


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def plan_links_with_partition(plan: Mapping[str, Any]) -> list[PartitionLink]:
    """Every link of a plan, with its partition, in plan order."""
    out: list[PartitionLink] = []
    for op in plan.get("operations") or []:
        partition = str(op.get("partitionPath") or "")
        for x in op.get("symlinkOperations") or []:
            out.append(PartitionLink(partition, str(x["symlink"]), str(x["target"])))
    return out


def old_slice_logs(table: HudiTable, partition: str, file_id: str, base_instant: str) -> list[str]:
    """Names of the logs of slice ``base_instant`` of a file group on storage, in replay order."""
    files, _ = table.storage.list_dir(partition)
    found = []
    for e in files:
        parsed = LogFileName.parse(e.name)
        if (
            parsed
            and parsed.extension == "log"
            and not parsed.suffix
            and parsed.file_id == file_id
            and parsed.base_instant == base_instant
        ):
            found.append(parsed)
    found.sort(key=lambda p: p.sort_key())
    return [p.name for p in found]


def validate_plan_files(table: HudiTable, plan: Mapping[str, Any]) -> list[str]:
    """Problems of a plan against storage (empty when it can run): missing files, broken prefix rule.

    Checks, per operation: the base file and every compacted log exist; the compacted logs followed by the link
    targets are exactly the old slice's logs in replay order (so the compacted set is a prefix and nothing of the
    slice is forgotten).
    """
    storage = table.storage
    problems: list[str] = []
    for op in plan.get("operations") or []:
        partition = str(op.get("partitionPath") or "")
        fid = str(op.get("fileId") or "")
        data_file = op.get("dataFilePath")
        if data_file and not storage.exists(_rel(partition, str(data_file))):
            problems.append(f"base file {storage.full_path(_rel(partition, str(data_file)))} is missing")
        deltas = [str(d) for d in op.get("deltaFilePaths") or []]
        for d in deltas:
            if not storage.exists(_rel(partition, d)):
                problems.append(f"log file {storage.full_path(_rel(partition, d))} is missing")
        targets = [str(x["target"]) for x in op.get("symlinkOperations") or []]
        actual = old_slice_logs(table, partition, fid, str(op.get("baseInstantTime") or ""))
        planned = deltas + targets
        if planned != actual[: len(planned)] or (targets and planned != actual):
            problems.append(
                f"file group {fid} in {partition!r}: compacted logs {deltas} followed by leftovers {targets} are not "
                f"the slice's logs in replay order {actual} (prefix rule)"
            )
        elif not targets and planned != actual:
            extra = actual[len(planned) :]
            problems.append(
                f"file group {fid} in {partition!r}: logs {extra} of the slice are neither compacted nor linked"
            )
    return problems


_STAT_KEYS = (
    "fileId",
    "path",
    "prevCommit",
    "numWrites",
    "numDeletes",
    "numUpdateWrites",
    "numInserts",
    "totalWriteBytes",
    "partitionPath",
    "totalLogRecords",
    "totalLogFilesCompacted",
    "totalLogSizeCompacted",
    "totalUpdatedRecordsCompacted",
    "totalLogBlocks",
    "totalRollbackBlocks",
    "fileSizeInBytes",
    "minEventTime",
    "maxEventTime",
)


def _write_stat(r: Mapping[str, Any]) -> dict[str, Any]:
    """A plain ``HoodieWriteStat`` in Jackson's field order (compaction writes no delta stats)."""
    copied = {k: r[k] for k in _STAT_KEYS}
    return write_stat(
        **copied,
        runtimeStats={"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": r["elapsedMs"]},
    )


def _run_tasks(
    tasks: list[MergeTask],
    spark: SparkSession | None,
    progress: ProgressCallback | None,
) -> list[dict[str, Any]]:
    total = len(tasks)
    if spark is None:
        results = []
        for i, task in enumerate(tasks):
            results.append(run_merge_task(task))
            fault_point("run.after_task")
            if progress is not None:
                progress(ProgressEvent("tasks", i + 1, total, f"compacted file group {task.file_id}"))
        return results
    sc = spark.sparkContext
    rdd = sc.parallelize(tasks, numSlices=total).map(run_merge_task)
    try:
        results = []
        # toLocalIterator would serialize the tasks; collect runs them in parallel and reports per result.
        for i, r in enumerate(rdd.collect()):
            results.append(r)
            if progress is not None:
                progress(ProgressEvent("tasks", i + 1, total, f"compacted file group {r['fileId']}"))
        return results
    except Exception as exc:  # Py4J / PythonException carry the task's error text
        text = str(exc)
        lines = [ln for ln in text.splitlines() if "Error:" in ln or "error" in ln.lower()]
        detail = next((ln.strip() for ln in lines if "evt_toolkit" in ln), lines[0].strip() if lines else text[:500])
        raise CompactionExecutionError(f"a compaction task failed on Spark: {detail}") from exc


def run_compaction(
    table: HudiTable,
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
        spark: run one Spark task per operation; ``None`` runs them in this process.
        progress: called with :class:`ProgressEvent` s (``links``, ``tasks`` per finished operation, ``commit``).
        exact_split: keep records with event time > T out of the new base files. Only possible when the plan
            was scheduled with ``exact_split=True`` (which reserves the carry-over log's version); a plan scheduled
            that way splits whatever this flag says.
        fault_hook: fault injection for tests (called inside each task), ``None`` otherwise.

    Raises:
        TimelineError: no pending compaction at ``instant``.
        MetadataDecodeError: the plan file is cut short or otherwise undecodable (names it).
        PlanValidationError: files of the plan are missing or the prefix rule does not hold (names them).
        LogFormatError: a compacted log is corrupt (names it); nothing is committed.
        CompactionExecutionError: a Spark task failed (its error text included); nothing is committed.
    """
    started = time.monotonic()
    table.refresh()
    _, plan = load_pending_plan(table, instant)
    extra = dict(plan.get("extraMetadata") or {})
    planned_split = extra.get(EXTRA_EXACT_SPLIT) == "true"
    if exact_split and not planned_split:
        raise PlanValidationError(
            f"compaction {instant} was not scheduled with exact_split=True: version 1 of its new slices is not "
            "reserved for the carry-over log (schedule again with exact_split=True)"
        )
    problems = validate_plan_files(table, plan)
    if problems:
        raise PlanValidationError(f"compaction {instant} cannot run: " + "; ".join(problems))
    storage = table.storage
    ops = list(plan.get("operations") or [])
    carry = extra.get(EXTRA_CARRY_OVER) == "true"
    threshold_text = extra.get(EXTRA_THRESHOLD_MS)
    threshold = int(threshold_text) if threshold_text else None
    link_mode = extra.get(EXTRA_LINK_MODE, "copy")
    link_timing = extra.get(EXTRA_LINK_TIMING, "schedule")

    inflight = plan_file(table, instant, INFLIGHT)
    if not storage.exists(inflight):
        storage.write_bytes_atomic(inflight, b"")
    fault_point("run.after_inflight")

    links = plan_links_with_partition(plan)
    if link_timing == "execute" and links:
        created = create_links(storage, links, link_mode)
        fault_point("run.after_links")
        if progress is not None:
            progress(ProgressEvent("links", len(links), len(links), f"{created} link(s) created, {len(links)} in plan"))
    elif progress is not None:
        progress(ProgressEvent("links", len(links), len(links), "links were created at schedule time"))

    tasks = [
        MergeTask(
            storage.uri,
            instant,
            i,
            op,
            carry_over=(slot := _carry_over_slot(table, op, i, instant, carry, planned_split)),
            exact_split=planned_split and slot,
            threshold=threshold,
            fault_hook=fault_hook,
            storage_options=storage.options,
        )
        for i, op in enumerate(ops)
    ]
    results = _run_tasks(tasks, spark, progress)
    results.sort(key=lambda r: int(r["index"]))

    stats: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        stats.setdefault(r["partitionPath"], []).append(_write_stat(r))
    unsplit = [t.file_id for t in tasks if planned_split and not t.exact_split]
    commit_extra: dict[str, str] = {}
    if "schema" in extra:
        commit_extra["schema"] = extra["schema"]
    for k, v in extra.items():
        if k.startswith("evt.compaction.") or k == "hoodie.payload.event.time.field":
            commit_extra[k] = v
    commit_extra["evt.compaction.links"] = json.dumps([link.to_json() for link in links], separators=(",", ":"))
    carry_logs = [
        {"partition": r["partitionPath"], "log": r["carryOverLog"], "records": r["carryOverRecords"]}
        for r in results
        if r["carryOverLog"]
    ]
    commit_extra["evt.compaction.carry_over_logs"] = json.dumps(carry_logs, separators=(",", ":"))
    if unsplit:
        commit_extra["evt.compaction.exact_split.skipped"] = ",".join(unsplit)
    for k, v in extra.items():
        if k.startswith(EXTRA_REMAINING_PREFIX):
            commit_extra[k] = v
    meta = {
        "partitionToWriteStats": stats,
        "compacted": True,
        "extraMetadata": commit_extra,
        "operationType": "COMPACT",
    }
    if progress is not None:
        progress(ProgressEvent("commit", 0, 1, f"writing {instant}.commit"))
    completed = posixpath.join(table.config.timeline_path, InstantFileName(instant, COMMIT, COMPLETED).name)
    fault_point("run.before_commit")
    storage.write_bytes_atomic(completed, encode_commit_metadata_json(meta))
    if progress is not None:
        progress(ProgressEvent("commit", 1, 1, f"compaction {instant} completed"))
    table.refresh()
    return CompactionResult(
        instant=instant,
        operations=len(results),
        base_files_written=tuple(str(r["path"]) for r in results),
        records_written=sum(int(r["numWrites"]) for r in results),
        bytes_written=sum(int(r["totalWriteBytes"]) + int(r["carryOverSize"]) for r in results),
        log_files_compacted=sum(int(r["totalLogFilesCompacted"]) for r in results),
        log_bytes_compacted=sum(int(r["totalLogSizeCompacted"]) for r in results),
        links=len(links),
        threshold=threshold,
        duration_s=time.monotonic() - started,
    )


def _carry_over_slot(
    table: HudiTable, op: Mapping[str, Any], index: int, instant: str, carry: bool, planned_split: bool
) -> bool:
    """Whether version 1 of the operation's new slice is free for its carry-over log.

    The plan reserves it by starting the links at version 2. An exact-split operation without leftovers has no link
    to tell writers about the reservation, so a write may have taken version 1 since scheduling; that group is
    then compacted without a split (the carry-over could no longer replay first) and the commit says so.
    """
    if not carry:
        return False
    versions = [p.version for x in op.get("symlinkOperations") or [] if (p := LogFileName.parse(str(x["symlink"])))]
    if versions:
        return min(versions) >= 2
    if not planned_split:
        return False
    ours = carry_over_name(str(op["fileId"]), instant, index)
    partition = str(op.get("partitionPath") or "")
    for name in old_slice_logs(table, partition, str(op["fileId"]), instant):
        parsed = LogFileName.parse(name)
        if parsed is not None and parsed.version == 1 and name != ours:
            return False
    return True
