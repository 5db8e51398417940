"""Operations stopped rather than killed: Ctrl-C, a notebook's *interrupt kernel*, or an exception (``MemoryError``,
``OSError`` from below the storage layer) at any storage operation of a write, schedule, run, clean, rollback,
unschedule or repair — in the main thread or in a compaction task running beside others.

The kill tests (``tests/faults``, :mod:`tests.safety.crash_anywhere`) stop a process dead: no handler runs and no
thread survives it. An interrupt is different: ``except`` and ``finally`` handlers run on the way out, thread pools
outlive the call that started them, a second Ctrl-C may land while the first is handled, and the process goes on
with the same ``HudiTable``. :class:`tests.safety.interrupts.Interrupter` sends this process a real ``SIGINT`` (or
raises in the thread itself) at the n-th storage operation or compaction-task boundary, and after each one:

* nothing under the table changes once the call came back (listed again 0.3 s later);
* what came out is the ``KeyboardInterrupt``, an ``EvtError``, or the injected exception;
* a new handle, hudi-rs and the handle that ran the call read the table as before or as after the operation;
* the documented recovery (roll back a pending write, resume a rollback or clean, run or roll back a pending
  compaction, repair) leaves one of those two answers in both readers, and a further write, full compaction and
  clean answer that plus the write (a plain dict of what was committed).

The same through ``evt`` in a child process getting a real ``SIGINT`` (exit 130, one line, no traceback) or
``SIGTERM`` (exit 143, the same way; more points in ``test_sigterm.py``); through the notebook's compaction runner
(it must not be left ``running``); a Spark job of a run or a write cancelled from another thread (nothing of it runs
once the call raised, and a task of the abandoned run attempt writes nothing); and on a copy of a stock v9 table with
a metadata table, whose ``files`` partition must list the live files after each. Table versions 6 and 9, locally
and on the session's S3 server.

``EVT_INTERRUPT_STEP`` (default 40) takes every n-th operation of the local sweep (1 takes them all),
``EVT_INTERRUPT_S3_STEP`` (default 100) of the S3 one, ``EVT_INTERRUPT_CLI_STEP`` of the ``evt`` one (default: one
point per case); ``EVT_INTERRUPT_KINDS`` (default ``sigint``) lists the ways to stop it (``sigint``,
``sigint-again``: a second one at the next storage operation, ``keyboard`` raised in the thread, ``memory``,
``oserror``); ``EVT_INTERRUPT_LONG=1`` runs every operation on both versions and on S3 (CI: the runs on both, the
others on one), every ``evt`` case with both signals, and every ``EVT_INTERRUPT_MDT_STEP``-th (default 3) operation
up to ``EVT_INTERRUPT_MDT_MAX`` (default 60) on the table with a metadata table (CI: one point per operation).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

import evt_toolkit as evt
from tests.safety.interrupts import OPERATIONS, Case, Interrupter, problems_after, quiet_after, run_interrupted

STEP = int(os.environ.get("EVT_INTERRUPT_STEP", "40"))
KINDS = os.environ.get("EVT_INTERRUPT_KINDS", "sigint").split(",")
S3_STEP = int(os.environ.get("EVT_INTERRUPT_S3_STEP", "100"))
CLI_STEP = int(os.environ.get("EVT_INTERRUPT_CLI_STEP", "1000"))
LONG = os.environ.get("EVT_INTERRUPT_LONG") == "1"
MDT_STEP = int(os.environ.get("EVT_INTERRUPT_MDT_STEP", "3"))


def _interrupter(kind: str, n: int, **kw: object) -> Interrupter:
    if kind == "sigint":
        return Interrupter(n, "sigint", "keyboard", **kw)  # type: ignore[arg-type]
    if kind == "sigint-again":  # Ctrl-C, and again at the next storage operation (in whatever handles the first)
        return Interrupter(n, "sigint", "keyboard", again=1, **kw)  # type: ignore[arg-type]
    return Interrupter(n, "raise", kind, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [6, 9])
def test_ctrl_c_twice_during_a_compaction_run_waits_for_its_tasks(tmp_path: Path, version: int) -> None:
    """Ctrl-C while a compaction task writes, and again while the run waits for its tasks to stop: the run came
    back with the second interrupt while the task went on writing its carry-over log and base file."""
    case = Case(str(tmp_path / "t"), version, "run-full")
    inter = Interrupter(1, "sigint", match=".log.0_", twice=True)
    err = run_interrupted(case.call, inter)
    assert inter.fired_at is not None and inter.fired_in_main is False, inter.fired_at
    assert isinstance(err, KeyboardInterrupt), repr(err)
    assert quiet_after(case.path) is None, "a compaction task went on writing after the run came back"
    assert problems_after(case, err) == []


def _sweep(
    root: str, version: int, operation: str, kind: str, step: int, storage_options: dict[str, str] | None = None
) -> None:
    # Each operation and version starts at another point of the step, so that a coarse step still meets every kind.
    n, fired, failures = 1 + (7 * OPERATIONS.index(operation) + 3 * version) % step, 0, []
    while True:
        case = Case(f"{root}/t{n}", version, operation, storage_options)
        inter = _interrupter(kind, n)
        err = run_interrupted(case.call, inter)
        if inter.fired_at is None:
            if fired or n == 1:
                break
            n = 1  # an operation shorter than where this one starts: from its first storage operation then
            continue
        fired += 1
        found = problems_after(case, err)
        if found:
            failures.append(f"{operation} v{version} {kind} at #{n} {inter.fired_at}: {err!r}: {found}")
        n += step
    assert fired, f"{operation} reached no storage operation"
    assert not failures, "\n".join(failures)


SWEEP = [
    (version, operation)
    for i, operation in enumerate(OPERATIONS)
    for version in (6, 9)
    if LONG or version == (6, 9)[i % 2] or operation.startswith("run")
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("version", "operation"), SWEEP)
def test_interrupt_anywhere(tmp_path: Path, version: int, operation: str, kind: str) -> None:
    _sweep(str(tmp_path), version, operation, kind, STEP)


@pytest.mark.parametrize(
    "operation", [op for op in OPERATIONS if op != "schedule-symlink"] if LONG else ["run"]
)  # no symlinks on object stores: that schedule is refused before it touches storage
def test_interrupt_anywhere_on_s3(s3_server: Any, operation: str) -> None:
    """The sweep on the session's S3 server (version 9: no append, conditional puts), at a coarser step."""
    bucket = s3_server.new_bucket("interrupts")
    _sweep(f"s3://{bucket}/{operation}", 9, operation, "sigint", S3_STEP, s3_server.options)


@pytest.mark.parametrize("kind", ["sigint", "memory"])
def test_an_interrupted_runner_run_can_be_unscheduled(tmp_path: Path, kind: str) -> None:
    """The notebook's compaction runner (``CompactionRunnerModel`` behind the widget's buttons) interrupted in its
    run, or failing with an exception that is no ``EvtError``: it stayed ``running`` with every button disabled, so
    the pending plan could be neither run again nor unscheduled from the notebook."""
    from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
    from evt_toolkit.widgets.models import CompactionRunnerModel
    from evt_toolkit.widgets.views import CompactionRunner
    from tests.safety.interrupts import THRESHOLD, ours

    case = Case(str(tmp_path / "t"), 6, "write")
    widget = CompactionRunner(case.table, EventTimeBasedCompactionStrategy(threshold=THRESHOLD))
    runner: CompactionRunnerModel = widget.model
    widget.schedule()
    assert runner.state == "scheduled", runner.last_error
    instant = runner.scheduled.instant if runner.scheduled else ""
    err = run_interrupted(widget.run, _interrupter(kind, 12))
    assert isinstance(err, KeyboardInterrupt | MemoryError), repr(err)
    assert runner.state == "failed", runner.state
    assert runner.last_error and instant in runner.last_error, runner.last_error
    assert runner.enabled()["unschedule"] and not any(b.disabled for n, b in widget.buttons.items() if n != "run")
    widget.dry_run.value = False
    widget.unschedule()
    assert runner.state == "idle", runner.last_error
    assert not case.table.refresh().timeline.pending_compactions()
    assert ours(case.path) == case.before
    assert quiet_after(case.path) is None


CLI_CASES = [
    (operation, how)
    for operation in ("schedule", "run-full", "clean", "rollback-last", "unschedule", "repair")
    for how in ("sigint", "sigterm")
    if LONG or (operation, how) in {("run-full", "sigint"), ("clean", "sigint"), ("rollback-last", "sigterm")}
]


@pytest.mark.parametrize(("operation", "how"), CLI_CASES)
def test_evt_stopped_by_a_signal(tmp_path: Path, operation: str, how: str) -> None:
    """``evt`` in a child process that gets a real ``SIGINT`` (Ctrl-C) or ``SIGTERM`` at its n-th storage operation:
    Ctrl-C exits 130 with one line and no traceback, ``SIGTERM`` stops it the same way and exits 143; either way the
    table reads as before or after and the documented recovery ends there."""
    from tests.safety.interrupts import run_cli_interrupted

    n, failures = 1 + (CLI_STEP > 100) * 24, []  # one point half-way through, unless a step is given
    while True:
        case = Case(str(tmp_path / f"t{n}"), 6, operation)
        code, err, fired = run_cli_interrupted(case, n, how)
        if code == 0 and fired is None:
            break
        where = f"evt {operation} {how} at #{n} ({fired}): exit {code}"
        want, line = (130, "interrupted") if how == "sigint" else (143, "terminated")
        if code != want or err.strip().splitlines()[-1:] != [line] or "Traceback" in err:
            failures.append(f"{where}, stderr {err[-800:]!r}")
        found = problems_after(case, KeyboardInterrupt())
        if found:
            failures.append(f"{where}: {found}")
        n += CLI_STEP
    assert failures or n > 1 + (CLI_STEP > 100) * 24, f"evt {operation} reached no storage operation"
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("version", [6, 9])
def test_a_base_file_that_cannot_be_written_fails_the_run_with_an_evt_error(tmp_path: Path, version: int) -> None:
    """An OSError from below the storage layer — the local compaction task writes its base file through a temporary
    file and a rename, not through the storage layer; here a folder stands where the file goes, as a full disk or a
    failing mount fails it — came out of ``t.compaction.run`` as a bare ``OSError`` naming neither the compaction
    nor the table, and ``evt run`` ended with a traceback instead of one line and exit 1."""
    import shutil

    from evt_toolkit.cli.app import main
    from evt_toolkit.errors import StorageError
    from tests.safety.interrupts import files, ours

    case = Case(str(tmp_path / "t"), version, "run-full")
    trial = str(tmp_path / "trial")
    shutil.copytree(case.path, trial, symlinks=True)
    before = files(trial)
    evt.HudiTable.open(trial).compaction.run(case.target or "")
    base_files = sorted(p for p in set(files(trial)) - set(before) if p.endswith(".parquet"))
    assert base_files
    blocked = Path(case.path) / base_files[-1]
    for attempt in ("api", "cli"):
        blocked.mkdir()
        (blocked / "x").write_bytes(b"")
        if attempt == "api":
            with pytest.raises(StorageError) as info:
                case.table.compaction.run(case.target or "")
            assert case.target in str(info.value) and case.path in str(info.value), str(info.value)
        else:
            assert main(["run", case.path, case.target or ""]) == 1
        shutil.rmtree(blocked)
        assert ours(case.path) == case.before
    case.table.compaction.run(case.target or "")
    assert ours(case.path) == case.before
    assert problems_after(case, None) == []


@pytest.mark.spark
def test_a_compaction_run_whose_spark_job_is_cancelled(spark: object, tmp_path: Path) -> None:
    """``cancelAllJobs()`` from another thread (a notebook's *interrupt kernel* on a Spark cell, the Spark UI's kill)
    while a compaction runs on Spark: the run fails with a ``CompactionExecutionError`` naming the compaction and the
    table (it named neither), no cancelled task writes afterwards, the table reads as before, and running the plan
    again completes it."""
    import threading
    import time

    from evt_toolkit.errors import CompactionExecutionError
    from tests.safety.interrupts import ours, slow_task, theirs

    case = Case(str(tmp_path / "t"), 6, "run-full")
    sc = spark.sparkContext  # type: ignore[attr-defined]

    def cancel_soon() -> None:
        time.sleep(2)
        sc.cancelAllJobs()

    canceller = threading.Thread(target=cancel_soon)
    canceller.start()
    try:
        with pytest.raises(CompactionExecutionError) as info:
            case.table.compaction.run(case.target or "", spark=spark, fault_hook=slow_task)
    finally:
        canceller.join()
    assert case.target in str(info.value) and case.path in str(info.value), str(info.value)
    time.sleep(4)  # the cancelled tasks' Python workers are stopped (spark.python.task.killTimeout)
    assert ours(case.path) == case.before == theirs(case.path)
    assert problems_after(case, None) == []


@pytest.mark.spark
def test_a_cancelled_spark_compaction_task_writes_nothing_after_the_run_raised(spark: Any, tmp_path: Path) -> None:
    """``cancelAllJobs()`` right after the run's tasks started, each task a second away from writing: nothing may be
    written once the run raised (the user's next step may be a rollback)."""
    import threading

    from evt_toolkit.errors import CompactionExecutionError
    from tests.safety.interrupts import started_then_slow

    case = Case(str(tmp_path / "t"), 6, "run-full")
    marker = tmp_path / "started"
    sc = spark.sparkContext
    done = threading.Event()

    def cancel_once_started() -> None:
        while not done.wait(0.05):
            if marker.exists():
                sc.cancelAllJobs()
                return

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    try:
        with pytest.raises(CompactionExecutionError):
            case.table.compaction.run(case.target or "", spark=spark, fault_hook=started_then_slow(str(marker), 1.0))
    finally:
        done.set()
        canceller.join()
    assert quiet_after(case.path, 3.0) is None


@pytest.mark.spark
def test_a_cancelled_spark_compaction_run_raises_once_its_tasks_stopped(spark: Any, tmp_path: Path) -> None:
    """``cancelAllJobs()`` while the run's tasks compute: Spark reports the job failed at once, while each task's
    Python worker runs on until Spark kills it; the run raised while its tasks were still running. Each task here
    notes outside the table every 0.1 s that it runs: nothing may be noted once the run raised."""
    import threading

    from evt_toolkit.errors import CompactionExecutionError
    from tests.safety.interrupts import kept_alive

    case = Case(str(tmp_path / "t"), 6, "run-full")
    notes = tmp_path / "notes"
    notes.mkdir()
    sc = spark.sparkContext
    done = threading.Event()

    def cancel_once_started() -> None:
        while not done.wait(0.05):
            if (notes / "started").exists():
                sc.cancelAllJobs()
                return

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    try:
        with pytest.raises(CompactionExecutionError):
            case.table.compaction.run(case.target or "", spark=spark, fault_hook=kept_alive(str(notes), 4.0))
    finally:
        done.set()
        canceller.join()
    alive = {p.name: p.read_text() for p in notes.glob("alive-*")}
    assert alive, "no task started"
    time.sleep(2.5)
    assert {p.name: p.read_text() for p in notes.glob("alive-*")} == alive, "a task ran on after the run raised"
    assert quiet_after(case.path) is None


@pytest.mark.spark
def test_a_task_of_an_abandoned_spark_run_attempt_writes_nothing(spark: Any, tmp_path: Path) -> None:
    """A task of a cancelled run that outlives the driver's wait (an executor the driver lost goes on running it):
    the same task, with the run attempt it carried, run again after the run raised. It wrote its base file under
    the plan's name while the plan was still inflight; it must refuse with a ``CompactionExecutionError`` naming the
    compaction, and the table's files stay as they are — also once a new run of the plan completed."""
    import pickle
    import threading

    from evt_toolkit.compaction.merge_task import run_merge_task
    from evt_toolkit.errors import CompactionExecutionError
    from tests.safety.interrupts import files, kept_alive, ours, theirs

    case = Case(str(tmp_path / "t"), 6, "run-full")
    notes = tmp_path / "notes"
    notes.mkdir()
    sc = spark.sparkContext
    done = threading.Event()

    def cancel_once_started() -> None:
        while not done.wait(0.05):
            if (notes / "started").exists():
                sc.cancelAllJobs()
                return

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    try:
        with pytest.raises(CompactionExecutionError):
            case.table.compaction.run(case.target or "", spark=spark, fault_hook=kept_alive(str(notes), 0.5))
    finally:
        done.set()
        canceller.join()
    late = [pickle.loads(p.read_bytes()) for p in sorted(notes.glob("task-*.pickle"))]
    assert late and all(t.attempt for t in late), late
    before = files(case.path)
    for task in late:
        with pytest.raises(CompactionExecutionError) as info:
            run_merge_task(task)
        assert case.target in str(info.value) and task.attempt in str(info.value), str(info.value)
    assert files(case.path) == before, "a task of an abandoned run attempt wrote"
    case.table.compaction.run(case.target or "")
    after = files(case.path)
    for task in late:
        with pytest.raises(CompactionExecutionError):
            run_merge_task(task)
    assert files(case.path) == after
    assert ours(case.path) == case.before == theirs(case.path)


@pytest.mark.spark
def test_a_cancelled_spark_write_task_writes_nothing_after_the_write_raised(spark: Any, tmp_path: Path) -> None:
    """``cancelAllJobs()`` once a write's file-group tasks started on Spark, each a second away from writing its
    logs: the write raised at once while the tasks' Python workers went on and wrote their logs into the instant it
    had just reported failed. Nothing may change once it raised; the rollback then leaves the table as before."""
    import threading

    from evt_toolkit.errors import WriteError
    from evt_toolkit.spark.executor import spark_executor
    from tests.safety.interrupts import batch, ours, slow_write_task, theirs

    case = Case(str(tmp_path / "t"), 6, "write")
    marker = tmp_path / "started"
    sc = spark.sparkContext
    done = threading.Event()

    def cancel_once_started() -> None:
        while not done.wait(0.05):
            if marker.exists():
                sc.cancelAllJobs()
                return

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    try:
        with pytest.raises(WriteError) as info:
            case.table.write(
                batch(list(range(25, 40)), 5), executor=spark_executor(spark, slow_write_task(str(marker), 1.0))
            )
    finally:
        done.set()
        canceller.join()
    assert case.path in str(info.value), str(info.value)
    assert quiet_after(case.path, 3.0) is None
    case.recover()
    assert ours(case.path) == case.before == theirs(case.path)


@pytest.mark.spark
def test_ctrl_c_while_a_compaction_run_waits_for_its_spark_job(spark: Any, tmp_path: Path) -> None:
    """A real ``SIGINT`` (a notebook's *interrupt kernel*) while the driver waits for the run's Spark job: the
    ``KeyboardInterrupt`` comes out of the wait at once while the job itself runs on, its tasks writing base files
    and carry-over logs for as long as they take. The job must be cancelled and its tasks stopped before the
    interrupt comes out; the table then reads as before and the plan runs again to completion."""
    import signal
    import threading

    from tests.safety.interrupts import kept_alive, ours, theirs

    case = Case(str(tmp_path / "t"), 6, "run-full")
    notes = tmp_path / "notes"
    notes.mkdir()
    done = threading.Event()

    def interrupt_once_started() -> None:
        while not done.wait(0.05):
            if (notes / "started").exists():
                os.kill(os.getpid(), signal.SIGINT)
                return

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    canceller = threading.Thread(target=interrupt_once_started)
    canceller.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            case.table.compaction.run(case.target or "", spark=spark, fault_hook=kept_alive(str(notes), 3.0))
    finally:
        done.set()
        canceller.join()
        signal.signal(signal.SIGINT, previous)
    alive = {p.name: p.read_text() for p in notes.glob("alive-*")}
    time.sleep(2.0)
    assert {p.name: p.read_text() for p in notes.glob("alive-*")} == alive, "a task ran on after the interrupt"
    assert quiet_after(case.path, 1.0) is None
    assert ours(case.path) == case.before == theirs(case.path)
    assert problems_after(case, None) == []


MDT_OPS = ("write", "run-copy", "run-symlink", "clean", "rollback-failed", "rollback-last", "unschedule", "repair")
MDT_CASES = [
    (op, n)
    for i, op in enumerate(MDT_OPS)
    for n in (
        range(1, int(os.environ.get("EVT_INTERRUPT_MDT_MAX", "60")), MDT_STEP)
        if LONG
        else (4 + 3 * i if op != "repair" else 9,)
    )
]


def _mdt_call(t: evt.HudiTable, action: str, args: tuple[str, ...]) -> Any:
    """The in-process call of a ``tests.safety.crash_anywhere`` child action."""
    import pyarrow.parquet as pq

    from evt_toolkit.compaction import EventTimeBasedCompactionStrategy

    if action == "write":
        return lambda: t.write(pq.read_table(args[0]), args[1], options={"hoodie.index.type": args[2]})
    if action == "schedule":
        return lambda: t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=int(args[0])))
    if action == "run":
        return lambda: t.compaction.run(args[0])
    if action == "clean":
        return lambda: t.clean(args[0], int(args[1]), dry_run=False)
    if action == "rollback":
        return lambda: t.rollback(args[0])
    if action == "unschedule":
        return lambda: t.compaction.unschedule(args[0], dry_run=False)
    if action == "repair":
        return lambda: t.compaction.repair(dry_run=False, older_than_s=0)
    raise AssertionError(action)


@pytest.mark.parametrize(("op", "n"), MDT_CASES)
def test_interrupt_anywhere_with_a_metadata_table(op: str, n: int) -> None:
    """Ctrl-C at the n-th storage operation of an operation on a copy of a stock v9 table with a metadata table, in
    this process (the metadata table's sync included): the readers (hudi-rs listing through the metadata table) read
    before or after, the ``files`` partition lists the live files, and the kill tests' recovery ends at the oracle."""
    from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
    from evt_toolkit.errors import EvtError
    from evt_toolkit.services.clean_planner import KEEP_LATEST_FILE_VERSIONS
    from tests.conftest import FIXTURES_DIR
    from tests.safety.test_crash_sweep_mdt import _check_readers, _rows, _setup
    from tests.safety.test_mdt_model import MdtLifecycle

    if not FIXTURES_DIR.is_dir():
        pytest.skip(f"real Hudi fixtures not found at {FIXTURES_DIR}")
    m = MdtLifecycle()
    try:
        m.start("mor_v9_txns_simple_meta")
        action, args, recover = _setup(m, op)
        before = after = _rows(m)
        if op == "rollback-last":
            after = m._table(list(m.undo[-1][1].values()))
        elif op == "write":
            saved = (dict(m.oracle), dict(m.gone))
            m._commit("pending", m.pending_rows, "upsert")
            after = _rows(m)
            m.undo.pop()
            m.oracle, m.gone = saved
        known = {i.time for i in m.t.refresh().timeline.instants}
        inter = Interrupter(n, "sigint")
        err = run_interrupted(_mdt_call(m.t, action, args), inter)
        if inter.fired_at is None:
            pytest.skip(f"{op} makes fewer than {n} storage operations")
        assert err is None or isinstance(err, KeyboardInterrupt | EvtError), repr(err)
        assert quiet_after(m.t.path) is None, f"{op}: files changed after it came back"
        _check_readers(m, [before, after], f"{op} interrupted at #{n} ({inter.fired_at})")
        m.metadata_table_lists_the_live_files()
        tl = m.t.refresh().timeline
        if op == "write":
            for w in [i.time for i in tl.inflight_writes()]:
                m.t.rollback(w)
            for w in [i.time for i in tl.completed() if i.time not in known and i.action == "deltacommit"]:
                m._commit(w, m.pending_rows, "upsert")
        elif op == "rollback-last":
            recover()
            _, m.oracle, m.gone = m.undo.pop()
        else:
            recover()
        for check in (m.snapshot_is_the_oracle, m.metadata_table_lists_the_live_files, m.read_optimized_agrees):
            check()
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


@pytest.mark.spark
@pytest.mark.parametrize("version", [6, 9] if LONG else [9])
def test_a_spark_dataframe_write_whose_job_is_cancelled(spark: Any, tmp_path: Path, version: int) -> None:
    """``cancelAllJobs()`` while a Spark DataFrame write (``write_dataframe``) computes its rows: the write fails with
    a ``WriteError`` naming the table (it came out as Spark's own error, no ``EvtError``), nothing writes afterwards,
    the table reads as before, and the same write then succeeds."""
    import threading

    from pyspark.sql import functions as F

    from evt_toolkit.errors import WriteError
    from evt_toolkit.spark.executor import write_dataframe
    from tests.safety.interrupts import Model, batch, ours, sleepy, theirs

    case = Case(str(tmp_path / "t"), version, "write")
    slow = F.udf(sleepy, "string")
    df = spark.createDataFrame(batch(list(range(25, 29)), 5)).repartition(2).withColumn("v", slow(F.col("v")))
    sc = spark.sparkContext
    done = threading.Event()

    def keep_cancelling() -> None:  # whichever of the write's jobs is running: each row takes a second
        while not done.wait(0.5):
            sc.cancelAllJobs()

    canceller = threading.Thread(target=keep_cancelling)
    canceller.start()
    try:
        with pytest.raises(WriteError) as info:
            write_dataframe(case.table, df, "upsert")
    finally:
        done.set()
        canceller.join()
    assert case.path in str(info.value), str(info.value)
    assert quiet_after(case.path, 1.0) is None
    assert ours(case.path) == case.before == theirs(case.path)
    case.recover()
    write_dataframe(evt.HudiTable.open(case.path), spark.createDataFrame(batch(list(range(25, 29)), 5)), "upsert")
    want = Model()
    want.rows = dict(case.before)
    want.upsert(list(range(25, 29)), 5)
    assert ours(case.path) == want.rows == theirs(case.path)
