"""Reads of some columns: a read-optimized read prunes columns in the base files; every answer equals the full
read's rows with those columns, on every fixture and every query type."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError
from tests.conftest import SKIP_NO_SHARED, fixture_names, fixture_table_path

pytestmark = [SKIP_NO_SHARED, pytest.mark.fixtures]


def _columns(table: pa.Table) -> list[str]:
    """A reordered subset: the record key, the last user column and a meta column, so order and pruning both show."""
    user = [c for c in table.column_names if not c.startswith("_hoodie_")]
    picked = [user[-1], "_hoodie_commit_time"] if user else ["_hoodie_commit_time"]
    if "_hoodie_record_key" in table.column_names:
        picked.append("_hoodie_record_key")
    return picked


@pytest.mark.parametrize("name", fixture_names())
@pytest.mark.parametrize("query_type", ["read_optimized", "snapshot"])
def test_projected_read_equals_full_read_projected(name: str, query_type: str) -> None:
    t = evt.HudiTable.open(fixture_table_path(name))
    try:
        full = t.read(query_type)
    except EvtError as exc:  # a fixture this reader refuses is refused the same way with columns
        with pytest.raises(type(exc)):
            t.read(query_type, columns=["_hoodie_commit_time"])
        return
    cols = _columns(full)
    got = t.read(query_type, columns=cols)
    assert got.column_names == cols
    assert got.num_rows == full.num_rows
    # Same rows in the same order: the projection happens per slice, in plan order, as the full read concatenates.
    assert got.equals(full.select(cols).cast(got.schema))


def test_projected_read_of_compacted_table_and_unknown_columns(tmp_path: Path) -> None:
    t = evt.HudiTable.create(tmp_path / "t", "t", "id", ordering_field="ts")
    t.write(pa.table({"id": pa.array(range(1000)), "ts": pa.array([1] * 1000), "wide": ["x" * 200] * 1000}))
    from evt_toolkit.compaction import UnBoundedCompactionStrategy
    from evt_toolkit.compaction.executor import run_compaction
    from evt_toolkit.compaction.schedule import schedule_compaction

    c = schedule_compaction(t, UnBoundedCompactionStrategy())
    assert c is not None
    run_compaction(t, c.instant)
    ro = t.read("read_optimized", columns=["ts", "id"])
    assert ro.column_names == ["ts", "id"] and ro.num_rows == 1000
    assert sorted(ro["id"].to_pylist()) == list(range(1000))
    with pytest.raises(evt.ReadError, match="unknown column"):
        t.read("read_optimized", columns=["id", "nope"])
