"""Defects of the Spark paths found by the Spark data-safety hunt, each a sequence the local paths already handled.

* Bad rows in a Spark DataFrame: the local writer refuses a batch with a null ordering value or a null record key
  before anything is written (``WriteError``, Hudi's writers refuse it too). A Spark DataFrame write checked only the
  one row per file group the driver collects to plan the write; the other rows were checked inside the write tasks,
  after the deltacommit was requested and other tasks had written their logs — the table was left changed (an
  inflight instant and its logs), or, when the null lost the in-batch de-duplication, the batch was accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

import evt_toolkit as evt
from evt_toolkit.spark.executor import write_dataframe

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def _data_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.rglob("*") if p.is_file() and (".log." in p.name or p.suffix == ".parquet"))


def _timeline(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").rglob("*") if p.is_file() and p.name[:1].isdigit())


@pytest.mark.parametrize(
    ("bad", "version"),
    [("null_ordering", 6), ("null_ordering_beside_a_duplicate", 9), ("null_key", 9)],
)
def test_a_spark_dataframe_with_bad_rows_is_refused_before_the_table_changes(
    spark: SparkSession, tmp_path: Path, version: int, bad: str
) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path, "t", "id", partition_by="region", ordering_field="ts", buckets=2, table_version=version
    )
    t.write(pd.DataFrame({"id": ["k0"], "region": ["a"], "ts": [1], "v": [0.0]}))
    before_files, before_timeline = _data_files(path), _timeline(path)
    n = 40
    df = pd.DataFrame(
        {
            "id": [f"k{i}" for i in range(n)],
            "region": ["a" if i % 2 else "b" for i in range(n)],
            "ts": pd.array(list(range(n)), dtype="Int64"),
            "v": [float(i) for i in range(n)],
        }
    )
    if bad == "null_ordering":
        df.loc[n - 1, "ts"] = pd.NA  # the last row: not the one the driver collects for its file group
    elif bad == "null_ordering_beside_a_duplicate":
        dup = df.iloc[[n - 1]].copy()
        dup["ts"] = pd.array([pd.NA], dtype="Int64")
        df = pd.concat([df, dup], ignore_index=True)  # the null loses the de-duplication; Hudi refuses it anyway
    else:
        df["id"] = df["id"].astype(object)
        df.loc[n - 1, "id"] = None
    local = evt.HudiTable.open(path)
    with pytest.raises(evt.WriteError):
        local.write(df)  # the local writer refuses it
    with pytest.raises(evt.WriteError, match="null"):
        write_dataframe(local, spark.createDataFrame(df), "upsert")
    assert _timeline(path) == before_timeline, "the refused Spark write left an instant on the timeline"
    assert _data_files(path) == before_files, "the refused Spark write left files"


def test_rows_of_a_file_group_the_plan_does_not_have_fail_the_write_unless_they_are_deletes() -> None:
    """The driver plans the file groups from one row per group of the cached rows; the write tasks then read the
    rows again. Should they differ (the cache recomputed from a source that does not give the same rows twice), an
    upsert row of a group the plan does not have was dropped without a word — the write committed without it. Only
    deletes aimed at buckets with no file group may be dropped (the writer's plan drops them too)."""
    import pyarrow as pa

    from evt_toolkit.errors import WriteError
    from evt_toolkit.spark.executor import BUCKET_COLUMN, PARTITION_COLUMN, _tag_fn

    batch = pa.RecordBatch.from_pydict(
        {"id": [1, 2, 3], PARTITION_COLUMN: ["a", "a", "b"], BUCKET_COLUMN: pa.array([0, 0, 1], pa.int32())}
    )
    planned = {("a", 0): 0}  # the plan knows partition a, bucket 0 only
    with pytest.raises(WriteError, match=r"20260101000000000.*partition 'b', bucket 1"):
        list(_tag_fn(planned, drop_unplanned=False, instant="20260101000000000")(iter([batch])))
    out = list(_tag_fn(planned, drop_unplanned=True, instant="20260101000000000")(iter([batch])))
    assert [b.num_rows for b in out] == [1] and out[0]["task"].to_pylist() == [0]
    rows = pa.ipc.open_stream(out[0]["rows"][0].as_py()).read_all()
    assert rows["id"].to_pylist() == [1, 2]
