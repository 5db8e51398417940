"""The widget models, without a browser: each answer is checked against the table API it wraps.

Tables: a private copy of the one-day demo (``tests.widgets.demo_table``: 3 partitions × 4 buckets, ~145 log files,
event time ``sched_dep_ts`` in epoch ms, every log's min event time from write stats) and the real Hudi fixtures
``mor_table_uncommitted_log_v6`` (log 1 written by an inflight deltacommit) and ``mor_table_corrupt_tail_block``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.event_times import slice_infos
from evt_toolkit.compaction.model import LogFileInfo, SliceInfo
from evt_toolkit.compaction.preview import preview
from evt_toolkit.compaction.strategy import (
    EventTimeBasedCompactionStrategy,
    LogFileSizeBasedCompactionStrategy,
    UnBoundedCompactionStrategy,
)
from evt_toolkit.widgets.models import (
    HEATMAP_SLICE_THRESHOLD,
    MAX_REPLAY_SLICES,
    CompactionRunnerModel,
    DistributionModel,
    InvalidActionError,
    LogHeaderModel,
    ThresholdPreviewModel,
    TimelineModel,
    format_ms,
)
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.widgets import demo_table

NOW = 1_900_000_000_000  # a fixed "compaction time", long after the 2013 demo events


def _timeline_files(t: evt.HudiTable) -> list[str]:
    root = Path(t.path.removeprefix("file://")) / ".hoodie"
    return sorted(p.name for p in root.iterdir() if p.is_file())


def _thresholds(m: ThresholdPreviewModel) -> list[int]:
    assert m.range_ms is not None
    lo, hi = m.range_ms
    return [lo - 1, lo, lo + (hi - lo) // 4, lo + (hi - lo) // 2, hi - 1, hi]


def _synthetic(n_slices: int, logs_per_slice: int = 3, seed: int = 0) -> list[SliceInfo]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_slices):
        fid = f"fg-{i:05d}"
        mins = np.sort(rng.integers(0, 1_000_000, logs_per_slice))
        logs = tuple(
            LogFileInfo.synthetic(fid, v + 1, size=1000 + v, min_event_time=int(mins[v]), partition_path=f"p{i % 7}")
            for v in range(logs_per_slice)
        )
        out.append(SliceInfo(f"p{i % 7}", fid, "20250101000000000", f"{fid}.parquet", 10_000, logs))
    return out


# -- threshold preview ------------------------------------------------------------------------------------------------


def test_preview_model_follows_compaction_preview(tmp_path: Path) -> None:
    """Moving T gives exactly what ``table.compaction.preview`` says for the same strategy, totals and per slice."""
    t = demo_table(tmp_path / "t")
    m = ThresholdPreviewModel(t, now_ms=NOW)
    seen = set()
    for threshold in _thresholds(m):
        m.set_threshold(threshold)
        want = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=threshold), now_ms=NOW)
        s = want.summary
        assert m.totals["selected_logs"] == s.logs_compacted
        assert m.totals["kept_logs"] == s.logs_total - s.logs_compacted
        assert m.totals["links"] == s.links
        assert m.totals["bytes_read"] == s.bytes_read
        assert m.totals["bytes_written"] == s.bytes_written_estimate
        assert m.totals["full_bytes_read"] == s.full_bytes_read
        # A plan that compacts nothing promises nothing new; otherwise the preview's freshness is the model's.
        assert m.freshness == (s.ro_freshness_ms if s.logs_compacted else None)
        assert m.freshness in (None, threshold) and (m.freshness is None) == (s.logs_compacted == 0)
        assert m.totals["forced_logs"] == s.logs_forced
        for col in ("file_id", "selected", "logs_compacted", "compacted_log_files", "remaining_log_files", "links"):
            assert m.per_slice.column(col).to_pylist() == want.per_slice.column(col).to_pylist(), (threshold, col)
        seen.add(s.logs_compacted)
    assert len(seen) >= 4  # the thresholds really moved the selection
    assert m.totals["selected_logs"] == m.totals["logs_total"]  # T = newest min event time: every log


def test_preview_model_strategies_match_compaction_preview(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = ThresholdPreviewModel(t, now_ms=NOW)
    for name, strategy in (
        ("log_file_size", LogFileSizeBasedCompactionStrategy()),
        ("unbounded", UnBoundedCompactionStrategy()),
    ):
        m.set_strategy(name)
        want = t.compaction.preview(strategy, now_ms=NOW)
        assert m.totals["selected_logs"] == want.summary.logs_compacted == want.summary.logs_total
        assert m.per_slice.column("selected").to_pylist() == want.per_slice.column("selected").to_pylist()
        assert m.freshness is None and "does not bound event time" in m.freshness_text
    # The demo's partitions are origin=EWR...: Hudi's day-based strategy cannot apply; it is not offered, the reason
    # is kept, and choosing it anyway is refused with that reason while the model keeps its state.
    assert "day_based" not in m.strategy_choices and "origin=" in m.unavailable["day_based"]
    assert any("day_based is not offered" in n for n in m.notes())
    with pytest.raises(InvalidActionError, match="origin="):
        m.set_strategy("day_based")
    assert m.strategy_name == "unbounded"
    with pytest.raises(InvalidActionError):
        m.set_strategy("nope")
    m.set_strategy("event_time")
    assert m.totals["threshold_ms"] == m.threshold_ms


def test_preview_model_threshold_modes(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = ThresholdPreviewModel(t, now_ms=NOW)
    m.set_mode("data_latency", 3_600_000)
    assert m.threshold_ms == NOW - 3_600_000
    assert m.totals["selected_logs"] == m.totals["logs_total"]
    s = m.strategy()
    assert isinstance(s, EventTimeBasedCompactionStrategy) and s.mode == "data_latency"
    max_et = max(lf.max_event_time or 0 for sl in m.slices for lf in sl.log_files)
    m.set_mode("allowed_lateness", 6 * 3_600_000)
    assert m.threshold_ms == max_et - 6 * 3_600_000
    want = t.compaction.preview(EventTimeBasedCompactionStrategy(allowed_lateness=6 * 3_600_000), now_ms=NOW)
    assert m.totals["selected_logs"] == want.summary.logs_compacted
    m.set_threshold("2013-01-01T12:00:00Z")
    assert m.threshold_mode == "threshold" and m.threshold_ms == 1357041600000
    assert m.strategy().threshold_ms == 1357041600000  # type: ignore[attr-defined]


def test_preview_model_on_10k_synthetic_slices() -> None:
    """Interactive at scale: the columnar model is built once, each threshold move recomputes only the prefix."""
    slices = _synthetic(10_000)
    m = ThresholdPreviewModel(slices=slices, now_ms=NOW)
    timings = []
    for threshold in (100_000, 500_000, 900_000):
        started = time.perf_counter()
        m.set_threshold(threshold)
        timings.append(time.perf_counter() - started)
        want = preview(slices, EventTimeBasedCompactionStrategy(threshold=threshold), now_ms=NOW)
        assert m.totals["selected_logs"] == want.summary.logs_compacted
        frame = m.chart_frame()
        assert len(frame) <= HEATMAP_SLICE_THRESHOLD  # aggregated for the chart (7 partitions)
        assert int(frame["compacted"].sum()) == m.totals["selected_logs"]
    # Loose bound only: timing belongs in bench/, this guards against an accidental per-slice Python loop.
    assert min(timings) < 2.0, timings


def test_preview_chart_frame_bins_many_partitions() -> None:
    slices = [
        SliceInfo(f"p{i}", f"f{i}", "1", None, None, (LogFileInfo.synthetic(f"f{i}", 1, min_event_time=i),))
        for i in range(450)
    ]
    m = ThresholdPreviewModel(slices=slices, now_ms=NOW, threshold=224)
    frame = m.chart_frame(max_bars=100)
    assert len(frame) == 100
    assert int(frame["compacted"].sum()) == 225 and int(frame["kept"].sum()) == 225


# -- log header inspector ---------------------------------------------------------------------------------------------


def test_inspector_cascade_matches_file_slices(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = LogHeaderModel(t)
    fs = t.file_slices().to_pylist()
    assert m.options["partition"] == sorted({r["partition_path"] for r in fs})
    for p in m.options["partition"]:
        assert m.file_groups(p) == sorted(r["file_id"] for r in fs if r["partition_path"] == p)
    for r in fs[:4]:
        sel = m.select(partition=r["partition_path"], file_id=r["file_id"])
        assert sel.base_instant == r["base_instant"] and not sel.whole_table  # latest slice by default
        blocks = t.inspect.log_blocks(r["partition_path"], r["file_id"])
        # Every block of every log of the slice, in replay order, not one log file at a time.
        assert [(b.log_file, b.offset, b.size, b.block_type, b.instant_time, b.min_event_time) for b in m.rows] == [
            (x["log_file"], x["offset"], x["size"], x["block_type"], x["instant_time"], x["min_event_time"])
            for x in blocks.to_pylist()
        ]
        assert {b.log_file for b in m.rows} == set(r["log_files"])
        assert all(b.status == "ok" for b in m.rows)
        assert all(b.min_event_time_source == "write_stats" for b in m.rows if b.block_type == "AVRO_DATA")
        assert all(b.log_file.endswith(b.log) and b.log.startswith("log.") for b in m.rows)
    key = m.rows[0].key
    details = m.header_details(key)
    assert details["INSTANT_TIME"] == m.rows[0].instant_time and "SCHEMA" not in details
    schema = m.schema_details(key)
    assert schema is not None
    summary, full = schema
    assert "22 fields" in summary and "5 Hudi meta fields" in summary and "carrier" in summary
    assert '"fields"' in full and "sched_dep_ts" in full
    assert m.rows[0].schema_fields == 22
    # A partition change resets the lower levels to that partition's first options.
    sel = m.select(partition=m.options["partition"][-1])
    assert sel.file_id == m.file_groups(sel.partition or "")[0]
    with pytest.raises(KeyError):
        m.header_details("nope")


def test_inspector_whole_table_sorts_and_filters(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = LogHeaderModel(t, whole_table=True)
    blocks = t.inspect.log_blocks()
    assert len(m.rows) == blocks.num_rows and len({r.key for r in m.rows}) == len(m.rows)
    s = m.summary()
    assert s["blocks"] == blocks.num_rows and s["log_files"] == sum(t.file_slices().column("num_log_files").to_pylist())
    assert s["records"] == pc.sum(blocks["record_count"]).as_py()
    assert s["min_event_time"] == pc.min(blocks["min_event_time"]).as_py()

    m.set_sort("min_event_time")
    times = [r.min_event_time for r in m.visible_rows if r.min_event_time is not None]
    assert times == sorted(times) and times[0] == s["min_event_time"]
    m.set_sort("records", descending=True)
    counts = [r.record_count or 0 for r in m.visible_rows]
    assert counts == sorted(counts, reverse=True)
    m.set_filter("delete")
    assert m.visible_rows and all(r.block_type == "DELETE" for r in m.visible_rows)
    assert len(m.visible_rows) == s["delete_blocks"]
    m.set_filter("problems")
    assert m.visible_rows == []
    assert len(m.frame()) == 0
    with pytest.raises(InvalidActionError):
        m.set_sort("colour")
    with pytest.raises(InvalidActionError):
        m.set_filter("some")


@SKIP_NO_SHARED
def test_inspector_opens_on_a_slice_with_logs() -> None:
    """A table whose first file group has no logs: the inspector starts on one that has, not on an empty slice."""
    t = evt.HudiTable.open(fixture_table_path("mor_v8_trips_8i3u1d"))
    m = LogHeaderModel(t)
    assert m.rows and m.selected.file_id in {r["file_id"] for r in t.file_slices().to_pylist() if r["num_log_files"]}


@SKIP_NO_SHARED
def test_inspector_marks_uncommitted_block() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_table_uncommitted_log_v6"))
    inflight = [i.time for i in t.timeline.instants if not i.is_completed]
    m = LogHeaderModel(t)
    statuses = {b.instant_time: b.status for b in m.rows}
    assert inflight and all(statuses[i] == "uncommitted" for i in inflight)
    assert "ok" in statuses.values()
    m.set_filter("problems")
    assert {b.instant_time for b in m.visible_rows} == set(inflight)
    key = m.rows[0].key
    assert "INSTANT_TIME" in m.header_details(key) and m.schema_details(key) is not None


@SKIP_NO_SHARED
def test_inspector_marks_corrupt_block() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_table_corrupt_tail_block"))
    m = LogHeaderModel(t, whole_table=True)
    found = [b for b in m.rows if b.status == "corrupt"]
    assert len(found) == 1 and "past EOF" in (found[0].corrupt_reason or "")
    assert found[0].status_text.startswith("CORRUPT")


# -- distribution -----------------------------------------------------------------------------------------------------


def test_distribution_frames_match_slice_infos(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = DistributionModel(t, threshold="2013-01-01T12:00:00Z")
    infos = slice_infos(t)
    want = sorted(
        (lf.name, lf.min_event_time) for s in infos for lf in s.log_files if lf.has_data and lf.min_event_time
    )
    assert sorted(zip(m.points["log_file"], m.points["min_event_time"], strict=True)) == want
    per = m.per_slice()
    assert int(per["logs"].sum()) == len(want)
    assert int(per["min"].min()) == min(v for _, v in want)
    assert int(m.histogram(bins=20)["count"].sum()) == len(want)
    hm = m.heatmap(time_bins=24)
    assert hm.shape == (len(infos), 24) and int(hm.to_numpy().sum()) == len(want)
    assert m.logs_at_or_below_threshold() == sum(1 for _, v in want if v <= 1357041600000)
    assert not m.use_heatmap  # 12 slices
    m.set_mode("heatmap")
    assert m.use_heatmap
    assert str(m.points["time"].iloc[0]).startswith("2013-01-01")
    assert m.empty_reason is None and m.unit_hint is None


def test_distribution_out_of_order_and_forced_agree_with_the_preview(tmp_path: Path) -> None:
    """Out of order = older than a log replayed before it; forced = inside the prefix at T with min > T, which
    is what the compaction preview counts as forced (for logs of known min event time)."""
    t = demo_table(tmp_path / "t")
    m = DistributionModel(t)
    for s in slice_infos(t):
        running: int | None = None
        for lf in s.log_files:
            if not lf.has_data or lf.min_event_time is None:
                continue
            row = m.points[m.points["log_file"] == lf.name].iloc[0]
            assert bool(row["out_of_order"]) == (running is not None and lf.min_event_time < running), lf.name
            running = lf.min_event_time if running is None else max(running, lf.min_event_time)
    assert m.counts()["out_of_order"] > 0
    for threshold in (1357041600000, 1357063200000):
        m.set_threshold(threshold)
        p = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=threshold), now_ms=NOW).per_log
        known = p.filter(pc.and_(p["has_data"], pc.is_valid(p["min_event_time"])))
        assert m.counts()["forced"] == pc.sum(known["forced"]).as_py()
        assert m.counts()["selected"] == pc.sum(known["selected_by_threshold"]).as_py()


def test_distribution_empty_states_and_epoch_seconds() -> None:
    assert "no file slice has log files" in (DistributionModel(slices=[]).empty_reason or "")
    unknown = SliceInfo("p", "f", "1", None, None, (LogFileInfo.synthetic("f", 1, min_event_time=None),))
    assert "known min event time" in (DistributionModel(slices=[unknown]).empty_reason or "")
    seconds = SliceInfo("p", "f", "1", None, None, (LogFileInfo.synthetic("f", 1, min_event_time=1_695_200_000),))
    m = DistributionModel(slices=[seconds])
    assert m.empty_reason is None and "epoch seconds" in (m.unit_hint or "")


def test_distribution_heatmap_above_slice_threshold() -> None:
    def slices(n: int) -> list[SliceInfo]:
        return [
            SliceInfo("p", f"f{i}", "1", None, None, (LogFileInfo.synthetic(f"f{i}", 1, min_event_time=i * 1000),))
            for i in range(n)
        ]

    assert not DistributionModel(slices=slices(HEATMAP_SLICE_THRESHOLD)).use_heatmap
    big = DistributionModel(slices=slices(HEATMAP_SLICE_THRESHOLD + 1))
    assert big.use_heatmap
    big.set_mode("replay")
    assert not big.use_heatmap and len(big.replay_slices()) == MAX_REPLAY_SLICES
    with pytest.raises(InvalidActionError):
        big.set_mode("pie")


# -- runner -----------------------------------------------------------------------------------------------------------


def test_runner_schedule_run_validate(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    threshold = 1357045200000  # 2013-01-01 13:00 UTC
    m = CompactionRunnerModel(t, EventTimeBasedCompactionStrategy(threshold=threshold))
    assert m.enabled() == {"schedule": True, "run": False, "validate": False, "unschedule": False}
    assert m.next_action == "schedule"
    events = []
    c = m.schedule()
    assert m.enabled() == {"schedule": False, "run": True, "validate": True, "unschedule": True}
    assert m.next_action == "run"
    assert c is not None and m.state == "scheduled" and m.last_error is None
    assert c.threshold == threshold
    assert m.freshness_before is not None and m.freshness_before.threshold_ms is None
    assert m.validate() is not None and m.validation is not None and m.validation.ok
    result = m.run(progress=events.append)
    assert result is not None and m.state == "done", m.last_error
    assert m.freshness_after is not None and m.freshness_after.threshold_ms == threshold
    assert m.enabled() == {"schedule": True, "run": False, "validate": True, "unschedule": False}
    lines = m.freshness_lines()
    assert lines[0] == "before: RO freshness: none (no compaction has completed)"
    assert lines[1].startswith("after: RO freshness: every event ≤ 2013-01-01T13:00:00.000Z") and "years" in lines[1]
    assert lines[2] == "the RO view now promises the plan's T (2013-01-01T13:00:00.000Z)"
    assert m.check is not None and m.check.ok and m.check.snapshot_rows_le_t > 0 and m.check.missing_from_ro == 0
    assert events and events[-1].stage == "commit"
    done, total = m.progress_fraction()
    assert done == total == c.operations + 1
    assert t.compaction.validate(c).ok
    # A second plan may follow a completed one.
    m.set_threshold(threshold + 3_600_000)
    assert m.schedule() is not None and m.state == "scheduled"


def test_runner_invalid_actions_leave_table_unchanged(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    before = _timeline_files(t)
    m = CompactionRunnerModel(t)
    assert m.run() is None
    assert m.state == "idle" and m.last_error is not None and "schedule a compaction first" in m.last_error
    assert m.validate() is None and m.unschedule() is None
    assert m.set_threshold("not a time") is None
    assert m.last_error is not None and "InvalidThresholdError" in m.last_error
    m.set_threshold("2999-01-01T00:00:00Z")  # later than compaction time − data latency
    assert m.schedule() is None
    assert m.state == "idle" and m.last_error is not None and "later than" in m.last_error
    assert _timeline_files(t) == before
    with pytest.raises(InvalidActionError):
        m.set_links(link_mode="hardlink")


def test_runner_unschedule_dry_run_then_real(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    before = _timeline_files(t)
    m = CompactionRunnerModel(t, EventTimeBasedCompactionStrategy(threshold=1357045200000))
    c = m.schedule()
    assert c is not None and _timeline_files(t) != before
    assert m.schedule() is None and m.last_error is not None and "cannot schedule while scheduled" in m.last_error
    report = m.unschedule()
    assert report is not None and not report.deleted and report.files_to_delete and m.state == "scheduled"
    kinds = m.files_by_kind(report.files_to_delete)
    assert len(kinds["link"]) == len(c.links) and kinds["timeline file"]
    assert sum(len(v) for v in kinds.values()) == len(report.files_to_delete)
    assert m.message == (
        f"dry run: would delete {len(report.files_to_delete)} file(s): {len(c.links)} links, 1 timeline file"
    )
    report = m.unschedule(dry_run=False)
    assert report is not None and m.state == "idle", m.last_error
    assert _timeline_files(t) == before


def test_runner_takes_strategy_from_preview_model(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    p = ThresholdPreviewModel(t, now_ms=NOW, threshold="2013-01-01T15:00:00Z")
    m = CompactionRunnerModel(t, p)
    p.set_threshold("2013-01-01T16:00:00Z")
    c = m.schedule()
    assert c is not None and c.threshold == 1357056000000
    assert c.operations == p.totals["slices_selected"] and len(c.links) == p.totals["links"]


# -- timeline ---------------------------------------------------------------------------------------------------------


def test_timeline_model_rows_and_pending_plan(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = TimelineModel(t)
    assert [(r.time, r.action) for r in m.rows] == [(i.time, i.action) for i in t.timeline.instants]
    assert [r.time for r in m.newest_first] == sorted((i.time for i in t.timeline.instants), reverse=True)
    assert all(r.state == "COMPLETED" and r.plan is None for r in m.rows)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=1357045200000))
    assert c is not None
    m.refresh()
    (plan,) = m.pending_plans
    assert (plan.instant, plan.operations, plan.links, plan.threshold_ms) == (
        c.instant,
        c.operations,
        len(c.links),
        1357045200000,
    )
    assert plan.strategy == "EventTimeBasedCompactionStrategy" and plan.link_mode == "copy"
    frame = m.frame()
    assert frame.iloc[0]["state"] == "REQUESTED" and frame.iloc[0]["operations"] == c.operations  # newest first
    chart = m.chart_frame()
    assert len(chart) == len(m.rows) and chart["requested"].notna().all()
    row = chart[chart["instant"] == c.instant].iloc[0]
    assert row["pending"] and row["action"] == "compaction" and "T = 2013-01-01T13:00:00.000Z" in row["label"]
    assert m.counts() == {"deltacommit": len(m.rows) - 1, "compaction": 1, "pending": 1}
    assert format_ms(plan.threshold_ms) == "2013-01-01T13:00:00.000Z"


def test_preview_model_cost_curve_warnings_and_slider_range(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    m = ThresholdPreviewModel(t, now_ms=NOW)
    curve = m.cost_curve(points=12)
    lo, hi = m.slider_range()
    assert curve["threshold_ms"].iloc[0] == lo and curve["threshold_ms"].iloc[-1] == hi
    for row in curve.iloc[[0, 5, -1]].itertuples():
        s = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=int(row.threshold_ms)), now_ms=NOW).summary
        assert (row.logs_compacted, row.bytes_read, row.link_bytes_copied) == (
            s.logs_compacted,
            s.bytes_read,
            s.link_bytes_copied,
        )
        assert row.written_total == s.bytes_written_estimate + s.link_bytes_copied
    assert curve["logs_compacted"].is_monotonic_increasing
    assert m.preview.summary.threshold_ms == m.threshold_ms  # the shared live model is back where the slider is

    # Where copying the leftover logs writes more than compacting everything, the model says so, and only there.
    costly = curve[curve["written_total"] > curve["full_bytes_written"]]
    cheap = curve[(curve["written_total"] <= curve["full_bytes_written"]) & (curve["logs_compacted"] > 0)]
    assert len(costly) and len(cheap)
    m.set_threshold(int(costly["threshold_ms"].iloc[0]))
    assert any("more than a full compaction" in w for w in m.warnings())
    m.set_threshold(int(cheap["threshold_ms"].iloc[-1]))
    assert not any("more than a full compaction" in w for w in m.warnings())
    m.set_mode("data_latency", 3_600_000)  # now − 1 h: decades after the data
    assert any("after every log" in w and "allowed lateness" in w for w in m.warnings())
    m.set_threshold(lo - 1)
    assert any("before every log" in w for w in m.warnings()) and m.freshness is None
    assert "unchanged" in m.freshness_text


def test_preview_model_empty_and_single_log_tables() -> None:
    empty = ThresholdPreviewModel(slices=[], now_ms=NOW)
    assert empty.empty_reason is not None and "no log files" in empty.empty_reason
    assert empty.freshness is None and "no plan" in empty.freshness_text
    no_data = SliceInfo("p", "f", "1", None, None, (LogFileInfo.synthetic("f", 1, has_data=False),))
    m = ThresholdPreviewModel(slices=[no_data], now_ms=NOW)
    assert "known min event time" in (m.empty_reason or "") and m.freshness is None
    # One log: the slider spans an hour around it, not a minute; epoch seconds are called out.
    single = SliceInfo("p", "f", "1", None, None, (LogFileInfo.synthetic("f", 1, min_event_time=1_695_200_000),))
    m = ThresholdPreviewModel(slices=[single], now_ms=NOW)
    lo, hi = m.slider_range()
    assert hi - lo == 3_600_000 and lo < 1_695_200_000 < hi
    assert any("epoch seconds" in w for w in m.warnings())
