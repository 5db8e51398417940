"""Writes run on Spark: one Spark task per file group, and the tables read the same through hudi-rs, our reader and
the ``hudi_evt`` data source; a failed task leaves the table as it was and the next write succeeds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.spark.executor import spark_executor, write_dataframe
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import write_file_group
from tests.normalize import assert_same_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]

USER_COLUMNS = ["id", "ts", "region", "v"]
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("region", pa.string()), ("v", pa.float64())])
_TOKEN = re.compile(r"\.log\.\d+_(\d+)-(\d+)-(\d+)$")


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in ids],
            "ts": [ts] * len(ids),
            "region": ["eu" if i % 2 else "us" for i in ids],
            "v": [float(i * ts) for i in ids],
        },
        schema=SCHEMA,
    )


def _df(spark: SparkSession, table: pa.Table) -> DataFrame:
    return spark.createDataFrame(table.to_pandas())


def _expected(*batches: tuple[str, pa.Table]) -> pa.Table:
    """The table's user columns after applying upserts/deletes in order (commit-time ordering, unique keys)."""
    state: dict[str, dict[str, Any]] = {}
    for op, batch in batches:
        for row in batch.to_pylist():
            if op == "delete":
                state.pop(row["id"], None)
            else:
                state[row["id"]] = row
    rows = list(state.values())
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _assert_reads(spark: SparkSession, path: Path, expected: pa.Table, what: str) -> None:
    """hudi-rs, the pure-Python reader and Spark all answer ``expected``."""
    import hudi

    ours = evt.HudiTable.open(path).read()
    assert_same_rows(ours, expected, USER_COLUMNS, f"{what}: pure-Python reader")
    rs_batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    rs = pa.Table.from_batches(rs_batches) if rs_batches else ours.schema.empty_table()
    assert_same_rows(rs, ours, [*USER_COLUMNS, "_hoodie_commit_time", "_hoodie_record_key"], f"{what}: hudi-rs")
    via_spark = spark.read.format("hudi_evt").load(str(path)).toArrow()
    assert_same_rows(via_spark, ours, what=f"{what}: Spark hudi_evt")


def _commit_stats(path: Path, instant: str) -> list[dict[str, Any]]:
    t = evt.HudiTable.open(path)
    inst = next(i for i in t.timeline.completed_commits() if i.time == instant)
    meta = t.timeline.commit_metadata(inst)
    return [dict(st.record) for st in meta.write_stats]


def _assert_one_task_per_file_group(path: Path, instant: str) -> None:
    stats = _commit_stats(path, instant)
    assert stats
    tokens: dict[str, set[tuple[int, int, int]]] = {}
    for st in stats:
        m = _TOKEN.search(st["path"])
        assert m, st["path"]
        token = (int(m[1]), int(m[2]), int(m[3]))
        tokens.setdefault(st["fileId"], set()).add(token)
    # Each file group was written by one task attempt, and no two file groups share a task.
    assert all(len(t) == 1 for t in tokens.values()), tokens
    task_ids = [next(iter(t))[0] for t in tokens.values()]
    assert len(set(task_ids)) == len(tokens), tokens
    assert len({next(iter(t))[1] for t in tokens.values()}) == 1, "all file groups are written by one Spark stage"


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "trips"
    evt.HudiTable.create(path, "trips", "id", partition_by="region", ordering_field="ts", buckets=2)
    return path


def test_hudi_table_write_runs_one_spark_task_per_file_group(spark: SparkSession, table_path: Path) -> None:
    first, second, gone = _rows(list(range(24)), 1), _rows([1, 2, 30, 31], 2), _rows([4, 7], 3)
    table = evt.HudiTable.open(table_path)

    i1 = table.write(_df(spark, first), spark=spark, executor=spark_executor(spark))
    _assert_one_task_per_file_group(table_path, i1)
    assert len(_commit_stats(table_path, i1)) == 4  # 2 partitions x 2 buckets

    i2 = write_dataframe(table, _df(spark, second), "upsert")
    _assert_one_task_per_file_group(table_path, i2)
    i3 = write_dataframe(table, _df(spark, gone), "delete")
    _assert_one_task_per_file_group(table_path, i3)
    assert i1 < i2 < i3

    _assert_reads(spark, table_path, _expected(("upsert", first), ("upsert", second), ("delete", gone)), "after 3")


def test_write_dataframe_dedupes_on_spark_like_the_writer(spark: SparkSession, table_path: Path) -> None:
    batch = pa.concat_tables([_rows([1, 2, 3], 5), _rows([1, 2], 9), _rows([3], 1)])
    write_dataframe(evt.HudiTable.open(table_path), _df(spark, batch), "upsert")
    got = evt.HudiTable.open(table_path).read()
    assert sorted(zip(got["id"].to_pylist(), got["ts"].to_pylist(), strict=True)) == [
        ("k001", 9),
        ("k002", 9),
        ("k003", 5),
    ]


def test_one_key_in_two_partitions_of_a_batch_is_two_records(spark: SparkSession, table_path: Path) -> None:
    """Hudi de-duplicates a batch by ``HoodieKey`` — record key *and* partition path — unless the index is global
    (``HoodieWriteHelper.deduplicateRecords``): one key in two partitions is two records, on Spark as locally."""
    batch = _rows([1, 1, 2], 5).set_column(2, "region", pa.array(["eu", "us", "us"]))
    write_dataframe(evt.HudiTable.open(table_path), _df(spark, batch), "upsert")
    got = evt.HudiTable.open(table_path).read(columns=["id", "region"])
    assert sorted(zip(got["id"].to_pylist(), got["region"].to_pylist(), strict=True)) == [
        ("k001", "eu"),
        ("k001", "us"),
        ("k002", "us"),
    ]
    gone = _rows([1, 1], 6).set_column(2, "region", pa.array(["eu", "us"]))
    write_dataframe(evt.HudiTable.open(table_path), _df(spark, gone), "delete")
    got = evt.HudiTable.open(table_path).read(columns=["id", "region"])
    assert sorted(zip(got["id"].to_pylist(), got["region"].to_pylist(), strict=True)) == [("k002", "us")]


def test_format_write_creates_the_table_and_appends(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "created"
    first, second = _rows(list(range(10)), 1), _rows([3, 11], 2)

    def save(df: DataFrame, operation: str) -> None:
        (
            df.write.format("hudi_evt")
            .option("hoodie.datasource.write.operation", operation)
            .option("hoodie.datasource.write.recordkey.field", "id")
            .option("hoodie.datasource.write.partitionpath.field", "region")
            .option("hoodie.datasource.write.precombine.field", "ts")
            .option("hoodie.table.name", "created")
            .mode("append")
            .save(str(path))
        )

    save(_df(spark, first), "insert")
    props = evt.HudiTable.open(path).properties
    assert props["hoodie.table.name"] == "created"
    assert props["hoodie.table.recordkey.fields"] == "id"
    save(_df(spark, second), "upsert")
    save(_df(spark, _rows([0], 3)), "delete")
    _assert_reads(
        spark, path, _expected(("upsert", first), ("upsert", second), ("delete", _rows([0], 3))), "format writes"
    )
    assert not (path / ".hoodie" / ".temp" / "hudi_evt_staging").exists() or not any(
        (path / ".hoodie" / ".temp" / "hudi_evt_staging").iterdir()
    )

    # Spark accepts only append and overwrite for Python data sources; hudi_evt refuses to overwrite a table.
    with pytest.raises(Exception, match="ErrorIfExists"):
        _df(spark, first).write.format("hudi_evt").mode("error").save(str(path))
    with pytest.raises(Exception, match="does not overwrite"):
        _df(spark, first).write.format("hudi_evt").mode("overwrite").save(str(path))
    with pytest.raises(Exception, match="recordkey"):
        _df(spark, first).write.format("hudi_evt").mode("append").save(str(tmp_path / "no_key"))


def test_failed_task_leaves_the_table_as_it_was(spark: SparkSession, table_path: Path) -> None:
    first = _rows(list(range(12)), 1)
    table = evt.HudiTable.open(table_path)
    table.write(first)
    before = table.read()

    def fail_one_group(
        spec: WriteJobSpec, fg: FileGroupWrite, upserts: pa.Table, deletes: pa.Table, *ids: int
    ) -> list[dict[str, Any]]:
        stats = write_file_group(spec, fg, upserts, deletes, *ids)
        # Fails on every attempt, after its log file is on storage: retries cannot mask it.
        if fg.partition_path == "region=eu" and fg.bucket == 0:
            raise RuntimeError(f"injected failure writing {fg.file_id}")
        return stats

    update = _rows(list(range(12)), 2)
    with pytest.raises(evt.EvtError, match="injected failure"):
        table.write(_df(spark, update), spark=spark, executor=spark_executor(spark, task=fail_one_group))
    failed = [i for i in evt.HudiTable.open(table_path).timeline if not i.is_completed]
    assert len(failed) == 1
    assert_same_rows(evt.HudiTable.open(table_path).read(), before, what="after the failed write")
    _assert_reads(spark, table_path, _expected(("upsert", first)), "after the failed write")

    ok = table.write(_df(spark, update), spark=spark, executor=spark_executor(spark))
    assert ok > failed[0].time
    _assert_reads(spark, table_path, _expected(("upsert", first), ("upsert", update)), "after the retry")
