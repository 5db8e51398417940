"""What a compaction task puts in the new base file and what it must carry over in a log — pure, no I/O.

A compaction merges a slice's base file with a prefix ``P`` of its logs; the leftovers ``L`` (links) and every write
that lands in the new slice are replayed on top of the new base. Hudi reads a slice as *merge the logs among
themselves, then merge the result with the base row* (``HoodieMergedLogRecordScanner`` then the record merger's
final merge). The task must pick, for every key, a new base row and a carry-over so that the new slice reads
exactly as the old one did (``docs/data-safety.md`` works the cases through):

* **compacted** (the normal case): the base row becomes the merge of the old base row ``b`` with the prefix's
  winner ``m``. Exact for every later write, except in event-time ordering where a tombstone must survive and where a
  *commit-time delete* (a delete without an ordering value, e.g. Spark SQL ``DELETE``) interacts with the base row:

  - a **tombstone** (a delete with an ordering value that beat the base row, or found none) goes to the carry-over
    log, so that a later record with a *smaller* ordering value keeps losing to it (it would resurrect the key
    against an empty base);
  - a **commit-time delete** goes there too: a later delete arriving on it is dropped, where on nothing it would
    count and hide a later, lower record;
* **kept**: the old base row stays and ``m`` goes to the carry-over log — exact for *every* later write, since the
  new slice then replays ``b, m, L…`` as the old one did. Used where the compacted form would change an answer, or
  where it would take a key that is still live out of the base file:

  - ``m`` deletes the base row and a later log (a leftover or a write landed in the new slice) holds a record of the
    key, in either ordering: the compacted form leaves the key only in logs, and the indexes that look keys up in
    base files (Hudi's SIMPLE and BLOOM, ours on stock tables) would not find it — the next write of the key would
    insert it into another file group, and the table would hold it twice;

  - ``m`` is a commit-time delete and the key has a base row and a later record: Hudi lets the later record win
    the log merge and then loses it to the base row when that row's ordering value is greater, so the base row must
    stay;
  - ``m`` is a commit-time delete of a key without a base row and a later log holds a record of it: ``m`` is carried
    all the same, since Hudi drops a delete that arrives on a commit-time delete (``deltaMergeDeleteRecord``) but
    not one that arrives on nothing — without ``m`` a later delete would win over the data record after it;
  - a later log holds a commit-time delete of the key and ``m`` replaced (or created) the base row: after such a
    delete, a later record with a smaller ordering value wins the log merge and is then compared with the *base*
    row — the old one, not ``m``;
  - exact split: ``m`` is a data record with event time > T, kept out of the RO view.

Commit-time ordering needs none of this: the latest record always wins, in the logs and over the base.

Example:
    >>> import pyarrow as pa
    >>> d = decide(base_keys=pa.array(["a"]), keep_base=pa.array([False]), winners=pa.table({
    ...     "key": ["a"], "is_delete": [True], "ct_delete": [False], "src": pa.array([1], pa.int8()),
    ...     "idx": pa.array([0], pa.int64())}), emitted_idx=pa.array([], pa.int64()),
    ...     event_time_ordering=True, later_keys=None, later_ct_keys=pa.array([], pa.string()))
    >>> d.carry_delete_winner_pos.tolist(), d.tombstones
    ([0], 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CarryOverDecision", "decide", "needs_later_keys"]


@dataclass(frozen=True, slots=True)
class CarryOverDecision:
    """Where every row goes.

    Attributes:
        keep_base: mask over the old base rows: kept in the new base file.
        base_log_idx: rows of the decoded log data that go into the new base file.
        carry_data_idx: rows of the decoded log data that go into the carry-over log (data block).
        carry_delete_winner_pos: positions in ``winners`` of deletes that go into the carry-over log's delete block
            (their key, partition and ordering value; a commit-time delete keeps a null ordering value).
        tombstones: winners carried as tombstones, commit-time deletes included (compacted form).
        kept: keys left in kept form (old base row stays, the prefix's winner is carried).
        split: of those, keys kept because of the exact split.
        ct_sensitive_keys: keys in compacted form whose prefix winner deletes a base row (a commit-time delete, or any
            delete that took the base row away), or is a commit-time delete (event-time ordering): a later record of
            such a key would need the kept form (the driver checks writes landing during the run).
    """

    keep_base: npt.NDArray[np.bool_]
    base_log_idx: npt.NDArray[np.int64]
    carry_data_idx: npt.NDArray[np.int64]
    carry_delete_winner_pos: npt.NDArray[np.int64]
    tombstones: int
    kept: int
    split: int
    ct_sensitive_keys: tuple[str, ...] = ()

    @property
    def carries(self) -> bool:
        """Whether a carry-over log is needed."""
        return bool(len(self.carry_data_idx) or len(self.carry_delete_winner_pos))


def _np_bool(a: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def needs_later_keys(winners: pa.Table, has_base: npt.NDArray[np.bool_], event_time_ordering: bool = False) -> bool:
    """Whether :func:`decide` needs every key of the later logs, not only their commit-time deletes.

    Only when some prefix winner is a delete of a key that has a base row (in either ordering), or a commit-time
    delete (in event-time ordering): a later record of that key decides between the compacted and the kept form.
    """
    if winners.num_rows == 0:
        return False
    needs = _np_bool(winners["is_delete"]) & has_base
    if event_time_ordering:
        needs |= _np_bool(winners["ct_delete"])
    return bool(np.any(needs))


def first_base_rows(base_keys: pa.Array, keys: pa.Array) -> npt.NDArray[np.int64]:
    """For each of ``keys``, the position of its first row in ``base_keys`` (-1 when absent)."""
    if len(base_keys) == 0 or len(keys) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    bk = base_keys.cast(pa.string())
    uniq = pc.unique(bk)
    first = np.full(len(uniq), -1, dtype=np.int64)
    pos = pc.index_in(bk, value_set=uniq).to_numpy(zero_copy_only=False)
    present, first_at = np.unique(pos, return_index=True)  # the first occurrence of every unique key
    first[present] = first_at
    where = pc.index_in(keys.cast(pa.string()), value_set=uniq)
    idx = pc.fill_null(where, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    out = np.where(idx >= 0, first[np.maximum(idx, 0)], -1)
    return np.asarray(out, dtype=np.int64)


def decide(
    *,
    base_keys: pa.Array,
    keep_base: pa.Array,
    winners: pa.Table,
    emitted_idx: pa.Array,
    event_time_ordering: bool,
    later_keys: pa.Array | None,
    later_ct_keys: pa.Array,
    split_mask: pa.Array | None = None,
) -> CarryOverDecision:
    """Decide, per key, between the compacted and the kept form, and what the carry-over log holds.

    Args:
        base_keys: record keys of the old base file's rows.
        keep_base: the merge's mask over the base rows (compacted form).
        winners: the prefix's winner per key (``key``, ``is_delete``, ``ct_delete``, ``src``, ``idx``).
        emitted_idx: rows of the decoded log data the merge emits into the base (compacted form).
        event_time_ordering: ``EVENT_TIME_ORDERING`` with an ordering field (else the commit-time rules apply).
        later_keys: every key with a record in the later logs (leftovers and writes landed in the new slice), or
            ``None`` when :func:`needs_later_keys` said it is not needed.
        later_ct_keys: keys with a commit-time delete in the later logs.
        split_mask: over ``emitted_idx``: data records to keep out of the base (exact split), or ``None``.

    Returns:
        The decision.
    """
    nb = len(base_keys)
    keep = np.asarray(keep_base.to_numpy(zero_copy_only=False), dtype=bool).copy() if nb else np.zeros(0, bool)
    emitted = np.asarray(emitted_idx.to_numpy(zero_copy_only=False), dtype=np.int64)
    n = winners.num_rows
    empty = np.zeros(0, dtype=np.int64)
    if n == 0:
        return CarryOverDecision(keep, emitted, empty, empty, 0, 0, 0)
    keys = winners["key"].combine_chunks().cast(pa.string())
    is_del = _np_bool(winners["is_delete"])
    ct = _np_bool(winners["ct_delete"])
    src = np.asarray(winners["src"].to_numpy(zero_copy_only=False), dtype=np.int8)
    idx = np.asarray(winners["idx"].to_numpy(zero_copy_only=False), dtype=np.int64)
    base_pos = first_base_rows(base_keys, keys)
    has_base = base_pos >= 0
    # The winner replaced its base row (or had none): the compacted form puts it (or its absence) in the base.
    replaced = ~has_base | ~keep[np.maximum(base_pos, 0)] if nb else np.ones(n, dtype=bool)

    kept = np.zeros(n, dtype=bool)
    tomb = np.zeros(n, dtype=bool)
    in_later = (
        _np_bool(pc.is_in(keys, value_set=later_keys.cast(pa.string())))
        if later_keys is not None
        else np.zeros(n, dtype=bool)
    )
    # The prefix deletes the base row of a key a later log keeps alive: the base row stays, or the key would be in
    # logs only, where base-file indexes (SIMPLE, BLOOM) cannot find it and the next write would duplicate it.
    takes_key_out = is_del & has_base & replaced
    kept |= takes_key_out & in_later
    if event_time_ordering:
        tomb = is_del & ~ct & replaced
        in_later_ct = _np_bool(pc.is_in(keys, value_set=later_ct_keys.cast(pa.string())))
        # A later commit-time delete lets a later, lower record be compared with the *old* base row.
        hazard = ~ct & replaced & in_later_ct & ~(~has_base & is_del)
        # The prefix's commit-time delete of a base row: a later record may still lose to that row. Without a base
        # row, a later delete is dropped on it where it would win on nothing: it is carried either way.
        hazard |= ct & in_later
        kept |= hazard
    split = np.zeros(n, dtype=bool)
    if split_mask is not None and len(emitted):
        moved = emitted[_np_bool(split_mask)]
        split = (src == 0) & np.isin(idx, moved)
        kept |= split
    tomb &= ~kept

    # Kept form: the first base row stays; the winner is carried (as a data row or a delete entry).
    keep[base_pos[kept & has_base]] = True
    if event_time_ordering:
        # A commit-time delete the compacted form takes into the base file, leaving the key absent from it, is carried
        # too: a later delete arriving on it is dropped where on nothing it would count, so without it a delete
        # written after the compaction would win and hide a later, lower upsert (carried for as long as it stays the
        # key's last word, as tombstones are). A key with more base rows (duplicates) keeps the others: the delete
        # took the first, as Hudi's merge does, and is spent.
        carried_ct = ct & ~kept
        if nb:
            remaining = base_keys.cast(pa.string()).filter(pa.array(keep))
            carried_ct &= ~_np_bool(pc.is_in(keys, value_set=remaining))
        tomb |= carried_ct
    kept_data = idx[kept & (src == 0)]
    base_log = emitted[~np.isin(emitted, kept_data)]
    carry_data = np.concatenate([kept_data, idx[tomb & (src == 0)]])
    carry_del = np.flatnonzero((kept | tomb) & (src == 1)).astype(np.int64)
    sensitive = ((ct & (has_base | event_time_ordering)) | takes_key_out) & ~kept
    return CarryOverDecision(
        keep_base=keep,
        base_log_idx=base_log,
        carry_data_idx=np.sort(carry_data),
        carry_delete_winner_pos=carry_del,
        tombstones=int(tomb.sum()),
        kept=int(kept.sum()),
        split=int(split.sum()),
        ct_sensitive_keys=tuple(keys.filter(pa.array(sensitive)).to_pylist()),
    )
