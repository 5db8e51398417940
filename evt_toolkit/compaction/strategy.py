"""Compaction strategies: which file slices, and which of their logs, a compaction plan takes.

The base class follows Hudi's ``CompactionStrategy`` (``hudi-client-common/.../table/action/compact/strategy``):
the plan generator hands it every candidate operation, ``captureMetrics`` fills the operation metrics, and
``orderAndFilter`` orders and trims the list. The RFC (HUDI-6979) adds ``filterLogFiles``: a strategy may compact
only part of a slice. Hudi's own strategies take all logs; :class:`EventTimeBasedCompactionStrategy` takes the
shortest prefix holding every log with events ≤ T (design §2.3, :mod:`evt_toolkit.compaction.prefix`).

Hudi's built-in strategies are reproduced with Hudi's semantics and defaults (``hudi-format.md`` §11) so a preview
can show what stock Hudi would have planned next to the event-time plan.

Example:
    >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
    >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=10),
    ...                                             L.synthetic("f", 2, min_event_time=99)))
    >>> ops = EventTimeBasedCompactionStrategy(threshold=50).select_operations([s], now_ms=10**13)
    >>> [len(op.to_compact) for op in ops], [len(op.to_remain) for op in ops]
    ([1], [1])
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import ClassVar

from evt_toolkit.compaction.model import LogFileInfo, OperationSelection, SliceInfo
from evt_toolkit.compaction.prefix import select_prefix
from evt_toolkit.errors import CompactionStrategyError, InvalidThresholdError
from evt_toolkit.format.text import iso_ms

__all__ = [
    "DEFAULT_LOGFILE_TO_PARQUET_COMPRESSION_RATIO",
    "DEFAULT_PARQUET_MAX_FILE_SIZE",
    "DEFAULT_TARGET_IO_MB",
    "DEFAULT_TARGET_PARTITIONS",
    "STRATEGY_CLASSES",
    "STRATEGY_NAMES",
    "TOTAL_IO_MB",
    "TOTAL_IO_READ_MB",
    "TOTAL_IO_WRITE_MB",
    "TOTAL_LOG_FILES",
    "TOTAL_LOG_FILES_SIZE",
    "BoundedIOCompactionStrategy",
    "CompactionStrategy",
    "CompactionStrategyError",
    "DayBasedCompactionStrategy",
    "EventTimeBasedCompactionStrategy",
    "InvalidThresholdError",
    "LogFileNumBasedCompactionStrategy",
    "LogFileSizeBasedCompactionStrategy",
    "UnBoundedCompactionStrategy",
    "capture_metrics",
    "max_ingested_event_time",
    "to_epoch_ms",
]

# FileSliceMetricUtils metric keys (Hudi 0.14 writes exactly these into each plan operation).
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"

#: ``hoodie.parquet.max.file.size`` (HoodieStorageConfig): 120 MB.
DEFAULT_PARQUET_MAX_FILE_SIZE = 120 * 1024 * 1024
#: ``hoodie.compaction.target.io`` (HoodieCompactionConfig): 500 GB, in MB.
DEFAULT_TARGET_IO_MB = 500 * 1024
#: ``hoodie.compaction.daybased.target.partitions``.
DEFAULT_TARGET_PARTITIONS = 10
#: ``hoodie.logfile.to.parquet.compression.ratio`` (HoodieStorageConfig).
DEFAULT_LOGFILE_TO_PARQUET_COMPRESSION_RATIO = 0.35

_MB = 1024 * 1024
_PACKAGE = "org.apache.hudi.table.action.compact.strategy."


# -- metrics -----------------------------------------------------------------------------------------------------------


def capture_metrics(
    file_slice: SliceInfo,
    logs: Sequence[LogFileInfo] | None = None,
    *,
    parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE,
) -> dict[str, float]:
    """Hudi's operation metrics for compacting ``logs`` (default: all logs) of ``file_slice``.

    Mirrors ``FileSliceMetricUtils.addFileSliceCommonMetrics`` (called by ``CompactionStrategy.captureMetrics``):
    sizes in MB are whole MB (``FSUtils.getSizeInMB`` divides as longs); the write estimate is the base file size,
    or ``hoodie.parquet.max.file.size`` without a base file. Negative sizes (unknown in Java) are skipped.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L
        >>> s = SliceInfo("p", "f", "1", "b.parquet", 3 * 1024 * 1024, (L.synthetic("f", 1, size=1024 * 1024),))
        >>> capture_metrics(s)["TOTAL_IO_MB"]
        7.0
    """
    chosen = file_slice.log_files if logs is None else logs
    log_size = sum(lf.size for lf in chosen if lf.size >= 0)
    base = file_slice.base_file_size if file_slice.base_file is not None and file_slice.base_file_size else 0
    io_read = (base + log_size) // _MB
    io_write = (base if base > 0 else parquet_max_file_size) // _MB
    return {
        TOTAL_IO_READ_MB: float(io_read),
        TOTAL_IO_WRITE_MB: float(io_write),
        TOTAL_IO_MB: float(io_read + io_write),
        TOTAL_LOG_FILES_SIZE: float(log_size),
        TOTAL_LOG_FILES: float(len(chosen)),
    }


# -- base class ------------------------------------------------------------------------------------------------------


class CompactionStrategy:
    """Hudi's ``CompactionStrategy``: every operation, all logs, in the order given.

    Args:
        parquet_max_file_size: ``hoodie.parquet.max.file.size``, the write estimate of a slice without a base file.

    Example:
        >>> CompactionStrategy().hudi_class
        'org.apache.hudi.table.action.compact.strategy.CompactionStrategy'
    """

    #: The Java class this strategy mirrors (or stands for, in the plan's extraMetadata).
    hudi_class: ClassVar[str] = _PACKAGE + "CompactionStrategy"
    #: Whether the strategy bounds event time (and so can give the RO view a freshness).
    event_time_aware: ClassVar[bool] = False

    def __init__(self, *, parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE) -> None:
        if parquet_max_file_size <= 0:
            raise CompactionStrategyError(f"hoodie.parquet.max.file.size must be positive, got {parquet_max_file_size}")
        self.parquet_max_file_size = parquet_max_file_size

    @property
    def name(self) -> str:
        """The strategy's short (Java simple) class name."""
        return self.hudi_class.rsplit(".", 1)[-1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def metrics(self, operation: OperationSelection) -> dict[str, float]:
        """``captureMetrics`` for the logs the operation compacts."""
        return capture_metrics(operation.slice, operation.to_compact, parquet_max_file_size=self.parquet_max_file_size)

    def filter_log_files(
        self, file_slice: SliceInfo, *, threshold: int | None = None
    ) -> tuple[tuple[LogFileInfo, ...], tuple[LogFileInfo, ...]]:
        """The RFC's ``filterLogFiles``: split a slice's logs into (to compact, to remain). Default: all logs."""
        return file_slice.log_files, ()

    def order_and_filter(self, operations: list[OperationSelection]) -> list[OperationSelection]:
        """``orderAndFilter``: identity in the base class."""
        return list(operations)

    def select_operations(
        self, slices: Sequence[SliceInfo], *, threshold: int | None = None
    ) -> list[OperationSelection]:
        """What Hudi's plan generator does with a strategy, without writing anything.

        Candidates are slices with at least one log file and no pending compaction
        (``BaseHoodieCompactionPlanGenerator``); each is split by :meth:`filter_log_files`, those with nothing to
        compact are dropped, and the rest go through :meth:`order_and_filter`.

        Args:
            slices: the latest (merged) file slices.
            threshold: T in epoch ms, for event-time strategies.
        """
        ops: list[OperationSelection] = []
        for s in slices:
            if not s.log_files or s.pending_compaction is not None:
                continue
            to_compact, to_remain = self.filter_log_files(s, threshold=threshold)
            if to_compact:
                ops.append(OperationSelection(s, tuple(to_compact), tuple(to_remain)))
        return self.order_and_filter(ops)

    def describe(self) -> dict[str, str]:
        """Settings to record in a plan's ``extraMetadata``."""
        return {"strategy": self.hudi_class}


class UnBoundedCompactionStrategy(CompactionStrategy):
    """``UnBoundedCompactionStrategy``: compact every candidate slice, unordered and unbounded."""

    hudi_class = _PACKAGE + "UnBoundedCompactionStrategy"


class BoundedIOCompactionStrategy(CompactionStrategy):
    """``BoundedIOCompactionStrategy``: accept operations in order until the IO budget is spent.

    Java subtracts each operation's ``TOTAL_IO_MB`` from ``hoodie.compaction.target.io`` *after* adding it, so the
    operation that crosses the limit is still included (and with a budget ≤ 0 the first one is).

    Args:
        target_io_mb: ``hoodie.compaction.target.io`` in MB (default 512000).
    """

    hudi_class = _PACKAGE + "BoundedIOCompactionStrategy"

    def __init__(
        self, *, target_io_mb: int = DEFAULT_TARGET_IO_MB, parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE
    ) -> None:
        super().__init__(parquet_max_file_size=parquet_max_file_size)
        self.target_io_mb = target_io_mb

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target_io_mb={self.target_io_mb})"

    def order_and_filter(self, operations: list[OperationSelection]) -> list[OperationSelection]:
        """Keep operations, in order, while the IO budget lasts (crossing operation included)."""
        remaining = self.target_io_mb
        out: list[OperationSelection] = []
        for op in operations:
            remaining -= int(self.metrics(op)[TOTAL_IO_MB])
            out.append(op)
            if remaining <= 0:
                break
        return out

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "hoodie.compaction.target.io": str(self.target_io_mb)}


class LogFileSizeBasedCompactionStrategy(BoundedIOCompactionStrategy):
    """``LogFileSizeBasedCompactionStrategy`` (Hudi's default): biggest log volume first, then the IO bound.

    Keeps operations whose ``TOTAL_LOG_FILES_SIZE`` ≥ ``hoodie.compaction.logfile.size.threshold``, sorts them by
    that size descending (Java's stable sort: ties keep their order) and applies :class:`BoundedIOCompactionStrategy`.

    Args:
        size_threshold: ``hoodie.compaction.logfile.size.threshold`` in bytes (default 0).
        target_io_mb: ``hoodie.compaction.target.io``.
    """

    hudi_class = _PACKAGE + "LogFileSizeBasedCompactionStrategy"

    def __init__(
        self,
        *,
        size_threshold: int = 0,
        target_io_mb: int = DEFAULT_TARGET_IO_MB,
        parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE,
    ) -> None:
        super().__init__(target_io_mb=target_io_mb, parquet_max_file_size=parquet_max_file_size)
        self.size_threshold = size_threshold

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size_threshold={self.size_threshold}, target_io_mb={self.target_io_mb})"

    def order_and_filter(self, operations: list[OperationSelection]) -> list[OperationSelection]:
        """Filter by log size threshold, sort by log size descending, bound the IO."""
        sized = [(self.metrics(op)[TOTAL_LOG_FILES_SIZE], op) for op in operations]
        kept = [(size, op) for size, op in sized if size >= self.size_threshold]
        # Java compares longValue() of the metric; sorted() is stable like Stream.sorted on a list.
        kept.sort(key=lambda pair: -int(pair[0]))
        return super().order_and_filter([op for _, op in kept])

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "hoodie.compaction.logfile.size.threshold": str(self.size_threshold)}


class LogFileNumBasedCompactionStrategy(BoundedIOCompactionStrategy):
    """``LogFileNumBasedCompactionStrategy``: most log files first, then the IO bound.

    Keeps operations with at least ``hoodie.compaction.logfile.num.threshold`` delta files, sorts them by that count
    descending (stable) and applies :class:`BoundedIOCompactionStrategy`.

    Args:
        num_threshold: ``hoodie.compaction.logfile.num.threshold`` (default 0).
        target_io_mb: ``hoodie.compaction.target.io``.
    """

    hudi_class = _PACKAGE + "LogFileNumBasedCompactionStrategy"

    def __init__(
        self,
        *,
        num_threshold: int = 0,
        target_io_mb: int = DEFAULT_TARGET_IO_MB,
        parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE,
    ) -> None:
        super().__init__(target_io_mb=target_io_mb, parquet_max_file_size=parquet_max_file_size)
        self.num_threshold = num_threshold

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_threshold={self.num_threshold}, target_io_mb={self.target_io_mb})"

    def order_and_filter(self, operations: list[OperationSelection]) -> list[OperationSelection]:
        """Filter by number of logs, sort by it descending, bound the IO."""
        kept = [op for op in operations if len(op.to_compact) >= self.num_threshold]
        kept.sort(key=lambda op: -len(op.to_compact))
        return super().order_and_filter(kept)

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "hoodie.compaction.logfile.num.threshold": str(self.num_threshold)}


_DAY_RE = re.compile(r"^\s*([+-]?\d+)/([+-]?\d+)/([+-]?\d+)")


def _partition_day(partition_path: str) -> date:
    """``DayBasedCompactionStrategy`` partition date: strip ``key=`` prefixes, parse ``yyyy/MM/dd`` leniently.

    Java's ``SimpleDateFormat`` is lenient and parses a leading match (``2024/02/30`` is March 1st, trailing
    segments are ignored); a partition that does not parse raises, as Java's ``HoodieException`` does.
    """
    stripped = partition_path
    if "=" in stripped:
        # getPartitionPathWithoutPartitionKeys: replaceFirst(".*?=", "") then replaceAll("/.*?=", "/").
        stripped = re.sub(r"/.*?=", "/", re.sub(r"^.*?=", "", stripped, count=1))
    m = _DAY_RE.match(stripped)
    if m is None:
        raise CompactionStrategyError(f"invalid partition date format (expected yyyy/MM/dd): {partition_path!r}")
    year, month, day = (int(g) for g in m.groups())
    months = year * 12 + (month - 1)
    try:
        return date(months // 12, months % 12 + 1, 1) + timedelta(days=day - 1)
    except (ValueError, OverflowError) as exc:
        raise CompactionStrategyError(f"invalid partition date {partition_path!r}: {exc}") from exc


class DayBasedCompactionStrategy(CompactionStrategy):
    """``DayBasedCompactionStrategy``: the latest ``target_partitions`` day partitions, newest first.

    Operations are grouped by partition, partitions sorted by their ``yyyy/MM/dd`` date descending (``key=``
    prefixes stripped), the first ``hoodie.compaction.daybased.target.partitions`` kept, and their operations
    returned partition by partition in input order. Java groups into a ``HashMap``, so the order of two partitions
    of the same day is unspecified there; here it is first appearance.

    Args:
        target_partitions: ``hoodie.compaction.daybased.target.partitions`` (default 10).
    """

    hudi_class = _PACKAGE + "DayBasedCompactionStrategy"

    def __init__(
        self,
        *,
        target_partitions: int = DEFAULT_TARGET_PARTITIONS,
        parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE,
    ) -> None:
        super().__init__(parquet_max_file_size=parquet_max_file_size)
        if target_partitions < 0:
            raise CompactionStrategyError(f"target_partitions must be ≥ 0, got {target_partitions}")
        self.target_partitions = target_partitions

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target_partitions={self.target_partitions})"

    def order_and_filter(self, operations: list[OperationSelection]) -> list[OperationSelection]:
        """Newest ``target_partitions`` partitions, their operations in input order."""
        groups: dict[str, list[OperationSelection]] = {}
        for op in operations:
            groups.setdefault(op.slice.partition_path, []).append(op)
        days = {p: _partition_day(p) for p in groups}
        ordered = sorted(groups, key=lambda p: days[p], reverse=True)  # stable: ties keep first appearance
        return [op for p in ordered[: self.target_partitions] for op in groups[p]]

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "hoodie.compaction.daybased.target.partitions": str(self.target_partitions)}


# -- event time ------------------------------------------------------------------------------------------------------

ThresholdLike = int | float | str | datetime | date
DurationLike = int | float | timedelta


def to_epoch_ms(value: ThresholdLike, *, what: str = "threshold") -> int:
    """An instant as epoch milliseconds: an int (ms), a ``datetime``/``date`` or an ISO-8601 string.

    Naive datetimes and strings without an offset are taken as UTC (event times are epoch based).

    Raises:
        InvalidThresholdError: anything else.

    Example:
        >>> to_epoch_ms("1970-01-01T00:00:01Z")
        1000
    """
    if isinstance(value, bool):
        raise InvalidThresholdError(f"{what} must be epoch ms, a datetime or an ISO string, got a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidThresholdError(f"{what} must be finite, got {value}")
        return int(value)
    if isinstance(value, datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return (dt - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    if isinstance(value, date):
        return to_epoch_ms(datetime(value.year, value.month, value.day), what=what)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError as exc:
            raise InvalidThresholdError(f"{what} {value!r} is neither epoch ms nor an ISO-8601 time") from exc
        return to_epoch_ms(parsed, what=what)
    raise InvalidThresholdError(f"{what} must be epoch ms, a datetime or an ISO string, got {type(value).__name__}")


def _duration_ms(value: DurationLike, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise InvalidThresholdError(f"{what} must be milliseconds or a timedelta, got {type(value).__name__}")
    if isinstance(value, timedelta):
        ms = value // timedelta(milliseconds=1)
    else:
        if not math.isfinite(value):
            raise InvalidThresholdError(f"{what} must be finite, got {value}")
        ms = int(value)
    if ms < 0:
        raise InvalidThresholdError(f"{what} must not be negative, got {ms} ms")
    return ms


def max_ingested_event_time(slices: Sequence[SliceInfo]) -> int | None:
    """Max event time over the slices' logs, from their ``maxEventTime`` write stats (``None`` if none recorded).

    Only logs carry it here: data already in base files is older than every watermark this is used for, except on
    tables whose logs were all compacted, where :func:`evt_toolkit.compaction.event_times.max_ingested_event_time`
    (all commits' write stats) is the better source.
    """
    best: int | None = None
    for s in slices:
        for lf in s.log_files:
            if lf.max_event_time is not None and (best is None or lf.max_event_time > best):
                best = lf.max_event_time
    return best


class EventTimeBasedCompactionStrategy(CompactionStrategy):
    """The RFC's ``EventTimeBasedCompactionStrategy``: compact every log holding events ≤ T, by the prefix rule.

    Exactly one way of fixing T:

    * ``threshold`` — an explicit T (epoch ms, ``datetime`` or ISO string);
    * ``data_latency`` — ``T = compaction_time − data_latency`` (the RFC's definition);
    * ``allowed_lateness`` — ``T = max ingested event time − allowed_lateness``, a watermark that follows the data
      rather than the wall clock (needed when historical data is replayed). The max event time comes from the
      ``maxEventTime`` write stats of the slices' logs, or is passed in.

    In every mode T must satisfy the RFC's bound ``T ≤ compaction_time − data_latency`` (``data_latency`` is 0
    unless given), otherwise :class:`InvalidThresholdError`.

    Unlike Hudi's bounded strategies, operations are never dropped for IO reasons: a dropped slice would keep
    events ≤ T out of the RO view and break the freshness promise.

    Args:
        threshold: explicit T.
        data_latency: milliseconds or ``timedelta``.
        allowed_lateness: milliseconds or ``timedelta``.
        event_time_field: the event-time field (defaults to the table's ``hoodie.payload.event.time.field``),
            recorded in the plan.

    Example:
        >>> s = EventTimeBasedCompactionStrategy(data_latency=60_000)
        >>> s.resolve_threshold(now_ms=1_000_000)
        940000
    """

    hudi_class = _PACKAGE + "EventTimeBasedCompactionStrategy"
    event_time_aware = True

    def __init__(
        self,
        threshold: ThresholdLike | None = None,
        *,
        data_latency: DurationLike | None = None,
        allowed_lateness: DurationLike | None = None,
        event_time_field: str | None = None,
        parquet_max_file_size: int = DEFAULT_PARQUET_MAX_FILE_SIZE,
    ) -> None:
        super().__init__(parquet_max_file_size=parquet_max_file_size)
        given = [
            name
            for name, v in (
                ("threshold", threshold),
                ("data_latency", data_latency),
                ("allowed_lateness", allowed_lateness),
            )
            if v is not None
        ]
        if not given:
            raise InvalidThresholdError(
                "EventTimeBasedCompactionStrategy needs one of threshold, data_latency or allowed_lateness"
            )
        if len(given) > 1:
            raise InvalidThresholdError(
                f"EventTimeBasedCompactionStrategy takes exactly one of threshold, data_latency or allowed_lateness; "
                f"got {', '.join(given)}"
            )
        self.mode = given[0]
        self.threshold_ms: int | None = None if threshold is None else to_epoch_ms(threshold)
        self.data_latency_ms: int | None = None if data_latency is None else _duration_ms(data_latency, "data_latency")
        self.allowed_lateness_ms: int | None = (
            None if allowed_lateness is None else _duration_ms(allowed_lateness, "allowed_lateness")
        )
        if event_time_field is not None and not event_time_field.strip():
            raise InvalidThresholdError("event_time_field must not be empty")
        self.event_time_field = event_time_field

    def __repr__(self) -> str:
        if self.mode == "threshold":
            assert self.threshold_ms is not None
            return f"EventTimeBasedCompactionStrategy(threshold={iso_ms(self.threshold_ms)!r})"
        if self.mode == "data_latency":
            return f"EventTimeBasedCompactionStrategy(data_latency={self.data_latency_ms} ms)"
        return f"EventTimeBasedCompactionStrategy(allowed_lateness={self.allowed_lateness_ms} ms)"

    def resolve_threshold(self, now_ms: int | None = None, max_event_time_ms: int | None = None) -> int:
        """T in epoch ms for a compaction scheduled at ``now_ms``.

        Args:
            now_ms: the compaction time (default: the wall clock).
            max_event_time_ms: the max ingested event time, needed by ``allowed_lateness``.

        Raises:
            InvalidThresholdError: no max event time for ``allowed_lateness``, or T later than
                ``compaction_time − data_latency``.
        """
        now = int(time.time() * 1000) if now_ms is None else int(now_ms)
        latency = self.data_latency_ms or 0
        if self.mode == "threshold":
            assert self.threshold_ms is not None
            t = self.threshold_ms
        elif self.mode == "data_latency":
            t = now - latency
        else:
            if max_event_time_ms is None:
                raise InvalidThresholdError(
                    "allowed_lateness needs the max ingested event time, but no maxEventTime is recorded in the "
                    "write stats of these file slices; pass max_event_time_ms or use threshold/data_latency"
                )
            assert self.allowed_lateness_ms is not None
            t = int(max_event_time_ms) - self.allowed_lateness_ms
        bound = now - latency
        if t > bound:
            # RFC: any T ≤ compaction_time − data_latency; a later T would promise events that may not have arrived.
            raise InvalidThresholdError(
                f"threshold {iso_ms(t)} ({t}) is later than compaction time − data latency = {iso_ms(bound)} "
                f"({bound}); events after it may still be arriving"
            )
        return t

    def resolve_for(self, slices: Sequence[SliceInfo], now_ms: int | None = None) -> int:
        """:meth:`resolve_threshold` with the max event time taken from the slices' write stats when needed."""
        max_et = max_ingested_event_time(slices) if self.mode == "allowed_lateness" else None
        return self.resolve_threshold(now_ms, max_et)

    def filter_log_files(
        self, file_slice: SliceInfo, *, threshold: int | None = None
    ) -> tuple[tuple[LogFileInfo, ...], tuple[LogFileInfo, ...]]:
        """The prefix rule: the shortest prefix holding every log with data and min event time ≤ T.

        Raises:
            InvalidThresholdError: no threshold given and the strategy has no explicit one.
        """
        t = threshold if threshold is not None else self.threshold_ms
        if t is None:
            raise InvalidThresholdError(f"{self!r}: resolve the threshold first (resolve_threshold / resolve_for)")
        n = select_prefix(file_slice.log_files, t)
        return file_slice.log_files[:n], file_slice.log_files[n:]

    def select_operations(
        self, slices: Sequence[SliceInfo], *, threshold: int | None = None, now_ms: int | None = None
    ) -> list[OperationSelection]:
        """Operations at ``threshold``, or at T resolved at ``now_ms`` (see the base class)."""
        t = threshold if threshold is not None else self.resolve_for(slices, now_ms)
        return super().select_operations(slices, threshold=t)

    def describe(self) -> dict[str, str]:
        out = {**super().describe(), "mode": self.mode}
        for key, value in (
            ("data_latency_ms", self.data_latency_ms),
            ("allowed_lateness_ms", self.allowed_lateness_ms),
        ):
            if value is not None:
                out[key] = str(value)
        if self.event_time_field:
            out["event_time_field"] = self.event_time_field
        return out


#: The strategies the CLI and the widgets offer, by name (the event-time strategy first).
STRATEGY_CLASSES: dict[str, type[CompactionStrategy]] = {
    "event_time": EventTimeBasedCompactionStrategy,
    "log_file_size": LogFileSizeBasedCompactionStrategy,
    "unbounded": UnBoundedCompactionStrategy,
    "day_based": DayBasedCompactionStrategy,
}
STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGY_CLASSES)
