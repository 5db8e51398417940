"""A rollback whose deletes fail must not complete: its target's files would outlive it and be read again.

A rolled-back write ``W`` leaves the timeline; a file of ``W`` that is still on storage is then invisible only while
``W`` is newer than the active timeline's first completed write. Once that start moves past ``W`` — ``W`` was the
table's first write, or the writes before it are rolled back too — readers take ``W`` for an archived, committed
instant (``isBeforeTimelineStarts``) and read its records back. So a rollback whose delete of one of ``W``'s files
fails (a disk error, an object store answering 500) must fail and stay pending, to be resumed, instead of completing
with the file left behind; the documented recovery (roll back again) then finishes it.

The same holds for a file of ``W`` that no record owns (a stock 1.x writer's log without a marker): the rollback
deletes every file named with ``W`` on 1.x tables, as Hudi's ``ListingBasedRollbackStrategy`` does.

Checked on table versions 6 and 9, against the oracle (a dict of what was committed) with our reader and hudi-rs.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError, StorageError
from evt_toolkit.storage.fs import TableStorage
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.normalize import assert_same_rows
from tests.services import failed_write
from tests.tables import COLUMNS, create, hudi_rs, rows, same


@contextlib.contextmanager
def data_deletes_fail() -> Iterator[None]:
    """Every delete of a data file (outside ``.hoodie``) raises, as a disk or store refusing them would."""
    originals = {name: getattr(TableStorage, name) for name in ("delete_file", "delete_files")}

    def delete_file(self: TableStorage, rel: str) -> None:
        if not rel.startswith(".hoodie"):
            raise StorageError(f"injected: cannot delete {self.full_path(rel)}")
        originals["delete_file"](self, rel)

    def delete_files(self: TableStorage, rels: Any) -> None:
        if any(not r.startswith(".hoodie") for r in rels):
            raise StorageError(f"injected: cannot delete {self.full_path(rels[0])}")
        originals["delete_files"](self, rels)

    TableStorage.delete_file = delete_file  # type: ignore[method-assign]
    TableStorage.delete_files = delete_files  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(TableStorage, name, fn)


def _roll_back_with_failing_deletes(t: evt.HudiTable, target: str) -> None:
    """Roll ``target`` back while data deletes fail, then recover as documented: roll it back again while it (or a
    rollback of it) is still pending."""
    with data_deletes_fail(), contextlib.suppress(EvtError):
        t.rollback(target)
    tl = t.refresh().timeline
    if any(i.time == target for i in tl.instants) or any(
        i.action == "rollback" and not i.is_completed for i in tl.instants
    ):
        t.rollback(target)


def _expected(batch: pa.Table | Any) -> pa.Table:
    return pa.Table.from_pandas(batch, preserve_index=False).select(COLUMNS)


@pytest.mark.parametrize("version", [6, 9])
def test_a_rolled_back_first_write_stays_gone_after_the_next_write(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", 2, version)
    failed = failed_write(t, rows(range(6), 1, 100), tasks_before_crash=2)
    _roll_back_with_failing_deletes(t, failed)
    later = rows([10, 11], 2, 200)
    t.write(later)
    same(t.refresh().read(), _expected(later), "snapshot after the next write")
    same(hudi_rs(t.path), _expected(later), "hudi-rs after the next write")


@pytest.mark.parametrize("version", [6, 9])
def test_a_rolled_back_write_stays_gone_when_the_timeline_start_moves_past_it(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", 2, version)
    first = t.write(rows([20, 21], 1, 50))
    failed = failed_write(t, rows(range(6), 2, 100), tasks_before_crash=2)
    _roll_back_with_failing_deletes(t, failed)
    t.rollback(first)  # the last completed write: the timeline now starts after the failed write
    later = rows([10, 11], 3, 200)
    t.write(later)
    same(t.refresh().read(), _expected(later), "snapshot after the next write")
    same(hudi_rs(t.path), _expected(later), "hudi-rs after the next write")


@SKIP_NO_SHARED
def test_a_stock_failed_write_without_markers_stays_gone_when_the_timeline_start_moves_past_it(
    tmp_path: Path,
) -> None:
    """A stock 1.x write that failed leaving a log named with its instant and no marker (``mor_table_uncommitted_
    log_v9``): rolled back, then the writes around it rolled back too, the next write must not bring its records
    back (ours nor hudi-rs)."""
    dst = tmp_path / "t"
    shutil.copytree(fixture_table_path("mor_table_uncommitted_log_v9"), dst, symlinks=True)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    t = evt.HudiTable.open(dst)
    snap = t.read()
    failed = [i.time for i in t.timeline.inflight_writes()]
    assert failed, "the fixture holds a failed write"
    for w in failed:
        t.rollback(w)
    while t.refresh().timeline.completed_commits():
        t.rollback(t.timeline.completed_commits()[-1].time)
    user = [f.name for f in snap.schema if not f.name.startswith("_hoodie")]
    row = snap.slice(0, 1).select(user)
    t.write(row, options={"hoodie.index.type": "SIMPLE"})
    assert_same_rows(t.refresh().read(), row, user, "after the next write: only its row")
    assert_same_rows(hudi_rs(str(dst)), row, user, "hudi-rs after the next write: only its row")


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("version", [6, 9])
def test_an_abandoned_schedules_links_do_not_bring_rolled_back_writes_back(
    tmp_path: Path, version: int, link_mode: str
) -> None:
    """A schedule killed between its links and its plan leaves links named with an instant ``C`` no timeline knows:
    invisible while a completed write older than ``C`` is on the timeline. Rolling back every write (the last one
    each time) removes them all; the next write then makes ``C`` count as archived, and the links — copies of the
    rolled-back logs — must not be read (nor dangle: symlinks to deleted logs)."""
    from tests.faults import assert_killed, run_child
    from tests.tables import BASE

    t = create(tmp_path / "t", "commit_time", 1, version)
    w1 = t.write(rows(range(4), 1, 100))
    w2 = t.write(rows(range(2, 6), 2, 500))
    # The threshold sits between the two writes: the second write's logs are linked, then the schedule dies.
    assert_killed(run_child(Path(t.path), "schedule.before_plan", "schedule", str(BASE + 200), link_mode, "schedule"))
    t.rollback(w2)
    t.rollback(w1)
    later = rows([10], 3, 900)
    t.write(later)
    same(t.refresh().read(), _expected(later), "snapshot after the next write")
    same(hudi_rs(t.path), _expected(later), "hudi-rs after the next write")
