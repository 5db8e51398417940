"""B3 — compaction throughput against a strict floor and hudi-rs, partial vs full compaction, memory per task.

Run ``python -m bench.bench_compaction [--rows N] [--repeat 5]`` (default 200k rows). One synthetic table is
ingested (10 deltacommits, keys updated ~4x each, 5 % late events); every repeat copies it and runs

* **partial**: an event-time compaction at T (the middle of the stream; links by symlink where possible);
* **full**: every log of every slice compacted (``UnBoundedCompactionStrategy``);
* **floor** of each plan, right after its run (:func:`strict_floor`): read the log bytes, polars alone decodes the
  data blocks, pyarrow writes the merged row count with the footer stock Hudi requires (the keys' bloom filter and
  key range) — the physical minimum, with no merge;
* **hudi-rs** reading the source table: an independent engine decoding and merging the same logs.

Reported: medians (min, max) of the repeats, log rows/s, the ratios to the floor and to hudi-rs, bytes rewritten
(base files + links) of partial vs full, and the peak resident-set growth of every merge task against its slice.
The process CPU time of each run is recorded too (``cpu_ratios``, for information: on a shared machine other
processes' load moves wall-clock times much more than CPU times).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import evt_toolkit as evt
from bench.common import MIN_REPEAT, peak_memory, ratio, spread
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.compaction import executor as executor_mod
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.merge_task import MergeResult, MergeTask
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.format.bloom import (
    DEFAULT_BLOOM_CONFIG,
    MAX_RECORD_KEY,
    MIN_RECORD_KEY,
    BloomFilterBuilder,
    BloomFilterConfig,
    bloom_config_from_properties,
    utf16_less,
    utf16_min_max_arrow,
)
from evt_toolkit.format.log_content import DECODE_CHUNK_BYTES, MIN_CHUNK_BYTES, default_decode_threads
from evt_toolkit.format.logfile import BlockType, scan_log_blocks
from evt_toolkit.format.names import BaseFileName
from evt_toolkit.format.records import CompactionOperation
from evt_toolkit.storage.fs import TableStorage

BASE = 1_700_000_000_000
KEY = "_hoodie_record_key"
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


@dataclass(frozen=True)
class _FloorOp:
    """What the strict floor needs of one plan operation, gathered before the clock starts."""

    file_id: str
    base_path: str | None
    logs: tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...]  # (log path, ((content offset, length, schema)))
    records: int


def _floor_ops(t: evt.HudiTable, instant: str) -> list[_FloorOp]:
    """The plan's operations with every compacted data block's position and writer schema (from a header scan)."""
    plan = t.timeline.compaction_plan(next(i for i in t.timeline.instants if i.time == instant))
    out = []
    for op in plan.operations:
        p = op.partition_path
        logs = []
        records = 0
        for name in op.delta_files:
            rel = f"{p}/{name}" if p else name
            blocks = []
            with t.storage.open_input(rel) as f:
                for b in scan_log_blocks(f, t.storage.size(rel), rel):
                    if b.block_type is BlockType.AVRO_DATA and b.schema_json:
                        f.seek(b.content_offset + 4)
                        records += int.from_bytes(f.read(4), "big")
                        blocks.append((b.content_offset, b.content_length, b.schema_json))
            logs.append((rel, tuple(blocks)))
        base = op.data_file
        out.append(_FloorOp(op.file_id, (f"{p}/{base}" if p else base) if base else None, tuple(logs), records))
    return out


_LENGTH_FIELD = {"name": "__len", "type": {"type": "fixed", "name": "__len4", "size": 4}}


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _container_header(schema_json: str, sync: bytes) -> bytes:
    schema = json.loads(schema_json)
    schema["fields"] = [_LENGTH_FIELD, *schema["fields"]]
    text = json.dumps(schema).encode()
    meta = _zigzag(2) + _zigzag(11) + b"avro.schema" + _zigzag(len(text)) + text
    meta += _zigzag(10) + b"avro.codec" + _zigzag(4) + b"null" + _zigzag(0)
    return b"Obj\x01" + meta + sync


def floor_threads() -> int:
    """CPUs the compaction uses when it runs in this process (its tasks side by side, each decoding on its share)."""
    return default_decode_threads()


def floor_decode(
    storage: TableStorage,
    op: _FloorOp,
    threads: int = 1,
    pool: ThreadPoolExecutor | None = None,
    min_chunk: int = MIN_CHUNK_BYTES,
    as_decoder: bool = False,
) -> list[pa.Table]:
    """The strict floor's decoding of one operation's data blocks: polars alone, no cast (see :func:`strict_floor`).

    With a ``pool`` (or ``as_decoder``) the blocks go in containers of the size the compaction's decoder picks for
    ``threads`` threads; otherwise in one container per writer schema.
    """
    import polars as pl

    sync = b"\x5a" * 16
    by_schema: dict[str, list[list[bytes | memoryview]]] = {}
    total = 0
    for rel, blocks in op.logs:
        data = memoryview(storage.read_bytes(rel))
        for off, length, schema in blocks:
            count = int.from_bytes(data[off + 4 : off + 8], "big")
            body = data[off + 8 : off + length]
            by_schema.setdefault(schema, []).append([_zigzag(count), _zigzag(length - 8), body, sync])
            total += len(body)
    target = total + 1
    if pool is not None or as_decoder:
        target = min(DECODE_CHUNK_BYTES, max(min_chunk, -(-total // threads)))
    chunks: list[tuple[str, list[bytes | memoryview]]] = []
    for schema, blocks_of in by_schema.items():
        size = target  # a new container for each writer schema
        for parts in blocks_of:
            if size + len(parts[2]) > target:
                chunks.append((schema, []))
                size = 0
            chunks[-1][1].extend(parts)
            size += len(parts[2])

    def decode(chunk: tuple[str, list[bytes | memoryview]]) -> pa.Table:
        schema, parts = chunk
        return pl.read_avro(io.BytesIO(b"".join([_container_header(schema, sync), *parts]))).to_arrow()

    if pool is not None and len(chunks) > 1:
        return list(pool.map(decode, chunks))
    return [decode(c) for c in chunks]


def strict_floor(
    t: evt.HudiTable,
    ops: list[_FloorOp],
    rows_written: dict[str, int],
    out_dir: Path,
    threads: int = 1,
    bloom_config: BloomFilterConfig = DEFAULT_BLOOM_CONFIG,
    keep: bool = False,
) -> float:
    """Seconds to do the physical minimum of a compaction of ``ops``; no merge at all.

    Per operation: read each log file's bytes (one read per file); hand every data block to polars' Avro reader
    as object containers per writer schema (a Hudi block body is a valid Avro block once each record's 4-byte
    length is declared as a ``fixed(4)`` field; a container is built with one join); read the base file, if any,
    with pyarrow; write the *merged* row count — what the compaction wrote for this file group — as Parquet with
    the compaction's settings (snappy, statistics) into a file. No casts, no key handling, no sort, no commit.

    With ``threads`` > 1 the floor gets the cores the compaction gets, arranged as the compaction arranges them in
    one process (``executor.local_task_slots``): the operations run side by side on ``min(threads, operations)``
    workers, and each decodes on its share of the threads, its blocks in containers of the size the compaction's
    decoder picks (``DECODE_CHUNK_BYTES``, at least ``MIN_CHUNK_BYTES``, enough for every thread); polars and the
    Parquet writer release the GIL as they do for the compaction. With 1, the operations run one after another,
    one container per writer schema and file group, decoded on the calling thread. The files written go (unless
    ``keep``) when the clock has stopped; the footer is in each operation's last file.
    """
    storage = t.storage
    out_dir.mkdir(parents=True, exist_ok=True)
    workers = min(threads, len(ops)) if threads > 1 else 1
    per_op = max(1, threads // workers)
    # Pools are started before the clock.
    inner = ThreadPoolExecutor(max_workers=per_op) if per_op > 1 else None
    outer = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None

    def one(op: _FloorOp) -> None:
        tables = floor_decode(storage, op, per_op, inner, as_decoder=threads > 1)
        if op.base_path is not None:
            with storage.open_input(op.base_path) as f:
                tables.insert(0, pq.read_table(f))
        n = rows_written.get(op.file_id, 0)
        taken: list[pa.Table] = []
        for tbl in tables:
            if n <= 0:
                break
            taken.append(tbl.slice(0, n))
            n -= taken[-1].num_rows
        # The footer stock Hudi's writer puts in every base file: the record keys' bloom filter and key range.
        bloom = BloomFilterBuilder(bloom_config)
        lo: str | None = None
        hi: str | None = None
        for tbl in taken:
            keys = tbl.column(KEY)
            bloom.add_arrow(keys)
            bounds = utf16_min_max_arrow(keys)
            if bounds is not None:
                lo = bounds[0] if lo is None or utf16_less(bounds[0], lo) else lo
                hi = bounds[1] if hi is None or utf16_less(hi, bounds[1]) else hi
        for i, tbl in enumerate(taken):
            path = out_dir / f"{op.file_id}_{i}.parquet"
            with pq.ParquetWriter(path, tbl.schema, compression="snappy", write_statistics=True) as writer:
                writer.write_table(tbl)
                if i == len(taken) - 1 and lo is not None and hi is not None:
                    writer.add_key_value_metadata({**bloom.footer(), MIN_RECORD_KEY: lo, MAX_RECORD_KEY: hi})

    try:
        started = time.perf_counter()
        if outer is not None:
            list(outer.map(one, ops))
        else:
            for op in ops:
                one(op)
        elapsed = time.perf_counter() - started
    finally:
        for pool in (inner, outer):
            if pool is not None:
                pool.shutdown()
    if not keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    return elapsed


def _rows_written(t: evt.HudiTable, base_files: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rel in base_files:
        name = BaseFileName.parse(rel.rsplit("/", 1)[-1])
        with t.storage.open_input(rel) as f:
            rows = pq.ParquetFile(f).metadata.num_rows
        if name is not None:
            out[name.file_id] = out.get(name.file_id, 0) + rows
    return out


def _slice_input_bytes(storage: TableStorage, op: CompactionOperation) -> int:
    p = op.partition_path
    names = list(op.delta_files)
    if op.data_file:
        names.append(op.data_file)
    return sum(storage.size(f"{p}/{n}" if p else n) for n in names)


@contextlib.contextmanager
def task_memory_probe(records: list[dict[str, Any]]) -> Iterator[None]:
    """Wrap each in-process merge task: its peak resident-set growth against the bytes of its slice.

    The tasks run one at a time meanwhile: the peak of tasks running side by side cannot be told apart.
    """
    original = executor_mod.run_merge_task
    slots = executor_mod.local_task_slots

    def probed(task: MergeTask, *args: Any, **kwargs: Any) -> MergeResult:
        storage = TableStorage.from_uri(task.table_uri)
        slice_bytes = _slice_input_bytes(storage, task.operation)
        with peak_memory() as mem:
            out = original(task, *args, **kwargs)
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
    executor_mod.local_task_slots = lambda tasks: 1
    try:
        yield
    finally:
        executor_mod.run_merge_task = original
        executor_mod.local_task_slots = slots


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _hudi_rs_read(path: Path) -> Callable[[], int] | None:
    try:
        import hudi
    except ImportError:
        return None
    uri = str(path.resolve())

    def read() -> int:
        return sum(b.num_rows for b in hudi.HudiTableBuilder.from_base_uri(uri).build().read())

    return read


def run_b3(root: Path, rows: int = 200_000, n_batches: int = 10, repeat: int = MIN_REPEAT) -> dict[str, Any]:
    """B3 on tables under ``root`` (kept for B5 and the cluster run: ``root/src`` is the uncompacted table).

    Each repeat copies the source table twice, schedules an event-time (partial) and a full compaction, runs each
    and, right after each run, the strict floor of the same plan; then hudi-rs reads the source table (the logs
    the full plan compacts). Medians of the repeats make the ratios; min and max are reported beside them.
    """
    batches = _batches(rows, n_batches, keys=max(1000, rows // 4))
    shutil.rmtree(root / "src", ignore_errors=True)  # a table kept in the work folder by an earlier run: built again
    ingest_s, _ = _timed_call(lambda: _build(root / "src", batches))
    threshold = BASE + (n_batches // 2) * 60_000
    src_bytes = _tree_bytes(root / "src")
    hudi_read = _hudi_rs_read(root / "src")
    threads = floor_threads()
    kinds = ["partial", "full", "floor_partial", "floor_full", "hudi_rs"]
    if threads > 1:
        kinds += ["floor1_partial", "floor1_full"]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in times}
    last: dict[str, Any] = {}
    mem: dict[str, list[dict[str, Any]]] = {"partial": [], "full": []}
    link_mode = "copy"

    def scheduled(name: str) -> tuple[evt.HudiTable, Any]:
        nonlocal link_mode
        work = root / name
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(root / "src", work, symlinks=True)
        t = evt.HudiTable.open(work)
        if name == "partial":
            link_mode = "symlink" if t.storage.supports_symlink else "copy"
            strategy: Any = EventTimeBasedCompactionStrategy(threshold=threshold)
            c = schedule_compaction(t, strategy, link_mode=link_mode)
        else:
            c = schedule_compaction(t, UnBoundedCompactionStrategy())
        assert c is not None
        return t, c

    for _ in range(max(1, repeat)):
        for name in ("partial", "full"):
            t, c = scheduled(name)
            ops = _floor_ops(t, c.instant)
            bloom_config = bloom_config_from_properties(t.config.properties, str(t.path))
            gc.collect()
            cpu_start = time.process_time()
            res = run_compaction(t, c.instant)
            cpu[name].append(time.process_time() - cpu_start)
            times[name].append(res.duration_s)
            written = _rows_written(t, res.base_files_written)
            # The floor gets the cores the compaction decodes on; the one-thread floor is kept for information.
            for key, n_threads in (("floor", threads), ("floor1", 1)):
                if f"{key}_{name}" not in times:
                    continue
                gc.collect()
                cpu_start = time.process_time()
                times[f"{key}_{name}"].append(
                    strict_floor(t, ops, written, root / "floor_out", n_threads, bloom_config)
                )
                cpu[f"{key}_{name}"].append(time.process_time() - cpu_start)
            link_target_bytes = sum(t.storage.size(x.target_path) for x in c.links) if c.links else 0
            last[name] = {"res": res, "records": sum(o.records for o in ops), "link_target_bytes": link_target_bytes}
        if hudi_read is not None:
            cpu_start = time.process_time()
            seconds, _ = _timed_call(hudi_read)
            times["hudi_rs"].append(seconds)
            cpu["hudi_rs"].append(time.process_time() - cpu_start)
    for name in ("partial", "full"):  # memory per task: one more, untimed run of each, its tasks one at a time
        t, c = scheduled(name)
        gc.collect()
        with task_memory_probe(mem[name]):
            run_compaction(t, c.instant)
    med = {k: spread(v) for k, v in times.items() if v}
    cmed = {k: spread(v).median for k, v in cpu.items() if v}
    res_p, res_f = last["partial"]["res"], last["full"]["res"]
    rec_p, rec_f = last["partial"]["records"], last["full"]["records"]
    link_written = 0 if link_mode == "symlink" else last["partial"]["link_target_bytes"]
    partial_bytes = res_p.bytes_written + link_written

    def secs(k: str) -> dict[str, Any]:
        return med[k].to_dict() if k in med else {}

    hudi_s = med["hudi_rs"].median if "hudi_rs" in med else None
    return {
        "rows_ingested": rows,
        "batches": n_batches,
        "ingest_s": round(ingest_s, 3),
        "table_bytes": src_bytes,
        "threshold_ms": threshold,
        "link_mode": link_mode,
        "repeats": repeat,
        "partial": {
            **secs("partial"),
            "seconds": round(med["partial"].median, 3),
            "log_records_in": rec_p,
            "log_rows_per_s": round(rec_p / med["partial"].median),
            "rows_written": res_p.records_written,
            "base_bytes_written": res_p.bytes_written,
            "link_bytes_written": link_written,
            "bytes_rewritten": partial_bytes,
            "bytes_rewritten_if_links_copied": res_p.bytes_written + last["partial"]["link_target_bytes"],
            "log_files_compacted": res_p.log_files_compacted,
            "log_bytes_compacted": res_p.log_bytes_compacted,
            "links": res_p.links,
        },
        "full": {
            **secs("full"),
            "seconds": round(med["full"].median, 3),
            "log_records_in": rec_f,
            "log_rows_per_s": round(rec_f / med["full"].median),
            "rows_written": res_f.records_written,
            "bytes_rewritten": res_f.bytes_written,
            "log_files_compacted": res_f.log_files_compacted,
            "log_bytes_compacted": res_f.log_bytes_compacted,
        },
        "floor": {
            "partial_plan": secs("floor_partial"),
            "full_plan": secs("floor_full"),
            "partial_plan_s": round(med["floor_partial"].median, 3),
            "full_plan_s": round(med["floor_full"].median, 3),
            "rows_per_s": round(rec_f / med["floor_full"].median),
            "threads": threads,
            "one_thread": {"partial_plan": secs("floor1_partial"), "full_plan": secs("floor1_full")}
            if threads > 1
            else None,
            "note": "strict: read each log's bytes, polars alone decodes the data blocks, pyarrow writes the merged "
            "row count as snappy Parquet with the footer stock Hudi requires (the record keys' bloom filter and key "
            "range, built by the compaction's own builder); no merge, cast or sort. "
            + (
                f"It gets the {threads} CPUs the compaction gets here, arranged as the compaction's tasks are: the "
                f"file groups {threads} at a time side by side, each decoding its blocks in object containers of the "
                "size the compaction's decoder picks; the one-thread floor (file groups one after another, one "
                "container per writer schema and file group) is shown beside it"
                if threads > 1
                else "The blocks go to polars as one object container per writer schema and file group"
            ),
        },
        "hudi_rs_read": {
            **secs("hudi_rs"),
            "log_rows_per_s": round(rec_f / hudi_s) if hudi_s else None,
            "note": "hudi-rs snapshot read of the source table: decodes and merges the logs the full plan compacts",
        },
        "ratios": {
            "partial_s / floor_s": ratio(med["partial"].median, med["floor_partial"].median),
            "full_s / floor_s": ratio(med["full"].median, med["floor_full"].median),
            "full_s / hudi_rs_read_s": ratio(med["full"].median, hudi_s),
            "partial_bytes / full_bytes": round(partial_bytes / res_f.bytes_written, 3),
            "partial_s / full_s": ratio(med["partial"].median, med["full"].median, 3),
            **(
                {
                    "partial_s / one_thread_floor_s": ratio(med["partial"].median, med["floor1_partial"].median),
                    "full_s / one_thread_floor_s": ratio(med["full"].median, med["floor1_full"].median),
                }
                if threads > 1
                else {}
            ),
        },
        "cpu_ratios": {
            "partial_cpu_s / floor_cpu_s": ratio(cmed["partial"], cmed["floor_partial"]),
            "full_cpu_s / floor_cpu_s": ratio(cmed["full"], cmed["floor_full"]),
            "full_cpu_s / hudi_rs_read_cpu_s": ratio(cmed["full"], cmed.get("hudi_rs")),
        },
        "cpu_s": {k: round(v, 3) for k, v in cmed.items()},
        "task_memory": mem,
        "target": {"max_ratio_to_floor": 1.3},
    }


def _timed_call(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_compaction", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=MIN_REPEAT)
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="evt-bench-compaction-"))
    try:
        out = run_b3(root, args.rows, args.batches, args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
