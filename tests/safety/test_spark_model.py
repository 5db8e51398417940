"""The data-safety model test with Spark in the loop: writes and compactions run on Spark executors, mixed with
local ones on the same table (versions 6, 8 and 9), against the same independent model (:mod:`tests.safety.model`).

On top of the local lifecycle's rules (:class:`tests.safety.test_model.Lifecycle`):

* upserts and deletes of a Spark DataFrame (keyed, de-duplicated and shuffled on Spark:
  :func:`~evt_toolkit.spark.executor.write_dataframe`) and of a pandas batch whose file-group tasks run on Spark
  (:func:`~evt_toolkit.spark.executor.spark_executor`), with in-batch duplicates;
* a write task that Spark runs twice — a first attempt that wrote its files and then failed (or a speculative copy
  that lost), then the attempt whose write stats the commit keeps: the first attempt's files, under another write
  token, must not be read as part of the commit;
* a Spark job whose task of one file group fails after writing its log: the instant stays inflight, rolled back at
  once or later;
* a compaction run on Spark, one task per operation; a run whose task fails on Spark (the plan stays inflight), then
  either run again or rolled back and run again; a compaction task run twice (a retried or speculative attempt)
  over its own outputs.

Sequences are seeded (Spark rules drawn most often, local writes, schedules, cleans, failed writes and unschedules
between them), on table versions 6 and 9. After every step the lifecycle's invariants hold (snapshot and RO against
the model and hudi-rs, freshness, time travel to every write, every window exactly once, the latest window against
hudi-rs, no missing live file). ``EVT_SAFETY6_SPARK_SEQUENCES`` (default 1 per version), ``EVT_SAFETY6_SPARK_STEPS``
(default 8) and ``EVT_SAFETY6_SPARK_SEED`` size the run; ``EVT_SAFETY6_TRACE=1`` prints the rules as they run.
"""

from __future__ import annotations

import os
import random
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pytest

from evt_toolkit.compaction.merge_task import MergeTask, run_merge_task
from evt_toolkit.errors import CompactionExecutionError, ReadError, WriteError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from evt_toolkit.spark.executor import spark_executor, write_dataframe
from evt_toolkit.table.timeline import COMPACTION
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import FileWritten, write_file_group
from tests.safety.test_history_model import History
from tests.safety.test_model import Lifecycle, window_as_hudi_rs
from tests.services import incremental_unsettled

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]

SEQUENCES = int(os.environ.get("EVT_SAFETY6_SPARK_SEQUENCES", "1"))
STEPS = int(os.environ.get("EVT_SAFETY6_SPARK_STEPS", "8"))
SEED_BASE = int(os.environ.get("EVT_SAFETY6_SPARK_SEED", "0"))
TRACE = os.environ.get("EVT_SAFETY6_TRACE") == "1"

_SESSION: list[SparkSession] = []


@pytest.fixture(autouse=True)
def _session(spark: SparkSession) -> None:
    """The suite's one Spark session, for the state machine (which takes no fixtures)."""
    _SESSION[:] = [spark]


def _spark() -> SparkSession:
    return _SESSION[0]


def twice(
    spec: WriteJobSpec,
    fg: FileGroupWrite,
    upserts: pa.Table,
    deletes: pa.Table,
    task_partition_id: int,
    stage_id: int = 0,
    attempt_id: int = 0,
) -> list[FileWritten]:
    """A file-group task whose first attempt wrote its files and then failed; Spark ran it again as a new attempt
    (``taskAttemptId`` + 1000), whose stats the commit keeps."""
    write_file_group(spec, fg, upserts, deletes, task_partition_id, stage_id, attempt_id)
    return write_file_group(spec, fg, upserts, deletes, task_partition_id, stage_id, attempt_id + 1000)


def fail_first_group(
    spec: WriteJobSpec,
    fg: FileGroupWrite,
    upserts: pa.Table,
    deletes: pa.Table,
    task_partition_id: int,
    stage_id: int = 0,
    attempt_id: int = 0,
) -> list[FileWritten]:
    """A file-group task that fails, on every attempt, for the job's first group after writing its log."""
    stats = write_file_group(spec, fg, upserts, deletes, task_partition_id, stage_id, attempt_id)
    if task_partition_id == 0:
        raise RuntimeError(f"injected failure writing {fg.file_id}")
    return stats


class FailFirstTask:
    """A compaction fault hook: the task of operation 0 fails after writing its base file (every attempt)."""

    def __call__(self, task: MergeTask, stage: str) -> None:
        if stage == "written" and task.index == 0:
            raise RuntimeError(f"injected failure in compaction task {task.index}")


class SecondAttempt:
    """A compaction fault hook: before a task writes, a second attempt of it runs to its end (a speculative copy)."""

    def __call__(self, task: MergeTask, stage: str) -> None:
        if stage == "merged" and task.fault_hook is not None:
            run_merge_task(replace(task, fault_hook=None))


class SparkLifecycle(Lifecycle):
    """The lifecycle with Spark writes and Spark compactions."""

    def _spark_write(self, df: pd.DataFrame, op: str, how: str) -> str:
        spark = _spark()
        if how == "dataframe":
            return write_dataframe(self.t, spark.createDataFrame(df), op)
        task = twice if how == "retried" else write_file_group
        return self.t.write(df, op, spark=spark, executor=spark_executor(spark, task=task))

    def spark_upsert(self, items: list[tuple[int, int, bool]], dup: bool, late: bool, how: str) -> None:
        self.ts += 10
        if dup:  # in-batch duplicates: the same keys again with other ordering values
            items = items + [(i, ev + 1, False) for i, ev, _ in items[:3]]
        ts = [self.ts - (self.rng.randint(1, 25) if late and self.rng.random() < 0.6 else 0) for _ in items]
        items = [(i, ev, d and str(i) in self.group_of and self.rng.random() < 0.2) for i, ev, d in items]
        df = self._frame(items, ts)
        instant = self._spark_write(df, "upsert", how)
        self._apply_write(instant, df, "upsert")
        self.t.refresh()

    def spark_delete(self, ids: list[int], with_ordering: bool, how: str) -> None:
        known = [i for i in ids if str(i) in self.group_of]
        if not known:
            return
        self.ts += 10
        df = pd.DataFrame({"id": pd.array(known, dtype="int64"), "region": [f"r{i % 2}" for i in known]})
        if with_ordering:
            df["ts"] = pd.array([self.ts - self.rng.randint(0, 30) for _ in known], dtype="int64")
        instant = self._spark_write(df, "delete", how)
        if instant:
            self._apply_write(instant, df, "delete")
        self.t.refresh()

    def spark_failed_write(self, ids: list[int], now: bool) -> None:
        """A Spark job whose task of one file group fails after its log is on storage: the instant stays inflight
        (rolled back at once, or by a later rule), and the other tasks' logs stay beside it."""
        self.ts += 10
        df = self._frame([(i, 100, False) for i in ids], [self.ts] * len(ids))
        spark = _spark()
        with pytest.raises(WriteError, match="injected failure") as caught:
            self.t.write(df, "upsert", spark=spark, executor=spark_executor(spark, task=fail_first_group))
        failed = str(caught.value).split()[1]
        assert failed in {i.time for i in self.t.refresh().timeline.inflight_writes()}, caught.value
        if now:
            assert self.t.rollback(failed).target == failed
        else:
            self.failed.append(failed)

    def spark_run(self, how: str) -> None:
        c = self._pending()[0]
        plan = self.t.timeline.compaction_plan(self.t.timeline.instant(c, COMPACTION))
        spark = _spark()
        if how in ("failed_then_run", "failed_then_rollback"):
            with pytest.raises(CompactionExecutionError, match="injected failure"):
                self.t.compaction.run(c, spark=spark, fault_hook=FailFirstTask())
            assert c in self._pending()
            self._check_now()
            if how == "failed_then_rollback":
                assert self.t.rollback(c).plan_requested_again
                self._check_now()
        elif how == "twice":
            # A retried or speculative compaction task: a second attempt of every task runs to its end before the
            # first one writes its outputs over it.
            self.t.compaction.run(c, spark=spark, fault_hook=SecondAttempt())
            self._apply_compaction(c, plan)
            return
        self.t.compaction.run(c, spark=spark)
        self._apply_compaction(c, plan)

    def _check_now(self) -> None:
        """The invariants, between the steps of one rule."""
        self.snapshot_is_the_model()
        self.read_optimized_is_the_models_base()
        self.nothing_needed_is_missing()


def _check(m: SparkLifecycle) -> None:
    """Every invariant of the lifecycle, and the history test's time travel to every write and every window."""
    m.snapshot_is_the_model()
    m.read_optimized_is_the_models_base()
    m.freshness_holds()
    _latest_window(m)
    m.nothing_needed_is_missing()
    History.time_travel_to_every_write_is_history(m)  # type: ignore[arg-type]
    History.every_window_holds_exactly_its_commits(m)  # type: ignore[arg-type]


def _latest_window(m: SparkLifecycle) -> None:
    """The latest write's window returns each record once, only its commits' rows, as hudi-rs does for the records
    that won.

    hudi-rs merges a window's log records without the rows outside it, so a late record that lost the event-time
    merge to an older row (in a base file since a compaction) comes back from it; a merged read, ours and Hudi's
    ``HoodieMergeOnReadRDD``, drops it (``test_history_model`` leaves the same difference open). The comparison keeps
    hudi-rs's rows that are the table's current rows.
    """
    if len(m.writes) < 2:
        return
    begin, end = m.writes[-2], m.writes[-1]
    try:
        ours = m.t.refresh().read("incremental", begin=begin, end=end)
    except ReadError as exc:
        assert "earliest instant still readable" in str(exc) or incremental_unsettled(m.t, begin, exc), exc
        return
    keys = ours["_hoodie_record_key"].to_pylist()
    assert len(keys) == len(set(keys)), "a record twice in one incremental window"
    admitted = {i.time for i in m.t.timeline.completed_commits() if begin < (i.completion_time or i.time) <= end}
    assert set(ours["_hoodie_commit_time"].to_pylist()) <= admitted
    if m.t.timeline.pending_compactions():
        return
    window_as_hudi_rs(m, ours, begin, end)


def _items(rng: random.Random, n: int) -> list[tuple[int, int, bool]]:
    return [(rng.randint(0, 11), rng.randint(0, 1000), rng.random() < 0.3) for _ in range(rng.randint(1, n))]


def run_sequence(seed: int, steps: int, table_version: int) -> None:
    """One seeded sequence of the lifecycle's rules, Spark ones most often, every invariant after each step."""
    rng = random.Random(seed)
    m = SparkLifecycle()
    try:
        m.start(rng.choice(["commit_time", "event_time"]), rng.choice([1, 2]), seed, table_version)
        _check(m)
        for _ in range(steps):
            pending = bool(m._pending())
            choices = ["spark_upsert"] * 3 + ["spark_delete"] * 2 + ["upsert", "delete", "schedule", "schedule"]
            choices += ["clean", "failed_write", "spark_failed_write"]
            choices += ["roll_back_failed_writes"] if m.failed else []
            if pending:
                # A pending plan runs soon (on Spark most often), with writes landing in its slices first at times.
                choices = ["spark_run"] * 4 + ["run", "unschedule"] if rng.random() < 0.6 else choices
            rule_name = rng.choice(choices)
            if TRACE:
                print(f"step {rule_name}", flush=True)
            hows = ["dataframe", "executor", "retried"]
            if rule_name == "spark_upsert":
                m.spark_upsert(_items(rng, 8), rng.random() < 0.5, rng.random() < 0.5, rng.choice(hows))
            elif rule_name == "spark_delete":
                m.spark_delete(
                    [rng.randint(0, 11) for _ in range(rng.randint(1, 4))], rng.random() < 0.5, rng.choice(hows)
                )
            elif rule_name == "upsert":
                m.upsert(_items(rng, 6), rng.random() < 0.5)
            elif rule_name == "delete":
                m.delete([rng.randint(0, 11) for _ in range(rng.randint(1, 4))], rng.random() < 0.5)
            elif rule_name == "schedule":
                threshold = None if rng.random() < 0.4 else rng.randint(0, 1000)
                m.schedule(
                    threshold, rng.choice(["copy", "symlink"]), rng.choice(["schedule", "execute"]), rng.random() < 0.3
                )
            elif rule_name == "clean":
                m.clean(rng.choice([KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS]), rng.randint(1, 3))
            elif rule_name == "failed_write":
                m.failed_write([rng.randint(0, 11) for _ in range(rng.randint(1, 3))], rng.random() < 0.5)
            elif rule_name == "spark_failed_write":
                m.spark_failed_write([rng.randint(0, 11) for _ in range(rng.randint(1, 6))], rng.random() < 0.5)
            elif rule_name == "roll_back_failed_writes":
                m.roll_back_failed_writes()
            elif rule_name == "spark_run":
                m.spark_run(rng.choice(["spark", "failed_then_run", "failed_then_rollback", "twice"]))
            elif rule_name == "run":
                m.run()
            else:
                m.unschedule(rng.random() < 0.3)
            _check(m)
    finally:
        m.teardown()


@pytest.mark.parametrize(
    ("seed", "table_version"),
    [(s, v) for s in range(SEQUENCES) for v in (6, 9)][: max(2, SEQUENCES * 2)],
)
def test_spark_sequences(seed: int, table_version: int) -> None:
    run_sequence(seed + SEED_BASE, STEPS, table_version)
