"""The links of a compaction that predates the active timeline are never an abandoned schedule's (table version 6).

Table services delete the links of schedules that died before writing their plan (``remove_abandoned_schedules``):
schedule-phase ownership records under an instant no timeline knows. "No timeline knows" was read as "not on the
active timeline". But an instant older than the active timeline counts as archived, hence committed — readers read
the files named with it (``Timeline.is_before_timeline_start``, as Hudi's ``isBeforeTimelineStarts``). A completed
compaction whose marker folder kept only its schedule-phase record (the folder's drop, which deletes the records one
by one, interrupted after the run's record went) had its links — the leftover records of its slice, committed —
deleted by the next schedule, clean or rollback once stock Hudi archived it.

The test builds that state on a real table: a compaction with schedule-time copy links completes; its run record is
removed as an interrupted drop leaves it; older instants are archived as Hudi's archiver leaves the active timeline
(their timeline files moved out of it); then a clean runs with the abandoned-schedule age rule at zero. Checked: the
links are still there and the snapshot equals a plain model of the committed writes (hudi-rs reads no archived
timeline, so it is not asked). The other way round, a schedule really killed before its plan (a child process,
``SIGKILL``) whose instant the archiver then passed still has its links removed: they never had a run.
"""

from __future__ import annotations

from pathlib import Path

from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.schedule import remove_abandoned_schedules
from evt_toolkit.format.names import InstantFileName
from evt_toolkit.format.ownership import LINK, SCHEDULE, OwnedFile
from evt_toolkit.storage.ownership import record_ownership
from tests.faults import assert_killed, run_child
from tests.tables import BASE, create, rows


def _model(t: object) -> dict[int, tuple[int, int]]:
    got = t.read().select(["id", "ts", "ev"]).to_pylist()  # type: ignore[attr-defined]
    return {r["id"]: (r["ts"], r["ev"] - BASE) for r in got}


def test_links_of_an_archived_compaction_are_not_an_abandoned_schedules(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    t.write(rows([1, 3], 10, 100))  # compacted
    t.write(rows([1, 5], 20, 500))  # a leftover (event time > T): linked into the new slice
    plan = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="copy")
    assert plan is not None and plan.plan.links
    c = plan.instant
    # The run completes; the drop of its marker folder, which deletes the records one by one, was interrupted
    # after the run's record went: the schedule's record of its links is left.
    t.compaction.run(c)
    record_ownership(t.storage, c, SCHEDULE, "links", [OwnedFile(link.symlink_path, LINK) for link in plan.plan.links])
    t.write(rows([3], 30, 600))  # a later write keeps the active timeline going
    model = {1: (20, 500), 3: (30, 600), 5: (20, 500)}
    assert _model(t.refresh()) == model
    _archive_all_but_the_last(t)
    assert t.refresh().timeline.is_before_timeline_start(c)
    assert _model(t) == model, "the archived compaction's slice still reads as committed"

    deleted = remove_abandoned_schedules(t.refresh(), older_than_s=0)

    assert _model(t.refresh()) == model, f"after deleting {deleted} as an abandoned schedule's"
    assert deleted == [], f"the links of a committed (archived) compaction were deleted as abandoned: {deleted}"


def _archive_all_but_the_last(t: object) -> None:
    """Move every instant but the latest out of the active timeline, as stock Hudi's archiver leaves it."""
    hoodie = Path(t.path) / ".hoodie"  # type: ignore[attr-defined]
    archived = hoodie / "archived"
    archived.mkdir(exist_ok=True)
    later = max(i.time for i in t.refresh().timeline.instants)  # type: ignore[attr-defined]
    for f in list(hoodie.iterdir()):
        parsed = InstantFileName.parse(f.name) if f.is_file() else None
        if parsed is not None and parsed.requested_time < later:
            f.rename(archived / f.name)


def test_links_of_a_schedule_killed_before_its_plan_go_also_once_archival_passed_it(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    t.write(rows([1, 3], 10, 100))
    t.write(rows([1, 5], 20, 500))
    assert_killed(run_child(Path(t.path), "schedule.before_plan", "schedule", str(BASE + 300), "copy", "schedule"))
    [c] = [p.name for p in (Path(t.path) / ".hoodie" / ".temp" / "evt").iterdir()]
    links = sorted(str(p.relative_to(t.path)) for p in Path(t.path).rglob(f".*_{c}.log.*"))
    assert links, "the killed schedule left its links"
    t.write(rows([3], 30, 600))
    model = {1: (20, 500), 3: (30, 600), 5: (20, 500)}
    _archive_all_but_the_last(t)
    assert t.refresh().timeline.is_before_timeline_start(c)

    deleted = remove_abandoned_schedules(t.refresh(), older_than_s=0)

    assert sorted(deleted) == links
    assert _model(t.refresh()) == model
