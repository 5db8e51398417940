"""JupyterLab widgets: thin ipywidgets + plotly views over the models of :mod:`evt_toolkit.widgets.models`.

Every widget ``X(table, ...)`` has ``.model`` (all logic; tested without a browser) and ``.view`` (an
``ipywidgets.VBox``); a notebook cell ending with the widget displays it. Stable CSS classes (``evt-*``) name the
parts a browser test drives.

Example:
    >>> import evt_toolkit as evt
    >>> from evt_toolkit.widgets import ThresholdPreview
    >>> t = evt.HudiTable.open("/data/flights")  # doctest: +SKIP
    >>> p = ThresholdPreview(t)  # doctest: +SKIP
    >>> p  # doctest: +SKIP
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from evt_toolkit.compaction.plan import LINK_MODES, LINK_TIMINGS
from evt_toolkit.errors import EvtError
from evt_toolkit.widgets.figures import (
    distribution_figure,
    histogram_figure,
    preview_figure,
    update_distribution_figure,
    update_histogram_figure,
    update_preview_figure,
)
from evt_toolkit.widgets.models import (
    CompactionRunnerModel,
    DistributionModel,
    LogHeaderModel,
    ThresholdPreviewModel,
    TimelineModel,
    format_bytes,
    format_ms,
)

if TYPE_CHECKING:
    from evt_toolkit.api import HudiTable
    from evt_toolkit.compaction.executor import ProgressEvent
    from evt_toolkit.compaction.model import SliceInfo
    from evt_toolkit.compaction.strategy import CompactionStrategy

__all__ = [
    "CompactionRunner",
    "EventTimeDistribution",
    "LogHeaderInspector",
    "ThresholdPreview",
    "TimelineView",
]

_STYLE = """<style>
.evt-table { border-collapse: collapse; font-size: 12px; }
.evt-table th, .evt-table td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; white-space: nowrap; }
.evt-table th { background: #f4f4f4; }
.evt-block-uncommitted td { background: #fff3cd; color: #7a5b00; }
.evt-block-corrupt td { background: #f8d7da; color: #842029; }
.evt-instant-pending td { background: #e7f1ff; }
</style>"""


def _esc(value: object) -> str:
    return html.escape("-" if value is None else str(value))


def _styled(widget: Any, *classes: str) -> Any:
    for c in classes:
        widget.add_class(c)
    return widget


def _show(widget: W.Widget, visible: bool) -> None:
    widget.layout.display = None if visible else "none"


def _lines_html(lines: Iterable[str], css: str = "") -> str:
    """Plain-text lines, one ``<div>`` each, so each figure reads as text (``selected logs: 12``)."""
    return f'<div class="{css}">' + "".join(f"<div>{html.escape(line)}</div>" for line in lines) + "</div>"


class _WidgetBase:
    """``.view`` display plumbing shared by every widget."""

    view: W.VBox

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Delegating lets a notebook cell that ends with the object display its view.
        return self.view._repr_mimebundle_(**kwargs)


# -- log header inspector -------------------------------------------------------------------------------------------


class LogHeaderInspector(_WidgetBase):
    """Walk partition → file group → file slice → log file and read each block's header.

    Uncommitted (inflight, failed or rolled-back) blocks and corrupt blocks are marked in the blocks table; each
    block's full header (``SCHEMA`` pretty-printed) opens with its own toggle button.

    Args:
        table: the table.
        event_time_field: field whose min event time is shown; defaults to the table's.

    Example:
        >>> LogHeaderInspector(t)  # doctest: +SKIP
    """

    def __init__(self, table: HudiTable, event_time_field: str | None = None) -> None:
        self.model = LogHeaderModel(table, event_time_field)
        wide = W.Layout(width="95%")
        self.partition = _styled(W.Dropdown(description="partition", layout=wide), "evt-inspector-partition")
        self.file_group = _styled(W.Dropdown(description="file group", layout=wide), "evt-inspector-file-group")
        self.file_slice = _styled(W.Dropdown(description="file slice", layout=wide), "evt-inspector-file-slice")
        self.log_file = _styled(W.Select(description="log file", rows=6, layout=wide), "evt-inspector-log-file")
        self.refresh_button = _styled(W.Button(description="Refresh", icon="refresh"), "evt-inspector-refresh")
        self.summary = _styled(W.HTML(), "evt-inspector-summary")
        self.blocks = _styled(W.HTML(), "evt-inspector-blocks")
        self.headers = _styled(W.VBox(), "evt-inspector-headers")
        self.header_toggles: list[W.ToggleButton] = []
        self.view = _styled(
            W.VBox(
                [
                    W.HTML("<b>Log blocks</b>"),
                    self.partition,
                    self.file_group,
                    self.file_slice,
                    self.log_file,
                    self.refresh_button,
                    self.summary,
                    self.blocks,
                    self.headers,
                ]
            ),
            "evt-inspector",
        )
        self._syncing = False
        for level, widget in (
            ("partition", self.partition),
            ("file_id", self.file_group),
            ("base_instant", self.file_slice),
            ("log_file", self.log_file),
        ):
            widget.observe(lambda change, lv=level: self._on_change(lv, change), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self._render()

    def refresh(self) -> None:
        """Re-read the table (new writes, a compaction) and redraw."""
        self.model.refresh()
        self._render()

    def select(self, **path: str | None) -> None:
        """Select a path programmatically: ``partition=``, ``file_id=``, ``base_instant=``, ``log_file=``."""
        self.model.select(**path)
        self._render()

    def _on_change(self, level: str, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        sel = self.model.selected
        current = {
            "partition": sel.partition,
            "file_id": sel.file_id,
            "base_instant": sel.base_instant,
            "log_file": sel.log_file,
        }
        current[level] = change["new"]
        # Levels below the one changed start again from their first option.
        below = list(LogHeaderModel.LEVELS)[list(LogHeaderModel.LEVELS).index(level) + 1 :]
        for lv in below:
            current[lv] = None
        self.model.select(**current)
        self._render()

    def _render(self) -> None:
        m = self.model
        sel = m.selected
        self._syncing = True
        try:
            self.partition.options = [(p or "(not partitioned)", p) for p in m.options["partition"]]
            self.partition.value = sel.partition
            self.file_group.options = m.options["file_id"]
            self.file_group.value = sel.file_id
            self.file_slice.options = [
                (f"{b} (latest)" if i == 0 else b, b) for i, b in enumerate(m.options["base_instant"])
            ]
            self.file_slice.value = sel.base_instant
            self.log_file.options = m.options["log_file"]
            self.log_file.value = sel.log_file
        finally:
            self._syncing = False
        base = None
        if sel.partition is not None and sel.file_id is not None and sel.base_instant is not None:
            base = m.base_file(sel.partition, sel.file_id, sel.base_instant)
        self.summary.value = _lines_html(
            [
                f"base file: {base or '(none: log-only slice)'}",
                f"log files in slice: {len(m.options['log_file'])}",
                f"blocks in {sel.log_file or '-'}: {len(m.rows)}",
            ]
        )
        self.blocks.value = self._blocks_html()
        self._render_headers()

    def _blocks_html(self) -> str:
        rows = self.model.rows
        if not rows:
            return "<i>no log file selected</i>"
        head = (
            "<tr><th>#</th><th>type</th><th>offset</th><th>size</th><th>records</th><th>INSTANT_TIME</th>"
            "<th>MIN_EVENT_TIME (source)</th><th>command</th><th>target instant</th><th>SCHEMA</th><th>status</th></tr>"
        )
        body = []
        for r in rows:
            css = {"uncommitted": "evt-block-uncommitted", "rolled_back": "evt-block-uncommitted"}.get(r.status, "")
            if r.status == "corrupt":
                css = "evt-block-corrupt"
            status = {
                "ok": "committed",
                "uncommitted": "UNCOMMITTED (skipped by readers)",
                "rolled_back": "ROLLED BACK",
                "corrupt": f"CORRUPT: {r.corrupt_reason or ''}",
            }[r.status]
            body.append(
                f'<tr class="evt-block-row {css}">'
                f"<td>{r.index}</td><td>{_esc(r.block_type)}</td><td>{r.offset}</td><td>{r.size}</td>"
                f"<td>{_esc(r.record_count)}</td><td>{_esc(r.instant_time)}</td>"
                f"<td>{_esc(r.min_event_time_text)}</td><td>{_esc(r.command_type)}</td>"
                f"<td>{_esc(r.target_instant_time)}</td><td>{_esc(r.schema or '-')}</td><td>{_esc(status)}</td></tr>"
            )
        return f'{_STYLE}<table class="evt-table evt-blocks-table">{head}{"".join(body)}</table>'

    def _render_headers(self) -> None:
        items: list[W.Widget] = []
        self.header_toggles = []
        for r in self.model.rows:
            toggle = _styled(
                W.ToggleButton(
                    value=False,
                    description=f"header of block {r.index} ({r.block_type})",
                    layout=W.Layout(width="auto"),
                ),
                "evt-block-header-toggle",
            )
            compact = W.HTML(f"<code>{_esc(', '.join(r.header))}</code>")
            box = W.VBox([W.HBox([toggle, compact])])
            toggle.observe(lambda change, b=box, i=r.index: self._toggle_header(b, i, change["new"]), names="value")
            self.header_toggles.append(toggle)
            items.append(box)
        self.headers.children = items

    def _toggle_header(self, box: W.VBox, index: int, show: bool) -> None:
        row = box.children[0]
        if not show:
            box.children = (row,)
            return
        details = self.model.header_details(index)
        body = "".join(
            f"<tr><th>{_esc(k)}</th><td><pre style='margin:0'>{_esc(v)}</pre></td></tr>" for k, v in details.items()
        )
        full = _styled(W.HTML(f'{_STYLE}<table class="evt-table">{body}</table>'), "evt-block-header-full")
        box.children = (row, full)


# -- event-time distribution ----------------------------------------------------------------------------------------


class EventTimeDistribution(_WidgetBase):
    """Min event times of each file slice's log files: strip/box per slice (heatmap for large tables), histogram,
    and the threshold T as a dashed line.

    Args:
        table: the table (``None`` when ``slices`` are given).
        event_time_field: defaults to the table's.
        threshold: T to draw.
        slices: precomputed slices instead of reading the table.

    Example:
        >>> d = EventTimeDistribution(t, threshold="2013-01-01T12:00Z")  # doctest: +SKIP
        >>> d.set_threshold(1357045200000)  # doctest: +SKIP
    """

    def __init__(
        self,
        table: HudiTable | None,
        event_time_field: str | None = None,
        threshold: Any = None,
        *,
        slices: Sequence[SliceInfo] | None = None,
    ) -> None:
        self.model = DistributionModel(table, event_time_field, threshold, slices=slices)
        self.chart = _styled(distribution_figure(self.model), "evt-distribution-chart")
        self.histogram = _styled(histogram_figure(self.model), "evt-distribution-histogram")
        self.mode = _styled(
            W.ToggleButtons(options=[("auto", "auto"), ("strip per slice", "strip"), ("heatmap", "heatmap")]),
            "evt-distribution-mode",
        )
        self.info = _styled(W.HTML(), "evt-distribution-info")
        self.refresh_button = _styled(W.Button(description="Refresh", icon="refresh"), "evt-distribution-refresh")
        self.view = _styled(
            W.VBox([W.HBox([self.mode, self.refresh_button]), self.info, self.chart, self.histogram]),
            "evt-distribution",
        )
        self.mode.observe(lambda change: self.set_mode(change["new"]), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self._render_info()

    def set_threshold(self, threshold: Any) -> None:
        """Move the threshold line (epoch ms, datetime or ISO string; ``None`` hides it)."""
        self.model.set_threshold(threshold)
        self._redraw()

    def set_mode(self, mode: str) -> None:
        """``auto``, ``strip`` or ``heatmap``."""
        self.model.set_mode(mode)
        if self.mode.value != mode:
            self.mode.value = mode
        self._redraw()

    def refresh(self) -> None:
        """Re-read the table and redraw."""
        self.model.refresh()
        self._redraw()

    def _redraw(self) -> None:
        update_distribution_figure(self.chart, self.model)
        update_histogram_figure(self.histogram, self.model)
        self._render_info()

    def _render_info(self) -> None:
        m = self.model
        lines = [
            f"file slices: {len(m.slices)}",
            f"log files with a known min event time: {len(m.points)}",
            f"log files with data but unknown min event time: {len(m.unknown)}",
            f"chart: {'heatmap' if m.use_heatmap else 'strip per slice'}",
        ]
        if m.threshold_ms is not None:
            lines.append(
                f"log files with min event time ≤ T ({format_ms(m.threshold_ms)}): {m.logs_at_or_below_threshold()}"
            )
        self.info.value = _lines_html(lines)


# -- threshold preview -----------------------------------------------------------------------------------------------

_STRATEGY_OPTIONS = [
    ("event time ≤ T (partial compaction)", "event_time"),
    ("log file size (Hudi default)", "log_file_size"),
    ("unbounded (all slices)", "unbounded"),
    ("day based (yyyy/MM/dd partitions)", "day_based"),
]
_MODE_OPTIONS = [
    ("explicit threshold T", "threshold"),
    ("data latency: T = now − value", "data_latency"),
    ("allowed lateness: T = max event time − value", "allowed_lateness"),
]
_MINUTE_MS = 60_000


class ThresholdPreview(_WidgetBase):
    """Move the threshold (or switch strategy) and see what a compaction would select, before scheduling it.

    Nothing is written. The stacked bars show per file slice the logs a plan would compact and keep; the totals
    compare the plan with a full compaction; the freshness line says what the RO view could promise.

    Args:
        table: the table (``None`` when ``slices`` are given).
        strategy: initial strategy: ``event_time``, ``log_file_size``, ``unbounded`` or ``day_based``.
        event_time_field: defaults to the table's.
        slices: precomputed slices instead of reading the table.
        now_ms: the compaction time (default: now).
        threshold: initial T (default: the middle of the min event times).

    Example:
        >>> p = ThresholdPreview(t)  # doctest: +SKIP
        >>> p.slider.value = 1357045200000  # doctest: +SKIP
        >>> p.model.totals["selected_logs"]  # doctest: +SKIP
    """

    def __init__(
        self,
        table: HudiTable | None,
        strategy: str = "event_time",
        event_time_field: str | None = None,
        *,
        slices: Sequence[SliceInfo] | None = None,
        now_ms: int | None = None,
        threshold: Any = None,
    ) -> None:
        self.model = ThresholdPreviewModel(
            table, strategy, event_time_field, slices=slices, now_ms=now_ms, threshold=threshold
        )
        m = self.model
        lo, hi = m.range_ms if m.range_ms is not None else (m.threshold_ms - 3_600_000, m.threshold_ms)
        lo, hi = min(lo, m.threshold_ms), max(hi, m.threshold_ms)
        if hi - lo < _MINUTE_MS:
            hi = lo + _MINUTE_MS
        # Minute steps: event times are rarely finer than that, and a millisecond slider is unusable.
        step = _MINUTE_MS if hi - lo >= 10 * _MINUTE_MS else 1
        self.slider = _styled(
            W.IntSlider(
                value=m.threshold_ms,
                min=lo,
                max=hi,
                step=step,
                description="threshold T",
                continuous_update=False,  # one recompute per release, not per pixel dragged
                readout=False,
                layout=W.Layout(width="70%"),
            ),
            "evt-threshold-slider",
        )
        self.threshold_label = _styled(W.HTML(), "evt-threshold-label")
        self.mode = _styled(
            W.Dropdown(options=_MODE_OPTIONS, value="threshold", description="T from"), "evt-threshold-mode"
        )
        self.mode_value = _styled(
            W.BoundedIntText(value=60, min=0, max=10**9, description="minutes", disabled=True),
            "evt-threshold-value",
        )
        self.strategy_select = _styled(
            W.Dropdown(options=_STRATEGY_OPTIONS, value=m.strategy_name, description="strategy"),
            "evt-strategy-select",
        )
        self.chart = _styled(preview_figure(m), "evt-preview-chart")
        self.totals = _styled(W.HTML(), "evt-preview-totals")
        self.freshness = _styled(W.HTML(), "evt-preview-freshness")
        self.error = _styled(W.HTML(), "evt-preview-error")
        self.view = _styled(
            W.VBox(
                [
                    self.strategy_select,
                    W.HBox([self.slider, self.threshold_label]),
                    W.HBox([self.mode, self.mode_value]),
                    self.error,
                    self.totals,
                    self.freshness,
                    self.chart,
                ]
            ),
            "evt-preview",
        )
        self._listeners: list[Callable[[ThresholdPreviewModel], None]] = []
        self._syncing = False
        self.slider.observe(self._on_slider, names="value")
        self.mode.observe(lambda _: self._on_mode(), names="value")
        self.mode_value.observe(lambda _: self._on_mode(), names="value")
        self.strategy_select.observe(self._on_strategy, names="value")
        self._render()

    # -- public -------------------------------------------------------------------------------------------------------
    def set_threshold(self, threshold: Any) -> None:
        """Move T (epoch ms, datetime or ISO string) as the slider would."""
        self._guard(lambda: self.model.set_threshold(threshold))
        self._sync_slider()
        self._render()

    def on_change(self, callback: Callable[[ThresholdPreviewModel], None]) -> None:
        """Call ``callback(model)`` after every recompute (e.g. to move an :class:`EventTimeDistribution` line)."""
        self._listeners.append(callback)

    # -- events -------------------------------------------------------------------------------------------------------
    def _guard(self, action: Callable[[], Any]) -> bool:
        try:
            action()
        except EvtError as exc:
            self.error.value = f"<b>error:</b> {html.escape(f'{type(exc).__name__}: {exc}')}"
            _show(self.error, True)
            return False
        self.error.value = ""
        _show(self.error, False)
        return True

    def _on_slider(self, change: dict[str, Any]) -> None:
        if self._syncing or self.model.threshold_mode != "threshold":
            return
        self._guard(lambda: self.model.set_threshold(int(change["new"])))
        self._render()

    def _on_mode(self) -> None:
        mode = self.mode.value
        self.mode_value.disabled = mode == "threshold"
        if mode == "threshold":
            # Back to an explicit T: the slider's position is T again.
            self._guard(lambda: self.model.set_threshold(int(self.slider.value)))
        else:
            self._guard(lambda: self.model.set_mode(mode, int(self.mode_value.value) * _MINUTE_MS))
            self._sync_slider()
        self._render()

    def _on_strategy(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        if not self._guard(lambda: self.model.set_strategy(change["new"])):
            self._syncing = True
            try:
                self.strategy_select.value = self.model.strategy_name
            finally:
                self._syncing = False
        self._render()

    def _sync_slider(self) -> None:
        self._syncing = True
        try:
            # T outside the data's range (e.g. data latency from now) pins the slider to its end; the label is exact.
            self.slider.value = min(max(self.model.threshold_ms, self.slider.min), self.slider.max)
        finally:
            self._syncing = False

    def _render(self) -> None:
        m = self.model
        event_time = m.strategy_name == "event_time"
        self.slider.disabled = not event_time or m.threshold_mode != "threshold"
        self.mode.disabled = not event_time
        self.mode_value.disabled = not event_time or m.threshold_mode == "threshold"
        suffix = "" if event_time else " (not used by this strategy)"
        self.threshold_label.value = f"<span>T = {html.escape(format_ms(m.threshold_ms))}{suffix}</span>"
        update_preview_figure(self.chart, m)
        self.totals.value = _lines_html(m.totals_lines(), "evt-totals")
        self.freshness.value = _lines_html([m.freshness_text])
        for fn in list(self._listeners):
            fn(m)


# -- compaction runner ----------------------------------------------------------------------------------------------


class CompactionRunner(_WidgetBase):
    """Schedule, run, validate or unschedule a compaction, with progress, freshness and an RO-vs-snapshot check.

    Errors are shown in the widget (``evt-runner-error``) and leave the table as it was; unschedule is a dry run
    unless the box is unticked.

    Args:
        table: the table.
        strategy: a strategy, a :class:`~evt_toolkit.widgets.models.ThresholdPreviewModel` (its settings at
            schedule time), or ``None`` (the threshold box, else event time with ``data_latency=0``).
        spark: run on Spark (one task per plan operation); ``None`` runs in this process.
        link_mode: initial link mode.
        link_timing: initial link timing.

    Example:
        >>> r = CompactionRunner(t, preview.model)  # doctest: +SKIP
        >>> r.schedule_button.click(); r.run_button.click()  # doctest: +SKIP
    """

    def __init__(
        self,
        table: HudiTable,
        strategy: CompactionStrategy | ThresholdPreviewModel | None = None,
        spark: Any = None,
        *,
        link_mode: str = "copy",
        link_timing: str = "schedule",
    ) -> None:
        self.model = CompactionRunnerModel(table, strategy, spark, link_mode=link_mode, link_timing=link_timing)
        self.threshold = _styled(
            W.Text(
                value="",
                placeholder="epoch ms or ISO time; empty: the strategy given",
                description="threshold T",
                layout=W.Layout(width="60%"),
            ),
            "evt-runner-threshold",
        )
        self.link_mode = _styled(
            W.Dropdown(options=list(LINK_MODES), value=link_mode, description="link mode"), "evt-runner-link-mode"
        )
        self.link_timing = _styled(
            W.Dropdown(options=list(LINK_TIMINGS), value=link_timing, description="link timing"),
            "evt-runner-link-timing",
        )
        self.dry_run = _styled(W.Checkbox(value=True, description="unschedule as dry run"), "evt-runner-dry-run")
        self.schedule_button = _styled(W.Button(description="Schedule", icon="calendar"), "evt-runner-schedule")
        self.run_button = _styled(W.Button(description="Run", icon="play", button_style="primary"), "evt-runner-run")
        self.validate_button = _styled(W.Button(description="Validate", icon="check"), "evt-runner-validate")
        self.unschedule_button = _styled(
            W.Button(description="Unschedule", icon="times", button_style="warning"), "evt-runner-unschedule"
        )
        self.progress = _styled(W.IntProgress(value=0, min=0, max=1, description="progress"), "evt-runner-progress")
        self.progress_label = _styled(W.HTML(), "evt-runner-progress-label")
        self.status = _styled(W.HTML(), "evt-runner-status")
        self.result = _styled(W.HTML(), "evt-runner-result")
        self.freshness = _styled(W.HTML(), "evt-runner-freshness")
        self.check = _styled(W.HTML(), "evt-runner-check")
        self.error = _styled(W.HTML(), "evt-runner-error")
        self.view = _styled(
            W.VBox(
                [
                    W.HTML(f"<b>Compaction</b> — strategy: {html.escape(self._strategy_text())}"),
                    self.threshold,
                    W.HBox([self.link_mode, self.link_timing]),
                    W.HBox([self.schedule_button, self.run_button, self.validate_button, self.unschedule_button]),
                    self.dry_run,
                    W.HBox([self.progress, self.progress_label]),
                    self.status,
                    self.error,
                    self.result,
                    self.freshness,
                    self.check,
                ]
            ),
            "evt-runner",
        )
        self.schedule_button.on_click(lambda _: self.schedule())
        self.run_button.on_click(lambda _: self.run())
        self.validate_button.on_click(lambda _: self.validate())
        self.unschedule_button.on_click(lambda _: self.unschedule())
        self._render()

    def _strategy_text(self) -> str:
        src = self.model.strategy_source
        if src is None:
            return "event time (threshold box, else data latency 0)"
        if isinstance(src, ThresholdPreviewModel):
            return "from the threshold preview"
        return repr(src)

    # -- actions (the buttons call these) -----------------------------------------------------------------------------
    def schedule(self) -> None:
        """Schedule with the current settings."""
        if self.threshold.value.strip() or self.model.threshold_override is not None:
            self.model.set_threshold(self.threshold.value)
            if self.model.last_error:
                self._render()
                return
        self.model.set_links(self.link_mode.value, self.link_timing.value)
        self.model.schedule()
        self.progress.value = 0
        self._render()

    def run(self) -> None:
        """Run the scheduled compaction, feeding the progress bar."""
        if self.model.scheduled is not None and self.model.state == "scheduled":
            self.progress.max = self.model.scheduled.operations + 1
            self.progress.value = 0
        self._set_busy(True)
        try:
            self.model.run(progress=self._on_progress)
        finally:
            self._set_busy(False)
        if self.model.state == "done":
            self.progress.value = self.progress.max
        self._render()

    def validate(self) -> None:
        """Validate the scheduled or completed compaction."""
        self.model.validate()
        self._render()

    def unschedule(self) -> None:
        """Unschedule (a dry run while the box is ticked)."""
        self.model.unschedule(dry_run=bool(self.dry_run.value))
        self._render()

    # -- rendering ----------------------------------------------------------------------------------------------------
    def _on_progress(self, event: ProgressEvent) -> None:
        done, total = self.model.progress_fraction()
        self.progress.max = max(total, 1)
        self.progress.value = min(done, self.progress.max)
        self.progress_label.value = html.escape(f"{event.stage}: {event.done}/{event.total} — {event.message}")

    def _set_busy(self, busy: bool) -> None:
        for b in (self.schedule_button, self.run_button, self.validate_button, self.unschedule_button):
            b.disabled = busy

    def _render(self) -> None:
        m = self.model
        self.status.value = _lines_html([f"state: {m.state}", *([m.message] if m.message else [])])
        if m.last_error:
            self.error.value = "<b>error:</b> " + html.escape(m.last_error) + " — the table was not changed"
            _show(self.error, True)
        else:
            self.error.value = ""
            _show(self.error, False)
        lines: list[str] = []
        if m.scheduled is not None:
            c = m.scheduled
            lines.append(
                f"plan {c.instant}: {c.operations} operation(s), {len(c.links)} link(s), T = {format_ms(c.threshold)}, "
                f"links {c.link_mode} at {c.link_timing}"
            )
        if m.result is not None:
            r = m.result
            lines.append(
                f"compacted log files: {r.log_files_compacted} ({format_bytes(r.log_bytes_compacted)}); "
                f"records written: {r.records_written}; bytes written: {r.bytes_written}; "
                f"duration: {r.duration_s:.1f} s"
            )
        if m.validation is not None:
            v = m.validation
            lines.append("validation: " + ("OK" if v.ok else "problems: " + "; ".join(v.problems)))
        if m.unschedule_report is not None:
            u = m.unschedule_report
            verb = "deleted" if u.deleted else "would delete"
            lines.append(f"unschedule {u.instant}: {verb} {len(u.files_to_delete)} file(s)")
            lines.extend(f"  {p}" for p in u.files_to_delete[:20])
        self.result.value = _lines_html(lines)
        fresh: list[str] = []
        if m.freshness_before is not None:
            fresh.append("before: " + m.freshness_before.text())
        if m.freshness_after is not None:
            fresh.append("after: " + m.freshness_after.text())
            if m.scheduled is not None and m.scheduled.threshold is not None:
                same = m.freshness_after.threshold_ms == m.scheduled.threshold
                fresh.append(f"freshness after equals the plan's T: {'yes' if same else 'no'}")
        self.freshness.value = _lines_html(fresh)
        self.check.value = _lines_html([m.check.text()] if m.check is not None else [])


# -- timeline -------------------------------------------------------------------------------------------------------


class TimelineView(_WidgetBase):
    """The active timeline: instants with action and state; compaction plans expand to operations, logs and links.

    Example:
        >>> TimelineView(t)  # doctest: +SKIP
    """

    def __init__(self, table: HudiTable) -> None:
        self.model = TimelineModel(table)
        self.table_html = _styled(W.HTML(), "evt-timeline-table")
        self.refresh_button = _styled(W.Button(description="Refresh", icon="refresh"), "evt-timeline-refresh")
        self.view = _styled(
            W.VBox([W.HBox([W.HTML("<b>Timeline</b>"), self.refresh_button]), self.table_html]), "evt-timeline"
        )
        self.refresh_button.on_click(lambda _: self.refresh())
        self._render()

    def refresh(self) -> None:
        """Re-read the timeline."""
        self.model.refresh()
        self._render()

    def _render(self) -> None:
        rows = []
        for r in self.model.rows:
            plan = ""
            if r.plan is not None:
                p = r.plan
                ops = "".join(
                    f"<tr><td>{_esc(o['partition_path'] or '-')}</td><td>{_esc(o['file_id'])}</td>"
                    f"<td>{_esc(o['base_instant'])}</td><td>{_esc(len(o['log_files']))}</td>"
                    f"<td>{_esc('; '.join(o['log_files']))}</td><td>{_esc('; '.join(o['links']) or '-')}</td></tr>"
                    for o in p.operation_rows
                )
                plan = (
                    f'<details class="evt-timeline-plan"><summary>plan: {p.operations} operation(s), '
                    f"{p.log_files} log file(s), {p.links} link(s), T = {_esc(format_ms(p.threshold_ms))}, "
                    f"{_esc(p.strategy)}, links {_esc(p.link_mode)}/{_esc(p.link_timing)}</summary>"
                    '<table class="evt-table"><tr><th>partition</th><th>file group</th><th>base instant</th>'
                    f"<th>logs</th><th>log files</th><th>links</th></tr>{ops}</table></details>"
                )
            css = ' class="evt-instant-pending"' if r.pending else ""
            rows.append(
                f"<tr{css}><td>{_esc(r.time)}</td><td>{_esc(r.action)}</td><td>{_esc(r.state)}</td>"
                f"<td>{_esc(r.completion_time)}</td><td>{plan}</td></tr>"
            )
        head = "<tr><th>instant</th><th>action</th><th>state</th><th>completed</th><th>plan</th></tr>"
        self.table_html.value = f'{_STYLE}<table class="evt-table">{head}{"".join(rows)}</table>'
