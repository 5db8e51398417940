"""Record merging on Arrow columns: log records among themselves, then log over base.

Pure functions, no I/O. Semantics follow Hudi 1.x's buffered record mergers (which hudi-rs mirrors and Spark's
answers on the fixtures confirm):

* **COMMIT_TIME_ORDERING** (v6 ``OverwriteWithLatestAvroPayload``): the later record wins; a log record beats the
  base record; a delete removes the key.
* **EVENT_TIME_ORDERING** (v6 ``DefaultHoodieRecordPayload``): a newer record wins when its ordering value is ``>=``
  the current one (ties go to the newer record). A delete whose ordering value is null, or the ``IntWrapper(0)``
  sentinel SQL ``DELETE`` writes, is a *commit-time* delete and always wins; a data record arriving on it wins, but a
  delete arriving on it is dropped (``EventTimeRecordMerger.deltaMergeDeleteRecord`` keeps an existing commit-time
  delete). Against the base record the log record wins unless the base's ordering value is strictly greater
  (``EventTimeRecordMerger.finalMerge``).

Folding those rules over a key's records is the same as taking the *last* record with the greatest ordering value
among those from the first data record after the key's last commit-time delete on (that delete itself when no data
record follows it), which is what lets us merge with sorts instead of a per-record Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.format.ordering import comparable

COMMIT_TIME = "COMMIT_TIME_ORDERING"
EVENT_TIME = "EVENT_TIME_ORDERING"
KEY = "_hoodie_record_key"
IS_DELETED = "_hoodie_is_deleted"


@dataclass(frozen=True, slots=True)
class LogCandidates:
    """Every log record of a slice in replay order, reduced to what merging needs.

    Columns: ``key`` (string), ``seq`` (int64, replay order), ``is_delete`` (bool), ``ct_delete`` (bool: commit-time
    delete), ``ord`` (ordering value or null), ``src`` (int8: 0 = data row, 1 = delete row), ``idx`` (int64: row in
    the data or delete table).
    """

    table: pa.Table


def _false(n: int) -> pa.Array:
    return pa.array(np.zeros(n, dtype=bool))


#: Arrow types of an Avro ``int`` field: its values are Java ``Integer`` objects to Hudi's readers.
_AVRO_INT_TYPES = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())


def may_hold_soft_commit_time_deletes(schema: pa.Schema, ordering_field: str | None, mode: str) -> bool:
    """Whether rows of ``schema`` can be commit-time deletes (:func:`soft_commit_time_deletes`): event-time
    ordering, a ``_hoodie_is_deleted`` column and an ordering field of Avro type ``int``."""
    return (
        mode == EVENT_TIME
        and bool(ordering_field)
        and IS_DELETED in schema.names
        and ordering_field in schema.names
        and schema.field(ordering_field).type in _AVRO_INT_TYPES
    )


def soft_commit_time_deletes(data: pa.Table, ordering_field: str | None, mode: str) -> pa.Array:
    """Over the rows of ``data`` (log data records): the soft deletes that are *commit-time* deletes.

    Hudi 1.x's record mergers take any record that is a delete and carries the default ordering value — the
    ``Integer`` 0, ``HoodieRecord.DEFAULT_ORDERING_VALUE`` — for a commit-time delete
    (``BufferedRecord.isCommitTimeOrderingDelete``), whether it comes from a delete block (``IntWrapper(0)``) or is a
    ``_hoodie_is_deleted=true`` row whose ordering field, of Avro type ``int``, holds 0; hudi-rs reads it so too.
    Such a row beats whatever came before it, in the logs and over the base row, and a delete arriving on it is
    dropped. A ``long`` 0 is not the default (``Integer.equals(Long)`` is false), nor is a date or a double.
    """
    n = data.num_rows
    if not may_hold_soft_commit_time_deletes(data.schema, ordering_field, mode) or n == 0:
        return _false(n)
    assert ordering_field is not None
    values = data[ordering_field].combine_chunks()
    soft = pc.fill_null(data[IS_DELETED].combine_chunks().cast(pa.bool_()), False)
    return pc.fill_null(pc.and_(soft, pc.equal(values, pa.scalar(0, values.type))), False)


def build_candidates(
    data: pa.Table,
    data_seq: pa.Array,
    deletes: pa.Table,
    delete_seq: pa.Array,
    ordering_field: str | None,
    mode: str,
) -> LogCandidates:
    """Combine data rows and delete-block rows into one candidate table.

    Args:
        data: log data rows (must have ``_hoodie_record_key``).
        data_seq: replay position of each data row (block order, then row order).
        deletes: delete-block rows with ``_hoodie_record_key``, ``ordering_value``, ``ordering_wrapper``.
        delete_seq: replay position of each delete row.
        ordering_field: the table's ordering (precombine) field, if any.
        mode: ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING``.
    """
    n, m = data.num_rows, deletes.num_rows
    use_ord = mode == EVENT_TIME and ordering_field is not None and ordering_field in data.column_names
    ord_type: pa.DataType = data.schema.field(ordering_field).type if use_ord and ordering_field else pa.null()

    if IS_DELETED in data.column_names:
        soft = pc.fill_null(data[IS_DELETED].combine_chunks().cast(pa.bool_()), False)
    else:
        soft = _false(n)
    data_ord = data[ordering_field].combine_chunks() if use_ord else pa.nulls(n)

    del_ord: pa.Array
    del_ct: pa.Array
    if m:
        raw = deletes["ordering_value"].combine_chunks()
        wrapper = deletes["ordering_wrapper"].combine_chunks()
        is_zero_int = pc.and_(
            pc.equal(wrapper, "IntWrapper"),
            pc.equal(pc.cast(raw, pa.string(), safe=False), "0") if raw.type != pa.null() else _false(m),
        )
        ct = pc.or_(pc.is_null(raw), pc.fill_null(is_zero_int, False))
        if use_ord:
            try:
                del_ord = pc.cast(raw, ord_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                # Ordering values of another type cannot be compared: hudi-rs lets the newer record win, which is
                # what a commit-time delete does.
                del_ord = pa.nulls(m, ord_type)
                ct = pa.array(np.ones(m, dtype=bool))
        else:
            del_ord = pa.nulls(m)
        del_ct = pc.fill_null(ct, True)
    else:
        del_ord = pa.nulls(0, ord_type) if use_ord else pa.nulls(0)
        del_ct = _false(0)

    data_ord = data_ord.cast(ord_type) if use_ord else pa.nulls(n)

    table = pa.table(
        {
            "key": pa.concat_arrays(
                [data[KEY].combine_chunks().cast(pa.string()), deletes[KEY].combine_chunks().cast(pa.string())]
                if m
                else [data[KEY].combine_chunks().cast(pa.string())]
            ),
            "seq": pa.concat_arrays([data_seq.cast(pa.int64()), delete_seq.cast(pa.int64())]),
            "is_delete": pa.concat_arrays([soft, pa.array(np.ones(m, dtype=bool))]),
            "ct_delete": pa.concat_arrays([soft_commit_time_deletes(data, ordering_field, mode), del_ct]),
            "ord": pa.concat_arrays([data_ord, del_ord]) if m else data_ord,
            "src": pa.array(np.concatenate([np.zeros(n, dtype=np.int8), np.ones(m, dtype=np.int8)])),
            "idx": pa.array(np.concatenate([np.arange(n, dtype=np.int64), np.arange(m, dtype=np.int64)])),
        }
    )
    return LogCandidates(table)


def merge_log_candidates(cands: LogCandidates, mode: str) -> pa.Table:
    """Reduce the log candidates to one winner per key (same columns as the candidate table), in key order.

    The winners are found by hashing (:func:`latest_per_key`), then only they are sorted by key: the merge of a
    slice emits rows in key order, as a sort-based merge of every candidate did (``tests/merge_oracle.py`` keeps that
    merge as the tests' reference).
    """
    t = cands.table
    if t.num_rows == 0:
        return t
    block_delete = pc.equal(t["src"], 1)
    winners = t.take(pa.array(latest_per_key(t["key"], t["seq"], t["ct_delete"], t["ord"], mode, block_delete)))
    return winners.take(pc.sort_indices(winners["key"]))


def latest_per_key(
    key: pa.Array | pa.ChunkedArray,
    seq: pa.Array | pa.ChunkedArray,
    ct_delete: pa.Array | pa.ChunkedArray,
    ord_: pa.Array | pa.ChunkedArray,
    mode: str,
    block_delete: pa.Array | pa.ChunkedArray | None,
    *,
    run: bool = False,
) -> np.ndarray:
    """Positions of each key's winning record, ascending — :func:`merge_log_candidates` by hashing, not sorting.

    The same rule as :func:`merge_log_candidates` (a later record wins in commit-time ordering; in event-time
    ordering the last record with the greatest ordering value from the first data record after the key's last
    commit-time delete on — the deletes between them are dropped, as Hudi drops a delete arriving on a commit-time
    delete — or that delete alone when no data record follows it), computed on integer codes: keys are
    dictionary-encoded (one hash pass, no string sort), the ordering values replaced by their dense rank, and each
    key's best ``(rank, seq)`` found with ``np.maximum.at``. Rows may come in any order (``seq`` orders them).

    A compaction reduces its logs batch by batch (Hudi's ``HoodieMergedLogRecordScanner`` folds record by record
    into its spillable map to the same effect). The winner of a batch alone does not say how the batch folds onto
    what came before it: a commit-time delete in it puts earlier records out of the race, and after an earlier
    commit-time delete its deletes before its first data record do not count. With ``run`` (the records are a run
    that earlier records of the keys may precede) each key also keeps its last commit-time delete, its first data
    record after it (of the run when there is none) and the best record from that one on, so that reducing the
    kept records of consecutive runs together gives the winners of all their records.

    Args:
        key: record keys (string).
        seq: replay position of each record (unique).
        ct_delete: whether the record is a commit-time delete.
        ord_: ordering value (any sortable type; null type without ordering).
        mode: ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING``.
        block_delete: whether the record comes from a delete block (``None``: no record does). Soft deletes
            (``_hoodie_is_deleted``) are data records.
        run: keep what a later reduction with earlier records of the keys needs (event-time ordering).
    """
    n = len(key)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    k = key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key
    enc = pc.dictionary_encode(k, null_encoding="encode")
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    groups = len(enc.dictionary)
    s = np.asarray(pc.cast(seq, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    s = s - s.min()
    span = int(s.max()) + 1
    if mode != EVENT_TIME:
        best = np.full(groups, -1, dtype=np.int64)
        np.maximum.at(best, codes, s)
        return np.flatnonzero(s == best[codes])
    ct = np.asarray(pc.fill_null(ct_delete, False).to_numpy(zero_copy_only=False), dtype=bool)
    last_ct = np.full(groups, -1, dtype=np.int64)
    if ct.any():
        np.maximum.at(last_ct, codes[ct], s[ct])
    mine = last_ct[codes]
    eligible = s >= mine
    first_data: np.ndarray | None = None
    if ct.any() or run:
        # From a commit-time delete on, deletes are dropped until a data record arrives (Hudi's
        # deltaMergeDeleteRecord keeps the commit-time delete): a key's records count from the first data record
        # after its last commit-time delete, or that delete alone when none follows.
        if block_delete is None:
            data = ~ct
        else:
            bd = block_delete.combine_chunks() if isinstance(block_delete, pa.ChunkedArray) else block_delete
            data = ~np.asarray(pc.fill_null(bd, False).to_numpy(zero_copy_only=False), dtype=bool) & ~ct
        after = eligible & data
        first_data = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
        if after.any():
            np.minimum.at(first_data, codes[after], s[after])
        if ct.any():
            eligible = (mine < 0) | (s == mine) | (s >= first_data[codes])
    rank = np.zeros(n, dtype=np.int64)
    o = ord_.combine_chunks() if isinstance(ord_, pa.ChunkedArray) else ord_
    if o.type != pa.null():
        valid = ~ct & ~np.asarray(o.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if valid.any():
            rank[valid] = _order_codes(o.filter(pa.array(valid)), span)
    top = int(rank.max())
    if top and top > (np.iinfo(np.int64).max // 2) // span:
        # (rank, seq) does not fit one int64: sort instead (never at realistic sizes).
        if run:
            return np.arange(n, dtype=np.int64)  # a run kept whole folds onto anything as its records do
        order = np.lexsort((s, rank, codes))
        order = order[eligible[order]]
        c = codes[order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = c[:-1] != c[1:]
        return np.sort(order[last])
    score = rank * span + s
    best = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(best, codes[eligible], score[eligible])
    win = eligible & (score == best[codes])
    if run:
        assert first_data is not None
        first = first_data[codes]
        from_first = s >= first
        best_from = np.full(groups, -1, dtype=np.int64)
        np.maximum.at(best_from, codes[from_first], score[from_first])
        best_after = from_first & (score == best_from[codes])
        # The first data record marks where the run's records count after an earlier commit-time delete; needed
        # only where the best record from it on is a delete (otherwise that record marks it itself).
        needs_first = np.zeros(groups, dtype=bool)
        needs_first[codes[best_after & ~data]] = True
        win |= (ct & (s == mine)) | best_after | ((s == first) & needs_first[codes])
    return np.flatnonzero(win)


def _order_codes(values: pa.Array, span: int) -> np.ndarray:
    """Positive int64 codes of non-null ordering values that compare as the values do, small enough that
    ``code * span`` stays far inside int64.

    Integer and temporal values are their offset from the smallest one (one pass, no sort) where their range
    allows; anything else, or a range too wide, gets its dense rank (a sort).
    """
    values = comparable(values)  # floats in Java's order (-0.0 < 0.0 < ... < NaN), as int64 keys
    t = values.type
    if pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t):
        try:
            as_int = values.cast(pa.int32()).cast(pa.int64()) if pa.types.is_date32(t) else values.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # uint64 past int64, or no integer view
            as_int = None
        if as_int is not None:
            v = np.asarray(as_int.to_numpy(zero_copy_only=False), dtype=np.int64)
            lo, hi = int(v.min()), int(v.max())
            if (hi - lo + 1) <= (np.iinfo(np.int64).max // 2) // span:
                return v - lo + 1
    dense = pc.rank(values, sort_keys="ascending", tiebreaker="dense")
    return np.asarray(dense.to_numpy(zero_copy_only=False), dtype=np.int64)


def merge_with_base(
    base_keys: pa.Array,
    base_ord: pa.Array | None,
    winners: pa.Table,
    mode: str,
) -> tuple[pa.Array, pa.Table]:
    """Decide base row vs log winner for every key.

    Args:
        base_keys: record keys of the base file rows.
        base_ord: ordering values of the base rows (EVENT_TIME only).
        winners: output of :func:`merge_log_candidates`.
        mode: merge mode.

    Returns:
        ``(keep_base_mask, log_rows)``: a boolean mask over the base rows, and the log winners to emit (data rows,
        deletes removed).
    """
    nb = len(base_keys)
    if winners.num_rows == 0:
        return pa.array(np.ones(nb, dtype=bool)), winners
    if nb == 0:
        # No base file: every data winner is emitted; no join to run.
        return pa.array(np.zeros(0, dtype=bool)), winners.filter(pc.invert(pc.fill_null(winners["is_delete"], False)))
    base_tbl = pa.table({"key": base_keys.cast(pa.string()), "bpos": pa.array(np.arange(nb, dtype=np.int64))})
    ord_type = winners.schema.field("ord").type
    compare = mode == EVENT_TIME and base_ord is not None and ord_type != pa.null()
    w = pa.table(
        {
            "key": winners["key"],
            "ct_delete": winners["ct_delete"],
            "wpos": pa.array(np.arange(winners.num_rows, dtype=np.int64)),
        }
    )
    if compare:
        assert base_ord is not None
        base_tbl = base_tbl.append_column("bord", comparable(base_ord.cast(ord_type)))
        w = w.append_column("ord", comparable(winners["ord"]))
    matched = base_tbl.join(w, "key", join_type="inner")
    if matched.num_rows:
        # Spark's file-group reader consumes a key's log record at the *first* base row with that key; further
        # base rows with the same key (duplicates from inserts) pass through unmerged (fixture
        # mor_table_duplicate_keys).
        first = matched.group_by("key").aggregate([("bpos", "min")])
        matched = matched.join(first, "key").filter(pc.equal(pc.field("bpos"), pc.field("bpos_min")))
        matched = matched.drop_columns(["bpos_min"])
    if compare:
        # Base wins only when its ordering value is strictly greater and the log record is no commit-time delete.
        base_wins = pc.fill_null(
            pc.and_(pc.invert(matched["ct_delete"]), pc.greater(matched["bord"], matched["ord"])), False
        )
    else:
        base_wins = _false(matched.num_rows)
    keep_base = np.ones(nb, dtype=bool)
    drop_base = matched.filter(pc.invert(base_wins))["bpos"].to_numpy()
    keep_base[drop_base] = False
    emit = np.ones(winners.num_rows, dtype=bool)
    emit[matched.filter(base_wins)["wpos"].to_numpy()] = False
    emit &= ~winners["is_delete"].to_numpy(zero_copy_only=False)
    return pa.array(keep_base), winners.filter(pa.array(emit))


# -- partial updates (IS_PARTIAL blocks) --------------------------------------------------------------------
# A partial-update record carries only some columns. Merging it with an older version overlays the winner's present
# columns on the loser's (Hudi 1.x partial-update merging; fixtures mor_table_partial_update[_event_time]). Which
# record wins is decided exactly as above. Slices with partial blocks fold block by block; each step is vectorized.

S_KEY, S_SEQ, S_DEL, S_CT, S_ORD = "__key", "__seq", "__is_delete", "__ct", "__ord"


def presence_column(name: str) -> str:
    return f"__p_{name}"


def make_state(
    rows: pa.Table,
    names: list[str],
    present: set[str] | None,
    seq: np.ndarray,
    is_delete: pa.Array,
    ct: pa.Array,
    ordering: pa.Array,
) -> pa.Table:
    """Rows in merge-state form: the table columns, key/seq/delete/ordering flags and one presence flag per column."""
    n = rows.num_rows
    cols: dict[str, pa.Array | pa.ChunkedArray] = {name: rows[name] for name in names}
    cols[S_KEY] = rows[KEY].cast(pa.string())
    cols[S_SEQ] = pa.array(seq, pa.int64())
    cols[S_DEL] = is_delete
    cols[S_CT] = ct
    cols[S_ORD] = ordering
    for name in names:
        full = present is None or name in present
        cols[presence_column(name)] = pa.array(np.full(n, full, dtype=bool))
    return pa.table(cols)


def dedupe_state(state: pa.Table, mode: str) -> pa.Table:
    """One row per key inside one block (the last, or the greatest ordering value)."""
    if state.num_rows == 0:
        return state
    pos = pa.array(np.arange(state.num_rows, dtype=np.int64))
    view = pa.table(
        {
            "key": state[S_KEY],
            "seq": state[S_SEQ],
            "ct_delete": state[S_CT],
            "ord": state[S_ORD],
            "src": pa.array(np.zeros(state.num_rows, dtype=np.int8)),
            "pos": pos,
        }
    )
    winners = merge_log_candidates(LogCandidates(view), mode)
    return state.take(winners["pos"])


def overlay(
    older: pa.Table, newer: pa.Table, names: list[str], mode: str, *, newer_block_delete: bool = False
) -> pa.Table:
    """Merge two states (each one row per key): newer wins by the merge rule; partial rows overlay the loser.

    ``newer_block_delete``: ``newer`` is a delete block, whose deletes lose to a commit-time delete (see the module).
    """
    if older.num_rows == 0:
        return newer
    if newer.num_rows == 0:
        return older
    o = pa.table({"key": older[S_KEY], "opos": pa.array(np.arange(older.num_rows, dtype=np.int64))})
    nn = pa.table({"key": newer[S_KEY], "npos": pa.array(np.arange(newer.num_rows, dtype=np.int64))})
    matched = o.join(nn, "key", join_type="inner")
    opos, npos = matched["opos"].combine_chunks(), matched["npos"].combine_chunks()
    old_m, new_m = older.take(opos), newer.take(npos)
    if mode == EVENT_TIME and old_m.schema.field(S_ORD).type != pa.null():
        by_order = pc.or_(
            pc.is_null(old_m[S_ORD]), pc.greater_equal(comparable(new_m[S_ORD]), comparable(old_m[S_ORD]))
        )
        if newer_block_delete:
            newer_wins = pc.or_(new_m[S_CT], pc.and_(pc.invert(old_m[S_CT]), pc.fill_null(by_order, False)))
        else:
            newer_wins = pc.or_(pc.or_(new_m[S_CT], old_m[S_CT]), by_order)
        newer_wins = pc.fill_null(newer_wins, False)
    else:
        newer_wins = pa.array(np.ones(matched.num_rows, dtype=bool))
    merged_cols: dict[str, pa.Array | pa.ChunkedArray] = {}
    for col in older.column_names:
        w = pc.if_else(newer_wins, new_m[col], old_m[col])
        if col in names:
            lose = pc.if_else(newer_wins, old_m[col], new_m[col])
            pw = pc.if_else(newer_wins, new_m[presence_column(col)], old_m[presence_column(col)])
            w = pc.if_else(pw, w, lose)
        merged_cols[col] = w
    for col in names:
        merged_cols[presence_column(col)] = pc.or_(old_m[presence_column(col)], new_m[presence_column(col)])
    merged = pa.table(merged_cols).select(older.column_names)
    keep_old = np.ones(older.num_rows, dtype=bool)
    keep_old[opos.to_numpy()] = False
    keep_new = np.ones(newer.num_rows, dtype=bool)
    keep_new[npos.to_numpy()] = False
    return pa.concat_tables(
        [older.filter(pa.array(keep_old)), newer.filter(pa.array(keep_new)).select(older.column_names), merged]
    )
