"""``t.compaction.repair()``: abandoned schedules' links, missing plan links, stale ownership records."""

from __future__ import annotations

import os
from pathlib import Path

from evt_toolkit.format.ownership import LOG, WRITE, OwnedFile
from evt_toolkit.storage.ownership import record_ownership
from tests.faults import assert_killed, run_child
from tests.safety.test_defects import BASE, NOW, Tracked, batch, make, same, strategy
from tests.services import dangling_symlinks


def test_repair_finds_and_fixes_what_crashes_and_hands_left(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a"], 1, 1))
    tt.upsert(batch(["b"], 2, 500))
    path = Path(tt.t.path)
    # A schedule killed between its links and its plan leaves recorded symlinks under an instant no timeline knows.
    assert_killed(run_child(path, "schedule.before_plan", "schedule", str(BASE + 100), "symlink", "schedule"))
    tt.t.refresh()
    assert not tt.t.compaction.pending()
    assert not tt.t.compaction.repair().abandoned_links  # just now: it may be a schedule still running
    dry = tt.t.compaction.repair(older_than_s=0)
    assert dry.dry_run and len(dry.abandoned_links) == 1
    assert all(os.path.islink(tt.t.storage.full_path(p)) for p in dry.abandoned_links)
    # A pending plan whose schedule-time link went missing.
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None and c.links
    os.unlink(tt.t.storage.full_path(c.links[0].symlink_path))
    # A completed write's ownership record left behind (object stores keep them).
    done = tt.upsert(batch(["c"], 3, 600))
    record_ownership(tt.t.storage, done, WRITE, "x", [OwnedFile("nothing.log", LOG)])

    dry = tt.t.compaction.repair(older_than_s=0)
    assert dry.missing_links == (c.links[0].symlink_path,) and not dry.unrepairable
    assert any(f.endswith(done) for f in dry.stale_record_folders)
    assert not tt.t.compaction.validate(c).ok  # a dry run changes nothing

    done_report = tt.t.compaction.repair(dry_run=False, older_than_s=0)
    assert not done_report.dry_run
    assert tt.t.compaction.validate(c).ok
    assert all(not os.path.lexists(tt.t.storage.full_path(p)) for p in dry.abandoned_links)
    assert not (path / ".hoodie" / ".temp" / done).exists()
    assert dangling_symlinks(path) == []
    assert tt.t.compaction.repair(older_than_s=0).clean
    tt.t.compaction.run(c)
    same(tt.t.read(), tt.expected(), "after repair and run")
