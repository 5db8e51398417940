"""An unschedule killed between deleting the plan and listing the new slices again, with a writer in between.

On a version-6 table a writer that saw a pending plan ``C`` puts its log into the new slice, named with ``C``.
Unschedule refuses when it finds such a log, and — because a writer may land one after that listing — lists the new
slices again once the plan is gone, putting the plan back if one appeared (``docs/data-safety.md`` §1). A kill between
the plan's deletion and that second listing left the writer's *committed* log in a slice no timeline knows: its records
vanished from every read, and nothing brought them back — unscheduling again found no plan, and the next schedule,
clean, rollback or repair removed the plan's records as an abandoned schedule's.

Now the unschedule writes an *unscheduling* marker before its listing, and a version-6 writer on its way into a new
slice fails (left inflight) when it finds one: a racing writer either completed before the listing (the unschedule
refuses) or fails. After the kill and any documented recovery (unschedule again, repair, clean, schedule), the table
holds exactly what was committed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
import evt_toolkit.compaction.unschedule as unschedule_module
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import PendingTableServiceError, WriteError
from evt_toolkit.services.clean_planner import KEEP_LATEST_FILE_VERSIONS
from tests.services import missing_live_files, visible_dangling_symlinks
from tests.tables import BASE, create, history, hudi_rs, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")


class Killed(BaseException):
    """The unschedule's process dies (not an error anything may catch)."""


@contextmanager
def killed_after_the_plan_is_deleted(write: Callable[[], object] | None) -> Iterator[None]:
    """Run ``write`` (a writer that saw the plan) after the unschedule's first listing, and kill the unschedule
    right after it deleted ``C.compaction.requested``, before it lists the new slices again."""
    original = unschedule_module.delete_link_or_file
    calls = [0]

    def delete(storage: object, rel: str) -> bool:
        calls[0] += 1
        if calls[0] == 1 and write is not None:
            write()
        done = original(storage, rel)  # type: ignore[arg-type]
        if rel.endswith(".compaction.requested"):
            raise Killed(rel)
        return done

    unschedule_module.delete_link_or_file = delete  # type: ignore[assignment]
    try:
        yield
    finally:
        unschedule_module.delete_link_or_file = original


def _recover(t: evt.HudiTable, how: str, instant: str) -> None:
    if how == "unschedule":
        t.compaction.unschedule(instant, dry_run=False)
    elif how == "repair":
        t.compaction.repair(dry_run=False, older_than_s=0)
    elif how == "clean":
        t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    else:
        with contextlib.suppress(PendingTableServiceError):  # the plan is back: nothing new is scheduled
            t.compaction.schedule(UnBoundedCompactionStrategy())


RECOVERIES = ["unschedule", "repair", "clean", "schedule"]


@pytest.mark.parametrize("how", RECOVERIES)
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_a_writer_racing_an_unschedule_killed_after_the_plan_is_gone_loses_nothing(
    tmp_path: Path, link_mode: str, how: str
) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    history(t)
    before = t.read()
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode=link_mode)
    assert c is not None
    writer = evt.HudiTable.open(t.path)
    batch = rows([100, 101, 3], 99, 600)
    outcome: list[str] = []

    def write() -> None:
        try:
            outcome.append(f"committed {writer.refresh().write(batch)}")
        except WriteError as exc:  # left inflight, invisible: the documented way out is to roll it back
            outcome.append(f"failed {str(exc).split()[1]}")

    with pytest.raises(Killed), killed_after_the_plan_is_deleted(write):
        t.compaction.unschedule(c.instant, dry_run=False)
    state, w = outcome[0].split()
    _recover(t, how, c.instant)
    if state == "failed":
        assert t.rollback(w).target == w
        want = before
    else:
        assert w in {i.time for i in t.refresh().timeline.completed_commits()}
        want = pa.concat_tables(
            [before.filter(pc.invert(pc.is_in(before["id"], value_set=pa.array([3], pa.int64())))), _rows_of(t, w)]
        )
    got = t.refresh().read()
    same(got, want, f"snapshot after the racing write ({state}) and recovery by {how}")
    assert missing_live_files(t) == []
    assert visible_dangling_symlinks(t) == []
    for c2 in [i.time for i in t.timeline.pending_compactions()]:
        t.compaction.run(c2)
    same(t.refresh().read(), want, "after running what is pending")
    same(hudi_rs(t.path), want, "hudi-rs")


def _rows_of(t: evt.HudiTable, instant: str) -> pa.Table:
    snap = t.read()
    return snap.filter(pc.equal(snap["_hoodie_commit_time"], instant))


@pytest.mark.parametrize("how", RECOVERIES)
def test_an_unschedule_killed_after_the_plan_is_gone_is_finished_when_no_writer_came(tmp_path: Path, how: str) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    history(t)
    want = t.read()
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="symlink")
    assert c is not None
    with pytest.raises(Killed), killed_after_the_plan_is_deleted(None):
        t.compaction.unschedule(c.instant, dry_run=False)

    _recover(t, how, c.instant)
    t.refresh()
    if how != "schedule":
        assert t.timeline.pending_compactions() == [], "the unschedule was finished, not undone"
        leftovers = [p.name for p in Path(t.path).rglob(f"*{c.instant}*") if ".temp" not in p.parts]
        assert leftovers == [], f"nothing of {c.instant} is left: {leftovers}"
    same(t.read(), want, "snapshot")
    same(hudi_rs(t.path), want, "hudi-rs snapshot")
    assert missing_live_files(t) == []


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_repair_clears_the_marker_of_an_unschedule_killed_before_it_deleted_anything(
    tmp_path: Path, link_mode: str
) -> None:
    """An unschedule killed right after writing its marker leaves the plan pending (and whole) with the marker, which
    makes every version-6 write into the plan's new slice fail. Once the marker is old enough that no unschedule can
    still be running, ``repair`` clears it: writes into the new slice complete again and the plan runs."""
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    history(t)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode=link_mode)
    assert c is not None
    original = unschedule_module.delete_link_or_file

    def killed(storage: object, rel: str) -> bool:
        raise Killed(rel)

    unschedule_module.delete_link_or_file = killed  # type: ignore[assignment]
    try:
        with pytest.raises(Killed):
            t.compaction.unschedule(c.instant, dry_run=False)
    finally:
        unschedule_module.delete_link_or_file = original
    assert [i.time for i in t.refresh().timeline.pending_compactions()] == [c.instant]
    with pytest.raises(WriteError):  # the marker stops a write into the new slice (left inflight)
        t.write(rows([3], 98, 600))
    for inst in t.refresh().timeline.instants:
        if inst.action == "deltacommit" and not inst.is_completed:
            t.rollback(inst.time)
    assert not t.compaction.repair().stale_unschedule_markers  # just now: an unschedule may still be running
    dry = t.compaction.repair(older_than_s=0)
    assert len(dry.stale_unschedule_markers) == 1 and c.instant in dry.stale_unschedule_markers[0]
    assert not dry.clean
    t.compaction.repair(dry_run=False, older_than_s=0)
    assert t.compaction.repair(older_than_s=0).clean
    before = {r["id"]: r["ts"] for r in t.read(columns=["id", "ts"]).to_pylist()}
    w = t.write(rows([3, 100], 99, 600))
    assert _rows_of(t.refresh(), w).num_rows == 2
    t.compaction.run(c.instant)
    got = {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}
    assert got == {**before, 3: 99, 100: 99}
    assert {r["id"]: r["ts"] for r in hudi_rs(t.path).select(["id", "ts"]).to_pylist()} == got
    assert missing_live_files(t) == []
    assert visible_dangling_symlinks(t) == []
