"""Incremental consumers across table services: seeded random sequences against a plain-Python model of the commits.

A downstream consumer pulls the table by checkpoint while the table is written and serviced: upserts (with in-batch
duplicates and late ordering values), soft deletes and deletes, writes that fail and stay pending until a rollback,
writes paused between their logs and their completed file while other writes complete and the consumer pulls,
event-time partial compactions (copy and symlink links, made at schedule or execute time) and full ones, runs,
runs that fail at a step and are rolled back or run again, unschedules, cleans of both policies with small
retention, and repairs. The consumer's checkpoint is the window's end (the newest commit's requested time on
timeline layout 1, its completion time on layout 2); a window refused with a ``ReadError`` is pulled again later
from the same checkpoint.

After every pull:

* the window holds each key once, and each row is exactly the record a commit the window admits wrote (the model
  keeps every committed record by key and requested time);
* the consumer's fold — per key the record of the latest commit (commit-time merges) or the greatest ordering value,
  ties to the later commit (event-time merges) — equals the model's snapshot at the checkpoint on every live key,
  and holds no key the model never deleted (nothing resurrected, nothing missed); deletes are not rows of a window,
  as in Hudi;
* pulled with an open end instead, the window has the same rows.

After every step, every window pulled so far is read again: the same rows (a compaction never makes a record a new
change nor changes a past answer: a window is the table as it stood at its end, kept by commit time), or a
``ReadError`` once a clean removed its files — never a partial answer. hudi-rs answers each window the same when no
compaction is pending (commit-time tables), except that on 1.x it filters a window's blocks and rows by requested
time (windows where requested and completion order disagree are not compared).

Versions 6 and 9, both merge modes, locally; one short sequence on the session's S3 server and one whose consumer
pulls through the ``hudi_evt`` Spark source. ``EVT_INCR_SEEDS`` (default 3 per case) sequences of
``EVT_INCR_STEPS`` (default 10) steps from seed ``EVT_INCR_SEED`` (default 0); a failure names the seed and steps.
"""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
import evt_toolkit.compaction.executor as executor_module
import evt_toolkit.write.writer as writer_module
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError, PendingTableServiceError, PlanValidationError, ReadError, WriteError
from tests.oracle import Oracle
from tests.services import failed_write
from tests.tables import BASE, create

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SEEDS = int(os.environ.get("EVT_INCR_SEEDS", "3"))
STEPS = int(os.environ.get("EVT_INCR_STEPS", "10"))
SEED0 = int(os.environ.get("EVT_INCR_SEED", "0"))
KEYS = 8

Row = tuple[int, int, float, str]  # id, ts, v, _hoodie_commit_time


def _rows(t: pa.Table) -> list[Row]:
    if t.num_rows == 0:
        return []
    cols = t.select(["id", "ts", "v", "_hoodie_commit_time"]).to_pylist()
    return sorted((int(r["id"]), int(r["ts"]), float(r["v"]), str(r["_hoodie_commit_time"])) for r in cols)


def _rs_window(path: str, begin: str, end: str, storage_options: dict[str, str] | None) -> list[Row]:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if storage_options:
        b = b.with_storage_options(storage_options)
    opts = (
        hudi.HudiReadOptions()
        .with_query_type(hudi.HudiQueryType.Incremental)
        .with_start_timestamp(begin)
        .with_end_timestamp(end)
    )
    batches = b.build().read(opts)
    return _rows(pa.Table.from_batches(batches)) if batches else []


class _Crash(Exception):
    """A compaction run failing at a step (the process goes on)."""


class Sequence:
    """One table, the model of what was committed on it, a consumer, and the steps."""

    def __init__(
        self,
        uri: str,
        seed: int,
        version: int,
        merge_mode: str,
        storage_options: dict[str, str] | None = None,
        spark: Any = None,
    ) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.version = version
        self.merge_mode = merge_mode
        self.options = storage_options
        self.spark = spark
        self.t = create(uri, merge_mode, buckets=2, table_version=version, storage_options=storage_options)
        self.uri = self.t.path
        self.other = self.open()
        self.committed: dict[str, tuple[str, pd.DataFrame]] = {}  # requested time -> (operation, batch)
        self.records: dict[tuple[int, str], tuple[int, float]] = {}  # (id, requested time) -> (ts, v)
        self.failed: list[str] = []
        self.ts = 10
        self.n = 0
        self.steps: list[str] = []
        # The consumer.
        self.checkpoint = "0"
        self.fold: dict[int, Row] = {}
        self.pulled: dict[tuple[str, str], list[Row]] = {}
        self.refusals = 0
        self.older_after_newer = 0

    def open(self) -> evt.HudiTable:
        return evt.HudiTable.open(self.uri, storage_options=self.options)

    def where(self) -> str:
        return f"seed {self.seed} (v{self.version}, {self.merge_mode}), steps {self.steps}"

    # -- the model ------------------------------------------------------------------------------------------------
    def batch(self) -> tuple[str, pd.DataFrame]:
        ids = sorted(self.rng.choices(range(KEYS), k=self.rng.randint(1, 4)))  # duplicates now and then
        self.ts += 1
        self.n += 1
        ts = [self.ts - self.rng.choice([0, 0, 0, 1, 4]) for _ in ids]  # ties and late ordering values
        evs = [self.rng.choice([10, 50, 90, 300, 900]) for _ in ids]
        df = pd.DataFrame(
            {
                "id": pd.array(ids, dtype="int64"),
                "region": [f"r{i % 2}" for i in ids],
                "ts": pd.array(ts, dtype="int64"),
                "ev": pd.array([BASE + e for e in evs], dtype="int64"),
                "v": [float(self.n * 100 + j) for j in range(len(ids))],
                "_hoodie_is_deleted": [self.rng.random() < 0.1 for _ in ids],
            }
        )
        r = self.rng.random()
        if r < 0.15:
            # Deletes of keys a commit wrote: a delete of a key never written is kept in an existing bucket's log
            # (a tombstone under event-time ordering, as in Hudi), which the model takes for a no-op.
            written = {k for k, _ in self.records}
            dels = df[[i in written for i in df["id"]]]
            if len(dels):
                return "delete", dels[["id", "region", "ts"]]
        return ("insert" if r < 0.3 else "upsert"), df

    def commit(self, instant: str, op: str, df: pd.DataFrame) -> None:
        self.committed[instant] = (op, df)
        if op == "delete":
            return
        o = Oracle(["id"], ["region"], "ts", self.merge_mode)
        o.apply("upsert", df.assign(_hoodie_is_deleted=False))  # the batch's own winner per key
        for row in o.result().to_dict("records"):
            self.records[(int(row["id"]), instant)] = (int(row["ts"]), float(row["v"]))

    def admitted_times(self, t: evt.HudiTable, begin: str, end: str) -> set[str]:
        layout2 = t.config.timeline_layout >= 2
        return {
            i.time
            for i in t.timeline.completed_commits()
            if begin < ((i.completion_time or i.time) if layout2 else i.time) <= end
        }

    def model_at(self, t: evt.HudiTable, checkpoint: str) -> dict[int, tuple[int, float]]:
        """The model's snapshot of the commits the consumer's windows admitted up to ``checkpoint``."""
        upto = self.admitted_times(t, "0", checkpoint)
        o = Oracle(["id"], ["region"], "ts", self.merge_mode)
        for requested in sorted(self.committed):  # Hudi replays by requested time, on 1.x too
            if requested in upto:
                op, df = self.committed[requested]
                o.apply(op, df)
        r = o.result()
        return {int(x["id"]): (int(x["ts"]), float(x["v"])) for x in r.to_dict("records")} if len(r) else {}

    def ever_deleted(self, t: evt.HudiTable, checkpoint: str) -> set[int]:
        upto = self.admitted_times(t, "0", checkpoint)
        out: set[int] = set()
        for requested, (op, df) in self.committed.items():
            if requested in upto:
                if op == "delete":
                    out |= {int(i) for i in df["id"]}
                elif "_hoodie_is_deleted" in df:
                    out |= {int(i) for i, d in zip(df["id"], df["_hoodie_is_deleted"], strict=True) if d}
        return out

    # -- the consumer ---------------------------------------------------------------------------------------------
    def read_window(self, t: evt.HudiTable, begin: str, end: str | None) -> pa.Table:
        if self.spark is None:
            return t.read("incremental", begin=begin, end=end)
        reader = (
            self.spark.read.format("hudi_evt")
            .option("hoodie.datasource.query.type", "incremental")
            .option("hoodie.datasource.read.begin.instanttime", begin)
        )
        if end is not None:
            reader = reader.option("hoodie.datasource.read.end.instanttime", end)
        for k, v in (self.options or {}).items():
            reader = reader.option(k, v)
        try:
            df = reader.load(self.uri).select("id", "ts", "v", "_hoodie_commit_time").toPandas()
        except Exception as exc:  # Spark wraps the planner's error in an AnalysisException that carries it
            marker = "evt_toolkit.errors.ReadError: "
            if marker not in str(exc):
                raise
            raise ReadError(str(exc).split(marker, 1)[1]) from exc
        return pa.Table.from_pandas(df)

    def pull(self) -> None:
        c = self.open()
        commits = c.timeline.completed_commits()
        if not commits:
            return
        layout2 = c.config.timeline_layout >= 2
        end = max((i.completion_time or i.time) if layout2 else i.time for i in commits)
        begin = self.checkpoint
        if end <= begin:
            return
        try:
            got = _rows(self.read_window(c, begin, end))
        except ReadError as exc:
            pending = [i.time for i in c.refresh().timeline.inflight_writes()]
            assert not layout2 and "has not completed" in str(exc), f"{exc}, {self.where()}"
            assert any(begin < p <= end for p in pending), f"refused for nothing: {exc}, {self.where()}"
            self.refusals += 1
            return
        where = f"window ({begin}, {end}], {self.where()}"
        ids = [r[0] for r in got]
        assert len(ids) == len(set(ids)), f"a key twice in {where}"
        admitted = self.admitted_times(c, begin, end)
        for key, ts, v, ct in got:
            assert ct in admitted, f"{key}@{ct} not admitted by {where}"
            assert self.records.get((key, ct)) == (ts, v), f"{key}@{ct}={ts, v} is no record it wrote, {where}"
        if self.spark is None:
            assert _rows(c.read("incremental", begin=begin)) == got, f"open end != {where}"
        self.pulled[(begin, end)] = got
        for row in got:
            old = self.fold.get(row[0])
            if old is not None and old[3] > row[3]:
                self.older_after_newer += 1  # an older commit's record after a newer one (1.x completion order)
            if old is None or self.replaces(old, row):
                self.fold[row[0]] = row
        self.checkpoint = end
        self.check_fold(c, where)

    def replaces(self, old: Row, new: Row) -> bool:
        if self.merge_mode == "event_time":
            return (new[1], new[3]) >= (old[1], old[3])
        return new[3] >= old[3]

    def check_fold(self, t: evt.HudiTable, where: str) -> None:
        want = self.model_at(t, self.checkpoint)
        deleted = self.ever_deleted(t, self.checkpoint)
        for key, value in want.items():
            got = self.fold.get(key)
            assert got is not None, f"key {key} missed by the consumer, {where}"
            assert (got[1], got[2]) == value, f"key {key}: consumer {got} != model {value}, {where}"
        stray = set(self.fold) - set(want) - deleted
        assert not stray, f"keys {stray} in the consumer's fold that the model never had live, {where}"

    def check_past_windows(self) -> None:
        t = self.open()
        pending_plans = bool(t.timeline.pending_compactions())
        for (b, e), want in self.pulled.items():
            try:
                got = _rows(t.read("incremental", begin=b, end=e))
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc), f"({b}, {e}]: {exc}, {self.where()}"
                continue
            # A window answers the table as it stood at its end: nothing done after it changes the answer.
            assert got == want, f"window ({b}, {e}] changed: {want} -> {got}, {self.where()}"
            if self.merge_mode == "commit_time":
                # hudi-rs admits 1.x commits by completion time but then filters blocks and rows by requested time:
                # it drops a commit requested before the window that completed in it, and merges one requested in
                # the window that completed after it. Compared where requested and completion times agree.
                admitted = self.admitted_times(t, b, e)
                requested = {i.time for i in t.timeline.completed_commits() if b < i.time <= e}
                if not pending_plans and admitted == requested:
                    rs = _rs_window(self.uri, b, e, self.options)
                    assert rs == got, f"hudi-rs window ({b}, {e}]: {rs} != {got}, {self.where()}"

    # -- operations -----------------------------------------------------------------------------------------------
    def write(self, t: evt.HudiTable) -> None:
        op, df = self.batch()
        instant = t.refresh().write(df, op)
        if instant:
            self.commit(instant, op, df)

    def paused_write(self) -> None:
        """A write paused after its logs while another write completes and the consumer pulls."""
        op, df = self.batch()
        real = writer_module.local_executor

        def executor(spec: Any, tasks: Any) -> Any:
            out = real(spec, tasks)
            for _ in range(self.rng.randint(0, 2)):
                self.write(self.other)
            self.pull()
            return out

        try:
            instant = self.t.refresh().write(df, op, executor=executor)
        except WriteError as exc:
            left = [i.time for i in self.t.refresh().timeline.inflight_writes() if i.time in str(exc)]
            assert left, f"a refused write left nothing inflight: {exc}"
            self.failed.append(left[0])
            return
        self.commit(instant, op, df)

    def fail_a_write(self) -> None:
        op, df = self.batch()
        while op == "delete":  # a failed write of upserts (a delete batch has no event-time column to check)
            op, df = self.batch()
        self.failed.append(failed_write(self.t.refresh(), df))

    def roll_back(self) -> None:
        for f in sorted(self.failed, reverse=self.rng.random() < 0.5):
            self.t.refresh().rollback(f)
            self.failed.remove(f)

    def schedule(self) -> None:
        strategy = (
            UnBoundedCompactionStrategy()
            if self.rng.random() < 0.3
            else EventTimeBasedCompactionStrategy(threshold=BASE + self.rng.choice([60, 100, 400]))
        )
        with contextlib.suppress(PendingTableServiceError):
            self.t.refresh().compaction.schedule(
                strategy,
                link_mode=self.rng.choice(["copy", "symlink"]) if self.options is None else "copy",
                link_timing=self.rng.choice(["schedule", "schedule", "execute"]),
            )

    def run(self) -> None:
        for inst in self.t.refresh().timeline.pending_compactions():
            try:
                self.t.refresh().compaction.run(inst.time)
            except (PendingTableServiceError, PlanValidationError):
                continue

    def crashed_run(self) -> None:
        """A run that fails at one of its steps (the process goes on), then, now or later, a rollback of the inflight
        compaction or a run again."""
        pending = self.t.refresh().timeline.pending_compactions()
        if not pending:
            return
        point = self.rng.choice(["run.after_inflight", "run.after_task", "run.before_commit"])
        real = executor_module.fault_point

        def fail_at(name: str) -> None:
            if name == point:
                raise _Crash(name)
            real(name)

        executor_module.fault_point = fail_at  # type: ignore[assignment]
        try:
            self.t.refresh().compaction.run(pending[0].time)
        except (_Crash, PendingTableServiceError, PlanValidationError):
            pass
        finally:
            executor_module.fault_point = real
        if self.rng.random() < 0.5:
            with contextlib.suppress(EvtError):
                self.t.refresh().rollback(pending[0].time)

    def unschedule(self) -> None:
        for inst in self.t.refresh().timeline.pending_compactions():
            with contextlib.suppress(EvtError):
                self.t.refresh().compaction.unschedule(inst.time, dry_run=False)

    def clean(self) -> None:
        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        with contextlib.suppress(PendingTableServiceError):
            self.t.refresh().clean(policy, self.rng.randint(1, 2), dry_run=False)

    def repair(self) -> None:
        self.t.refresh().compaction.repair(dry_run=False, older_than_s=0)

    def step(self) -> None:
        name = self.rng.choice(
            ["write"] * 4
            + ["paused", "paused", "pull", "pull", "failed", "rollback", "schedule", "schedule", "run", "run"]
            + ["crashed-run", "unschedule", "clean", "clean", "repair"]
        )
        self.steps.append(name)
        {
            "write": lambda: self.write(self.t),
            "paused": self.paused_write,
            "pull": self.pull,
            "failed": self.fail_a_write,
            "rollback": self.roll_back,
            "schedule": self.schedule,
            "run": self.run,
            "crashed-run": self.crashed_run,
            "unschedule": self.unschedule,
            "clean": self.clean,
            "repair": self.repair,
        }[name]()
        if self.rng.random() < 0.5:
            self.pull()
        self.check_past_windows()

    def finish(self) -> None:
        """Settle the table (roll back what failed, run the plans, compact fully, clean) and pull to the end."""
        self.steps.append("finish")
        self.roll_back()
        self.run()
        self.unschedule()
        with contextlib.suppress(PendingTableServiceError):
            c = self.t.refresh().compaction.schedule(UnBoundedCompactionStrategy())
            if c is not None:
                self.t.refresh().compaction.run(c)
        self.pull()
        self.check_past_windows()
        self.clean()
        self.check_past_windows()
        t = self.open()
        assert self.checkpoint == "0" or self.checkpoint >= max(
            ((i.completion_time or i.time) if t.config.timeline_layout >= 2 else i.time)
            for i in t.timeline.completed_commits()
            if i.action == "deltacommit"
        ), f"the consumer did not reach the last write, {self.where()}"


def drive(seq: Sequence, steps: int) -> Sequence:
    for _ in range(steps):
        seq.step()
    seq.finish()
    return seq


CASES = [(v, m) for v in (6, 9) for m in ("commit_time", "event_time")]


@pytest.mark.parametrize(("version", "merge_mode"), CASES)
@pytest.mark.parametrize("seed", range(SEED0, SEED0 + SEEDS))
def test_incremental_consumer_local(tmp_path: Path, version: int, merge_mode: str, seed: int) -> None:
    drive(Sequence(str(tmp_path / "t"), seed, version, merge_mode), STEPS)


@pytest.mark.parametrize("version", [6, 9])
def test_incremental_consumer_on_s3(s3_server: Any, version: int) -> None:
    bucket = s3_server.new_bucket()
    # Seed 20: paused and failed writes, pulls refused on v6 and answered on v9.
    drive(Sequence(f"s3://{bucket}/t", SEED0 + 20, version, "commit_time", s3_server.options), max(4, STEPS // 2))


@pytest.mark.parametrize("version", [6, 9])
def test_incremental_consumer_through_spark(tmp_path: Path, spark: Any, version: int) -> None:
    # Seed 22: paused writes around a compaction and a clean; pulls refused on v6, out of requested order on v9.
    drive(Sequence(str(tmp_path / "t"), SEED0 + 22, version, "commit_time", spark=spark), max(3, STEPS // 3))
