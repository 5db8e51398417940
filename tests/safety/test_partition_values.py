"""Partition values at the edges, with hive-style partitioning off (folders named by the bare value).

Hudi lists a table's partitions as every folder holding a ``.hoodie_partition_metadata`` file, skipping only
``.hoodie`` (``FileSystemBackedTableMetadata.getPartitionPathWithPathPrefixUsingFilterExpression``), and writes a
null or empty value to ``__HIVE_DEFAULT_PARTITION__`` (``PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH``). So a
record whose partition value is null, or starts with ``_`` or ``.``, lives in a folder whose name starts with ``_`` or
``.`` — and must be read (hudi-rs reads it) through writes, compactions and cleans. A value that is not a folder name
at all (``.``, ``..``) or names the timeline's folder (``.hoodie``) would put the write beside or outside the table,
or inside its metadata: it is refused, naming the table, and nothing is written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import UnBoundedCompactionStrategy

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")


def _table(root: Path | str, version: int, storage_options: dict[str, str] | None = None) -> evt.HudiTable:
    return evt.HudiTable.create(
        f"{root}/t",
        "p",
        "id",
        partition_by="p",
        ordering_field="ts",
        buckets=1,
        merge_mode="event_time",
        hive_style_partitioning=False,
        table_version=version,
        storage_options=storage_options,
    )


def _batch(ids: list[int], parts: list[str | None], ts: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": pd.array(ids, dtype="int64"),
            "p": pd.array(parts, dtype="string"),
            "ts": pd.array(ts, dtype="int64"),
            "v": [float(i * 10 + t) for i, t in zip(ids, ts, strict=True)],
        }
    )


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    cols = ["id", "_hoodie_partition_path", "v"]
    return sorted(tuple(r[c] for c in cols) for r in t.select(cols).to_pylist()) if t.num_rows else []


def _rs(path: str, storage_options: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).with_storage_options(storage_options or {}).build().read()
    return _rows(pa.Table.from_batches(batches)) if batches else []


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


@pytest.mark.parametrize(("version", "where"), [(6, "local"), (9, "local"), (9, "s3")])
def test_partitions_whose_folder_starts_with_an_underscore_or_a_dot_are_read(
    tmp_path: Path, version: int, where: str, request: pytest.FixtureRequest
) -> None:
    """Null partition values (``__HIVE_DEFAULT_PARTITION__``) and values starting with ``_`` or ``.``: every record
    is read as hudi-rs reads it, after updates and deletes, a full compaction and a clean; locally and on the session's
    S3 server."""
    opts: dict[str, str] | None = None
    root: Path | str = tmp_path
    if where == "s3":
        server = request.getfixturevalue("s3_server")
        opts, root = server.options, f"s3://{server.new_bucket('partvalues')}"
    t = _table(root, version, opts)
    t.write(_batch([1, 2, 3, 4, 1], [None, "_x", ".y", "z", "z"], [5, 5, 5, 5, 5]))
    d = "__HIVE_DEFAULT_PARTITION__"
    expected = [(1, d, 15.0), (1, "z", 15.0), (2, "_x", 25.0), (3, ".y", 35.0), (4, "z", 45.0)]
    assert _rs(t.path, opts) == expected
    assert _rows(t.refresh().read()) == expected, "a record in a partition folder starting with '_' or '.' is hidden"
    t.write(_batch([1, 2], [None, "_x"], [7, 3]))  # key 1 of the null partition updated; key 2's update loses
    t.write(_batch([3], [".y"], [5]), "delete")
    expected = [(1, d, 17.0), (1, "z", 15.0), (2, "_x", 25.0), (4, "z", 45.0)]
    assert _rows(t.refresh().read()) == _rs(t.path, opts) == expected
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    assert {op.partition_path for op in c.plan.operations} == {d, "_x", ".y", "z"}
    t.compaction.run(c)
    assert _rows(t.refresh().read()) == _rs(t.path, opts) == expected
    assert _rows(t.read("read_optimized")) == expected
    t.write(_batch([2], ["_x"], [9]))
    t.clean("KEEP_LATEST_FILE_VERSIONS", retained=1, dry_run=False)
    expected = [(1, d, 17.0), (1, "z", 15.0), (2, "_x", 29.0), (4, "z", 45.0)]
    assert _rows(t.refresh().read()) == _rs(t.path, opts) == expected


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("value", [".", "..", ".hoodie"])
@pytest.mark.parametrize("operation", ["upsert", "delete"])
def test_a_partition_value_that_is_no_folder_of_the_table_is_refused(
    tmp_path: Path, version: int, value: str, operation: str
) -> None:
    """``.`` and ``..`` resolve to the table's own folder and to the folder above it, ``.hoodie`` is the timeline's:
    a write there reported success while its records were never read (or were written outside the table). It is
    refused with a ``WriteError`` naming the table and the field, and nothing changes inside or beside the table."""
    t = _table(tmp_path, version)
    t.write(_batch([1], ["a"], [5]))
    before = _tree(tmp_path)
    with pytest.raises(evt.WriteError, match="'p'") as err:
        t.write(_batch([1, 2], ["a", value], [6, 6]), operation)
    assert str(t.path) in str(err.value)
    assert _tree(tmp_path) == before
    assert _rows(t.refresh().read()) == [(1, "a", 15.0)]


@pytest.mark.parametrize("value", ["..", None])
def test_a_spark_batch_with_a_bad_partition_value_or_key_is_refused(
    tmp_path: Path, spark: Any, value: str | None
) -> None:
    """The same refusals for a Spark DataFrame, whose keys and partition paths are computed inside Spark tasks: a
    ``WriteError`` naming the table (not the task's Spark exception), and nothing written. ``None`` here is a null
    record key."""
    t = _table(tmp_path, 9)
    t.write(_batch([1], ["a"], [5]))
    before = _tree(tmp_path)
    rows = [(1, "a", 6, 16.0), (2, value, 6, 26.0)] if value else [(1, "a", 6, 16.0), (None, "a", 6, 0.0)]
    df = spark.createDataFrame(rows, "id long, p string, ts long, v double")
    with pytest.raises(evt.WriteError) as err:
        t.write(df, spark=spark)
    assert str(t.path) in str(err.value)
    assert _tree(tmp_path) == before
    assert _rows(t.refresh().read()) == [(1, "a", 15.0)]
