"""Spark reads through ``hudi_evt`` answer exactly what the pure-Python reader answers, on every real fixture.

Each fixture is read once per Spark job: the snapshot, read-optimized, time-travel and incremental (gold windows from
``gold_options/manifest.json``) reads are unioned with a case tag and collected together, then split and compared
with :meth:`HudiTable.read` row for row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_names, fixture_table_path
from tests.normalize import assert_same_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [SKIP_NO_SHARED, pytest.mark.fixtures, pytest.mark.spark]

CASE = "__evt_case"
QUERY_TYPE = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"


def _with_gold_data() -> list[str]:
    return [n for n in fixture_names() if (TABLES_DIR / n / "gold_data").is_dir()]


def _gold(path: Path) -> pa.Table:
    files = sorted(path.glob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]) if files else pa.table({})


def _cases(name: str, table: evt.HudiTable) -> list[tuple[str, dict[str, str], dict[str, Any]]]:
    """(case name, Spark reader options, ``HudiTable.read`` arguments) for one fixture."""
    cases: list[tuple[str, dict[str, str], dict[str, Any]]] = [
        ("snapshot", {}, {"query_type": "snapshot"}),
        ("read_optimized", {QUERY_TYPE: "read_optimized"}, {"query_type": "read_optimized"}),
    ]
    commits = [i.time for i in table.timeline.completed_commits()]
    if len(commits) >= 2:
        as_of = commits[len(commits) // 2 - 1]
        cases.append(("time_travel", {"as.of.instant": as_of}, {"query_type": "snapshot", "as_of": as_of}))
    manifest = TABLES_DIR / name / "gold_options" / "manifest.json"
    if manifest.is_file():
        for case in json.loads(manifest.read_text())["cases"]:
            if "start_timestamp" in case:
                b, e = case["start_timestamp"], case["end_timestamp"]
                cases.append(
                    (
                        case["name"],
                        {QUERY_TYPE: "incremental", BEGIN: b, END: e},
                        {"query_type": "incremental", "begin": b, "end": e},
                    )
                )
    return cases


def _load(spark: SparkSession, path: str, options: dict[str, str]) -> DataFrame:
    reader = spark.read.format("hudi_evt")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


@pytest.mark.parametrize("name", _with_gold_data())
def test_spark_reads_equal_python_reads(spark: SparkSession, name: str) -> None:
    from pyspark.sql import functions as F

    path = str(fixture_table_path(name))
    table = evt.HudiTable.open(path)
    cases = _cases(name, table)
    expected = {case: table.read(**args) for case, _, args in cases}

    frames = [_load(spark, path, opts).withColumn(CASE, F.lit(case)) for case, opts, _ in cases]
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    got = union.toArrow()

    assert got.schema.names[:-1] == expected["snapshot"].schema.names
    for case, _, _ in cases:
        part = got.filter(pc.equal(got[CASE], case)).drop_columns([CASE])
        assert_same_rows(part, expected[case], what=f"{name} {case} (Spark vs Python)")
    assert_same_rows(
        got.filter(pc.equal(got[CASE], "snapshot")).drop_columns([CASE]),
        _gold(TABLES_DIR / name / "gold_data"),
        what=f"{name} snapshot (Spark vs gold)",
    )


def _unsupported_fixtures() -> list[str]:
    out = []
    for n in fixture_names():
        meta = json.loads((TABLES_DIR / n / "fixture.json").read_text())
        if "lance" in n or "HFILE_DATA" in (meta.get("block_types") or {}):
            out.append(n)
    return out


@pytest.mark.parametrize("name", _unsupported_fixtures())
def test_unsupported_tables_raise_with_the_readers_message(spark: SparkSession, name: str) -> None:
    path = str(fixture_table_path(name))
    try:
        evt.HudiTable.open(path).read()
    except evt.UnsupportedFeatureError as exc:
        message = str(exc)
    else:
        pytest.skip(f"{name} reads with the pure-Python reader")
    with pytest.raises(Exception) as info:
        spark.read.format("hudi_evt").load(path).toArrow()
    # Slices fail in any order, so compare the error class and the message up to the file it names.
    text = str(info.value)
    assert "UnsupportedFeatureError" in text
    assert " ".join(message.split()[:3]) in text


def _one_slice_per_partition_source(name: str) -> type:
    """``hudi_evt`` packing at most one slice per partition (1-byte splits), to see pruning in partition counts."""
    from evt_toolkit.spark.datasource import HudiEvtDataSource
    from evt_toolkit.spark.splits import SplitConf

    attrs = {
        "session_split_conf": SplitConf(max_partition_bytes=1, open_cost_bytes=1),
        "name": classmethod(lambda _: name),
    }
    return type("OneSlicePerPartition", (HudiEvtDataSource,), attrs)


def test_slices_are_packed_as_spark_packs_files(spark: SparkSession) -> None:
    from evt_toolkit.read.plan import plan_query
    from evt_toolkit.spark.splits import pack_slice_reads, split_conf_from_spark

    path = str(fixture_table_path("mor_v8_trips_8i3u1d"))
    table = evt.HudiTable.open(path)
    reads = plan_query(table, "snapshot").reads
    conf = split_conf_from_spark(spark)
    assert conf.min_partitions == spark.sparkContext.defaultParallelism
    expected = len(pack_slice_reads(reads, conf))
    assert 1 <= expected < len(reads)  # several slices per task on this session, not one task per slice
    df = spark.read.format("hudi_evt").load(path)
    assert df.rdd.getNumPartitions() == expected
    assert_same_rows(df.toArrow(), table.read(), what="packed read")


def test_partition_pruning_drops_slices(spark: SparkSession) -> None:
    path = str(fixture_table_path("mor_v8_trips_8i3u1d"))
    table = evt.HudiTable.open(path)
    slices = table.file_slices()
    partition_path = slices["partition_path"][0].as_py()
    field = table.config.partition_fields[0]
    value = partition_path.split("=")[-1]
    kept = slices.filter(pc.equal(slices["partition_path"], partition_path)).num_rows
    spark.dataSource.register(_one_slice_per_partition_source("hudi_evt_one_slice"))

    def pruning() -> DataFrame:
        # A fresh DataFrame per filtered query: Spark 4.3.0 shares pushdown plans across one DataFrame's queries.
        return spark.read.format("hudi_evt_one_slice").option("hoodie.evt.read.partition.pruning", "true").load(path)

    assert pruning().rdd.getNumPartitions() == slices.num_rows > 1
    pruned = pruning().filter(f"{field} = '{value}'")
    assert pruned.rdd.getNumPartitions() == kept < slices.num_rows
    assert pruning().filter(f"{field} in ('{value}', 'nowhere')").rdd.getNumPartitions() == kept
    assert pruning().filter(f"_hoodie_partition_path = '{partition_path}'").rdd.getNumPartitions() == kept
    # Filters on other columns never drop slices; Spark re-applies every filter to the rows.
    assert pruning().filter("fare > 0").rdd.getNumPartitions() == slices.num_rows
    everything = table.read()
    assert_same_rows(pruned.toArrow(), everything.filter(pc.equal(everything[field], value)), what="pruned read")
    # The same filter through the session's packing: the answer does not depend on how slices are grouped.
    packed = spark.read.format("hudi_evt").option("hoodie.evt.read.partition.pruning", "true").load(path)
    assert_same_rows(
        packed.filter(f"{field} = '{value}'").toArrow(),
        everything.filter(pc.equal(everything[field], value)),
        what="pruned packed read",
    )

    # The default reader plans every slice whatever the filter, so one DataFrame serves all its queries.
    df = spark.read.format("hudi_evt_one_slice").load(path)
    assert df.rdd.getNumPartitions() == slices.num_rows
    assert df.filter(f"{field} = '{value}'").count() == everything.filter(pc.equal(everything[field], value)).num_rows
    assert df.count() == everything.num_rows


def test_read_optimized_packs_base_files_only(spark: SparkSession) -> None:
    path = str(fixture_table_path("mor_v6_trips_8i1u"))
    table = evt.HudiTable.open(path)
    spark.dataSource.register(_one_slice_per_partition_source("hudi_evt_one_slice"))
    df = spark.read.format("hudi_evt_one_slice").option(QUERY_TYPE, "read_optimized").load(path)
    assert df.rdd.getNumPartitions() == max(1, sum(1 for b in table.file_slices()["base_file"].to_pylist() if b))


def test_path_option_schema_and_errors(spark: SparkSession) -> None:
    path = str(fixture_table_path("mor_table_all_data_types"))
    df = spark.read.format("hudi_evt").option("path", path).load()
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert fields["_hoodie_commit_time"] == "string"
    python_schema = evt.HudiTable.open(path).read().schema
    assert list(fields) == python_schema.names
    with pytest.raises(Exception, match=r"unknown hoodie\.datasource\.query\.type"):
        spark.read.format("hudi_evt").option(QUERY_TYPE, "bogus").load(path).schema  # noqa: B018
    with pytest.raises(Exception, match="is not a Hudi instant"):
        spark.read.format("hudi_evt").option("as.of.instant", "yesterday").load(path).toArrow()
