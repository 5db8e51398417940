"""Compaction benchmark: throughput vs a pyarrow floor, partial vs full compaction, RO vs snapshot.

Run ``python -m bench.bench_compaction [--rows N]`` (default 200k rows; ``--rows 1000000`` for the large run).
One synthetic table is ingested in event-time order with some late data, then copied three times:

* **floor**: pyarrow reads the bytes the event-time compaction merges, as Arrow, and writes them as Parquet with
  no merge — the cost of I/O and encoding alone;
* **partial**: an event-time compaction at T (links by copy);
* **full**: every log of every slice compacted (``UnBoundedCompactionStrategy``).

Reported: rows/s and time of each, the partial/floor time ratio, bytes rewritten (base files + links) of partial vs
full, and the time to read events ≤ T through RO vs snapshot. Results go to ``bench/results/compaction.{json,md}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import evt_toolkit as evt
from bench.common import peak_memory
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.compaction import executor as executor_mod
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.merge_task import MergeResult, MergeTask
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.read.plan import ReadSpec
from evt_toolkit.read.slice_reader import decode_blocks, select_log_blocks
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.fs_view import LogFile

BASE = 1_700_000_000_000
RESULTS = Path(__file__).resolve().parent / "results"


def _batches(rows: int, n_batches: int, keys: int, seed: int = 7) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    per = rows // n_batches
    out = []
    for b in range(n_batches):
        ids = rng.integers(0, keys, per)
        ev = BASE + b * 60_000 + rng.integers(0, 60_000, per)
        late = rng.random(per) < 0.05
        ev = np.where(late, ev - rng.integers(0, 2 * 60_000, per), ev)  # late by up to two batches
        out.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "region": pa.array([f"r{i}" for i in (ids % 4)]),
                    "ts": pa.array(np.full(per, b, dtype=np.int64)),
                    "ev": pa.array(ev.astype(np.int64)),
                    "v": pa.array(rng.random(per)),
                    "name": pa.array([f"n{b}"] * per),
                }
            )
        )
    return out


def _build(path: Path, batches: list[pa.Table]) -> evt.HudiTable:
    t = evt.HudiTable.create(
        path, "bench", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=4
    )
    for b in batches:
        t.write(b)
    return t


def _floor(t: evt.HudiTable, instant: str) -> tuple[float, int]:
    """Read the plan's compacted logs as Arrow and write them as Parquet, no merge."""
    plan = t.timeline.compaction_plan(next(i for i in t.timeline.instants if i.time == instant))
    ctx = ReadSpec.of(t).context(None, storage=t.storage)
    started = time.perf_counter()
    n = 0
    for op in plan["operations"]:
        p = op.get("partitionPath") or ""
        logs = []
        for name in op["deltaFilePaths"]:
            rel = f"{p}/{name}" if p else name
            logs.append(LogFile(rel, name, op["fileId"], op["baseInstantTime"], 0, None, "", t.storage.size(rel)))
        data, _, _, _ = decode_blocks(ctx, select_log_blocks(ctx, tuple(logs)))
        sink = pa.BufferOutputStream()
        pq.write_table(data, sink, compression="snappy")
        n += data.num_rows
    return time.perf_counter() - started, n


def _timed_read(t: evt.HudiTable, query_type: str, threshold: int) -> tuple[float, int]:
    started = time.perf_counter()
    tbl = t.refresh().read(query_type)
    tbl = tbl.filter(pc.less_equal(tbl["ev"], threshold))
    return time.perf_counter() - started, tbl.num_rows


def _slice_input_bytes(storage: TableStorage, op: Any) -> int:
    p = op.get("partitionPath") or ""
    names = list(op.get("deltaFilePaths") or [])
    if op.get("dataFilePath"):
        names.append(op["dataFilePath"])
    return sum(storage.size(f"{p}/{n}" if p else n) for n in names)


@contextlib.contextmanager
def task_memory_probe(records: list[dict[str, Any]]) -> Iterator[None]:
    """Wrap each in-process merge task: its peak resident-set growth against the bytes of its slice."""
    original = executor_mod.run_merge_task

    def probed(task: MergeTask) -> MergeResult:
        storage = TableStorage.from_uri(task.table_uri)
        slice_bytes = _slice_input_bytes(storage, task.operation)
        with peak_memory() as mem:
            out = original(task)
        records.append(
            {
                "file_id": task.file_id,
                "slice_input_bytes": slice_bytes,
                "log_records": out.total_log_records,
                "rows_written": out.num_writes,
                "peak_rss_growth_bytes": mem.growth,
                "method": mem.method,
            }
        )
        return out

    executor_mod.run_merge_task = probed
    try:
        yield
    finally:
        executor_mod.run_merge_task = original


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def run_b3(root: Path, rows: int = 200_000, n_batches: int = 10) -> dict[str, Any]:
    """B3 on tables under ``root`` (kept for B5 and the cluster run: ``root/src`` is the uncompacted table)."""
    batches = _batches(rows, n_batches, keys=max(1000, rows // 4))
    ingest_s, _ = _timed_call(lambda: _build(root / "src", batches))
    threshold = BASE + (n_batches // 2) * 60_000
    for name in ("partial", "full"):
        shutil.copytree(root / "src", root / name, symlinks=True)
    partial = evt.HudiTable.open(root / "partial")
    full = evt.HudiTable.open(root / "full")
    src_bytes = _tree_bytes(root / "src")

    link_mode = "symlink" if partial.storage.supports_symlink else "copy"
    c = schedule_compaction(partial, EventTimeBasedCompactionStrategy(threshold=threshold), link_mode=link_mode)
    cf = schedule_compaction(full, UnBoundedCompactionStrategy())
    assert c is not None and cf is not None
    floor_p_s, floor_p_rows = _floor(partial, c.instant)
    floor_f_s, floor_f_rows = _floor(full, cf.instant)
    link_target_bytes = sum(partial.storage.size(x.target_path) for x in c.links) if c.links else 0

    mem_p: list[dict[str, Any]] = []
    mem_f: list[dict[str, Any]] = []
    with task_memory_probe(mem_p):
        res_p = run_compaction(partial, c.instant)
    with task_memory_probe(mem_f):
        res_f = run_compaction(full, cf.instant)
    link_written = 0 if link_mode == "symlink" else link_target_bytes
    partial_bytes = res_p.bytes_written + link_written
    return {
        "rows_ingested": rows,
        "batches": n_batches,
        "ingest_s": round(ingest_s, 3),
        "table_bytes": src_bytes,
        "threshold_ms": threshold,
        "link_mode": link_mode,
        "partial": {
            "seconds": round(res_p.duration_s, 3),
            "log_records_in": floor_p_rows,
            "log_rows_per_s": round(floor_p_rows / res_p.duration_s),
            "rows_written": res_p.records_written,
            "base_bytes_written": res_p.bytes_written,
            "link_bytes_written": link_written,
            "bytes_rewritten": partial_bytes,
            "bytes_rewritten_if_links_copied": res_p.bytes_written + link_target_bytes,
            "log_files_compacted": res_p.log_files_compacted,
            "log_bytes_compacted": res_p.log_bytes_compacted,
            "links": res_p.links,
        },
        "full": {
            "seconds": round(res_f.duration_s, 3),
            "log_records_in": floor_f_rows,
            "log_rows_per_s": round(floor_f_rows / res_f.duration_s),
            "rows_written": res_f.records_written,
            "bytes_rewritten": res_f.bytes_written,
            "log_files_compacted": res_f.log_files_compacted,
            "log_bytes_compacted": res_f.log_bytes_compacted,
        },
        "floor": {
            "partial_plan_s": round(floor_p_s, 3),
            "full_plan_s": round(floor_f_s, 3),
            "rows_per_s": round(floor_f_rows / floor_f_s),
            "note": "decode the plan's logs to Arrow (the Avro decoder; pyarrow has none) + pyarrow Parquet write "
            "to memory, no merge",
        },
        "ratios": {
            "partial_s / floor_s": round(res_p.duration_s / floor_p_s, 2),
            "full_s / floor_s": round(res_f.duration_s / floor_f_s, 2),
            "partial_bytes / full_bytes": round(partial_bytes / res_f.bytes_written, 3),
            "partial_s / full_s": round(res_p.duration_s / res_f.duration_s, 3),
        },
        "task_memory": {"partial": mem_p, "full": mem_f},
        "target": {"max_ratio_to_floor": 2.0},
    }


def _timed_call(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=10)
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="evt-bench-compaction-"))
    try:
        batches = _batches(args.rows, args.batches, keys=max(1000, args.rows // 4))
        t0 = time.perf_counter()
        src = _build(root / "src", batches)
        ingest_s = time.perf_counter() - t0
        threshold = BASE + (args.batches // 2) * 60_000
        for name in ("partial", "full"):
            shutil.copytree(root / "src", root / name, symlinks=True)
        partial = evt.HudiTable.open(root / "partial")
        full = evt.HudiTable.open(root / "full")

        c = schedule_compaction(partial, EventTimeBasedCompactionStrategy(threshold=threshold))
        assert c is not None
        floor_s, floor_rows = _floor(partial, c.instant)
        snap_ro_before = _timed_read(partial, "snapshot", threshold)
        res_p = run_compaction(partial, c.instant)
        link_bytes = sum(partial.storage.size(x.symlink_path) for x in c.links)
        cf = schedule_compaction(full, UnBoundedCompactionStrategy())
        assert cf is not None
        res_f = run_compaction(full, cf.instant)
        ro_s, ro_rows = _timed_read(partial, "read_optimized", threshold)
        snap_s, snap_rows = _timed_read(partial, "snapshot", threshold)
        out: dict[str, Any] = {
            "rows_ingested": args.rows,
            "ingest_s": round(ingest_s, 3),
            "threshold_ms": threshold,
            "partial": {
                "seconds": round(res_p.duration_s, 3),
                "log_records_in": floor_rows,
                "rows_written": res_p.records_written,
                "log_rows_per_s": round(floor_rows / res_p.duration_s),
                "base_bytes_written": res_p.bytes_written,
                "link_bytes_copied": link_bytes,
                "bytes_rewritten": res_p.bytes_written + link_bytes,
                "log_files_compacted": res_p.log_files_compacted,
                "links": res_p.links,
            },
            "full": {
                "seconds": round(res_f.duration_s, 3),
                "rows_written": res_f.records_written,
                "bytes_rewritten": res_f.bytes_written,
                "log_files_compacted": res_f.log_files_compacted,
            },
            "floor": {"seconds": round(floor_s, 3), "rows": floor_rows, "rows_per_s": round(floor_rows / floor_s)},
            "ratio_partial_to_floor": round(res_p.duration_s / floor_s, 2),
            "reads_le_T": {
                "ro_s": round(ro_s, 3),
                "ro_rows": ro_rows,
                "snapshot_s": round(snap_s, 3),
                "snapshot_rows": snap_rows,
                "snapshot_before_compaction_s": round(snap_ro_before[0], 3),
                "snapshot_to_ro_ratio": round(snap_s / ro_s, 2),
            },
        }
        assert src is not None
    finally:
        shutil.rmtree(root, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "compaction.json").write_text(json.dumps(out, indent=2) + "\n")
    p, f, fl, r = out["partial"], out["full"], out["floor"], out["reads_le_T"]
    md = [
        "# Compaction benchmark",
        "",
        f"{args.rows:,} rows ingested in {args.batches} deltacommits (4 partitions × 4 buckets), T = batch "
        f"{args.batches // 2}; one run, one machine.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| partial compaction | {p['seconds']} s, {p['log_rows_per_s']:,} log rows/s |",
        f"| pyarrow floor (read same logs, write Parquet, no merge) | {fl['seconds']} s, {fl['rows_per_s']:,} rows/s |",
        f"| partial / floor time | {out['ratio_partial_to_floor']}× |",
        f"| bytes rewritten: partial (base + link copies) | {p['bytes_rewritten']:,} |",
        f"| bytes rewritten: full | {f['bytes_rewritten']:,} |",
        f"| time: partial vs full | {p['seconds']} s vs {f['seconds']} s |",
        f"| read events ≤ T: RO | {r['ro_s']} s ({r['ro_rows']:,} rows) |",
        f"| read events ≤ T: snapshot | {r['snapshot_s']} s ({r['snapshot_rows']:,} rows) |",
        f"| snapshot / RO | {r['snapshot_to_ro_ratio']}× |",
        "",
    ]
    (RESULTS / "compaction.md").write_text("\n".join(md))
    print("\n".join(md))
    return out


if __name__ == "__main__":
    main()
