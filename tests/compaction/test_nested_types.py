"""Compaction keeps the answers for every kind of column the writer takes: structs, lists, maps, decimals,
timestamps, dates, binary, floats and booleans, nulls inside and around them.

A table with such columns gets updates across several deltacommits (and a delete), an event-time partial
compaction, more updates, then a full compaction (merging logs into base files that hold nested rows). After every
step, our snapshot and hudi-rs's equal the expected rows of an independent dict replay, and the read-optimized
view equals hudi-rs's read-optimized view.
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from tests.normalize import assert_same_rows
from tests.tables import hudi_rs

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

_STRUCT = pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.list_(pa.int64()))])
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("p", pa.string()),
        ("ts", pa.int64()),
        ("ev", pa.int64()),
        ("s", _STRUCT),
        ("l", pa.list_(pa.string())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("d", pa.decimal128(10, 2)),
        ("tsm", pa.timestamp("us", tz="UTC")),
        ("dt", pa.date32()),
        ("b", pa.binary()),
        ("f", pa.float32()),
        ("flag", pa.bool_()),
    ]
)
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)


def _row(i: int, ts: int) -> dict[str, Any]:
    return {
        "id": i,
        "p": "a" if i % 2 else "b",
        "ts": ts,
        "ev": 1000 * i + ts,
        "s": None if i % 7 == 0 else {"x": i, "y": f"s{i}-{ts}" if i % 5 else None, "z": [i, ts]},
        "l": [f"a{i}", None, f"b{ts}"] if i % 3 else None,
        "m": [("k", i), ("t", ts)] if i % 4 else [],
        "d": decimal.Decimal(f"{i}.{ts:02d}") if i % 6 else None,
        "tsm": EPOCH + datetime.timedelta(seconds=i, microseconds=ts),
        "dt": datetime.date(2024, 1, 1 + i % 20),
        "b": bytes([i % 256]) * (i % 4),
        "f": i / 4,
        "flag": None if i % 9 == 0 else i % 2 == 0,
    }


@pytest.mark.parametrize("table_version", [6, 9])
def test_nested_columns_survive_partial_and_full_compaction(tmp_path: Path, table_version: int) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path,
        "nested",
        "id",
        partition_by="p",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=table_version,
    )
    expected: dict[int, dict[str, Any]] = {}

    def upsert(ids: range, ts: int) -> None:
        rows = [_row(i, ts) for i in ids]
        t.write(pa.Table.from_pylist(rows, SCHEMA))
        expected.update({r["id"]: r for r in rows})

    def check(what: str) -> None:
        want = pa.Table.from_pylist(sorted(expected.values(), key=lambda r: r["id"]), SCHEMA)
        ours = t.read()
        assert ours.schema.field("s").type == _STRUCT and ours.schema.field("m").type == SCHEMA.field("m").type
        assert_same_rows(ours, want, SCHEMA.names, f"{what}: ours")
        assert_same_rows(hudi_rs(str(path)), want, SCHEMA.names, f"{what}: hudi-rs")
        ro = t.read(query_type="read_optimized")
        assert_same_rows(ro, hudi_rs(str(path), ro=True), SCHEMA.names, f"{what}: read-optimized")

    for k in range(4):
        upsert(range(5 * k, 5 * k + 20), k + 1)
    t.write(
        pa.table({"id": pa.array([3, 4], pa.int64()), "p": ["a", "b"], "ts": pa.array([9, 9], pa.int64())}),
        operation="delete",
    )
    expected.pop(3)
    expected.pop(4)
    check("written")

    partial = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=3000 + 2))
    assert partial is not None
    t.compaction.run(partial.instant)
    check("after the partial compaction")
    assert t.read(query_type="read_optimized").num_rows > 0

    upsert(range(10, 40, 3), 20)
    full = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert full is not None
    t.compaction.run(full.instant)
    check("after the full compaction")
    ro = t.read(query_type="read_optimized")
    assert_same_rows(ro, t.read(), SCHEMA.names, "RO = snapshot once every log is compacted")
