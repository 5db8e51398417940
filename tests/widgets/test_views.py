"""The widgets driven in-process, as a notebook would: set widget values, click buttons, read HTML and figures.

No browser: ipywidgets and plotly ``FigureWidget`` work without a kernel (their comms are inert), so the views'
wiring — observers, batch updates, CSS classes, displayed text — is checked here; the browser test covers rendering.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy
from evt_toolkit.widgets import (
    CompactionRunner,
    EventTimeDistribution,
    LogHeaderInspector,
    ThresholdPreview,
    TimelineView,
)
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.widgets import demo_table

pytest.importorskip("anywidget", reason="plotly's FigureWidget needs anywidget")

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _number(text: str, label: str) -> int:
    m = re.search(re.escape(label) + r": ([\d,]+)", text)
    assert m is not None, (label, text)
    return int(m.group(1).replace(",", ""))


def _classes(widget: object) -> tuple[str, ...]:
    return tuple(widget._dom_classes)  # type: ignore[attr-defined]


def test_threshold_preview_slider_updates_totals_and_chart(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    p = ThresholdPreview(t, now_ms=1_900_000_000_000)
    assert "evt-threshold-slider" in _classes(p.slider) and not p.slider.continuous_update
    assert "evt-preview-chart" in _classes(p.chart) and "evt-preview-totals" in _classes(p.totals)
    assert "evt-strategy-select" in _classes(p.strategy_select) and "evt-preview" in _classes(p.view)
    before_text = p.totals.value
    before_bars = list(p.chart.data[0].y)
    assert _number(before_text, "selected logs") == p.model.totals["selected_logs"]

    p.slider.value = p.slider.min + 2 * 3_600_000
    after_text = p.totals.value
    assert after_text != before_text
    assert _number(after_text, "selected logs") == p.model.totals["selected_logs"]
    assert p.model.threshold_ms == p.slider.value
    assert list(p.chart.data[0].y) != before_bars
    # Bars: compacted by T, forced by the prefix rule, kept — the totals' three figures.
    assert sum(p.chart.data[0].y) + sum(p.chart.data[1].y) == p.model.totals["selected_logs"]
    assert sum(p.chart.data[1].y) == _number(after_text, "forced logs") == p.model.totals["forced_logs"]
    assert sum(p.chart.data[2].y) == _number(after_text, "kept logs")
    want = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=p.slider.value), now_ms=p.model.now_ms)
    assert _number(after_text, "selected logs") == want.summary.logs_compacted
    assert _number(after_text, "links") == want.summary.links
    assert "2013-01-01" in p.threshold_label.value and "every event ≤" in p.freshness.value
    # The cost chart: a curve per figure across T, and the T line where the slider is.
    assert {d.name for d in p.cost.data} >= {"read", "written (base files + link copies)", "full compaction: read"}
    assert len(p.cost.layout.shapes) == 1

    seen = []
    p.on_change(lambda m: seen.append(m.threshold_ms))
    p.set_threshold("2013-01-01T12:00:00Z")
    assert seen == [1357041600000] and p.slider.value == 1357041600000


def test_threshold_preview_strategy_and_modes(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    p = ThresholdPreview(t, now_ms=1_900_000_000_000)
    total = p.model.totals["logs_total"]
    p.strategy_select.value = "unbounded"
    assert p.slider.disabled and _number(p.totals.value, "selected logs") == total
    assert "not promised" in p.freshness.value
    # origin=EWR is no yyyy/MM/dd partition: day-based is not offered, and the note says why.
    assert "day_based" not in [v for _, v in p.strategy_select.options] and "origin=" in p.notes.value
    p.strategy_select.value = "event_time"
    assert p.error.value == "" and not p.slider.disabled
    p.mode.value = "allowed_lateness"
    p.mode_value.value = 120
    assert p.slider.disabled and p.model.threshold_mode == "allowed_lateness"
    assert _number(p.totals.value, "selected logs") == p.model.totals["selected_logs"] < total
    p.mode.value = "data_latency"  # now − 2 h: decades after this 2013 table
    assert "after every log" in p.warnings.value and "allowed lateness fits better" in p.warnings.value
    p.mode.value = "threshold"
    assert p.model.threshold_ms == p.slider.value and not p.slider.disabled


def test_distribution_threshold_and_mode(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    d = EventTimeDistribution(t, threshold="2013-01-01T12:00:00Z")
    assert "evt-distribution-chart" in _classes(d.chart)
    markers = [tr for tr in d.chart.data if tr.mode == "markers"]
    names = [tr.name for tr in markers[:3]]
    assert names == ["min ≤ T: compacted", "min > T, forced in by the prefix rule", "min > T: kept (linked)"]
    assert sum(len(tr.x) for tr in markers[:3]) == len(d.model.points)
    assert len(markers[1].x) == d.model.counts()["forced"] > 0
    ringed = next(tr for tr in d.chart.data if tr.name.startswith("out of order"))
    assert len(ringed.x) == d.model.counts()["out_of_order"] > 0
    assert d.chart.layout.xaxis.title.text.startswith("log file #")  # replay position on x, event time on y
    y0 = d.chart.layout.shapes[0].y0
    d.set_threshold("2013-01-01T18:00:00Z")
    assert d.chart.layout.shapes[0].y0 != y0 and d.histogram.layout.shapes[0].x0 == d.chart.layout.shapes[0].y0
    assert f"{d.model.logs_at_or_below_threshold()} log(s) with min ≤ T" in d.info.value
    assert "equal bins of" in d.histogram.layout.title.text
    d.mode.value = "heatmap"
    assert d.chart.data[0].type == "heatmap"
    d.set_mode("replay")
    assert d.chart.data[0].type == "scatter" and d.mode.value == "replay"
    d.set_threshold(None)
    assert len(d.chart.layout.shapes) == 0


def test_empty_tables_get_reasons_not_axes(tmp_path: Path) -> None:
    t = evt.HudiTable.create(tmp_path / "empty", "empty", "id", ordering_field="ts")
    p = ThresholdPreview(t)
    assert p.slider.disabled and p.mode.disabled and "no log files" in p.freshness.value
    assert "every event ≤" not in p.freshness.value and len(p.chart.data) == 0
    assert "no log files" in p.chart.layout.annotations[0].text and p.chart.layout.xaxis.visible is False
    d = EventTimeDistribution(t)
    assert len(d.chart.data) == 0 and "no file slice has log files" in d.info.value
    w = LogHeaderInspector(t)
    assert "no log block matches" in w.blocks.value and w.block.options == ()
    assert len(TimelineView(t).chart.data) == 0


def test_inspector_table_sort_filter_and_header(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    w = LogHeaderInspector(t)
    assert "evt-inspector" in _classes(w.view) and "evt-blocks-table" in w.blocks.value
    first_rows = w.blocks.value
    w.partition.value = w.partition.options[-1][1]
    assert w.blocks.value != first_rows
    assert w.model.selected.partition == w.partition.value and w.model.selected.file_id == w.file_group.value
    assert w.blocks.value.count('class="evt-block-row') == len(w.model.rows) > 1
    assert "AVRO_DATA" in w.blocks.value and "write_stats" in w.blocks.value

    w.scope.value = "table"
    assert w.partition.disabled and w.blocks.value.count('class="evt-block-row') == len(w.model.rows)
    assert len(w.model.rows) == t.inspect.log_blocks().num_rows
    w.sort.value = "min_event_time"
    w.descending.value = True
    first, second = w.model.visible_rows[:2]
    assert first.min_event_time == max(r.min_event_time or 0 for r in w.model.rows)
    assert "min event time ▼" in w.blocks.value
    assert w.blocks.value.index(f'data-key="{first.key}"') < w.blocks.value.index(f'data-key="{second.key}"')
    w.filter.value = "delete"
    assert w.blocks.value.count('class="evt-block-row') == w.model.summary()["delete_blocks"]

    w.filter.value = "all"
    w.show_block(first.key)
    header = w.header.value
    assert "evt-block-header-full" in header and "INSTANT_TIME" in header and str(first.instant_time) in header
    # SCHEMA collapsed: its one-line summary shows, the JSON sits inside a closed <details>.
    assert "<details class='evt-schema'><summary>" in header and "22 fields" in header and "sched_dep_ts" in header


@SKIP_NO_SHARED
def test_inspector_shows_uncommitted_block() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_table_uncommitted_log_v6"))
    w = LogHeaderInspector(t)
    rows = w.blocks.value.count('class="evt-block-row')
    marked = w.blocks.value.count('class="evt-block-row evt-block-uncommitted"')
    assert 0 < marked < rows
    assert "readers skip" in w.summary.value


def test_runner_buttons_progress_and_errors(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    r = CompactionRunner(t)
    for part, css in (
        (r.schedule_button, "evt-runner-schedule"),
        (r.run_button, "evt-runner-run"),
        (r.validate_button, "evt-runner-validate"),
        (r.unschedule_button, "evt-runner-unschedule"),
        (r.progress, "evt-runner-progress"),
        (r.error, "evt-runner-error"),
    ):
        assert css in _classes(part)
    # Buttons follow the state: only Schedule before a plan exists, highlighted as the next step.
    assert not r.schedule_button.disabled and r.schedule_button.button_style == "primary"
    assert r.run_button.disabled and r.validate_button.disabled and r.unschedule_button.disabled
    r.run()  # called anyway (as code can): refused in words, nothing changes
    assert "schedule a compaction first" in r.error.value and r.model.state == "idle"
    r.threshold.value = "yesterday-ish"
    r.schedule_button.click()
    assert "InvalidThresholdError" in r.error.value and r.model.scheduled is None
    r.threshold.value = "2013-01-01T13:00:00Z"
    r.schedule_button.click()
    assert r.error.value == "" and "state: scheduled" in r.status.value
    assert r.schedule_button.disabled and not r.run_button.disabled and r.run_button.button_style == "primary"
    assert not r.unschedule_button.disabled
    r.validate_button.click()
    assert "validation: OK" in r.result.value
    r.run_button.click()
    assert r.model.state == "done", r.model.last_error
    assert r.progress.max == r.model.scheduled.operations + 1  # type: ignore[union-attr]
    assert r.progress.value == r.progress.max
    assert r.run_button.disabled and r.unschedule_button.disabled and not r.schedule_button.disabled
    assert "the RO view now promises the plan&#x27;s T (2013-01-01T13:00:00.000Z)" in r.freshness.value
    assert "years" in r.freshness.value  # lag in words, not "438254421 s"
    assert "RO ⊇ snapshot events ≤ T: OK" in r.check.value
    assert t.ro_freshness().threshold_ms == 1357045200000


def test_runner_unschedule_is_dry_run_by_default(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    r = CompactionRunner(t, EventTimeBasedCompactionStrategy(threshold=1357045200000))
    r.schedule_button.click()
    instant = r.model.scheduled.instant  # type: ignore[union-attr]
    r.unschedule_button.click()
    assert "would delete" in r.result.value and [i.time for i in t.refresh().compaction.pending()] == [instant]
    # The long list of files is summarised by kind and folded, not printed one per line.
    assert re.search(r"would delete \d+ file\(s\): \d+ links, 1 timeline file", r.result.value)
    assert "<details><summary>" in r.result.value
    r.dry_run.value = False
    r.unschedule_button.click()
    assert r.model.state == "idle" and t.refresh().compaction.pending() == []


def test_timeline_view_is_a_chart_and_lists_newest_first(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    v = TimelineView(t)
    assert "evt-timeline" in _classes(v.view) and "evt-timeline-chart" in _classes(v.chart)
    assert sum(len(tr.x) for tr in v.chart.data) == len(t.timeline.instants)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=1357045200000))
    assert c is not None
    v.refresh_button.click()
    html_text = v.table_html.value
    # Newest first: the pending compaction is the first row, its plan folded under it.
    assert html_text.index(c.instant) < html_text.index(t.timeline.instants[0].time)
    assert "evt-instant-pending" in html_text and "<details" in html_text
    assert f"plan: {c.operations} operation(s)" in html_text and f"{len(c.links)} link(s)" in html_text
    assert "2013-01-01T13:00:00.000Z" in html_text
    pending = [tr for tr in v.chart.data if tr.name == "compaction (pending)"]
    assert len(pending) == 1 and "T = 2013-01-01T13:00:00.000Z" in pending[0].customdata[0][0]


def test_widgets_display_as_their_view(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    for w in (
        LogHeaderInspector(t),
        EventTimeDistribution(t),
        ThresholdPreview(t),
        CompactionRunner(t),
        TimelineView(t),
    ):
        bundle = w._repr_mimebundle_()
        assert bundle[WIDGET_MIME]["model_id"] == w.view.model_id
