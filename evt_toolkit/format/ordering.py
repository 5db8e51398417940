"""How Hudi compares ordering (precombine) values, as Arrow arrays that compare the same way.

Hudi's payloads and record mergers compare ordering values with Java's ``Comparable.compareTo``; hudi-rs follows the
same total order. For floats that is ``Double.compareTo`` / ``Float.compareTo``: ``-0.0 < 0.0``, and NaN (every NaN
is the one ``doubleToLongBits`` gives) is equal to itself and greater than ``+inf``. Arrow's comparisons and sorts
are IEEE's: ``-0.0 == 0.0`` and NaN compares false to everything. :func:`comparable` maps a float column to int64
keys in Java's order (other types compare alike already and are returned as they are).

Example:
    >>> comparable(pa.array([0.0, -0.0, float("nan"), float("inf"), None])).to_pylist()
    [0, -1, 9221120237041090560, 9218868437227405312, None]
"""

from __future__ import annotations

import math
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["comparable"]

_NON_SIGN_BITS: Final = 0x7FFF_FFFF_FFFF_FFFF


def comparable(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``values`` as an array whose Arrow order is Hudi's order of the ordering values (see the module); any other
    type is returned as it is (no copy: this runs on every merge)."""
    if not pa.types.is_floating(values.type):
        return values
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    f = arr.cast(pa.float64())  # exact for float16/32, and Float.compareTo orders them as their doubles
    f = pc.if_else(pc.is_nan(f), pa.scalar(math.nan, pa.float64()), f)  # one NaN, as doubleToLongBits
    bits = f.view(pa.int64())
    # Negative doubles order reversed by their bits: flipping every bit but the sign puts them below, in order.
    return pc.if_else(pc.less(bits, 0), pc.bit_wise_xor(bits, pa.scalar(_NON_SIGN_BITS, pa.int64())), bits)
