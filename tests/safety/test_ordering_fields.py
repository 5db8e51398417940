"""A table ordered by several fields (Hudi 1.1's ``hoodie.table.ordering.fields=ts,seq``).

Hudi 1.1 compares such records by the tuple of their ordering values (``OrderingValues.create`` over every field,
an ``ArrayComparable``), so of two records tied on ``ts`` the one with the greater ``seq`` wins whatever their order.
The toolkit merges by one ordering value: it would order such a table by ``ts`` alone and let the later record win
the tie — another answer than Hudi's. Until it merges by tuples, every operation that merges records (snapshot and
incremental reads, writes, compaction schedules and runs) refuses an event-time table with more than one ordering
field, naming the table and the fields, and changes nothing; the read-optimized view (no merge) still reads.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import UnBoundedCompactionStrategy


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


def _batch(seq: int, v: str) -> pa.Table:
    return pa.table(
        {"id": pa.array([1], pa.int64()), "ts": pa.array([5], pa.int64()), "seq": pa.array([seq], pa.int64()), "v": [v]}
    )


def test_an_event_time_table_with_two_ordering_fields_is_not_merged_by_one(tmp_path: Path) -> None:
    t = evt.HudiTable.create(
        tmp_path / "t", "o", "id", ordering_field="ts", buckets=1, merge_mode="event_time", table_version=9
    )
    t.write(_batch(2, "first"))  # (ts, seq) = (5, 2): Hudi 1.1 keeps it over the later (5, 1)
    t.write(_batch(1, "second"))
    props = tmp_path / "t" / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    assert "hoodie.table.ordering.fields=ts\n" in text
    props.write_text(text.replace("hoodie.table.ordering.fields=ts\n", "hoodie.table.ordering.fields=ts,seq\n"))
    t = evt.HudiTable.open(tmp_path / "t")
    before = _tree(tmp_path)
    try:
        answer = t.read()["v"].to_pylist()
    except evt.UnsupportedTableError as exc:
        assert str(t.path) in str(exc) and "ts,seq" in str(exc)
    else:
        assert answer == ["first"], "two ordering fields merged by the first alone"
    assert t.read("read_optimized").num_rows == 0
    for attempt in (
        lambda: t.write(_batch(0, "third")),
        lambda: t.compaction.schedule(UnBoundedCompactionStrategy()),
    ):
        with pytest.raises(evt.UnsupportedTableError, match="ts,seq"):
            attempt()
    assert _tree(tmp_path) == before
