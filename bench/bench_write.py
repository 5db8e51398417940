"""Write and snapshot-read benchmark on a synthetic Merge-On-Read table (``python -m bench.bench_write``).

One run measures, on the same machine and the same data:

* write throughput (rows/s) of the pure-Python path (``HudiTable.write(arrow_table)``) and, when pyspark is
  importable, of the Spark path (``HudiTable.write(spark_dataframe, spark=session)``) — each into its own table;
* snapshot-read time of the pure-Python table with our reader (``HudiTable.read()``), our Spark data source
  (``spark.read.format("hudi_evt")``) and hudi-rs (``hudi.HudiTableBuilder...read()``).

Results are reported as absolute numbers and as ratios within the run (absolute numbers depend on the machine);
they are written as JSON and Markdown into ``--out`` with the machine's cores, memory and library versions. Nothing is
asserted: a missing engine is recorded as skipped, with the reason.

Example:
    $ python -m bench.bench_write --rows 1000000 --out bench/results
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa

from evt_toolkit.api import HudiTable
from evt_toolkit.demo import synthetic as syn


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """Cores, memory, OS and the versions of the libraries that matter here."""
    mem_bytes: int | None = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        mem_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu_model,
        "memory_gib": round(mem_bytes / 2**30, 1) if mem_bytes else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "pyspark": _version("pyspark"),
        "hudi": _version("hudi"),
        "fastavro": _version("fastavro"),
        "evt_toolkit": _version("evt-toolkit"),
    }


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _batches(args: argparse.Namespace) -> list[tuple[pa.Table, pa.Table]]:
    # No precombine here: every generated event goes to the writer, which de-duplicates each call by the ordering
    # field as Hudi does, and event-time merging orders an upsert and a delete of one key across the two calls.
    gen = syn.synthetic_batches(
        args.rows,
        args.keys or max(1, args.rows // 2),
        args.batches,
        late_fraction=0.1,
        delete_fraction=0.01,
        partitions=args.partitions,
        seed=args.seed,
    )
    return [(b.upserts, b.deletes) for b in gen]


def _create(path: Path, buckets: int) -> HudiTable:
    return HudiTable.create(
        str(path),
        "bench",
        list(syn.RECORD_KEY),
        partition_by=syn.PARTITION_FIELD,
        ordering_field=syn.ORDERING_FIELD,
        event_time_field=syn.EVENT_TIME_FIELD,
        buckets=buckets,
        merge_mode="event_time",
    )


def bench_python_write(path: Path, batches: list[tuple[pa.Table, pa.Table]], buckets: int) -> dict[str, Any]:
    table = _create(path, buckets)
    rows = 0
    start = time.perf_counter()
    for ups, dels in batches:
        if ups.num_rows:
            table.write(ups, operation="upsert")
        if dels.num_rows:
            table.write(dels, operation="delete")
        rows += ups.num_rows + dels.num_rows
    seconds = time.perf_counter() - start
    return {"status": "ok", "rows": rows, "seconds": round(seconds, 3), "rows_per_s": round(rows / seconds, 1)}


def bench_spark_write(spark: Any, path: Path, batches: list[tuple[pa.Table, pa.Table]], buckets: int) -> dict[str, Any]:
    table = _create(path, buckets)
    rows = 0
    to_df = 0.0
    start = time.perf_counter()
    for ups, dels in batches:
        for data, op in ((ups, "upsert"), (dels, "delete")):
            if not data.num_rows:
                continue
            t0 = time.perf_counter()
            df = spark.createDataFrame(data.to_pandas())
            to_df += time.perf_counter() - t0
            table.write(df, operation=op, spark=spark)
            rows += data.num_rows
    seconds = time.perf_counter() - start
    return {
        "status": "ok",
        "rows": rows,
        "seconds": round(seconds, 3),
        "rows_per_s": round(rows / seconds, 1),
        "dataframe_creation_seconds": round(to_df, 3),
        "note": "timed from Spark DataFrames (creation included); HudiTable.write decides where the file-group "
        "tasks run",
    }


def _best_of(repeat: int, fn: Callable[[], int]) -> dict[str, Any]:
    times: list[float] = []
    rows = 0
    for _ in range(repeat):
        seconds, rows = _timed(fn)
        times.append(round(seconds, 3))
    return {"status": "ok", "rows": rows, "seconds": min(times), "all_seconds": times}


def bench_reads(path: Path, spark: Any, repeat: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}

    def ours() -> int:
        return HudiTable.open(path).read().num_rows

    results["python"] = _best_of(repeat, ours)

    if spark is None:
        results["spark"] = {"status": "skipped", "note": "pyspark not importable or --no-spark"}
    else:
        try:

            def spark_read() -> int:
                df = spark.read.format("hudi_evt").load(str(path.resolve()))
                return int(df.toArrow().num_rows)

            results["spark"] = _best_of(repeat, spark_read)
        except Exception as exc:  # the data source may not exist yet: record why and go on
            results["spark"] = {"status": "skipped", "note": f"{type(exc).__name__}: {str(exc)[:300]}"}

    try:
        import hudi

        def hudi_rs() -> int:
            t = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
            return pa.Table.from_batches(t.read()).num_rows

        results["hudi_rs"] = _best_of(repeat, hudi_rs)
    except ImportError:
        results["hudi_rs"] = {"status": "skipped", "note": "hudi (hudi-rs) not installed"}
    except Exception as exc:
        results["hudi_rs"] = {"status": "failed", "note": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return results


def _ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> float | None:
    if a.get("status") != "ok" or b.get("status") != "ok" or not b.get(key):
        return None
    return round(float(a[key]) / float(b[key]), 3)


def to_markdown(result: dict[str, Any]) -> str:
    """The run as a Markdown report."""
    m = result["machine"]
    w = result["write"]
    r = result["read"]
    lines = [
        f"# Write / snapshot-read benchmark — {result['started']}",
        "",
        f"Machine: {m['cores']} cores ({m['usable_cores']} usable), {m['memory_gib']} GiB, {m['cpu']}, "
        f"{m['platform']}. Python {m['python']}, pyarrow {m['pyarrow']}, pyspark {m['pyspark']}, hudi-rs "
        f"{m['hudi']}, fastavro {m['fastavro']}.",
        "",
        f"Data: synthetic, {result['params']['rows']:,} events over {result['params']['batches']} micro-batches, "
        f"{result['params']['partitions']} partitions × {result['params']['buckets']} buckets; "
        f"{result['data']['rows_written']:,} rows written (event-time merge mode); "
        f"snapshot {result['data']['snapshot_rows']:,} records.",
        "",
        "## Write",
        "",
        "| path | rows | seconds | rows/s | note |",
        "|---|---:|---:|---:|---|",
    ]
    for name, v in w.items():
        if v.get("status") == "ok":
            lines.append(
                f"| {name} | {v['rows']:,} | {v['seconds']:.2f} | {v['rows_per_s']:,.0f} | {v.get('note', '')} |"
            )
        else:
            lines.append(f"| {name} | | | | {v.get('status')}: {v.get('note', '')} |")
    lines += ["", "## Snapshot read (best of repeats)", "", "| reader | rows | seconds | note |", "|---|---:|---:|---|"]
    for name, v in r.items():
        if v.get("status") == "ok":
            lines.append(f"| {name} | {v['rows']:,} | {v['seconds']:.2f} | all: {v['all_seconds']} |")
        else:
            lines.append(f"| {name} | | | {v.get('status')}: {v.get('note', '')} |")
    lines += ["", "## Ratios (same run)", ""]
    for k, v in result["ratios"].items():
        lines.append(f"- `{k}`: {'n/a' if v is None else v}")
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_write", description=__doc__.split("\n", 1)[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="synthetic events (default 1,000,000)")
    p.add_argument("--keys", type=int, help="key space (default rows / 2)")
    p.add_argument("--batches", type=int, default=10, help="micro-batches (default 10)")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--buckets", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=2, help="snapshot reads per reader; the best is reported")
    p.add_argument("--no-spark", action="store_true", help="skip the Spark write and read")
    p.add_argument("--workdir", help="where the tables go (default: a temporary folder, removed afterwards)")
    p.add_argument("--out", default="bench/results", help="results folder (default bench/results)")
    args = p.parse_args(argv)

    started = dt.datetime.now(dt.UTC)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="evt-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"tables in {work}", file=sys.stderr)

    gen_seconds, batches = _timed(lambda: _batches(args))
    rows_written = sum(u.num_rows + d.num_rows for u, d in batches)
    print(f"generated {rows_written:,} rows in {gen_seconds:.1f}s", file=sys.stderr)

    write: dict[str, dict[str, Any]] = {}
    write["python"] = bench_python_write(work / "python", batches, args.buckets)
    print(f"python write: {write['python']}", file=sys.stderr)

    spark = None
    if args.no_spark:
        write["spark"] = {"status": "skipped", "note": "--no-spark"}
    else:
        try:
            from evt_toolkit.spark.session import get_or_create_session

            spark = get_or_create_session()
        except ImportError as exc:
            write["spark"] = {"status": "skipped", "note": f"pyspark not importable: {exc}"}
        if spark is not None:
            try:
                write["spark"] = bench_spark_write(spark, work / "spark", batches, args.buckets)
            except Exception as exc:
                traceback.print_exc()
                write["spark"] = {"status": "failed", "note": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(f"spark write: {write['spark']}", file=sys.stderr)

    read = bench_reads(work / "python", spark, args.repeat)
    print(f"reads: {read}", file=sys.stderr)

    ratios = {
        "spark_write_rows_per_s / python_write_rows_per_s": _ratio(
            write.get("spark", {}), write["python"], "rows_per_s"
        ),
        "python_read_s / hudi_rs_read_s": _ratio(read["python"], read["hudi_rs"], "seconds"),
        "spark_read_s / hudi_rs_read_s": _ratio(read["spark"], read["hudi_rs"], "seconds"),
        "spark_read_s / python_read_s": _ratio(read["spark"], read["python"], "seconds"),
    }
    snapshot_rows = read["python"]["rows"]
    result = {
        "benchmark": "bench_write",
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "params": {k: v for k, v in vars(args).items() if k not in ("out", "workdir")},
        "data": {
            "rows_written": rows_written,
            "generation_seconds": round(gen_seconds, 3),
            "snapshot_rows": snapshot_rows,
        },
        "write": write,
        "read": read,
        "ratios": ratios,
        "readers_agree_on_row_count": len({v["rows"] for v in read.values() if v.get("status") == "ok"}) == 1,
    }
    if spark is not None:
        spark.stop()
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    for name in (f"bench_write_{stamp}", "bench_write_latest"):
        (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / f"{name}.md").write_text(to_markdown(result))
    print(to_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
