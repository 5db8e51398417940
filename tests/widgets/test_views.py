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
    m = re.search(re.escape(label) + r": (\d+)", text)
    assert m is not None, (label, text)
    return int(m.group(1))


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
    assert sum(p.chart.data[0].y) == p.model.totals["selected_logs"]
    assert sum(p.chart.data[1].y) == _number(after_text, "kept logs")
    want = t.compaction.preview(EventTimeBasedCompactionStrategy(threshold=p.slider.value), now_ms=p.model.now_ms)
    assert _number(after_text, "selected logs") == want.summary.logs_compacted
    assert _number(after_text, "links") == want.summary.links
    assert "2013-01-01" in p.threshold_label.value and "every event ≤" in p.freshness.value

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
    p.strategy_select.value = "day_based"  # origin=EWR is no yyyy/MM/dd partition: shown, selection reverts
    assert "origin=" in p.error.value and p.strategy_select.value == "unbounded"
    p.strategy_select.value = "event_time"
    assert p.error.value == "" and not p.slider.disabled
    p.mode.value = "allowed_lateness"
    p.mode_value.value = 120
    assert p.slider.disabled and p.model.threshold_mode == "allowed_lateness"
    assert _number(p.totals.value, "selected logs") == p.model.totals["selected_logs"] < total
    p.mode.value = "threshold"
    assert p.model.threshold_ms == p.slider.value and not p.slider.disabled


def test_distribution_threshold_and_mode(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    d = EventTimeDistribution(t, threshold="2013-01-01T12:00:00Z")
    assert "evt-distribution-chart" in _classes(d.chart)
    assert d.chart.data[0].type == "box" and len(d.chart.data[0].x) == len(d.model.points)
    x0 = d.chart.layout.shapes[0].x0
    d.set_threshold("2013-01-01T18:00:00Z")
    assert d.chart.layout.shapes[0].x0 != x0 and d.histogram.layout.shapes[0].x0 == d.chart.layout.shapes[0].x0
    assert f"{d.model.logs_at_or_below_threshold()}" in d.info.value
    d.mode.value = "heatmap"
    assert d.chart.data[0].type == "heatmap" and "chart: heatmap" in d.info.value
    d.set_mode("strip")
    assert d.chart.data[0].type == "box" and d.mode.value == "strip"
    d.set_threshold(None)
    assert len(d.chart.layout.shapes) == 0


def test_inspector_cascade_and_header_toggle(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    w = LogHeaderInspector(t)
    assert "evt-inspector" in _classes(w.view)
    first_logs = list(w.log_file.options)
    w.partition.value = w.partition.options[-1][1]
    assert list(w.log_file.options) != first_logs
    assert w.model.selected.partition == w.partition.value and w.model.selected.file_id == w.file_group.value
    w.log_file.value = w.log_file.options[-1]
    assert w.model.selected.log_file == w.log_file.value
    assert "AVRO_DATA" in w.blocks.value and "write_stats" in w.blocks.value
    toggle = w.header_toggles[0]
    assert "evt-block-header-toggle" in _classes(toggle)
    box = w.headers.children[0]
    assert len(box.children) == 1
    toggle.value = True
    full = box.children[1]
    assert "evt-block-header-full" in _classes(full) and "INSTANT_TIME" in full.value and "sched_dep_ts" in full.value
    toggle.value = False
    assert len(box.children) == 1


@SKIP_NO_SHARED
def test_inspector_shows_uncommitted_block() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_table_uncommitted_log_v6"))
    w = LogHeaderInspector(t)
    marked = []
    for name in w.log_file.options:
        w.log_file.value = name
        marked.append('class="evt-block-row evt-block-uncommitted"' in w.blocks.value)
    assert any(marked) and not all(marked)


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
    r.run_button.click()
    assert "schedule a compaction first" in r.error.value and r.model.state == "idle"
    r.threshold.value = "yesterday-ish"
    r.schedule_button.click()
    assert "InvalidThresholdError" in r.error.value and r.model.scheduled is None
    r.threshold.value = "2013-01-01T13:00:00Z"
    r.schedule_button.click()
    assert r.error.value == "" and "state: scheduled" in r.status.value
    r.validate_button.click()
    assert "validation: OK" in r.result.value
    r.run_button.click()
    assert r.model.state == "done", r.model.last_error
    assert r.progress.max == r.model.scheduled.operations + 1  # type: ignore[union-attr]
    assert r.progress.value == r.progress.max
    assert "freshness after equals the plan&#x27;s T: yes" in r.freshness.value
    assert "RO ⊇ snapshot events ≤ T: OK" in r.check.value
    assert t.ro_freshness().threshold_ms == 1357045200000


def test_runner_unschedule_is_dry_run_by_default(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    r = CompactionRunner(t, EventTimeBasedCompactionStrategy(threshold=1357045200000))
    r.schedule_button.click()
    instant = r.model.scheduled.instant  # type: ignore[union-attr]
    r.unschedule_button.click()
    assert "would delete" in r.result.value and [i.time for i in t.refresh().compaction.pending()] == [instant]
    r.dry_run.value = False
    r.unschedule_button.click()
    assert r.model.state == "idle" and t.refresh().compaction.pending() == []


def test_timeline_view_expands_pending_plan(tmp_path: Path) -> None:
    t = demo_table(tmp_path / "t")
    v = TimelineView(t)
    assert "evt-timeline" in _classes(v.view) and v.table_html.value.count("deltacommit") == len(t.timeline.instants)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=1357045200000))
    assert c is not None
    v.refresh_button.click()
    html_text = v.table_html.value
    assert "evt-instant-pending" in html_text and "<details" in html_text
    assert f"plan: {c.operations} operation(s)" in html_text and f"{len(c.links)} link(s)" in html_text
    assert "2013-01-01 13:00:00 UTC" in html_text


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
