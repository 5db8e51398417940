"""Regression tests, one per defect of the data-safety review, each named after what it protects.

Every check compares our reader, hudi-rs and an independent oracle (:mod:`tests.oracle`) where the state allows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError, PlanValidationError, ReadError, UnsupportedTableError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from tests.conftest import SKIP_NO_SHARED, fixture_names, fixture_table_path
from tests.faults import assert_killed, run_child
from tests.normalize import assert_same_rows
from tests.oracle import Oracle

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

BASE = 1_700_000_000_000
COLS = ["id", "ts", "ev"]
NOW = 10**15


def make(path: Path, merge_mode: str = "commit_time", buckets: int = 1) -> evt.HudiTable:
    """A non-partitioned table: key ``id``, ordering ``ts``, event time ``ev`` (epoch ms)."""
    return evt.HudiTable.create(
        path, "d", "id", ordering_field="ts", event_time_field="ev", buckets=buckets, merge_mode=merge_mode
    )


def batch(ids: list[str], ts: int, ev: int) -> pd.DataFrame:
    n = len(ids)
    return pd.DataFrame(
        {"id": ids, "ts": pd.array([ts] * n, dtype="int64"), "ev": pd.array([BASE + ev] * n, dtype="int64")}
    )


def dels(ids: list[str], ts: int | None = None) -> pd.DataFrame:
    """Deletes; without ``ts`` they carry no ordering value (commit-time deletes, as Spark SQL ``DELETE``)."""
    df = pd.DataFrame({"id": ids})
    if ts is not None:
        df["ts"] = pd.array([ts] * len(ids), dtype="int64")
    return df


class Tracked:
    """A table and its oracle, written together."""

    def __init__(self, t: evt.HudiTable, merge_mode: str) -> None:
        self.t = t
        self.oracle = Oracle(["id"], [], "ts", merge_mode)

    def upsert(self, df: pd.DataFrame) -> str:
        self.oracle.apply("upsert", df)
        return self.t.write(df)

    def delete(self, df: pd.DataFrame) -> str:
        self.oracle.apply("delete", df)
        return self.t.write(df, "delete")

    def expected(self) -> pa.Table:
        return pa.Table.from_pandas(self.oracle.result()[COLS], preserve_index=False)


def rs(path: str, *, ro: bool = False) -> pa.Table:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    batches = b.build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({c: pa.array([], pa.int64()) for c in COLS})


def same(a: pa.Table, b: pa.Table, what: str) -> None:
    assert_same_rows(a, b, COLS if a.num_rows or b.num_rows else [], what)


def strategy(threshold: int) -> EventTimeBasedCompactionStrategy:
    return EventTimeBasedCompactionStrategy(threshold=BASE + threshold)


# -- 1. rollback of a crashed compaction -----------------------------------------------------------------------------
def test_rollback_of_a_crashed_compaction_keeps_the_plans_schedule_time_links(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a"], 1, 1))
    tt.upsert(batch(["b"], 2, 500))
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None and len(c.links) == 1  # b's log is linked into the new slice at schedule time
    assert_killed(run_child(Path(tt.t.path), "run.after_inflight", "run", c.instant))
    tt.t.rollback(c.instant)
    assert tt.t.compaction.validate(c).ok, "the schedule-time link must survive the rollback of the run"
    tt.t.compaction.run(c)
    same(tt.t.read(), tt.expected(), "ours after rollback and re-run")
    same(rs(tt.t.path), tt.expected(), "hudi-rs after rollback and re-run")
    assert tt.t.compaction.validate(c).ok


def test_rollback_of_a_crashed_compaction_keeps_a_write_committed_into_the_new_slice(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a"], 1, 1))
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None and not c.links
    tt.upsert(batch(["b"], 2, 2))  # lands in the new slice as its version 1 log
    assert_killed(run_child(Path(tt.t.path), "run.after_inflight", "run", c.instant))
    tt.t.rollback(c.instant)
    same(tt.t.read(), tt.expected(), "ours after the rollback")
    tt.t.compaction.run(c)
    same(tt.t.read(), tt.expected(), "ours after the re-run")
    same(rs(tt.t.path), tt.expected(), "hudi-rs after the re-run")


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_a_run_stopped_among_its_links_brings_no_deleted_key_back(tmp_path: Path, link_mode: str) -> None:
    """While a compaction is pending its slice is read merged with the one before it, links included: a link
    replayed its target's blocks a second time, after every later log. With only some links made (a run stopped
    among its execute-time links), k's upsert replayed after k's commit-time delete and the key came back; a write
    of k into the old slice would be undone the same way. A link is now read once, where its target is."""
    tt = Tracked(make(tmp_path / "t", "event_time"), "event_time")
    tt.upsert(batch(["x"], 1, 1))  # the prefix: event time 1 <= T
    tt.upsert(batch(["k"], 500, 500))  # linked
    tt.delete(dels(["k"]))  # linked: a commit-time delete ends k
    c = tt.t.compaction.schedule(strategy(100), link_mode=link_mode, link_timing="execute", now_ms=NOW)
    assert c is not None and len(c.links) == 2
    assert_killed(run_child(Path(tt.t.path), "links.after_link", "run", c.instant))  # k's log linked, not the delete
    made = [f for f in os.listdir(tmp_path / "t") if f"_{c.instant}.log." in f]
    assert len(made) == 1, made
    tt.t.refresh()
    same(tt.t.read(), tt.expected(), "ours while the stopped run is pending")
    assert tt.t.read("incremental", begin="000")["id"].to_pylist() == ["x"]
    tt.upsert(batch(["k"], 200, 200))  # k again, lower than the deleted 500: the commit-time delete reset k
    same(tt.t.read(), tt.expected(), "ours after a write while the stopped run is pending")
    tt.t.compaction.run(c)
    same(tt.t.read(), tt.expected(), "ours after the run")
    same(rs(tt.t.path), tt.expected(), "hudi-rs after the run")


def test_a_run_remakes_a_missing_schedule_time_link_instead_of_committing_without_it(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a"], 1, 1))
    tt.upsert(batch(["b"], 2, 500))
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None and len(c.links) == 1
    os.unlink(tt.t.storage.full_path(c.links[0].symlink_path))
    assert not tt.t.compaction.validate(c).ok
    tt.t.compaction.run(c)
    assert tt.t.compaction.validate(c).ok
    same(tt.t.read(), tt.expected(), "ours after a run that re-made the link")
    same(rs(tt.t.path), tt.expected(), "hudi-rs after a run that re-made the link")


# -- 2. unschedule ----------------------------------------------------------------------------------------------------
def test_unschedule_refuses_when_a_write_landed_in_the_new_slice(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a"], 1, 1))
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None
    tt.upsert(batch(["b"], 2, 2))
    before = sorted(p.name for p in Path(tt.t.path).rglob("*"))
    for dry_run in (True, False):
        report = tt.t.compaction.unschedule(c, dry_run=dry_run)
        assert not report.deleted and report.refused_reason and "orphan" in report.refused_reason
    assert sorted(p.name for p in Path(tt.t.path).rglob("*")) == before
    same(tt.t.read(), tt.expected(), "ours after the refused unschedule")
    tt.t.compaction.run(c)
    same(tt.t.read(), tt.expected(), "ours after running the plan instead")


def test_unschedule_deletes_exactly_the_plans_files(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a"], 1, 1))
    tt.upsert(batch(["b"], 2, 500))
    before = sorted(str(p.relative_to(tt.t.path)) for p in Path(tt.t.path).rglob("*") if ".hoodie" not in p.parts)
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None and c.links
    report = tt.t.compaction.unschedule(c, dry_run=False)
    assert report.deleted, report.refused_reason
    after = sorted(str(p.relative_to(tt.t.path)) for p in Path(tt.t.path).rglob("*") if ".hoodie" not in p.parts)
    assert after == before
    assert not tt.t.refresh().compaction.pending()
    same(tt.t.read(), tt.expected(), "ours after unschedule")


# -- 3. tombstones ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("buckets", [1, 2])
def test_a_deleted_key_stays_deleted_when_a_late_write_lands_before_the_run(tmp_path: Path, buckets: int) -> None:
    tt = Tracked(make(tmp_path / "t", "event_time", buckets), "event_time")
    tt.upsert(batch(["k", "a"], 5, 5))
    tt.delete(dels(["k"], 10))
    tt.upsert(batch(["b"], 6, 6))
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None
    tt.upsert(batch(["k"], 7, 7))  # late: loses to the delete at ts 10
    before = tt.t.read()
    same(before, tt.expected(), "ours before the run")
    tt.t.compaction.run(c)
    same(tt.t.read(), tt.expected(), "ours after the run")
    same(rs(tt.t.path), tt.expected(), "hudi-rs after the run")
    tt.upsert(batch(["k"], 8, 8))  # still lower than the delete: still deleted
    same(tt.t.read(), tt.expected(), "ours after another late write")
    same(rs(tt.t.path), tt.expected(), "hudi-rs after another late write")


# -- 4. incremental after a clean -------------------------------------------------------------------------------------
def test_an_incremental_window_whose_files_were_cleaned_is_refused_not_partial(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    tt.upsert(batch(["a", "b"], 1, 1))
    i2 = tt.upsert(batch(["c"], 2, 2))
    whole = tt.t.read("incremental", begin="0" * 17, end=i2)
    assert whole.num_rows == 3
    c = tt.t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    tt.t.compaction.run(c)
    tt.t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    with pytest.raises(ReadError, match="earliest instant still readable"):
        tt.t.read("incremental", begin="0" * 17, end=i2)
    with pytest.raises(ReadError):
        tt.t.read(as_of=i2)
    same(tt.t.read("incremental", begin="0" * 17), whole, "incremental to the latest commit")


@pytest.mark.parametrize("policy", [KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_COMMITS])
def test_a_clean_killed_after_its_deletes_bounds_time_travel_until_it_completes(tmp_path: Path, policy: str) -> None:
    """Found by the long model run: a clean killed after deleting files (not resumed) left time travel to an older
    write answering 0 rows silently; only completed cleans bounded reads. A pending clean's plan bounds them too."""
    tt = Tracked(make(tmp_path / "t"), "commit_time")
    i1 = tt.upsert(batch(["a", "b"], 1, 1))
    tt.upsert(batch(["c"], 2, 2))
    for _ in range(2):
        c = tt.t.compaction.schedule(UnBoundedCompactionStrategy())
        assert c is not None
        tt.t.compaction.run(c)
        tt.upsert(batch(["a"], 3, 3))
    assert tt.t.read(as_of=i1).num_rows == 2
    assert_killed(run_child(Path(tt.t.path), "clean.after_delete", "clean", policy, "1"))
    t = evt.HudiTable.open(tt.t.path)
    assert [i.state.value for i in t.timeline.instants if i.action == "clean"] == ["INFLIGHT"]
    with pytest.raises(ReadError, match="earliest instant still readable"):
        t.read(as_of=i1)
    with pytest.raises(ReadError):
        t.read("incremental", begin="0" * 17, end=i1)
    same(t.read(), tt.t.read(), "the snapshot is untouched by the killed clean")


V6_MOR = [n for n in fixture_names() if n.startswith("mor_") and "_v6" in n]


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", V6_MOR)
def test_stock_v6_tables_refuse_incremental_reads_their_clean_made_partial(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copytree(fixture_table_path(name), path, symlinks=True)
    t = evt.HudiTable.open(path)
    snap = t.read()
    for failed in [i.time for i in t.timeline.inflight_writes()]:
        t.rollback(failed)  # a stock table's failed write, found through its workload profile
        same_any(t.read(), snap, f"{name}: snapshot unchanged by rolling back {failed}")
    commits = [i.time for i in t.timeline.completed_commits()]
    if not commits:
        pytest.skip(f"{name} has no commits")
    whole = t.read("incremental", begin="0" * 17)
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    if c is None:
        pytest.skip(f"{name} has no log files to compact")
    t.compaction.run(c)
    same_any(t.read(), snap, f"{name}: snapshot unchanged by the compaction")
    res = t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    if not res.deleted:
        pytest.skip(f"{name}: nothing was cleaned")
    with pytest.raises(ReadError, match="earliest instant still readable"):
        t.read("incremental", begin="0" * 17, end=commits[-1])
    same_any(t.read("incremental", begin="0" * 17), whole, f"{name}: incremental over everything")
    same_any(t.read(), snap, f"{name}: snapshot after the clean")


def same_any(a: pa.Table, b: pa.Table, what: str) -> None:
    cols = [c for c in a.column_names if not c.startswith("_hoodie_file")]
    assert_same_rows(a, b, cols, what)


# -- 5. RO freshness with deletes left behind -------------------------------------------------------------------
def _restricted(t: pa.Table, threshold_ms: int) -> pa.Table:
    import pyarrow.compute as pc

    return t.filter(pc.less_equal(t["ev"], threshold_ms))


def test_freshness_is_only_promised_where_ro_equals_the_snapshot(tmp_path: Path) -> None:
    tt = Tracked(make(tmp_path / "t", "event_time"), "event_time")
    tt.upsert(batch(["a"], 50, 50))
    tt.upsert(batch(["b"], 60, 60))
    c = tt.t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None
    tt.t.compaction.run(c)
    tt.upsert(batch(["j"], 100, 100))
    tt.delete(dels(["a"], 50))
    tt.upsert(batch(["z"], 5000, 5000))
    c = tt.t.compaction.schedule(strategy(1000), now_ms=NOW)
    assert c is not None
    tt.t.compaction.run(c)
    fresh = tt.t.ro_freshness()
    assert fresh.threshold_ms is not None
    ro = _restricted(tt.t.read("read_optimized"), fresh.threshold_ms)
    snap = _restricted(tt.t.read(), fresh.threshold_ms)
    same(ro, snap, f"RO and snapshot restricted to events <= freshness {fresh.threshold_ms}")
    assert "a" not in _restricted(tt.t.read("read_optimized"), fresh.threshold_ms)["id"].to_pylist()
    same(tt.t.read(), tt.expected(), "ours")


# -- 6. commit-time deletes -----------------------------------------------------------------------------------------
def test_a_partial_compaction_keeps_the_snapshot_across_a_commit_time_delete(tmp_path: Path) -> None:
    t = make(tmp_path / "t", "event_time")
    t.write(batch(["k"], 50, 50))
    c = t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None
    t.compaction.run(c)
    t.write(dels(["k"]), "delete")  # no ordering value: a commit-time delete
    t.write(batch(["x"], 1, 1))
    t.write(batch(["k"], 3, 3))
    before = t.read()
    rs_before = rs(t.path)
    same(before, rs_before, "ours and hudi-rs agree before")
    c = t.compaction.schedule(strategy(2), now_ms=NOW)
    assert c is not None and c.links
    t.compaction.run(c)
    same(t.read(), before, "ours: the compaction does not change the snapshot")
    same(rs(t.path), before, "hudi-rs: the compaction does not change the snapshot")


@pytest.mark.parametrize("version", [6, 9])
def test_an_incremental_window_over_a_compaction_keeps_a_write_a_carried_record_would_hide(
    tmp_path: Path, version: int
) -> None:
    """A carry-over log holds records of earlier writes under the compaction's instant. An incremental window that
    holds the compaction merged them as if written in the window, without the commit-time delete that had ended them
    (left in its own log, outside the window): the older record won over the window's own write, then fell outside the
    window, and the key the window wrote was missing. Carried records now count by their own commit times."""
    t = evt.HudiTable.create(
        tmp_path / "t", "d", "id", partition_by="p", ordering_field="ts", event_time_field="ts",
        merge_mode="event_time", table_version=version, buckets=1,
    )  # fmt: skip

    def rows(*r: tuple[str, str, int, str]) -> pa.Table:
        return pa.table(
            {
                "id": [x[0] for x in r],
                "p": [x[1] for x in r],
                "ts": pa.array([BASE + x[2] for x in r], pa.int64()),
                "v": [x[3] for x in r],
            }
        )

    t.write(rows(("k01", "p0", 397_000, "a")))
    t.write(pa.table({"id": ["k01"], "p": ["p0"], "ts": pa.array([BASE], pa.int64())}), "delete")
    t.write(rows(("k00", "p1", 269_000, "b"), ("k01", "p0", 269_000, "c")))
    # k00's delete has no ordering value: a commit-time delete, which a later write of any ordering value undoes.
    t.write(
        pa.table({"id": ["k00", "k03"], "p": ["p1", "p1"], "ts": pa.array([None, BASE + 20_000], pa.int64())}), "delete"
    )
    for threshold, link_mode in ((397_000, "copy"), (269_000, "symlink")):
        c = t.compaction.schedule(strategy(threshold), link_mode=link_mode, now_ms=NOW)
        assert c is not None
        t.compaction.run(c)
    assert any(f.endswith(".log.0_1-0-0") for f in os.listdir(tmp_path / "t" / "p=p1")), "a carry-over log"
    t.write(rows(("k00", "p1", 32_000, "d")))
    assert sorted(t.read().select(["id", "v"]).to_pylist(), key=str) == [
        {"id": "k00", "v": "d"},
        {"id": "k01", "v": "a"},
    ]
    done = [i.completion_time or i.time for i in t.timeline.instants if i.is_completed]
    for begin in done[:-1]:  # every window ending at the last write: it wrote k00 = d, and nothing else is in it
        got = t.read("incremental", begin=begin, end=done[-1]).select(["id", "v"]).to_pylist()
        assert got == [{"id": "k00", "v": "d"}], f"incremental ({begin}, {done[-1]}]"


@pytest.mark.parametrize("version", [6, 9])
def test_an_incremental_window_over_a_compaction_keeps_a_write_a_carried_delete_would_hide(
    tmp_path: Path, version: int
) -> None:
    """A carry-over log holds the deletes with ordering values that the compacted prefix left (tombstones), under the
    compaction's instant. A window holding the compaction merged such a delete as if written in the window, without
    the commit-time delete that had ended it (in a later log, outside the window): it beat the window's own lower
    upsert of the key, and the key the window wrote was missing. A window is now the table as of its end, kept where
    the commit time is in the window."""
    t = evt.HudiTable.create(
        tmp_path / "t", "d", "id", ordering_field="ts", event_time_field="ts", merge_mode="event_time",
        table_version=version, buckets=1,
    )  # fmt: skip

    def rows(*r: tuple[str, int, str]) -> pa.Table:
        return pa.table({"id": [x[0] for x in r], "ts": pa.array([BASE + x[1] for x in r], pa.int64()),
                         "v": [x[2] for x in r]})  # fmt: skip

    def delete(key: str, ts: int | None) -> None:
        t.write(pa.table({"id": [key], "ts": pa.array([None if ts is None else BASE + ts], pa.int64())}), "delete")

    t.write(rows(("x", 5_000, "a")))
    delete("k", 104_000)  # a tombstone: a later upsert of k with a lower ordering value loses to it ...
    t.write(rows(("y", 5_000, "b")))
    delete("k", None)  # ... until this commit-time delete, which any later write of k undoes
    c = t.compaction.schedule(strategy(10_000), now_ms=NOW)  # the prefix ends at y's log: k's ct-delete is a link
    assert c is not None and c.links
    t.write(rows(("k", 85_000, "c")))
    t.compaction.run(c)
    logs = [f for f in os.listdir(tmp_path / "t") if ".log." in f]
    assert any(".log.0_" in f for f in logs), f"a carry-over log among {logs}"
    snap = t.read()
    assert sorted(snap.select(["id", "v"]).to_pylist(), key=str) == [
        {"id": "k", "v": "c"},
        {"id": "x", "v": "a"},
        {"id": "y", "v": "b"},
    ]
    done = [i.completion_time or i.time for i in t.timeline.instants if i.is_completed]
    for begin in done[:-1]:
        window = t.read("incremental", begin=begin, end=done[-1])
        got = {r["id"]: r["v"] for r in window.select(["id", "v"]).to_pylist()}
        assert got.get("k") == "c", f"incremental ({begin}, {done[-1]}] misses k: {got}"


# -- 7. a plan scheduled on a Hudi 1.x table can run ----------------------------------------------------------------
@SKIP_NO_SHARED
@pytest.mark.parametrize("name", ["mor_v8_mor_boundary_windows", "mor_v9_mor_8i4u_commit_time"])
def test_a_compaction_scheduled_on_a_v8_or_v9_table_runs_and_changes_no_answer(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copytree(fixture_table_path(name), path, symlinks=True)
    t = evt.HudiTable.open(path)
    snap = t.read()
    before = {str(p): p.stat().st_size for p in path.rglob("*")}
    with pytest.raises(UnsupportedTableError):
        t.write(pa.table({"x": [1]}))  # no declared index: refused before anything is written
    assert {str(p): p.stat().st_size for p in path.rglob("*")} == before
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    assert t.compaction.validate(c).ok
    t.compaction.run(c)
    assert any(p.name == f"{c.instant}_{c.instant}.commit" for p in (path / ".hoodie" / "timeline").iterdir())
    same_any(t.read(), snap, f"{name}: snapshot unchanged by the compaction")
    same_any(rs(t.path), snap, f"{name}: hudi-rs snapshot unchanged by the compaction")


# -- 8. the right error types -----------------------------------------------------------------------------------------
def test_an_incremental_read_without_meta_fields_is_a_read_error(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    t.write(batch(["a"], 1, 1))
    props = Path(t.path) / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.populate.meta.fields=false\n")
    t = evt.HudiTable.open(t.path)
    with pytest.raises(ReadError, match="meta fields"):
        t.read("incremental", begin="0" * 17)


def test_a_not_null_column_reads_back(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    schema = pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("ts", pa.int64(), nullable=False),
            pa.field("ev", pa.int64(), nullable=False),
        ]
    )
    t.write(pa.table({"id": ["a", "b"], "ts": [1, 1], "ev": [BASE, BASE]}, schema=schema))
    t.write(pa.table({"id": ["a"], "ts": [2], "ev": [BASE]}, schema=schema))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    t.write(pa.table({"id": ["c"], "ts": [3], "ev": [BASE]}, schema=schema))
    got = t.read()
    assert sorted(got["id"].to_pylist()) == ["a", "b", "c"]
    same(got, rs(t.path), "ours vs hudi-rs with NOT NULL columns")


def test_wrong_argument_types_are_evt_errors(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    t.write(batch(["a"], 1, 1))
    for bad in (None, 5, ""):
        with pytest.raises(PlanValidationError):
            t.compaction.run(bad)  # type: ignore[arg-type]
        with pytest.raises(EvtError):
            t.compaction.unschedule(bad)  # type: ignore[arg-type]


# -- 9. metadata tables --------------------------------------------------------------------------------------------
def test_a_table_with_a_metadata_table_is_refused_and_can_be_disabled(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    t.write(batch(["a"], 1, 1))
    props = Path(t.path) / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    props.write_text(text + "hoodie.table.metadata.partitions=files,column_stats\n")
    (Path(t.path) / ".hoodie" / "metadata" / "files").mkdir(parents=True)
    (Path(t.path) / ".hoodie" / "metadata" / "files" / "x.log").write_bytes(b"mdt")
    t = evt.HudiTable.open(t.path)
    snapshot = sorted(str(p) for p in Path(t.path).rglob("*"))
    for call in (
        lambda: t.write(batch(["b"], 2, 2)),
        lambda: t.compaction.schedule(UnBoundedCompactionStrategy()),
        lambda: t.clean(dry_run=False),
    ):
        with pytest.raises(UnsupportedTableError, match="metadata table"):
            call()
    assert sorted(str(p) for p in Path(t.path).rglob("*")) == snapshot
    dry = t.metadata_table.disable()
    assert dry.dry_run and any("metadata" in f for f in dry.files_to_delete)
    assert sorted(str(p) for p in Path(t.path).rglob("*")) == snapshot
    done = t.metadata_table.disable(dry_run=False)
    assert not done.dry_run and not (Path(t.path) / ".hoodie" / "metadata").exists()
    t = evt.HudiTable.open(t.path)  # hoodie.properties still valid: checksum checked on open
    assert "files" not in (t.properties.get("hoodie.table.metadata.partitions") or "")
    t.write(batch(["b"], 2, 2))
    assert sorted(t.read()["id"].to_pylist()) == ["a", "b"]


# -- found by the model test ---------------------------------------------------------------------------------------
def test_a_failed_write_older_than_every_completed_commit_stays_invisible(tmp_path: Path) -> None:
    """After the first write is rolled back, a failed write is the oldest instant left: it is no archived commit."""
    from tests.services import failed_write

    tt = Tracked(make(tmp_path / "t"), "commit_time")
    first = tt.t.write(batch(["a"], 1, 1))
    tt.t.rollback(first)
    failed = failed_write(tt.t, batch(["a"], 2, 2))
    tt.upsert(batch(["a"], 3, 3))
    same(tt.t.read(), tt.expected(), "ours with the failed write pending")
    same(rs(tt.t.path), tt.expected(), "hudi-rs with the failed write pending")
    tt.t.rollback(failed)
    same(tt.t.read(), tt.expected(), "ours after rolling the failed write back")


def test_a_rollback_command_block_in_a_leftover_log_still_hides_its_target(tmp_path: Path) -> None:
    """A failed write's blocks sit in a shared log (storage with append) and a rollback command block, written later
    into a new log version, removes them. Once the instants before it are archived the failed instant counts as
    "before the timeline", so only the command block hides its blocks — also from a compaction whose prefix holds
    the shared log while the command block's log stays behind."""
    from tests.services import failed_write

    t = make(tmp_path / "t", "commit_time")
    w1 = t.write(batch(["a", "b"], 1, 1))
    shared = next(p for p in Path(t.path).rglob(".*.log.*"))
    before = {p.name for p in Path(t.path).rglob(".*.log.*")}
    failed = failed_write(t, batch(["a", "z"], 2, 2))
    for p in Path(t.path).rglob(".*.log.*"):  # emulate append: the failed blocks move into the shared log
        if p.name not in before:
            with open(shared, "ab") as out:
                out.write(p.read_bytes())
            p.unlink()
    res = t.rollback(failed)
    assert res.command_block_logs and not res.deleted
    t.write(batch(["c"], 3, 900))  # after the command block's log, with events above the threshold
    for f in (Path(t.path) / ".hoodie").glob(f"{w1}.*"):  # archive the first commit
        f.unlink()
    t = evt.HudiTable.open(t.path)
    snap = t.read()
    assert sorted(snap["id"].to_pylist()) == ["a", "b", "c"] and "z" not in snap["id"].to_pylist()
    c = t.compaction.schedule(strategy(100), now_ms=NOW)
    assert c is not None and c.links
    t.compaction.run(c)
    same(t.read(), snap, "ours: the compaction does not resurrect the rolled-back write")
    same(rs(t.path), snap, "hudi-rs: the compaction does not resurrect the rolled-back write")
