"""Shared builders and checks for the compaction execution tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import evt_toolkit as evt
from evt_toolkit.compaction.executor import load_pending_plan
from evt_toolkit.read.plan import ReadSpec
from evt_toolkit.read.slice_reader import read_file_slice
from evt_toolkit.table.fs_view import BaseFile, FileSlice, LogFile
from tests.normalize import assert_same_rows

BASE = 1_700_000_000_000
COLUMNS = ["id", "region", "ts", "ev", "v"]


def rows(
    ids: Sequence[int], ts: int, ev: int | Sequence[int], *, deleted: Sequence[bool] | None = None
) -> pd.DataFrame:
    """Upsert rows: ``ts`` is the ordering field, ``ev`` the event time as an offset from :data:`BASE`."""
    n = len(ids)
    evs = list(ev) if not isinstance(ev, int) else [ev] * n
    return pd.DataFrame(
        {
            "id": pd.array(list(ids), dtype="int64"),
            "region": [f"r{i % 2}" for i in ids],
            "ts": pd.array([ts] * n, dtype="int64"),
            "ev": pd.array([BASE + e for e in evs], dtype="int64"),
            "v": [float(i * 1000 + ts) for i in ids],
            "_hoodie_is_deleted": list(deleted) if deleted is not None else [False] * n,
        }
    )


def event_rows(ids: Sequence[int], ev: int | Sequence[int], ts: int = 1) -> pd.DataFrame:
    """Rows of the four-column event tables (``id``, ``region``, ``ts``, ``ev``): ``ev`` offsets from :data:`BASE`."""
    ids = list(ids)
    evs = list(ev) if not isinstance(ev, int) else [ev] * len(ids)
    return pd.DataFrame(
        {
            "id": pd.array(ids, dtype="int64"),
            "region": [f"r{i % 2}" for i in ids],
            "ts": pd.array([ts] * len(ids), dtype="int64"),
            "ev": pd.array([BASE + e for e in evs], dtype="int64"),
        }
    )


def write_rows(
    ids: list[int], ts: int | list[int], *, deleted: list[bool] | None = None, seed: int = 0
) -> pd.DataFrame:
    """Rows of the writer round-trip tables: three regions, random event times and values, a string column."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    ts_list = ts if isinstance(ts, list) else [ts] * n
    return pd.DataFrame(
        {
            "id": pd.array(ids, dtype="int64"),
            "region": [f"r{i % 3}" for i in ids],
            "ts": pd.array(ts_list, dtype="int64"),
            "ev": pd.array([1_700_000_000_000 + int(x) for x in rng.integers(0, 10**9, n)], dtype="int64"),
            "v": rng.random(n),
            "name": [f"n{i}-{t}" for i, t in zip(ids, ts_list, strict=True)],
            "_hoodie_is_deleted": deleted if deleted is not None else [False] * n,
        }
    )


def deletes(ids: Sequence[int], ts: int) -> pd.DataFrame:
    """Deletes carrying an ordering value (event-time deletes in EVENT_TIME_ORDERING)."""
    return pd.DataFrame(
        {
            "id": pd.array(list(ids), dtype="int64"),
            "region": [f"r{i % 2}" for i in ids],
            "ts": pd.array([ts] * len(ids), dtype="int64"),
        }
    )


def create(
    path: Path | str,
    merge_mode: str,
    buckets: int = 2,
    table_version: int = 6,
    storage_options: dict[str, str] | None = None,
) -> evt.HudiTable:
    """The tests' table: key ``id``, partitioned by ``region``, ordering ``ts``, event time ``ev``, bucket index."""
    return evt.HudiTable.create(
        path,
        "ct",
        "id",
        partition_by="region",
        ordering_field="ts",
        event_time_field="ev",
        buckets=buckets,
        merge_mode=merge_mode,
        table_version=table_version,
        storage_options=storage_options,
    )


def history(t: evt.HudiTable) -> None:
    """A history with late data, an update, a delete later beaten by nothing, and a late lower-ordered update.

    Log order per group: ev≤T batch, delete of 1 (ts 30), ev≤T batch (so the delete is inside the prefix),
    ev>T batch, late update of 1 with ts 5 and ev>T (a leftover that must keep losing to the delete).
    """
    t.write(rows(range(0, 20), 10, 100))
    t.write(rows(range(10, 30), 20, 150))
    t.write(deletes([1, 2, 7], 30), "delete")
    t.write(rows(range(3, 12), 25, 200))
    t.write(rows(range(25, 40), 40, 400))
    t.write(rows([1, 2, 4], 5, 450))
    t.write(rows([5, 6], 60, 500, deleted=[True, False]))


def hudi_rs(path: str, ro: bool = False) -> pa.Table:
    import hudi

    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    batches = b.build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({c: pa.array([], pa.int64()) for c in COLUMNS})


def same(a: pa.Table, b: pa.Table, what: str) -> None:
    assert_same_rows(a, b, COLUMNS if a.num_rows or b.num_rows else [], what)


def carried_keys(t: evt.HudiTable, instant: str) -> set[str]:
    """Record keys of every record in the carry-over logs compaction ``instant`` wrote."""
    from evt_toolkit.format.log_content import decode_data_block, decode_delete_block
    from evt_toolkit.format.logfile import BlockType, read_block_content, scan_log_blocks
    from evt_toolkit.format.names import CARRY_OVER_LOG_VERSION, LogFileName

    keys: set[str] = set()
    for f in t.storage.list_files(""):
        name = LogFileName.parse(f.path.rsplit("/", 1)[-1])
        if name is None or name.base_instant != instant or name.version != CARRY_OVER_LOG_VERSION:
            continue
        with t.storage.open_input(f.path) as fh:
            for blk in scan_log_blocks(fh, f.size, f.path):
                if blk.block_type == BlockType.DELETE:
                    keys.update(decode_delete_block(blk, read_block_content(fh, blk))["_hoodie_record_key"].to_pylist())
                elif blk.block_type == BlockType.AVRO_DATA:
                    keys.update(decode_data_block(blk, read_block_content(fh, blk))["_hoodie_record_key"].to_pylist())
    return keys


def same_ro(ro: pa.Table, want: pa.Table, carried: set[str], what: str) -> None:
    """RO equals the old base merged with the compacted prefix (:func:`expected_ro`) for every key the compaction
    did not carry over. A carried key may keep its old base row instead (``compaction/carry_over.py``: the *kept*
    form, chosen where the compacted one would change a later answer), which the snapshot checks cover."""
    if carried:
        out = pa.array(sorted(carried), pa.string())
        ro = ro.filter(pc.invert(pc.is_in(ro["_hoodie_record_key"], value_set=out)))
        want = want.filter(pc.invert(pc.is_in(want["_hoodie_record_key"], value_set=out)))
    same(ro, want, what)


def expected_ro(t: evt.HudiTable, instant: str) -> pa.Table:
    """RO after the run, computed independently: each op's old base merged with exactly its compacted logs."""
    _, plan = load_pending_plan(t, instant)
    ctx = ReadSpec.of(t).context(None, storage=t.storage)
    parts = []
    planned = {(op.partition_path, op.file_id) for op in plan.operations}
    for op in plan.operations:
        p = op.partition_path
        logs = []
        for name in op.delta_files:
            rel = f"{p}/{name}" if p else name
            parsed = __import__("evt_toolkit.format.names", fromlist=["LogFileName"]).LogFileName.parse(name)
            logs.append(
                LogFile(
                    rel,
                    name,
                    parsed.file_id,
                    parsed.base_instant,
                    parsed.version,
                    parsed.write_token,
                    "",
                    t.storage.size(rel),
                )
            )
        base = None
        if op.data_file:
            name = op.data_file
            rel = f"{p}/{name}" if p else name
            bn = __import__("evt_toolkit.format.names", fromlist=["BaseFileName"]).BaseFileName.parse(name)
            base = BaseFile(rel, name, bn.file_id, bn.instant, bn.write_token, t.storage.size(rel))
        parts.append(read_file_slice(ctx, FileSlice(p, op.file_id, op.base_instant, base, tuple(logs))))
    ro = t.read("read_optimized")
    for b in t.view.latest_base_files():
        if (b.path.rsplit("/", 1)[0] if "/" in b.path else "", b.file_id) not in planned:
            parts.append(ro.filter(pc.equal(pc.field("_hoodie_file_name"), b.name)))
    return pa.concat_tables(parts) if parts else ctx.schema.empty_table()


def remaining_logs_ok(t: evt.HudiTable, threshold: int, scheduled_at: str) -> list[str]:
    """Prefix rule: every remaining log of known min event time has it > T, or was written after scheduling.

    A log of unknown min event time (e.g. deletes whose event time was not given) may stay: the plan cannot prove it
    holds events ≤ T, and :func:`freshness_holds` checks what the table then promises.
    """
    from evt_toolkit.compaction.event_times import slice_infos

    bad = []
    for s in slice_infos(t.refresh()):
        for lf in s.log_files:
            late = lf.instant is not None and lf.instant >= scheduled_at  # carry-over blocks carry C itself
            if lf.has_data and not late and lf.min_event_time is not None and lf.min_event_time <= threshold:
                bad.append(f"{lf.name} min={lf.min_event_time}")
    return bad


def freshness_holds(t: evt.HudiTable) -> None:
    """The reported RO freshness is true: RO and snapshot agree on every event up to it."""
    f = t.refresh().ro_freshness()
    if f.threshold_ms is None:
        return
    keep = pc.field("ev") <= f.threshold_ms
    same(t.read("read_optimized").filter(keep), t.read().filter(keep), f"RO and snapshot up to {f.threshold_ms}")


def snapshot(t: evt.HudiTable, **kw: Any) -> pa.Table:
    return t.refresh().read(**kw)
