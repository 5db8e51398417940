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
    cost_figure,
    distribution_figure,
    histogram_figure,
    preview_figure,
    timeline_figure,
    update_cost_figure,
    update_distribution_figure,
    update_histogram_figure,
    update_preview_figure,
    update_timeline_figure,
)
from evt_toolkit.widgets.models import (
    BLOCK_FILTERS,
    BLOCK_SORTS,
    BlockRow,
    CompactionRunnerModel,
    DistributionModel,
    LogHeaderModel,
    ThresholdPreviewModel,
    TimelineModel,
    format_bytes,
    format_count,
    format_duration,
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
.evt-scroll { max-height: 420px; overflow: auto; border: 1px solid #ddd; }
.evt-table { border-collapse: collapse; font-size: 12px; }
.evt-table th, .evt-table td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; white-space: nowrap;
  vertical-align: top; }
.evt-table th { background: #f4f4f4; }
.evt-scroll .evt-table thead th { position: sticky; top: 0; }
.evt-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
.evt-block-uncommitted td { background: #fff3cd; color: #7a5b00; }
.evt-block-corrupt td { background: #f8d7da; color: #842029; }
.evt-instant-pending td { background: #e7f1ff; }
.evt-warning { color: #8a4b00; }
.evt-muted { color: #666; }
</style>"""

#: Rows the inspector table draws at most; the filter narrows larger scopes.
MAX_TABLE_ROWS = 1000
_WIDE = {"description_width": "initial"}


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
    # ipywidgets give HTML a line height of one widget row (28 px); text reads better closer together.
    body = "".join(f"<div>{html.escape(line)}</div>" for line in lines)
    return f'<div class="{css}" style="line-height: 1.45; margin: 2px 0">{body}</div>'


class _WidgetBase:
    """``.view`` display plumbing shared by every widget."""

    view: W.VBox

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Delegating lets a notebook cell that ends with the object display its view.
        return self.view._repr_mimebundle_(**kwargs)


# -- log header inspector -------------------------------------------------------------------------------------------


class LogHeaderInspector(_WidgetBase):
    """Every log block of a file slice — or of the whole table — in one sortable table, and any block's full header.

    Choose a slice (partition → file group → slice) or the whole table; sort by replay order, min event time,
    instant, records, size, type or status; filter to data, delete or command blocks, or to the blocks readers
    skip. Blocks of uncommitted (inflight, failed, rolled-back) writes and corrupt blocks are coloured. The block
    selector opens a block's header with its ``SCHEMA`` collapsed to one line (expand it to read the JSON).

    Args:
        table: the table.
        event_time_field: field whose min event time is shown; defaults to the table's.
        whole_table: start on every block of the table instead of the first slice.

    Example:
        >>> LogHeaderInspector(t, whole_table=True)  # doctest: +SKIP
    """

    def __init__(self, table: HudiTable, event_time_field: str | None = None, *, whole_table: bool = False) -> None:
        self.model = LogHeaderModel(table, event_time_field, whole_table=whole_table)
        wide = W.Layout(width="95%")
        self.scope = _styled(
            W.ToggleButtons(
                options=[("one file slice", "slice"), ("whole table (latest slices)", "table")],
                value="table" if whole_table else "slice",
                description="show",
                style={**_WIDE, "button_width": "200px"},
            ),
            "evt-inspector-scope",
        )
        self.partition = _styled(W.Dropdown(description="partition", layout=wide), "evt-inspector-partition")
        self.file_group = _styled(W.Dropdown(description="file group", layout=wide), "evt-inspector-file-group")
        self.file_slice = _styled(W.Dropdown(description="file slice", layout=wide), "evt-inspector-file-slice")
        self.sort = _styled(
            W.Dropdown(
                options=[(label, key) for key, (label, _) in BLOCK_SORTS.items()],
                value="replay",
                description="sort by",
            ),
            "evt-inspector-sort",
        )
        self.descending = _styled(
            W.ToggleButton(value=False, description="descending", icon="sort-amount-desc"), "evt-inspector-descending"
        )
        self.filter = _styled(
            W.Dropdown(
                options=[(label, key) for key, (label, _) in BLOCK_FILTERS.items()],
                value="all",
                description="show",
                layout=W.Layout(width="420px"),
            ),
            "evt-inspector-filter",
        )
        self.refresh_button = _styled(W.Button(description="Refresh", icon="refresh"), "evt-inspector-refresh")
        self.summary = _styled(W.HTML(), "evt-inspector-summary")
        self.blocks = _styled(W.HTML(), "evt-inspector-blocks")
        self.block = _styled(
            W.Dropdown(description="block header", layout=W.Layout(width="95%"), style=_WIDE), "evt-inspector-block"
        )
        self.header = _styled(W.HTML(), "evt-inspector-header")
        self.view = _styled(
            W.VBox(
                [
                    W.HTML("<b>Log blocks</b>"),
                    self.scope,
                    self.partition,
                    self.file_group,
                    self.file_slice,
                    W.HBox([self.sort, self.descending, self.filter, self.refresh_button]),
                    self.summary,
                    self.blocks,
                    self.block,
                    self.header,
                ]
            ),
            "evt-inspector",
        )
        self._syncing = False
        for level, widget in (
            ("partition", self.partition),
            ("file_id", self.file_group),
            ("base_instant", self.file_slice),
        ):
            widget.observe(lambda change, lv=level: self._on_level(lv, change), names="value")
        self.scope.observe(lambda _: self._on_scope(), names="value")
        self.sort.observe(lambda _: self._on_sort(), names="value")
        self.descending.observe(lambda _: self._on_sort(), names="value")
        self.filter.observe(lambda _: self._on_filter(), names="value")
        self.block.observe(lambda _: self._render_header(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self._render()

    # -- public -------------------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the table (new writes, a compaction) and redraw."""
        self.model.refresh()
        self._render()

    def select(self, **path: Any) -> None:
        """Select a scope programmatically: ``partition=``, ``file_id=``, ``base_instant=``, ``whole_table=``."""
        self.model.select(**path)
        self._render()

    def show_block(self, key: str) -> None:
        """Open one block's header (its key, :attr:`BlockRow.key`)."""
        self.block.value = key

    # -- events -------------------------------------------------------------------------------------------------------
    def _on_level(self, level: str, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        sel = self.model.selected
        current: dict[str, Any] = {"partition": sel.partition, "file_id": sel.file_id, "base_instant": sel.base_instant}
        current[level] = change["new"]
        # Levels below the one changed start again from their first option.
        for lv in LogHeaderModel.LEVELS[LogHeaderModel.LEVELS.index(level) + 1 :]:
            current[lv] = None
        self.model.select(**current, whole_table=False)
        self._render()

    def _on_scope(self) -> None:
        if self._syncing:
            return
        s = self.model.selected
        self.model.select(s.partition, s.file_id, s.base_instant, whole_table=self.scope.value == "table")
        self._render()

    def _on_sort(self) -> None:
        self.model.set_sort(self.sort.value, bool(self.descending.value))
        self._render()

    def _on_filter(self) -> None:
        self.model.set_filter(self.filter.value)
        self._render()

    # -- rendering ----------------------------------------------------------------------------------------------------
    def _render(self) -> None:
        m = self.model
        sel = m.selected
        self._syncing = True
        try:
            self.scope.value = "table" if sel.whole_table else "slice"
            self.partition.options = [(p or "(not partitioned)", p) for p in m.options["partition"]]
            self.partition.value = sel.partition
            self.file_group.options = m.options["file_id"]
            self.file_group.value = sel.file_id
            self.file_slice.options = [
                (f"{b} (latest)" if i == 0 else b, b) for i, b in enumerate(m.options["base_instant"])
            ]
            self.file_slice.value = sel.base_instant
            for w in (self.partition, self.file_group, self.file_slice):
                w.disabled = sel.whole_table
        finally:
            self._syncing = False
        self.summary.value = _lines_html(self._summary_lines())
        rows = m.visible_rows
        self.blocks.value = self._blocks_html(rows)
        keep = self.block.value
        options = [(self._block_label(r), r.key) for r in rows[:MAX_TABLE_ROWS]]
        self.block.options = options
        keys = [k for _, k in options]
        self.block.value = keep if keep in keys else (keys[0] if keys else None)
        self._render_header()

    def _summary_lines(self) -> list[str]:
        m = self.model
        sel = m.selected
        s = m.summary()
        if sel.whole_table:
            scope = f"the latest file slice of every file group ({len(m._groups):,})"
        elif sel.partition is None:
            return ["the table has no file slices"]
        else:
            base = m.base_file(sel.partition, sel.file_id or "", sel.base_instant or "")
            scope = f"file slice {sel.base_instant} of {sel.file_id} — base file: {base or 'none (log-only slice)'}"
        lines = [
            scope,
            f"log files: {s['log_files']:,}; blocks: {s['blocks']:,} ({s['data_blocks']:,} data, "
            f"{s['delete_blocks']:,} delete, {s['command_blocks']:,} command); records: {s['records']:,}; "
            f"{format_bytes(s['bytes'])}",
        ]
        if s["blocks"] == 0:
            lines.append("no log blocks here: every write of this scope is in base files (nothing to compact)")
        if s["min_event_time"] is not None:
            lines.append(
                f"min event times from {format_ms(s['min_event_time'])} to {format_ms(s['max_min_event_time'])} "
                f"(source: {', '.join(s['sources'])})"
            )
        if s["unknown_event_time"]:
            lines.append(f"{s['unknown_event_time']:,} data block(s) with no known min event time")
        if s["not_ok"]:
            lines.append(f"{s['not_ok']:,} block(s) readers skip (not committed, rolled back or corrupt)")
        return lines

    def _blocks_html(self, rows: list[BlockRow]) -> str:
        if not rows:
            return "<i>no log block matches</i>"
        whole = self.model.selected.whole_table
        arrow = " ▼" if self.model.descending else " ▲"
        cols = [
            ("replay", "#"),
            *([("partition", "partition"), ("file", "file group")] if whole else []),
            ("log", "log file (version_token)"),
            ("type", "type"),
            ("instant", "instant"),
            ("status", "status"),
            ("records", "records"),
            ("size", "size"),
            ("min_event_time", "min event time"),
            ("source", "source"),
            ("schema", "schema"),
        ]
        head = "".join(f"<th>{_esc(label)}{arrow if key == self.model.sort_by else ''}</th>" for key, label in cols)
        body = []
        for r in rows[:MAX_TABLE_ROWS]:
            css = {
                "uncommitted": "evt-block-uncommitted",
                "rolled_back": "evt-block-uncommitted",
                "corrupt": "evt-block-corrupt",
            }.get(r.status, "")
            cells = [
                f'<td class="num">{r.replay + 1}</td>',
                *([f"<td>{_esc(r.partition or '-')}</td>", f"<td>{_esc(r.file_id[:13])}</td>"] if whole else []),
                f'<td title="{_esc(r.log_file)}">{_esc(r.log)}</td>',
                f"<td>{_esc(r.block_type)}{_esc(' ' + r.command_type) if r.command_type else ''}</td>",
                f"<td>{_esc(r.instant_time)}</td>",
                f"<td>{_esc(r.status_text)}</td>",
                f'<td class="num">{format_count(r.record_count)}</td>',
                f'<td class="num">{_esc(format_bytes(r.size))}</td>',
                f"<td>{_esc(format_ms(r.min_event_time))}</td>",
                f"<td>{_esc(r.min_event_time_source)}</td>",
                f"<td>{r.schema_fields} fields</td>" if r.schema_fields else "<td>-</td>",
            ]
            body.append(f'<tr class="evt-block-row {css}" data-key="{_esc(r.key)}">{"".join(cells)}</tr>')
        more = (
            f'<div class="evt-muted">showing {MAX_TABLE_ROWS:,} of {len(rows):,} blocks — narrow them with the '
            "filter or a single slice</div>"
            if len(rows) > MAX_TABLE_ROWS
            else ""
        )
        return (
            f'{_STYLE}<div class="evt-scroll"><table class="evt-table evt-blocks-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>{more}"
        )

    @staticmethod
    def _block_label(r: BlockRow) -> str:
        where = f"{r.partition}/" if r.partition else ""
        return f"#{r.replay + 1} {where}{r.log} block {r.index} · {r.block_type} · {r.instant_time or '-'}"

    def _render_header(self) -> None:
        key = self.block.value
        if not key:
            self.header.value = ""
            return
        m = self.model
        row = m.row(key)
        details = m.header_details(key)
        body = "".join(
            f"<tr><th>{_esc(k)}</th><td><pre style='margin:0'>{_esc(v)}</pre></td></tr>" for k, v in details.items()
        )
        schema = m.schema_details(key)
        if schema is not None:
            summary, full = schema
            body += (
                f"<tr><th>SCHEMA</th><td><details class='evt-schema'><summary>{_esc(summary)}</summary>"
                f"<pre style='margin:0'>{_esc(full)}</pre></details></td></tr>"
            )
        facts = (
            f"{row.log_file} · block {row.index} at byte {row.offset:,} ({format_bytes(row.size)}) · "
            f"{row.status_text} · min event time {row.min_event_time_text}"
        )
        self.header.value = (
            f'{_STYLE}<div class="evt-block-header-full"><div class="evt-muted">{_esc(facts)}</div>'
            f'<table class="evt-table">{body}</table></div>'
        )


# -- event-time distribution ----------------------------------------------------------------------------------------


class EventTimeDistribution(_WidgetBase):
    """Per file slice, the min event time of each log against its replay position: out-of-order logs ringed, and
    with T the logs a compaction takes (blue), forces in by the prefix rule (orange) and keeps (grey). A histogram
    below counts logs by min event time; a slice × time heatmap replaces the lines for large tables.

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
            W.ToggleButtons(
                options=[("replay order per slice", "replay"), ("heatmap: slices × time", "heatmap")],
                value="heatmap" if self.model.use_heatmap else "replay",
                style={"button_width": "190px"},
            ),
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
        """``replay`` or ``heatmap``."""
        self.model.set_mode(mode)
        if self.mode.value != mode and mode in ("replay", "heatmap"):
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
        c = m.counts()
        if m.empty_reason is not None:
            self.info.value = _lines_html(
                [f"file slices: {c['slices']:,}; log files: {c['log_files']:,}", "nothing to plot: " + m.empty_reason]
            )
            return
        lines = [
            f"file slices: {c['slices']:,}; log files with a known min event time: {c['known']:,} of "
            f"{c['log_files']:,}" + (f" ({c['unknown']:,} with data but unknown)" if c["unknown"] else ""),
            f"out-of-order logs (older than a log replayed before them in their slice): {c['out_of_order']:,} in "
            f"{c['slices_out_of_order']:,} slice(s)",
        ]
        if m.threshold_ms is not None:
            lines.append(
                f"at T = {format_ms(m.threshold_ms)}: {c['selected']:,} log(s) with min ≤ T, {c['forced']:,} more "
                "forced in by the prefix rule"
            )
        html_lines = _lines_html(lines)
        if m.unit_hint:
            html_lines += _lines_html([m.unit_hint], "evt-warning")
        self.info.value = html_lines


# -- threshold preview -----------------------------------------------------------------------------------------------

_STRATEGY_LABELS = {
    "event_time": "event time ≤ T (partial compaction)",
    "log_file_size": "log file size (Hudi's default)",
    "log_file_num": "log file count",
    "unbounded": "unbounded (all slices)",
    "day_based": "day based (yyyy/MM/dd partitions)",
    "bounded_io": "bounded IO",
}
_MODE_OPTIONS = [
    ("explicit threshold T", "threshold"),
    ("data latency: T = now − value", "data_latency"),
    ("allowed lateness: T = max event time − value", "allowed_lateness"),
]
_MINUTE_MS = 60_000


class ThresholdPreview(_WidgetBase):
    """Move the threshold (or switch strategy) and see what a compaction would select, before scheduling it.

    Nothing is written. The stacked bars show per file slice the logs a plan would compact because their min event
    time is ≤ T, the ones the prefix rule forces in, and the ones it keeps; the totals compare the plan with a full
    compaction; the warnings say when copying the kept logs costs more than compacting everything, or when T lies
    outside the data; the cost chart shows bytes read and written for every T; the freshness line says what the RO
    view could promise.

    Args:
        table: the table (``None`` when ``slices`` are given).
        strategy: initial strategy (:data:`~evt_toolkit.widgets.models.STRATEGIES`).
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
        lo, hi = m.slider_range()
        # Minute steps: event times are rarely finer than that, and a millisecond slider is unusable.
        step = _MINUTE_MS if hi - lo >= 10 * _MINUTE_MS else 1
        self.slider = _styled(
            W.IntSlider(
                value=min(max(m.threshold_ms, lo), hi),
                min=lo,
                max=hi,
                step=step,
                description="threshold T",
                continuous_update=False,  # one recompute per release, not per pixel dragged
                readout=False,
                layout=W.Layout(width="65%"),
            ),
            "evt-threshold-slider",
        )
        self.threshold_label = _styled(W.HTML(), "evt-threshold-label")
        self.mode = _styled(
            W.Dropdown(
                options=_MODE_OPTIONS,
                value="threshold",
                description="T from",
                style=_WIDE,
                layout=W.Layout(width="420px"),
            ),
            "evt-threshold-mode",
        )
        self.mode_value = _styled(
            W.BoundedIntText(value=60, min=0, max=10**9, description="minutes", disabled=True),
            "evt-threshold-value",
        )
        self.strategy_select = _styled(
            W.Dropdown(
                options=[(_STRATEGY_LABELS.get(s, s), s) for s in m.strategy_choices],
                value=m.strategy_name,
                description="strategy",
                style=_WIDE,
                layout=W.Layout(width="480px"),
            ),
            "evt-strategy-select",
        )
        self.chart = _styled(preview_figure(m), "evt-preview-chart")
        self.cost = _styled(cost_figure(m), "evt-preview-cost")
        self.cost_box = W.VBox([self.cost])  # a plotly figure's own .layout is plotly's, so a box hides it
        self.totals = _styled(W.HTML(), "evt-preview-totals")
        self.warnings = _styled(W.HTML(), "evt-preview-warnings")
        self.freshness = _styled(W.HTML(), "evt-preview-freshness")
        self.error = _styled(W.HTML(), "evt-preview-error")
        self.notes = _styled(W.HTML(_lines_html(m.notes(), "evt-muted")), "evt-preview-notes")
        self.view = _styled(
            W.VBox(
                [
                    W.HTML(_STYLE),
                    self.strategy_select,
                    self.notes,
                    W.HBox([self.slider, self.threshold_label]),
                    W.HBox([self.mode, self.mode_value]),
                    self.error,
                    self.freshness,
                    self.warnings,
                    self.totals,
                    self.chart,
                    self.cost_box,
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
            self.error.value = f"<b>error:</b> {html.escape(str(exc))}"
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
        elif not self._guard(lambda: self.model.set_mode(mode, int(self.mode_value.value) * _MINUTE_MS)):
            self._syncing = True
            try:
                self.mode.value = self.model.threshold_mode
            finally:
                self._syncing = False
        else:
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
            # T outside the data's range (e.g. data latency from now) pins the slider to its end; the label and the
            # warnings say where T really is.
            self.slider.value = min(max(self.model.threshold_ms, self.slider.min), self.slider.max)
        finally:
            self._syncing = False

    def _render(self) -> None:
        m = self.model
        event_time = m.strategy_name == "event_time"
        empty = m.empty_reason is not None
        self.slider.disabled = empty or not event_time or m.threshold_mode != "threshold"
        self.mode.disabled = empty or not event_time
        self.mode_value.disabled = empty or not event_time or m.threshold_mode == "threshold"
        suffix = "" if event_time else " (not used by this strategy)"
        self.threshold_label.value = f"<span>T = {html.escape(format_ms(m.threshold_ms))}{suffix}</span>"
        update_preview_figure(self.chart, m)
        update_cost_figure(self.cost, m)
        _show(self.cost_box, event_time and not empty)
        self.totals.value = "" if empty else _lines_html(m.totals_lines(), "evt-totals")
        self.warnings.value = _lines_html(m.warnings(), "evt-warning")
        self.freshness.value = _lines_html([m.freshness_text])
        for fn in list(self._listeners):
            fn(m)


# -- compaction runner ----------------------------------------------------------------------------------------------

#: Files of an unschedule listed at most (the rest counted).
MAX_LISTED_FILES = 20


class CompactionRunner(_WidgetBase):
    """Schedule, run, validate or unschedule a compaction, with progress, freshness and an RO-vs-snapshot check.

    Each button is enabled only when its action fits the state (Run once a plan is scheduled, Unschedule while it
    has not run), and the next sensible action is highlighted. Errors are shown in the widget
    (``evt-runner-error``) and leave the table as it was; unschedule is a dry run unless the box is unticked, and
    its list of files is summarised by kind.

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
                placeholder="ISO time or epoch ms; empty: the strategy given",
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
        self.run_button = _styled(W.Button(description="Run", icon="play"), "evt-runner-run")
        self.validate_button = _styled(W.Button(description="Validate", icon="check"), "evt-runner-validate")
        self.unschedule_button = _styled(W.Button(description="Unschedule", icon="times"), "evt-runner-unschedule")
        self.buttons = {
            "schedule": self.schedule_button,
            "run": self.run_button,
            "validate": self.validate_button,
            "unschedule": self.unschedule_button,
        }
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
                    W.HBox(list(self.buttons.values())),
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
        try:
            self.model.schedule()
        finally:
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
            # Interrupted too: the buttons show what the model's state allows (unschedule a failed run), set
            # once by _render — never all enabled in between.
            if self.model.state == "done":
                self.progress.value = self.progress.max
            self._render()

    def validate(self) -> None:
        """Validate the scheduled or completed compaction."""
        self.model.validate()
        self._render()

    def unschedule(self) -> None:
        """Unschedule (a dry run while the box is ticked)."""
        try:
            self.model.unschedule(dry_run=bool(self.dry_run.value))
        finally:
            self._render()

    # -- rendering ----------------------------------------------------------------------------------------------------
    def _on_progress(self, event: ProgressEvent) -> None:
        done, total = self.model.progress_fraction()
        self.progress.max = max(total, 1)
        self.progress.value = min(done, self.progress.max)
        self.progress_label.value = html.escape(f"{event.stage}: {event.done:,}/{event.total:,} — {event.message}")

    def _set_busy(self, busy: bool) -> None:
        for b in self.buttons.values():
            b.disabled = busy

    def _render_buttons(self) -> None:
        enabled = self.model.enabled()
        nxt = self.model.next_action
        for action, button in self.buttons.items():
            button.disabled = not enabled[action]
            button.button_style = ("warning" if action == "unschedule" else "primary") if action == nxt else ""

    def _render(self) -> None:
        m = self.model
        self._render_buttons()
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
                f"plan {c.instant}: {c.operations:,} operation(s), {len(c.links):,} link(s), "
                f"T = {format_ms(c.threshold)}, links by {c.link_mode} at {c.link_timing}"
            )
        if m.result is not None:
            r = m.result
            lines.append(
                f"compacted log files: {r.log_files_compacted:,} ({format_bytes(r.log_bytes_compacted)}); "
                f"records written: {r.records_written:,}; bytes written: {format_bytes(r.bytes_written)}; "
                f"duration: {format_duration(r.duration_s * 1000)}"
            )
        if m.validation is not None:
            v = m.validation
            lines.append("validation: " + ("OK" if v.ok else "problems: " + "; ".join(v.problems)))
        files_html = ""
        if m.unschedule_report is not None:
            u = m.unschedule_report
            verb = "deleted" if u.deleted else "would delete"
            lines.append(f"unschedule {u.instant}: {verb} {m.files_summary(u.files_to_delete)}")
            files_html = self._files_html(u.files_to_delete)
        self.result.value = _lines_html(lines) + files_html
        self.freshness.value = _lines_html(m.freshness_lines())
        self.check.value = _lines_html([m.check.text()] if m.check is not None else [])

    def _files_html(self, files: Sequence[str]) -> str:
        if not files:
            return ""
        groups = CompactionRunnerModel.files_by_kind(files)
        parts = []
        for kind, names in groups.items():
            shown = "".join(f"<div><code>{_esc(n)}</code></div>" for n in names[:MAX_LISTED_FILES])
            more = (
                f'<div class="evt-muted">… {len(names) - MAX_LISTED_FILES:,} more</div>'
                if len(names) > MAX_LISTED_FILES
                else ""
            )
            parts.append(f"<details><summary>{len(names):,} {_esc(kind)}(s)</summary>{shown}{more}</details>")
        return '<div class="evt-runner-files">' + "".join(parts) + "</div>"


# -- timeline -------------------------------------------------------------------------------------------------------

#: Instants listed before the rest fold away.
MAX_LISTED_INSTANTS = 15


class TimelineView(_WidgetBase):
    """The active timeline: a chart with one lane per action (pending instants hollow, compactions as diamonds with
    their T on hover), and the instants newest first, compaction plans expanding to operations, logs and links.

    Example:
        >>> TimelineView(t)  # doctest: +SKIP
    """

    def __init__(self, table: HudiTable) -> None:
        self.model = TimelineModel(table)
        self.chart = _styled(timeline_figure(self.model), "evt-timeline-chart")
        self.table_html = _styled(W.HTML(), "evt-timeline-table")
        self.refresh_button = _styled(W.Button(description="Refresh", icon="refresh"), "evt-timeline-refresh")
        self.view = _styled(
            W.VBox([W.HBox([W.HTML("<b>Timeline</b>"), self.refresh_button]), self.chart, self.table_html]),
            "evt-timeline",
        )
        self.refresh_button.on_click(lambda _: self.refresh())
        self._render()

    def refresh(self) -> None:
        """Re-read the timeline."""
        self.model.refresh()
        update_timeline_figure(self.chart, self.model)
        self._render()

    def _row_html(self, r: Any) -> str:
        plan = ""
        if r.plan is not None:
            p = r.plan
            ops = "".join(
                f"<tr><td>{_esc(o['partition_path'] or '-')}</td><td>{_esc(o['file_id'])}</td>"
                f"<td>{_esc(o['base_instant'])}</td><td class='num'>{len(o['log_files']):,}</td>"
                f"<td class='num'>{len(o['links']):,}</td></tr>"
                for o in p.operation_rows
            )
            plan = (
                f'<details class="evt-timeline-plan"><summary>plan: {p.operations:,} operation(s), '
                f"{p.log_files:,} log file(s), {p.links:,} link(s), T = {_esc(format_ms(p.threshold_ms))}, "
                f"{_esc(p.strategy)}, links {_esc(p.link_mode)}/{_esc(p.link_timing)}</summary>"
                '<table class="evt-table"><tr><th>partition</th><th>file group</th><th>base instant</th>'
                f"<th>logs</th><th>links</th></tr>{ops}</table></details>"
            )
        css = ' class="evt-instant-pending"' if r.pending else ""
        return (
            f"<tr{css}><td>{_esc(r.time)}</td><td>{_esc(r.action)}</td><td>{_esc(r.state)}</td>"
            f"<td>{_esc(r.completion_time)}</td><td>{plan}</td></tr>"
        )

    def _render(self) -> None:
        rows = self.model.newest_first
        head = "<tr><th>instant</th><th>action</th><th>state</th><th>completed</th><th>plan</th></tr>"
        first = "".join(self._row_html(r) for r in rows[:MAX_LISTED_INSTANTS])
        older = rows[MAX_LISTED_INSTANTS:]
        rest = ""
        if older:
            body = "".join(self._row_html(r) for r in older)
            rest = (
                f"<details><summary>{len(older):,} older instant(s)</summary>"
                f'<table class="evt-table">{head}{body}</table></details>'
            )
        self.table_html.value = (
            f"{_STYLE}<div class='evt-muted'>newest first</div><table class=\"evt-table\">{head}{first}</table>{rest}"
        )
