"""Event-time values: turn an event-time column into epoch milliseconds (design.md §2.2).

Accepted column types: integer epoch (unit configurable, default milliseconds), timestamps of any unit (Avro
``timestamp-millis``/``timestamp-micros`` decode to these), and dates. Nulls are ignored for the minimum and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import EventTimeError

EpochUnit = Literal["s", "ms", "us", "ns"]
_TO_MS = {"s": 1000.0, "ms": 1.0, "us": 1e-3, "ns": 1e-6}


@dataclass(frozen=True, slots=True)
class EventTimeStats:
    """Min/max event time of a set of records, in epoch milliseconds, and how many had no event time."""

    min_ms: int | None
    max_ms: int | None
    null_count: int
    count: int


def to_epoch_ms(column: pa.Array | pa.ChunkedArray, unit: EpochUnit = "ms", *, field: str = "") -> pa.Array:
    """Convert an event-time column to int64 epoch milliseconds (nulls stay null)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    if pa.types.is_timestamp(t):
        return pc.cast(pc.cast(arr, pa.timestamp("ms", tz=t.tz), safe=False), pa.int64())
    if pa.types.is_date(t):
        # Arrow casts a date only to its own physical width: days (date32) to int32, then widened.
        days = pc.cast(pc.cast(pc.cast(arr, pa.date32()), pa.int32()), pa.int64())
        return pc.multiply(days, 86_400_000)
    if pa.types.is_integer(t):
        if unit == "ms":
            return pc.cast(arr, pa.int64())
        factor = _TO_MS[unit]
        if factor >= 1:
            return pc.multiply(pc.cast(arr, pa.int64()), int(factor))
        # Floor division in integers: an epoch in nanoseconds is past float64's exact range (2^53).
        values = pc.cast(arr, pa.int64())
        divisor = round(1 / factor)
        quotient = pc.divide(values, divisor)  # truncates toward zero
        rest = pc.subtract(values, pc.multiply(quotient, divisor))
        return pc.if_else(pc.less(rest, 0), pc.subtract(quotient, 1), quotient)
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.int64())
    raise EventTimeError(f"event-time field {field!r} has type {t}; expected an epoch number, timestamp or date")


def event_time_stats(column: pa.Array | pa.ChunkedArray, unit: EpochUnit = "ms", *, field: str = "") -> EventTimeStats:
    """Min/max event time (epoch ms) of a column; nulls are skipped and counted."""
    ms = to_epoch_ms(column, unit, field=field)
    mm = pc.min_max(ms)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    return EventTimeStats(lo, hi, ms.null_count, len(ms))
