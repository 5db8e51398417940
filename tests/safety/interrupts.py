"""Interrupts and exceptions at any storage operation of an operation (helpers for ``test_interrupts.py``).

:class:`Interrupter` wraps every :class:`~evt_toolkit.storage.fs.TableStorage` method that reads or changes a table,
and the two points a compaction task passes on its own thread (``merged``: its logs read, ``written``: its base file
in place), and at the n-th of them, in whichever thread reaches it, either

* sends this process a real ``SIGINT`` (``sigint``: Ctrl-C, or a notebook's *interrupt kernel*: Python raises
  ``KeyboardInterrupt`` in the main thread at its next instruction, also out of a blocking wait), optionally a
  second one ``again`` operations later (an interrupt arriving while the first one is being handled), or
* sends it ``SIGTERM`` (``sigterm``: what a scheduler or ``kill`` sends to stop a process), or
* raises an exception right there (``raise``: ``KeyboardInterrupt`` raised in the thread itself, ``MemoryError``,
  ``OSError`` — what a full disk or a dying mount raises below the storage layer).

:class:`Table` builds a small partitioned table and keeps a plain dict of what was committed; :func:`files` lists
every file under the table with its size (the check that nothing still writes after an operation came back).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

import evt_toolkit as evt
from evt_toolkit.compaction import executor as compaction_executor
from evt_toolkit.compaction.merge_task import MergeTask
from evt_toolkit.storage.fs import TableStorage

#: The TableStorage methods an operation reaches storage through (the others are built on these).
STORAGE_OPS = (
    "exists",
    "is_file",
    "is_dir",
    "list_dir",
    "size",
    "mtime",
    "read_bytes",
    "read_range",
    "read_ranges",
    "open_input",
    "write_bytes_atomic",
    "copy_file",
    "delete_file",
    "delete_files",
    "delete_dir",
    "symlink",
    "read_link",
    "is_symlink",
    "lexists",
)


def _make(kind: str, where: str) -> BaseException:
    if kind == "keyboard":
        return KeyboardInterrupt()
    if kind == "memory":
        return MemoryError(f"injected at {where}")
    return OSError(28, f"No space left on device (injected at {where})")


class Interrupter:
    """Interrupts the n-th storage operation (or task boundary) of what runs inside :meth:`armed`."""

    def __init__(
        self,
        n: int,
        how: str = "sigint",
        kind: str = "keyboard",
        again: int | None = None,
        *,
        match: str = "",
        twice: bool = False,
    ) -> None:
        self.n = n
        self.how = how
        self.kind = kind
        self.again = again
        self.match = match
        self.twice = twice
        self.calls = 0
        self.fired_at: str | None = None
        self.fired_in_main: bool | None = None
        self._lock = threading.Lock()

    def _hit(self, where: str) -> None:
        if self.match and self.match not in where:
            return
        with self._lock:
            self.calls += 1
            first = self.calls == self.n
            second = self.again is not None and self.calls == self.n + self.again
            if first:
                self.fired_at = where
                self.fired_in_main = threading.current_thread() is threading.main_thread()
        if not (first or second):
            return
        if self.how in ("sigint", "sigterm"):
            os.kill(os.getpid(), signal.SIGINT if self.how == "sigint" else signal.SIGTERM)
            if self.twice:
                # Ctrl-C pressed again while the first one is being handled, then this operation goes on.
                time.sleep(0.2)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
            if threading.current_thread() is threading.main_thread():
                time.sleep(0.001)  # delivered at the next instruction, here rather than a few calls on
            return
        raise _make(self.kind, where)

    @contextlib.contextmanager
    def armed(self) -> Iterator[Interrupter]:
        originals: dict[str, Any] = {name: getattr(TableStorage, name) for name in STORAGE_OPS}
        original_run = compaction_executor.run_merge_task

        def wrap(name: str) -> Any:
            fn = originals[name]

            def wrapped(storage: TableStorage, *a: Any, **kw: Any) -> Any:
                self._hit(f"{name}({a[0] if a else ''})")
                return fn(storage, *a, **kw)

            return wrapped

        def hook(task: MergeTask, stage: str) -> None:
            self._hit(f"task {task.file_id} {stage}")

        def run_task(task: MergeTask, *a: Any, **kw: Any) -> Any:
            import dataclasses

            return original_run(dataclasses.replace(task, fault_hook=hook), *a, **kw)

        for name in STORAGE_OPS:
            setattr(TableStorage, name, wrap(name))
        compaction_executor.run_merge_task = run_task  # type: ignore[assignment]
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield self
        finally:
            for name, fn in originals.items():
                setattr(TableStorage, name, fn)
            compaction_executor.run_merge_task = original_run  # type: ignore[assignment]
            signal.signal(signal.SIGINT, previous)


def run_interrupted(op: Callable[[], Any], inter: Interrupter) -> BaseException | None:
    """Run ``op`` under ``inter``; the exception that came out (``None`` when it returned).

    A ``SIGINT`` sent just before ``op`` returned may land right after it: it is caught here too."""
    err: BaseException | None = None
    with inter.armed():
        try:
            try:
                op()
            finally:
                time.sleep(0.01)  # a signal sent by the last operation lands here at the latest
        except BaseException as exc:  # the test looks at what came out
            err = exc
    return err


def files(root: str | Path, storage_options: dict[str, str] | None = None) -> dict[str, int]:
    """Every file (and symlink) under ``root`` with its size, ``-1`` for a dangling symlink."""
    out: dict[str, int] = {}
    if storage_options is not None:  # an object store: listed through the storage layer
        storage = TableStorage.from_uri(str(root), storage_options)
        folders = [""]
        while folders:
            entries, subfolders = storage.list_dir(folders.pop())
            out.update((e.path, e.size) for e in entries)
            folders.extend(subfolders)
        return out
    for folder, _dirs, names in os.walk(root):
        for name in names:
            p = os.path.join(folder, name)
            try:
                out[os.path.relpath(p, root)] = os.stat(p).st_size
            except FileNotFoundError:
                out[os.path.relpath(p, root)] = -1
    return out


def quiet_after(
    root: str | Path, wait_s: float = 0.3, storage_options: dict[str, str] | None = None
) -> dict[str, tuple[int, int]] | None:
    """``None`` when nothing under ``root`` changes for ``wait_s`` seconds, else what changed."""
    before = files(root, storage_options)
    time.sleep(wait_s)
    after = files(root, storage_options)
    if before == after:
        return None
    keys = set(before) | set(after)
    return {k: (before.get(k, -2), after.get(k, -2)) for k in sorted(keys) if before.get(k) != after.get(k)}


def batch(ids: list[int], ts: int) -> pd.DataFrame:
    """Upserts of ``ids`` at ordering value (and event-time offset) ``ts``."""
    return pd.DataFrame(
        {
            "id": pd.array(ids, dtype="int64"),
            "region": [f"r{i % 2}" for i in ids],
            "ts": pd.array([ts] * len(ids), dtype="int64"),
            "ev": pd.array([1_700_000_000_000 + ts * 1000] * len(ids), dtype="int64"),
            "v": [f"{i}@{ts}" for i in ids],
        }
    )


class Model:
    """A plain dict ``id -> (ts, v)`` of what was committed."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[int, str]] = {}

    def upsert(self, ids: list[int], ts: int) -> None:
        for i in ids:
            self.rows[i] = (ts, f"{i}@{ts}")

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            self.rows.pop(i, None)

    def copy(self) -> dict[int, tuple[int, str]]:
        return dict(self.rows)


def answer(t: pa.Table) -> dict[int, tuple[int, str]]:
    """A snapshot as the model's dict (failing on a key read twice)."""
    ids = t.column("id").to_pylist()
    assert len(ids) == len(set(ids)), f"a key read twice: {sorted(i for i in ids if ids.count(i) > 1)}"
    return dict(zip(ids, zip(t.column("ts").to_pylist(), t.column("v").to_pylist(), strict=True), strict=True))


def ours(path: str, storage_options: dict[str, str] | None = None) -> dict[int, tuple[int, str]]:
    """Our snapshot, read by a new handle (what a new process reads)."""
    return answer(evt.HudiTable.open(path, storage_options=storage_options).read(columns=["id", "ts", "v"]))


def theirs(path: str, storage_options: dict[str, str] | None = None) -> dict[int, tuple[int, str]]:
    """hudi-rs's snapshot."""
    import hudi

    b = hudi.HudiTableBuilder.from_base_uri(path)
    if storage_options:
        b = b.with_storage_options(storage_options)
    batches = b.build().read()
    if not batches:
        return {}
    return answer(pa.Table.from_batches(batches).select(["id", "ts", "v"]))


# -- the table and the operations ------------------------------------------------------------------------------------

#: The event-time threshold of the partial plans: the first two writes (ts 1, 2) are at or below it.
THRESHOLD = 1_700_000_000_000 + 2500

#: Every operation the sweep interrupts.
OPERATIONS = (
    "write",
    "delete",
    "schedule",
    "schedule-symlink",
    "run",
    "run-execute-links",
    "run-full",
    "clean",
    "rollback-failed",
    "rollback-last",
    "unschedule",
    "repair",
)


class Case:
    """A table prepared for one operation: ``before`` and ``after`` are the answers the operation goes between,
    ``call`` runs it through ``table`` (a long-lived handle, as a notebook keeps), ``target`` is the instant it
    rolls back or the plan it runs or takes back."""

    def __init__(self, path: str, version: int, operation: str, storage_options: dict[str, str] | None = None):
        from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
        from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy

        self.path, self.operation, self.storage_options = path, operation, storage_options
        t = evt.HudiTable.create(
            path,
            "it",
            "id",
            partition_by="region",
            ordering_field="ts",
            event_time_field="ev",
            buckets=2,
            merge_mode="event_time",
            table_version=version,
            storage_options=storage_options,
        )
        m = Model()
        t.write(batch(list(range(0, 24)), 1))
        m.upsert(list(range(0, 24)), 1)
        t.write(batch(list(range(10, 30)), 2))
        m.upsert(list(range(10, 30)), 2)
        t.write(batch([1, 2], 3), "delete")
        m.delete([1, 2])
        before_last = m.copy()
        last = t.write(batch(list(range(20, 34)), 4))
        m.upsert(list(range(20, 34)), 4)
        self.table, self.model = t, m
        self.before = self.after = m.copy()
        self.target: str | None = None
        partial = EventTimeBasedCompactionStrategy(threshold=THRESHOLD)
        self.call: Callable[[], Any]
        if operation == "write":
            m.upsert(list(range(25, 40)), 5)
            self.after = m.copy()
            self.call = lambda: t.write(batch(list(range(25, 40)), 5))
        elif operation == "delete":
            m.delete([3, 4, 21])
            self.after = m.copy()
            self.call = lambda: t.write(batch([3, 4, 21], 5), "delete")
        elif operation in ("schedule", "schedule-symlink"):
            mode = "copy" if operation == "schedule" else "symlink"
            self.call = lambda: t.compaction.schedule(partial, link_mode=mode, link_timing="schedule")
        elif operation in ("run", "run-execute-links", "run-full"):
            if operation == "run-full":
                c = t.compaction.schedule(UnBoundedCompactionStrategy())
            else:
                timing = "execute" if operation == "run-execute-links" else "schedule"
                c = t.compaction.schedule(partial, link_mode=_link_mode(t), link_timing=timing)
            assert c is not None
            self.target = c.instant
            self.call = lambda: t.compaction.run(c.instant)
        elif operation == "clean":
            c = t.compaction.schedule(UnBoundedCompactionStrategy())
            assert c is not None
            t.compaction.run(c.instant)
            t.write(batch([0, 5], 6))
            m.upsert([0, 5], 6)
            self.before = self.after = m.copy()
            self.call = lambda: t.clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False)
        elif operation == "rollback-failed":
            self.target = _failed_write(t)
            self.call = lambda: t.rollback(self.target or "")
        elif operation == "rollback-last":
            self.after = before_last
            self.target = last
            self.call = lambda: t.rollback(last)
        elif operation == "unschedule":
            c = t.compaction.schedule(partial, link_mode="copy", link_timing="schedule")
            assert c is not None
            self.target = c.instant
            self.call = lambda: t.compaction.unschedule(c.instant, dry_run=False)
        elif operation == "repair":
            _abandoned_schedule(t, partial)
            self.call = lambda: t.compaction.repair(dry_run=False, older_than_s=0)
        else:
            raise ValueError(operation)

    def recover(self) -> evt.HudiTable:
        """The documented recovery of whatever the interrupted operation left, through a new handle."""
        from evt_toolkit.errors import EvtError, RollbackError

        t = evt.HudiTable.open(self.path, storage_options=self.storage_options)
        t.compaction.repair(dry_run=False, older_than_s=0)
        if self.operation.startswith("rollback"):
            with contextlib.suppress(RollbackError):  # resumed, or refused: it completed or never started
                t.rollback(self.target or "")
        t.refresh()
        for inst in t.timeline.inflight_writes():
            t.rollback(inst.time)
        if any(i.action == "clean" for i in t.refresh().timeline.pending()):
            t.clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False)
        if self.operation == "unschedule" and t.refresh().timeline.pending_compactions():
            t.compaction.unschedule(self.target or "", dry_run=False)
        for inst in t.refresh().timeline.pending_compactions():
            try:
                t.compaction.run(inst.time)
            except EvtError:  # the documented way out of a run that cannot go on: roll it back, run again
                t.rollback(inst.time)
                t.compaction.run(inst.time)
        return t.refresh()


def _link_mode(t: evt.HudiTable) -> str:
    return "symlink" if t.storage.supports_symlink else "copy"


def _failed_write(t: evt.HudiTable) -> str:
    """A write whose first two tasks wrote their logs and whose third failed: left inflight."""
    from evt_toolkit.errors import WriteError
    from evt_toolkit.write.writer import local_executor

    def failing(spec: Any, tasks: list[Any]) -> Any:
        local_executor(spec, tasks[:2])
        raise RuntimeError("a task was lost")

    with contextlib.suppress(WriteError):
        t.write(batch(list(range(0, 40)), 7), executor=failing)
    return t.refresh().timeline.inflight_writes()[0].time


def _abandoned_schedule(t: evt.HudiTable, strategy: Any) -> None:
    """A schedule that died after its links, before its plan."""
    original = TableStorage.write_bytes_atomic

    def dying(storage: TableStorage, rel: str, *a: Any, **kw: Any) -> Any:
        if rel.endswith(".compaction.requested"):
            raise RuntimeError("the schedule died")
        return original(storage, rel, *a, **kw)

    TableStorage.write_bytes_atomic = dying  # type: ignore[method-assign]
    try:
        with contextlib.suppress(RuntimeError):
            t.compaction.schedule(strategy, link_mode="copy", link_timing="schedule")
    finally:
        TableStorage.write_bytes_atomic = original  # type: ignore[method-assign]


def problems_after(case: Case, err: BaseException | None) -> list[str]:
    """What is wrong with the table and the exception an interrupted ``case`` left (empty: nothing).

    * nothing under the table changes any more once the call came back;
    * the call raised the interrupt itself (``KeyboardInterrupt``), an ``EvtError``, or the injected ``MemoryError``
      or ``OSError`` unchanged;
    * a new handle, hudi-rs and the handle that ran the call read the answer before or after the operation;
    * after the documented recovery both readers answer before or after; after a further write, a full compaction
      and a clean they answer that plus the write.
    """
    from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
    from evt_toolkit.errors import EvtError

    out: list[str] = []
    changed = quiet_after(case.path, storage_options=case.storage_options)
    if changed:
        out.append(f"files changed after the call came back: {changed}")
    if err is not None and not isinstance(err, KeyboardInterrupt | EvtError | MemoryError | OSError):
        out.append(f"surfaced as {type(err).__name__}: {err}")
    if isinstance(err, OSError) and isinstance(err, EvtError):
        out.append(f"an EvtError that is an OSError: {err}")
    both = (case.before, case.after)
    opts = case.storage_options
    read = ours(case.path, opts)
    if read not in both:
        out.append(f"a new handle reads neither before nor after: {_diff(read, case.before, case.after)}")
    if not out and theirs(case.path, opts) != read:
        out.append("hudi-rs reads otherwise than a new handle")
    try:
        same = answer(case.table.read(columns=["id", "ts", "v"]))
        if same not in both:
            out.append(f"the handle that ran it reads neither before nor after: {_diff(same, case.before, case.after)}")
    except EvtError as exc:
        out.append(f"the handle that ran it cannot read: {type(exc).__name__}: {exc}")
    if out:
        return out
    t = case.recover()
    read = ours(case.path, opts)
    if read not in both:
        return [f"after the recovery neither before nor after: {_diff(read, case.before, case.after)}"]
    if theirs(case.path, opts) != read:
        return ["after the recovery hudi-rs reads otherwise"]
    want = Model()
    want.rows = dict(read)
    want.upsert([1, 2, 30, 41], 9)
    t.write(batch([1, 2, 30, 41], 9))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    if c is not None:
        t.compaction.run(c.instant)
    t.clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False)
    if ours(case.path, opts) != want.rows or theirs(case.path, opts) != want.rows:
        return ["after a further write, a full compaction and a clean the answer is not the model's"]
    return []


def _diff(read: dict[int, Any], before: dict[int, Any], after: dict[int, Any]) -> str:
    def one(want: dict[int, Any]) -> str:
        lost = sorted(set(want) - set(read))
        extra = sorted(set(read) - set(want))
        changed = sorted(k for k in set(read) & set(want) if read[k] != want[k])
        return f"lost {lost}, extra {extra}, changed {changed}"

    return f"against before: {one(before)}; against after: {one(after)}"


# -- the command line in a child process -----------------------------------------------------------------------------

CLI_CHILD = """
import sys
from tests.safety.interrupts import Interrupter

n, how = int(sys.argv[1]), sys.argv[2]
inter = Interrupter(n, how)
with inter.armed():
    from evt_toolkit.cli.app import run
    try:
        run_argv = sys.argv[3:]
        sys.argv = ["evt", *run_argv]
        run()
    finally:
        sys.stderr.write("\\nfired at " + str(inter.fired_at) + "\\n")
"""


def cli_case_argv(case: Case) -> list[str]:
    """The ``evt`` command line of ``case``'s operation (the operations the command line has)."""
    t, target = case.path, case.target or ""
    return {
        "schedule": ["schedule", t, "--threshold", str(THRESHOLD), "--link-mode", "copy"],
        "run": ["run", t, target],
        "run-full": ["run", t, target],
        "clean": ["clean", "run", t, "--policy", "KEEP_LATEST_FILE_VERSIONS", "--retained", "1", "--yes"],
        "rollback-failed": ["rollback", t, target, "--yes"],
        "rollback-last": ["rollback", t, target, "--yes"],
        "unschedule": ["unschedule", t, target, "--yes"],
        "repair": ["repair", t, "--yes"],
    }[case.operation]


def run_cli_interrupted(case: Case, n: int, how: str) -> tuple[int, str, str | None]:
    """``evt`` run in a child process that gets ``SIGINT``/``SIGTERM`` at its n-th storage operation:
    ``(exit code, stderr without the harness's last line, where it fired or None)``."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("EVT_FAULT_AT", None)
    done = subprocess.run(
        [sys.executable, "-c", CLI_CHILD, str(n), how, *cli_case_argv(case)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=repo,
    )
    err = done.stderr
    fired: str | None = None
    head, sep, tail = err.rpartition("\nfired at ")
    if sep:
        err, fired = head, tail.strip()
        fired = None if fired == "None" else fired
    return done.returncode, err, fired


def slow_task(task: MergeTask, stage: str) -> None:
    """A compaction task's fault hook that takes its time before writing (so that its Spark job can be cancelled
    while it runs)."""
    if stage == "merged":
        time.sleep(3)


def sleepy(value: str) -> str:
    """A Spark UDF's body that takes its time (so that the job computing a DataFrame can be cancelled meanwhile)."""
    time.sleep(1)
    return value


def started_then_slow(marker: str, seconds: float) -> Callable[[MergeTask, str], None]:
    """A compaction task's fault hook that creates ``marker`` (outside the table) once its logs are read, then takes
    ``seconds`` before writing."""

    def hook(task: MergeTask, stage: str) -> None:
        if stage == "merged":
            Path(marker).touch()
            time.sleep(seconds)

    return hook


def kept_alive(folder: str, seconds: float) -> Callable[[MergeTask, str], None]:
    """A compaction task's fault hook that, once its logs are read, saves the task (pickled, with its run attempt)
    as ``task-<index>.pickle`` in ``folder`` (outside the table), creates ``folder/started`` and then, for ``seconds``,
    appends a line to ``folder/alive-<index>`` every 0.1 s: it shows when the task's Python code still runs."""

    def hook(task: MergeTask, stage: str) -> None:
        if stage != "merged":
            return
        import dataclasses
        import pickle

        saved = Path(folder) / f"task-{task.index}.pickle"
        saved.write_bytes(pickle.dumps(dataclasses.replace(task, fault_hook=None)))
        (Path(folder) / "started").touch()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with open(Path(folder) / f"alive-{task.index}", "a") as f:
                f.write(f"{time.time()}\n")
            time.sleep(0.1)

    return hook


def slow_write_task(marker: str, seconds: float) -> Callable[..., Any]:
    """A write's file-group task (for :func:`evt_toolkit.spark.executor.spark_executor`) that creates ``marker``
    (outside the table), takes ``seconds``, then writes its logs as :func:`write_file_group` does."""
    from evt_toolkit.write.task import write_file_group

    def task(*args: Any) -> Any:
        Path(marker).touch()
        time.sleep(seconds)
        return write_file_group(*args)

    return task
