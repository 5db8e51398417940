"""Long-lived handles on one table: what a handle (or the process) remembers must never outlive the files it describes.

A notebook keeps a ``HudiTable`` open for hours while other handles, processes and the ``evt`` command write,
schedule, run, unschedule, roll back, repair and clean the same table. Every mutating operation loads the timeline and
lists the table again first, but some facts are kept longer: the per-log event-time facts the preview and the
schedule read are cached for the whole process, keyed by the log's name and size.

* **A log re-created under its name** (table version 6). A v6 log is named after its slice and one version past the
  slice's newest log, so once a rollback deleted a write's log, the next write into that slice takes the very same
  name — and a retried batch of the same shape the very same size. Facts cached from the rolled-back write (its
  instant, its min event time) were served for the new log: the preview reported a committed log as a failed write's
  blocks, and the schedule left it out (a committed log with events at or below T planned as nothing to compact).
* **The compaction runner's Schedule** (``CompactionRunnerModel``, the notebook's widget) took the RO freshness
  "before" from its handle's cached listing, then scheduled on the table as it is. After another handle rolled back
  a write, the button failed with "file not found" for the rolled-back log; after other writes it showed the
  freshness of a table that was gone beside a plan made on the current one.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.event_times import clear_cache as clear_event_time_cache
from evt_toolkit.widgets.models import CompactionRunnerModel, ThresholdPreviewModel
from tests.conftest import SKIP_NO_SHARED
from tests.mdt.mdt_helpers import copy_fixture, rs_read
from tests.normalize import assert_same_rows
from tests.services import failed_write
from tests.tables import BASE, rows

COLS = ["id", "region", "ts", "ev", "v"]
_TXN_COLS = ["txn_id", "txn_ts", "merchant_name", "region"]
_SIMPLE = {"hoodie.index.type": "SIMPLE"}


def _table(root: Path, version: int) -> evt.HudiTable:
    t = evt.HudiTable.create(
        root / "t",
        "s",
        "id",
        partition_by="region",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )
    t.write(rows(range(6), 10, 100))
    return t


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("how", ["failed_write", "last_write"])
def test_a_log_written_again_under_a_rolled_back_writes_name_is_planned_from_its_own_facts(
    tmp_path: Path, version: int, how: str
) -> None:
    """A long-lived handle previews while a write's log is on storage; the write is rolled back and the same batch
    written again (on version 6: the same log name, the same size). A fresh handle's preview and schedule must see
    the new, committed log with its own event times and plan it; the snapshot never changes."""
    t = _table(tmp_path, version)
    # The table's own event-time field is taken from write stats (never cached); the ordering field as the event
    # time is scanned from the logs and cached per log, as is any log written by a write that has not completed.
    if how == "failed_write":
        strategy = EventTimeBasedCompactionStrategy(threshold=BASE + 75)  # the first log (100) stays above T
        batch = rows([0, 2, 4], 2, 50)
        target = failed_write(t, batch)
    else:
        strategy = EventTimeBasedCompactionStrategy(threshold=7, event_time_field="ts")  # the first log (10) above T
        batch = rows([0, 2, 4], 5, 50)
        target = t.write(rows([0, 2, 4], 9, 50))  # 9: above T, then rolled back
    notebook = evt.HudiTable.open(t.path)
    shown = notebook.compaction.preview(strategy)  # the long-lived handle looks (and the process remembers)
    assert shown.summary.logs_compacted == 0
    t.rollback(target)
    t.write(batch)  # the same shape again: on version 6 the same log name and size
    expected = t.read()

    fresh = evt.HudiTable.open(t.path)
    p = fresh.compaction.preview(strategy)
    assert p.summary.freshness_blockers == (), p.summary.freshness_blockers
    # Region r0's slice: the first log (above T) is forced in before the written-again one (at or below T).
    assert p.summary.logs_compacted == 2, p.summary
    c = fresh.compaction.schedule(strategy)
    assert c is not None, "a committed log with events at or below T was planned as nothing to compact"
    assert sum(len(op.delta_files) for op in c.plan.operations) == 2, c.plan.operations
    fresh.compaction.run(c)
    now = evt.HudiTable.open(t.path)
    assert_same_rows(now.read(), expected, COLS, "snapshot after the compaction")
    snap = {r["id"]: r for r in now.read(columns=COLS).to_pylist()}
    ro = {r["id"]: r for r in now.read("read_optimized", columns=COLS).to_pylist()}
    assert {k: ro.get(k) for k in (0, 2, 4)} == {k: snap[k] for k in (0, 2, 4)}, "the region's logs are all compacted"
    # The long-lived handle, refreshed, previews what a fresh one does: nothing left at or below T.
    again = notebook.refresh().compaction.preview(strategy)
    assert again.summary.logs_compacted == 0 and again.summary.freshness_blockers == (), again.summary


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("change", ["rollback", "write"])
def test_the_runner_schedules_on_the_table_as_it_is(tmp_path: Path, version: int, change: str) -> None:
    """A notebook built a threshold preview and a runner on its handle and looked at the freshness; another handle
    then rolled back the last write (its log deleted) or wrote late data. Schedule must plan the table as it is and
    report the freshness the table has right before the plan, as a fresh handle reads it."""
    t = _table(tmp_path, version)
    t.write(rows(range(6), 20, 300))
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 200))
    assert c is not None
    t.compaction.run(c)
    last = t.write(rows([0, 2], 30, 50))  # late: lowers the freshness
    notebook = evt.HudiTable.open(t.path)
    runner = CompactionRunnerModel(notebook, ThresholdPreviewModel(notebook, threshold=BASE + 400))
    assert notebook.ro_freshness().threshold_ms == BASE + 49  # what the notebook showed
    if change == "rollback":
        t.rollback(last)
    else:
        t.write(rows([1, 3], 40, 20))
    now = evt.HudiTable.open(t.path).ro_freshness()
    scheduled = runner.schedule()
    assert runner.last_error is None, runner.last_error
    assert scheduled is not None and runner.state == "scheduled"
    assert runner.freshness_before is not None
    assert runner.freshness_before.threshold_ms == now.threshold_ms, (runner.freshness_before, now)
    runner.run()
    assert runner.state == "done" and runner.check is not None and runner.check.ok, runner.last_error


@SKIP_NO_SHARED
@pytest.mark.parametrize("refreshed", [False, True])
def test_a_handle_opened_before_another_disabled_the_metadata_table_writes(tmp_path: Path, refreshed: bool) -> None:
    """A notebook opened a stock version-9 table with a metadata table; another handle wrote (dropping the index
    partitions the toolkit does not maintain) and disabled the metadata table, as the refusal message advises. The
    first handle — refreshed or not — must then write like any other: its ``hoodie.properties`` is the table's, not
    the one it read when it was opened (which still lists the metadata partitions of a folder that is gone)."""
    path = copy_fixture("mor_v9_txns_simple_meta", tmp_path)
    notebook = evt.HudiTable.open(path)
    other = evt.HudiTable.open(path)
    before = {r["txn_id"]: r for r in other.read(columns=_TXN_COLS).to_pylist()}
    snap = other.read()
    first = snap.select([c for c in snap.column_names if not c.startswith("_hoodie")]).slice(0, 2)
    other.write(first, options=_SIMPLE)  # the first write drops column_stats, record_index, ... from the properties
    other.metadata_table.disable(dry_run=False)
    assert not other.metadata_table.exists()
    if refreshed:
        notebook.refresh()
    batch = first.set_column(
        first.schema.get_field_index("merchant_name"), "merchant_name", pa.array(["stale-1", "stale-2"])
    ).set_column(first.schema.get_field_index("txn_ts"), "txn_ts", pc.add(first["txn_ts"], pa.scalar(1, pa.int64())))
    notebook.write(batch, options=_SIMPLE)
    expected = dict(before)
    for r in batch.select(_TXN_COLS).to_pylist():
        expected[r["txn_id"]] = r
    want = pa.Table.from_pylist(list(expected.values()))
    assert_same_rows(evt.HudiTable.open(path).read(columns=_TXN_COLS), want, _TXN_COLS, "ours after the write")
    assert_same_rows(rs_read(path).select(_TXN_COLS), want, _TXN_COLS, "hudi-rs after the write")
    assert not notebook.metadata_table.exists()


@pytest.mark.parametrize("version", [6, 9])
def test_a_read_on_a_handle_whose_files_a_clean_removed_says_to_refresh(tmp_path: Path, version: int) -> None:
    """A notebook's handle listed the table; elsewhere two compactions and a clean removed the files its view plans.
    Its next read must fail whole (never a partial answer) with an error that says what happened and what to do —
    as Spark's "REFRESH TABLE" hint does — and after ``refresh()`` it reads what a fresh handle reads."""
    t = _table(tmp_path, version)
    t.write(rows([0, 1], 20, 200))
    notebook = evt.HudiTable.open(t.path)
    before = notebook.read()
    other = evt.HudiTable.open(t.path)
    for i in range(2):
        c = other.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 10_000))
        assert c is not None
        other.compaction.run(c)
        other.write(rows([2, 3], 30 + i, 300 + i))
    cleaned = other.clean(policy="KEEP_LATEST_FILE_VERSIONS", retained=1, dry_run=False)
    assert cleaned.deleted, "the clean must remove files the notebook's view plans"
    with pytest.raises(evt.ObjectNotFoundError, match=r"call refresh\(\)"):
        notebook.read()
    assert_same_rows(notebook.refresh().read(), evt.HudiTable.open(t.path).read())
    assert notebook.read().num_rows == before.num_rows  # the same keys; the later writes only updated two of them


@pytest.mark.parametrize("version", [6, 9])
def test_every_call_on_a_handle_whose_files_a_clean_removed_says_to_refresh(tmp_path: Path, version: int) -> None:
    """The same out-of-date handle as above, for the calls other than ``read`` that open the files its view lists
    (the preview's header scan, the freshness and metrics, the inspector): each either answers as the handle's
    state did or fails whole with the ``refresh()`` hint naming the missing file, and after ``refresh()`` answers
    as a fresh handle does. One stale handle per call (a call may refresh its handle)."""
    t = _table(tmp_path, version)
    t.write(rows([0, 1], 20, 200))
    calls = {
        "preview": lambda h: h.compaction.preview(EventTimeBasedCompactionStrategy(threshold=BASE + 10_000)).summary,
        "ro_freshness": lambda h: h.ro_freshness(now_ms=BASE),
        "metrics": lambda h: h.metrics(now_ms=BASE),
        "inspect": lambda h: h.inspect.log_blocks().to_pylist(),
    }
    notebooks = {name: evt.HudiTable.open(t.path) for name in calls}
    for h in notebooks.values():
        assert h.file_slices().num_rows > 0  # the handle lists the table now
    other = evt.HudiTable.open(t.path)
    for i in range(2):
        c = other.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 10_000))
        assert c is not None
        other.compaction.run(c)
        other.write(rows([2, 3], 30 + i, 300 + i))
    assert other.clean(policy="KEEP_LATEST_FILE_VERSIONS", retained=1, dry_run=False).deleted
    failed = []
    for name, call in calls.items():
        # The other handle is usually another process, whose event-time facts this process never saw.
        clear_event_time_cache()
        try:
            call(notebooks[name])
        except evt.ObjectNotFoundError as exc:
            assert "call refresh()" in str(exc), f"{name}: {exc}"
            assert str(tmp_path) in str(exc), f"{name} names no file: {exc}"
            failed.append(name)
    assert "inspect" in failed, "the inspector opens the logs the clean removed"
    fresh = evt.HudiTable.open(t.path)
    for name, call in calls.items():
        assert repr(call(notebooks[name].refresh())) == repr(call(fresh)), name
