"""A rollback killed half-way and resumed later must check its target again: the table may have moved on.

``table.rollback(I)`` first finishes a pending rollback of ``I`` from its plan (a crash left it), as Hudi re-runs a
pending rollback. The plan was made when rolling ``I`` back was allowed; by the time it is resumed, other services
may have run:

* **the last write, rolled back and killed before it un-committed the write** (its ``.deltacommit`` still there, so
  the write is still readable), then another write committed. Finishing the rollback would take away a write that is
  no longer the last one — on a version-6 table the later write's log in a file group the rolled-back write created
  is named with that write's instant, so the later *committed* records vanish with it. Hudi checks the commit
  sequence when it *executes* a rollback (``BaseRollbackActionExecutor.validateRollbackCommitSequence``, resumed
  rollbacks included), so it refuses; so does the toolkit, and the table stays as it is.
* **an inflight compaction's run, rolled back and killed**, then the compaction run again to completion. Finishing
  the rollback would delete the files the first attempt recorded — and a re-run writes its carry-over log under the
  same name (version 0 of the new slice), so the completed compaction lost its carried tombstones and kept records:
  deleted keys came back. A completed compaction is never rolled back; the resumed rollback is refused.

Each case is checked on table versions 6 and 9 against what was committed, with our reader and hudi-rs.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import evt_toolkit as evt
from evt_toolkit.cli import main
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.errors import PendingTableServiceError, RollbackError
from evt_toolkit.format.names import INFLIGHT
from evt_toolkit.table.timeline import ROLLBACK
from tests.faults import assert_killed, run_child, save_batch
from tests.services import failed_write, missing_live_files
from tests.tables import BASE, carried_keys, create, history, hudi_rs, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

#: The rollback's steps while the target is still committed: its plan written, then its inflight state.
BEFORE_UNCOMMIT = ["rollback.after_requested", "rollback.after_inflight"]
#: Every step of a rollback it can be killed after: plan, inflight, files deleted, command blocks, timeline files gone.
EVERY_STEP = [*BEFORE_UNCOMMIT, "rollback.after_delete", "rollback.after_blocks", "rollback.before_complete"]


@contextlib.contextmanager
def _pending_rollbacks_set_aside(root: Path) -> Iterator[None]:
    """The data table's pending rollback instants moved out of the timeline folder for the duration."""
    aside = root.parent / "rollbacks-aside"
    aside.mkdir()
    moved = []
    for p in (root / ".hoodie").rglob("*.rollback.*"):
        if "metadata" in p.relative_to(root).parts:
            continue  # the metadata table's own timeline
        moved.append((p, aside / p.name))
        p.rename(aside / p.name)
    assert moved, "a pending rollback to set aside"
    try:
        yield
    finally:
        for src, dst in moved:
            dst.rename(src)


def _batch(tmp_path: Path, ids: list[int], ts: int) -> str:
    """Upserts of ``ids`` at ordering value ``ts`` in a Parquet file, for a write in a child process."""
    path = tmp_path / f"batch-{ts}.parquet"
    save_batch(rows(ids, ts, 100), path)
    return str(path)


def _tree(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): p.lstat().st_size
        for p in root.rglob("*")
        if not p.is_dir() and ".temp" not in p.parts
    }


def _compacts_past_the_overtaken_rollback(
    t: evt.HudiTable, target: str, want: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pending rollback that can no longer finish does not hold the table up for good. `evt rollback` says so and
    changes nothing; `evt repair` reports it; the next schedule retires it (its timeline files go: left pending, it
    would stop every stock Hudi writer, which resumes pending rollbacks first) and plans a full compaction past it;
    the answers stay, and rolling the target back is a new request, refused like any other."""
    pending = t.refresh().timeline.pending_rollback_of(target)
    assert pending is not None, "the overtaken rollback is still pending"
    rb = pending[0].time
    assert t.timeline.rollback_overtaken_by(pending[1]), "nothing lets it finish"
    root = Path(t.path)
    before = _tree(root)
    for flags in ([], ["--yes"]):  # evt rollback says so, dry run or not
        capsys.readouterr()
        assert main(["rollback", t.path, target, *flags]) == 1
        err = capsys.readouterr().err
        assert re.search(f"rollback {rb} of {target} .* can no longer finish", err), err
        assert "retires it" in err, err
    capsys.readouterr()
    assert main(["repair", t.path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["retired_rollbacks"] == [rb], "the dry run reports it"
    assert _tree(root) == before, "evt rollback and the repair's dry run change nothing"
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None, "a full compaction is planned past the overtaken rollback"
    assert t.refresh().timeline.pending_rollback_of(target) is None, "the schedule retired the rollback"
    assert not [p for p in (root / ".hoodie").rglob(f"{rb}.rollback*") if "metadata" not in p.parts]
    t.compaction.run(c.instant)
    same(t.refresh().read(), want, "snapshot after compacting past the overtaken rollback")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after compacting past the overtaken rollback")
    same(t.read("read_optimized"), want, "read-optimized view after the full compaction")
    assert missing_live_files(t) == []
    before = _tree(root)
    with pytest.raises(RollbackError, match=target):
        t.rollback(target)
    capsys.readouterr()
    assert main(["rollback", t.path, target]) == 1, "the dry run refuses what the rollback refuses"
    assert target in capsys.readouterr().err
    assert _tree(root) == before, "rolling the target back again, refused, changes nothing"


@pytest.mark.parametrize("fault", BEFORE_UNCOMMIT)
@pytest.mark.parametrize("version", [6, 9])
def test_a_resumed_rollback_of_the_last_write_is_refused_once_a_later_write_committed(
    tmp_path: Path, version: int, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    t = create(tmp_path / "t", "commit_time", buckets=2, table_version=version)
    t.write(rows(range(0, 4), 10, 100))
    # Keys 10 and 12 land in a bucket nothing wrote yet: this write creates that file group.
    last = t.write(rows([10, 12], 20, 100))
    proc = run_child(Path(t.path), fault, "rollback", last)
    assert_killed(proc)
    assert last in {i.time for i in t.refresh().timeline.completed_commits()}, "the write is still committed"

    # A write that completes retires the rollback it overtook (below); killed right after completing, it leaves the
    # rollback pending, as a writer that does not retire rollbacks would.
    assert_killed(
        run_child(Path(t.path), "write.after_complete", "write", _batch(tmp_path, [10, 12, 14, 0], 30), "upsert")
    )
    want = t.refresh().read()
    assert sorted(want["id"].to_pylist()) == [0, 1, 2, 3, 10, 12, 14]
    before = _tree(Path(t.path))

    with pytest.raises(RollbackError, match=last):
        t.rollback(last)
    assert _tree(Path(t.path)) == before, "a refused rollback changes nothing"
    same(t.refresh().read(), want, "snapshot after the refused resume")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after the refused resume")
    assert missing_live_files(t) == []
    _compacts_past_the_overtaken_rollback(t, last, want, capsys)


@pytest.mark.parametrize("fault", BEFORE_UNCOMMIT)
@pytest.mark.parametrize("version", [6, 9])
def test_a_resumed_rollback_of_a_compaction_run_is_refused_once_the_compaction_completed(
    tmp_path: Path, version: int, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    history(t)
    want = t.read()
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="copy")
    assert c is not None
    proc = run_child(Path(t.path), "run.before_commit", "run", c.instant)
    assert_killed(proc)
    proc = run_child(Path(t.path), fault, "rollback", c.instant)
    assert_killed(proc)

    # The toolkit refuses to run a compaction whose rollback is pending (see the test below); a client that does not
    # look at pending rollbacks runs it all the same — played here by setting the rollback's files aside meanwhile.
    with _pending_rollbacks_set_aside(Path(t.path)):
        t.refresh().compaction.run(c.instant)
    carried = carried_keys(t, c.instant)
    assert carried, "the compaction carries tombstones over (history() deletes keys inside the prefix)"
    same(t.refresh().read(), want, "snapshot after the compaction completed")
    before = _tree(Path(t.path))

    with pytest.raises(RollbackError, match=c.instant):
        t.rollback(c.instant)
    assert _tree(Path(t.path)) == before, "a refused rollback changes nothing"
    assert carried_keys(t.refresh(), c.instant) == carried
    same(t.read(), want, "snapshot after the refused resume")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after the refused resume")
    assert missing_live_files(t) == []
    _compacts_past_the_overtaken_rollback(t, c.instant, want, capsys)


@pytest.mark.parametrize("fault", ["rollback.after_delete", "rollback.after_blocks"])
@pytest.mark.parametrize("target", ["last write", "failed write"])
def test_a_resumed_rollback_leaves_a_later_writes_log_that_took_a_deleted_logs_name(
    tmp_path: Path, target: str, fault: str
) -> None:
    """On version 6 a log's name is its slice's base instant and a version one past the slice's newest log. Once a
    rollback deleted its target's log, the next write into that slice takes the same name; the rollback, resumed,
    deleted it by that name — a committed write gone. A resumed rollback deletes a log only while its blocks are all
    the target's."""
    t = create(tmp_path / "t", "commit_time", buckets=1, table_version=6)
    t.write(rows(range(0, 4), 10, 100))
    batch = rows([0, 1], 20, 100)
    w = t.write(batch) if target == "last write" else failed_write(t, batch)
    names = {p.name for p in Path(t.path).rglob(".*.log.*")}
    proc = run_child(Path(t.path), fault, "rollback", w)
    assert_killed(proc)
    gone = names - {p.name for p in Path(t.path).rglob(".*.log.*")}
    assert gone, "the rollback deleted its target's log before it was killed"

    later = t.refresh().write(rows([0, 2, 9], 30, 100))
    assert gone & {p.name for p in Path(t.path).rglob(".*.log.*")}, "the later write took a deleted log's name"
    want = t.read()
    assert later in set(want["_hoodie_commit_time"].to_pylist())

    t.rollback(w)
    same(t.refresh().read(), want, "snapshot after the resumed rollback")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after the resumed rollback")
    assert missing_live_files(t) == []


def _evt_rollback(capsys: pytest.CaptureFixture[str], path: str, instant: str, *flags: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["rollback", path, instant, "--json", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return cast(dict[str, Any], json.loads(out))


def _pending_rollbacks(t: evt.HudiTable) -> list[str]:
    return [i.time for i in t.refresh().timeline.instants if i.action == "rollback" and not i.is_completed]


@pytest.mark.parametrize("fault", EVERY_STEP)
@pytest.mark.parametrize("version", [6, 9])
def test_a_compaction_whose_rollback_is_pending_runs_only_once_the_rollback_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int, fault: str
) -> None:
    """A rollback of a killed run, killed itself at any step, then the compaction run again. Run at once, the
    compaction would complete, its rollback could never finish (a completed compaction is never rolled back) and every
    later schedule would be refused for good. The run is refused before it writes anything; ``evt rollback`` resumes
    the rollback whatever it left the compaction as (inflight, or its plan requested again), and the compaction then
    runs to completion, with the answers unchanged throughout."""
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    history(t)
    want = t.read()
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 300), link_mode="copy")
    assert c is not None
    assert_killed(run_child(Path(t.path), "run.before_commit", "run", c.instant))
    assert_killed(run_child(Path(t.path), fault, "rollback", c.instant))
    (rollback,) = _pending_rollbacks(t)
    before = _tree(Path(t.path))

    with pytest.raises(PendingTableServiceError, match=f"rollback {rollback} of it is pending") as err:
        t.refresh().compaction.run(c.instant)
    assert c.instant in str(err.value) and f"evt rollback {t.path} {c.instant} --yes" in str(err.value)
    assert _tree(Path(t.path)) == before, "the refused run changes nothing"
    same(t.refresh().read(), want, "snapshot while the rollback is pending")

    dry = _evt_rollback(capsys, t.path, c.instant)
    assert dry["dry_run"] is True and dry["action"] == "compaction" and rollback in dry["effect"]
    assert _tree(Path(t.path)) == before, "a dry run changes nothing"
    done = _evt_rollback(capsys, t.path, c.instant, "--yes")
    assert done["resumed"] is True and done["instant"] == rollback and done["target"] == c.instant
    assert _pending_rollbacks(t) == []
    assert [i.state.value for i in t.timeline.instants if i.time == c.instant] == ["REQUESTED"]

    t.compaction.run(c.instant)
    assert c.instant in {i.time for i in t.refresh().timeline.completed_commits()}
    same(t.read(), want, "snapshot after the compaction ran")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after the compaction ran")
    assert missing_live_files(t) == []
    t.write(rows([0, 1], 900, 100))
    assert t.refresh().compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 10_000)) is not None


@pytest.mark.parametrize("fault", EVERY_STEP)
@pytest.mark.parametrize("version", [6, 9])
def test_evt_rollback_resumes_a_rollback_of_the_last_write_at_any_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int, fault: str
) -> None:
    """``evt rollback W`` resumes a rollback of ``W`` killed at any step — also once it removed ``W``'s timeline
    files, when ``W`` is no longer on the timeline (the command looked ``W`` up there first and refused, leaving the
    rollback pending and every schedule refused)."""
    t = create(tmp_path / "t", "commit_time", buckets=2, table_version=version)
    t.write(rows(range(0, 4), 10, 100))
    want = t.read()
    last = t.write(rows([0, 10, 12], 20, 100))
    assert_killed(run_child(Path(t.path), fault, "rollback", last))
    (rollback,) = _pending_rollbacks(t)
    before = _tree(Path(t.path))

    dry = _evt_rollback(capsys, t.path, last)
    assert dry["dry_run"] is True and dry["action"] == "deltacommit" and rollback in dry["effect"]
    if fault == "rollback.before_complete":
        assert last not in {i.time for i in t.refresh().timeline.instants}
        assert dry["state"] == "no longer on the timeline"
    assert _tree(Path(t.path)) == before, "a dry run changes nothing"
    done = _evt_rollback(capsys, t.path, last, "--yes")
    assert done["resumed"] is True and done["instant"] == rollback and done["target"] == last
    assert _pending_rollbacks(t) == [] and last not in {i.time for i in t.timeline.instants}
    same(t.read(), want, "snapshot after the resumed rollback")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after the resumed rollback")
    assert missing_live_files(t) == []
    assert t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 10_000)) is not None


@pytest.mark.parametrize("version", [6, 9])
def test_only_a_rollback_that_can_never_finish_and_changed_nothing_is_retired(tmp_path: Path, version: int) -> None:
    """Retirement (by the write that overtakes it, the next schedule, clean or `evt repair --yes`) takes a pending
    rollback off the timeline only when a *completed* instant overtook it and everything its plan deletes is still
    there:

    * overtaken by a failed write only, it is kept — rolling the failed write back lets it finish, and resumed it
      rolls its target back;
    * killed between the two deletions of a retirement (its inflight file gone), it is retired the next time;
    * a plan naming a file that is gone (stock Hudi deletes a rollback's files before it un-commits the target, so
      such a rollback has changed data) is kept as the record of what it did.
    """
    t = create(tmp_path / "t", "commit_time", buckets=2, table_version=version)
    t.write(rows(range(0, 4), 10, 100))
    last = t.write(rows([10, 12], 20, 100))
    assert_killed(run_child(Path(t.path), "rollback.after_inflight", "rollback", last))
    rb = cast("tuple[Any, Any]", t.refresh().timeline.pending_rollback_of(last))[0].time
    failed = failed_write(t, rows([1, 14], 30, 100))
    assert t.compaction.repair(dry_run=True).retired_rollbacks == (), "a pending write overtakes it for now only"
    t.compaction.repair(dry_run=False, older_than_s=0)
    assert t.refresh().timeline.pending_rollback_of(last) is not None
    t.rollback(failed)
    r = t.rollback(last)
    assert r.resumed and r.instant == rb, "the failed write rolled back, the kept rollback finishes"
    assert sorted(t.refresh().read()["id"].to_pylist()) == [0, 1, 2, 3]
    same(hudi_rs(t.path), t.read(), "hudi-rs after the resumed rollback")

    # Overtaken by a write that completes: the write retires it.
    last = t.write(rows([10, 12], 40, 100))
    assert_killed(run_child(Path(t.path), "rollback.after_inflight", "rollback", last))
    assert t.refresh().timeline.pending_rollback_of(last) is not None
    t.write(rows([14], 45, 100))
    assert t.refresh().timeline.pending_rollback_of(last) is None, "the overtaking write retired it"
    assert 10 in t.read()["id"].to_pylist(), "its target stays committed"

    # Overtaken by a write killed before it retired it, and killed half-way through its retirement.
    last = t.write(rows([16], 48, 100))
    assert_killed(run_child(Path(t.path), "rollback.after_inflight", "rollback", last))
    rb = cast("tuple[Any, Any]", t.refresh().timeline.pending_rollback_of(last))[0].time
    assert_killed(run_child(Path(t.path), "write.after_complete", "write", _batch(tmp_path, [14], 50), "upsert"))
    want = t.refresh().read()
    (Path(t.path) / t.instant_file(rb, ROLLBACK, INFLIGHT)).unlink()
    assert t.refresh().compaction.repair(dry_run=True).retired_rollbacks == (rb,)
    assert t.compaction.repair(dry_run=False, older_than_s=0).retired_rollbacks == (rb,)
    assert t.refresh().timeline.pending_rollback_of(last) is None
    same(t.read(), want, "snapshot after the retirement")

    # A plan one of whose files is gone is kept, by the repair and a clean. (On version 6 a later write into the
    # same slice takes a deleted log's name again: the file is then there, and so is the rollback's retirement.)
    last = t.write(rows([16], 60, 100))
    assert_killed(run_child(Path(t.path), "rollback.after_inflight", "rollback", last))
    _, plan = cast("tuple[Any, Any]", t.refresh().timeline.pending_rollback_of(last))
    assert_killed(run_child(Path(t.path), "write.after_complete", "write", _batch(tmp_path, [18], 70), "upsert"))
    gone = next(p for r in plan.requests for p in r.files_to_delete)
    Path(gone.removeprefix("file:")).unlink()
    assert t.refresh().compaction.repair(dry_run=True).retired_rollbacks == ()
    t.compaction.repair(dry_run=False, older_than_s=0)
    t.clean()
    assert t.refresh().timeline.pending_rollback_of(last) is not None
