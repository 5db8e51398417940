"""The prefix rule of partial compaction (design §2.3).

Within a file slice the logs are replayed in order (base instant, version, write token). A partial compaction
merges only some of them into the new base file and links the rest into the new slice, where they are replayed on
top of the new base. If a *later* log were compacted while an *earlier* one stayed behind, replaying the earlier
one would overwrite newer values — silent data loss. So the compacted set must be a prefix:

    compacted = the shortest prefix of the slice's logs containing every log whose min event time ≤ T.

Two kinds of log never make the prefix longer by themselves:

* logs without records (``has_data`` False: only command blocks) — they hold no event time;
* logs whose min event time is unknown (``None``). Such a log *blocks*: it cannot be proven to hold events ≤ T,
  so it is not selected; it is compacted only when a later selected log forces the prefix past it (the replay
  order then requires it). An unknown log left behind means the plan cannot promise RO freshness T; callers
  report those logs (:func:`explain_prefix`, the preview's ``unknown_min_remaining``).

:func:`select_prefix` is the scalar definition; :func:`prefix_lengths` is the same rule over the columnar log table
for every slice at once, and the property tests check the two agree.

Example:
    >>> from evt_toolkit.compaction.model import LogFileInfo as L
    >>> logs = [L.synthetic("f", 1, min_event_time=10), L.synthetic("f", 2, min_event_time=50),
    ...         L.synthetic("f", 3, min_event_time=20)]
    >>> select_prefix(logs, 25)  # log 3 (min 20) drags log 2 (min 50) along
    3
    >>> select_prefix(logs, 15)
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = [
    "PrefixReport",
    "explain_prefix",
    "is_selected",
    "prefix_lengths",
    "prefix_lengths_np",
    "select_prefix",
    "selected_mask_np",
]


class _LogLike(Protocol):
    @property
    def has_data(self) -> bool: ...

    @property
    def min_event_time(self) -> int | None: ...


def is_selected(log: _LogLike, threshold: int) -> bool:
    """Whether ``log`` by itself must be compacted at threshold ``threshold``: it has data and a known min ≤ T."""
    return log.has_data and log.min_event_time is not None and log.min_event_time <= threshold


def select_prefix(logs: Sequence[_LogLike], threshold: int) -> int:
    """Length of the shortest prefix of ``logs`` holding every selected log (see :func:`is_selected`).

    Args:
        logs: one slice's logs in replay order.
        threshold: T, epoch milliseconds.

    Returns:
        The number of leading logs to compact (0: nothing to compact).

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L
        >>> select_prefix([L.synthetic("f", 1, min_event_time=None), L.synthetic("f", 2, min_event_time=1)], 5)
        2
    """
    length = 0
    for i, lf in enumerate(logs):
        if is_selected(lf, threshold):
            length = i + 1
    return length


@dataclass(frozen=True, slots=True)
class PrefixReport:
    """The prefix for one slice and the logs that need a word in a report.

    Attributes:
        length: the prefix length.
        forced: positions inside the prefix that are not selected by themselves (no data, unknown or > T) but
            must be compacted because a later log is.
        unknown_remaining: positions after the prefix of logs with data and an unknown min event time; each one
            stops the plan from promising RO freshness T.
    """

    length: int
    forced: tuple[int, ...]
    unknown_remaining: tuple[int, ...]


def explain_prefix(logs: Sequence[_LogLike], threshold: int) -> PrefixReport:
    """:func:`select_prefix` plus the positions worth reporting.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L
        >>> explain_prefix([L.synthetic("f", 1, min_event_time=9), L.synthetic("f", 2, min_event_time=None)], 5)
        PrefixReport(length=0, forced=(), unknown_remaining=(1,))
    """
    n = select_prefix(logs, threshold)
    forced = tuple(i for i in range(n) if not is_selected(logs[i], threshold))
    unknown = tuple(i for i in range(n, len(logs)) if logs[i].has_data and logs[i].min_event_time is None)
    return PrefixReport(n, forced, unknown)


# -- columnar --------------------------------------------------------------------------------------------------------

_NO_TIME = np.iinfo(np.int64).max


def selected_mask_np(
    has_data: npt.NDArray[np.bool_],
    min_event_time: npt.NDArray[np.int64],
    known: npt.NDArray[np.bool_],
    threshold: int,
) -> npt.NDArray[np.bool_]:
    """Vectorized :func:`is_selected`. ``min_event_time`` may hold anything where ``known`` is False."""
    result: npt.NDArray[np.bool_] = has_data & known & (min_event_time <= threshold)
    return result


def prefix_lengths_np(
    slice_index: npt.NDArray[np.integer],
    position: npt.NDArray[np.integer],
    selected: npt.NDArray[np.bool_],
    num_slices: int,
) -> npt.NDArray[np.int64]:
    """Per slice, 1 + the last position of a selected log (0 when none): the prefix rule in numpy.

    Rows may come in any order; ``slice_index`` is in ``[0, num_slices)``.
    """
    out = np.zeros(num_slices, dtype=np.int64)
    if len(slice_index):
        candidate = np.where(selected, position.astype(np.int64) + 1, 0)
        # maximum.at is unbuffered, so repeated slice indices each count (numpy >= 1.25 makes it fast).
        np.maximum.at(out, slice_index, candidate)
    return out


def _int64_with_mask(column: pa.ChunkedArray | pa.Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    known = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    values = np.asarray(arr.fill_null(_NO_TIME).to_numpy(zero_copy_only=False), dtype=np.int64)
    return values, known


def prefix_lengths(log_files: pa.Table, num_slices: int, threshold: int) -> npt.NDArray[np.int64]:
    """The prefix rule for every slice at once over :func:`~evt_toolkit.compaction.model.log_files_table`.

    Args:
        log_files: the columnar log table.
        num_slices: how many slices the table indexes.
        threshold: T, epoch milliseconds.

    Returns:
        ``int64`` array of prefix lengths, one per slice.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo, log_files_table
        >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=3),))
        >>> prefix_lengths(log_files_table([s]), 1, 5).tolist()
        [1]
    """
    mins, known = _int64_with_mask(log_files.column("min_event_time"))
    has_data = log_files.column("has_data").to_numpy().astype(bool)
    selected = selected_mask_np(has_data, mins, known, threshold)
    return prefix_lengths_np(
        log_files.column("slice_index").to_numpy(),
        log_files.column("position").to_numpy(),
        selected,
        num_slices,
    )
