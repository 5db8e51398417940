"""Calls run on other threads that must all have returned before the caller gives up: no write after an interrupt.

A thread pool outlives the call that fed it. When Ctrl-C (or a notebook's *interrupt kernel*) lands in the caller —
while it waits for a result, while it submits (a ``ThreadPoolExecutor`` that is starting a worker loses track of
it), or while it handles the first interrupt — the caller raises at once and the calls it started go on writing and
deleting after the operation came back; the user's next step (a rollback, a retry) then races them.
:class:`StartedCalls` counts the calls that started: once :meth:`settle` is called, calls not yet started do nothing
and it returns only when every started one has returned, however often it is interrupted meanwhile (the callers
make their calls stop early, so the wait is short).

A Spark job is the same on a cluster: when it fails or is cancelled (``cancelAllJobs``, a notebook's *interrupt
kernel*, the Spark UI's kill) the driver hears of it at once, while each task's Python worker runs on until Spark
kills it (``spark.python.task.killTimeout`` after it noticed). :func:`run_spark_job` runs a job under a job group and,
when it fails or the caller is interrupted, cancels it and waits (bounded) until Spark reports none of its tasks
running any more, before it raises.

Example:
    >>> calls = StartedCalls()
    >>> work = calls.wrap(lambda x: x * 2)
    >>> work(2)
    4
    >>> calls.settle()
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any, ParamSpec, TypeVar

__all__ = ["StartedCalls", "run_spark_job"]

P = ParamSpec("P")
R = TypeVar("R")


class StartedCalls:
    """Counts the running calls of the functions :meth:`wrap` returns; :meth:`settle` waits until none runs."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._settled = False

    def wrap(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``fn``, counted while it runs; once :meth:`settle` was called it raises ``CancelledError`` instead."""

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            with self._cond:
                if self._settled:
                    raise CancelledError("the operation that started this call was interrupted or failed")
                self._running += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()

        return call

    def settle(self) -> None:
        """Start no more calls and wait until every started one has returned; a ``KeyboardInterrupt`` meanwhile
        (Ctrl-C pressed again) does not end the wait — the caller raises the first one once it is over."""
        while True:
            try:
                with self._cond:
                    self._settled = True
                    while self._running:
                        self._cond.wait()
                return
            except KeyboardInterrupt:
                continue


_GROUP = "spark.jobGroup.id"
#: Spark's own default of ``spark.python.task.killTimeout``, and the period its task monitor looks at a killed task.
_KILL_TIMEOUT_S = 2.0
_MONITOR_S = 2.0
#: Beyond Spark's own kill delays, how long a failed job's tasks may take to end before the driver stops waiting.
_SLACK_S = 10.0


def _seconds(text: str | None, default: float) -> float:
    """A Spark time setting (``2s``, ``500ms``, ``1min``, a plain number of seconds) in seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min)?\s*", text or "")
    if m is None:
        return default
    value = float(m.group(1))
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0}.get(m.group(2) or "s", 1.0)


def _running_tasks(sc: Any, group: str, known: set[int]) -> int:
    """Tasks Spark reports running in the jobs of ``group`` started by this call (not in ``known``)."""
    tracker = sc.statusTracker()
    count = 0
    for job in tracker.getJobIdsForGroup(group):
        if job in known:
            continue
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else ():
            stage_info = tracker.getStageInfo(stage)
            count += stage_info.numActiveTasks if stage_info is not None else 0
    return count


def run_spark_job(sc: Any, description: str, job: Callable[[], R], on_failure: Callable[[], None] | None = None) -> R:
    """``job()`` (an action such as ``rdd.collect()``) run on ``sc``; when it raises, its tasks have stopped first.

    The job runs under the caller's job group, or under a group of its own (removed afterwards) when none is set, so
    that its jobs can be found in Spark's status tracker. When ``job`` raises — a task failed, the job was cancelled,
    or the caller was interrupted (its job is then cancelled here: Spark would otherwise run it to the end; an
    interrupt Py4J reported as a lost connection comes out as the ``KeyboardInterrupt`` it was) —
    ``on_failure`` is called first (it records, durably, that the tasks must write nothing more), then this waits
    until Spark reports none of the job's tasks running (a cancelled Python task runs until Spark kills its worker),
    at most ``spark.python.task.killTimeout`` plus a margin, a second Ctrl-C meanwhile not ending the wait; then the
    exception is raised. A task still running past that (an executor the driver lost) is stopped by the record
    ``on_failure`` wrote, which it checks before it writes.
    """
    group = sc.getLocalProperty(_GROUP)
    own = not group
    if own:
        group = f"evt-{uuid.uuid4().hex[:12]}"
        sc.setJobGroup(group, description)
    else:
        sc.setJobDescription(description)
    tracker = sc.statusTracker()
    known = set(tracker.getJobIdsForGroup(group))
    try:
        return job()
    except BaseException as exc:
        # Ctrl-C while it waited for the job leaves the job running unless it is cancelled (Py4J may report the
        # interrupt as a lost connection); a failed job's other tasks are cancelled too.
        _cancel(sc, group, known, own)
        _settle(sc, group, known, on_failure)
        if isinstance(exc, Exception) and _interrupted(exc):
            raise KeyboardInterrupt() from exc
        raise
    finally:
        if own:
            sc.setLocalProperty(_GROUP, None)
            sc.setLocalProperty("spark.job.interruptOnCancel", None)
        sc.setJobDescription(None)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` came of a ``KeyboardInterrupt`` (Py4J turns one that lands while it waits for the JVM into a
    network error raised while handling it)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _cancel(sc: Any, group: str, known: set[int], own: bool) -> None:
    while True:
        try:
            if own:
                sc.cancelJobGroup(group)
            else:  # the caller's group may hold other jobs of theirs: only this call's are cancelled
                for job in set(sc.statusTracker().getJobIdsForGroup(group)) - known:
                    sc._jsc.sc().cancelJob(job)
            return
        except KeyboardInterrupt:
            continue
        except Exception:  # a stopped context: nothing of it runs any more
            return


def _settle(sc: Any, group: str, known: set[int], on_failure: Callable[[], None] | None) -> None:
    pending = on_failure
    while pending is not None:
        try:
            pending()
            pending = None
        except KeyboardInterrupt:
            continue
        except Exception:  # storage failing too: the wait below still keeps this call from returning early
            pending = None
    try:
        limit = _seconds(sc.getConf().get("spark.python.task.killTimeout", None), _KILL_TIMEOUT_S)
    except Exception:  # a stopped context: nothing of it runs any more
        return
    deadline = time.monotonic() + limit + _MONITOR_S + _SLACK_S
    while True:
        try:
            while time.monotonic() < deadline and _running_tasks(sc, group, known):
                time.sleep(0.1)
            return
        except KeyboardInterrupt:
            continue
        except Exception:  # the status tracker is gone (a stopped context): nothing of it runs any more
            return
