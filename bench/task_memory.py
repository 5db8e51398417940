"""B3m — peak memory of one compaction task, in a fresh process, on single-slice tables of a given size.

``python -m bench.task_memory --sizes 100,500 [--budgets default,64] [--limit-as-mib 2048] [--repeat 3]``

For each size S (MiB of log bytes in one file slice: one file group, no partitioning, B3's data with every key
updated about twice, data blocks of at most 16 MiB as ``hoodie.logfile.data.block.max.size`` allows), one table is
ingested and a full compaction scheduled. Then, for each budget (``default``: no ``hoodie.memory.compaction.max.size``,
the task's own default; a number: that many MiB), a **fresh Python process** (optionally with its address space
limited by ``resource.setrlimit(RLIMIT_AS)``, e.g. a 2 GiB worker) imports the libraries, warms polars' decoder up
on a tiny file, resets its resident-set high-water mark (``/proc/self/clear_refs``) and runs the one merge task of
the plan (``run_merge_task``: reads, merges and writes the new base file; the driver's commit is not part of a task).
Reported per run: the growth of the resident set's peak over the resident set at the start of the task, against the
slice's bytes and against the budget, the task's seconds, and whether it spilled (and into how many partitions).
Targets (issue 15): growth ≤ 1.5x the slice's bytes, and ≤ the budget when one is configured below that.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 1 << 20
BLOCK_MAX = 16 * MIB


def _batch(rows: int, keys: int, b: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed + b)
    ids = rng.integers(0, keys, rows)
    base = 1_700_000_000_000
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array(np.full(rows, b, dtype=np.int64)),
            "ev": pa.array((base + b * 60_000 + rng.integers(0, 60_000, rows)).astype(np.int64)),
            "v": pa.array(rng.random(rows)),
            "name": pa.array([f"name-{i % 9973:06d}" for i in ids.tolist()]),
            "city": pa.array([f"city-{i % 97}" for i in ids.tolist()]),
        }
    )


def build(path: Path, mib: int) -> dict[str, Any]:
    """A one-file-group table whose single slice holds about ``mib`` MiB of logs; a full compaction scheduled."""
    import evt_toolkit as evt
    from evt_toolkit.compaction import UnBoundedCompactionStrategy
    from evt_toolkit.compaction.schedule import schedule_compaction

    opts = {"hoodie.logfile.data.block.max.size": str(BLOCK_MAX)}
    started = time.perf_counter()
    t = evt.HudiTable.create(path, "mem", "id", ordering_field="ts", event_time_field="ev", buckets=1)
    # Batches of about 8 MiB of log each (a log file per batch), until the slice holds ``mib`` MiB.
    probe_rows = 20_000
    t.write(_batch(probe_rows, probe_rows, 0, 1), options=opts)
    per_row = max(1.0, _log_bytes(t) / probe_rows)
    per = max(1000, int(8 * MIB / per_row))
    total_rows = max(per, int(mib * MIB / per_row))
    keys = max(1, total_rows // 2)
    rows, b = probe_rows, 0
    while _log_bytes(t) < mib * MIB:
        b += 1
        t.write(_batch(per, keys, b, 1), options=opts)
        rows += per
    c = schedule_compaction(t, UnBoundedCompactionStrategy())
    assert c is not None
    return {
        "instant": c.instant,
        "rows": rows,
        "keys": keys,
        "slice_bytes": _log_bytes(t),
        "ingest_s": round(time.perf_counter() - started, 1),
    }


def _log_bytes(t: Any) -> int:
    return sum(f.size for f in t.storage.list_files("") if ".log." in f.path and not f.path.startswith(".hoodie"))


def child(path: str, instant: str, budget: int | None, limit_as: int | None) -> dict[str, Any]:
    """One merge task in this (fresh) process; returns its peak resident-set growth."""
    if limit_as:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    import gc
    import io

    import polars as pl

    import evt_toolkit as evt
    from bench.common import peak_memory
    from evt_toolkit.compaction import bounded_merge
    from evt_toolkit.compaction.merge_task import MergeTask, run_merge_task
    from evt_toolkit.compaction.plan_files import plan_file
    from evt_toolkit.format.names import INFLIGHT
    from evt_toolkit.read.plan import ReadSpec

    buf = io.BytesIO()
    pl.DataFrame({"a": [1, 2]}).write_avro(buf)
    pl.read_avro(io.BytesIO(buf.getvalue()))  # polars' thread pool and decoder: part of any worker, not of a task
    spills: list[int] = []
    original = bounded_merge._Spill

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, root: str | None, partitions: int, *args: Any) -> None:
            super().__init__(root, partitions, *args)
            spills.append(partitions)

    bounded_merge._Spill = Recording  # type: ignore[misc, assignment]
    t = evt.HudiTable.open(path)
    inst = next(i for i in t.timeline.instants if i.time == instant)
    plan = t.timeline.compaction_plan(inst)
    op = plan.operations[0]
    # The plan goes inflight as a run's driver puts it before its tasks start: a task writes its outputs only while
    # its compaction is running (evt_toolkit.write.fence.require_compaction_running).
    if not t.storage.exists(plan_file(t, instant, INFLIGHT)):
        t.storage.write_bytes_atomic(plan_file(t, instant, INFLIGHT), b"")
    cfg = t.config
    task = MergeTask(
        t.storage.uri,
        instant,
        0,
        op,
        ReadSpec.of(t),
        event_time_field=cfg.event_time_field,
        event_time_unit=cfg.event_time_unit,
        memory_budget=budget,
    )
    gc.collect()
    started = time.perf_counter()
    with peak_memory() as mem:
        res = run_merge_task(task)
    return {
        "seconds": round(time.perf_counter() - started, 3),
        "peak_rss_growth_bytes": mem.growth,
        "rss_start_bytes": mem.rss_start,
        "rss_peak_bytes": mem.rss_peak,
        "method": mem.method,
        "rows_written": res.num_writes,
        "log_records": res.total_log_records,
        "spilled_partitions": spills[0] if spills else 0,
    }


#: The worker environment recommended in bench/README.md: polars' jemalloc hands freed pages back at once.
WORKER_ENV = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}


def run(
    root: Path,
    sizes: list[int],
    budgets: list[int | None],
    limit_as: int | None,
    repeat: int,
    worker_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Build each table (kept under ``root``) and measure each budget in fresh processes."""
    worker_env = WORKER_ENV if worker_env is None else worker_env
    out: dict[str, Any] = {"limit_as_bytes": limit_as, "repeats": repeat, "worker_env": worker_env, "tables": []}
    for mib in sizes:
        path = root / f"slice_{mib}mib"
        meta_file = root / f"slice_{mib}mib.json"
        if meta_file.exists() and path.exists():
            meta = json.loads(meta_file.read_text())
        else:
            shutil.rmtree(path, ignore_errors=True)
            meta = build(path, mib)
            meta_file.write_text(json.dumps(meta))
        entry: dict[str, Any] = {"size_mib": mib, **meta, "runs": []}
        for budget in budgets:
            runs: list[dict[str, Any]] = []
            for _ in range(repeat):
                cmd = [sys.executable, "-m", "bench.task_memory", "--child", str(path), meta["instant"]]
                cmd += ["--budget", str(budget) if budget is not None else "default"]
                if limit_as:
                    cmd += ["--limit-as", str(limit_as)]
                proc = subprocess.run(
                    cmd,
                    capture_output=True,
                    text=True,
                    cwd=Path(__file__).resolve().parent.parent,
                    check=False,
                    env={**os.environ, **worker_env},
                )
                if proc.returncode != 0:
                    runs.append({"failed": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]})
                    continue
                runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            ok = [r for r in runs if "failed" not in r]
            growth = sorted(r["peak_rss_growth_bytes"] for r in ok)
            med = growth[len(growth) // 2] if growth else None
            slice_bytes = meta["slice_bytes"]
            limit = 1.5 * slice_bytes if budget is None else min(1.5 * slice_bytes, budget)
            entry["runs"].append(
                {
                    "budget_bytes": budget,
                    "runs": runs,
                    "median_growth_bytes": med,
                    "min_growth_bytes": growth[0] if growth else None,
                    "max_growth_bytes": growth[-1] if growth else None,
                    "growth / slice_bytes": round(med / slice_bytes, 3) if med is not None else None,
                    "growth / budget": round(med / budget, 3) if med is not None and budget else None,
                    "median_seconds": sorted(r["seconds"] for r in ok)[len(ok) // 2] if ok else None,
                    "spilled_partitions": ok[0]["spilled_partitions"] if ok else None,
                    "target_bytes": int(limit),
                    "met": med is not None and med <= limit and len(ok) == len(runs),
                }
            )
        out["tables"].append(entry)
    return out


def to_markdown(res: dict[str, Any]) -> str:
    lim = res["limit_as_bytes"]
    lines = [
        "# B3m — peak memory of one compaction task (fresh process)",
        "",
        f"Worker environment: {res['worker_env'] or 'plain'}. Address-space limit: "
        f"{lim // MIB if lim else 'none'} MiB; median of {res['repeats']} fresh processes per row"
        " (min–max in brackets). Target: growth ≤ 1.5× the slice's bytes, and ≤ the budget when one is set below that.",
        "",
        "| slice | rows ingested | budget | peak growth | / slice bytes | / budget | spilled into | task s | met |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in res["tables"]:
        for r in t["runs"]:
            b = r["budget_bytes"]
            g = r["median_growth_bytes"]
            lines.append(
                f"| {t['slice_bytes'] / MIB:.0f} MiB | {t['rows']:,} | {'default' if b is None else f'{b // MIB} MiB'} "
                f"| {g / MIB if g is not None else float('nan'):.0f} MiB "
                f"[{(r['min_growth_bytes'] or 0) / MIB:.0f}–{(r['max_growth_bytes'] or 0) / MIB:.0f}] "
                f"| {r['growth / slice_bytes']} | {r['growth / budget'] or '–'} "
                f"| {r['spilled_partitions'] or '–'} | {r['median_seconds']} | {'yes' if r['met'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.task_memory", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default="100", help="slice sizes in MiB, comma separated (e.g. 100,500,1024)")
    ap.add_argument("--budgets", default="default,64", help="'default' and/or budgets in MiB, comma separated")
    ap.add_argument("--limit-as-mib", type=int, default=0, help="address-space limit of each task process")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None, help="keep (and reuse) the tables here")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plain-env", action="store_true", help="run the task processes without WORKER_ENV")
    ap.add_argument("--name", default="task_memory", help="result file stem")
    ap.add_argument("--child", nargs=2, metavar=("TABLE", "INSTANT"), help=argparse.SUPPRESS)
    ap.add_argument("--budget", default="default", help=argparse.SUPPRESS)
    ap.add_argument("--limit-as", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        budget = None if args.budget == "default" else int(args.budget)
        print(json.dumps(child(args.child[0], args.child[1], budget, args.limit_as or None)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    budgets = [None if b == "default" else int(b) * MIB for b in args.budgets.split(",") if b]
    root = args.workdir or Path(tempfile.mkdtemp(prefix="evt-task-memory-"))
    try:
        res = run(root, sizes, budgets, args.limit_as_mib * MIB or None, args.repeat, {} if args.plain_env else None)
    finally:
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    from bench.common import machine_info

    res["machine"] = machine_info()
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.name
    (args.out / f"{stem}.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    (args.out / f"{stem}.md").write_text(to_markdown(res))
    print(to_markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
