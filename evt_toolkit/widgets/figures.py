"""Plotly figures drawn from the widget models: builders create a ``FigureWidget``, updaters refresh it in place.

Updaters change trace data and layout inside ``fig.batch_update()`` so the browser receives one message per
change rather than one per property. Figures are pure functions of model data; the models decide what to show. An
empty model gives an empty chart with the reason written on it, never a bare −1..1 axis.

Example:
    >>> from evt_toolkit.widgets.models import DistributionModel
    >>> m = DistributionModel(t)  # doctest: +SKIP
    >>> fig = distribution_figure(m)  # doctest: +SKIP
    >>> m.set_threshold("2013-01-01T12:00Z"); update_distribution_figure(fig, m)  # doctest: +SKIP
"""

from __future__ import annotations

import textwrap
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from evt_toolkit.widgets.models import (
    MAX_REPLAY_SLICES,
    DistributionModel,
    ThresholdPreviewModel,
    TimelineModel,
    format_duration,
    format_ms,
    ms_to_timestamps,
)

__all__ = [
    "cost_figure",
    "distribution_figure",
    "histogram_figure",
    "preview_figure",
    "timeline_figure",
    "update_cost_figure",
    "update_distribution_figure",
    "update_histogram_figure",
    "update_preview_figure",
    "update_timeline_figure",
]

_THRESHOLD_COLOR = "#d62728"
_SELECTED_COLOR = "#1f77b4"
_FORCED_COLOR = "#ff7f0e"
_KEPT_COLOR = "#9e9e9e"
_LINE_COLOR = "rgba(120,120,120,0.35)"
_MIB = 1024 * 1024
_ACTION_COLORS = {
    "deltacommit": "#1f77b4",
    "commit": "#2ca02c",
    "compaction": "#2ca02c",
    "logcompaction": "#17becf",
    "clean": "#7f7f7f",
    "rollback": "#d62728",
    "replacecommit": "#9467bd",
    "clustering": "#9467bd",
    "savepoint": "#8c564b",
    "indexing": "#bcbd22",
}
_TITLE_FONT = {"size": 14}


def _wrap(text: str, width: int = 110) -> str:
    """A long title broken into lines (plotly titles do not wrap; a clipped title hides the numbers)."""
    return "<br>".join(textwrap.wrap(text, width)) or text


def _empty_annotation(text: str) -> list[dict[str, Any]]:
    return [
        {
            "text": _wrap(text, 90),
            "xref": "paper",
            "yref": "paper",
            "x": 0.5,
            "y": 0.5,
            "showarrow": False,
            "font": {"size": 13, "color": "#555"},
        }
    ]


def _empty_axes() -> dict[str, Any]:
    hidden = {"visible": False}
    return {"xaxis": hidden, "yaxis": hidden}


def _threshold_line(threshold_ms: int | None, *, axis: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A dashed line at T across the plot (``axis`` is the data axis T lies on: ``x`` or ``y``), and its label."""
    if threshold_ms is None:
        return [], []
    v = ms_to_timestamps([threshold_ms]).iloc[0]
    line = {"color": _THRESHOLD_COLOR, "width": 2, "dash": "dash"}
    label = {"text": f"T = {format_ms(threshold_ms)}", "showarrow": False, "font": {"color": _THRESHOLD_COLOR}}
    if axis == "x":
        shape = {"type": "line", "xref": "x", "yref": "paper", "x0": v, "x1": v, "y0": 0, "y1": 1, "line": line}
        note = {**label, "x": v, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom"}
    else:
        shape = {"type": "line", "yref": "y", "xref": "paper", "y0": v, "y1": v, "x0": 0, "x1": 1, "line": line}
        note = {**label, "y": v, "x": 1, "xref": "paper", "yref": "y", "xanchor": "right", "yanchor": "bottom"}
    return [shape], [note]


def _replace(fig: go.FigureWidget, traces: list[go.BaseTraceType], layout: dict[str, Any]) -> None:
    """Swap every trace and the layout in one batch (trace types and counts change between states)."""
    shapes, annotations = layout.pop("shapes", []), layout.pop("annotations", [])
    with fig.batch_update():
        fig.data = ()
        if traces:
            fig.add_traces(traces)
        fig.update_layout(**layout)
        # update_layout merges lists element-wise, so an empty list would not remove an earlier line or label.
        fig.layout.shapes = shapes
        fig.layout.annotations = annotations


# -- distribution: replay order ---------------------------------------------------------------------------------------


def _replay_traces(model: DistributionModel) -> list[go.BaseTraceType]:
    pts = model.points
    shown = set(model.replay_slices())
    pts = pts[pts["slice_index"].isin(shown)]
    traces: list[go.BaseTraceType] = []
    for _, g in pts.groupby("slice_index", sort=True):
        traces.append(
            go.Scatter(
                x=g["position"] + 1,
                y=g["time"],
                mode="lines",
                line={"color": _LINE_COLOR, "width": 1},
                hoverinfo="skip",
                showlegend=False,
                name=str(g["slice"].iloc[0]),
            )
        )

    def markers(frame: pd.DataFrame, name: str, color: str, symbol: str = "circle") -> go.Scatter:
        return go.Scatter(
            x=frame["position"] + 1,
            y=frame["time"],
            mode="markers",
            name=name,
            marker={"color": color, "size": 6, "symbol": symbol},
            customdata=frame[["slice", "log_file", "min_event_time_source"]].to_numpy() if len(frame) else None,
            hovertemplate="%{customdata[0]} · log %{x}<br>%{customdata[1]}<br>min event time %{y}"
            "<br>source %{customdata[2]}<extra>" + name + "</extra>",
        )

    if model.threshold_ms is None:
        traces.append(markers(pts, "log file", _SELECTED_COLOR))
    else:
        traces.append(markers(pts[pts["selected"]], "min ≤ T: compacted", _SELECTED_COLOR))
        traces.append(markers(pts[pts["forced"]], "min > T, forced in by the prefix rule", _FORCED_COLOR))
        traces.append(markers(pts[~pts["selected"] & ~pts["forced"]], "min > T: kept (linked)", _KEPT_COLOR))
    late = pts[pts["out_of_order"]]
    traces.append(
        go.Scatter(
            x=late["position"] + 1,
            y=late["time"],
            mode="markers",
            name="out of order (older than a log before it)",
            marker={"color": "rgba(0,0,0,0)", "size": 12, "line": {"color": _THRESHOLD_COLOR, "width": 1.5}},
            hoverinfo="skip",
        )
    )
    return traces


def _replay_layout(model: DistributionModel) -> dict[str, Any]:
    c = model.counts()
    shown = len(model.replay_slices())
    title = (
        f"Min event time of each log, in replay order, per file slice ({shown:,} of {c['slices']:,} slices): "
        f"{c['out_of_order']:,} out-of-order log(s) in {c['slices_out_of_order']:,} slice(s)"
    )
    if shown < len(model.points["slice_index"].unique()):
        title += f" — the {MAX_REPLAY_SLICES} slices with the most out-of-order logs"
    if model.threshold_ms is not None:
        title += f"; at T: {c['selected']:,} ≤ T, {c['forced']:,} forced"
    shapes, notes = _threshold_line(model.threshold_ms, axis="y")
    return {
        "title": {"text": _wrap(title), "font": _TITLE_FONT},
        "xaxis": {"title": {"text": "log file # in its slice (replay order)"}, "type": "linear", "visible": True},
        "yaxis": {"title": {"text": "min event time (UTC)"}, "type": "date", "visible": True, "autorange": True},
        "height": 480,
        "margin": {"l": 70, "r": 20, "t": 90, "b": 50},
        "showlegend": True,
        "legend": {"orientation": "h", "y": -0.18, "x": 0},
        "shapes": shapes,
        "annotations": notes,
    }


def _heatmap_traces(model: DistributionModel) -> list[go.BaseTraceType]:
    hm = model.heatmap()
    return [
        go.Heatmap(
            z=hm.to_numpy(),
            x=list(hm.columns),
            y=list(hm.index),
            colorscale="Viridis",
            colorbar={"title": {"text": "log files"}},
            hovertemplate="slice %{y}<br>%{x}<br>%{z} log file(s)<extra></extra>",
            name="log files",
        )
    ]


def _heatmap_layout(model: DistributionModel) -> dict[str, Any]:
    shapes, notes = _threshold_line(model.threshold_ms, axis="x")
    return {
        "title": {
            "text": f"Log files per file slice and min event time ({len(model.slices):,} slices)",
            "font": _TITLE_FONT,
        },
        "xaxis": {"title": {"text": "min event time (UTC)"}, "type": "date", "visible": True},
        "yaxis": {"title": {"text": "file slice"}, "type": "category", "autorange": "reversed", "visible": True},
        "height": 600,
        "margin": {"l": 200, "r": 20, "t": 60, "b": 50},
        "showlegend": False,
        "shapes": shapes,
        "annotations": notes,
    }


def _distribution_state(model: DistributionModel) -> tuple[list[go.BaseTraceType], dict[str, Any]]:
    if model.empty_reason is not None:
        return [], {
            "title": {"text": "Min event time of each log file", "font": _TITLE_FONT},
            **_empty_axes(),
            "height": 260,
            "shapes": [],
            "annotations": _empty_annotation(model.empty_reason),
        }
    if model.use_heatmap:
        return _heatmap_traces(model), _heatmap_layout(model)
    return _replay_traces(model), _replay_layout(model)


def distribution_figure(model: DistributionModel) -> go.FigureWidget:
    """Per slice, the min event time of each log against its replay position (or a slice × time heatmap for large
    tables): out-of-order logs ringed, T as a dashed line, logs compacted, forced and kept coloured."""
    fig = go.FigureWidget()
    _replace(fig, *_distribution_state(model))
    return fig


def update_distribution_figure(fig: go.FigureWidget, model: DistributionModel) -> None:
    """Redraw after a refresh, a mode switch or a new threshold."""
    _replace(fig, *_distribution_state(model))


# -- distribution: histogram ------------------------------------------------------------------------------------------


def _histogram_state(model: DistributionModel, bins: int = 50) -> tuple[list[go.BaseTraceType], dict[str, Any]]:
    if model.empty_reason is not None:
        return [], {"height": 120, **_empty_axes(), "shapes": [], "annotations": [], "title": {"text": ""}}
    h = model.histogram(bins)
    width = (h["end_ms"] - h["start_ms"]).astype("float64").to_numpy()
    bar = go.Bar(
        x=h["start"],
        y=h["count"],
        width=width,
        offset=0,
        marker={"color": _SELECTED_COLOR},
        name="log files",
        hovertemplate="from %{x}: %{y} log file(s)<extra></extra>",
    )
    shapes, notes = _threshold_line(model.threshold_ms, axis="x")
    bin_width = format_duration(model.bin_width_ms(bins))
    return [bar], {
        "title": {
            "text": f"Log files by min event time ({bins} equal bins of {bin_width} across the range)",
            "font": _TITLE_FONT,
        },
        "xaxis": {"title": {"text": "min event time (UTC)"}, "type": "date", "visible": True},
        "yaxis": {"title": {"text": "log files"}, "visible": True},
        "height": 300,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "bargap": 0.05,
        "showlegend": False,
        "shapes": shapes,
        "annotations": notes,
    }


def histogram_figure(model: DistributionModel) -> go.FigureWidget:
    """Log files by min event time, the bin width in the title, and the threshold line."""
    fig = go.FigureWidget()
    _replace(fig, *_histogram_state(model))
    return fig


def update_histogram_figure(fig: go.FigureWidget, model: DistributionModel) -> None:
    """Redraw bars and the threshold line."""
    _replace(fig, *_histogram_state(model))


# -- threshold preview: bars per slice ---------------------------------------------------------------------------------


def _preview_title(model: ThresholdPreviewModel) -> str:
    t = model.totals
    head = f"{t['selected_logs']:,} of {t['logs_total']:,} log files compacted ({t['forced_logs']:,} forced)"
    if model.strategy_name == "event_time":
        head += f" at T = {format_ms(t['threshold_ms'])}"
    else:
        head += f" by {t['strategy']}"
    return head


def _preview_state(model: ThresholdPreviewModel) -> tuple[list[go.BaseTraceType], dict[str, Any]]:
    if model.empty_reason is not None:
        return [], {
            "title": {"text": "Logs a compaction would take, per file slice", "font": _TITLE_FONT},
            **_empty_axes(),
            "height": 220,
            "shapes": [],
            "annotations": _empty_annotation(model.empty_reason),
        }
    frame = model.chart_frame()
    by_t = frame["compacted"] - frame["forced"]
    traces = [
        go.Bar(x=frame["label"], y=by_t, name="compacted: min ≤ T", marker={"color": _SELECTED_COLOR}),
        go.Bar(
            x=frame["label"],
            y=frame["forced"],
            name="compacted: forced by the prefix rule",
            marker={"color": _FORCED_COLOR},
        ),
        go.Bar(
            x=frame["label"], y=frame["kept"], name="kept (linked into the new slice)", marker={"color": _KEPT_COLOR}
        ),
    ]
    if model.strategy_name != "event_time":
        traces[0].name = "compacted"
    return traces, {
        "barmode": "stack",
        "title": {"text": _wrap(_preview_title(model)), "font": _TITLE_FONT, "y": 0.98, "yanchor": "top"},
        "xaxis": {"title": {"text": "file slice"}, "type": "category", "tickangle": -45, "visible": True},
        "yaxis": {"title": {"text": "log files"}, "visible": True},
        "height": 500,
        "margin": {"l": 60, "r": 20, "t": 110, "b": 150},
        "legend": {"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"},
        "shapes": [],
        "annotations": [],
    }


def preview_figure(model: ThresholdPreviewModel) -> go.FigureWidget:
    """Stacked bars per file slice (or partition, for large tables): logs compacted by T, forced, and kept."""
    fig = go.FigureWidget()
    _replace(fig, *_preview_state(model))
    return fig


def update_preview_figure(fig: go.FigureWidget, model: ThresholdPreviewModel) -> None:
    """Refresh the bars after a threshold or strategy change, in one batch."""
    traces, layout = _preview_state(model)
    if len(fig.data) == len(traces) == 3:
        # Same traces: change their data only, so the browser animates bars instead of redrawing the chart.
        with fig.batch_update():
            for old, new in zip(fig.data, traces, strict=True):
                old.x, old.y, old.name = new.x, new.y, new.name
            fig.layout.title.text = layout["title"]["text"]
        return
    _replace(fig, traces, layout)


# -- threshold preview: cost against T -----------------------------------------------------------------------------


def _cost_state(model: ThresholdPreviewModel) -> tuple[list[go.BaseTraceType], dict[str, Any]]:
    if model.empty_reason is not None:
        return [], {"height": 120, **_empty_axes(), "shapes": [], "annotations": [], "title": {"text": ""}}
    curve = model.cost_curve()
    x = curve["threshold"]

    def line(col: str, name: str, color: str, dash: str = "solid") -> go.Scatter:
        return go.Scatter(
            x=x,
            y=curve[col] / _MIB,
            mode="lines",
            name=name,
            line={"color": color, "dash": dash},
            customdata=curve[["logs_compacted", "forced", "links"]].to_numpy(),
            hovertemplate="T %{x}<br>%{y:.2f} MiB<br>%{customdata[0]:,} logs compacted, %{customdata[1]:,} forced, "
            "%{customdata[2]:,} links<extra>" + name + "</extra>",
        )

    traces = [
        line("bytes_read", "read", _SELECTED_COLOR),
        line("written_total", "written (base files + link copies)", _FORCED_COLOR),
        line("link_bytes_copied", "link copies alone", _KEPT_COLOR, "dot"),
        line("full_bytes_read", "full compaction: read", _SELECTED_COLOR, "dash"),
        line("full_bytes_written", "full compaction: written", _FORCED_COLOR, "dash"),
    ]
    shapes, notes = _threshold_line(model.threshold_ms if model.strategy_name == "event_time" else None, axis="x")
    return traces, {
        "title": {
            "text": "What an event-time compaction costs as T moves (MiB), against a full compaction",
            "font": _TITLE_FONT,
        },
        "xaxis": {"title": {"text": "threshold T (UTC)"}, "type": "date", "visible": True},
        "yaxis": {"title": {"text": "MiB"}, "visible": True, "rangemode": "tozero"},
        "height": 380,
        "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
        "legend": {"orientation": "h", "y": -0.2, "x": 0},
        "shapes": shapes,
        "annotations": notes,
    }


def cost_figure(model: ThresholdPreviewModel) -> go.FigureWidget:
    """Bytes read and written by the event-time plan for T across the data, full compaction as dashed lines."""
    fig = go.FigureWidget()
    _replace(fig, *_cost_state(model))
    return fig


def update_cost_figure(fig: go.FigureWidget, model: ThresholdPreviewModel) -> None:
    """Move the T line (the curve itself depends on the table only)."""
    if model.empty_reason is not None or not fig.data:
        _replace(fig, *_cost_state(model))
        return
    shapes, notes = _threshold_line(model.threshold_ms if model.strategy_name == "event_time" else None, axis="x")
    with fig.batch_update():
        fig.layout.shapes = shapes
        fig.layout.annotations = notes


# -- timeline ---------------------------------------------------------------------------------------------------------


def _timeline_state(model: TimelineModel) -> tuple[list[go.BaseTraceType], dict[str, Any]]:
    frame = model.chart_frame()
    if frame.empty:
        return [], {
            "title": {"text": "Timeline", "font": _TITLE_FONT},
            **_empty_axes(),
            "height": 160,
            "shapes": [],
            "annotations": _empty_annotation("the timeline has no instants"),
        }
    traces: list[go.BaseTraceType] = []
    for (action, pending), g in frame.groupby(["action", "pending"], sort=True):
        color = _ACTION_COLORS.get(str(action), "#444")
        traces.append(
            go.Scatter(
                x=g["requested"],
                y=g["action"],
                mode="markers",
                name=f"{action} ({'pending' if pending else 'completed'})",
                marker={
                    "color": "white" if pending else color,
                    "line": {"color": color, "width": 2},
                    "size": 13 if action in ("compaction", "commit", "clean", "rollback") else 8,
                    "symbol": "diamond" if action in ("compaction", "commit") else "circle",
                },
                customdata=g[["label"]].to_numpy(),
                hovertemplate="%{customdata[0]}<extra></extra>",
            )
        )
    counts = model.counts()
    parts = [f"{n:,} {a}" for a, n in counts.items() if a != "pending"]
    title = f"Timeline: {', '.join(parts)}; {counts['pending']:,} pending"
    return traces, {
        "title": {"text": _wrap(title), "font": _TITLE_FONT},
        "xaxis": {"title": {"text": "instant time (requested)"}, "type": "date", "visible": True},
        "yaxis": {"title": {"text": ""}, "type": "category", "visible": True},
        "height": 160 + 40 * frame["action"].nunique(),
        "margin": {"l": 110, "r": 20, "t": 60, "b": 50},
        "legend": {"orientation": "h", "y": -0.35, "x": 0},
        "shapes": [],
        "annotations": [],
    }


def timeline_figure(model: TimelineModel) -> go.FigureWidget:
    """Every instant at its time, one lane per action; pending instants hollow; hover shows compaction plans."""
    fig = go.FigureWidget()
    _replace(fig, *_timeline_state(model))
    return fig


def update_timeline_figure(fig: go.FigureWidget, model: TimelineModel) -> None:
    """Redraw after a refresh."""
    _replace(fig, *_timeline_state(model))
