"""The data-safety model test: random lifecycles of a table against an independent model of Hudi's answers.

Rules are what data engineers and table services do: upserts (in-batch duplicates, late and fresh ordering values,
soft deletes), deletes with and without an ordering value, writes that fail (rolled back at once or later), the
last write rolled back, event-time and unbounded compactions scheduled in every link mode and timing (with or
without exact split), runs, writes landing between schedule and run, ``kill -9`` at fault points of writes,
schedules, runs and cleans followed by further writes and the documented recovery (re-run, rollback, resume),
unschedule, and cleans with both policies.

After every step:

* our snapshot equals the model (:mod:`tests.safety.model`), and hudi-rs's does too (unless a compaction is pending:
  hudi-rs drops v6 logs named with a pending compaction, ``hudi-rs-notes.md``);
* our read-optimized view equals hudi-rs's and the model's base rows; after a compaction every RO row is one of the
  two legitimate forms (the model fails otherwise), and a carry-over log exists exactly where the model needs one;
* the freshness the table reports holds: RO restricted to events ≤ it equals the snapshot restricted the same way;
* the latest write's incremental window returns each record once, only rows committed in it, as hudi-rs does — or
  a ``ReadError`` when a clean removed its files;
* time travel to an earlier write returns exactly what the snapshot was then — or a ``ReadError`` past a clean;
* no file a live slice needs is missing and no symlink dangles; a pending plan validates.

``EVT_MODEL_EXAMPLES`` (default 6) and ``EVT_MODEL_STEPS`` (default 14) size the run; the long run the README reports
uses many more, and ``EVT_MODEL_REPORT=<file>`` appends each sequence's number of checked steps to a file.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import PendingTableServiceError, ReadError, TimelineError
from evt_toolkit.format.names import LogFileName
from evt_toolkit.format.records import CompactionPlan
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from evt_toolkit.table.timeline import COMPACTION, DELTA_COMMIT
from tests.faults import run_child, save_batch
from tests.normalize import assert_same_rows
from tests.safety.model import Model, Rec
from tests.services import (
    failed_write,
    incremental_unsettled,
    missing_live_files,
    recover_and_compact_fully,
    time_travel_unsettled,
    visible_dangling_symlinks,
)

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_MODEL_EXAMPLES", "6"))
STEPS = int(os.environ.get("EVT_MODEL_STEPS", "14"))
BASE = 1_700_000_000_000
COLS = ["id", "region", "ts", "ev", "v"]
KEYS = st.integers(0, 11)

_run_faults = ["run.after_inflight", "links.after_link", "run.after_links", "run.after_task", "run.before_commit"]
_schedule_faults = ["links.after_link", "schedule.after_links", "schedule.before_plan"]
_write_faults = [
    "write.after_requested",
    "write.after_inflight",
    "write.after_task",
    "write.before_complete",
    "write.after_complete",
]
_clean_faults = ["clean.after_requested", "clean.after_inflight", "clean.after_delete"]
_rollback_faults = [
    "rollback.after_requested",
    "rollback.after_inflight",
    "rollback.after_delete",
    "rollback.after_blocks",
    "rollback.before_complete",
]


def _rs(path: str, *, ro: bool = False, incremental: tuple[str, str] | None = None) -> pa.Table:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    table = b.build()
    if incremental is not None:
        opts = (
            hudi.HudiReadOptions()
            .with_query_type(hudi.HudiQueryType.Incremental)
            .with_start_timestamp(incremental[0])
            .with_end_timestamp(incremental[1])
        )
        batches = table.read(opts)
    else:
        batches = table.read()
    return pa.Table.from_batches(batches) if batches else pa.table({c: pa.array([], pa.int64()) for c in COLS})


def _as_table(rows: dict[str, dict[str, Any]]) -> pa.Table:
    if not rows:
        return pa.table({c: pa.array([], pa.int64()) for c in COLS})
    return pa.Table.from_pylist([{c: r[c] for c in COLS} for r in rows.values()])


def _same(a: pa.Table, b: pa.Table, what: str) -> None:
    assert_same_rows(a, b, COLS if (a.num_rows or b.num_rows) else [], what)


def _le(t: pa.Table, threshold: int) -> pa.Table:
    return t.filter(pc.fill_null(pc.less_equal(t["ev"], threshold), False)) if t.num_rows else t


class Lifecycle(RuleBasedStateMachine):
    """One table, one model."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="evt-model-"))
        self.t: evt.HudiTable
        self.model: Model
        self.ts = 100
        self.group_of: dict[str, str] = {}
        self.failed: list[str] = []
        self.failed_keys: dict[str, frozenset[str]] = {}
        self.writes: list[str] = []
        self.history: dict[str, pa.Table] = {}
        self.last_write_units: list[str] | None = None
        self.rng = random.Random(0)
        self.steps = 0

    @initialize(
        merge_mode=st.sampled_from(["commit_time", "event_time"]),
        buckets=st.sampled_from([1, 2]),
        seed=st.integers(0, 2**16),
        table_version=st.sampled_from([6, 8, 9]),
    )
    def start(self, merge_mode: str, buckets: int, seed: int, table_version: int) -> None:
        self.rng = random.Random(seed)
        self.merge_mode = merge_mode
        self.t = evt.HudiTable.create(
            self.root / "t",
            "m",
            "id",
            partition_by="region",
            ordering_field="ts",
            event_time_field="ev",
            buckets=buckets,
            merge_mode=merge_mode,
            table_version=table_version,
        )
        self.model = Model(event_time=merge_mode == "event_time")
        self._upsert([(i, 500, False) for i in range(8)], late=False)

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        report = os.environ.get("EVT_MODEL_REPORT")
        if report:  # one line per sequence: its number of checked steps (long runs report their size)
            with open(report, "a", encoding="utf-8") as out:
                out.write(f"{self.steps}\n")

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _pending(self) -> list[str]:
        return [i.time for i in self.t.refresh().timeline.pending_compactions()]

    def _frame(self, items: list[tuple[int, int, bool]], ts: list[int]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "id": pd.array([i for i, _, _ in items], dtype="int64"),
                "region": [f"r{i % 2}" for i, _, _ in items],
                "ts": pd.array(ts, dtype="int64"),
                "ev": pd.array([BASE + ev for _, ev, _ in items], dtype="int64"),
                "v": [float(self.ts * 100 + i) for i, _, _ in items],
                "_hoodie_is_deleted": [d for _, _, d in items],
            }
        )

    def _learn_groups(self) -> None:
        """Which file group each key lives in — by (partition, bucket), which survives a group being re-created
        after the write that created it was rolled back (a new file id, the same bucket)."""
        snap = self.t.read(columns=["id", "_hoodie_partition_path", "_hoodie_file_name"])
        for i, part, name in zip(
            snap["id"].to_pylist(),
            snap["_hoodie_partition_path"].to_pylist(),
            snap["_hoodie_file_name"].to_pylist(),
            strict=True,
        ):
            self.group_of.setdefault(str(i), _group(part, str(name)))

    def _apply_write(self, instant: str, df: pd.DataFrame, op: str) -> None:
        """Give the model a completed write: pre-combined per key (greatest ordering, ties to the later row)."""
        self.t.refresh()
        if any(str(i) not in self.group_of for i in df["id"]):
            self._learn_groups()
        best: dict[str, dict[str, Any]] = {}
        for row in df.to_dict("records"):
            k = str(row["id"])
            if k not in best or "ts" not in row or row["ts"] >= best[k]["ts"]:
                best[k] = row
        units: dict[str, list[Rec]] = {}
        for k, row in best.items():
            group = self.group_of.get(k)
            assert group is not None, f"key {k} was written but is nowhere in the table"
            if op == "delete" and group not in self.model.groups:
                continue  # no file group: the bucket index knows no location, the writer drops the delete
            if op == "delete":
                rec = Rec(k, "del" if "ts" in row else "ct", row.get("ts"))
            else:
                rec = Rec(k, "data", int(row["ts"]), {c: row[c] for c in [*COLS, "_hoodie_is_deleted"]})
            units.setdefault(group, []).append(rec)
        for group, recs in units.items():
            self.model.write(group, recs)
        self.last_write_units = list(units)
        self.writes.append(instant)
        self.history[instant] = _as_table(self.model.snapshot())

    def _upsert(self, items: list[tuple[int, int, bool]], *, late: bool) -> None:
        self.ts += 10
        ts = [self.ts - (self.rng.randint(1, 25) if late and self.rng.random() < 0.6 else 0) for _ in items]
        # Soft deletes only for keys the table has seen (a first write that is a delete would be no key at all).
        items = [(i, ev, d and str(i) in self.group_of) for i, ev, d in items]
        df = self._frame(items, ts)
        instant = self.t.write(df)
        self._apply_write(instant, df, "upsert")

    # -- rules: writes -----------------------------------------------------------------------------------------------
    @rule(
        items=st.lists(st.tuples(KEYS, st.integers(0, 1000), st.booleans()), min_size=1, max_size=6),
        late=st.booleans(),
    )
    def upsert(self, items: list[tuple[int, int, bool]], late: bool) -> None:
        self._upsert([(i, ev, d and self.rng.random() < 0.2) for i, ev, d in items], late=late)

    @rule(ids=st.lists(KEYS, min_size=1, max_size=4), with_ordering=st.booleans())
    def delete(self, ids: list[int], with_ordering: bool) -> None:
        known = [i for i in ids if str(i) in self.group_of]
        if not known:
            return
        self.ts += 10
        df = pd.DataFrame({"id": pd.array(known, dtype="int64"), "region": [f"r{i % 2}" for i in known]})
        if with_ordering:
            df["ts"] = pd.array([self.ts - self.rng.randint(0, 30) for _ in known], dtype="int64")
        instant = self.t.write(df, "delete")
        if instant:
            self._apply_write(instant, df, "delete")

    @rule(ids=st.lists(KEYS, min_size=1, max_size=4), now=st.booleans())
    def failed_write(self, ids: list[int], now: bool) -> None:
        self.ts += 10
        failed = failed_write(self.t, self._frame([(i, 100, False) for i in ids], [self.ts] * len(ids)))
        self.failed_keys[failed] = frozenset(str(i) for i in ids)
        if now:
            assert self.t.rollback(failed).target == failed
        else:
            self.failed.append(failed)

    @precondition(lambda self: bool(self.failed))
    @rule()
    def roll_back_failed_writes(self) -> None:
        for f in self.failed:
            assert self.t.rollback(f).target == f
        self.failed = []

    @precondition(lambda self: self.last_write_units is not None)
    @rule()
    def roll_back_the_last_write(self) -> None:
        tl = self.t.refresh().timeline
        last = self.writes[-1]
        later = [i for i in tl.instants if i.time > last and i.action in (DELTA_COMMIT, COMPACTION, "commit")]
        if later or self.failed:
            return
        self.t.rollback(last)
        assert self.last_write_units is not None
        for group in self.last_write_units:
            g = self.model.groups[group]
            g.units.pop()
            if not g.units and not g.base:
                del self.model.groups[group]  # the write created the file group: it is gone with it
        self.writes.pop()
        self.history.pop(last)
        self.last_write_units = None

    # -- rules: compaction ---------------------------------------------------------------------------------------------
    @rule(
        threshold=st.one_of(st.none(), st.integers(0, 1000)),
        link_mode=st.sampled_from(["copy", "symlink"]),
        link_timing=st.sampled_from(["schedule", "execute"]),
        exact_split=st.booleans(),
    )
    def schedule(self, threshold: int | None, link_mode: str, link_timing: str, exact_split: bool) -> None:
        strategy = (
            UnBoundedCompactionStrategy()
            if threshold is None
            else EventTimeBasedCompactionStrategy(threshold=BASE + threshold)
        )
        with contextlib.suppress(PendingTableServiceError):  # a write or a compaction is pending: nothing to do
            self.t.compaction.schedule(
                strategy,
                link_mode=link_mode,
                link_timing=link_timing,
                exact_split=exact_split and threshold is not None,
            )

    @precondition(lambda self: bool(self._pending()))
    @rule()
    def run(self) -> None:
        c = self._pending()[0]
        plan = self.t.timeline.compaction_plan(self.t.timeline.instant(c, COMPACTION))
        self.t.compaction.run(c)
        self._apply_compaction(c, plan)

    def _apply_compaction(self, c: str, plan: CompactionPlan) -> None:
        self.t.refresh()
        ro = self.t.read("read_optimized")
        ro_by_group: dict[str, dict[str, dict[str, Any] | None]] = {}
        for row in ro.select([*COLS, "_hoodie_partition_path", "_hoodie_file_name"]).to_pylist():
            group = _group(row["_hoodie_partition_path"], row["_hoodie_file_name"])
            ro_by_group.setdefault(group, {})[str(row["id"])] = {c2: row[c2] for c2 in COLS}
        slices = {_group(r["partition_path"], r["file_id"]): r for r in self.t.file_slices().to_pylist()}
        for op in plan.operations:
            group = _group(op.partition_path, op.file_id)
            n = len(op.delta_files)
            seen = ro_by_group.get(group, {})
            has_carry = any(
                (p := LogFileName.parse(name)) is not None and p.version == 0 and p.base_instant == c
                for name in slices[group]["log_files"]
            )
            rows = _with_model_rows(seen, self.model, group)
            problems, carried = self.model.compact(group, n, rows)
            assert not problems, problems
            assert has_carry == carried, f"group {group}: carry-over log {has_carry}, the model expects {carried}"
        self.last_write_units = None

    @precondition(lambda self: bool(self._pending()))
    @rule(dry=st.booleans())
    def unschedule(self, dry: bool) -> None:
        c = self._pending()[0]
        report = self.t.compaction.unschedule(c, dry_run=dry)
        if report.refused_reason is None and not dry:
            assert c not in self._pending()

    @precondition(lambda self: any(i.is_inflight for i in self.t.refresh().timeline.pending_compactions()))
    @rule()
    def roll_back_the_run(self) -> None:
        c = next(i.time for i in self.t.timeline.pending_compactions() if i.is_inflight)
        assert self.t.rollback(c).plan_requested_again

    @rule(policy=st.sampled_from([KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS]), retained=st.integers(1, 3))
    def clean(self, policy: str, retained: int) -> None:
        dry = self.t.clean(policy, retained)
        done = self.t.clean(policy, retained, dry_run=False)
        if not done.resumed:
            assert set(done.deleted) == set(dry.files)

    @rule()
    def recover_and_compact_fully(self) -> None:
        """The documented recovery (:func:`tests.services.recover_and_compact_fully`) always brings the table back to
        fully compacted; the read-optimized view is then the snapshot."""
        recover_and_compact_fully(self.t, self.failed, self._apply_compaction)
        self.failed = []
        _same(self.t.refresh().read("read_optimized"), self.t.read(), "RO vs snapshot after a full compaction")

    # -- rules: crashes ------------------------------------------------------------------------------------------------
    @rule(
        what=st.sampled_from(["write", "schedule", "run", "clean", "rollback"]),
        pick=st.integers(0, 4),
        recover=st.booleans(),
    )
    def crash(self, what: str, pick: int, recover: bool) -> None:
        path = Path(self.t.path)
        if what == "write":
            fault = _write_faults[pick % len(_write_faults)]
            self.ts += 10
            df = self._frame([(i, 300 + i, False) for i in (pick, pick + 3)], [self.ts, self.ts])
            before = {i.time for i in self.t.refresh().timeline.instants}
            proc = run_child(path, fault, "write", str(save_batch(df, self.root / "batch.parquet")), "upsert")
            assert proc.returncode in (0, -9), proc.stderr[-2000:]
            new = [i for i in self.t.refresh().timeline.instants if i.time not in before and i.action == DELTA_COMMIT]
            for inst in new:
                if inst.is_completed:
                    self._apply_write(inst.time, df, "upsert")
                else:
                    self.failed.append(inst.time)
                    self.failed_keys[inst.time] = frozenset(str(i) for i in (pick, pick + 3))
        elif what == "schedule":
            fault = _schedule_faults[pick % len(_schedule_faults)]
            mode = "symlink" if pick % 2 else "copy"
            timing = "execute" if pick >= 2 else "schedule"
            proc = run_child(path, fault, "schedule", str(BASE + 300 + 100 * pick), mode, timing)
            assert proc.returncode in (0, -9) or "PendingTableServiceError" in proc.stderr, proc.stderr[-2000:]
        elif what == "run":
            pending = self._pending()
            if not pending:
                return
            c = pending[0]
            plan = self.t.timeline.compaction_plan(self.t.timeline.instant(c, COMPACTION))
            proc = run_child(path, _run_faults[pick % len(_run_faults)], "run", c)
            assert proc.returncode in (0, -9), proc.stderr[-2000:]
            if c not in self._pending():  # the fault point was not on this run's path: it completed
                self._apply_compaction(c, plan)
            elif recover:
                self.t.compaction.run(c)
                self._apply_compaction(c, plan)
        elif what == "clean":
            fault = _clean_faults[pick % len(_clean_faults)]
            proc = run_child(path, fault, "clean", KEEP_LATEST_FILE_VERSIONS, "1")
            assert proc.returncode in (0, -9), proc.stderr[-2000:]
            if recover:
                self.t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
        else:
            # A rollback of a failed write killed half-way: resumed (now or by the next rollback rule).
            if not self.failed:
                return
            target = self.failed[0]
            proc = run_child(path, _rollback_faults[pick % len(_rollback_faults)], "rollback", target)
            assert proc.returncode in (0, -9), proc.stderr[-2000:]
            # The child may have finished the rollback (a resumed one passes no fault point of its own): look again.
            present = target in {i.time for i in self.t.refresh().timeline.instants}
            if recover or not present:
                if present:
                    assert self.t.rollback(target).target == target
                self.failed.remove(target)
        self.t.refresh()

    # -- invariants ------------------------------------------------------------------------------------------------
    @invariant()
    def snapshot_is_the_model(self) -> None:
        self.steps += 1
        expected = _as_table(self.model.snapshot())
        _same(self.t.refresh().read(), expected, "snapshot vs model")
        if not self.t.timeline.pending_compactions():
            _same(_rs(self.t.path), expected, "hudi-rs snapshot vs model")

    @invariant()
    def read_optimized_is_the_models_base(self) -> None:
        ro = self.t.read("read_optimized")
        _same(ro, _as_table(self.model.ro()), "RO vs the model's base rows")
        _same(_rs(self.t.path, ro=True), ro, "hudi-rs RO vs ours")

    @invariant()
    def freshness_holds(self) -> None:
        f = self.t.ro_freshness()
        if f.threshold_ms is None:
            return
        _same(_le(self.t.read("read_optimized"), f.threshold_ms), _le(self.t.read(), f.threshold_ms), "freshness")

    @invariant()
    def latest_window_is_exactly_once(self) -> None:
        if len(self.writes) < 2:
            return
        begin, end = self.writes[-2], self.writes[-1]
        try:
            ours = self.t.read("incremental", begin=begin, end=end)
        except ReadError as exc:
            assert "earliest instant still readable" in str(exc) or incremental_unsettled(self.t, begin, exc), exc
            return
        keys = ours["_hoodie_record_key"].to_pylist()
        assert len(keys) == len(set(keys)), "a record twice in one incremental window"
        if self.t.config.timeline_layout >= 2:
            # Hudi 1.x windows are on completion time: the commits that completed in (begin, end] count.
            admitted = {
                i.time
                for i in self.t.timeline.completed_commits()
                if i.completion_time is not None and begin < i.completion_time <= end
            }
            assert set(ours["_hoodie_commit_time"].to_pylist()) <= admitted
        else:
            assert all(begin < x <= end for x in ours["_hoodie_commit_time"].to_pylist())
        if not self.t.timeline.pending_compactions():
            window_as_hudi_rs(self, ours, begin, end)

    @invariant()
    def time_travel_is_history(self) -> None:
        if not self.writes:
            return
        i = self.writes[self.rng.randrange(len(self.writes))]
        try:
            got = self.t.read(as_of=i)
        except ReadError as exc:
            assert "earliest instant still readable" in str(exc) or time_travel_unsettled(self.t, i, exc), exc
            return
        _same(got, self.history[i], f"time travel to {i}")

    @invariant()
    def nothing_needed_is_missing(self) -> None:
        assert missing_live_files(self.t) == []
        assert visible_dangling_symlinks(self.t) == []
        for c in self._pending():
            try:
                report = self.t.compaction.validate(c)
            except TimelineError:
                continue
            plan_links = report.ok or all("link" in p for p in report.problems)
            assert plan_links, report.problems


def window_as_hudi_rs(m: Lifecycle, ours: pa.Table, begin: str, end: str) -> None:
    """Our incremental window ``(begin, end]`` against hudi-rs's, for the records that won.

    hudi-rs merges a window's log records without the rows outside it, so on an event-time table a late record that
    lost the merge to an older row (in a base file since a compaction) comes back from it; a merged read, ours and
    Hudi's ``HoodieMergeOnReadRDD``, drops it (``test_history_model`` leaves the same difference open); likewise a
    record a delete without an ordering value removed later in the window. So on such tables every row we return
    hudi-rs returns, and a row only hudi-rs returns is of a key we return nothing for, which the table as of ``end``
    (checked against the model by ``time_travel_is_history``) has deleted or holds with a greater ordering value.
    """
    rs = _rs(m.t.path, incremental=(begin, end))
    if m.merge_mode != "event_time":
        _same(ours, rs, f"incremental ({begin}, {end}] vs hudi-rs")
        return
    try:
        state = m.t.read(as_of=end)
    except ReadError as exc:
        assert "earliest instant still readable" in str(exc) or time_travel_unsettled(m.t, end, exc), exc
        return
    as_of_end = {r["id"]: r["ts"] for r in state.select(["id", "ts"]).to_pylist()}
    ours_rows = {tuple(r[c] for c in COLS) for r in ours.select(COLS).to_pylist()} if ours.num_rows else set()
    rs_rows = {tuple(r[c] for c in COLS) for r in rs.select(COLS).to_pylist()} if rs.num_rows else set()
    assert ours_rows <= rs_rows, f"incremental ({begin}, {end}]: rows hudi-rs does not return {ours_rows - rs_rows}"
    for row in rs_rows - ours_rows:
        rid, ts = row[COLS.index("id")], row[COLS.index("ts")]
        assert rid not in {r[0] for r in ours_rows}, f"incremental ({begin}, {end}]: {row} vs ours"
        # Deleted by the window's end (hudi-rs keeps a record a later delete without an ordering value removes), or
        # superseded by a greater event time.
        assert as_of_end.get(rid) is None or as_of_end[rid] > ts, (
            f"incremental ({begin}, {end}]: hudi-rs returns {row}, we return nothing for its key"
        )


def _group(partition: str, file_name: str) -> str:
    """A file group's identity for the model: its partition and bucket (the first 8 characters of the file id)."""
    return f"{partition}/{file_name.split('_')[0][:8]}"


def _with_model_rows(
    seen: dict[str, dict[str, Any] | None], model: Model, group: str
) -> dict[str, dict[str, Any] | None]:
    """Every key the model knows in ``group`` with its RO row (``None`` when the RO view has none)."""
    g = model.groups.get(group)
    keys = set(seen) | (set(g.base) | {r.key for u in g.units for r in u} if g else set())
    return {k: seen.get(k) for k in keys}


Lifecycle.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_lifecycle = Lifecycle.TestCase
