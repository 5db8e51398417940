"""A batch whose schema is not the table's is refused before anything is written, naming the table.

The writer does not evolve schemas (README, "Writing tables"): an upsert must carry the table's columns with their
types. Here the table is mid-life — a partial compaction left links to logs it did not compact, one compaction is
pending — and each refusal must leave every byte inside and beside the table as it was, name the table in its
message (the error hierarchy's rule), and leave every query answering as before.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy

BASE = 1_700_000_000_000


def _batch(ids: list[int], ev: list[int], **extra: pa.Array) -> pa.Table:
    n = len(ids)
    cols: dict[str, pa.Array] = {
        "id": pa.array(ids, pa.int64()),
        "p": pa.array(["a"] * n),
        "ts": pa.array([1] * n, pa.int64()),
        "ev": pa.array([BASE + e for e in ev], pa.int64()),
        "v": pa.array([float(i) for i in ids]),
    }
    cols.update(extra)
    return pa.table(cols)


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


def _answers(t: evt.HudiTable, writes: list[str]) -> list[Any]:
    t.refresh()
    out: list[Any] = [t.read().sort_by("id").to_pylist(), t.read("read_optimized").sort_by("id").to_pylist()]
    out += [t.read(as_of=w).sort_by("id").to_pylist() for w in writes]
    return out


BAD = {
    "a new nullable column": lambda: _batch([5], [900], w=pa.array([None], pa.string())),
    "a column missing": lambda: _batch([5], [900]).drop_columns(["v"]),
    "a narrower type": lambda: _batch([5], [900]).set_column(4, "v", pa.array([5.0], pa.float32())),
    "the soft-delete column added": lambda: _batch([5], [900], _hoodie_is_deleted=pa.array([False])),
    "a mistyped key": lambda: _batch([5], [900]).set_column(0, "id", pa.array([5.0])),
    "a mistyped ordering field": lambda: _batch([5], [900]).set_column(2, "ts", pa.array(["x"])),
    "a mistyped event-time field": lambda: _batch([5], [900]).set_column(3, "ev", pa.array([0.5])),
}


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("bad", list(BAD))
def test_a_batch_of_another_schema_is_refused_naming_the_table(tmp_path: Path, version: int, bad: str) -> None:
    t = evt.HudiTable.create(
        tmp_path / "t",
        "s",
        "id",
        partition_by="p",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )
    writes = [t.write(_batch([1, 2], [100, 100])), t.write(_batch([3], [800]))]
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 500), link_mode="symlink")
    assert c is not None
    t.compaction.run(c)
    writes.append(t.write(_batch([4], [900])))
    pending = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 1000))
    assert pending is not None
    before_tree, before = _tree(tmp_path), _answers(t, writes)
    with pytest.raises(evt.SchemaMismatchError) as err:
        t.write(BAD[bad]())
    assert str(t.path) in str(err.value), f"the error does not name the table: {err.value}"
    assert _tree(tmp_path) == before_tree
    assert _answers(t, writes) == before


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("name", ["a b", "a-b", "1x", "ü", "a.b", "nested"])
def test_a_column_name_avro_cannot_hold_is_refused(tmp_path: Path, version: int, name: str) -> None:
    """Avro names are ``[A-Za-z_][A-Za-z0-9_]*``: a column (or a nested field) named otherwise went into the table
    schema, and from then on no stock reader could parse it (hudi-rs: "Invalid field name"; Java's ``Schema.Parser``
    validates names too) — every record hidden from them. The first write is refused, naming the column and the
    table, and nothing is written."""
    t = evt.HudiTable.create(tmp_path / "t", "s", "id", ordering_field="ts", buckets=1, table_version=version)
    before = _tree(tmp_path)
    column = (
        pa.array([{"ok": 1, "bad name": 2}], pa.struct([("ok", pa.int64()), ("bad name", pa.int64())]))
        if name == "nested"
        else pa.array(["x"])
    )
    batch = pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([1], pa.int64()), name: column})
    with pytest.raises(evt.SchemaMismatchError) as err:
        t.write(batch)
    assert str(t.path) in str(err.value)
    assert repr("bad name" if name == "nested" else name) in str(err.value)
    assert _tree(tmp_path) == before
