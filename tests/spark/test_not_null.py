"""A table written from Spark with NOT NULL columns (``spark.range``) reads back, in our reader and in hudi-rs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")


@pytest.mark.spark
def test_spark_range_through_the_data_source_reads_back(tmp_path: Path, spark: Any) -> None:
    path = str(tmp_path / "t")
    df = spark.range(6).selectExpr("id", "id * 10 AS ts", "cast(id % 2 AS string) AS part")
    assert not df.schema["id"].nullable  # the case that broke concatenating slices
    (
        df.write.format("hudi_evt")
        .option("hoodie.datasource.write.recordkey.field", "id")
        .option("hoodie.datasource.write.precombine.field", "ts")
        .option("hoodie.table.name", "nn")
        .mode("append")
        .save(path)
    )
    spark.range(3, 9).selectExpr("id", "id * 10 + 1 AS ts", "cast(id % 2 AS string) AS part").write.format(
        "hudi_evt"
    ).mode("append").save(path)
    t = evt.HudiTable.open(path)
    got = t.read().sort_by("id")
    assert got["id"].to_pylist() == list(range(9))
    assert got["ts"].to_pylist() == [0, 10, 20, 31, 41, 51, 61, 71, 81]
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read()).sort_by("id")
    assert rs["ts"].to_pylist() == got["ts"].to_pylist()
    spark_rows = spark.read.format("hudi_evt").load(path).orderBy("id").select("ts").collect()
    assert [r.ts for r in spark_rows] == got["ts"].to_pylist()
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    assert t.read().sort_by("id")["ts"].to_pylist() == got["ts"].to_pylist()
