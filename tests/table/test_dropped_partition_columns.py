"""Tables written with ``hoodie.datasource.write.drop.partition.columns=true``.

Their files lack the partition columns and Spark fills them from the partition path; this toolkit does not parse
partition paths into values, so it refuses every query and every writing operation on such a partitioned table,
naming the table and the setting, instead of answering with nulls (or, for a compaction, writing base files with
null partition columns). A non-partitioned table has nothing to drop and reads as before.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from tests.tables import create, rows


def _tree(path: Path) -> dict[str, bytes]:
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = Path(root) / f
            out[str(p.relative_to(path))] = p.read_bytes()
    return out


def _drop_partition_columns(path: Path, column: str | None) -> None:
    """Declare the setting and take ``column`` out of every base file, as Hudi's writer leaves them."""
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.datasource.write.drop.partition.columns=true\n")
    if column is None:
        return
    for f in path.rglob("*.parquet"):
        pq.write_table(pq.read_table(f).drop_columns([column]), f)


def _compacted(path: Path) -> evt.HudiTable:
    """Region-partitioned rows in base files (a full compaction) and an update in a log."""
    t = create(path, "commit_time", table_version=9)
    t.write(rows(range(0, 6), 10, 100))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c.instant)
    t.write(rows([1, 2], 20, 200))
    return t


@pytest.mark.parametrize("query", ["snapshot", "read_optimized", "incremental"])
def test_reads_of_a_table_whose_files_lack_the_partition_columns_are_refused(tmp_path: Path, query: str) -> None:
    path = tmp_path / "t"
    _compacted(path)
    assert evt.HudiTable.open(path).read(query)["region"].null_count == 0
    _drop_partition_columns(path, "region")
    with pytest.raises(evt.UnsupportedTableError) as err:
        evt.HudiTable.open(path).read(query)
    msg = str(err.value)
    assert str(path) in msg and "hoodie.datasource.write.drop.partition.columns" in msg and "region" in msg


def test_compaction_of_such_a_table_is_refused_before_anything_changes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _compacted(path)
    _drop_partition_columns(path, "region")
    before = _tree(path)
    with pytest.raises(evt.UnsupportedTableError, match=r"drop\.partition\.columns"):
        evt.HudiTable.open(path).compaction.schedule(UnBoundedCompactionStrategy())
    assert _tree(path) == before


def test_a_non_partitioned_table_with_the_setting_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "np", "id", ordering_field="ts", table_version=9)
    t.write(rows(range(0, 4), 10, 100).drop(columns=["_hoodie_is_deleted"]))
    want = t.read()
    _drop_partition_columns(path, None)
    got = evt.HudiTable.open(path).read()
    assert got.num_rows == 4 and got.equals(want)
