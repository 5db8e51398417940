"""Seeded sequences of overlapping operations on Hudi 1.x tables (versions 8 and 9), against a model of Hudi's answers.

A write is paused between two of its storage steps — after taking its instant (before its ``requested`` file), after
its ``requested``/``inflight`` files, or after its logs — and while it is paused other operations run through another
handle of the table: writes that complete first (requested later, completed earlier), compaction schedules
(event-time and full, copy and symlink links, made at schedule or execute time) and runs, cleans, failed writes,
rollbacks of earlier failed writes and of the last write (by requested or by completion time). Then the paused write
goes on, completes or is refused (and is rolled back at once or later). Between such steps plain writes, failed
writes, schedules, runs, cleans and rollbacks run in turn.

The model: the committed writes replayed in *requested* order (Hudi 1.x replays a slice's logs by the instant in
their names), with :class:`tests.oracle.Oracle`'s merge rules. After every step:

* our snapshot and hudi-rs's equal the model;
* our read-optimized view equals hudi-rs's, and the freshness the table reports holds (RO restricted to events at
  or before it equals the snapshot restricted the same way);
* time travel to every requested and completion time on the timeline: refused (``ReadError``) at or after the first
  write that has not completed, or where a clean removed the state; otherwise the model's writes requested at or
  before it — ours and hudi-rs's;
* every incremental window between consecutive completion times (completion-time bounds on 1.x): each key once,
  only rows of the commits that completed in it, each row the very record that commit wrote;
* no file a live slice needs is missing, no visible symlink dangles;
* an operation refused in such a state raised an ``EvtError`` (the checks above then hold unchanged).

The same sequences run on a copy of a stock v9 table with a metadata table (SIMPLE index, updates and deletes of
its keys, event-time ordering with frequent ties): our snapshot and hudi-rs's (listing through the metadata table)
equal the model, our read-optimized view hudi-rs's, and the ``files`` partition lists exactly the committed files.

At the end the documented recovery — roll back the writes left pending, run the pending plans (one fenced off is
unscheduled and scheduled again), a full compaction and a clean — ends at the model's answer.

``EVT_1X_ORDER_SEEDS`` (default 2) sequences of ``EVT_1X_ORDER_STEPS`` (default 8) steps from seed
``EVT_1X_ORDER_SEED`` (default 0); a failure names the seed and the steps taken.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
import evt_toolkit.write.writer as writer_module
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import (
    EvtError,
    PendingTableServiceError,
    PlanValidationError,
    ReadError,
    RollbackError,
    WriteError,
)
from tests.oracle import Oracle
from tests.services import failed_write, missing_live_files, visible_dangling_symlinks
from tests.tables import BASE, create

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SEEDS = int(os.environ.get("EVT_1X_ORDER_SEEDS", "2"))
STEPS = int(os.environ.get("EVT_1X_ORDER_STEPS", "8"))
SEED0 = int(os.environ.get("EVT_1X_ORDER_SEED", "0"))
KEYS = 8

Answer = dict[int, tuple[int, float]]


def _answer(t: pa.Table) -> Answer:
    if t.num_rows == 0:
        return {}
    return {r["id"]: (r["ts"], r["v"]) for r in t.select(["id", "ts", "v"]).to_pylist()}


def _rs(path: str, *, ro: bool = False, as_of: str | None = None, window: tuple[str, str] | None = None) -> pa.Table:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    opts = hudi.HudiReadOptions()
    if as_of is not None:
        opts = opts.with_as_of_timestamp(as_of)
    if window is not None:
        opts = (
            opts.with_query_type(hudi.HudiQueryType.Incremental)
            .with_start_timestamp(window[0])
            .with_end_timestamp(window[1])
        )
    batches = b.build().read(opts)
    return pa.Table.from_batches(batches) if batches else pa.table({})


class Sequence:
    """One table, the model of what was committed on it, and the steps."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.version = self.rng.choice([8, 9])
        self.merge_mode = self.rng.choice(["commit_time", "event_time"])
        self.t = create(root / "t", self.merge_mode, buckets=2, table_version=self.version)
        self.other = evt.HudiTable.open(self.t.path)
        self.committed: dict[str, tuple[str, pd.DataFrame]] = {}  # requested time -> (operation, batch)
        self.failed: list[str] = []
        self.ts = 10
        self.n = 0
        self.steps: list[str] = []

    # -- batches and the model ------------------------------------------------------------------------------------
    def batch(self, *, upsert: bool = False) -> tuple[str, pd.DataFrame]:
        ids = sorted(self.rng.sample(range(KEYS), self.rng.randint(1, 4)))
        self.ts += 1
        # Ties and late (lower) ordering values now and then: event-time merges must order them as Hudi does.
        ts = self.ts - self.rng.choice([0, 0, 0, 1, 3])
        self.n += 1
        evs = [self.rng.choice([10, 50, 90, 300, 900]) for _ in ids]
        df = pd.DataFrame(
            {
                "id": pd.array(ids, dtype="int64"),
                "region": [f"r{i % 2}" for i in ids],
                "ts": pd.array([ts] * len(ids), dtype="int64"),
                "ev": pd.array([BASE + e for e in evs], dtype="int64"),
                "v": [float(self.n * 100 + i) for i in ids],
                "_hoodie_is_deleted": [False] * len(ids),
            }
        )
        if not upsert and self.rng.random() < 0.2:
            return "delete", df[["id", "region", "ts"]]
        return "upsert", df

    def model(self, at: str | None = None) -> Answer:
        o = Oracle(["id"], ["region"], "ts", self.merge_mode)
        for requested in sorted(self.committed):
            if at is None or requested <= at:
                op, df = self.committed[requested]
                o.apply(op, df)
        r = o.result()
        return {int(x["id"]): (int(x["ts"]), float(x["v"])) for x in r.to_dict("records")} if len(r) else {}

    def written(self, requested: str) -> dict[int, tuple[int, float]]:
        op, df = self.committed[requested]
        if op == "delete":
            return {}
        return {int(r["id"]): (int(r["ts"]), float(r["v"])) for r in df.to_dict("records")}

    # -- operations, on either handle -----------------------------------------------------------------------------
    def write(self, t: evt.HudiTable) -> None:
        op, df = self.batch()
        instant = t.refresh().write(df, op)
        if instant:
            self.committed[instant] = (op, df)

    def fail_a_write(self, t: evt.HudiTable) -> None:
        _, df = self.batch(upsert=True)
        self.failed.append(failed_write(t.refresh(), df))

    def roll_back_failed(self, t: evt.HudiTable) -> None:
        # The earliest-requested first or last: later writes may have completed since it failed.
        order = sorted(self.failed, reverse=self.rng.random() < 0.5)
        for f in order:
            t.refresh().rollback(f)
            self.failed.remove(f)

    def roll_back_the_last(self, t: evt.HudiTable) -> None:
        """The rollback of the last completed write by requested time (which may have completed before an earlier
        requested one) or by completion time (refused when a write was requested after it)."""
        done = [i for i in t.refresh().timeline.completed_commits() if i.action == "deltacommit"]
        if not done:
            return
        by = self.rng.choice(["requested", "completion"])
        target = max(done, key=lambda i: (i.completion_time or i.time) if by == "completion" else i.time).time
        try:
            t.rollback(target)
        except RollbackError:
            later = [i for i in t.refresh().timeline.instants if i.time > target]
            assert later, f"the rollback of {target}, the last write, was refused"
            return
        del self.committed[target]

    def schedule(self, t: evt.HudiTable) -> None:
        strategy = (
            UnBoundedCompactionStrategy()
            if self.rng.random() < 0.4
            else EventTimeBasedCompactionStrategy(threshold=BASE + self.rng.choice([60, 100, 400]))
        )
        try:
            t.refresh().compaction.schedule(
                strategy,
                link_mode=self.rng.choice(["copy", "symlink"]),
                link_timing=self.rng.choice(["schedule", "schedule", "execute"]),
            )
        except PendingTableServiceError:
            pending = t.refresh().timeline
            assert pending.inflight_writes() or pending.pending_compactions(), "a schedule refused for nothing"

    def run(self, t: evt.HudiTable, *, recover: bool = False) -> None:
        for inst in t.refresh().timeline.pending_compactions():
            try:
                t.refresh().compaction.run(inst.time)
            except PlanValidationError:
                # Fence 2: a write requested before the plan completed after it. The way out: unschedule, plan again.
                if not recover and self.rng.random() < 0.5:
                    continue
                report = t.refresh().compaction.unschedule(inst.time, dry_run=False)
                assert report.refused_reason is None, report.refused_reason

    def clean(self, t: evt.HudiTable) -> None:
        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        t.refresh().clean(policy, self.rng.randint(1, 3), dry_run=False)

    def inner(self, name: str) -> Callable[[evt.HudiTable], None]:
        return {
            "write": self.write,
            "failed-write": self.fail_a_write,
            "rollback": self.roll_back_failed,
            "rollback-last": self.roll_back_the_last,
            "schedule": self.schedule,
            "run": self.run,
            "clean": self.clean,
        }[name]

    def overlapped_write(self) -> None:
        """A write paused at ``pause`` while other operations run through the other handle."""
        pause = self.rng.choice(["instant", "requested", "logs"])
        names = self.rng.choices(
            ["write", "schedule", "run", "clean", "failed-write", "rollback", "rollback-last"], k=3
        )
        if pause == "instant":
            # The race that matters most: a compaction scheduled (and mostly run) between this write's instant and
            # its requested file.
            names[:2] = ["schedule", "run"] if self.rng.random() < 0.7 else ["schedule", names[1]]
        self.steps.append(f"overlap@{pause}[{','.join(names)}]")
        done: list[str] = []

        def in_between() -> None:
            if done:
                return
            for name in names:
                done.append(name)
                if name == "rollback" and not self.failed:
                    continue
                try:
                    self.inner(name)(self.other)
                except PendingTableServiceError:
                    # A schedule refused while the paused write is pending (fence 1), or a clean or run waiting.
                    assert pause != "instant" or name != "schedule", "a schedule refused with no write pending"

        op, df = self.batch()
        real_instant = writer_module.new_instant_time
        real_executor = writer_module.local_executor

        def paused_instant(*args: Any, **kwargs: Any) -> str:
            out = real_instant(*args, **kwargs)
            if pause == "instant":
                in_between()
            return out

        def executor(spec: Any, tasks: Any) -> Any:
            if pause == "requested":
                in_between()
            out = real_executor(spec, tasks)
            if pause == "logs":
                in_between()
            return out

        writer_module.new_instant_time = paused_instant  # type: ignore[assignment]
        try:
            try:
                instant = self.t.refresh().write(df, op, executor=executor)
            except WriteError as exc:
                # Refused after its logs (a compaction requested after its instant plans its file groups): left
                # inflight, rolled back now or later.
                left = [i.time for i in self.t.refresh().timeline.inflight_writes() if i.time in str(exc)]
                assert left, f"a refused write left nothing inflight: {exc}"
                self.failed.append(left[0])
                instant = ""
        finally:
            writer_module.new_instant_time = real_instant
        assert done, "the operations in between did not run"
        if instant:
            self.committed[instant] = (op, df)

    def step(self) -> None:
        name = self.rng.choice(
            ["overlap"] * 4
            + ["write", "write", "failed-write", "rollback", "rollback-last", "schedule", "run", "clean"]
        )
        if name == "overlap":
            self.overlapped_write()
            return
        self.steps.append(name)
        if name == "rollback" and not self.failed:
            return
        # A clean, schedule or run waiting for a pending write or plan changes nothing (checked below).
        with contextlib.suppress(PendingTableServiceError):
            self.inner(name)(self.t)

    # -- checks ---------------------------------------------------------------------------------------------------
    def where(self) -> str:
        return f"seed {self.seed} (v{self.version}, {self.merge_mode}), steps {self.steps}"

    def check(self) -> None:
        t = evt.HudiTable.open(self.t.path)
        where = self.where()
        want = self.model()
        assert _answer(t.read()) == want, f"our snapshot, {where}"
        assert _answer(_rs(t.path)) == want, f"hudi-rs's snapshot, {where}"
        ro = t.read("read_optimized")
        assert _answer(ro) == _answer(_rs(t.path, ro=True)), f"RO against hudi-rs, {where}"
        f = t.ro_freshness().threshold_ms
        if f is not None:
            snap = t.read()
            le = {k: v for k, v in _answer(snap.filter(pa.compute.less_equal(snap["ev"], f))).items()}
            ro_le = _answer(ro.filter(pa.compute.less_equal(ro["ev"], f))) if ro.num_rows else {}
            assert ro_le == le, f"freshness {f} does not hold, {where}"
        assert not missing_live_files(t), f"missing live files {missing_live_files(t)}, {where}"
        assert not visible_dangling_symlinks(t), where
        self.check_time_travel(t, where)
        self.check_windows(t, where)

    def check_time_travel(self, t: evt.HudiTable, where: str) -> None:
        timeline = t.timeline
        pending = [i.time for i in timeline.inflight_writes()]
        first_pending = min(pending, default=None)
        times = {i.time for i in timeline.instants if i.is_completed} | {
            i.completion_time for i in timeline.instants if i.completion_time
        }
        for at in sorted(times):
            try:
                got = t.read(as_of=at)
            except ReadError as exc:
                unsettled = first_pending is not None and at >= first_pending
                assert unsettled or "earliest instant still readable" in str(exc), f"as of {at}: {exc}, {where}"
                continue
            assert first_pending is None or at < first_pending, f"as of {at}, after pending {first_pending}, {where}"
            want = self.model(at)
            assert _answer(got) == want, f"time travel to {at}, {where}"
            try:
                theirs = _answer(_rs(t.path, as_of=at))
            except Exception as exc:  # hudi-rs finds no schema as of a time before every completed commit
                assert not want and "No completed commit" in str(exc), f"hudi-rs as of {at}: {exc}, {where}"
                continue
            assert theirs == want, f"hudi-rs time travel to {at}, {where}"

    def check_windows(self, t: evt.HudiTable, where: str) -> None:
        commits = [i for i in t.timeline.completed_commits() if i.action == "deltacommit"]
        ends = sorted(i.completion_time or i.time for i in commits)
        for begin, end in zip(["0", *ends], ends, strict=False):
            try:
                got = t.read("incremental", begin=begin, end=end)
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc), f"window ({begin}, {end}]: {exc}, {where}"
                continue
            admitted = {i.time for i in commits if begin < (i.completion_time or i.time) <= end}
            keys = got["_hoodie_record_key"].to_pylist() if got.num_rows else []
            assert len(keys) == len(set(keys)), f"a record twice in ({begin}, {end}], {where}"
            for r in got.to_pylist() if got.num_rows else []:
                c = r["_hoodie_commit_time"]
                assert c in admitted, f"({begin}, {end}] returned a row of {c}, {where}"
                assert self.written(c).get(r["id"]) == (r["ts"], r["v"]), (
                    f"({begin}, {end}] returned {r['id']}={r['ts'], r['v']}, which {c} did not write, {where}"
                )

    def recover(self) -> None:
        self.steps.append("recover")
        for f in sorted(self.failed):
            self.t.refresh().rollback(f)
        self.failed.clear()
        self.run(self.t, recover=True)
        self.check()
        c = self.t.refresh().compaction.schedule(UnBoundedCompactionStrategy())
        if c is not None:
            self.t.compaction.run(c.instant)
        self.t.refresh().clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False)
        self.check()
        self.write(self.t)
        self.check()


@pytest.mark.parametrize("seed", range(SEED0, SEED0 + SEEDS))
def test_overlapping_sequences_answer_as_hudi(tmp_path: Path, seed: int) -> None:
    s = Sequence(tmp_path, seed)
    # Every bucket gets its file group first. A delete aimed at a bucket without a committed file group is dropped
    # (Hudi's bucket index finds no location), even when an overlapping write that has not completed inserts the key
    # there: that write's insert then stays, as in Hudi — an order the model does not replay.
    everything = pd.DataFrame(
        {
            "id": pd.array(range(KEYS), dtype="int64"),
            "region": [f"r{i % 2}" for i in range(KEYS)],
            "ts": pd.array([1] * KEYS, dtype="int64"),
            "ev": pd.array([BASE + 10] * KEYS, dtype="int64"),
            "v": [float(i) for i in range(KEYS)],
            "_hoodie_is_deleted": [False] * KEYS,
        }
    )
    s.committed[s.t.write(everything)] = ("upsert", everything)
    for _ in range(2):
        s.write(s.t)
    s.check()
    for _ in range(STEPS):
        try:
            s.step()
        except EvtError as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc}; {s.where()}") from exc
        s.check()
    s.recover()


class StockSequence:
    """The same kind of sequence on a copy of a stock v9 table with a metadata table (SIMPLE index, updates and
    deletes of its keys, event-time ordering by ``txn_ts``), checked against a dict of what was committed replayed in
    requested order, hudi-rs listing through the metadata table, and the ``files`` partition against storage."""

    SIMPLE = {"hoodie.index.type": "SIMPLE"}  # noqa: RUF012

    def __init__(self, root: Path, seed: int) -> None:
        from tests.mdt.mdt_helpers import copy_fixture

        self.rng = random.Random(seed)
        self.seed = seed
        self.path = copy_fixture("mor_v9_txns_simple_meta", root)
        props = self.path / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text() + "hoodie.payload.event.time.field=txn_ts\n")
        self.t = evt.HudiTable.open(self.path)
        self.other = evt.HudiTable.open(self.path)
        snap = _rs(str(self.path))
        self.columns = [c for c in snap.column_names if not c.startswith("_hoodie_")]
        self.schema = snap.select(self.columns).schema
        self.rows = {r["txn_id"]: r for r in snap.select(self.columns).to_pylist()}
        self.start = dict(self.rows)
        self.committed: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        self.failed: list[str] = []
        self.n = 0
        self.ts = max(r["txn_ts"] for r in self.rows.values())
        self.low = min(r["txn_ts"] for r in self.rows.values())
        self.steps: list[str] = []

    def batch(self) -> tuple[str, list[dict[str, Any]]]:
        live = sorted(self.model())
        ids = self.rng.sample(live, min(len(live), self.rng.randint(1, 3)))
        self.n += 1
        self.ts += self.rng.choice([0, 0, 1])  # ties often: the later-requested record wins them
        out = [dict(self.start[i], merchant_name=f"m{self.n}", txn_ts=self.ts) for i in ids]
        return ("delete" if self.rng.random() < 0.15 and len(live) > 4 else "upsert"), out

    def model(self) -> dict[str, str]:
        state = {k: r["merchant_name"] for k, r in self.start.items()}
        for requested in sorted(self.committed):
            op, rows = self.committed[requested]
            for r in rows:
                if op == "delete":
                    state.pop(r["txn_id"], None)
                else:
                    state[r["txn_id"]] = r["merchant_name"]
        return state

    def _write(self, t: evt.HudiTable, op: str, rows: list[dict[str, Any]], **kwargs: Any) -> str:
        return t.refresh().write(pa.Table.from_pylist(rows, schema=self.schema), op, options=self.SIMPLE, **kwargs)

    def write(self, t: evt.HudiTable) -> None:
        op, rows = self.batch()
        if rows:
            self.committed[self._write(t, op, rows)] = (op, rows)

    def fail_a_write(self, t: evt.HudiTable) -> None:
        from tests.safety.test_mdt_model import _failed_write

        _, rows = self.batch()
        if rows:
            self.failed.append(_failed_write(t.refresh(), pa.Table.from_pylist(rows, schema=self.schema)))

    def roll_back_failed(self, t: evt.HudiTable) -> None:
        for f in sorted(self.failed, reverse=self.rng.random() < 0.5):
            t.refresh().rollback(f)
            self.failed.remove(f)

    def schedule(self, t: evt.HudiTable) -> None:
        strategy = (
            UnBoundedCompactionStrategy()
            if self.rng.random() < 0.4
            else EventTimeBasedCompactionStrategy(threshold=self.rng.choice([self.low + 5, self.ts - 1]))
        )
        with contextlib.suppress(PendingTableServiceError):
            t.refresh().compaction.schedule(strategy, link_mode=self.rng.choice(["copy", "symlink"]))

    def run(self, t: evt.HudiTable, *, recover: bool = False) -> None:
        Sequence.run(self, t, recover=recover)  # type: ignore[arg-type]

    def clean(self, t: evt.HudiTable) -> None:
        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        t.refresh().clean(policy, self.rng.randint(1, 3), dry_run=False)

    def overlapped_write(self) -> None:
        pause = self.rng.choice(["instant", "requested", "logs"])
        names = self.rng.choices(["write", "schedule", "run", "clean", "failed-write", "rollback"], k=3)
        if pause == "instant":
            # The race that matters most: a compaction scheduled (and mostly run) between this write's instant and
            # its requested file.
            names[:2] = ["schedule", "run"] if self.rng.random() < 0.7 else ["schedule", names[1]]
        self.steps.append(f"overlap@{pause}[{','.join(names)}]")
        ops = {
            "write": self.write,
            "failed-write": self.fail_a_write,
            "rollback": self.roll_back_failed,
            "schedule": self.schedule,
            "run": self.run,
            "clean": self.clean,
        }
        done: list[str] = []

        def in_between() -> None:
            if done:
                return
            for name in names:
                done.append(name)
                with contextlib.suppress(PendingTableServiceError):
                    ops[name](self.other)

        op, rows = self.batch()
        if not rows:
            return
        real_instant = writer_module.new_instant_time

        def paused_instant(*args: Any, **kwargs: Any) -> str:
            out = real_instant(*args, **kwargs)
            if pause == "instant":
                in_between()
            return out

        def executor(spec: Any, tasks: Any) -> Any:
            if pause == "requested":
                in_between()
            out = writer_module.local_executor(spec, tasks)
            if pause == "logs":
                in_between()
            return out

        writer_module.new_instant_time = paused_instant  # type: ignore[assignment]
        try:
            try:
                instant = self._write(self.t, op, rows, executor=executor)
            except WriteError as exc:
                left = [i.time for i in self.t.refresh().timeline.inflight_writes() if i.time in str(exc)]
                assert left, f"a refused write left nothing inflight: {exc}"
                self.failed.append(left[0])
                instant = ""
        finally:
            writer_module.new_instant_time = real_instant
        if instant:
            self.committed[instant] = (op, rows)

    def step(self) -> None:
        name = self.rng.choice(["overlap"] * 4 + ["write", "failed-write", "rollback", "schedule", "run", "clean"])
        if name == "overlap":
            self.overlapped_write()
            return
        self.steps.append(name)
        ops = {
            "write": self.write,
            "failed-write": self.fail_a_write,
            "rollback": self.roll_back_failed,
            "schedule": self.schedule,
            "run": self.run,
            "clean": self.clean,
        }
        with contextlib.suppress(PendingTableServiceError):
            ops[name](self.t)

    def check(self) -> None:
        from tests.mdt.mdt_helpers import committed_files, mdt_files

        where = f"stock seed {self.seed}, steps {self.steps}"
        want = self.model()
        got = {r["txn_id"]: r["merchant_name"] for r in evt.HudiTable.open(self.path).read().to_pylist()}
        assert got == want, f"our snapshot, {where}"
        rs = {r["txn_id"]: r["merchant_name"] for r in _rs(str(self.path)).to_pylist()}
        assert rs == want, f"hudi-rs's snapshot through the metadata table, {where}"
        assert mdt_files(self.path) == committed_files(self.path), f"the files partition, {where}"
        t = evt.HudiTable.open(self.path)
        ro = {r["txn_id"]: r["merchant_name"] for r in t.read("read_optimized").to_pylist()}
        assert ro == {r["txn_id"]: r["merchant_name"] for r in _rs(str(self.path), ro=True).to_pylist()}, where
        assert not missing_live_files(t), where


@pytest.mark.parametrize("seed", range(SEED0, SEED0 + SEEDS))
def test_overlapping_sequences_on_a_stock_table_with_a_metadata_table(tmp_path: Path, seed: int) -> None:
    s = StockSequence(tmp_path, seed)
    s.check()
    for _ in range(STEPS):
        try:
            s.step()
        except EvtError as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc}; stock seed {seed}, steps {s.steps}") from exc
        s.check()
    for f in sorted(s.failed):
        s.t.refresh().rollback(f)
    s.failed.clear()
    s.run(s.t, recover=True)
    s.check()
