"""Calls run on other threads that must all have returned before the caller gives up: no write after an interrupt.

A thread pool outlives the call that fed it. When Ctrl-C (or a notebook's *interrupt kernel*) lands in the caller —
while it waits for a result, while it submits (a ``ThreadPoolExecutor`` that is starting a worker loses track of
it), or while it handles the first interrupt — the caller raises at once and the calls it started go on writing and
deleting after the operation came back; the user's next step (a rollback, a retry) then races them.
:class:`StartedCalls` counts the calls that started: once :meth:`settle` is called, calls not yet started do nothing
and it returns only when every started one has returned, however often it is interrupted meanwhile (the callers
make their calls stop early, so the wait is short).

Example:
    >>> calls = StartedCalls()
    >>> work = calls.wrap(lambda x: x * 2)
    >>> work(2)
    4
    >>> calls.settle()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import ParamSpec, TypeVar

__all__ = ["StartedCalls"]

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
