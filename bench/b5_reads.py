"""B5 — snapshot reads of one Merge-On-Read table: our Spark data source and pure-Python reader vs hudi-rs.

Each reader materializes every row of the snapshot as Arrow (median of repeats):

* ``python``: ``HudiTable.read()``;
* ``spark``: ``spark.read.format("hudi_evt").load(path).toArrow()`` on the session passed in (``local[2]``);
* ``hudi_rs``: ``hudi.HudiTableBuilder.from_base_uri(path).build().read()``;
* ``spark_floor`` (for information): what the Spark read costs when reading costs nothing -- a Python data source
  whose ``read()`` hands Spark the same rows, already in Spark's Arrow schema, memory-mapped from Arrow IPC files
  written before the clock starts, in as many partitions as ``hudi_evt`` plans. Everything above it is ours
  (planning, the slice reads, their Arrow batches); everything below it is Spark's (planning in its Python workers,
  task launch, Arrow to rows and back for ``toArrow()``).

The answers are compared on the user columns after sorting by key (``equal``). Run: ``python -m bench.b5_reads``
(builds the B3 source table first).

Every reader reports its wall time (median, min, max of the repeats), this process's CPU time and the CPU time of
the whole process tree (this process, plus the Spark JVM and its Python workers for ``spark``: Spark works in other
processes, so only the tree's CPU compares with hudi-rs's). On a shared machine the CPU times move less with the
load than the wall times do; verdicts are taken on the wall-time medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import evt_toolkit as evt
from bench.common import measure, ratio, spread

USER_COLUMNS = ["id", "region", "ts", "ev", "v", "name"]
#: Targets (issue 15): the pure-Python read at most hudi-rs's time, the Spark read at most 1.5x it.
TARGETS = {"python_s / hudi_rs_s": 1.0, "spark_s / hudi_rs_s": 1.5}


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out.setdefault(ppid, []).append(int(name))
    return out


def tree_cpu_s() -> float | None:
    """CPU seconds (user + system) of this process and every live descendant, with the children they reaped.

    Linux only (``/proc``); ``None`` elsewhere. A descendant that exited unreaped between two readings is missed,
    which Spark's reused Python workers do not do.
    """
    if not os.path.isdir("/proc/self"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    kids = _children()
    total = time.process_time()
    todo = list(kids.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, []))
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15]) / tick  # utime, stime, cutime, cstime
    return total


def _with_tree_cpu(fn: Callable[[], pa.Table], record: list[float]) -> Callable[[], pa.Table]:
    def run() -> pa.Table:
        start = tree_cpu_s()
        out = fn()
        end = tree_cpu_s()
        if start is not None and end is not None:
            record.append(end - start)
        return out

    return run


def _plain(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _norm(t: pa.Table) -> pa.Table:
    """User columns, dictionaries decoded, sorted by key: the form in which readers are compared."""
    cols = [c for c in USER_COLUMNS if c in t.column_names]
    out = t.select(cols)
    out = out.cast(pa.schema([pa.field(c, _plain(out.schema.field(c).type)) for c in cols]))
    return out.combine_chunks().sort_by("id")


def _spark_floor(spark: Any, uri: str, workdir: Path) -> Callable[[], pa.Table]:
    """The ``spark_floor`` reader (see the module docstring); its files are written here, untimed."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from evt_toolkit.spark.types import batch_schema_for

    df = spark.read.format("hudi_evt").load(uri)
    parts = df.rdd.getNumPartitions()
    rows = evt.HudiTable.open(uri).read().cast(batch_schema_for(df.schema))
    step = -(-rows.num_rows // parts)
    files = []
    for i in range(parts):
        files.append(str(workdir / f"part-{i}.arrow"))
        with pa.OSFile(files[-1], "wb") as f, pa.ipc.new_file(f, rows.schema) as w:
            w.write_table(rows.slice(i * step, step))
    schema = df.schema

    # Defined here so that Spark pickles them by value (the bench package need not be importable by workers).
    class FloorReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(f) for f in files]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            with pa.memory_map(partition.value) as m:
                yield from pa.ipc.open_file(m).read_all().to_batches()

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "b5_spark_floor"

        def schema(self) -> Any:
            return schema

        def reader(self, schema: Any) -> DataSourceReader:
            return FloorReader()

    spark.dataSource.register(FloorSource)
    return lambda: spark.read.format("b5_spark_floor").load().toArrow()


def _lazy(make: Callable[[], Callable[[], pa.Table]]) -> Callable[[], pa.Table]:
    """A reader set up on its first (untimed warm-up) call, so its setup runs after the readers timed before it."""
    made: list[Callable[[], pa.Table]] = []

    def call() -> pa.Table:
        if not made:
            made.append(make())
        return made[0]()

    return call


def readers(path: Path, spark: Any, workdir: Path | None = None) -> dict[str, Callable[[], pa.Table]]:
    uri = str(path.resolve())
    out: dict[str, Callable[[], pa.Table]] = {"python": lambda: evt.HudiTable.open(uri).read()}
    if spark is not None:
        out["spark"] = lambda: spark.read.format("hudi_evt").load(uri).toArrow()
        if workdir is not None:
            out["spark_floor"] = _lazy(lambda: _spark_floor(spark, uri, workdir))
    try:
        import hudi

        out["hudi_rs"] = lambda: pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(uri).build().read())
    except ImportError:
        pass
    return out


def run(path: Path, spark: Any = None, repeat: int = 3) -> dict[str, Any]:
    """Time the readers on the table at ``path``."""
    results: dict[str, Any] = {}
    answers: dict[str, pa.Table] = {}
    workdir = Path(tempfile.mkdtemp(prefix="evt-b5-floor-"))
    try:
        todo = readers(path, spark, workdir)
        _time_readers(todo, repeat, results, answers)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ref = answers.get("hudi_rs") or answers.get("python")
    equal = {name: bool(ref is not None and a.equals(ref)) for name, a in answers.items()}
    rs = results.get("hudi_rs", {}).get("median_s")
    rs_tree = results.get("hudi_rs", {}).get("tree_cpu_median_s")
    floor = results.get("spark_floor", {}).get("median_s")
    return {
        "readers": results,
        "equal_to_hudi_rs": equal,
        "ratios": {
            "python_s / hudi_rs_s": ratio(results.get("python", {}).get("median_s"), rs),
            "spark_s / hudi_rs_s": ratio(results.get("spark", {}).get("median_s"), rs),
            # For information: the part of the Spark read that is Spark's, and the part that is ours.
            "spark_floor_s / hudi_rs_s": ratio(floor, rs),
            "spark_s / spark_floor_s": ratio(results.get("spark", {}).get("median_s"), floor),
        },
        # Both read in this process, so their CPU times compare; Spark works in other processes, so its whole
        # process tree's CPU (driver, JVM, Python workers) is the figure that compares with hudi-rs's.
        "cpu_ratios": {
            "python_cpu_s / hudi_rs_cpu_s": ratio(
                results.get("python", {}).get("cpu_median_s"), results.get("hudi_rs", {}).get("cpu_median_s")
            ),
            "spark_tree_cpu_s / hudi_rs_tree_cpu_s": ratio(results.get("spark", {}).get("tree_cpu_median_s"), rs_tree),
            "spark_floor_tree_cpu_s / hudi_rs_tree_cpu_s": ratio(
                results.get("spark_floor", {}).get("tree_cpu_median_s"), rs_tree
            ),
        },
        "target": {"max_ratio_to_hudi_rs": TARGETS},
        "load_average": _load_average(),
    }


def _time_readers(
    todo: dict[str, Callable[[], pa.Table]], repeat: int, results: dict[str, Any], answers: dict[str, pa.Table]
) -> None:
    for name, fn in todo.items():
        tree: list[float] = []
        try:
            m = measure(_with_tree_cpu(fn, tree), repeat=repeat, warmup=1)
        except Exception as exc:  # a reader that fails is reported, the others still run
            results[name] = {"status": "failed", "note": f"{type(exc).__name__}: {str(exc)[:300]}"}
            continue
        answers[name] = _norm(m.result)
        results[name] = {"status": "ok", **m.to_dict(), "rows": m.result.num_rows}
        timed_tree = tree[-len(m.all_s) :] if len(tree) >= len(m.all_s) else []
        if timed_tree:
            t = spread(timed_tree)
            results[name].update(tree_cpu_median_s=round(t.median, 3), tree_cpu_min_s=round(t.min, 3))
            results[name]["tree_cpu_max_s"] = round(t.max, 3)


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    from bench.bench_compaction import _batches, _build
    from evt_toolkit.spark.session import get_or_create_session

    ap = argparse.ArgumentParser(prog="python -m bench.b5_reads", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="evt-b5-"))
    try:
        _build(work / "src", _batches(args.rows, 10, keys=max(1000, args.rows // 4)))
        spark = None if args.no_spark else get_or_create_session()
        print(json.dumps(run(work / "src", spark, args.repeat), indent=2))
        if spark is not None:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
