"""Compaction strategies and the prefix rule (design §2.3; Hudi ``compact/strategy/*.java``, ``hudi-format.md`` §11)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.compaction.model import LogFileInfo, OperationSelection, SliceInfo, log_files_table
from evt_toolkit.compaction.prefix import explain_prefix, is_selected, prefix_lengths, select_prefix
from evt_toolkit.compaction.strategy import (
    DEFAULT_PARQUET_MAX_FILE_SIZE,
    TOTAL_IO_MB,
    TOTAL_IO_READ_MB,
    TOTAL_IO_WRITE_MB,
    TOTAL_LOG_FILES,
    TOTAL_LOG_FILES_SIZE,
    BoundedIOCompactionStrategy,
    CompactionStrategy,
    CompactionStrategyError,
    DayBasedCompactionStrategy,
    EventTimeBasedCompactionStrategy,
    InvalidThresholdError,
    LogFileNumBasedCompactionStrategy,
    LogFileSizeBasedCompactionStrategy,
    UnBoundedCompactionStrategy,
    capture_metrics,
    max_ingested_event_time,
    to_epoch_ms,
)
from evt_toolkit.errors import EvtError

EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "50"))
MB = 1024 * 1024


def log(
    fid: str, v: int, mn: int | None = None, *, data: bool = True, size: int = 100, mx: int | None = None
) -> LogFileInfo:
    return LogFileInfo.synthetic(fid, v, size=size, min_event_time=mn, has_data=data, max_event_time=mx)


def slice_(
    fid: str, logs: list[LogFileInfo], *, base: int | None = 1000, partition: str = "p", pending: str | None = None
) -> SliceInfo:
    return SliceInfo(
        partition,
        fid,
        "20250101000000000",
        f"{fid}_0-0-0_20250101000000000.parquet" if base is not None else None,
        base,
        tuple(logs),
        pending,
    )


# -- prefix rule ------------------------------------------------------------------------------------------------------


def test_prefix_takes_every_log_at_or_below_t_and_what_lies_before() -> None:
    logs = [log("f", 1, 10), log("f", 2, 50), log("f", 3, 20), log("f", 4, 90)]
    assert select_prefix(logs, 9) == 0
    assert select_prefix(logs, 10) == 1
    assert select_prefix(logs, 20) == 3  # log 2 (min 50) is forced: leaving it would replay it over log 3
    assert select_prefix(logs, 90) == 4


def test_logs_without_data_never_extend_the_prefix() -> None:
    logs = [log("f", 1, 10), log("f", 2, None, data=False), log("f", 3, 5, data=False)]
    assert select_prefix(logs, 100) == 1
    # ... but are compacted when a later data log forces the prefix past them.
    logs.append(log("f", 4, 1))
    assert select_prefix(logs, 1) == 4


def test_unknown_min_blocks_and_is_reported() -> None:
    logs = [log("f", 1, None), log("f", 2, 30), log("f", 3, None)]
    report = explain_prefix(logs, 40)
    assert report.length == 2
    assert report.forced == (0,)  # compacted only because log 2 had to be
    assert report.unknown_remaining == (2,)  # it blocks the freshness promise
    assert explain_prefix(logs, 10).length == 0


log_spec = st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 100)))
slices_spec = st.lists(st.lists(log_spec, max_size=8), max_size=12)


def build(spec: list[list[tuple[bool, int | None]]]) -> list[SliceInfo]:
    return [
        slice_(f"f{i}", [log(f"f{i}", j + 1, mn, data=d) for j, (d, mn) in enumerate(logs)])
        for i, logs in enumerate(spec)
    ]


@settings(max_examples=EXAMPLES, deadline=None)
@given(slices_spec, st.integers(-5, 105))
def test_vectorized_prefix_equals_scalar(spec: list[list[tuple[bool, int | None]]], t: int) -> None:
    slices = build(spec)
    vec = prefix_lengths(log_files_table(slices), len(slices), t)
    assert vec.tolist() == [select_prefix(s.log_files, t) for s in slices]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(log_spec, max_size=12), st.integers(-5, 105))
def test_prefix_properties(spec: list[tuple[bool, int | None]], t: int) -> None:
    logs = [log("f", j + 1, mn, data=d) for j, (d, mn) in enumerate(spec)]
    n = select_prefix(logs, t)
    compacted, remaining = logs[:n], logs[n:]
    # Nothing earlier is left behind a compacted later log: the set is a prefix by construction, and it is the
    # *shortest* one: its last log must be compacted for its own sake.
    assert n == 0 or is_selected(compacted[-1], t)
    # Every remaining log with data and a known min event time holds only events > T.
    assert all(lf.min_event_time > t for lf in remaining if lf.has_data and lf.min_event_time is not None)
    # Every log selected by T is compacted.
    assert all(i < n for i, lf in enumerate(logs) if is_selected(lf, t))


def test_vectorized_prefix_on_100k_logs_matches_scalar() -> None:
    rng = np.random.default_rng(7)
    slices = []
    for i in range(2000):
        k = int(rng.integers(0, 100))
        mins = rng.integers(0, 1000, size=k)
        slices.append(slice_(f"f{i}", [log(f"f{i}", j + 1, int(m) if m % 17 else None) for j, m in enumerate(mins)]))
    table = log_files_table(slices)
    for t in (0, 250, 999):
        assert prefix_lengths(table, len(slices), t).tolist() == [select_prefix(s.log_files, t) for s in slices]


# -- event-time strategy -------------------------------------------------------------------------------------------


def test_event_time_strategy_selects_prefix_and_skips_pending_and_empty() -> None:
    slices = [
        slice_("a", [log("a", 1, 10), log("a", 2, 60)]),
        slice_("b", [log("b", 1, 70)]),
        slice_("c", []),
        slice_("d", [log("d", 1, 1)], pending="20250102000000000"),  # held by a pending compaction
    ]
    s = EventTimeBasedCompactionStrategy(threshold=50)
    ops = s.select_operations(slices, now_ms=100)
    assert [op.slice.file_id for op in ops] == ["a"]
    assert [lf.version for lf in ops[0].to_compact] == [1]
    assert [lf.version for lf in ops[0].to_remain] == [2]
    assert ops[0].is_partial


def test_event_time_strategy_never_drops_operations_for_io() -> None:
    big = [slice_(f"f{i}", [log(f"f{i}", 1, 1, size=10**12)], base=10**12) for i in range(5)]
    assert len(EventTimeBasedCompactionStrategy(threshold=5).select_operations(big, now_ms=10)) == 5


def test_threshold_modes() -> None:
    now = 1_700_000_000_000
    assert EventTimeBasedCompactionStrategy(threshold=now - 5).resolve_threshold(now) == now - 5
    assert EventTimeBasedCompactionStrategy(data_latency=timedelta(minutes=1)).resolve_threshold(now) == now - 60_000
    assert EventTimeBasedCompactionStrategy(data_latency=1000).resolve_threshold(now) == now - 1000
    lateness = EventTimeBasedCompactionStrategy(allowed_lateness=timedelta(hours=1))
    assert lateness.resolve_threshold(now, max_event_time_ms=now - 1) == now - 1 - 3_600_000
    slices = [slice_("a", [log("a", 1, 5, mx=1_000_000_000)])]
    assert lateness.resolve_for(slices, now) == 1_000_000_000 - 3_600_000
    assert max_ingested_event_time(slices) == 1_000_000_000


def test_threshold_parsing() -> None:
    assert to_epoch_ms("2024-01-01T00:00:00Z") == int(datetime(2024, 1, 1, tzinfo=UTC).timestamp() * 1000)
    assert to_epoch_ms("2024-01-01T00:00:00") == to_epoch_ms("2024-01-01T00:00:00+00:00")
    assert to_epoch_ms(datetime(1970, 1, 1, 0, 0, 1)) == 1000
    assert to_epoch_ms("1234") == 1234
    s = EventTimeBasedCompactionStrategy(threshold="2024-01-01T00:00:00Z")
    assert s.threshold_ms == to_epoch_ms("2024-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "needs one of"),
        ({"threshold": 5, "data_latency": 1}, "exactly one"),
        ({"data_latency": 1, "allowed_lateness": 1}, "exactly one"),
        ({"data_latency": -1}, "must not be negative"),
        ({"allowed_lateness": timedelta(seconds=-1)}, "must not be negative"),
        ({"threshold": "yesterday"}, "neither epoch ms nor an ISO-8601"),
        ({"threshold": True}, "got a bool"),
        ({"threshold": float("nan")}, "finite"),
        ({"data_latency": "1h"}, "milliseconds or a timedelta"),
        ({"threshold": 5, "event_time_field": " "}, "must not be empty"),
    ],
)
def test_invalid_strategy_settings(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidThresholdError, match=message):
        EventTimeBasedCompactionStrategy(**kwargs)  # type: ignore[arg-type]


def test_threshold_later_than_rfc_bound_is_refused() -> None:
    # RFC: T ≤ compaction_time − data_latency.
    with pytest.raises(InvalidThresholdError, match="later than compaction time"):
        EventTimeBasedCompactionStrategy(threshold=1001).resolve_threshold(now_ms=1000)
    with pytest.raises(InvalidThresholdError, match="later than compaction time"):
        EventTimeBasedCompactionStrategy(allowed_lateness=0).resolve_threshold(now_ms=1000, max_event_time_ms=5000)
    with pytest.raises(InvalidThresholdError, match="maxEventTime"):
        EventTimeBasedCompactionStrategy(allowed_lateness=0).resolve_threshold(now_ms=1000)
    assert issubclass(InvalidThresholdError, EvtError)


def test_filter_log_files_without_threshold_is_refused() -> None:
    s = EventTimeBasedCompactionStrategy(data_latency=0)
    with pytest.raises(InvalidThresholdError, match="resolve the threshold first"):
        s.filter_log_files(slice_("a", [log("a", 1, 1)]))


# -- Hudi's strategies ------------------------------------------------------------------------------------------------


def test_capture_metrics_like_file_slice_metric_utils() -> None:
    # FileSliceMetricUtils.addFileSliceCommonMetrics: whole MB (long division), write = base or max parquet size.
    s = slice_("a", [log("a", 1, size=MB + 5), log("a", 2, size=MB)], base=3 * MB + 1)
    m = capture_metrics(s)
    assert m == {
        TOTAL_IO_READ_MB: 5.0,
        TOTAL_IO_WRITE_MB: 3.0,
        TOTAL_IO_MB: 8.0,
        TOTAL_LOG_FILES_SIZE: float(2 * MB + 5),
        TOTAL_LOG_FILES: 2.0,
    }
    no_base = capture_metrics(slice_("b", [log("b", 1, size=10)], base=None))
    assert no_base[TOTAL_IO_WRITE_MB] == DEFAULT_PARQUET_MAX_FILE_SIZE // MB == 120
    assert no_base[TOTAL_IO_READ_MB] == 0.0
    # Only the compacted logs count for a partial operation.
    assert capture_metrics(s, s.log_files[:1])[TOTAL_LOG_FILES] == 1.0


def ops_of(slices: list[SliceInfo]) -> list[OperationSelection]:
    return [OperationSelection(s, s.log_files, ()) for s in slices]


def sizes_slices() -> list[SliceInfo]:
    return [
        slice_("small", [log("small", 1, size=1 * MB)], base=10 * MB),
        slice_("big", [log("big", 1, size=50 * MB), log("big", 2, size=50 * MB)], base=10 * MB),
        slice_("mid", [log("mid", 1, size=20 * MB)] * 3, base=10 * MB),
        slice_("mid2", [log("mid2", 1, size=60 * MB)], base=10 * MB),
    ]


def test_log_file_size_based_orders_by_log_size_desc_stable() -> None:
    # LogFileSizeBasedCompactionStrategy.compare: larger TOTAL_LOG_FILES_SIZE first; ties keep input order.
    got = LogFileSizeBasedCompactionStrategy().order_and_filter(ops_of(sizes_slices()))
    assert [op.slice.file_id for op in got] == ["big", "mid", "mid2", "small"]


def test_log_file_size_based_threshold_and_io_bound() -> None:
    s = LogFileSizeBasedCompactionStrategy(size_threshold=60 * MB)
    assert [op.slice.file_id for op in s.order_and_filter(ops_of(sizes_slices()))] == ["big", "mid", "mid2"]
    # BoundedIO: big = 110 read + 10 write = 120 MB; the op crossing the budget is still included.
    bounded = LogFileSizeBasedCompactionStrategy(target_io_mb=121)
    assert [op.slice.file_id for op in bounded.order_and_filter(ops_of(sizes_slices()))] == ["big", "mid"]
    exact = LogFileSizeBasedCompactionStrategy(target_io_mb=120)
    assert [op.slice.file_id for op in exact.order_and_filter(ops_of(sizes_slices()))] == ["big"]


def test_bounded_io_keeps_input_order_and_includes_crossing_op() -> None:
    got = BoundedIOCompactionStrategy(target_io_mb=30).order_and_filter(ops_of(sizes_slices()))
    assert [op.slice.file_id for op in got] == ["small", "big"]
    assert len(BoundedIOCompactionStrategy(target_io_mb=0).order_and_filter(ops_of(sizes_slices()))) == 1


def test_log_file_num_based() -> None:
    got = LogFileNumBasedCompactionStrategy(num_threshold=2).order_and_filter(ops_of(sizes_slices()))
    assert [op.slice.file_id for op in got] == ["mid", "big"]
    assert len(LogFileNumBasedCompactionStrategy().order_and_filter(ops_of(sizes_slices()))) == 4


def test_unbounded_and_base_take_everything_with_all_logs() -> None:
    slices = [*sizes_slices(), slice_("none", [])]
    for strategy in (UnBoundedCompactionStrategy(), CompactionStrategy()):
        ops = strategy.select_operations(slices)
        assert [op.slice.file_id for op in ops] == ["small", "big", "mid", "mid2"]
        assert all(op.to_compact == op.slice.log_files and not op.to_remain for op in ops)


def test_day_based_keeps_latest_partitions() -> None:
    # DayBasedCompactionStrategy: yyyy/MM/dd with key= prefixes stripped, newest first, limited to N partitions.
    parts = ["2024/01/02", "year=2024/month=03/day=01", "2023/12/31", "2024/02/30", "2024/01/02"]
    slices = [slice_(f"f{i}", [log(f"f{i}", 1)], partition=p) for i, p in enumerate(parts)]
    got = DayBasedCompactionStrategy(target_partitions=3).order_and_filter(ops_of(slices))
    # 2024/02/30 is March 1st for Java's lenient SimpleDateFormat: ties with the year=... partition (first seen wins).
    assert [op.slice.partition_path for op in got] == [
        "year=2024/month=03/day=01",
        "2024/02/30",
        "2024/01/02",
        "2024/01/02",
    ]
    assert DayBasedCompactionStrategy().order_and_filter(ops_of(slices)) != []
    with pytest.raises(CompactionStrategyError, match="invalid partition date"):
        DayBasedCompactionStrategy().order_and_filter(ops_of([slice_("x", [log("x", 1)], partition="city=x")]))


def test_strategy_names_and_descriptions() -> None:
    s = EventTimeBasedCompactionStrategy(data_latency=5, event_time_field="ts")
    assert s.name == "EventTimeBasedCompactionStrategy"
    assert s.describe()["data_latency_ms"] == "5"
    assert s.describe()["event_time_field"] == "ts"
    assert LogFileSizeBasedCompactionStrategy().describe()["hoodie.compaction.target.io"] == "512000"
    assert "threshold=" in repr(EventTimeBasedCompactionStrategy(threshold=0))
