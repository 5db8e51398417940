"""Read one file slice: scan its log blocks (headers only), decide which count, decode them, merge onto the base.

This is the one slice read of the toolkit: :func:`read_slice` serves the pure-Python reader and the Spark data
source, and the compaction task merges its compacted logs with :func:`merge_slice`, the same function one level
down (it needs the merge's parts, not only its rows).

Which blocks count mirrors Hudi's log record reader (``BaseHoodieLogRecordReader`` / hudi-rs ``reader_v2`` pass 1):

1. corrupt blocks are dropped (a later rollback command would have removed them anyway);
2. blocks without ``INSTANT_TIME`` are ignored;
3. blocks newer than the query instant are skipped (Hudi 0.14 *stopped* the whole scan here — ``break`` — which can
   hide data written by out-of-order instants; 1.x and hudi-rs ``continue``, and so do we);
4. data and delete blocks of instants that are not visible (``Timeline.is_visible``: a completed commit, or older
   than the active timeline) are skipped: that is how failed and inflight writes stay invisible;
5. a rollback command block removes every earlier queued block of its ``TARGET_INSTANT_TIME``;
6. of an instant whose blocks came from more than one Spark task attempt (Hudi 0.14.0's ``BLOCK_IDENTIFIER``
   header), only the attempt with the most blocks counts (:func:`spurious_attempts`; hudi-rs reads them all);
7. a log-compacted block (``COMPACTED_BLOCK_TIMES``) replaces the blocks of the instants it compacted, at the
   position of the newest of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evt_toolkit.errors import ReadError, UnsupportedFeatureError
from evt_toolkit.format.log_content import (
    check_decoded_names,
    decode_avro_data_blocks,
    decode_data_block,
    decode_delete_block,
)
from evt_toolkit.format.logfile import BlockType, LogBlock, read_block_content
from evt_toolkit.read.conform import conform, conform_runs, require_columns
from evt_toolkit.read.keys import derive_record_keys
from evt_toolkit.read.merge import (
    COMMIT_TIME,
    IS_DELETED,
    KEY,
    S_DEL,
    build_candidates,
    dedupe_state,
    make_state,
    merge_log_candidates,
    merge_with_base,
    overlay,
    soft_commit_time_deletes,
)
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.log_blocks import scan_logs as scan_log_files
from evt_toolkit.table.fs_view import BaseFile, FileSlice, LogFile

COMMIT_TIME_FIELD = "_hoodie_commit_time"

#: Marks the record key column the reader adds (and later drops) for tables without meta fields.
_DERIVED = {b"evt.derived": b"record_key"}

DELETE_SCHEMA = pa.schema(
    [
        pa.field("_hoodie_record_key", pa.string()),
        pa.field("_hoodie_partition_path", pa.string()),
        pa.field("ordering_value", pa.null()),
        pa.field("ordering_wrapper", pa.string()),
    ]
)


@dataclass(frozen=True, slots=True)
class SliceReadContext:
    """What reading any slice of a table needs.

    Attributes:
        storage: table storage.
        schema: Arrow schema of the merged output (meta fields first).
        reader_avro_schema: Avro reader schema (with meta fields) used to resolve log data blocks.
        ordering_field: the ordering (precombine) field, if any.
        merge_mode: ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING``.
        query_instant: blocks with a later instant are skipped (None: no limit).
        is_visible: whether an instant's data/delete blocks count (``Timeline.is_visible``).
        record_key_fields: record key fields, used when the table stores no ``_hoodie_record_key``.
        complex_key: whether keys are ``field:value`` lists (complex key generator).
    """

    storage: TableStorage
    schema: pa.Schema
    reader_avro_schema: dict[str, Any] | None
    ordering_field: str | None
    merge_mode: str
    query_instant: str | None
    is_visible: Callable[[str], bool]
    record_key_fields: tuple[str, ...] = ()
    complex_key: bool = False

    @property
    def derives_keys(self) -> bool:
        """True when records carry no ``_hoodie_record_key`` and keys come from the key fields."""
        return KEY not in self.schema.names


@dataclass(frozen=True, slots=True)
class QueuedBlock:
    """A block to merge and the log file it is in."""

    log_file: LogFile
    block: LogBlock


def scan_logs(
    storage: TableStorage,
    log_files: Iterable[LogFile],
    known: Mapping[tuple[str, int], list[LogBlock]] | None = None,
) -> dict[str, list[LogBlock]]:
    """``path -> blocks`` of each log (headers only, :func:`~evt_toolkit.format.logfile.scan_log_blocks`).

    ``known`` holds scans the caller took moments before, by ``(path, size)`` from the same listing: a log of that
    path and size is not read again (a scan depends only on the file's first ``size`` bytes, and a log is only ever
    appended to).
    """
    logs = list(log_files)
    hits = [known.get((lf.path, lf.size)) if known is not None else None for lf in logs]
    todo = [(lf.path, lf.size) for lf, hit in zip(logs, hits, strict=True) if hit is None]
    read = iter(scan_log_files(storage, todo))
    return {lf.path: hit if hit is not None else next(read) for lf, hit in zip(logs, hits, strict=True)}


def rolled_back_corrupt_blocks(blocks: Iterable[LogBlock]) -> set[tuple[str, int]]:
    """``(log file, offset)`` of the corrupt blocks in ``blocks`` (one slice's, in replay order) that a later
    rollback command block rolls back: a torn append whose ``INSTANT_TIME`` header survived and is the target of a
    command block after it.

    Every reader drops every corrupt block (Hudi's ``BaseHoodieLogRecordReader.scanInternal`` skips them; 0.x
    ``AbstractHoodieLogRecordReader.scanInternalV1``'s ``ROLLBACK_BLOCK`` case removes the queued ones); these are
    the ones whose records are known to be meant gone, so compacting them away loses nothing.
    """
    torn: dict[str, list[tuple[str, int]]] = {}
    out: set[tuple[str, int]] = set()
    for blk in blocks:
        if blk.is_corrupt:
            if blk.instant_time is not None:
                torn.setdefault(blk.instant_time, []).append((blk.log_file, blk.offset))
        elif blk.block_type is BlockType.COMMAND and blk.target_instant_time is not None:
            out.update(torn.pop(blk.target_instant_time, ()))
    return out


def spurious_attempts(blocks: Sequence[tuple[str | None, int | None]]) -> set[int]:
    """Indices of the blocks Hudi's log reader drops as a retried task's spurious attempt.

    ``blocks`` are one slice's data and delete blocks that count (committed, not rolled back), in replay order, as
    ``(instant, task attempt from BLOCK_IDENTIFIER or None)``. Hudi 0.14.0 heads each block with
    ``BLOCK_IDENTIFIER = "<task attempt>,<sequence>"`` (HUDI-6758), and a Spark task retry leaves the failed
    attempt's blocks beside the retry's. Java's reader (0.14-1.1: ``AbstractHoodieLogRecordReader.scanInternalV1`` /
    ``BaseHoodieLogRecordReader``, ``updateBlockSequenceTracker`` then ``reconcileSpuriousBlocksAndGetValidOnes``)
    groups an instant's blocks by attempt (blocks without the header under attempt 0) and, when there is more than
    one group, keeps the one with the most blocks — on a tie the one its ``HashMap`` visits last, the highest attempt
    for the small numbers Spark uses — and drops the others.
    """
    groups: dict[str, dict[int, list[int]]] = {}
    for i, (instant, attempt) in enumerate(blocks):
        groups.setdefault(instant or "", {}).setdefault(attempt if attempt is not None else 0, []).append(i)
    out: set[int] = set()
    for attempts in groups.values():
        if len(attempts) < 2:
            continue
        keep = max(attempts, key=lambda a: (len(attempts[a]), a))
        for a, idx in attempts.items():
            if a != keep:
                out.update(idx)
    return out


def _block_signature(blk: LogBlock) -> tuple[object, ...]:
    return (blk.offset, blk.size, blk.block_type, blk.content_length, frozenset(blk.header.items()))


def _repeats(blocks: Sequence[LogBlock], earlier: Sequence[LogBlock]) -> bool:
    """Whether ``blocks`` are the first blocks of ``earlier``, headers included."""
    return len(blocks) <= len(earlier) and all(
        _block_signature(a) == _block_signature(b) for a, b in zip(blocks, earlier, strict=False)
    )


def repeated_logs(per_log: Sequence[tuple[LogFile, Sequence[LogBlock]]]) -> set[str]:
    """Paths of the logs of one slice (in replay order, with their blocks) that repeat an earlier log: their blocks
    are the first blocks of an earlier log named with another instant, headers (``INSTANT_TIME``) included.

    That is a partial-compaction link read beside its target. A pending compaction's slice is read merged with the
    slice before it (``getLatestMergedFileSlicesBeforeOrOn``), and its links are copies (or symlinks) of that slice's
    remaining logs. Replayed a second time after every later log, they undid what a later write had done: a key a
    commit-time delete had ended came back when a run stopped after making some of its links, and a write that
    landed in the old slice was overwritten by the replay of the logs before it. A link replays its target's blocks
    once, where the target is. Two logs named with the same instant (one write's) are never taken for copies, and a
    writer's own log holds blocks of its own instant, so it never matches a log of another write.
    """
    out: set[str] = set()
    # Logs are compared only when their first blocks agree on size, type, content length and instant: a link and
    # its target, or two logs of one write; any other slice costs one small tuple per log.
    seen: dict[tuple[object, ...], list[tuple[LogFile, Sequence[LogBlock]]]] = {}
    for lf, blocks in per_log:
        if not blocks:
            continue
        b0 = blocks[0]
        earlier = seen.setdefault((b0.size, b0.block_type, b0.content_length, b0.instant_time), [])
        if any(o.instant != lf.instant and _repeats(blocks, o_blocks) for o, o_blocks in earlier):
            out.add(lf.path)
            continue
        earlier.append((lf, blocks))
    return out


def _attempt(blk: LogBlock) -> int | None:
    ident = blk.block_identifier
    return ident[0] if ident is not None else None


def select_log_blocks(
    ctx: SliceReadContext, log_files: tuple[LogFile, ...], scanned: Mapping[str, list[LogBlock]] | None = None
) -> list[QueuedBlock]:
    """Scan block headers of ``log_files`` (in slice order) and return the blocks that count, in replay order.

    ``scanned`` holds logs the caller scanned already (:func:`scan_logs`); the others are scanned here.
    """
    known = scanned or {}
    fresh = scan_logs(ctx.storage, [lf for lf in log_files if known.get(lf.path) is None])
    per_log = [(lf, hit if (hit := known.get(lf.path)) is not None else fresh[lf.path]) for lf in log_files]
    repeated = repeated_logs(per_log)
    queue: list[QueuedBlock] = []
    for lf, blocks in per_log:
        if lf.path in repeated:
            continue
        for blk in blocks:
            if blk.is_corrupt:
                continue
            instant = blk.instant_time
            if instant is None:
                continue
            if ctx.query_instant is not None and instant > ctx.query_instant:
                continue
            if blk.block_type == BlockType.COMMAND:
                target = blk.target_instant_time
                queue = [q for q in queue if q.block.instant_time != target]
                continue
            if not ctx.is_visible(instant):
                continue
            queue.append(QueuedBlock(lf, blk))
    drop = spurious_attempts([(q.block.instant_time, _attempt(q.block)) for q in queue])
    if drop:
        queue = [q for i, q in enumerate(queue) if i not in drop]
    return _resolve_log_compaction(queue)


def _resolve_log_compaction(queue: list[QueuedBlock]) -> list[QueuedBlock]:
    """Put each log-compacted block in place of the blocks it compacted, at the newest one's position.

    Mirrors Hudi's ``scanInternalV2``: later blocks of instants that were not compacted still replay after it. A
    compacted block whose originals are no longer present replays at its own position.
    """
    out: list[QueuedBlock] = []
    for q in queue:
        times = set(q.block.compacted_block_times)
        if not times:
            out.append(q)
            continue
        positions = [i for i, o in enumerate(out) if (o.block.instant_time or "") in times]
        if not positions:
            out.append(q)
            continue
        keep = [o for i, o in enumerate(out) if i not in set(positions)]
        insert_at = positions[-1] - (len(positions) - 1)
        keep.insert(insert_at, q)
        out = keep
    return out


def decode_blocks(ctx: SliceReadContext, queued: list[QueuedBlock]) -> tuple[pa.Table, pa.Array, pa.Table, pa.Array]:
    """Decode the selected blocks into (data rows, their replay seq, delete rows, their replay seq)."""
    data_parts: list[pa.Table] = []
    data_seq: list[np.ndarray] = []
    del_parts: list[pa.Table] = []
    del_seq: list[np.ndarray] = []
    by_file: dict[str, list[tuple[int, QueuedBlock]]] = {}
    for pos, q in enumerate(queued):
        by_file.setdefault(q.log_file.path, []).append((pos, q))
    decoded: dict[int, tuple[str, pa.Table]] = {}
    avro: list[tuple[int, LogBlock, bytes]] = []
    for path, items in by_file.items():
        with ctx.storage.open_input(path) as f:
            for pos, q in items:
                content = read_block_content(f, q.block)
                if q.block.block_type == BlockType.DELETE:
                    decoded[pos] = ("delete", decode_delete_block(q.block, content))
                elif q.block.block_type == BlockType.AVRO_DATA:
                    avro.append((pos, q.block, content))
                else:
                    raw = decode_data_block(q.block, content, ctx.reader_avro_schema)
                    decoded[pos] = ("data", raw)
    # Avro blocks of one writer schema are decoded together (one decoder call and one cast per run of blocks
    # instead of per block): the same tables as block by block, at a fraction of the fixed cost per block.
    tables = decode_avro_data_blocks([(blk, content) for _, blk, content in avro], ctx.reader_avro_schema)
    for (pos, _, _), raw in zip(avro, tables, strict=True):
        decoded[pos] = ("data", raw)
    base_seq = 0
    raws: list[tuple[pa.Table, str]] = []
    for pos in range(len(queued)):
        kind, tbl = decoded[pos]
        n = tbl.num_rows
        seq = np.arange(base_seq, base_seq + n, dtype=np.int64)
        base_seq += n
        if kind == "delete":
            del_parts.append(_normalize_deletes(tbl))
            del_seq.append(seq)
        else:
            raws.append((tbl, queued[pos].log_file.path))
            data_seq.append(seq)
    if ctx.schema.field(KEY).metadata == _DERIVED:  # keys derived block by block, each error naming its file
        data_parts = [_add_derived_keys(ctx, conform(tbl, ctx.schema, path), path) for tbl, path in raws]
    else:
        data_parts = conform_runs(raws, ctx.schema)
    data = pa.concat_tables(data_parts) if data_parts else ctx.schema.empty_table()
    deletes = _concat_deletes(del_parts)
    return (
        data,
        pa.array(np.concatenate(data_seq) if data_seq else np.zeros(0, dtype=np.int64)),
        deletes,
        pa.array(np.concatenate(del_seq) if del_seq else np.zeros(0, dtype=np.int64)),
    )


def _normalize_deletes(tbl: pa.Table) -> pa.Table:
    return tbl.select(["_hoodie_record_key", "_hoodie_partition_path", "ordering_value", "ordering_wrapper"])


def _without_sentinels(part: pa.Table) -> pa.Table:
    """``part`` with its ordering values null when each is the ``IntWrapper(0)`` sentinel of a commit-time delete.

    Null stands for the same thing (a commit-time delete), and it no longer forces the ordered deletes of other
    blocks through a string of another type (a timestamp, say, that would not parse back).
    """
    values = part["ordering_value"]
    if not pa.types.is_integer(values.type) or part.num_rows == 0:
        return part
    sentinel = pc.and_(pc.equal(part["ordering_wrapper"], "IntWrapper"), pc.equal(values, 0))
    if not pc.all(pc.or_(pc.is_null(values), pc.fill_null(sentinel, False))).as_py():
        return part
    return part.set_column(2, "ordering_value", pa.nulls(part.num_rows))


def _concat_deletes(parts: list[pa.Table]) -> pa.Table:
    if not parts:
        return DELETE_SCHEMA.empty_table()
    if len(parts) > 1:
        parts = [_without_sentinels(p) for p in parts]
    types = {p.schema.field("ordering_value").type for p in parts} - {pa.null()}
    if len(types) > 1:
        # Mixed ordering types across delete blocks: keep them comparable as strings.
        parts = [p.set_column(2, "ordering_value", p["ordering_value"].cast(pa.string())) for p in parts]
    elif len(types) == 1:
        (t,) = types
        parts = [p.set_column(2, "ordering_value", p["ordering_value"].cast(t)) for p in parts]
    return pa.concat_tables(parts)


def read_base_file(ctx: SliceReadContext, base: BaseFile, columns: Sequence[str] | None = None) -> pa.Table:
    """Read a base file and bring it to the table schema (to ``columns`` of it, in that order, when given).

    Only the columns asked for are read from the file (Parquet's column pruning); a column of the table schema the
    file lacks is all nulls, as in a full read.
    """
    if not base.name.endswith(".parquet"):
        raise UnsupportedFeatureError(
            f"{ctx.storage.uri}: base file format of {base.path} is not supported (only Parquet base files are read)"
        )
    schema = ctx.schema if columns is None else pa.schema([ctx.schema.field(c) for c in columns])
    with ctx.storage.open_input(base.path) as f:
        try:
            if columns is None:
                table = pq.read_table(f)
            else:
                pf = pq.ParquetFile(f)
                check_decoded_names(pf.schema_arrow)
                present = set(pf.schema_arrow.names)
                table = pf.read(columns=[c for c in columns if c in present])
            check_decoded_names(table.schema)
        except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
            raise ReadError(f"cannot read base file {base.path}: {exc}") from exc
    return conform(table, schema, base.path)


@dataclass(frozen=True, slots=True)
class SliceMerge:
    """A slice's base rows merged with its chosen log blocks, kept in parts (what the compaction task needs).

    Attributes:
        base: the base file's rows (the table schema; empty without a base file).
        keep_base: which base rows survive the merge.
        data: every decoded log data row, replay order.
        deletes: every decoded delete-block entry (``DELETE_SCHEMA``), replay order.
        winners: one row per key, the log records' winner (``LogCandidates`` columns: ``key``, ``seq``,
            ``is_delete``, ``ct_delete``, ``ord``, ``src``, ``idx``).
        emitted: the winners that are emitted as rows (data rows that beat or found no base row).
    """

    base: pa.Table
    keep_base: pa.Array
    data: pa.Table
    deletes: pa.Table
    winners: pa.Table
    emitted: pa.Table

    def rows(self) -> pa.Table:
        """The merged rows: surviving base rows, then emitted log rows."""
        return pa.concat_tables([self.base.filter(self.keep_base), self.data.take(self.emitted["idx"])])


def merge_slice(ctx: SliceReadContext, base: pa.Table, queued: list[QueuedBlock]) -> SliceMerge:
    """Merge ``base`` with the ``queued`` blocks (from :func:`select_log_blocks`) by the table's merge mode.

    Raises:
        UnsupportedFeatureError: partial-update blocks (:func:`read_file_slice` folds those block by block).
    """
    if any(q.block.is_partial for q in queued):
        raise UnsupportedFeatureError("partial-update log blocks are merged block by block, not by merge_slice")
    data, dseq, deletes, delseq = decode_blocks(ctx, queued)
    cands = build_candidates(data, dseq, deletes, delseq, ctx.ordering_field, ctx.merge_mode)
    winners = merge_log_candidates(cands, ctx.merge_mode)
    base_ord = None
    if ctx.merge_mode != COMMIT_TIME and ctx.ordering_field and ctx.ordering_field in base.column_names:
        base_ord = base[ctx.ordering_field].combine_chunks()
    keep_base, emitted = merge_with_base(base[KEY].combine_chunks(), base_ord, winners, ctx.merge_mode)
    return SliceMerge(base, keep_base, data, deletes, winners, emitted)


@dataclass(frozen=True, slots=True)
class CommitWindow:
    """An incremental window ``(begin, end]``: the table as of its end, kept where the commit time is in it.

    A window's slices are merged with every block visible at the window's end, not only the window's blocks: a
    record of the window meets everything that preceded it, as in the snapshot at the end, so a row is in the answer
    exactly when it is that snapshot's row of its key and its ``_hoodie_commit_time`` lies in the window. (Merging the
    window's blocks alone — Hudi's ``InstantRange`` — met a window record with an older block counted under a later
    instant, a compaction's carry-over log, without the writes that had ended it: a key the window wrote went
    missing.)

    Attributes:
        begin: exclusive start (``"0"`` when open).
        end: inclusive end (``None`` when open).
        admitted: on timeline layout 2, the requested times of the commits whose *completion* falls in the window
            (their rows are kept); ``None`` on layout 1, where requested times are compared.
        late: on timeline layout 2, the requested times of the writes that completed after ``end``: not part of
            the table at the window's end, so their blocks are not merged (on layout 1 the query instant bounds
            the blocks).
    """

    begin: str
    end: str | None
    admitted: frozenset[str] | None
    late: frozenset[str] = frozenset()

    def counts_block(self, instant: str) -> bool:
        """Whether a visible block of ``instant`` is part of the table at the window's end."""
        return instant not in self.late

    def mask(self, commit_time: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray:
        """Boolean mask (nulls as false) over a ``_hoodie_commit_time`` column."""
        if self.admitted is not None:
            mask = pc.is_in(commit_time, value_set=pa.array(sorted(self.admitted), pa.string()))
        else:
            mask = pc.greater(commit_time, self.begin)
            if self.end is not None:
                mask = pc.and_(mask, pc.less_equal(commit_time, self.end))
        return pc.fill_null(mask, False)


def read_file_slice(
    ctx: SliceReadContext,
    file_slice: FileSlice,
    *,
    base_only: bool = False,
    window: CommitWindow | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Read one file slice into the table schema: its base file merged with its log blocks (or the base alone).

    Args:
        ctx: the read context (schema, merge mode, visibility, query instant, incremental block range).
        file_slice: the slice; its log files in replay order.
        base_only: read-optimized: the base file only.
        window: an incremental window: rows are kept when their commit is in it.
        columns: only these columns of the table schema, in this order (``None``: all). A read-optimized read
            reads only these from the base file; a merge needs whole records and projects after merging.
    """
    if columns is not None:
        require_columns(ctx.schema, columns)
        if base_only and window is None:
            if file_slice.base_file is None:
                return pa.schema([ctx.schema.field(c).with_nullable(True) for c in columns]).empty_table()
            return read_base_file(ctx, file_slice.base_file, columns)
        return read_file_slice(ctx, file_slice, base_only=base_only, window=window).select(list(columns))
    if ctx.derives_keys and not base_only:
        keyed = replace(ctx, schema=ctx.schema.append(pa.field(KEY, pa.string(), metadata=_DERIVED)))
        rows = _read(keyed, file_slice, base_only).drop_columns([KEY])
    else:
        rows = _read(ctx, file_slice, base_only)
    if window is not None and rows.num_rows:
        rows = rows.filter(window.mask(rows[COMMIT_TIME_FIELD]))
    return rows


def _add_derived_keys(ctx: SliceReadContext, table: pa.Table, source: str) -> pa.Table:
    keys = derive_record_keys(table, ctx.record_key_fields, ctx.complex_key, source)
    return table.set_column(table.schema.get_field_index(KEY), KEY, keys)


def _read(ctx: SliceReadContext, file_slice: FileSlice, base_only: bool) -> pa.Table:
    base = read_base_file(ctx, file_slice.base_file) if file_slice.base_file is not None else None
    if base_only:
        return base if base is not None else ctx.schema.empty_table()
    if base is not None and ctx.schema.field(KEY).metadata == _DERIVED:
        base = _add_derived_keys(ctx, base, file_slice.base_file.path if file_slice.base_file else "")
    queued = select_log_blocks(ctx, file_slice.log_files)
    if not queued:
        return base if base is not None else ctx.schema.empty_table()
    if any(q.block.is_partial for q in queued):
        return _read_partial_slice(ctx, base, queued)
    return merge_slice(ctx, base if base is not None else ctx.schema.empty_table(), queued).rows()


def _ordering_of(table: pa.Table, ctx: SliceReadContext) -> pa.Array:
    if ctx.merge_mode != COMMIT_TIME and ctx.ordering_field and ctx.ordering_field in table.column_names:
        return table[ctx.ordering_field].combine_chunks()
    return pa.nulls(table.num_rows)


def _read_partial_slice(ctx: SliceReadContext, base: pa.Table | None, queued: list[QueuedBlock]) -> pa.Table:
    """Fold blocks one at a time so partial-update records overlay the version before them."""
    names = ctx.schema.names
    state: pa.Table | None = None
    seq0 = 0
    ord_type = (
        ctx.schema.field(ctx.ordering_field).type
        if (ctx.merge_mode != COMMIT_TIME and ctx.ordering_field and ctx.ordering_field in names)
        else pa.null()
    )
    for q in queued:
        data, _, deletes, _ = decode_blocks(ctx, [q])
        if q.block.block_type == BlockType.DELETE:
            cands = build_candidates(
                ctx.schema.empty_table(),
                pa.array([], pa.int64()),
                deletes,
                pa.array(np.arange(deletes.num_rows, dtype=np.int64)),
                ctx.ordering_field,
                ctx.merge_mode,
            ).table
            rows = pa.table({n: pa.nulls(deletes.num_rows, ctx.schema.field(n).type) for n in names})
            rows = rows.set_column(names.index(KEY), KEY, deletes[KEY].cast(ctx.schema.field(KEY).type))
            block_state = make_state(
                rows,
                names,
                None,
                np.arange(seq0, seq0 + rows.num_rows),
                cands["is_delete"].combine_chunks(),
                cands["ct_delete"].combine_chunks(),
                cands["ord"].combine_chunks().cast(ord_type),
            )
        else:
            present = None
            if q.block.is_partial and q.block.schema_json:
                present = {f["name"] for f in json.loads(q.block.schema_json).get("fields", [])}
            soft = (
                pc.fill_null(data[IS_DELETED].combine_chunks().cast(pa.bool_()), False)
                if IS_DELETED in data.column_names
                else pa.array(np.zeros(data.num_rows, dtype=bool))
            )
            block_state = make_state(
                data,
                names,
                present,
                np.arange(seq0, seq0 + data.num_rows),
                soft,
                soft_commit_time_deletes(data, ctx.ordering_field, ctx.merge_mode),
                _ordering_of(data, ctx).cast(ord_type),
            )
        seq0 += block_state.num_rows
        block_state = dedupe_state(block_state, ctx.merge_mode)
        state = (
            block_state
            if state is None
            else overlay(
                state,
                block_state,
                names,
                ctx.merge_mode,
                newer_block_delete=q.block.block_type == BlockType.DELETE,
            )
        )
    assert state is not None
    if base is not None and base.num_rows:
        # Only the first base row of a key merges (see merge_with_base); later duplicates pass through.
        pos = pa.array(np.arange(base.num_rows, dtype=np.int64))
        firsts = pa.table({"k": base[KEY], "p": pos}).group_by("k").aggregate([("p", "min")])["p_min"]
        first = np.zeros(base.num_rows, dtype=bool)
        first[firsts.to_numpy()] = True
        base_first, base_rest = base.filter(pa.array(first)), base.filter(pa.array(~first))
        base_state = make_state(
            base_first,
            names,
            None,
            np.full(base_first.num_rows, -1),
            pa.array(np.zeros(base_first.num_rows, bool)),
            pa.array(np.zeros(base_first.num_rows, bool)),
            _ordering_of(base_first, ctx).cast(ord_type),
        )
        state = overlay(base_state, state, names, ctx.merge_mode)
    else:
        base_rest = ctx.schema.empty_table()
    live = state.filter(pc.invert(state[S_DEL])).select(names)
    return pa.concat_tables([base_rest, live.cast(ctx.schema)])
