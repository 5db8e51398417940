"""One compaction task: merge an operation's base file with exactly the plan's logs into a new base file.

A task is self-contained (:class:`MergeTask` pickles into a Spark task with the driver's :class:`ReadSpec`; storage is
reopened from the table URI) and creates nothing but its operation's outputs at instant ``C``, each recorded in an
ownership record before it is written (:mod:`evt_toolkit.storage.ownership`); the driver alone writes the timeline.

Which blocks count is the slice read's rule (:func:`evt_toolkit.read.slice_reader.select_log_blocks`: uncommitted
blocks skipped, rollback command blocks applied), and the merge rule is the reader's; the merge itself runs in
bounded memory (:mod:`evt_toolkit.compaction.bounded_merge`, ``docs/compaction-memory.md``: batches reduced by
hashing, spilled by hash partition past ``hoodie.memory.compaction.max.size``). Unlike a reader, a task
refuses a log holding a corrupt block: a reader may skip it (Hudi does), but a compaction that skipped it would drop
its records for good, because the compacted log is no longer part of the new slice.

**Outputs.** The new base file ``{fileId}_{index}-0-0_{C}.parquet`` (rows in merge order, meta fields preserved
except ``_hoodie_file_name``), and, when :mod:`~evt_toolkit.compaction.carry_over` says so, a *carry-over log*
``.{fileId}_{C}.log.0_{index}-0-0``: version 0, which no writer produces (Hudi's writers start at version 1 and roll
over to max + 1), so it always replays first in the new slice, before the links and before any write that landed in
the slice. Its blocks carry ``INSTANT_TIME = C`` while each record keeps its original ``_hoodie_commit_time`` and
``_hoodie_commit_seqno``: readers only count blocks of *completed* instants, so the carry-over becomes visible at
the very moment ``C.commit`` lands — the same moment the new base file does.

**Later logs.** In event-time ordering the task reads the later logs of the new slice (links and landed writes) to
find the keys whose compacted form would change an answer; it reports the later logs it saw so that the driver can
check, right before committing, that no write landed since (and run the task again if one did).

**Determinism.** Output names depend only on the operation's index in the plan and the Parquet bytes only on the
inputs, so a task run again overwrites its own outputs with identical files.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evt_toolkit.compaction.bounded_merge import BoundedSliceMerge, MemoryBudget
from evt_toolkit.compaction.carry_over import CarryOverDecision, decide, first_base_rows, needs_later_keys
from evt_toolkit.errors import (
    EvtError,
    LogFormatError,
    PendingTableServiceError,
    PlanValidationError,
    StorageError,
    UnsupportedFeatureError,
)
from evt_toolkit.format.bloom import (
    DEFAULT_BLOOM_CONFIG,
    MAX_RECORD_KEY,
    MIN_RECORD_KEY,
    BloomFilterBuilder,
    BloomFilterConfig,
    utf16_less,
    utf16_min_max_arrow,
)
from evt_toolkit.format.eventtime import EpochUnit, event_time_stats, to_epoch_ms
from evt_toolkit.format.log_writer import (
    avro_schema_json,
    encode_avro_data_block,
    encode_delete_block,
    ordering_pylist,
)
from evt_toolkit.format.logfile import BlockType, LogBlock
from evt_toolkit.format.names import CARRY_OVER_LOG_VERSION, BaseFileName, LogFileName
from evt_toolkit.format.ownership import BASE, CARRY_OVER, RUN, OwnedFile
from evt_toolkit.format.records import CompactionOperation
from evt_toolkit.read.merge import (
    EVENT_TIME,
    KEY,
    build_candidates,
    may_hold_soft_commit_time_deletes,
    soft_commit_time_deletes,
)
from evt_toolkit.read.plan import ReadSpec
from evt_toolkit.read.slice_reader import (
    SliceMerge,
    SliceReadContext,
    decode_blocks,
    rolled_back_corrupt_blocks,
    scan_logs,
    select_log_blocks,
)
from evt_toolkit.storage.fs import FileEntry, TableStorage
from evt_toolkit.storage.ownership import attempt_state, mark_created, record_folder, record_ownership
from evt_toolkit.storage.temporary import temporary_path
from evt_toolkit.table.fs_view import BaseFile, LogFile
from evt_toolkit.write.fence import require_attempt_live, require_compaction_running

__all__ = [
    "FILE_NAME",
    "MergeResult",
    "MergeTask",
    "appended_writers",
    "base_file_token",
    "carry_over_name",
    "grown_compacted_log",
    "landed_logs_matter",
    "later_logs",
    "run_merge_task",
    "task_outputs",
]

FILE_NAME = "_hoodie_file_name"
_PARTITION = "_hoodie_partition_path"
#: ``fault_hook(task, stage)`` is called at ``"merged"`` (before writing) and ``"written"`` (after the base file).
FaultHook = Callable[["MergeTask", str], None]


@dataclass(frozen=True, slots=True)
class MergeTask:
    """Everything one compaction task needs (picklable; sent to a Spark task as is).

    Attributes:
        table_uri: the table's base path or URI.
        instant: the compaction instant ``C``.
        index: the operation's position in the plan (the task partition id of the write token).
        operation: the plan's ``HoodieCompactionOperation`` record.
        spec: how to merge (schema, merge mode, the driver's timeline).
        event_time_field: the table's event-time field (write stats, exact split).
        event_time_unit: its unit when it is an integer epoch.
        exact_split: records with event time > ``threshold`` stay out of the base (carried over instead).
        threshold: T in epoch ms.
        memory_budget: ``hoodie.memory.compaction.max.size`` in bytes; ``None``: a fraction of the worker's memory
            (:class:`~evt_toolkit.compaction.bounded_merge.MemoryBudget`).
        spill_dir: ``hoodie.memory.spillable.map.path``: where the task spills past its budget (``None``: temp dir).
        outputs_recorded: the driver recorded the task's outputs (:func:`task_outputs`) in one ownership record
            for every task of the run before starting them; otherwise the task records its own first.
        decode_threads: threads one task decodes with (``None``: the CPUs of its process; on Spark the executor
            passes ``spark.task.cpus``, the cores Spark gives each task, so tasks running side by side do not
            oversubscribe the executor).
        bloom: the record-key bloom filter written in the new base file's footer (the table's
            ``hoodie.bloom.index.filter.type`` and sizes, Hudi's defaults otherwise).
        timeline_path: the table's timeline folder (``hoodie.timeline.path`` under ``.hoodie`` on layout 2), where the
            task checks that its compaction is still running before it puts its outputs under their names.
        fault_hook: test hook for fault injection (``None`` in production).
        cancel: set by a run in this process when it is interrupted, so that a task running beside others stops at
            its next batch or part instead of finishing (``None`` on Spark: an Event does not pickle).
        attempt: the run attempt's id on Spark (:func:`~evt_toolkit.storage.ownership.new_attempt`): the task writes
            nothing once its driver recorded the attempt abandoned (checked before its first output byte, every
            few seconds while it merges, and right before its outputs take their names); ``None`` in this process.
    """

    table_uri: str
    instant: str
    index: int
    operation: CompactionOperation
    spec: ReadSpec
    event_time_field: str | None = None
    event_time_unit: EpochUnit = "ms"
    exact_split: bool = False
    threshold: int | None = None
    memory_budget: int | None = None
    spill_dir: str | None = None
    outputs_recorded: bool = False
    decode_threads: int | None = None
    timeline_path: str = ".hoodie"
    bloom: BloomFilterConfig = DEFAULT_BLOOM_CONFIG
    fault_hook: FaultHook | None = field(default=None, compare=False)
    cancel: threading.Event | None = field(default=None, compare=False)
    attempt: str | None = None

    @property
    def partition_path(self) -> str:
        """The operation's partition."""
        return self.operation.partition_path

    @property
    def file_id(self) -> str:
        """The operation's file group."""
        return self.operation.file_id


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What one task wrote and counted (sent back to the driver)."""

    index: int
    file_id: str
    partition_path: str
    path: str
    name: str
    prev_commit: str
    num_writes: int
    num_deletes: int
    num_update_writes: int
    num_inserts: int
    total_write_bytes: int
    total_log_records: int
    total_log_files_compacted: int
    total_log_size_compacted: int
    total_log_blocks: int
    total_rollback_blocks: int
    min_event_time: int | None
    max_event_time: int | None
    min_record_key: str | None
    max_record_key: str | None
    carry_over_log: str | None
    carry_over_size: int
    carry_over_records: int
    tombstones: int
    kept: int
    split: int
    later_logs: tuple[tuple[str, int], ...]
    ct_sensitive_keys: tuple[str, ...]
    elapsed_ms: int
    compacted_logs: tuple[tuple[str, int], ...] = ()

    @property
    def outputs(self) -> tuple[str, ...]:
        """The files this task's final attempt produced, relative to the base path."""
        return (self.path,) + ((_rel(self.partition_path, self.carry_over_log),) if self.carry_over_log else ())


def base_file_token(index: int) -> str:
    """The deterministic write token of operation ``index``: ``<index>-0-0``."""
    return f"{index}-0-0"


def carry_over_name(file_id: str, instant: str, index: int) -> str:
    """Name of the carry-over log of operation ``index``: version 0 of slice ``instant``."""
    return LogFileName(file_id, instant, "log", CARRY_OVER_LOG_VERSION, base_file_token(index)).name


def base_file_name(task: MergeTask) -> str:
    """Name of the new base file of ``task``: ``{fileId}_{index}-0-0_{C}.parquet``."""
    return BaseFileName(task.file_id, base_file_token(task.index), task.instant, ".parquet").name


def task_outputs(task: MergeTask) -> list[OwnedFile]:
    """The files a task may create (its names depend only on the plan): the new base file and the carry-over log."""
    partition = task.partition_path
    carry = carry_over_name(task.file_id, task.instant, task.index)
    return [OwnedFile(_rel(partition, base_file_name(task)), BASE), OwnedFile(_rel(partition, carry), CARRY_OVER)]


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def _log_file(storage: TableStorage, partition: str, name: str, sizes: dict[str, int]) -> LogFile:
    """The plan's log ``name``; ``sizes`` (name -> size) is the partition's listing, taken after the plan."""
    parsed = LogFileName.parse(name)
    rel = _rel(partition, name)
    if parsed is None or parsed.extension != "log":
        raise PlanValidationError(f"plan lists {rel!r} as a log file, but it is not a log file name")
    size = sizes.get(name)
    if size is None:
        raise PlanValidationError(f"log file {storage.full_path(rel)} of the compaction plan is missing")
    return LogFile(
        rel, name, parsed.file_id, parsed.base_instant, parsed.version, parsed.write_token, parsed.suffix, size
    )


def _base_file(storage: TableStorage, partition: str, name: str, sizes: dict[str, int]) -> BaseFile:
    parsed = BaseFileName.parse(name)
    rel = _rel(partition, name)
    if parsed is None:
        raise PlanValidationError(f"plan lists {rel!r} as a base file, but it is not a base file name")
    size = sizes.get(name)
    if size is None:
        raise PlanValidationError(f"base file {storage.full_path(rel)} of the compaction plan is missing")
    return BaseFile(rel, name, parsed.file_id, parsed.instant, parsed.write_token, size)


def later_logs(
    storage: TableStorage,
    partition: str,
    file_id: str,
    instant: str,
    *,
    named_by_deltacommit: bool = False,
    listing: list[FileEntry] | None = None,
) -> list[LogFile]:
    """The logs of slice ``instant`` of a file group other than carry-over logs, in replay order (links and writes).

    On 1.x (``named_by_deltacommit``) a write landing in the new slice is named after its own deltacommit, requested
    after ``C`` (docs/hudi-1x.md §4.4), so the slice's later logs are those named ``C`` or later. ``listing`` is the
    partition's listing when the caller just took one (otherwise the partition is listed here).
    """
    files = listing if listing is not None else storage.list_dir(partition)[0]
    out = []
    for e in files:
        parsed = LogFileName.parse(e.name)
        if (
            parsed is not None
            and parsed.extension == "log"
            and not parsed.suffix
            and parsed.file_id == file_id
            and (parsed.base_instant >= instant if named_by_deltacommit else parsed.base_instant == instant)
            and not (parsed.base_instant == instant and parsed.version == CARRY_OVER_LOG_VERSION)
        ):
            out.append(
                LogFile(
                    e.path,
                    e.name,
                    file_id,
                    parsed.base_instant,
                    parsed.version,
                    parsed.write_token,
                    parsed.suffix,
                    e.size,
                )
            )
    return sorted(out, key=LogFile.sort_key)


def partition_listing(
    storage: TableStorage, partition: str, listings: dict[str, list[FileEntry]] | None = None
) -> list[FileEntry]:
    """The files of ``partition``: from ``listings`` (partition -> files) when it holds them, else listed and kept
    there, so that the caller's next operations in the partition share one listing."""
    files = listings.get(partition) if listings is not None else None
    if files is None:
        files = storage.list_dir(partition)[0]
        if listings is not None:
            listings[partition] = files
    return files


def _task_later_logs(storage: TableStorage, task: MergeTask, listing: list[FileEntry]) -> list[LogFile]:
    return later_logs(
        storage,
        task.partition_path,
        task.file_id,
        task.instant,
        named_by_deltacommit=_named_by_deltacommit(task),
        listing=listing,
    )


def _named_by_deltacommit(task: MergeTask) -> bool:
    """Whether the table names logs after their deltacommit (1.x, timeline layout 2)."""
    return task.spec.timeline.layout_version >= 2


def _check_blocks(
    storage: TableStorage, logs: tuple[LogFile, ...], later: tuple[LogFile, ...], scanned: dict[str, list[LogBlock]]
) -> tuple[int, int]:
    """Refuse logs with corrupt blocks but those a later rollback command block of the slice rolls back
    (:func:`~evt_toolkit.read.slice_reader.rolled_back_corrupt_blocks`); return (blocks, rollback command blocks)."""
    blocks = rollbacks = 0
    gone = rolled_back_corrupt_blocks(blk for lf in logs + later for blk in scanned[lf.path])
    for lf in logs:
        for blk in scanned[lf.path]:
            if blk.is_corrupt and (blk.log_file, blk.offset) not in gone:
                raise LogFormatError(
                    f"log file {storage.full_path(lf.path)} has a corrupt block at offset {blk.offset}; "
                    "compacting it would lose that block's records (repair or roll back the write first)"
                )
            if blk.is_corrupt:
                continue  # rolled back: dropped, as every reader drops it
            blocks += 1
            rollbacks += blk.block_type == BlockType.COMMAND
    return blocks, rollbacks


def _refuse_pending_blocks(
    storage: TableStorage, task: MergeTask, logs: tuple[LogFile, ...], scanned: dict[str, list[LogBlock]]
) -> None:
    """Refuse a compacted log holding blocks of a write that is still pending (requested or inflight).

    Only a writer appending to a log that exists already puts such blocks there (stock Hudi 0.x on storage with
    append, having chosen its slice before the plan existed): this toolkit's writers write new logs, and a schedule
    refuses while an earlier write is pending. The block does not count yet, so the new base file would leave it out,
    and once the write completes its log sits in a slice the compaction superseded: its records would be lost.
    """
    pending = {i.time for i in task.spec.timeline.inflight_writes()}
    if not pending:
        return
    for lf in logs:
        for blk in scanned[lf.path]:
            if blk.instant_time in pending and blk.block_type is not BlockType.COMMAND:
                raise PendingTableServiceError(
                    f"compaction {task.instant} of {storage.uri}: log file {storage.full_path(lf.path)} holds blocks "
                    f"of write {blk.instant_time}, which is still pending; compacted now, its records would be lost "
                    "when it completes. Nothing was committed: run the compaction again once that write completes or "
                    "is rolled back"
                )


def _later_facts(ctx: SliceReadContext, logs: list[LogFile], need_keys: bool) -> tuple[pa.Array | None, pa.Array]:
    """``(every key with a later record or None, keys with a later commit-time delete)``.

    Every block counts, committed or not: a write still inflight may complete before ``C.commit``.
    """
    if not logs:
        return (pa.array([], pa.string()) if need_keys else None), pa.array([], pa.string())
    everything = replace(ctx, is_visible=lambda _instant: True, query_instant=None)
    queued = select_log_blocks(everything, tuple(logs))
    deletes_only = [q for q in queued if q.block.block_type == BlockType.DELETE]
    _, _, deletes, delseq = decode_blocks(everything, deletes_only)
    cands = build_candidates(
        ctx.schema.empty_table(), pa.array([], pa.int64()), deletes, delseq, ctx.ordering_field, ctx.merge_mode
    ).table
    ct_keys = cands.filter(pc.and_(pc.equal(cands["src"], 1), cands["ct_delete"]))["key"].combine_chunks()
    keys: pa.Array | None = None
    # A soft delete holding the default ordering value is a commit-time delete too: its data blocks count then.
    soft_ct = may_hold_soft_commit_time_deletes(ctx.schema, ctx.ordering_field, ctx.merge_mode)
    if need_keys or soft_ct:
        data, _, _, _ = decode_blocks(everything, [q for q in queued if q.block.block_type != BlockType.DELETE])
        data_keys = data[KEY].combine_chunks().cast(pa.string())
        if need_keys:
            keys = pa.concat_arrays([data_keys, deletes[KEY].combine_chunks().cast(pa.string())])
        if soft_ct:
            soft_ct_keys = data_keys.filter(soft_commit_time_deletes(data, ctx.ordering_field, ctx.merge_mode))
            ct_keys = pa.concat_arrays([ct_keys.cast(pa.string()), soft_ct_keys])
    return keys, ct_keys


def appended_writers(storage: TableStorage, partition: str, name: str, since: int, size: int) -> tuple[str, ...]:
    """The instants of the blocks of log ``name`` from byte ``since`` on (blocks appended after that size was seen)."""
    path = _rel(partition, name)
    with contextlib.suppress(EvtError):
        blocks = scan_logs(storage, [LogFile(path, name, "", "", 0, None, "", size)])[path]
        return tuple(sorted({b.instant_time for b in blocks if b.offset >= since and b.instant_time}))
    return ()


def grown_compacted_log(
    storage: TableStorage, task: MergeTask, result: MergeResult, listing: list[FileEntry]
) -> tuple[str, tuple[str, ...]] | None:
    """A log the task compacted that is larger now than when the task read it, with the instants of the blocks
    appended since (relative path, instants); ``None`` when every compacted log is as the task read it.

    On storage with append a stock writer may append to a log the plan compacts (table version 6); its blocks would
    be missing from the new base file and lost with the superseded slice.
    """
    sizes = {e.name: e.size for e in listing}
    for name, size in result.compacted_logs:
        now = sizes.get(name)
        if now is not None and now != size:
            return _rel(task.partition_path, name), appended_writers(storage, task.partition_path, name, size, now)
    return None


def landed_logs_matter(
    task: MergeTask, result: MergeResult, storage: TableStorage, listings: dict[str, list[FileEntry]] | None = None
) -> bool:
    """Whether logs that landed in the new slice after the task read it could change the task's decision.

    Only commit-time deletes in them, or any record of a key the task compacted past a delete of its base row
    (:attr:`CarryOverDecision.ct_sensitive_keys`), can; other upserts and deletes with an ordering value cannot.
    ``listings`` (partition -> files) shares one listing per partition between the tasks of one check; it must be
    taken after every task it serves finished reading.
    """
    seen = set(result.later_logs)
    listing = partition_listing(storage, task.partition_path, listings)
    landed = [lf for lf in _task_later_logs(storage, task, listing) if (lf.name, lf.size) not in seen]
    if not landed:
        return False
    ctx = task.spec.context(None, storage=storage)
    keys, ct_keys = _later_facts(ctx, landed, bool(result.ct_sensitive_keys))
    if len(ct_keys):
        return True
    return keys is not None and bool(set(keys.to_pylist()) & set(result.ct_sensitive_keys))


def _split_mask(task: MergeTask, data: pa.Table, idx: pa.Array) -> pa.Array | None:
    """Over rows ``idx`` of ``data``: the records whose event time is past the threshold (exact split only)."""
    fld = task.event_time_field
    if not task.exact_split or task.threshold is None or not fld or fld not in data.column_names or not len(idx):
        return None
    ms = to_epoch_ms(data[fld].take(idx), task.event_time_unit, field=fld)
    return pc.fill_null(pc.greater(ms, pa.scalar(task.threshold, pa.int64())), False)


class _LaterFacts:
    """What the later logs of the new slice say, decoded once per task however many partitions ask."""

    def __init__(self, ctx: SliceReadContext, later: list[LogFile]) -> None:
        self.ctx, self.later = ctx, later
        self._ct: pa.Array | None = None
        self._keys: pa.Array | None = None

    def get(self, need_keys: bool) -> tuple[pa.Array | None, pa.Array]:
        if self._ct is None or (need_keys and self._keys is None):
            keys, self._ct = _later_facts(self.ctx, self.later, need_keys)
            if need_keys:
                self._keys = keys
        return (self._keys if need_keys else None), self._ct


def _decide(ctx: SliceReadContext, merge: SliceMerge, task: MergeTask, later: _LaterFacts) -> CarryOverDecision:
    event_ordering = ctx.merge_mode == EVENT_TIME and bool(ctx.ordering_field)
    base_keys = merge.base[KEY].combine_chunks()
    later_keys: pa.Array | None = None
    later_ct = pa.array([], pa.string())
    has_base = first_base_rows(base_keys, merge.winners["key"].combine_chunks()) >= 0
    need_keys = needs_later_keys(merge.winners, has_base, event_ordering)
    if event_ordering or need_keys:  # commit-time ordering too: a deleted base row a later record keeps alive
        later_keys, later_ct = later.get(need_keys)
    emitted_idx = merge.emitted["idx"].combine_chunks()
    return decide(
        base_keys=base_keys,
        keep_base=merge.keep_base,
        winners=merge.winners,
        emitted_idx=emitted_idx,
        event_time_ordering=event_ordering,
        later_keys=later_keys,
        later_ct_keys=later_ct,
        split_mask=_split_mask(task, merge.data, emitted_idx),
    )


#: Rows per Parquet row group of a new base file (and per ``take`` while writing it: bounds the copy).
ROW_GROUP_ROWS = 128 * 1024


#: A write takes slices of its source instead of gathering rows when ``idx`` breaks into at most one ascending
#: stretch per this many rows (a slice costs a few microseconds; a gather copies every column).
_ROWS_PER_SLICE = 256


def _ascending_runs(idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
    """Where ``idx`` breaks into stretches of consecutive positions (``[4, 5, 6, 9, 10]``: two): the index in
    ``idx`` where each stretch starts, or ``None`` when there are too many stretches for slicing to beat a gather."""
    starts = np.flatnonzero(np.diff(idx) != 1) + 1
    if len(starts) + 1 > max(1, len(idx) // _ROWS_PER_SLICE):
        return None
    return np.concatenate([[0], starts]).astype(np.int64)


def _slices(
    source: pa.Table, idx: npt.NDArray[np.int64], runs: npt.NDArray[np.int64], start: int, stop: int
) -> pa.Table:
    """Rows ``idx[start:stop]`` of ``source`` as slices of it, one per stretch of ``runs`` they cover."""
    first = int(np.searchsorted(runs, start, side="right")) - 1
    parts = []
    for r in range(first, len(runs)):
        a = max(start, int(runs[r]))
        if a >= stop:
            break
        b = min(stop, int(runs[r + 1]) if r + 1 < len(runs) else len(idx))
        parts.append(source.slice(int(idx[a]), b - a))
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


class _BaseFileWriter:
    """The new base file, written row group by row group straight to its output stream.

    Local storage: a temporary file beside the target (the storage layer's naming), renamed into place by
    :meth:`commit`; other storage: an in-memory Parquet stream put whole by :meth:`commit` (the compressed file,
    not the rows). Rows are written in merge order, unsorted, as Hudi's compactor writes them (``HoodieMergeHandle``:
    the base file's rows, then the new records); ``_hoodie_file_name`` is set, and Hudi's footer keys are added at
    the end: the record keys' bloom filter (``org.apache.hudi.bloomfilter``, ``hoodie_bloom_filter_type_code``;
    :mod:`evt_toolkit.format.bloom`, fed the keys in row order) and ``hoodie_min_record_key``/``hoodie_max_record_key``
    in Java's (UTF-16) string order, the order a BLOOM-index writer prunes files by.
    """

    def __init__(
        self,
        storage: TableStorage,
        rel: str,
        rows_schema: pa.Schema,
        avro: dict[str, Any],
        name: str,
        event_time: tuple[str, EpochUnit] | None = None,
        bloom: BloomFilterConfig = DEFAULT_BLOOM_CONFIG,
    ):
        self.storage, self.rel, self.name = storage, rel, name
        self.bloom = BloomFilterBuilder(bloom)
        self.event_time = event_time if event_time and event_time[0] in rows_schema.names else None
        self.min_event_time: int | None = None
        self.max_event_time: int | None = None
        meta = {
            **(rows_schema.metadata or {}),
            b"parquet.avro.schema": avro_schema_json(avro).encode(),
            b"writer.model.name": b"avro",
        }
        self.schema = rows_schema.with_metadata(meta)
        self.file_idx = self.schema.get_field_index(FILE_NAME)
        self.tmp: str | None = None
        self.buffer: pa.BufferOutputStream | None = None
        sink: Any
        with self._io():
            if storage.is_local:
                full = storage.full_path(rel)
                parent = posixpath.dirname(full)
                if not os.path.isdir(parent):  # the partition's folder is there unless the slice is new
                    os.makedirs(parent, exist_ok=True)
                self.tmp = temporary_path(full)
                sink = self.tmp
            else:
                self.buffer = sink = pa.BufferOutputStream()
            try:
                # Snappy rather than Hudi's gzip default: compaction is write-heavy and every reader handles both.
                self.writer = pq.ParquetWriter(sink, self.schema, compression="snappy", write_statistics=True)
            except BaseException:
                if self.tmp is not None:  # the caller has no writer to abort: the partial file goes here
                    with contextlib.suppress(OSError):
                        os.unlink(self.tmp)
                raise
        self.rows = 0
        self.lo: str | None = None
        self.hi: str | None = None
        self._names: pa.Array | None = None

    def write(self, source: pa.Table, idx: npt.NDArray[np.int64]) -> None:
        """Write rows ``idx`` of ``source``, in that order (the kept base rows in the base file's order, then the
        log records), as Hudi's compactor writes them: no sort. Where ``idx`` runs through ``source`` in a few
        ascending stretches (no base file, a few deletes or replaced base rows), the stretches are written as slices
        of ``source`` (no copy); otherwise each row group is gathered."""
        n = len(idx)
        if not n:
            return
        runs = _ascending_runs(idx)
        for start in range(0, n, ROW_GROUP_ROWS):
            stop = min(n, start + ROW_GROUP_ROWS)
            if runs is not None:
                chunk = _slices(source, idx, runs, start, stop)
            else:
                chunk = source.take(pa.array(idx[start:stop]))
            self.bloom.add_arrow(chunk[KEY])
            bounds = utf16_min_max_arrow(chunk[KEY])
            if bounds is not None:
                lo, hi = bounds
                self.lo = lo if self.lo is None or utf16_less(lo, self.lo) else self.lo
                self.hi = hi if self.hi is None or utf16_less(self.hi, hi) else self.hi
            if self.event_time is not None:
                fld, unit = self.event_time
                stats = event_time_stats(chunk[fld], unit, field=fld)
                if stats.min_ms is not None and stats.max_ms is not None:
                    lo_et, hi_et = stats.min_ms, stats.max_ms
                    self.min_event_time = lo_et if self.min_event_time is None else min(self.min_event_time, lo_et)
                    self.max_event_time = hi_et if self.max_event_time is None else max(self.max_event_time, hi_et)
            if self.file_idx >= 0:
                chunk = chunk.set_column(
                    self.file_idx, self.schema.field(self.file_idx), self._name_column(chunk.num_rows)
                )
            if chunk.schema.types == self.schema.types and chunk.schema.names == self.schema.names:
                # Only nullability or metadata differ: a cast would run once per column and change nothing.
                chunk = pa.Table.from_arrays(chunk.columns, schema=self.schema)
            else:
                chunk = chunk.cast(self.schema)
            with self._io():
                self.writer.write_table(chunk, row_group_size=ROW_GROUP_ROWS)
            self.rows += chunk.num_rows

    def _name_column(self, n: int) -> pa.Array:
        """``n`` times the file's name, built from buffers (a Python list of ``n`` strings costs ~100x more)."""
        if self._names is None or len(self._names) < n:
            raw = self.name.encode()
            offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
            self._names = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n))
        return self._names.slice(0, n)

    def close(self) -> int:
        """Finish the file; returns its size."""
        if self.lo is not None and self.hi is not None:
            self.writer.add_key_value_metadata(
                {**self.bloom.footer(), MIN_RECORD_KEY: str(self.lo), MAX_RECORD_KEY: str(self.hi)}
            )
        with self._io():
            self.writer.close()
            if self.tmp is not None:
                return os.path.getsize(self.tmp)
        assert self.buffer is not None
        return int(self.buffer.tell())

    def commit(self) -> None:
        """Make the file visible under its name (atomically)."""
        if self.tmp is not None:
            with self._io():
                os.replace(self.tmp, self.storage.full_path(self.rel))
            self.tmp = None
        else:
            assert self.buffer is not None
            self.storage.write_bytes_atomic(self.rel, self.buffer.getvalue().to_pybytes(), overwrite=True)
            self.buffer = None

    @contextlib.contextmanager
    def _io(self) -> Iterator[None]:
        """A local disk error writing the file (a full disk) as a StorageError naming it, not a bare OSError."""
        try:
            yield
        except OSError as exc:
            raise StorageError(f"cannot write the new base file {self.storage.full_path(self.rel)}: {exc}") from exc

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)


class _CarryOver:
    """The carry-over log's records, gathered part by part (one data block and one delete block at the end)."""

    def __init__(self) -> None:
        self.data: list[pa.Table] = []
        self.keys: list[Any] = []
        self.partitions: list[Any] = []
        self.values: list[Any] = []
        self.ordering_type: pa.DataType | None = None

    def add(self, merge: SliceMerge, decision: CarryOverDecision) -> None:
        if len(decision.carry_data_idx):
            self.data.append(merge.data.take(pa.array(decision.carry_data_idx)))
        if len(decision.carry_delete_winner_pos):
            w = merge.winners.take(pa.array(decision.carry_delete_winner_pos))
            entries = merge.deletes.take(w["idx"])
            ordering = w["ord"].combine_chunks()
            ct = w["ct_delete"].to_numpy(zero_copy_only=False)
            # A commit-time delete is carried with a null ordering value: it still beats whatever came before it.
            self.values += [None if c else v for c, v in zip(ct, ordering_pylist(ordering), strict=True)]
            self.keys += entries[KEY].to_pylist()
            self.partitions += entries[_PARTITION].to_pylist()
            if not pa.types.is_null(ordering.type):
                self.ordering_type = ordering.type

    def encode(self, avro_schema: dict[str, Any], instant: str) -> tuple[bytes, int]:
        schema_json = avro_schema_json(avro_schema)
        blocks: list[bytes] = []
        records = 0
        if self.data:
            rows = pa.concat_tables(self.data)
            blocks.append(encode_avro_data_block(rows, schema_json, instant))
            records += rows.num_rows
        if self.keys:
            blocks.append(
                encode_delete_block(
                    list(zip(self.keys, self.partitions, strict=True)),
                    self.values,
                    instant,
                    schema_json,
                    ordering_type=self.ordering_type,
                )
            )
            records += len(self.keys)
        return b"".join(blocks), records


def run_merge_task(
    task: MergeTask,
    listing: list[FileEntry] | None = None,
    scans: Mapping[tuple[str, int], list[LogBlock]] | None = None,
    storage: TableStorage | None = None,
) -> MergeResult:
    """Run one plan operation and return what it wrote.

    ``listing`` is the partition's files when the caller listed them for its tasks after the plan's links stood
    (the local executor, once per partition); otherwise the task lists the partition itself. Either way, a write
    landing after the listing is the driver's to catch before it commits (:func:`landed_logs_matter`). ``scans``
    are block headers the caller read from that listing's logs, by ``(path, size)``; the others are read here.
    ``storage`` is the table's storage when the caller runs the task in its own process (on an object store its
    cache then serves the logs the caller fetched); otherwise the task opens it from ``task.table_uri``.

    The merge runs in bounded memory (:mod:`~evt_toolkit.compaction.bounded_merge`): logs are decoded and reduced in
    batches and, past ``task.memory_budget``, spilled by hash partition to local disk and merged partition by
    partition; the new base file is written row group by row group as the parts come.

    Raises:
        PlanValidationError: a file of the operation is missing, or the table has no schema.
        LogFormatError: a compacted log is corrupt or truncated (names the file).
        UnsupportedFeatureError: partial-update blocks, or a table without meta fields.
        PendingTableServiceError: a compacted log holds blocks of a write that is still pending.
        CompactionExecutionError: the local disk under the spill folder failed (full, not writable); names it.
        StorageError: the local disk failed while the new base file was written (names it; no partial file stays),
            or another OSError from what the task handles beside the storage layer's own calls, such as a read from
            an open input stream (names the compaction, the file group and the table).
    """
    try:
        return _run_merge_task(task, listing, scans, storage)
    except OSError as exc:  # what bypasses TableStorage's own calls: they raise StorageErrors
        raise StorageError(
            f"compaction {task.instant} of {task.table_uri}: file group {task.file_id} in {task.partition_path!r}: "
            f"cannot read or write its files: {exc}"
        ) from exc


#: How often a task of a Spark run looks, while it merges, whether its driver gave its attempt up.
_ABANDONED_CHECK_S = 2.0


def _abandoned_check(storage: TableStorage, task: MergeTask) -> Callable[[], bool] | None:
    """For a task of a Spark run: a ``stop`` that lists the marker folder at most every few seconds and says whether
    the driver gave the attempt up (so that a task of a cancelled job stops at its next batch or part)."""
    attempt = task.attempt
    if attempt is None:
        return None
    last = [time.monotonic()]

    def stop() -> bool:
        now = time.monotonic()
        if now - last[0] < _ABANDONED_CHECK_S:
            return False
        last[0] = now
        files, _ = storage.list_dir(record_folder(task.instant))
        return attempt_state((f.name for f in files), attempt) != "live"

    return stop


def _run_merge_task(
    task: MergeTask,
    listing: list[FileEntry] | None,
    scans: Mapping[tuple[str, int], list[LogBlock]] | None,
    storage: TableStorage | None,
) -> MergeResult:
    started = time.monotonic()
    if storage is None:
        storage = TableStorage.from_uri(task.table_uri, task.spec.storage_options)
    op = task.operation
    partition = task.partition_path
    name = base_file_name(task)
    rel = _rel(partition, name)
    carry_name = carry_over_name(task.file_id, task.instant, task.index)
    if not task.outputs_recorded:
        outputs = task_outputs(task)
        record_ownership(storage, task.instant, RUN, f"task-{task.index}", outputs)
        mark_created(storage, task.instant, [f.path for f in outputs])
    # One listing proves every file of the operation present and gives its size (no HEAD, no stat per file).
    if listing is None:
        listing, _ = storage.list_dir(partition)
    else:
        storage.remember_sizes(listing)
    sizes = {e.name: e.size for e in listing}
    logs = tuple(_log_file(storage, partition, n, sizes) for n in op.delta_files)
    data_file = op.data_file
    base_file = _base_file(storage, partition, str(data_file), sizes) if data_file else None
    later = _task_later_logs(storage, task, listing)
    storage.prefetch([lf.path for lf in logs] + ([base_file.path] if base_file is not None else []))
    scanned = scan_logs(storage, logs + tuple(later), scans)  # each log's headers are read once per run
    blocks, rollbacks = _check_blocks(storage, logs, tuple(later), scanned)
    _refuse_pending_blocks(storage, task, logs, scanned)
    ctx = task.spec.context(None, storage=storage)
    if ctx.derives_keys:
        raise UnsupportedFeatureError(
            f"{storage.uri}: compaction needs the _hoodie_* meta fields (hoodie.populate.meta.fields=true)"
        )
    if ctx.reader_avro_schema is None:
        raise PlanValidationError(f"{storage.uri} has no schema (no commit carries one); nothing to compact")
    avro = dict(ctx.reader_avro_schema)
    # Rollback command blocks in later logs (links of leftovers, writes landed in the new slice) remove earlier blocks
    # of their target instant, including blocks in the compacted logs: the compaction must not merge those.
    prefix = {lf.path for lf in logs}
    queued = [q for q in select_log_blocks(ctx, logs + tuple(later), scanned) if q.log_file.path in prefix]
    if any(q.block.is_partial for q in queued):
        raise UnsupportedFeatureError(
            f"file group {task.file_id}: partial-update log blocks are not compacted by this toolkit"
        )

    def undecodable(exc: Exception) -> LogFormatError:
        return LogFormatError(f"file group {task.file_id} in {partition!r}: cannot merge its logs: {exc}")

    budget = MemoryBudget.resolve(task.memory_budget, task.spill_dir)
    later_facts = _LaterFacts(ctx, later)
    carry = _CarryOver()
    base_rows = kept_base = writes = tombstones = kept = split = 0
    sensitive: list[str] = []
    fld = task.event_time_field
    event_time = (fld, task.event_time_unit) if fld else None
    out: _BaseFileWriter | None = None
    stop = task.cancel.is_set if task.cancel is not None else _abandoned_check(storage, task)
    where = f"compaction {task.instant} of {storage.uri}: file group {task.file_id} in {partition!r}"
    with BoundedSliceMerge(ctx, base_file, queued, budget, task.decode_threads, stop, where) as merger:
        try:
            merger.load_logs()
        except (EvtError, pa.ArrowMemoryError):  # out of memory is not bad content: the worker needs a lower budget
            raise
        except (pa.ArrowException, ValueError, KeyError) as exc:  # undecodable content that framing did not catch
            raise undecodable(exc) from exc
        if task.fault_hook is not None:
            task.fault_hook(task, "merged")
        if task.attempt is not None:  # nothing of an attempt its driver gave up reaches the table's folders
            require_attempt_live(storage, task.instant, task.attempt, f"this task attempt's {name}")
        parts = merger.parts()
        try:
            while True:
                merger.check_stop()
                try:
                    merge = next(parts, None)
                    if merge is None:
                        break
                    decision = _decide(ctx, merge, task, later_facts)
                except (EvtError, pa.ArrowMemoryError):
                    raise
                except (pa.ArrowException, ValueError, KeyError) as exc:
                    raise undecodable(exc) from exc
                nb = merge.base.num_rows
                source = pa.concat_tables([merge.base, merge.data])
                idx = np.concatenate([np.flatnonzero(decision.keep_base), nb + decision.base_log_idx]).astype(np.int64)
                if out is None:
                    out = _BaseFileWriter(storage, rel, source.schema, avro, name, event_time, task.bloom)
                out.write(source, idx)
                carry.add(merge, decision)
                base_rows += nb
                kept_base += int(np.count_nonzero(decision.keep_base))
                writes += len(idx)
                tombstones += decision.tombstones
                kept += decision.kept
                split += decision.split
                sensitive += decision.ct_sensitive_keys
                del merge, source, decision
            if out is None:
                out = _BaseFileWriter(storage, rel, _output_schema(ctx), avro, name, event_time, task.bloom)
            payload_size = out.close()
            carry_out: str | None = None
            carry_size = carry_records = 0
            carry_bytes = b""
            if carry.data or carry.keys:
                carry_bytes, carry_records = carry.encode(avro, task.instant)
            # The outputs' names depend only on the plan: a late attempt (a speculative copy, a retry Spark has not
            # stopped) would put other contents under the names a decided compaction stands on (write/fence.py).
            require_compaction_running(
                storage,
                task.timeline_path,
                task.spec.timeline.layout_version,
                task.instant,
                f"this task attempt's {name} and carry-over log (a late or speculative attempt)",
            )
            if task.attempt is not None:
                require_attempt_live(storage, task.instant, task.attempt, f"this task attempt's {name}")
            if carry.data or carry.keys:
                storage.write_bytes_atomic(_rel(partition, carry_name), carry_bytes, overwrite=True)
                carry_out, carry_size = carry_name, len(carry_bytes)
            out.commit()
        except BaseException:
            if out is not None:
                out.abort()
            raise
    if task.fault_hook is not None:
        task.fault_hook(task, "written")

    updated = base_rows - kept_base
    totals = merger.totals
    return MergeResult(
        index=task.index,
        file_id=task.file_id,
        partition_path=partition,
        path=rel,
        name=name,
        prev_commit=(op.base_instant or "null") if base_file is not None else "null",
        num_writes=writes,
        num_deletes=totals.delete_rows,
        num_update_writes=updated,
        num_inserts=writes if base_file is None else 0,
        total_write_bytes=payload_size,
        total_log_records=totals.data_rows + totals.delete_rows,
        total_log_files_compacted=len(logs),
        total_log_size_compacted=sum(lf.size for lf in logs),
        total_log_blocks=blocks,
        total_rollback_blocks=rollbacks,
        min_event_time=out.min_event_time,
        max_event_time=out.max_event_time,
        min_record_key=out.lo,
        max_record_key=out.hi,
        carry_over_log=carry_out,
        carry_over_size=carry_size,
        carry_over_records=carry_records,
        tombstones=tombstones,
        kept=kept,
        split=split,
        later_logs=tuple((lf.name, lf.size) for lf in later),
        ct_sensitive_keys=tuple(sorted(sensitive)),
        elapsed_ms=int((time.monotonic() - started) * 1000),
        compacted_logs=tuple((lf.name, lf.size) for lf in logs),
    )


def _output_schema(ctx: SliceReadContext) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in ctx.schema])
