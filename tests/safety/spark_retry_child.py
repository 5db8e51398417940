"""Scenarios of real Spark task retries, run in a child process with its own ``local[2,4]`` session.

``local[N,F]`` lets Spark re-run a failed task up to ``F`` times, and a Python worker that dies (``os._exit``, or
``SIGKILL`` from a fault point) makes Spark re-run the task in a fresh worker. Each scenario arms a death for the
FIRST attempt of one task only (``TaskContext.attemptNumber() == 0``) and checks the table afterwards against a plain
dict model and hudi-rs. Run as ``python -m tests.safety.spark_retry_child OUT.json [SCENARIO ...]``; the result file
maps each scenario to ``"ok"`` or the failure's text.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from evt_toolkit.faults import ENV_VAR
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import FileWritten, write_file_group

COLS = ["id", "region", "ts", "v"]
#: The group task whose first attempt dies (the task index of the executor's parallelize, or any task).
DYING_GROUP = "b"


def _first_attempt() -> bool:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx is not None and ctx.attemptNumber() == 0


def _dies_here(fg: FileGroupWrite) -> bool:
    if _first_attempt() and fg.partition_path.endswith(DYING_GROUP) and fg.bucket == 0:
        _note_death()
        return True
    return False


#: A folder where each dying attempt leaves a file: proof that a first attempt really died and Spark retried it.
DEATHS_VAR = "EVT_SPARK_RETRY_DEATHS"


def _note_death() -> None:
    folder = os.environ.get(DEATHS_VAR)
    if folder:
        Path(folder, f"{os.getpid()}-{len(os.listdir(folder))}").touch()


def deaths() -> int:
    return len(os.listdir(os.environ[DEATHS_VAR]))


def task_dying_before(spec: WriteJobSpec, fg: FileGroupWrite, *args: Any) -> list[FileWritten]:
    """The first attempt of one group dies before it writes anything."""
    if _dies_here(fg):
        os._exit(3)
    return write_file_group(spec, fg, *args)


def task_dying_after_files(spec: WriteJobSpec, fg: FileGroupWrite, *args: Any) -> list[FileWritten]:
    """The first attempt dies at ``write.after_task``: ownership record, marker and complete log files written."""
    if _dies_here(fg):
        os.environ[ENV_VAR] = "write.after_task"
    else:
        os.environ.pop(ENV_VAR, None)
    return write_file_group(spec, fg, *args)


def task_dying_torn(spec: WriteJobSpec, fg: FileGroupWrite, *args: Any) -> list[FileWritten]:
    """The first attempt wrote its files, then died with its last file half written (a torn, non-atomic write)."""
    out = write_file_group(spec, fg, *args)
    if _dies_here(fg) and out:
        from evt_toolkit.storage.fs import TableStorage

        storage = TableStorage.from_uri(spec.table_uri, spec.storage_options)
        rel = out[-1].stat.path
        data = storage.read_bytes(rel)
        storage.write_bytes_atomic(rel, data[: len(data) // 2], overwrite=True)
        os._exit(3)
    return out


def task_dying_before_return(spec: WriteJobSpec, fg: FileGroupWrite, *args: Any) -> list[FileWritten]:
    """The first attempt completed its output and died before returning its stats."""
    out = write_file_group(spec, fg, *args)
    if _dies_here(fg):
        os._exit(3)
    return out


def task_always_dying(spec: WriteJobSpec, fg: FileGroupWrite, *args: Any) -> list[FileWritten]:
    """Every attempt of one group dies once its files are complete: Spark gives up after four attempts."""
    if fg.partition_path.endswith(DYING_GROUP) and fg.bucket == 0:
        _note_death()
        os.environ[ENV_VAR] = "write.after_task"
    else:
        os.environ.pop(ENV_VAR, None)
    return write_file_group(spec, fg, *args)


WRITE_TASKS: dict[str, Callable[..., list[FileWritten]]] = {
    "before": task_dying_before,
    "after_files": task_dying_after_files,
    "torn": task_dying_torn,
    "before_return": task_dying_before_return,
}


def compaction_hook(stage: str) -> Callable[[Any, str], None]:
    """A compaction fault hook: the first attempt of the first operation dies at ``stage``."""

    def hook(task: Any, at: str) -> None:
        if at == stage and task.index == 0 and _first_attempt():
            _note_death()
            os._exit(3)

    return hook


# -- the table, the model and the checks ----------------------------------------------------------------------------
class Case:
    def __init__(self, root: Path, version: int) -> None:
        import evt_toolkit as evt

        self.path = root / f"t{version}"
        self.t = evt.HudiTable.create(
            self.path, "t", "id", partition_by="region", ordering_field="ts", buckets=2, table_version=version
        )
        self.model: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[str, dict[str, dict[str, Any]]]] = []
        self.ts = 0

    def batch(self, n: int, start: int = 0) -> pd.DataFrame:
        self.ts += 1
        rows = [
            {"id": f"k{i}", "region": "a" if i % 2 else "b", "ts": self.ts, "v": float(self.ts * 1000 + i)}
            for i in range(start, start + n)
        ]
        return pd.DataFrame(rows, columns=COLS)

    def committed(self, instant: str, df: pd.DataFrame) -> None:
        for r in df.to_dict("records"):
            self.model[r["id"]] = r
        self.history.append((instant, dict(self.model)))

    def check(self, what: str) -> None:
        self.check_answers(what)
        leftovers = self.unlisted_files()
        assert not leftovers, f"{what}: data files no completed commit lists: {leftovers}"

    def check_answers(self, what: str) -> None:
        import hudi

        self.t.refresh()
        want = sorted((r["id"], r["region"], r["ts"], r["v"]) for r in self.model.values())
        got = _rows(self.t.read().select(COLS))
        assert got == want, f"{what}: evt snapshot {len(got)} rows != model {len(want)}"
        rs = hudi.HudiTableBuilder.from_base_uri(str(self.path)).build().read()
        rs_rows = _rows(pa.Table.from_batches(rs).select(COLS)) if rs else []
        assert rs_rows == want, f"{what}: hudi-rs snapshot {len(rs_rows)} rows != model {len(want)}"
        from evt_toolkit.errors import ReadError

        for instant, state in self.history:
            try:
                tt = _rows(self.t.read(as_of=instant).select(COLS))
            except ReadError as exc:  # the documented refusal of a state a clean removed
                assert "a clean removed" in str(exc), f"{what}: time travel to {instant}: {exc}"
                continue
            exp = sorted((r["id"], r["region"], r["ts"], r["v"]) for r in state.values())
            assert tt == exp, f"{what}: time travel to {instant}: {len(tt)} rows != {len(exp)}"
        inc = self.t.read("incremental").select(COLS)
        ids = inc["id"].to_pylist()
        assert len(ids) == len(set(ids)), f"{what}: the incremental read returns a record twice"
        assert sorted(ids) == sorted(self.model), f"{what}: the incremental read's keys != model"

    def unlisted_files(self) -> list[str]:
        """Data files on storage that no completed commit lists (and that are not a compaction's links or copies)."""
        tl = self.t.timeline
        listed: set[str] = set()
        compactions: set[str] = set()
        for inst in tl.completed_commits():
            listed.update(tl.commit_metadata(inst).paths())
            if inst.action == "commit":
                compactions.add(inst.time)
        out = []
        for p in self.path.rglob("*"):
            if not p.is_file() or ".hoodie" in p.parts or not (".log." in p.name or p.suffix == ".parquet"):
                continue
            rel = p.relative_to(self.path).as_posix()
            if rel in listed or any(c in p.name for c in compactions):
                continue
            out.append(rel)
        return sorted(out)


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(t[c].to_pylist() for c in COLS), strict=True))


# -- scenarios --------------------------------------------------------------------------------------------------------
def write_retry(spark: Any, root: Path, version: int, point: str, dataframe: bool) -> None:
    """A write whose first attempt of one group task dies at ``point``; Spark retries it and the write commits."""
    from evt_toolkit.spark.executor import spark_executor, write_dataframe

    case = Case(root / f"w-{point}-{int(dataframe)}", version)
    first = case.batch(8)
    case.committed(case.t.write(first), first)
    df = case.batch(8, start=4)
    task = WRITE_TASKS[point]
    before = deaths()
    if dataframe:
        instant = write_dataframe(case.t, spark.createDataFrame(df), "upsert", task=task)
    else:
        instant = case.t.write(df, executor=spark_executor(spark, task))
    case.committed(instant, df)
    assert deaths() > before, f"no first attempt died ({point})"
    case.check(f"v{version} {'dataframe' if dataframe else 'executor'} write, first attempt dies {point}")
    # A later write, clean and rollback of the last write keep every answer.
    more = case.batch(6, start=10)
    last = case.t.write(more)
    case.committed(last, more)
    case.check("after a later write")
    case.t.rollback(last)
    case.t.refresh()
    case.model = dict(case.history[-2][1])
    case.history.pop()
    case.check("after rolling back the later write")
    case.t.clean(retained=1, dry_run=False)
    case.check("after a clean")


def write_gives_up(spark: Any, root: Path, version: int, dataframe: bool) -> None:
    """Every attempt of one group task dies after writing its logs: the write fails with a ``WriteError`` and stays
    inflight (readers ignore it, four attempts' files on storage); rolling it back leaves no file, and writing the
    batch again commits it."""
    from evt_toolkit.errors import WriteError
    from evt_toolkit.spark.executor import spark_executor, write_dataframe

    case = Case(root / f"give-up-{int(dataframe)}", version)
    first = case.batch(8)
    case.committed(case.t.write(first), first)
    df = case.batch(8, start=4)
    before = deaths()
    try:
        if dataframe:
            write_dataframe(case.t, spark.createDataFrame(df), "upsert", task=task_always_dying)
        else:
            case.t.write(df, executor=spark_executor(spark, task_always_dying))
    except WriteError:
        pass
    else:
        raise AssertionError("a write whose task failed four times committed")
    assert deaths() - before >= 4, f"Spark did not retry the task four times ({deaths() - before} deaths)"
    case.t.refresh()
    pending = [i.time for i in case.t.timeline.instants if not i.is_completed]
    assert len(pending) == 1, f"expected the failed write inflight, found {pending}"
    case.check_answers("a write whose task failed on every attempt")
    case.t.rollback(pending[0])
    case.check("after rolling back the failed write")
    case.committed(case.t.write(df, executor=spark_executor(spark)), df)
    case.check("after writing the batch again")


def _role_task(failing: str, straggler: str, spec: WriteJobSpec, fg: FileGroupWrite, *args: Any) -> list[FileWritten]:
    """``failing``'s task fails on every attempt; ``straggler``'s task waits until its instant was rolled back (Spark
    cancelled it when the job failed, but a Python task is killed only after ``spark.python.task.killTimeout``), then
    tries to write."""

    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.write.fence import INFLIGHT_STATE, instant_state

    if fg.file_id == failing:
        raise RuntimeError("this file group's task fails on every attempt")
    if fg.file_id == straggler and _first_attempt():
        storage = TableStorage.from_uri(spec.table_uri, spec.storage_options)
        timeline = ".hoodie/timeline" if spec.table_version >= 8 else ".hoodie"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            files, _ = storage.list_dir(timeline)
            if instant_state((f.name for f in files), spec.instant) != INFLIGHT_STATE:
                break
            time.sleep(0.1)
        outcome = "refused"
        try:
            out = write_file_group(spec, fg, *args)
            outcome = f"wrote {[f.stat.path for f in out]}"
            return out
        finally:
            Path(os.environ[DEATHS_VAR], f"straggler-{spec.instant}").write_text(outcome)
    return write_file_group(spec, fg, *args)


def straggler_after_rollback(spark: Any, root: Path, version: int) -> None:
    """A write whose job fails (one task fails four times) while another task of it still runs: the driver raises,
    the failed write is rolled back at once, and the straggler goes on to write after the rollback. Nothing it writes
    may stay on storage."""
    import functools

    from evt_toolkit.errors import WriteError
    from evt_toolkit.spark.executor import spark_executor

    case = Case(root / "straggler", version)
    first = case.batch(8)
    case.committed(case.t.write(first), first)
    df = case.batch(8, start=4)

    def executor(spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> Any:
        roles = functools.partial(_role_task, items[0][0].file_id, items[1][0].file_id)
        return spark_executor(spark, roles)(spec, items)

    try:
        case.t.write(df, executor=executor)
    except WriteError:
        pass
    else:
        raise AssertionError("a write whose task failed four times committed")
    case.t.refresh()
    pending = [i.time for i in case.t.timeline.instants if not i.is_completed]
    assert len(pending) == 1, f"expected the failed write inflight, found {pending}"
    case.t.rollback(pending[0])
    note = Path(os.environ[DEATHS_VAR], f"straggler-{pending[0]}")
    deadline = time.monotonic() + 40
    while not note.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert note.exists(), "the straggler never got to write (Spark stopped it first)"
    time.sleep(0.5)
    case.check(f"v{version}: a task of a failed write that ran on after the write was rolled back ({note.read_text()})")


def compaction_gives_up(spark: Any, root: Path, version: int) -> None:
    """Every attempt of one compaction operation dies after its base file: the run fails with an ``EvtError``, the
    plan stays inflight, answers are unchanged; running it again on Spark commits it."""
    from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
    from evt_toolkit.errors import EvtError

    case = Case(root / "c-give-up", version)
    for start in (0, 4, 2):
        df = case.batch(8, start=start)
        case.committed(case.t.write(df), df)
    c = case.t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    try:
        case.t.compaction.run(c, spark=spark, fault_hook=_always_dying_hook)
    except EvtError:
        pass
    else:
        raise AssertionError("a compaction whose task failed four times committed")
    case.check_answers("a compaction whose task failed on every attempt")
    case.t.compaction.run(c, spark=spark)
    case.check("after running the compaction again")


def _always_dying_hook(task: Any, at: str) -> None:
    if at == "written" and task.index == 0:
        _note_death()
        os._exit(3)


def compaction_retry(spark: Any, root: Path, version: int, stage: str) -> None:
    """A compaction on Spark whose first attempt of one operation dies at ``stage`` (``merged``: before its base
    file; ``written``: after it); Spark retries the task and the compaction commits."""
    from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy

    case = Case(root / f"c-{stage}", version)
    for start in (0, 4, 2):
        df = case.batch(8, start=start)
        case.committed(case.t.write(df), df)
    c = case.t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    before = deaths()
    case.t.compaction.run(c, spark=spark, fault_hook=compaction_hook(stage))
    assert deaths() > before, f"no first attempt of the compaction died ({stage})"
    case.check(f"v{version} compaction, first attempt dies {stage}")
    more = case.batch(6, start=3)
    case.committed(case.t.write(more), more)
    case.t.clean(retained=1, dry_run=False)
    case.check("after a later write and a clean")


def late_write_attempt(spark: Any, root: Path, version: int) -> None:
    """A write task attempt that runs on after the driver committed (a speculative copy or a retry that lost the
    race; Spark kills a Python task only after ``spark.python.task.killTimeout``): it must not add a file the
    committed instant's readers read, nor one no commit lists."""
    from evt_toolkit.spark.executor import spark_executor

    case = Case(root / "late", version)
    first = case.batch(8)
    case.committed(case.t.write(first), first)
    seen: list[tuple[WriteJobSpec, list[tuple[FileGroupWrite, pa.Table, pa.Table]]]] = []
    inner = spark_executor(spark)

    def executor(spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> Any:
        seen.append((spec, items))
        return inner(spec, items)

    df = case.batch(8, start=4)
    instant = case.t.write(df, executor=executor)
    case.committed(instant, df)
    spec, items = seen[0]
    fg, up, de = items[0]
    # The late attempt, run after the commit in a Spark task of its own (attempt id far from the committed ones).
    late = spark.sparkContext.parallelize([0], 1).map(lambda _: _late(spec, fg, up, de)).collect()[0]
    case.check(f"v{version}: a write task attempt that ran after the commit ({late})")
    case.t.rollback(instant)
    case.model = dict(case.history[-2][1])
    case.history.pop()
    case.check("after rolling back the write the late attempt belonged to")
    late = spark.sparkContext.parallelize([0], 1).map(lambda _: _late(spec, fg, up, de)).collect()[0]
    case.check(f"a write task attempt that ran after its instant was rolled back ({late})")


def late_compaction_attempt(spark: Any, root: Path, version: int) -> None:
    """A compaction task attempt that runs on after the compaction committed (a speculative copy or lost retry): its
    outputs carry the plan's names, so it would rewrite the committed base file and carry-over log; it is refused,
    and no data file may change or be added."""
    from evt_toolkit.compaction.merge_task import run_merge_task
    from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy

    case = Case(root / "late-compaction", version)
    for start in (0, 4, 2):
        df = case.batch(8, start=start)
        case.committed(case.t.write(df), df)
    c = case.t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    tasks: list[Any] = []
    case.t.compaction.run(c, fault_hook=lambda task, at: tasks.append(task) if at == "merged" else None)
    case.check(f"v{version} compaction run locally")
    before = {p: p.read_bytes() for p in case.path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    from dataclasses import replace

    task = replace(tasks[0], fault_hook=None, cancel=None)  # as Spark ships it: no local hook, no local cancel event
    late = spark.sparkContext.parallelize([0], 1).map(lambda _: _late_merge(run_merge_task, task)).collect()[0]
    after = {p: p.read_bytes() for p in case.path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    changed = sorted(str(p.relative_to(case.path)) for p in after if before.get(p) != after[p])
    assert not changed, f"a late compaction attempt ({late}) changed or added data files: {changed}"
    case.check(f"v{version}: a compaction task attempt that ran after the commit ({late})")


def _late_merge(run: Callable[[Any], Any], task: Any) -> str:
    try:
        run(task)
    except Exception as exc:  # a refusal is a fence
        return f"refused: {type(exc).__name__}"
    return "rewrote its outputs"


def _late(spec: WriteJobSpec, fg: FileGroupWrite, up: pa.Table, de: pa.Table) -> str:
    try:
        out = write_file_group(spec, fg, up, de, fg.bucket, 0, 99999)
    except Exception as exc:  # a refusal is a fence
        return f"refused: {type(exc).__name__}"
    return f"wrote {[f.stat.path for f in out]}"


def scenarios(full: bool) -> dict[str, Callable[[Any, Path], None]]:
    out: dict[str, Callable[[Any, Path], None]] = {}
    versions = (6, 9) if full else (9,)
    points = list(WRITE_TASKS)
    for v in versions:
        for p in points:
            for dataframe in (False, True) if full else ((p in ("after_files", "torn")),):
                out[f"write-v{v}-{p}-{'df' if dataframe else 'ex'}"] = lambda s, r, v=v, p=p, d=dataframe: write_retry(
                    s, r, v, p, d
                )
        for stage in ("merged", "written"):
            out[f"compaction-v{v}-{stage}"] = lambda s, r, v=v, st=stage: compaction_retry(s, r, v, st)
        out[f"late-v{v}"] = lambda s, r, v=v: late_write_attempt(s, r, v)
        out[f"give-up-v{v}-df"] = lambda s, r, v=v: write_gives_up(s, r, v, True)
        out[f"compaction-give-up-v{v}"] = lambda s, r, v=v: compaction_gives_up(s, r, v)
        out[f"straggler-v{v}"] = lambda s, r, v=v: straggler_after_rollback(s, r, v)
        out[f"late-compaction-v{v}"] = lambda s, r, v=v: late_compaction_attempt(s, r, v)
    if not full:
        out["late-v6"] = lambda s, r: late_write_attempt(s, r, 6)
        out["give-up-v6-ex"] = lambda s, r: write_gives_up(s, r, 6, False)
        out["late-compaction-v6"] = lambda s, r: late_compaction_attempt(s, r, 6)
        out["write-v6-after_files-ex"] = lambda s, r: write_retry(s, r, 6, "after_files", False)
    return out


def main() -> None:
    out_file = sys.argv[1]
    full = os.environ.get("EVT_SAFETY_SPARK_RETRIES_FULL") == "1"
    wanted = sys.argv[2:]
    from evt_toolkit.spark.session import get_or_create_session

    root = Path(tempfile.mkdtemp(prefix="evt-retries-"))
    (root / "deaths").mkdir()
    os.environ[DEATHS_VAR] = str(root / "deaths")  # before the session starts: its Python workers inherit it
    # A cancelled Python task is killed only after spark.python.task.killTimeout: long enough here that a straggler
    # of a failed job really runs on after the driver gave up.
    spark = get_or_create_session(master="local[2,4]", extra_conf={"spark.python.task.killTimeout": "60s"})
    results: dict[str, str] = {}
    try:
        for name, run in scenarios(full).items():
            if wanted and name not in wanted:
                continue
            started = time.monotonic()
            try:
                run(spark, root / name)
                results[name] = "ok"
                print(f"{name}: ok in {time.monotonic() - started:.1f}s", file=sys.stderr)
            except Exception as exc:
                results[name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
            Path(out_file).write_text(json.dumps(results, indent=1))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
