"""``kill -9`` before every storage change of every operation on a table with a metadata table, then recovery.

The kill -9 table of the README is run at the named fault points on tables without a metadata table
(``tests/faults``); here each operation — a write, a compaction run (copy and symlink links), a clean, the rollback of
a failed and of the last write, an unschedule of a run that crashed after mirroring itself into the metadata table,
and a repair of an abandoned schedule — is killed before its 1st, 2nd, ... storage change
(:mod:`tests.safety.crash_anywhere`), on a copy of a stock v9 table with a metadata table. After the kill:

* our snapshot and hudi-rs's (listing through the metadata table) are the state before or after the operation,
  never anything in between;
* the metadata table lists exactly the committed data files (a clean killed half-way may still list the files its
  pending plan deletes, as Hudi's does);

then the documented recovery runs, and after it and after a further write, full compaction and clean, both readers
equal the oracle (a dict of what was committed) and the listing is exact.

``EVT_CRASH_SWEEP_STEP`` (default 7) takes every n-th storage change; 1 takes them all (the long run: 8 operations,
84 kills, every one recovered).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.services.clean_planner import KEEP_LATEST_FILE_VERSIONS
from tests.conftest import SKIP_NO_SHARED
from tests.faults import assert_killed, run_child
from tests.normalize import assert_same_rows
from tests.safety.crash_anywhere import run_killed_at
from tests.safety.test_mdt_model import MdtLifecycle, _failed_write, _rs

STEP = int(os.environ.get("EVT_CRASH_SWEEP_STEP", "7"))
#: The most storage changes an operation here makes is 16 (the rollback of the last write); beyond, the child
#: completes and the case is skipped.
MAX_CHANGES = int(os.environ.get("EVT_CRASH_SWEEP_MAX", "20"))
OPS = ["write", "run-copy", "run-symlink", "clean", "rollback-failed", "rollback-last", "unschedule", "repair"]


def _rows(m: MdtLifecycle) -> pa.Table:
    return m._table(list(m.oracle.values()))


def _state(m: MdtLifecycle) -> pa.Table:
    return m.t.refresh().read()


def _check_readers(m: MdtLifecycle, expected: list[pa.Table], what: str) -> None:
    ours = _state(m)
    theirs = _rs(m.t.path)
    errors = []
    for want in expected:
        try:
            assert_same_rows(ours, want, m.columns, what)
            assert_same_rows(theirs, want, m.columns, what)
            return
        except AssertionError as exc:
            errors.append(str(exc))
    raise AssertionError(f"{what}: neither the state before nor after: {errors}")


def _resume_rollback(m: MdtLifecycle, target: str) -> None:
    """Roll back ``target`` again unless the killed rollback got as far as completing (only its records were left
    to drop): the target still on the timeline, or a rollback still pending, is resumed."""
    tl = m.t.refresh().timeline
    if any(i.time == target for i in tl.instants) or any(
        i.action == "rollback" and not i.is_completed for i in tl.instants
    ):
        m.t.rollback(target)


def _linking_threshold(m: MdtLifecycle) -> int:
    """An event-time threshold whose compaction leaves logs behind (so the plan has links)."""
    times = sorted({r[m.ordering] for r in m.oracle.values() if r[m.ordering] is not None})
    for threshold in times:
        if m.t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=threshold)).summary.links:
            return threshold
    raise AssertionError("no threshold leaves a log behind")


def _setup(m: MdtLifecycle, op: str) -> tuple[str, tuple[str, ...], Any]:
    """Bring the table to the state the operation starts from; returns the child's action, its arguments and the
    recovery to run after the kill."""
    t = m.t
    m.write([0, 1], "upsert")
    m.write([0, 2], "upsert")  # a second log in the same file group: a threshold between the two links the second
    if op == "write":
        rows = m._batch([2, 3])
        batch = m.root / "batch.parquet"
        pq.write_table(m._table(rows), batch)
        m.pending_rows = rows
        return "write", (str(batch), "upsert", "SIMPLE"), None
    if op.startswith("run"):
        link_mode = op.split("-")[1]
        c = t.compaction.schedule(
            EventTimeBasedCompactionStrategy(threshold=_linking_threshold(m)), link_mode=link_mode
        )
        assert c is not None
        # A run killed after C completed (only its records were left to drop) needs no recovery.
        return "run", (c.instant,), lambda: c.instant in m._pending() and t.compaction.run(c.instant)
    if op == "clean":
        assert t.compaction.schedule(UnBoundedCompactionStrategy()) is not None
        t.compaction.run(t.refresh().timeline.pending_compactions()[0].time)
        m.write([4], "upsert")
        assert t.clean(KEEP_LATEST_FILE_VERSIONS, 1).files, "the clean has files to delete"
        return "clean", (KEEP_LATEST_FILE_VERSIONS, "1"), lambda: t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    if op == "rollback-failed":
        failed = _failed_write(t, m._table(m._batch([5, 6])))
        return "rollback", (failed,), lambda: _resume_rollback(m, failed)
    if op == "rollback-last":
        last = m.undo[-1][0]
        return "rollback", (last,), lambda: _resume_rollback(m, last)
    if op == "unschedule":
        c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=_linking_threshold(m)), link_mode="copy")
        assert c is not None
        # A run killed after it mirrored C into the metadata table: unschedule must take that back too.
        assert_killed(run_child(Path(t.path), "run.before_commit", "run", c.instant))
        return (
            "unschedule",
            (c.instant,),
            lambda: c.instant in m._pending() and t.compaction.unschedule(c.instant, dry_run=False),
        )
    if op == "repair":
        # A schedule killed between its links and its plan: links recorded under an instant no timeline knows.
        threshold = str(_linking_threshold(m))
        assert_killed(run_child(Path(t.path), "schedule.before_plan", "schedule", threshold, "symlink", "schedule"))
        return "repair", (), lambda: t.compaction.repair(dry_run=False, older_than_s=0)
    raise AssertionError(op)


@SKIP_NO_SHARED
@pytest.mark.parametrize("n", range(1, MAX_CHANGES + 1, STEP))
@pytest.mark.parametrize("op", OPS)
def test_a_kill_before_any_storage_change_then_recovery_loses_nothing(op: str, n: int) -> None:
    m = MdtLifecycle()
    try:
        m.start("mor_v9_txns_simple_meta")
        action, args, recover = _setup(m, op)
        before = _rows(m)
        after = before
        if op == "rollback-last":
            _, old, _ = m.undo[-1]
            after = m._table(list(old.values()))
        elif op == "write":
            saved = (dict(m.oracle), dict(m.gone))
            m._commit("pending", m.pending_rows, "upsert")
            after = _rows(m)
            m.undo.pop()
            m.oracle, m.gone = saved
        known = {i.time for i in m.t.refresh().timeline.instants}
        proc = run_killed_at(n, m.t.path, action, *args)
        assert proc.returncode in (0, -9), proc.stderr[-3000:]
        if proc.returncode == 0:
            pytest.skip(f"{op} makes fewer than {n} storage changes")
        _check_readers(m, [before, after], f"{op} killed before change {n}")
        m.metadata_table_lists_the_live_files()
        # Recovery, as the README's kill -9 table documents it.
        tl = m.t.refresh().timeline
        if op == "write":
            pending = [i.time for i in tl.inflight_writes()]
            done = [i.time for i in tl.completed() if i.time not in known and i.action == "deltacommit"]
            for w in pending:
                m.t.rollback(w)
            for w in done:
                m._commit(w, m.pending_rows, "upsert")
        elif op == "rollback-last":
            recover()
            _, m.oracle, m.gone = m.undo.pop()
        else:
            recover()
        for check in (m.snapshot_is_the_oracle, m.metadata_table_lists_the_live_files, m.read_optimized_agrees):
            check()
        m.nothing_needed_is_missing()
        # Life goes on: a write, a full compaction, a clean.
        for p in m._pending():
            m.t.compaction.run(p)
        m.write([7, 8], "upsert")
        c = m.t.compaction.schedule(UnBoundedCompactionStrategy(), link_mode="symlink")
        if c is not None:
            m.t.compaction.run(c.instant)
        m.t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
        for check in (m.snapshot_is_the_oracle, m.metadata_table_lists_the_live_files, m.read_optimized_agrees):
            check()
        m.nothing_needed_is_missing()
    finally:
        m.teardown()
