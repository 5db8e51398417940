"""Reads while table services run: a reader that loaded the timeline or planned its slices, then a compaction and a
clean completed, then the reader looked at the files. It must answer as the table was, or as it is now, or raise an
:class:`~evt_toolkit.EvtError` — never a partial answer.

* A reader's timeline was loaded before the compaction and the clean, its listing taken after (a long-lived
  ``HudiTable`` whose timeline a notebook looked at, or a listing of many partitions that a clean overtakes): the
  listing lacks the slices that timeline still calls latest.
* A reader planned its slices (the Spark source plans on the driver, reads on executors), then the files went.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import CompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.read.plan import plan_query, read_planned
from tests.normalize import assert_same_rows
from tests.tables import BASE, rows

COLS = ["id", "region", "ts", "ev", "v"]


def _table(root: Path, version: int) -> evt.HudiTable:
    t = evt.HudiTable.create(
        root / "t",
        "r",
        "id",
        partition_by="region",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )
    t.write(rows(range(6), 1, 10))
    _compact(t, UnBoundedCompactionStrategy())  # base files for the read-optimized view
    t.write(rows(range(3), 2, 20))
    t.write(rows(range(2, 5), 3, 900))
    return t


def _compact(t: evt.HudiTable, strategy: CompactionStrategy, link_mode: str = "copy") -> None:
    c = t.compaction.schedule(strategy, link_mode=link_mode)
    assert c is not None
    t.compaction.run(c)


def _compact_and_clean(path: str, partial: bool) -> None:
    other = evt.HudiTable.open(path)
    strategy = EventTimeBasedCompactionStrategy(threshold=BASE + 100) if partial else UnBoundedCompactionStrategy()
    _compact(other, strategy, link_mode="symlink" if partial else "copy")
    if partial:  # the leftover logs compacted too: the linked targets are no longer needed
        _compact(other, UnBoundedCompactionStrategy())
    assert other.clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False).deleted


def _same(a: pa.Table, b: pa.Table) -> bool:
    try:
        assert_same_rows(a, b, COLS)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("query", ["snapshot", "read_optimized", "time_travel"])
def test_a_reader_whose_timeline_predates_a_compaction_and_a_clean(
    tmp_path: Path, version: int, partial: bool, query: str
) -> None:
    t = _table(tmp_path, version)
    first = t.timeline.completed_commits()[0].time
    before = {"snapshot": t.read(), "read_optimized": t.read("read_optimized"), "time_travel": t.read(as_of=first)}

    reader = evt.HudiTable.open(t.path)
    reader.timeline  # noqa: B018 - the reader looks at the timeline (a notebook's pending list, say) ...
    _compact_and_clean(t.path, partial)
    now = evt.HudiTable.open(t.path)
    after = {"snapshot": now.read(), "read_optimized": now.read("read_optimized")}
    # ... and reads after the compaction and the clean: the answer as the table was or as it is, or an EvtError.
    try:
        if query == "snapshot":
            got = reader.read()
        elif query == "read_optimized":
            got = reader.read("read_optimized")
        else:
            got = reader.read(as_of=first)
    except evt.EvtError:
        return
    legit = [before[query]] + ([after[query]] if query in after else [])
    assert any(_same(got, e) for e in legit), (
        f"{query} of a reader whose timeline predates a compaction and a clean: {got.num_rows} rows, the table "
        f"held {[e.num_rows for e in legit]}"
    )


@pytest.mark.parametrize("version", [6, 9])
def test_a_planned_read_whose_files_a_clean_removed_raises(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    snapshot = t.read()
    plan = plan_query(t.refresh(), "snapshot")
    _compact_and_clean(t.path, partial=True)
    # A Spark task reads its slices long after the driver planned them: each fails with an EvtError or reads them
    # whole, as they were.
    parts = []
    for read in plan.reads:
        try:
            parts.append(read_planned(plan.spec, read))
        except evt.EvtError as exc:
            assert "not found" in str(exc), exc
            return
    assert_same_rows(pa.concat_tables(parts), snapshot, COLS, "planned read")
