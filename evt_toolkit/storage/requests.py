"""Request counting: every storage operation is counted by type, per table storage and process-wide.

The types are the object-store requests (``GET`` of a whole object, ranged ``GET``, ``HEAD``, ``LIST`` page,
``PUT``, ``COPY``, ``DELETE`` request) plus the bytes fetched and sent by the client. On a local file system the
same operations are counted with the same names, so a test can assert the I/O shape of an operation on either.

Example:
    >>> from evt_toolkit.storage.requests import count_requests
    >>> with count_requests() as c:  # doctest: +SKIP
    ...     t.read()
    >>> c.counts().total  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields

#: Request types, in report order.
OPS = ("get", "get_range", "head", "list", "put", "copy", "delete")


@dataclass(frozen=True, slots=True)
class RequestCounts:
    """Requests by type and the bytes that passed through the client."""

    get: int = 0
    get_range: int = 0
    head: int = 0
    list: int = 0
    put: int = 0
    copy: int = 0
    delete: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    @property
    def total(self) -> int:
        """Every request (bytes not included)."""
        return self.get + self.get_range + self.head + self.list + self.put + self.copy + self.delete

    def as_dict(self) -> dict[str, int]:
        out = {f.name: int(getattr(self, f.name)) for f in fields(self)}
        out["total"] = self.total
        return out

    def __sub__(self, other: RequestCounts) -> RequestCounts:
        return RequestCounts(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})


class RequestCounter:
    """A thread-safe tally of requests (one per table storage; others open with :func:`count_requests`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys((f.name for f in fields(RequestCounts)), 0)

    def add(self, op: str, n: int = 1, *, read: int = 0, written: int = 0) -> None:
        with self._lock:
            self._counts[op] += n
            self._counts["bytes_read"] += read
            self._counts["bytes_written"] += written

    def counts(self) -> RequestCounts:
        with self._lock:
            return RequestCounts(**self._counts)

    def reset(self) -> None:
        with self._lock:
            for k in self._counts:
                self._counts[k] = 0


_ACTIVE: list[RequestCounter] = []
_ACTIVE_LOCK = threading.Lock()
#: Every request of this process since it started (or since :func:`reset_process_counts`).
PROCESS = RequestCounter()


def record(counter: RequestCounter | None, op: str, n: int = 1, *, read: int = 0, written: int = 0) -> None:
    """Count ``n`` requests of type ``op`` on ``counter``, the process counter and every open ``count_requests``."""
    if n == 0 and not read and not written:
        return
    if counter is not None:
        counter.add(op, n, read=read, written=written)
    PROCESS.add(op, n, read=read, written=written)
    if not _ACTIVE:  # nobody counting (the common case): no lock to take
        return
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    for c in active:
        c.add(op, n, read=read, written=written)


@contextmanager
def count_requests() -> Iterator[RequestCounter]:
    """Count every storage request this process makes inside the ``with`` block (any table, any thread)."""
    counter = RequestCounter()
    with _ACTIVE_LOCK:
        _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.remove(counter)


def process_counts() -> RequestCounts:
    """Requests of this process so far."""
    return PROCESS.counts()
