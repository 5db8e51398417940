"""An unschedule killed between deleting the plan and listing the new slices again, with a writer in between.

On a version-6 table a writer that saw a pending plan ``C`` puts its log into the new slice, named with ``C``.
Unschedule refuses when it finds such a log, and — because a writer may land one after that listing — lists the new
slices again once the plan is gone, putting the plan back if one appeared (``docs/data-safety.md`` §1). A kill between
the plan's deletion and that second listing left the writer's *committed* log in a slice no timeline knows: its records
vanished from every read, and nothing brought them back — unscheduling again found no plan, and the next schedule,
clean, rollback or repair removed the plan's records as an abandoned schedule's.

The documented recovery of a killed unschedule is any of them (or unscheduling again); each must finish it: put the
plan back when a writer's log is in a new slice (its run then makes the links again), or complete the unschedule
when none is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
import evt_toolkit.services.unschedule as unschedule_module
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import PendingTableServiceError
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
def test_a_writers_log_in_the_new_slice_survives_an_unschedule_killed_after_the_plan_is_gone(
    tmp_path: Path, link_mode: str, how: str
) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    history(t)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode=link_mode)
    assert c is not None
    writer = evt.HudiTable.open(t.path)
    landed: list[str | None] = []

    def write() -> None:
        landed.append(writer.refresh().write(rows([100, 101, 3], 99, 600)))

    with pytest.raises(Killed), killed_after_the_plan_is_deleted(write):
        t.compaction.unschedule(c.instant, dry_run=False)
    assert landed[0] in {i.time for i in t.refresh().timeline.completed_commits()}, "the writer committed"

    _recover(t, how, c.instant)
    t.refresh()
    got = t.read()
    assert {100, 101} <= set(got["id"].to_pylist()), f"the committed write's records after recovery by {how}"
    assert pc.max(got.filter(pc.field("id") == 3)["ts"]).as_py() == 99
    assert [i.time for i in t.timeline.pending_compactions()] == [c.instant], "the plan is back, to be run"
    assert missing_live_files(t) == []
    assert visible_dangling_symlinks(t) == []

    t.compaction.run(c.instant)
    same(t.refresh().read(), got, "the restored plan runs without changing the snapshot")
    same(hudi_rs(t.path), got, "hudi-rs after the run")


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
