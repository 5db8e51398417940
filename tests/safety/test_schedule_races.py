"""Two schedules racing on one table: each lists the slices before the other's plan exists, so neither refuses.

Hudi schedules under a lock, leaves the file groups of a pending plan out of the next plan, and (here) an event-time
plan waits for every pending plan. Without a lock, the schedule looks at the pending plans again after writing its
own: the later of two plans that share a file group (or of which one is an event-time plan) is taken back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import CompactionStrategy, UnBoundedCompactionStrategy
from tests.normalize import assert_same_rows
from tests.safety.test_reader_races import COLS, _table
from tests.tables import BASE, rows


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize(("first", "second"), [("full", "full"), ("event", "full"), ("full", "event")])
def test_two_schedules_racing_leave_one_plan_per_file_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, first: str, second: str
) -> None:
    """Two schedules list the slices at the same moment (neither sees the other's plan), then both write a plan for
    the same file groups. Hudi schedules under a lock and leaves file groups of a pending plan out of the next one,
    and an event-time plan waits for every pending plan; here the later of the two plans must be taken back, so
    one plan per file group is pending — with two, a version-6 write into the slice of the earlier one is refused
    until it runs."""
    import evt_toolkit.compaction.schedule as schedule

    t = _table(tmp_path, version)
    expected = t.read()
    other = evt.HudiTable.open(t.path)
    listed = schedule.slice_infos
    raced: list[object] = []

    def strategy(kind: str) -> CompactionStrategy:
        return UnBoundedCompactionStrategy() if kind == "full" else EventTimeBasedCompactionStrategy(BASE + 400)

    def second_schedule_after_listing(*args: object, **kwargs: object) -> object:
        found = listed(*args, **kwargs)  # type: ignore[arg-type]
        if not raced:
            raced.append(None)
            try:
                raced[0] = other.refresh().compaction.schedule(strategy(second), link_mode="symlink")
            except evt.EvtError as exc:
                raced[0] = exc
        return found

    monkeypatch.setattr(schedule, "slice_infos", second_schedule_after_listing)
    try:
        c = t.compaction.schedule(strategy(first))
    except evt.PendingTableServiceError:
        c = None
    monkeypatch.setattr(schedule, "slice_infos", listed)
    assert raced
    pending = t.refresh().timeline.pending_compactions()
    groups = [(op.partition_path, op.file_id) for i in pending for op in t.timeline.compaction_plan(i).operations]
    assert len(groups) == len(set(groups)), f"{len(pending)} pending plans share file groups: {sorted(groups)}"
    assert c is not None or not isinstance(raced[0], evt.EvtError), "both schedules gave up"
    for i in pending:
        t.refresh().compaction.run(i.time)
    assert_same_rows(t.refresh().read(), expected, COLS, "after the plans ran")
    t.write(rows([1, 7], 40, 500))  # a later write goes in and is read
    assert {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}[7] == 40
