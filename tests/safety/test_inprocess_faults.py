"""In-process storage failures: an operation's n-th storage change fails, and the SAME process goes on.

The crash tests kill the process, so every cache dies with it. Here the failure is an exception — a disk that
refuses a write, a store that answers 500 — and the process keeps its ``HudiTable`` (timeline, listing, fetched
bytes and sizes) and goes on as a user would: it reads at once, retries the operation or runs the documented
recovery (rollback of the failed write, re-run of the compaction, repair of the schedule), and keeps writing,
compacting and cleaning. Three ways to fail:

* ``before`` — the n-th change raises before it is made (the request never reached the store);
* ``after`` — the n-th change is made, then raises (the response was lost: the store applied it);
* ``outage`` — the n-th change and every later one until the operation returns raise before being made.

On top of every invariant of the model test (:mod:`tests.safety.test_model`: our snapshot, RO, incremental and
time-travel answers against the independent model and hudi-rs), each failure checks that the same object's answer
right after the exception is the table's state before or after the operation, never anything in between, and that
the failure surfaced as an :class:`~evt_toolkit.errors.EvtError`.

``EVT_SAFETY2_EXAMPLES`` (default 4) and ``EVT_SAFETY2_STEPS`` (default 12) size the run.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError, PendingTableServiceError, StorageError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.timeline import COMPACTION, DELTA_COMMIT
from tests.safety.test_model import BASE, Lifecycle, _as_table, _same
from tests.tables import hudi_rs

EXAMPLES = int(os.environ.get("EVT_SAFETY2_EXAMPLES", "4"))
STEPS = int(os.environ.get("EVT_SAFETY2_STEPS", "12"))

#: The storage methods that change a table (write_many and put_if_absent go through write_bytes_atomic).
MUTATORS = ("write_bytes_atomic", "copy_file", "delete_file", "delete_files", "delete_dir", "symlink")


class InjectedFault(StorageError):
    """The storage failure this test injects."""


class FaultInjector:
    """Makes the n-th storage change of the operations run inside :meth:`armed` fail (see the module docstring)."""

    def __init__(self, n: int, mode: str) -> None:
        self.n = n
        self.mode = mode
        self.calls = 0
        self.fired = False
        self._lock = threading.Lock()

    def _should_fail(self) -> tuple[bool, bool]:
        """``(fail, before)`` for the next change."""
        with self._lock:
            self.calls += 1
            if self.mode == "outage" and self.calls >= self.n:
                self.fired = True
                return True, True
            if self.calls == self.n:
                self.fired = True
                return True, self.mode == "before"
            return False, False

    @contextlib.contextmanager
    def armed(self) -> Iterator[FaultInjector]:
        originals = {name: getattr(TableStorage, name) for name in MUTATORS}

        def wrap(name: str) -> Any:
            original = originals[name]

            def wrapped(storage: TableStorage, *a: Any, **kw: Any) -> Any:
                fail, before = self._should_fail()
                if fail and before:
                    raise InjectedFault(f"injected failure of {name} (change {self.calls})")
                out = original(storage, *a, **kw)
                if fail:
                    raise InjectedFault(f"injected failure after {name} (change {self.calls})")
                return out

            return wrapped

        for name in MUTATORS:
            setattr(TableStorage, name, wrap(name))
        try:
            yield self
        finally:
            for name, fn in originals.items():
                setattr(TableStorage, name, fn)


class InProcessFaults(Lifecycle):
    """The model test's lifecycle, plus operations that fail in-process and are recovered by the same object."""

    def _fresh(self) -> evt.HudiTable:
        """Another handle on the table (what a new process sees), leaving the test's object and its caches alone."""
        return evt.HudiTable.open(self.t.path)

    def _attempt(self, op: Any, n: int, mode: str) -> tuple[bool, BaseException | None]:
        """Run ``op`` with the n-th storage change failing; ``(fired, exception)``."""
        inj = FaultInjector(n, mode)
        err: BaseException | None = None
        with inj.armed():
            try:
                op()
            except Exception as exc:  # checked below: only EvtErrors may come out
                err = exc
        if err is not None:
            assert isinstance(err, EvtError), f"a storage failure surfaced as {type(err).__name__}: {err}"
        return inj.fired, err

    def _same_object_reads(self, expected: list[pa.Table], what: str) -> None:
        """The test's object, without a refresh, answers one of ``expected`` (before or after the operation)."""
        _one_of(self.t.read(), expected, f"{what}, read by the same object")

    # -- the rule ------------------------------------------------------------------------------------------------
    @rule(
        what=st.sampled_from(
            ["write", "delete", "schedule", "run", "clean", "rollback-failed", "rollback-last", "unschedule"]
        ),
        n=st.integers(1, 14),
        mode=st.sampled_from(["before", "after", "outage"]),
        retry=st.booleans(),
        pick=st.integers(0, 7),
    )
    def fail_in_process(self, what: str, n: int, mode: str, retry: bool, pick: int) -> None:
        getattr(self, f"_fail_{what.replace('-', '_')}")(n, mode, retry, pick)

    # The lifecycle has a dozen rules; the failing operation is drawn as often as a few of them together.
    fail_in_process_again = fail_in_process
    fail_in_process_once_more = fail_in_process

    def _fail_write(self, n: int, mode: str, retry: bool, pick: int, *, delete: bool = False) -> None:
        import pandas as pd

        self.ts += 10
        ids = [pick, pick + 3, (pick * 5) % 12]
        if delete:
            known = [i for i in ids if str(i) in self.group_of]
            if not known:
                return
            df = pd.DataFrame({"id": pd.array(known, dtype="int64"), "region": [f"r{i % 2}" for i in known]})
            if pick % 2:
                df["ts"] = pd.array([self.ts - 5 * (pick % 3)] * len(known), dtype="int64")
            op = "delete"
        else:
            df = self._frame([(i, 100 * pick + i, False) for i in ids], [self.ts - (pick % 3) * 7] * len(ids))
            op = "upsert"
        before_snapshot = _as_table(self.model.snapshot())
        known_instants = {i.time for i in self._fresh().timeline.instants}
        _fired, err = self._attempt(lambda: self.t.write(df, op), n, mode)
        new = [i for i in self._fresh().timeline.instants if i.time not in known_instants and i.action == DELTA_COMMIT]
        assert len(new) <= 1, new
        completed = bool(new) and new[0].is_completed
        if completed:
            self._apply_write(new[0].time, df, op)
        after_snapshot = _as_table(self.model.snapshot())
        self._same_object_reads([after_snapshot] if completed else [before_snapshot], f"{op} failing at {n} ({mode})")
        if new and not completed:
            if retry:
                assert self.t.rollback(new[0].time).target == new[0].time
            else:
                self.failed.append(new[0].time)
        if err is not None and retry and not completed:
            # The user's retry of the same batch, with the same object.
            instant = self.t.write(df, op)
            if instant:
                self._apply_write(instant, df, op)

    def _fail_delete(self, n: int, mode: str, retry: bool, pick: int) -> None:
        self._fail_write(n, mode, retry, pick, delete=True)

    def _fail_schedule(self, n: int, mode: str, retry: bool, pick: int) -> None:
        threshold = None if pick == 0 else BASE + 150 * pick
        strategy = (
            UnBoundedCompactionStrategy()
            if threshold is None
            else EventTimeBasedCompactionStrategy(threshold=threshold)
        )
        kwargs: dict[str, Any] = {
            "link_mode": "symlink" if pick % 2 else "copy",
            "link_timing": "execute" if pick % 4 >= 2 else "schedule",
            "exact_split": threshold is not None and pick % 3 == 0,
        }
        before_snapshot = _as_table(self.model.snapshot())

        def op() -> None:
            with contextlib.suppress(PendingTableServiceError):
                self.t.compaction.schedule(strategy, **kwargs)

        self._attempt(op, n, mode)
        self._same_object_reads([before_snapshot], f"schedule failing at {n} ({mode})")
        if retry:
            self.t.compaction.repair(dry_run=False, older_than_s=0)
            op()

    def _first_pending(self) -> tuple[str, Any, pa.Table] | None:
        """The oldest pending compaction, its plan and the model's snapshot before the failing operation on it."""
        pending = self._pending()
        if not pending:
            return None
        c = pending[0]
        plan = self.t.timeline.compaction_plan(self.t.timeline.instant(c, COMPACTION))
        return c, plan, _as_table(self.model.snapshot())

    def _fail_run(self, n: int, mode: str, retry: bool, pick: int) -> None:
        first = self._first_pending()
        if first is None:
            return
        c, plan, before_snapshot = first
        self._attempt(lambda: self.t.compaction.run(c), n, mode)
        self._same_object_reads([before_snapshot], f"run failing at {n} ({mode})")
        still = c in {i.time for i in self._fresh().timeline.pending_compactions()}
        if not still:
            self._apply_compaction(c, plan)
            return
        if retry:
            if pick % 3 == 0 and any(i.is_inflight and i.time == c for i in self._fresh().timeline.instants):
                # Hudi's way back: the inflight run rolled back, the plan requested again, then run.
                assert self.t.rollback(c).plan_requested_again
            self.t.compaction.run(c)
            self._apply_compaction(c, plan)

    def _fail_clean(self, n: int, mode: str, retry: bool, pick: int) -> None:
        policy = KEEP_LATEST_COMMITS if pick % 2 else KEEP_LATEST_FILE_VERSIONS
        retained = 1 + pick % 2
        before_snapshot = _as_table(self.model.snapshot())
        self._attempt(lambda: self.t.clean(policy, retained, dry_run=False), n, mode)
        self._same_object_reads([before_snapshot], f"clean failing at {n} ({mode})")
        if retry:
            self.t.clean(policy, retained, dry_run=False)

    def _fail_rollback_failed(self, n: int, mode: str, retry: bool, pick: int) -> None:
        if not self.failed:
            return
        target = self.failed[0]
        before_snapshot = _as_table(self.model.snapshot())
        self._attempt(lambda: self.t.rollback(target), n, mode)
        self._same_object_reads([before_snapshot], f"rollback of failed {target} failing at {n} ({mode})")
        tl = self._fresh().timeline
        present = target in {i.time for i in tl.instants}
        pending_rollback = any(i.action == "rollback" and not i.is_completed for i in tl.instants)
        if retry or not (present or pending_rollback):
            if present or pending_rollback:
                self.t.rollback(target)
            self.failed.remove(target)

    def _fail_rollback_last(self, n: int, mode: str, retry: bool, pick: int) -> None:
        if self.last_write_units is None or self.failed:
            return
        tl = self._fresh().timeline
        last = self.writes[-1]
        if any(i.time > last and i.action in (DELTA_COMMIT, COMPACTION, "commit") for i in tl.instants):
            return
        before_snapshot = _as_table(self.model.snapshot())
        after_snapshot = self.history[self.writes[-2]] if len(self.writes) >= 2 else _as_table({})
        self._attempt(lambda: self.t.rollback(last), n, mode)
        self._same_object_reads([before_snapshot, after_snapshot], f"rollback of {last} failing at {n} ({mode})")
        tl = self._fresh().timeline
        present = last in {i.time for i in tl.instants}
        pending_rollback = any(i.action == "rollback" and not i.is_completed for i in tl.instants)
        target_done = any(i.time == last and i.is_completed for i in tl.instants)
        if present and target_done and not pending_rollback and not retry:
            return  # nothing changed: the write stays
        if present or pending_rollback:
            self.t.rollback(last)  # the documented recovery: roll it back again
        for group in self.last_write_units:
            g = self.model.groups[group]
            g.units.pop()
            if not g.units and not g.base:
                del self.model.groups[group]
        self.writes.pop()
        self.history.pop(last)
        self.last_write_units = None

    def _fail_unschedule(self, n: int, mode: str, retry: bool, pick: int) -> None:
        first = self._first_pending()
        if first is None:
            return
        c, plan, before_snapshot = first
        self._attempt(lambda: self.t.compaction.unschedule(c, dry_run=False), n, mode)
        self._same_object_reads([before_snapshot], f"unschedule of {c} failing at {n} ({mode})")
        if retry and c in self._pending():
            if pick % 2:
                report = self.t.compaction.unschedule(c, dry_run=False)
                if report.refused_reason is None:
                    assert c not in self._pending()
            else:
                self.t.compaction.run(c)
                self._apply_compaction(c, plan)

    # -- another process's view ----------------------------------------------------------------------------------
    def teardown(self) -> None:
        try:
            if hasattr(self, "model"):
                _same(self._fresh().read(), _as_table(self.model.snapshot()), "a fresh process at the end")
        finally:
            super().teardown()


InProcessFaults.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    # Shrinking a lifecycle of table operations takes minutes; EVT_SAFETY2_SHRINK=0 skips it on long runs.
    phases=[p for p in Phase if os.environ.get("EVT_SAFETY2_SHRINK", "1") != "0" or p != Phase.shrink],
)
test_in_process_faults = InProcessFaults.TestCase


def _one_of(got: pa.Table, states: list[pa.Table], what: str) -> None:
    errors = []
    for want in states:
        try:
            _same(got, want, what)
            return
        except AssertionError as exc:
            errors.append(str(exc)[:400])
    raise AssertionError(f"{what}: neither the state before nor after the operation: {errors}")


def recover(t: evt.HudiTable, op: str) -> None:
    """What the README tells a user to do after a failed operation: roll back the pending write (then write again),
    resume the rollback, run the compaction again, clean again."""
    from tests.tables import rows

    tl = t.refresh().timeline
    if op == "write":
        for i in tl.inflight_writes():
            t.rollback(i.time)
        if len(t.refresh().timeline.completed_commits()) < 3:
            t.write(rows(range(4, 10), 3, 200))
    elif op == "rollback-last":
        pending = [i for i in tl.instants if i.action == "rollback" and not i.is_completed]
        if pending:
            t.rollback(tl.rollback_plan(pending[0]).target)
        elif len(tl.completed_commits()) == 3:
            t.rollback(tl.completed_commits()[-1].time)
    elif op == "run":
        for c in tl.pending_compactions():
            t.compaction.run(c.time)
    elif op == "clean":
        t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)


# -- a deterministic sweep: every storage change of each operation, in each way to fail ---------------------------
SWEEP_MAX = int(os.environ.get("EVT_SAFETY2_SWEEP_MAX", "12"))


def _sweep_table(root: Any, version: int, op: str) -> tuple[evt.HudiTable, Any]:
    """A small event-time table ready for ``op``; returns it and the operation to run on it."""
    from tests.tables import create

    t = create(root / "t", "event_time", 2, version)
    return t, sweep_operation(t, op)


def sweep_operation(t: evt.HudiTable, op: str) -> Any:
    """Two writes into the new table ``t``, then what ``op`` needs before it runs; returns the operation (shared
    with the S3 fault test, which makes ``t`` on S3)."""
    from tests.tables import rows

    t.write(rows(range(6), 1, 100))
    t.write(rows(range(3, 9), 2, 300))
    if op == "write":
        return lambda: t.write(rows(range(4, 10), 3, 200))
    if op == "rollback-last":
        last = t.write(rows([1, 2, 10], 4, 250))
        return lambda: t.rollback(last)
    if op == "run":
        c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 150), link_mode="copy")
        assert c is not None
        return lambda: t.compaction.run(c.instant)
    if op == "clean":
        c = t.compaction.schedule(UnBoundedCompactionStrategy())
        assert c is not None
        t.compaction.run(c.instant)
        t.write(rows([0, 11], 5, 400))
        return lambda: t.clean(KEEP_LATEST_FILE_VERSIONS, 1, dry_run=False)
    raise AssertionError(op)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("op", ["write", "rollback-last", "run", "clean"])
def test_the_same_object_reads_what_a_new_process_reads_after_a_failed_operation(
    tmp_path: Any, op: str, version: int
) -> None:
    """After an operation fails at its n-th storage change, the object that ran it answers exactly as a new process
    does (the operation's state before or after; never a stale or torn view), for every n and way to fail."""
    import shutil

    ref, ref_op = _sweep_table(tmp_path / "reference", version, op)
    states = [ref.read()]
    ref_op()
    states.append(ref.refresh().read())
    for mode in ("before", "after", "outage"):
        for n in range(1, SWEEP_MAX + 1):
            root = tmp_path / f"{mode}-{n}"
            t, op_fn = _sweep_table(root, version, op)
            inj = FaultInjector(n, mode)
            with inj.armed(), contextlib.suppress(EvtError):
                op_fn()
            fresh = evt.HudiTable.open(t.path)
            what = f"{op} failing at change {n} ({mode})"
            _one_of(fresh.read(), states, f"{what}: a new process")
            _same(t.read(), fresh.read(), f"{what}: same object")
            _one_of(hudi_rs(t.path), states, f"{what}: hudi-rs")
            _same(t.read("read_optimized"), fresh.read("read_optimized"), f"{what}: same object, RO")
            # The documented recovery, then the table is the operation's result.
            recover(fresh, op)
            _same(evt.HudiTable.open(t.path).read(), states[1], f"{what}, then recovered")
            shutil.rmtree(root)
            if not inj.fired:
                break
