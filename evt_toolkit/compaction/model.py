"""Plain records the compaction decision layer works on: log files, file slices, plan operations, links.

Everything here is pure data. The records are filled from a table by :mod:`evt_toolkit.compaction.event_times`
(the only module of this package doing I/O) or built by hand in tests, so strategies, the prefix rule, the preview
and the plan builder can be unit-tested without a table.

The columnar form (:class:`SliceSet`: :func:`slices_table` and :func:`log_files_table`) exists for speed: the
preview is built from it and recomputes a selection for a million log files after every threshold change, which
only numpy over Arrow columns does in milliseconds.

Example:
    >>> lf = LogFileInfo.synthetic("fg-0", 1, size=100, min_event_time=5)
    >>> s = SliceInfo("p", "fg-0", "20250101000000000", None, None, (lf,))
    >>> s.total_log_size
    100
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import overload

import numpy as np
import pyarrow as pa

from evt_toolkit.errors import PlanValidationError
from evt_toolkit.format.names import LogFileName

__all__ = [
    "LOG_FILES_SCHEMA",
    "SLICES_SCHEMA",
    "LogFileInfo",
    "OperationSelection",
    "SliceInfo",
    "SliceSet",
    "log_files_table",
    "slices_table",
]


@dataclass(frozen=True, slots=True)
class LogFileInfo:
    """One log file of a file slice, with what the strategies need to know about its content.

    Attributes:
        path: path relative to the table base path.
        name: bare file name (``.<fileId>_<baseInstant>.log.<version>_<token>``).
        file_id: the file group id.
        partition_path: the partition, relative to the base path (``""`` when not partitioned).
        version: the log version from the name.
        write_token: the write token from the name (``None`` for legacy names).
        base_instant: the instant in the name (the slice's base instant on table v6).
        size: bytes on storage.
        min_event_time: minimum event time (epoch ms) over the committed data blocks, ``None`` when unknown.
        min_event_time_source: ``header``, ``write_stats`` or ``scan`` (design §2.2); ``None`` when unknown.
        has_data: at least one committed data block with records or one committed delete block. Logs holding
            only command blocks have ``False`` and never extend a compaction prefix by themselves (design §2.3);
            deletes count, with the event times of the records they delete (``docs/data-safety.md`` §3).
        instant: the instant that last wrote a committed block into the file, when known.
        max_event_time: maximum event time (epoch ms) from the write stats, when recorded.
        uncommitted_blocks: blocks written by instants that have not completed (an inflight or failed write), and
            blocks a later rollback command block of the slice removes.
        corrupt_blocks: blocks Hudi's reader classifies as corrupt (a torn append); readers skip them, and a
            compaction refuses the log (``compaction/schedule.py``).
    """

    path: str
    name: str
    file_id: str
    partition_path: str
    version: int
    write_token: str | None
    base_instant: str
    size: int
    min_event_time: int | None
    min_event_time_source: str | None
    has_data: bool
    instant: str | None
    max_event_time: int | None = None
    uncommitted_blocks: int = 0
    corrupt_blocks: int = 0

    def sort_key(self) -> tuple[str, int, tuple[int, str]]:
        """``HoodieLogFile.LogFileComparator`` order: base instant, version, write token (missing first)."""
        token = (0, "") if self.write_token is None else (1, self.write_token)
        return (self.base_instant, self.version, token)

    @classmethod
    def synthetic(
        cls,
        file_id: str,
        version: int,
        *,
        size: int = 1024,
        min_event_time: int | None = None,
        has_data: bool = True,
        base_instant: str = "20250101000000000",
        partition_path: str = "",
        write_token: str | None = "0-0-0",
        max_event_time: int | None = None,
        source: str | None = None,
    ) -> LogFileInfo:
        """Build a log file record with a well-formed Hudi name (for tests, benchmarks and examples).

        Example:
            >>> LogFileInfo.synthetic("fg-0", 2, min_event_time=7).name
            '.fg-0_20250101000000000.log.2_0-0-0'
        """
        name = LogFileName(file_id, base_instant, "log", version, write_token).name
        path = f"{partition_path}/{name}" if partition_path else name
        src = source if source is not None else ("write_stats" if min_event_time is not None else None)
        return cls(
            path,
            name,
            file_id,
            partition_path,
            version,
            write_token,
            base_instant,
            size,
            min_event_time,
            src,
            has_data,
            None,
            max_event_time,
        )


@dataclass(frozen=True, slots=True)
class SliceInfo:
    """The latest (merged) file slice of a file group, as the compaction planner sees it.

    Attributes:
        partition_path: the partition.
        file_id: the file group id.
        base_instant: the slice's base instant.
        base_file: bare name of the base file, ``None`` for a log-only file group.
        base_file_size: bytes of the base file, ``None`` without one.
        log_files: logs in Hudi's replay order (``LogFileComparator``: base instant, version, write token).
        pending_compaction: instant of a pending compaction that already holds this file group, else ``None``
            (Hudi's plan generator skips such groups).
    """

    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None
    base_file_size: int | None
    log_files: tuple[LogFileInfo, ...]
    pending_compaction: str | None = None

    @property
    def total_log_size(self) -> int:
        """Bytes of all log files."""
        return sum(lf.size for lf in self.log_files)


@dataclass(frozen=True, slots=True)
class OperationSelection:
    """A candidate plan operation: one slice split into the logs to compact and the logs to keep.

    ``to_compact`` is always a prefix of ``slice.log_files`` and ``to_remain`` the rest, in order.
    """

    slice: SliceInfo
    to_compact: tuple[LogFileInfo, ...]
    to_remain: tuple[LogFileInfo, ...]

    @property
    def is_partial(self) -> bool:
        """Some logs stay behind (they will be linked into the new slice)."""
        return bool(self.to_remain)


LOG_FILES_SCHEMA = pa.schema(
    [
        pa.field("slice_index", pa.int32(), nullable=False),
        pa.field("position", pa.int32(), nullable=False),
        pa.field("partition_path", pa.string()),
        pa.field("file_id", pa.string()),
        pa.field("log_file", pa.string()),
        pa.field("version", pa.int32()),
        pa.field("write_token", pa.string()),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("min_event_time", pa.int64()),
        pa.field("min_event_time_source", pa.string()),
        pa.field("max_event_time", pa.int64()),
        pa.field("has_data", pa.bool_(), nullable=False),
        pa.field("instant", pa.string()),
        pa.field("uncommitted_blocks", pa.int32(), nullable=False),
        pa.field("corrupt_blocks", pa.int32(), nullable=False),
    ]
)
"""One row per log file of :func:`log_files_table`, slices in input order and logs in replay order: ``slice_index``
points into the slice sequence, ``position`` is the 0-based place of the log in its slice."""

SLICES_SCHEMA = pa.schema(
    [
        pa.field("slice_index", pa.int32(), nullable=False),
        pa.field("partition_path", pa.string()),
        pa.field("file_id", pa.string()),
        pa.field("base_instant", pa.string()),
        pa.field("base_file", pa.string()),
        pa.field("base_file_size", pa.int64()),
        pa.field("num_log_files", pa.int32(), nullable=False),
        pa.field("total_log_size", pa.int64(), nullable=False),
        pa.field("pending_compaction", pa.string()),
    ]
)
"""One row per slice of :func:`slices_table`."""


_LOG_COLUMNS = (
    "partition_path",
    "file_id",
    "name",
    "version",
    "write_token",
    "size",
    "min_event_time",
    "min_event_time_source",
    "max_event_time",
    "has_data",
    "instant",
    "uncommitted_blocks",
    "corrupt_blocks",
)


def _log_files_from_infos(slices: Sequence[SliceInfo]) -> pa.Table:
    counts = np.fromiter((len(s.log_files) for s in slices), dtype=np.int64, count=len(slices))
    logs = [lf for s in slices for lf in s.log_files]
    n = len(logs)
    starts = np.zeros(len(slices), dtype=np.int64)
    if len(slices):
        starts[1:] = np.cumsum(counts)[:-1]
    slice_index = np.repeat(np.arange(len(slices), dtype=np.int32), counts)
    position = (np.arange(n, dtype=np.int64) - np.repeat(starts, counts)).astype(np.int32)
    # One C-level attrgetter pass per column: the per-log Python work is the bare attribute fetch.
    arrays: list[pa.Array] = [pa.array(slice_index, pa.int32()), pa.array(position, pa.int32())]
    for name, fld in zip(_LOG_COLUMNS, list(LOG_FILES_SCHEMA)[2:], strict=True):
        arrays.append(pa.array(list(map(attrgetter(name), logs)), type=fld.type))
    return pa.Table.from_arrays(arrays, schema=LOG_FILES_SCHEMA)


def _slices_from_infos(slices: Sequence[SliceInfo]) -> pa.Table:
    n = len(slices)
    counts = np.fromiter((len(s.log_files) for s in slices), dtype=np.int32, count=n)
    return pa.Table.from_arrays(
        [
            pa.array(np.arange(n, dtype=np.int32)),
            pa.array([s.partition_path for s in slices], pa.string()),
            pa.array([s.file_id for s in slices], pa.string()),
            pa.array([s.base_instant for s in slices], pa.string()),
            pa.array([s.base_file for s in slices], pa.string()),
            pa.array([s.base_file_size for s in slices], pa.int64()),
            pa.array(counts),
            pa.array([s.total_log_size for s in slices], pa.int64()),
            pa.array([s.pending_compaction for s in slices], pa.string()),
        ],
        schema=SLICES_SCHEMA,
    )


@dataclass(frozen=True, eq=False)
class SliceSet(Sequence[SliceInfo]):
    """File slices and their log files as two Arrow tables: the form the preview model is built from.

    A table-wide preview over a million log files cannot afford a Python object per log: the facts come in columns
    (:func:`evt_toolkit.compaction.event_times.slice_set`, or :meth:`from_infos`) and stay columns; the model reads
    its numpy arrays straight from them. The set is also a ``Sequence[SliceInfo]`` for the code that wants records
    (the slice-level Hudi strategies, tests): they are built on first access and kept.

    Attributes:
        slices: one row per slice, :data:`SLICES_SCHEMA`, ``slice_index`` = row number.
        log_files: one row per log, :data:`LOG_FILES_SCHEMA`, rows ordered by slice, then replay position.

    Raises:
        PlanValidationError: the tables do not have these schemas, or do not index each other as described.

    Example:
        >>> s = SliceInfo("p", "f", "1", None, None, (LogFileInfo.synthetic("f", 1, min_event_time=3),))
        >>> ss = SliceSet.from_infos([s])
        >>> len(ss), ss.log_files.column("min_event_time").to_pylist(), ss[0] == s
        (1, [3], True)
    """

    slices: pa.Table
    log_files: pa.Table

    def __post_init__(self) -> None:
        if self.slices.schema != SLICES_SCHEMA or self.log_files.schema != LOG_FILES_SCHEMA:
            raise PlanValidationError("a SliceSet needs tables with SLICES_SCHEMA and LOG_FILES_SCHEMA")
        counts = self.slices.column("num_log_files").to_numpy()
        if int(counts.sum()) != self.log_files.num_rows:
            raise PlanValidationError(
                f"the slices list {int(counts.sum())} log files, the log table holds {self.log_files.num_rows}"
            )
        expected = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        if not np.array_equal(self.log_files.column("slice_index").to_numpy(), expected):
            raise PlanValidationError("log rows must be ordered by slice_index and match num_log_files")

    @classmethod
    def from_infos(cls, slices: Sequence[SliceInfo]) -> SliceSet:
        """The columnar form of ``slices`` (which it keeps, so iterating gives the same records back)."""
        infos = tuple(slices)
        out = cls(_slices_from_infos(infos), _log_files_from_infos(infos))
        out.__dict__["infos"] = infos
        return out

    @functools.cached_property
    def infos(self) -> tuple[SliceInfo, ...]:
        """The slices as :class:`SliceInfo` records (built once from the columns)."""
        sl = self.slices.to_pydict()
        lg = self.log_files.to_pydict()
        out: list[SliceInfo] = []
        row = 0
        for i in range(self.slices.num_rows):
            logs = []
            for _ in range(sl["num_log_files"][i]):
                name = lg["log_file"][row]
                partition = lg["partition_path"][row] or ""
                parsed = LogFileName.parse(name)
                logs.append(
                    LogFileInfo(
                        f"{partition}/{name}" if partition else name,
                        name,
                        lg["file_id"][row],
                        partition,
                        lg["version"][row],
                        lg["write_token"][row],
                        parsed.base_instant if parsed is not None else sl["base_instant"][i],
                        lg["size"][row],
                        lg["min_event_time"][row],
                        lg["min_event_time_source"][row],
                        lg["has_data"][row],
                        lg["instant"][row],
                        lg["max_event_time"][row],
                        lg["uncommitted_blocks"][row],
                        lg["corrupt_blocks"][row],
                    )
                )
                row += 1
            out.append(
                SliceInfo(
                    sl["partition_path"][i] or "",
                    sl["file_id"][i],
                    sl["base_instant"][i],
                    sl["base_file"][i],
                    sl["base_file_size"][i],
                    tuple(logs),
                    sl["pending_compaction"][i],
                )
            )
        return tuple(out)

    def __len__(self) -> int:
        return self.slices.num_rows

    @overload
    def __getitem__(self, index: int) -> SliceInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SliceInfo]: ...

    def __getitem__(self, index: int | slice) -> SliceInfo | Sequence[SliceInfo]:
        return self.infos[index]

    def __iter__(self) -> Iterator[SliceInfo]:
        return iter(self.infos)


def log_files_table(slices: Sequence[SliceInfo]) -> pa.Table:
    """The columnar form of every slice's log files (schema :data:`LOG_FILES_SCHEMA`).

    Example:
        >>> s = SliceInfo("p", "f", "1", None, None, (LogFileInfo.synthetic("f", 1, min_event_time=3),))
        >>> log_files_table([s]).column("min_event_time").to_pylist()
        [3]
    """
    if isinstance(slices, SliceSet):
        return slices.log_files
    return _log_files_from_infos(slices)


def slices_table(slices: Sequence[SliceInfo]) -> pa.Table:
    """The columnar form of the slices themselves (schema :data:`SLICES_SCHEMA`)."""
    if isinstance(slices, SliceSet):
        return slices.slices
    return _slices_from_infos(slices)
