"""Hudi's SIMPLE index on a Merge-On-Read table: where each record of a batch goes (``HoodieSimpleIndex``).

``tagLocation`` joins the batch's keys with the keys of the latest base file of every file group in the batch's
partitions (``HoodieKeyLocationFetchHandle`` reads ``_hoodie_record_key``); a found key is an update or delete of that
file group, appended as a log file; an unknown key is an insert. SIMPLE cannot index log files
(``canIndexLogFiles() == false``), so Spark writes inserts as the base file of a new file group
(:mod:`evt_toolkit.write.create_handle`). Deletes of unknown keys are dropped, as ``HoodieDeleteHelper`` drops
untagged deletes.

A key a compaction of this toolkit took out of its base file while carrying its tombstone (an event-time delete:
``docs/data-safety.md`` §2) has no base row left for the index to find, yet its file group still holds its state.
Routed as an insert, a late record with a smaller ordering value would start a new file group and come back, where
before the compaction it went to the key's file group and lost to the delete. The writer reads such keys
(:func:`evt_toolkit.read.key_states.log_key_states` reads the logs of the slices a compaction made) and
:func:`plan_simple_index_writes` sends a record there whenever it would have gone there before the compaction and
lost — a delete, or an upsert whose ordering value is below the tombstone's — and a record that wins
to a new file group as before (so a live key stays in a base file).

:func:`key_locations` does the I/O; :func:`plan_simple_index_writes` is pure: it routes rows to file groups and tags
each row with its group's ordinal in the ``_evt_bucket`` column, so the writer splits them exactly as it splits
bucket-index batches.

Example:
    >>> import pyarrow as pa
    >>> loc = pa.table({"_hoodie_partition_path": ["p"], "_hoodie_record_key": ["a"], "file_id": ["f-0"]})
    >>> up = pa.table({"_hoodie_partition_path": ["p", "p"], "_hoodie_record_key": ["a", "b"],
    ...                "_evt_bucket": pa.array([0, 0], pa.int32())})
    >>> de = up.slice(0, 0)
    >>> s = {("p", "f-0"): ("1", "f-0_0-0-0_1.parquet")}
    >>> fgs, up2, _ = plan_simple_index_writes("2", up, de, loc, s, new_file_id=lambda: "new-0")
    >>> [(f.file_id, f.creates_base_file) for f in fgs], up2["_evt_bucket"].to_pylist()
    ([('f-0', False), ('new-0', True)], [0, 1])
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evt_toolkit.errors import StorageError, UnsupportedTableError, WriteError
from evt_toolkit.format.ordering import comparable
from evt_toolkit.table.config import EVENT_TIME_ORDERING
from evt_toolkit.write.plan import FileGroupWrite

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = [
    "DEFAULT_INSERT_SPLIT_SIZE",
    "base_file_keys",
    "check_simple_index_table",
    "key_locations",
    "new_file_id",
    "plan_simple_index_writes",
]

_PART, _KEY, _GROUP = "_hoodie_partition_path", "_hoodie_record_key", "_evt_bucket"
#: ``hoodie.copyonwrite.insert.split.size``: records per new file group of an insert.
DEFAULT_INSERT_SPLIT_SIZE = 500_000


def new_file_id() -> str:
    """A new file group id: ``FSUtils.createNewFileIdPfx()`` (a random UUID) plus ``-0``."""
    return f"{uuid.uuid4()}-0"


def base_file_keys(table: Table, path: str) -> pa.ChunkedArray:
    """The ``_hoodie_record_key`` column of base file ``path``: only that column's pages are read (ranged reads on
    object stores), as ``HoodieKeyLocationFetchHandle`` reads them.

    Raises:
        StorageError: the file cannot be read (names it and the table; nothing was written).
        WriteError: its keys cannot be decoded (named).
    """
    try:
        with table.storage.open_input(path) as f:
            return pq.read_table(f, columns=[_KEY])[_KEY]
    except (StorageError, OSError) as exc:  # the disk or the store failed: nothing was written
        raise StorageError(
            f"{table.storage.uri}: cannot read the record keys of base file {table.storage.full_path(path)} "
            f"for the SIMPLE index; nothing was written: {exc}"
        ) from exc
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise WriteError(f"cannot read the record keys of base file {table.storage.full_path(path)}: {exc}") from exc


def key_locations(table: Table, partitions: Iterable[str]) -> pa.Table:
    """``(partition path, record key, file id)`` of every key in the latest base files of ``partitions``.

    Mirrors ``HoodieSimpleIndex.fetchRecordLocationsForAffectedPartitions``: only base files count, the latest
    committed one of each file group (a pending compaction's output is not committed yet).

    Raises:
        StorageError: a base file cannot be read (names it and the table).
        WriteError: a base file's keys cannot be decoded (named).
    """
    wanted = set(partitions)
    parts: list[pa.Table] = []
    for bf in table.view.latest_base_files():
        partition = bf.path.rsplit("/", 1)[0] if "/" in bf.path else ""
        if partition not in wanted:
            continue
        keys = base_file_keys(table, bf.path)
        n = len(keys)
        parts.append(
            pa.table(
                {
                    _PART: pa.array([partition] * n, pa.string()),
                    _KEY: pc.cast(keys, pa.string()),
                    "file_id": pa.array([bf.file_id] * n, pa.string()),
                }
            )
        )
    if not parts:
        return pa.table({_PART: pa.array([], pa.string()), _KEY: pa.array([], pa.string()), "file_id": []}).cast(
            pa.schema([(_PART, pa.string()), (_KEY, pa.string()), ("file_id", pa.string())])
        )
    return pa.concat_tables(parts)


def _lookup(rows: pa.Table, locations: pa.Table) -> pa.Array:
    """File id of each row's key (null for unknown keys), in row order."""
    if rows.num_rows == 0:
        return pa.array([], pa.string())
    probe = pa.table(
        {
            _PART: pc.cast(rows[_PART], pa.string()),
            _KEY: pc.cast(rows[_KEY], pa.string()),
            "_row": pa.array(np.arange(rows.num_rows, dtype=np.int64)),
        }
    )
    joined = probe.join(locations, keys=[_PART, _KEY], join_type="left outer")
    order = pc.sort_indices(joined, sort_keys=[("_row", "ascending")])
    return joined["file_id"].take(order).combine_chunks()


def _log_targets(states: pa.Table) -> dict[tuple[str, str], tuple[str, bool, Any]]:
    """``(partition, key) -> (file id, live, ordering value)`` of the state each key's records must meet: a live
    record, else the tombstone with the greatest ordering value (a delete without one counts as the least: every
    record beats it)."""
    ords = comparable(states["ord"]).to_pylist() if states.schema.field("ord").type != pa.null() else None
    best: dict[tuple[str, str], tuple[str, bool, Any]] = {}
    rank: dict[tuple[str, str], tuple[int, Any]] = {}
    for i, (p, k, f, dele, ct) in enumerate(
        zip(
            states[_PART].to_pylist(),
            states[_KEY].to_pylist(),
            states["file_id"].to_pylist(),
            states["is_delete"].to_pylist(),
            states["ct_delete"].to_pylist(),
            strict=True,
        )
    ):
        o = None if ct or ords is None else ords[i]
        r = (2, None) if not dele else (1 if o is not None else 0, o)
        cur = rank.get((p, k))
        if cur is None or r[0] > cur[0] or (r[0] == cur[0] == 1 and r[1] > cur[1]):
            rank[(p, k)] = r
            best[(p, k)] = (f, not dele, o)
    return best


def _route_to_logs(
    rows: pa.Table,
    ids: pa.Array,
    targets: Mapping[tuple[str, str], tuple[str, bool, Any]],
    ordering_field: str | None,
    event_time: bool,
    *,
    deletes: bool,
) -> pa.Array:
    """``ids`` with the rows no base file holds sent where their key's state lives (see
    :func:`plan_simple_index_writes`)."""
    if rows.num_rows == 0:
        return ids
    out = ids.to_pylist()
    parts, keys = rows[_PART].to_pylist(), rows[_KEY].to_pylist()
    row_ord: list[Any] | None = None
    if not deletes and event_time and ordering_field and ordering_field in rows.column_names:
        row_ord = comparable(rows[ordering_field].combine_chunks()).to_pylist()
    for i, current in enumerate(out):
        if current is not None:
            continue
        target = targets.get((parts[i], keys[i]))
        if target is None:
            continue
        file_id, live, tomb = target
        loses = row_ord is not None and tomb is not None and row_ord[i] is not None and row_ord[i] < tomb
        if deletes or live or loses:
            out[i] = file_id
    return pa.array(out, pa.string())


def plan_simple_index_writes(
    instant: str,
    upserts: pa.Table,
    deletes: pa.Table,
    locations: pa.Table,
    slices: Mapping[tuple[str, str], tuple[str, str | None]],
    *,
    new_file_id: Callable[[], str] = new_file_id,
    insert_split_size: int = DEFAULT_INSERT_SPLIT_SIZE,
    log_states: pa.Table | None = None,
    ordering_field: str | None = None,
    merge_mode: str | None = None,
) -> tuple[list[FileGroupWrite], pa.Table, pa.Table]:
    """Route a de-duplicated batch to file groups as the SIMPLE index does. Pure.

    Args:
        instant: the deltacommit (the base instant of new file groups).
        upserts: data rows with ``_hoodie_partition_path``, ``_hoodie_record_key`` and ``_evt_bucket``.
        deletes: delete rows, same key columns.
        locations: :func:`key_locations` of the batch's partitions.
        slices: ``(partition, file id) -> (base instant, base file name)`` of the latest slice of each group.
        new_file_id: id of a new file group.
        insert_split_size: records per new file group.
        log_states: the batch's keys that no base file holds but their file group's logs do
            (:func:`evt_toolkit.read.key_states.log_key_states`). A delete of such a key goes to that group, and so
            does an upsert that loses there to an event-time tombstone (``merge_mode`` ``EVENT_TIME_ORDERING``,
            its ``ordering_field`` value below the tombstone's); an upsert that wins is an insert.
        ordering_field: the table's ordering field (with ``log_states``).
        merge_mode: the table's merge mode (with ``log_states``).

    Returns:
        ``(writes, upserts, deletes)``: the file group writes (existing groups first, by partition and id), and the
        rows with ``_evt_bucket`` set to their write's ordinal (``FileGroupWrite.bucket``); deletes of unknown keys
        are dropped.

    Raises:
        WriteError: a key sits in two file groups of its partition (the table is already inconsistent).
    """
    if locations.num_rows:
        counts = locations.group_by([_PART, _KEY]).aggregate([("file_id", "count_distinct")])
        dup = counts.filter(pc.greater(counts["file_id_count_distinct"], 1))
        if dup.num_rows:
            raise WriteError(
                f"record key {dup[_KEY][0].as_py()!r} of partition {dup[_PART][0].as_py()!r} is in several file "
                "groups; the SIMPLE index cannot tell which one to update"
            )
        locations = (
            locations.group_by([_PART, _KEY]).aggregate([("file_id", "min")]).rename_columns([_PART, _KEY, "file_id"])
        )
    up_ids = _lookup(upserts, locations)
    de_ids = _lookup(deletes, locations)
    if log_states is not None and log_states.num_rows:
        targets = _log_targets(log_states)
        event_time = merge_mode == EVENT_TIME_ORDERING
        up_ids = _route_to_logs(upserts, up_ids, targets, ordering_field, event_time, deletes=False)
        de_ids = _route_to_logs(deletes, de_ids, targets, ordering_field, event_time, deletes=True)
    deletes = deletes.filter(pc.is_valid(de_ids)) if deletes.num_rows else deletes
    de_ids = de_ids.filter(pc.is_valid(de_ids)) if len(de_ids) else de_ids

    existing = sorted(
        {(p, f) for p, f in zip(upserts[_PART].to_pylist(), up_ids.to_pylist(), strict=True) if f is not None}
        | {(p, f) for p, f in zip(deletes[_PART].to_pylist(), de_ids.to_pylist(), strict=True)}
    )
    writes: list[FileGroupWrite] = []
    ordinal: dict[tuple[str, str], int] = {}
    for partition, file_id in existing:
        base_instant, base_file = slices[(partition, file_id)]
        ordinal[(partition, file_id)] = len(writes)
        writes.append(FileGroupWrite(partition, file_id, len(writes), base_instant, base_file, 1, (), base_instant))

    up_group = np.full(upserts.num_rows, -1, dtype=np.int32)
    up_part = upserts[_PART].to_pylist()
    for i, (p, f) in enumerate(zip(up_part, up_ids.to_pylist(), strict=True)):
        if f is not None:
            up_group[i] = ordinal[(p, f)]
    # Inserts: new file groups per partition, insert_split_size records each (UpsertPartitioner's insert buckets).
    inserts_by_partition: dict[str, list[int]] = {}
    for row in np.flatnonzero(up_group < 0).tolist():
        inserts_by_partition.setdefault(up_part[row], []).append(row)
    for partition in sorted(inserts_by_partition):
        rows = inserts_by_partition[partition]
        for start in range(0, len(rows), max(1, insert_split_size)):
            g = len(writes)
            writes.append(FileGroupWrite(partition, new_file_id(), g, instant, None, 1, (), "null", True))
            up_group[rows[start : start + insert_split_size]] = g
    de_group = np.array(
        [ordinal[(p, f)] for p, f in zip(deletes[_PART].to_pylist(), de_ids.to_pylist(), strict=True)], dtype=np.int32
    )
    return writes, _with_group(upserts, up_group), _with_group(deletes, de_group)


def _with_group(rows: pa.Table, groups: np.ndarray) -> pa.Table:
    column = pa.array(groups.astype(np.int32), pa.int32())
    if _GROUP in rows.column_names:
        return rows.set_column(rows.column_names.index(_GROUP), _GROUP, column)
    return rows.append_column(_GROUP, column)


def check_simple_index_table(table: Table) -> None:
    """Refuse a table the SIMPLE index cannot have written: a file group without a base file.

    SIMPLE never writes log-only file groups, so such a group means writers use an index that can index log files
    (bucket, in-memory, record-level, Flink state); keys that live only in its logs would be inserted again.

    Raises:
        UnsupportedTableError: naming the file group.
    """
    for s in table.view.latest_file_slices():
        if s.base_file is None:
            raise UnsupportedTableError(
                f"{table.storage.uri}: file group {s.file_id} in partition {s.partition_path!r} has no base file, so "
                "this table is not written with the SIMPLE index (it cannot index log files); write it with the "
                "index its writers use"
            )
