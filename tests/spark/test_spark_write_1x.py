"""Writes at table versions 8 and 9 run on Spark: a Spark DataFrame (bucket index: keyed, de-duplicated and shuffled on
Spark; SIMPLE index: key lookup on the driver, tasks on Spark) and Arrow batches shipped as Spark tasks. Our reader,
hudi-rs and the oracle agree afterwards."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.format.names import LogFileName
from tests.conftest import TABLES_DIR, fixture_table_path, shared_available
from tests.normalize import assert_same_rows
from tests.oracle import Oracle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")
pytestmark = [pytest.mark.spark]

COLUMNS = ["id", "ts", "region", "v"]


def _rows(ids: list[int], ts: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"k:{i:03d}" for i in ids],  # a ':' in the key: hashed the 1.x way (HUDI-8403)
            "ts": pd.array([ts] * len(ids), dtype="int64"),
            "region": ["eu" if i % 2 else "us" for i in ids],
            "v": [float(i * ts) for i in ids],
        }
    )


def _check(t: evt.HudiTable, expected: pd.DataFrame, columns: list[str], what: str) -> None:
    exp = pa.Table.from_pandas(expected, preserve_index=False)
    rs = hudi.HudiTableBuilder.from_base_uri(str(Path(t.path).resolve())).build()
    assert_same_rows(t.refresh().read(), exp, columns, f"ours {what}")
    assert_same_rows(pa.Table.from_batches(rs.read()), exp, columns, f"hudi-rs {what}")


def test_spark_writes_at_version_9(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path,
        "s9",
        "id",
        partition_by="region",
        ordering_field="ts",
        buckets=3,
        merge_mode="event_time",
        table_version=9,
    )
    o = Oracle(["id"], ["region"], "ts", "event_time")
    first = _rows(list(range(40)), 1)
    i1 = t.write(spark.createDataFrame(first), spark=spark)
    o.apply("upsert", first)
    _check(t, o.result(), COLUMNS, "Spark DataFrame")
    second = _rows(list(range(30, 60)), 2)
    t.write(second, spark=spark)  # Arrow/pandas planned on the driver, tasks on Spark
    o.apply("upsert", second)
    gone = _rows([1, 2, 3], 5)[["id", "region", "ts"]]
    t.write(spark.createDataFrame(gone), "delete", spark=spark)
    o.apply("delete", gone)
    _check(t, o.result(), COLUMNS, "after pandas upsert and Spark delete")
    # Every log is named by the deltacommit that wrote it; the first write created the groups.
    logs = [LogFileName.parse(p.name) for p in path.rglob(".*.log.*")]
    assert logs and {lf.base_instant for lf in logs if lf} == {i.time for i in t.timeline.completed_commits()}
    assert {lf.base_instant for lf in logs if lf and lf.base_instant == i1}


@pytest.mark.skipif(not shared_available(), reason="real Hudi fixtures not found")
def test_spark_dataframe_into_a_stock_simple_index_table(spark: SparkSession, tmp_path: Path) -> None:
    name = "mor_v9_mor_8i4u_commit_time"
    path = tmp_path / name
    shutil.copytree(fixture_table_path(name), path)
    for p in [path, *path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    t = evt.HudiTable.open(path)
    cols = ["id", "name", "age", "ts", "city"]
    gold_all = pq.read_table(TABLES_DIR / name / "gold_data")
    gold = gold_all.select(cols).to_pandas()
    group_of = dict(zip(gold["id"], (f.split("_")[0] for f in gold_all["_hoodie_file_name"].to_pylist()), strict=True))
    o = Oracle(["id"], ["city"], "ts", "commit_time")
    o.apply("upsert", gold)
    batch = gold.head(3).copy()
    batch["age"] = batch["age"] + 1
    new = gold.head(2).copy()
    new["id"] = new["id"] + 1000
    both = pd.concat([batch, new], ignore_index=True)
    instant = t.write(spark.createDataFrame(both), spark=spark, options={"hoodie.index.type": "SIMPLE"})
    o.apply("upsert", both)
    _check(t, o.result(), cols, "stock table after a Spark SIMPLE-index upsert")
    # The inserts are base files of new file groups, written by Spark tasks; the updates logs named by the instant.
    created = [s for s in t.view.latest_file_slices() if s.base_instant == instant and s.base_file is not None]
    keys = pa.concat_tables(pq.read_table(path / s.base_file.path) for s in created if s.base_file)["id"]
    assert sorted(keys.to_pylist()) == sorted(new["id"].tolist())
    logs = [LogFileName.parse(p.name) for p in path.rglob(f".*_{instant}.log.1_*")]
    assert {lf.file_id for lf in logs if lf} == {group_of[k] for k in batch["id"]}
