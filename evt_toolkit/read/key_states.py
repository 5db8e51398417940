"""Where a batch's keys live in a table's logs when no base file holds them: what the SIMPLE index of the writer
needs besides base files (:mod:`evt_toolkit.write.simple_index`).

Hudi's SIMPLE index looks keys up in the latest base files only. A compaction of this toolkit carries the tombstone
of an event-time delete in a carry-over log of the new slice while the key leaves the base file
(``docs/data-safety.md`` §2), so a later record of the key finds no base row; it must still meet the tombstone in the
key's file group, as it did before the compaction. :func:`log_key_states` reads, for the batch's keys that no base
file holds, the per-key winner of the logs of every latest slice that a compaction made (it holds a log named with
its own base instant: a carry-over log or a link) — with the reader's own block selection and merge rules.

Example:
    >>> states = log_key_states(table, keyed_rows, key_locations(table, partitions))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import StorageError
from evt_toolkit.read.merge import build_candidates, merge_log_candidates
from evt_toolkit.read.plan import ReadSpec
from evt_toolkit.read.slice_reader import decode_blocks, select_log_blocks

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = ["log_key_states"]

_PART, _KEY = "_hoodie_partition_path", "_hoodie_record_key"
_STATE_SCHEMA = [
    (_PART, pa.string()),
    (_KEY, pa.string()),
    ("file_id", pa.string()),
    ("is_delete", pa.bool_()),
    ("ct_delete", pa.bool_()),
]


def log_key_states(table: Table, rows: pa.Table, locations: pa.Table) -> pa.Table:
    """The state, in its file group's logs, of every key of ``rows`` (``_hoodie_partition_path``,
    ``_hoodie_record_key``) that no base file holds (``locations``: :func:`key_locations`) but the logs of a slice a
    compaction made do — a carried tombstone, or a record that lost to one.

    Columns: partition, key, ``file_id``, ``is_delete``, ``ct_delete`` (a delete without ordering value) and ``ord``
    (the winner's ordering value, the table's type; null when the table has none). Only slices holding a log named
    with their own base instant (a compaction's carry-over log or link) are read; none is read when every key has a
    base row.

    Raises:
        StorageError: a log cannot be read (named).
    """
    empty = pa.schema([*_STATE_SCHEMA, ("ord", pa.null())]).empty_table()
    if rows.num_rows == 0:
        return empty
    wanted = pa.table({_PART: pc.cast(rows[_PART], pa.string()), _KEY: pc.cast(rows[_KEY], pa.string())})
    wanted = wanted.group_by([_PART, _KEY]).aggregate([])
    if locations.num_rows:
        wanted = wanted.join(locations.select([_PART, _KEY]), keys=[_PART, _KEY], join_type="left anti")
    if wanted.num_rows == 0:
        return empty
    partitions = set(wanted[_PART].to_pylist())
    slices = [
        s
        for s in table.view.latest_merged_file_slices()
        if s.partition_path in partitions and any(lf.instant == s.base_instant for lf in s.log_files)
    ]
    if not slices:
        return empty
    spec = ReadSpec.of(table)
    ctx = spec.context(None, storage=table.storage)
    parts: list[pa.Table] = []
    for s in slices:
        try:
            queued = select_log_blocks(ctx, s.log_files)
        except OSError as exc:
            raise StorageError(
                f"{table.storage.uri}: cannot read the logs of file group {s.file_id} for the SIMPLE index; nothing "
                f"was written: {exc}"
            ) from exc
        if not queued or any(q.block.is_partial for q in queued):
            continue
        data, dseq, deletes, delseq = decode_blocks(ctx, queued)
        winners = merge_log_candidates(
            build_candidates(data, dseq, deletes, delseq, ctx.ordering_field, ctx.merge_mode), ctx.merge_mode
        )
        if winners.num_rows == 0:
            continue
        n = winners.num_rows
        parts.append(
            pa.table(
                {
                    _PART: pa.array([s.partition_path] * n, pa.string()),
                    _KEY: winners["key"],
                    "file_id": pa.array([s.file_id] * n, pa.string()),
                    "is_delete": pc.fill_null(winners["is_delete"], False),
                    "ct_delete": pc.fill_null(winners["ct_delete"], False),
                    "ord": winners["ord"],
                }
            )
        )
    if not parts:
        return empty
    states = pa.concat_tables(parts, promote_options="permissive")
    # A filter, not a join: Arrow joins carry no null-typed column, and ``ord`` is one without an ordering field.
    keep = set(zip(wanted[_PART].to_pylist(), wanted[_KEY].to_pylist(), strict=True))
    mask = [pk in keep for pk in zip(states[_PART].to_pylist(), states[_KEY].to_pylist(), strict=True)]
    return states.filter(pa.array(mask, pa.bool_()))
