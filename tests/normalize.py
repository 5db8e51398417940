"""Compare Arrow tables as multisets of rows, tolerant of physical type differences Spark introduces.

Spark writes timestamps as INT96/ns and may widen types; Hudi's answer is the *value*. Each cell is normalized to a
canonical Python value (timestamps → epoch microseconds, decimals → Decimal, maps → sorted pairs) before comparison.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def _canon(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return ("ts", int((value - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1)))
    if isinstance(value, float):
        return ("f", round(value, 6))
    if isinstance(value, decimal.Decimal):
        return ("d", value.normalize())
    if isinstance(value, dict):
        return tuple(sorted((k, _canon(v)) for k, v in value.items()))
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):  # map as list of pairs
            return tuple(sorted((_canon(k), _canon(v)) for k, v in value))
        return tuple(_canon(v) for v in value)
    if isinstance(value, bytes):
        return ("b", value)
    return value


def _column_values(col: pa.ChunkedArray) -> list[Any]:
    t = col.type
    if pa.types.is_timestamp(t):
        # Compare instants as naive UTC microseconds regardless of unit / zone annotation.
        col = pc.cast(pc.cast(col, pa.timestamp("us", tz=t.tz), safe=False), pa.int64())
        return [("ts", v) if v is not None else None for v in col.to_pylist()]
    return [_canon(v) for v in col.to_pylist()]


def rows(table: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    cols = [_column_values(table[c]) for c in columns]
    return Counter(zip(*cols, strict=True)) if cols else Counter()


def assert_same_rows(ours: pa.Table, expected: pa.Table, columns: list[str] | None = None, what: str = "") -> None:
    cols = columns if columns is not None else expected.column_names
    missing = [c for c in cols if c not in ours.column_names]
    assert not missing, f"{what}: columns missing from our result: {missing}"
    got, want = rows(ours, cols), rows(expected, cols)
    if got != want:
        extra = got - want
        lacking = want - got
        raise AssertionError(
            f"{what}: {ours.num_rows} rows vs expected {expected.num_rows};\n"
            f"  unexpected: {list(extra.items())[:5]}\n  missing: {list(lacking.items())[:5]}"
        )
