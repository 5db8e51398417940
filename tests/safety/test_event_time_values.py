"""Event-time values at the edges, through writes, partial compaction and reads.

The writer accepts an event-time field that is an integer epoch, a timestamp or a date
(:func:`evt_toolkit.write.task.check_required_fields`); each must give every log its min event time in epoch
milliseconds (nulls skipped), pre-1970 values included, so that the event-time strategy compacts the right prefix,
and the snapshot must not change through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

DAY_MS = 86_400_000


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["v"]) for r in t.select(["id", "v"]).to_pylist()) if t.num_rows else []


def _rs(path: str) -> list[tuple[Any, ...]]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return _rows(pa.Table.from_batches(batches)) if batches else []


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("ev_type", [pa.date32(), pa.date64()], ids=["date32", "date64"])
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_a_date_event_time_field_is_written_and_compacted(
    tmp_path: Path, version: int, ev_type: pa.DataType, link_mode: str
) -> None:
    """Dates (one before 1970, some null) as the event-time field: every write completes, each log's min event time
    is its earliest day at midnight UTC, a partial compaction at day 5 compacts the first two logs and leaves the
    third, and the snapshot reads the same before and after, ours and hudi-rs's."""
    t = evt.HudiTable.create(
        tmp_path / "t",
        "d",
        "id",
        partition_by="p",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )

    def batch(ids: list[int], days: list[int | None]) -> pa.Table:
        ev = pa.array(days, pa.int32()).cast(pa.date32()).cast(ev_type)
        n = len(ids)
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": pa.array(["a"] * n),
                "ts": pa.array([1] * n, pa.int64()),
                "ev": ev,
                "v": pa.array([float(i) for i in ids]),
            }
        )

    t.write(batch([1, 2], [-3, None]))
    t.write(batch([3, 1], [5, 4]))
    t.write(batch([4, 2], [10, 12]))
    mins = t.refresh().inspect.log_blocks(event_time_field="ev")["min_event_time"].to_pylist()
    assert mins == [-3 * DAY_MS, 4 * DAY_MS, 10 * DAY_MS]
    before = _rows(t.read())
    assert before == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=5 * DAY_MS), link_mode=link_mode)
    assert c is not None
    assert [len(op.delta_files) for op in c.plan.operations] == [2]
    t.compaction.run(c)
    assert _rows(t.refresh().read()) == before
    assert _rs(t.path) == before
    assert _rows(t.read("read_optimized")) == [(1, 1.0), (2, 2.0), (3, 3.0)]
    assert t.ro_freshness().threshold_ms == 5 * DAY_MS


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_integer_epochs_of_every_unit_are_written_and_compacted(tmp_path: Path, version: int, unit: str) -> None:
    """Integer epochs in seconds, milliseconds, microseconds and nanoseconds (``event_time_unit``), today's and
    before 1970, between whole milliseconds: every write completes, each log's min event time is the value floored
    to the millisecond, and a partial compaction at a threshold between two logs compacts the first two."""
    per_ms = {"s": 0.001, "ms": 1, "us": 1_000, "ns": 1_000_000}[unit]
    t = evt.HudiTable.create(
        tmp_path / "t",
        "u",
        "id",
        partition_by="p",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        event_time_unit=unit,
        table_version=version,
    )

    def epoch(ms: int) -> int:
        """``ms`` in the unit, plus a bit less than one millisecond where the unit is finer."""
        if unit == "s":
            return ms // 1000
        return ms * int(per_ms) + max(int(per_ms) - 1, 0)

    def batch(ids: list[int], ms: list[int]) -> pa.Table:
        n = len(ids)
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": pa.array(["a"] * n),
                "ts": pa.array([1] * n, pa.int64()),
                "ev": pa.array([epoch(m) for m in ms], pa.int64()),
                "v": pa.array([float(i) for i in ids]),
            }
        )

    now = 1_700_000_000_000
    t.write(batch([1, 2], [-86_400_000, now]))
    t.write(batch([3], [now + 5_000]))
    t.write(batch([4], [now + 10_000]))
    mins = t.refresh().inspect.log_blocks(event_time_field="ev")["min_event_time"].to_pylist()
    assert mins == [-86_400_000, now + 5_000, now + 10_000]
    before = _rows(t.read())
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=now + 7_000))
    assert c is not None
    assert [len(op.delta_files) for op in c.plan.operations] == [2]
    t.compaction.run(c)
    assert _rows(t.refresh().read()) == _rs(t.path) == before
    assert _rows(t.read("read_optimized")) == [(1, 1.0), (2, 2.0), (3, 3.0)]
