"""The sort-based log merge the toolkit's hash-based one must agree with (the tests' reference).

Sort every candidate by key, then by preference; the last of each key wins. In event-time ordering, everything
before a key's last commit-time delete is dropped first, then the delete-block records between it and the first data
record after it (Hudi keeps a commit-time delete when a delete arrives on it), and a commit-time delete ranks below
any later record.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.read.merge import EVENT_TIME


def _last_per_key(sorted_table: pa.Table) -> pa.Table:
    k = sorted_table.num_rows
    if k == 0:
        return sorted_table
    keys = sorted_table["key"].combine_chunks()
    last = np.ones(k, dtype=bool)
    if k > 1:
        last[:-1] = pc.not_equal(keys.slice(0, k - 1), keys.slice(1)).to_numpy(zero_copy_only=False)
    return sorted_table.filter(pa.array(last))


def sort_based_merge(t: pa.Table, mode: str) -> pa.Table:
    """One winner per key of a candidate table (``LogCandidates.table`` columns), sorted by key."""
    if t.num_rows == 0:
        return t
    if mode != EVENT_TIME:
        order = pc.sort_indices(t, sort_keys=[("key", "ascending"), ("seq", "ascending")])
        return _last_per_key(t.take(order))
    ct_seq = pc.if_else(t["ct_delete"], t["seq"], pa.scalar(-1, pa.int64()))
    last_ct = pa.table({"key": t["key"], "ct_seq": ct_seq}).group_by("key").aggregate([("ct_seq", "max")])
    joined = t.join(last_ct, "key", join_type="left outer")
    t = joined.filter(pc.greater_equal(joined["seq"], joined["ct_seq_max"]))
    # The first data record after the last commit-time delete: delete-block records before it are dropped.
    data_after = pc.if_else(
        pc.and_(pc.equal(t["src"], 0), pc.greater(t["seq"], t["ct_seq_max"])), t["seq"], pa.scalar(None, pa.int64())
    )
    first = pa.table({"key": t["key"], "d": data_after}).group_by("key").aggregate([("d", "min")])
    t = t.join(first, "key", join_type="left outer")
    keep = pc.or_(
        pc.equal(t["ct_seq_max"], -1),
        pc.or_(pc.equal(t["seq"], t["ct_seq_max"]), pc.fill_null(pc.greater_equal(t["seq"], t["d_min"]), False)),
    )
    t = t.filter(keep).drop_columns(["ct_seq_max", "d_min"])
    rank = pc.if_else(t["ct_delete"], pa.nulls(t.num_rows, t.schema.field("ord").type), t["ord"])
    ranked = t.append_column("rank", rank)
    order = pc.sort_indices(
        ranked,
        sort_keys=[("key", "ascending"), ("rank", "ascending", "at_start"), ("seq", "ascending")],
    )
    return _last_per_key(ranked.take(order)).drop_columns(["rank"])
