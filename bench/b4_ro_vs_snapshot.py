"""B4 — events ≤ T through the read-optimized view vs the snapshot view of the same table, proven equal.

An event stream (every event its own record key, 5 % of events late by up to two micro-batches) is ingested into a
Merge-On-Read table, then compacted by event time at T (middle of the stream; links by symlink where the file
system has them). Every event ≤ T is then in a base file (the prefix rule compacts every log holding one), so

    RO filtered to ev ≤ T  ==  snapshot filtered to ev ≤ T

and the RO read skips the log merge. Both are timed (median of repeats, each a fresh read and filter) and the two
results are compared row by row after sorting by key. Run: ``python -m bench.b4_ro_vs_snapshot``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import evt_toolkit as evt
from bench.bench_compaction import BASE
from bench.common import measure, ratio, timed
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction

USER_COLUMNS = ["id", "region", "ts", "ev", "v"]


def event_batches(rows: int, n_batches: int, seed: int = 11) -> list[pa.Table]:
    """``rows`` events with unique ids over ``n_batches`` one-minute micro-batches, 5 % late."""
    rng = np.random.default_rng(seed)
    per = max(1, rows // n_batches)
    out = []
    for b in range(n_batches):
        ids = np.arange(b * per, (b + 1) * per, dtype=np.int64)
        ev = BASE + b * 60_000 + rng.integers(0, 60_000, per)
        late = rng.random(per) < 0.05
        ev = np.where(late, ev - rng.integers(0, 2 * 60_000, per), ev)
        out.append(
            pa.table(
                {
                    "id": pa.array(ids),
                    "region": pa.array([f"r{i}" for i in (ids % 4)]),
                    "ts": pa.array(np.full(per, b, dtype=np.int64)),
                    "ev": pa.array(ev.astype(np.int64)),
                    "v": pa.array(rng.random(per)),
                }
            )
        )
    return out


def query_le(t: evt.HudiTable, query_type: str, threshold: int) -> pa.Table:
    """Events ≤ T, user columns, from a fresh read."""
    tbl = evt.HudiTable.open(t.storage.uri).read(query_type, columns=USER_COLUMNS)
    return tbl.filter(pc.less_equal(tbl["ev"], threshold))


def run(workdir: Path, rows: int = 200_000, n_batches: int = 10, repeat: int = 3) -> dict[str, Any]:
    path = workdir / "b4"
    shutil.rmtree(path, ignore_errors=True)  # a table kept in the work folder by an earlier run: built again
    t = evt.HudiTable.create(
        path, "events", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=4
    )
    ingest_s, _ = timed(lambda: [t.write(b) for b in event_batches(rows, n_batches)])
    threshold = BASE + (n_batches // 2) * 60_000
    link_mode = "symlink" if t.storage.supports_symlink else "copy"
    c = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=threshold), link_mode=link_mode)
    assert c is not None
    res = run_compaction(t, c.instant)
    ro = measure(lambda: query_le(t, "read_optimized", threshold), repeat=repeat, warmup=1)
    snap = measure(lambda: query_le(t, "snapshot", threshold), repeat=repeat, warmup=1)
    a = ro.result.sort_by("id")
    b = snap.result.sort_by("id")
    equal = a.num_rows == b.num_rows and a.equals(b)
    expected = sum(int(pc.sum(pc.less_equal(x["ev"], threshold)).as_py() or 0) for x in event_batches(rows, n_batches))
    return {
        "rows_ingested": rows,
        "ingest_s": round(ingest_s, 3),
        "threshold_ms": threshold,
        "link_mode": link_mode,
        "compaction_s": round(res.duration_s, 3),
        "log_files_compacted": res.log_files_compacted,
        "links": res.links,
        "ro": {**ro.to_dict(), "rows": a.num_rows},
        "snapshot": {**snap.to_dict(), "rows": b.num_rows},
        "results_equal": equal,
        "rows_expected": expected,
        "ratios": {"snapshot_s / ro_s": ratio(snap.median_s, ro.median_s, 2)},
        "cpu_ratios": {
            "snapshot_cpu_s / ro_cpu_s": ratio(snap.to_dict().get("cpu_median_s"), ro.to_dict().get("cpu_median_s"), 2)
        },
        "target": {"ro_speedup_vs_snapshot_min": 3.0},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.b4_ro_vs_snapshot", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="evt-b4-"))
    try:
        print(json.dumps(run(work, args.rows, args.batches, args.repeat), indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
