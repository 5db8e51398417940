"""The same compaction job in Spark local mode and on a multi-process Spark cluster on this machine.

The cluster is ``local-cluster[2,1,1024]``: a master and two workers in separate JVMs, each executor with its own
Python workers — the same process layout as a real cluster, on loopback. Should it fail to start, a standalone
master and one worker are started on 127.0.0.1 with pyspark's bundled ``spark-class`` and stopped at the end.

The package is **shipped**: a zip of ``evt_toolkit`` is built on the fly and passed as ``spark.submit.pyFiles``
(and ``addPyFile``); a probe job reports the file each executor imported ``evt_toolkit`` from, so the report shows
whether executors used the shipped zip. Executors run ``PYSPARK_PYTHON = sys.executable``.

One event-time compaction is scheduled once; the table, with its pending plan, is copied twice; each copy is
compacted with ``run_compaction(..., spark=session)`` — once on ``local[2]``, once on the cluster. Identical means:
the same base files with the same row counts and the same snapshot rows read back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import evt_toolkit as evt
from bench.bench_compaction import BASE, _batches, _build
from bench.common import timed
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction

CLUSTER_MASTER = "local-cluster[2,1,1024]"


def build_package_zip(dest: Path) -> Path:
    """Zip the ``evt_toolkit`` package (sources and bundled schemas) for ``spark.submit.pyFiles``."""
    pkg = Path(evt.__file__).resolve().parent
    out = dest / "evt_toolkit.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in pkg.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(pkg.parent).as_posix())
    return out


def _base_file_rows(path: Path) -> dict[str, int]:
    return {
        f.relative_to(path).as_posix(): pq.ParquetFile(f).metadata.num_rows
        for f in path.rglob("*.parquet")
        if ".hoodie" not in f.parts
    }


def _snapshot(path: Path) -> pa.Table:
    t = evt.HudiTable.open(path).read(columns=["id", "region", "ts", "ev", "v", "name"])
    return t.combine_chunks().sort_by("id")


def _probe(spark: Any) -> list[dict[str, Any]]:
    def where(_: int) -> tuple[int, str, str]:
        import os as _os

        import evt_toolkit as _evt

        return _os.getpid(), str(_evt.__file__), sys.executable

    rows = spark.sparkContext.parallelize(range(4), 4).map(where).distinct().collect()
    return [{"pid": p, "evt_toolkit_file": f, "python": x} for p, f, x in rows]


def _start_standalone(work: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    from pyspark.find_spark_home import _find_spark_home

    spark_class = str(Path(_find_spark_home()) / "bin" / "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    log = (work / "standalone.log").open("ab")
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "7177",
         "--webui-port", "0"], env=env, stdout=log, stderr=log)  # fmt: skip
    time.sleep(8)
    worker = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:7177", "--host", "127.0.0.1",
         "--cores", "2", "--memory", "2g", "--webui-port", "0"], env=env, stdout=log, stderr=log)  # fmt: skip
    time.sleep(8)
    return "spark://127.0.0.1:7177", [worker, master]


def run(workdir: Path, rows: int = 50_000, local_spark: Any = None) -> dict[str, Any]:
    """Compact one table on ``local[2]`` (``local_spark`` or a new session) and on a cluster; compare."""
    from evt_toolkit.spark.session import get_or_create_session

    root = workdir / "cluster"
    shutil.rmtree(root, ignore_errors=True)  # tables kept in the work folder by an earlier run: built again
    root.mkdir(parents=True)
    n_batches = 10
    src = _build(root / "src", _batches(rows, n_batches, keys=max(1000, rows // 4)))
    c = schedule_compaction(src, EventTimeBasedCompactionStrategy(threshold=BASE + (n_batches // 2) * 60_000))
    assert c is not None
    for name in ("local", "cluster"):
        shutil.copytree(root / "src", root / name, symlinks=True)

    spark = local_spark or get_or_create_session()
    local_s, res_local = timed(lambda: run_compaction(evt.HudiTable.open(root / "local"), c.instant, spark=spark))
    local_master = spark.sparkContext.master
    spark.stop()

    zip_path = build_package_zip(root)
    procs: list[subprocess.Popen[bytes]] = []
    conf = {"spark.submit.pyFiles": str(zip_path), "spark.executor.memory": "768m", "spark.executor.cores": "1"}
    started = time.perf_counter()
    mode = CLUSTER_MASTER
    try:
        cluster = get_or_create_session(master=CLUSTER_MASTER, app_name="evt-bench-cluster", extra_conf=conf)
    except Exception as exc:  # fall back to a standalone master + worker on loopback
        mode = f"standalone (local-cluster failed: {type(exc).__name__})"
        url, procs = _start_standalone(root)
        cluster = get_or_create_session(master=url, app_name="evt-bench-cluster", extra_conf=conf)
    try:
        cluster.sparkContext.addPyFile(str(zip_path))
        startup_s = time.perf_counter() - started
        probe = _probe(cluster)
        executors = cluster.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        cluster_s, res_cluster = timed(
            lambda: run_compaction(evt.HudiTable.open(root / "cluster"), c.instant, spark=cluster)
        )
    finally:
        cluster.stop()
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
    base_local = _base_file_rows(root / "local")
    base_cluster = _base_file_rows(root / "cluster")
    snap_local = _snapshot(root / "local")
    snap_cluster = _snapshot(root / "cluster")
    shipped = all("evt_toolkit.zip" in p["evt_toolkit_file"] or "spark-" in p["evt_toolkit_file"] for p in probe)
    return {
        "rows_ingested": rows,
        "instant": c.instant,
        "local": {"master": local_master, "seconds": round(local_s, 3), "records_written": res_local.records_written},
        "cluster": {
            "master": mode,
            "executors": executors,
            "startup_s": round(startup_s, 1),
            "seconds": round(cluster_s, 3),
            "records_written": res_cluster.records_written,
            "executor_python_processes": probe,
            "package_shipped_as_zip": shipped,
            "package_delivery": "spark.submit.pyFiles zip built on the fly (plus addPyFile)",
        },
        "base_files": len(base_local),
        "identical_base_file_row_counts": base_local == base_cluster,
        "identical_snapshot_rows": snap_local.num_rows == snap_cluster.num_rows and snap_local.equals(snap_cluster),
        "snapshot_rows": snap_local.num_rows,
    }


def main() -> int:
    import json

    work = Path(tempfile.mkdtemp(prefix="evt-cluster-"))
    try:
        print(json.dumps(run(work, int(sys.argv[1]) if len(sys.argv) > 1 else 50_000), indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
