"""One compaction task: merge an operation's base file with exactly the plan's logs into a new base file.

A task is self-contained (:class:`MergeTask` pickles into a Spark task; storage is reopened from the table URI) and
touches nothing but the file group's outputs at instant ``C``; the driver alone writes the timeline.

Merging reuses the slice reader's pieces (:mod:`evt_toolkit.read.slice_reader`): which blocks count (uncommitted
blocks skipped, rollback command blocks applied), decoding and the Arrow merge. Unlike a reader, a task refuses a
log holding a corrupt block: a reader may skip it (Hudi does), but a compaction that skipped it would drop its
records for good, because the compacted log is no longer part of the new slice.

**What goes into the new base** (rows sorted by record key, meta fields preserved except ``_hoodie_file_name``):
the base rows and compacted-log winners that survive the merge, exactly what ``read_file_slice`` returns for the
old slice restricted to the compacted logs — except for what the *carry-over log* keeps (below).

**Carry-over log** ``.{fileId}_{C}.log.1_{token}`` (only when the plan reserved version 1, see
:mod:`evt_toolkit.compaction.schedule`). It replays before the links, so the new slice replays exactly the old
one's sequence with the compacted logs reduced to their winners, and the snapshot is unchanged:

* *exact split*: a compacted winner whose event time is > T goes here instead of into the base; the base keeps the
  key's previous base row, if any (so RO shows the last version ≤ T and never an event > T);
* *tombstones* (``EVENT_TIME_ORDERING`` with an ordering field): a delete with an ordering value that won in the
  compacted prefix is kept — as a delete-block entry, or as its soft-deleted data row — because a leftover record
  with a smaller ordering value must keep losing to it.

Its blocks carry ``INSTANT_TIME = C`` while each record keeps its original ``_hoodie_commit_time`` and
``_hoodie_commit_seqno``: readers only count blocks of *completed* instants, so the carry-over becomes visible at
the very moment ``C.commit`` lands — the same moment the new base file does. Giving the blocks the records'
original instants instead would make them visible at once, while the old slice (which holds the same records) is
still being read, and break the pending-window merge.

**Determinism.** Output names depend only on the operation's index in the plan (write token
``<index>-0-0``), the Parquet bytes only on the inputs; a task first deletes any other base file of its group
named with ``C`` (left by an earlier failed attempt), then overwrites its outputs atomically. Re-running a failed
compaction therefore gives byte-identical files.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evt_toolkit.errors import EvtError, LogFormatError, PlanValidationError, UnsupportedFeatureError
from evt_toolkit.eventtime import to_epoch_ms
from evt_toolkit.format.log_writer import avro_schema_json, encode_avro_data_block, encode_delete_block
from evt_toolkit.format.logfile import BlockType, scan_log_blocks
from evt_toolkit.format.names import BaseFileName, LogFileName
from evt_toolkit.read.merge import (
    COMMIT_TIME,
    EVENT_TIME,
    KEY,
    build_candidates,
    merge_log_candidates,
    merge_with_base,
)
from evt_toolkit.read.query import TableReader
from evt_toolkit.read.slice_reader import (
    SliceReadContext,
    decode_blocks,
    read_base_file,
    select_log_blocks,
)
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.options import StorageOptions
from evt_toolkit.table.config import load_table_config
from evt_toolkit.table.fs_view import BaseFile, FileSystemView, LogFile
from evt_toolkit.table.timeline import Timeline

__all__ = [
    "FILE_NAME",
    "MergeTask",
    "base_file_token",
    "carry_over_name",
    "run_merge_task",
]

FILE_NAME = "_hoodie_file_name"
_COMMIT_TIME_COL = "_hoodie_commit_time"
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
        carry_over: version 1 of the new slice is reserved for a carry-over log.
        exact_split: records with event time > ``threshold`` go to the carry-over log.
        threshold: T in epoch ms.
        fault_hook: test hook for fault injection (``None`` in production).
        storage_options: how the task reaches the table's storage (credentials are redacted in the repr).
    """

    table_uri: str
    instant: str
    index: int
    operation: Mapping[str, Any]
    carry_over: bool = False
    exact_split: bool = False
    threshold: int | None = None
    fault_hook: FaultHook | None = field(default=None, compare=False)
    storage_options: StorageOptions | None = field(default=None, compare=False)

    @property
    def partition_path(self) -> str:
        """The operation's partition."""
        return str(self.operation.get("partitionPath") or "")

    @property
    def file_id(self) -> str:
        """The operation's file group."""
        return str(self.operation["fileId"])


def base_file_token(index: int) -> str:
    """The deterministic write token of operation ``index``: ``<index>-0-0``."""
    return f"{index}-0-0"


def carry_over_name(file_id: str, instant: str, index: int) -> str:
    """Name of the carry-over log of operation ``index``: version 1 of slice ``instant``."""
    return LogFileName(file_id, instant, "log", 1, base_file_token(index)).name


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def _log_file(storage: TableStorage, partition: str, name: str) -> LogFile:
    parsed = LogFileName.parse(name)
    rel = _rel(partition, name)
    if parsed is None or parsed.extension != "log":
        raise PlanValidationError(f"plan lists {rel!r} as a log file, but it is not a log file name")
    if not storage.exists(rel):
        raise PlanValidationError(f"log file {storage.full_path(rel)} of the compaction plan is missing")
    size = storage.size(rel)
    return LogFile(
        rel, name, parsed.file_id, parsed.base_instant, parsed.version, parsed.write_token, parsed.suffix, size
    )


def _base_file(storage: TableStorage, partition: str, name: str) -> BaseFile:
    parsed = BaseFileName.parse(name)
    rel = _rel(partition, name)
    if parsed is None:
        raise PlanValidationError(f"plan lists {rel!r} as a base file, but it is not a base file name")
    if not storage.exists(rel):
        raise PlanValidationError(f"base file {storage.full_path(rel)} of the compaction plan is missing")
    return BaseFile(rel, name, parsed.file_id, parsed.instant, parsed.write_token, storage.size(rel))


def _check_blocks(storage: TableStorage, logs: tuple[LogFile, ...]) -> tuple[int, int]:
    """Refuse logs with corrupt blocks; return (blocks, rollback command blocks)."""
    blocks = rollbacks = 0
    for lf in logs:
        with storage.open_input(lf.path) as f:
            for blk in scan_log_blocks(f, lf.size, storage.full_path(lf.path)):
                if blk.is_corrupt:
                    raise LogFormatError(
                        f"log file {storage.full_path(lf.path)} has a corrupt block at offset {blk.offset}; "
                        "compacting it would lose that block's records (repair or roll back the write first)"
                    )
                blocks += 1
                rollbacks += blk.block_type == BlockType.COMMAND
    return blocks, rollbacks


def _context(storage: TableStorage) -> tuple[SliceReadContext, Any]:
    config = load_table_config(storage)
    timeline = Timeline.load(storage, config)
    # The reader context only needs storage, config and timeline; no listing of the table is made per task.
    reader = TableReader(storage, config, timeline, cast(FileSystemView, None))
    return reader._context(None), config


def _avro_schema_with_meta(ctx: SliceReadContext) -> dict[str, Any]:
    if ctx.reader_avro_schema is None:
        raise PlanValidationError("the table has no schema (no commit carries one); nothing to compact")
    return dict(ctx.reader_avro_schema)


@dataclass(frozen=True, slots=True)
class _Merged:
    base_rows: pa.Table
    carry_rows: pa.Table
    carry_deletes: pa.Table
    log_records: int
    updated: int
    deleted: int


def _merge(ctx: SliceReadContext, base: pa.Table, logs: tuple[LogFile, ...], task: MergeTask) -> _Merged:
    queued = select_log_blocks(ctx, logs)
    if any(q.block.is_partial for q in queued):
        raise UnsupportedFeatureError(
            f"file group {task.file_id}: partial-update log blocks are not compacted by this toolkit"
        )
    data, dseq, deletes, delseq = decode_blocks(ctx, queued)
    mode = ctx.merge_mode
    cands = build_candidates(data, dseq, deletes, delseq, ctx.ordering_field, mode)
    winners = merge_log_candidates(cands, mode)
    base_ord = None
    if mode != COMMIT_TIME and ctx.ordering_field and ctx.ordering_field in base.column_names:
        base_ord = base[ctx.ordering_field].combine_chunks()
    keep_base, emit = merge_with_base(base[KEY].combine_chunks(), base_ord, winners, mode)
    keep = keep_base.to_numpy(zero_copy_only=False).copy()
    log_rows = data.take(emit["idx"])
    updated = int(base.num_rows - int(keep.sum()))

    carry_rows = ctx.schema.empty_table()
    carry_deletes = deletes.slice(0, 0)
    if task.carry_over:
        # Tombstones: event-time deletes that beat the base row (or found none) keep their ordering value.
        if mode == EVENT_TIME and winners.num_rows:
            is_del = winners["is_delete"].to_numpy(zero_copy_only=False)
            ct = winners["ct_delete"].to_numpy(zero_copy_only=False)
            tomb = winners.filter(pa.array(is_del & ~ct))
            if tomb.num_rows:
                kept_keys = base.filter(pa.array(keep))[KEY].combine_chunks().cast(pa.string())
                alive = pc.is_in(tomb["key"], value_set=kept_keys)
                tomb = tomb.filter(pc.invert(pc.fill_null(alive, False)))
                src = tomb["src"].to_numpy(zero_copy_only=False)
                idx = tomb["idx"].to_numpy(zero_copy_only=False)
                carry_deletes = deletes.take(pa.array(idx[src == 1]))
                carry_rows = data.take(pa.array(idx[src == 0]))
        if task.exact_split and log_rows.num_rows:
            later = _event_time_after(ctx, log_rows, task)
            if later is not None and bool(pc.any(later).as_py()):
                moved = log_rows.filter(later)
                log_rows = log_rows.filter(pc.invert(later))
                carry_rows = pa.concat_tables([carry_rows, moved])
                # The key's previous base row stays in the base: RO shows its last version ≤ T.
                restore = pc.is_in(base[KEY], value_set=moved[KEY].combine_chunks()).to_numpy(zero_copy_only=False)
                keep |= restore
    rows = pa.concat_tables([base.filter(pa.array(keep)), log_rows])
    return _Merged(rows, carry_rows, carry_deletes, data.num_rows + deletes.num_rows, updated, deletes.num_rows)


def _event_time_after(ctx: SliceReadContext, rows: pa.Table, task: MergeTask) -> pa.Array | None:
    config = load_table_config(ctx.storage)
    fld = config.event_time_field
    if not fld or fld not in rows.column_names or task.threshold is None:
        return None
    ms = to_epoch_ms(rows[fld], config.event_time_unit, field=fld)  # type: ignore[arg-type]
    return pc.fill_null(pc.greater(ms, pa.scalar(task.threshold, pa.int64())), False)


def _parquet_bytes(rows: pa.Table, avro_schema: dict[str, Any], name: str) -> tuple[bytes, str | None, str | None]:
    """The new base file: rows sorted by key, ``_hoodie_file_name`` = ``name``, Hudi's footer keys."""
    if rows.num_rows:
        rows = rows.take(pc.sort_indices(rows, sort_keys=[(KEY, "ascending")]))
    idx = rows.schema.get_field_index(FILE_NAME)
    if idx >= 0:
        rows = rows.set_column(idx, rows.schema.field(idx), pa.array([name] * rows.num_rows, pa.string()))
    keys = rows[KEY]
    lo = hi = None
    if rows.num_rows:
        mm = pc.min_max(keys)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
    meta = {
        b"parquet.avro.schema": avro_schema_json(avro_schema).encode(),
        b"writer.model.name": b"avro",
    }
    if lo is not None and hi is not None:
        meta[b"hoodie_min_record_key"] = str(lo).encode()
        meta[b"hoodie_max_record_key"] = str(hi).encode()
    rows = rows.replace_schema_metadata({**(rows.schema.metadata or {}), **meta})
    sink = pa.BufferOutputStream()
    # Snappy rather than Hudi's gzip default: compaction is write-heavy and every reader handles both.
    pq.write_table(rows, sink, compression="snappy", write_statistics=True)
    return sink.getvalue().to_pybytes(), lo, hi


def _carry_over_bytes(merged: _Merged, avro_schema: dict[str, Any], ctx: SliceReadContext, instant: str) -> bytes:
    schema_json = avro_schema_json(avro_schema)
    blocks: list[bytes] = []
    if merged.carry_rows.num_rows:
        rows = merged.carry_rows
        blocks.append(encode_avro_data_block(rows, schema_json, instant))
    d = merged.carry_deletes
    if d.num_rows:
        ordering = d["ordering_value"].combine_chunks()
        blocks.append(
            encode_delete_block(
                list(zip(d[KEY].to_pylist(), d[_PARTITION].to_pylist(), strict=True)),
                ordering.to_pylist(),
                instant,
                schema_json,
                ordering_type=None if pa.types.is_null(ordering.type) else ordering.type,
            )
        )
    return b"".join(blocks)


def _clean_stale_outputs(storage: TableStorage, task: MergeTask, keep: set[str]) -> None:
    """Delete this group's base files named with ``C`` that a failed earlier attempt may have left."""
    files, _ = storage.list_dir(task.partition_path)
    for entry in files:
        parsed = BaseFileName.parse(entry.name) if not entry.name.startswith(".") else None
        if parsed and parsed.file_id == task.file_id and parsed.instant == task.instant and entry.name not in keep:
            storage.delete_file(entry.path)


def run_merge_task(task: MergeTask) -> dict[str, Any]:
    """Run one plan operation and return its write-stat figures (a plain dict, sent back to the driver).

    Raises:
        PlanValidationError: a file of the operation is missing, or the table has no schema.
        LogFormatError: a compacted log is corrupt or truncated (names the file).
        UnsupportedFeatureError: partial-update blocks, or a table without meta fields.
    """
    started = time.monotonic()
    storage = TableStorage.from_uri(task.table_uri, task.storage_options)
    op = task.operation
    partition = task.partition_path
    storage.list_dir(partition)  # one listing gives every size below (object stores: no HEAD per file)
    logs = tuple(_log_file(storage, partition, n) for n in op.get("deltaFilePaths") or [])
    data_file = op.get("dataFilePath")
    base_file = _base_file(storage, partition, str(data_file)) if data_file else None
    storage.prefetch([lf.path for lf in logs] + ([base_file.path] if base_file is not None else []))
    blocks, rollbacks = _check_blocks(storage, logs)
    ctx, _config = _context(storage)
    if ctx.derives_keys:
        raise UnsupportedFeatureError(
            f"{storage.uri}: compaction needs the _hoodie_* meta fields (hoodie.populate.meta.fields=true)"
        )
    avro = _avro_schema_with_meta(ctx)
    base = read_base_file(ctx, base_file) if base_file is not None else ctx.schema.empty_table()
    try:
        merged = _merge(ctx, base, logs, task)
    except EvtError:
        raise
    except (pa.ArrowException, ValueError, KeyError) as exc:  # undecodable content that framing did not catch
        raise LogFormatError(f"file group {task.file_id} in {partition!r}: cannot merge its logs: {exc}") from exc
    if task.fault_hook is not None:
        task.fault_hook(task, "merged")

    token = base_file_token(task.index)
    name = BaseFileName(task.file_id, token, task.instant, ".parquet").name
    rel = _rel(partition, name)
    payload, lo, hi = _parquet_bytes(merged.base_rows, avro, name)
    carry_name = None
    carry_size = 0
    carry_records = 0
    if merged.carry_rows.num_rows or merged.carry_deletes.num_rows:
        carry_name = carry_over_name(task.file_id, task.instant, task.index)
        carry_bytes = _carry_over_bytes(merged, avro, ctx, task.instant)
        storage.write_bytes_atomic(_rel(partition, carry_name), carry_bytes, overwrite=True)
        carry_size = len(carry_bytes)
        carry_records = merged.carry_rows.num_rows + merged.carry_deletes.num_rows
    _clean_stale_outputs(storage, task, {name})
    storage.write_bytes_atomic(rel, payload, overwrite=True)
    if task.fault_hook is not None:
        task.fault_hook(task, "written")

    min_et = max_et = None
    cfg = load_table_config(storage)
    fld = cfg.event_time_field
    if fld and fld in merged.base_rows.column_names and merged.base_rows.num_rows:
        ms = to_epoch_ms(merged.base_rows[fld], cfg.event_time_unit, field=fld)  # type: ignore[arg-type]
        mm = pc.min_max(ms)
        min_et, max_et = mm["min"].as_py(), mm["max"].as_py()
    return {
        "index": task.index,
        "fileId": task.file_id,
        "partitionPath": partition,
        "path": rel,
        "name": name,
        "prevCommit": str(op.get("baseInstantTime") or "null") if base_file is not None else "null",
        "numWrites": merged.base_rows.num_rows,
        "numDeletes": merged.deleted,
        "numUpdateWrites": merged.updated,
        "numInserts": merged.base_rows.num_rows if base_file is None else 0,
        "totalWriteBytes": len(payload),
        "totalLogRecords": merged.log_records,
        "totalLogFilesCompacted": len(logs),
        "totalLogSizeCompacted": sum(lf.size for lf in logs),
        "totalUpdatedRecordsCompacted": merged.updated,
        "totalLogBlocks": blocks,
        "totalRollbackBlocks": rollbacks,
        "fileSizeInBytes": len(payload),
        "minEventTime": min_et,
        "maxEventTime": max_et,
        "minRecordKey": lo,
        "maxRecordKey": hi,
        "carryOverLog": carry_name,
        "carryOverSize": carry_size,
        "carryOverRecords": carry_records,
        "elapsedMs": int((time.monotonic() - started) * 1000),
    }
