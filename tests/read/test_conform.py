"""Tables decoded from different files brought to the table schema, one cast per run of tables decoded alike."""

from __future__ import annotations

import pyarrow as pa
import pytest

from evt_toolkit.errors import ReadError
from evt_toolkit.read.conform import conform, conform_runs

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("added", pa.string())])


def _old(ids: list[int]) -> pa.Table:  # an older writer schema: int ids, float scores, no "added"
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "name": [f"n{i}" for i in ids],
            "score": pa.array([i / 2 for i in ids], pa.float32()),
        }
    )


def _new(ids: list[int]) -> pa.Table:
    return pa.table(
        {"id": ids, "name": [f"m{i}" for i in ids], "score": [i / 4 for i in ids], "added": ["x"] * len(ids)}
    )


def test_runs_give_the_rows_of_conforming_table_by_table() -> None:
    tables = [(_old([1, 2]), "a.log"), (_old([3]), "a.log"), (_new([4, 5]), "b.log"), (_old([6]), "c.log")]
    runs = conform_runs(tables, SCHEMA)
    assert len(runs) == 3  # old, new, old: consecutive alike tables share one cast
    one_by_one = pa.concat_tables([conform(t, SCHEMA, src) for t, src in tables])
    assert pa.concat_tables(runs).equals(one_by_one)
    assert one_by_one["id"].to_pylist() == [1, 2, 3, 4, 5, 6]
    assert all(r.schema.types == SCHEMA.types for r in runs)


def test_a_failing_cast_names_the_file_of_the_bad_table() -> None:
    bad = pa.table({"id": ["7", "not a number"], "name": ["a", "b"]})
    good = pa.table({"id": ["8"], "name": ["c"]})
    with pytest.raises(ReadError, match=r"bad\.log"):
        conform_runs([(good, "good.log"), (bad, "bad.log")], SCHEMA)
