"""Plotly figures drawn from the widget models: builders create a ``FigureWidget``, updaters refresh it in place.

Updaters change trace data and layout inside ``fig.batch_update()`` so the browser receives one message per
change rather than one per property. Figures are pure functions of model data; the models decide what to show.

Example:
    >>> from evt_toolkit.widgets.models import DistributionModel
    >>> m = DistributionModel(t)  # doctest: +SKIP
    >>> fig = distribution_figure(m)  # doctest: +SKIP
    >>> m.set_threshold("2013-01-01T12:00Z"); update_distribution_figure(fig, m)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from evt_toolkit.widgets.models import DistributionModel, ThresholdPreviewModel, format_ms, ms_to_timestamps

__all__ = [
    "distribution_figure",
    "histogram_figure",
    "preview_figure",
    "update_distribution_figure",
    "update_histogram_figure",
    "update_preview_figure",
]

_THRESHOLD_COLOR = "#d62728"
_COMPACTED_COLOR = "#1f77b4"
_KEPT_COLOR = "#ff7f0e"


def _threshold_shapes(threshold_ms: int | None, *, vertical: bool = True) -> list[dict[str, Any]]:
    """A dashed line at T spanning the plot (paper coordinates on the other axis)."""
    if threshold_ms is None:
        return []
    x = ms_to_timestamps([threshold_ms]).iloc[0]
    line = {"color": _THRESHOLD_COLOR, "width": 2, "dash": "dash"}
    if vertical:
        return [{"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": line}]
    return [{"type": "line", "yref": "y", "xref": "paper", "y0": x, "y1": x, "x0": 0, "x1": 1, "line": line}]


def _threshold_annotations(threshold_ms: int | None) -> list[dict[str, Any]]:
    if threshold_ms is None:
        return []
    x = ms_to_timestamps([threshold_ms]).iloc[0]
    return [
        {
            "x": x,
            "y": 1,
            "xref": "x",
            "yref": "paper",
            "text": f"T = {format_ms(threshold_ms)}",
            "showarrow": False,
            "yanchor": "bottom",
            "font": {"color": _THRESHOLD_COLOR},
        }
    ]


# -- distribution ---------------------------------------------------------------------------------------------------


def _distribution_traces(model: DistributionModel) -> list[go.BaseTraceType]:
    if model.use_heatmap:
        hm = model.heatmap()
        return [
            go.Heatmap(
                z=hm.to_numpy(),
                x=list(hm.columns),
                y=list(hm.index),
                colorscale="Viridis",
                colorbar={"title": "log files"},
                hovertemplate="slice %{y}<br>%{x}<br>%{z} log file(s)<extra></extra>",
                name="log files",
            )
        ]
    pts = model.points
    return [
        go.Box(
            x=pts["time"],
            y=pts["slice"],
            orientation="h",
            boxpoints="all",
            jitter=0.3,
            pointpos=0,
            marker={"size": 5},
            customdata=pts[["log_file", "min_event_time_source"]].to_numpy() if len(pts) else None,
            hovertemplate="%{customdata[0]}<br>min event time %{x}<br>source %{customdata[1]}<extra></extra>",
            name="log files",
        )
    ]


def _distribution_layout(model: DistributionModel) -> dict[str, Any]:
    n = len(model.slices)
    title = "Min event time of log files per file slice"
    if model.use_heatmap:
        title += f" (heatmap of {n} slices)"
    if len(model.unknown):
        title += f" — {len(model.unknown)} log file(s) with unknown min event time not shown"
    return {
        "title": {"text": title},
        "xaxis": {"title": {"text": "min event time (UTC)"}, "type": "date"},
        "yaxis": {"title": {"text": "file slice"}, "type": "category", "autorange": "reversed"},
        "height": max(320, min(900, 60 + 22 * n)) if not model.use_heatmap else 600,
        "margin": {"l": 220, "r": 20, "t": 60, "b": 50},
        "showlegend": False,
        "shapes": _threshold_shapes(model.threshold_ms),
        "annotations": _threshold_annotations(model.threshold_ms),
    }


def distribution_figure(model: DistributionModel) -> go.FigureWidget:
    """Strip/box per file slice (or a slice × time heatmap), with the threshold as a dashed line."""
    fig = go.FigureWidget(data=_distribution_traces(model))
    fig.update_layout(**_distribution_layout(model))
    return fig


def _apply_layout(fig: go.FigureWidget, layout: dict[str, Any]) -> None:
    # update_layout merges lists element-wise, so an empty shape list would not remove the threshold line.
    shapes, annotations = layout.pop("shapes"), layout.pop("annotations")
    fig.update_layout(**layout)
    fig.layout.shapes = shapes
    fig.layout.annotations = annotations


def update_distribution_figure(fig: go.FigureWidget, model: DistributionModel) -> None:
    """Redraw after a refresh, a mode switch or a new threshold."""
    kind = "heatmap" if model.use_heatmap else "box"
    if len(fig.data) != 1 or fig.data[0].type != kind:
        # Switching chart type replaces the trace; plotly cannot change a trace's type in place.
        fig.data = ()
        fig.add_traces(_distribution_traces(model))
        _apply_layout(fig, _distribution_layout(model))
        return
    new = _distribution_traces(model)[0]
    with fig.batch_update():
        trace = fig.data[0]
        for key in ("x", "y", "z", "customdata"):
            if key in new:
                trace[key] = new[key]
        _apply_layout(fig, _distribution_layout(model))


def _histogram_trace_data(model: DistributionModel) -> dict[str, Any]:
    h = model.histogram()
    width = (h["end_ms"] - h["start_ms"]).astype("float64").to_numpy()
    return {"x": h["start"], "y": h["count"], "width": width, "offset": 0}


def histogram_figure(model: DistributionModel) -> go.FigureWidget:
    """Log files by min event time, with the threshold line."""
    data = _histogram_trace_data(model)
    fig = go.FigureWidget(
        data=[go.Bar(**data, marker={"color": _COMPACTED_COLOR}, name="log files", hovertemplate="%{x}: %{y}")]
    )
    fig.update_layout(
        title={"text": "Log files by min event time"},
        xaxis={"title": {"text": "min event time (UTC)"}, "type": "date"},
        yaxis={"title": {"text": "log files"}},
        height=300,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        bargap=0.05,
        shapes=_threshold_shapes(model.threshold_ms),
        annotations=_threshold_annotations(model.threshold_ms),
    )
    return fig


def update_histogram_figure(fig: go.FigureWidget, model: DistributionModel) -> None:
    """Redraw bars and the threshold line."""
    data = _histogram_trace_data(model)
    with fig.batch_update():
        bar = fig.data[0]
        bar.x, bar.y, bar.width = data["x"], data["y"], data["width"]
        fig.layout.shapes = _threshold_shapes(model.threshold_ms)
        fig.layout.annotations = _threshold_annotations(model.threshold_ms)


# -- preview --------------------------------------------------------------------------------------------------------


def _preview_title(model: ThresholdPreviewModel) -> str:
    t = model.totals
    head = f"{t['strategy']}: {t['selected_logs']} of {t['logs_total']} log files compacted"
    if model.strategy_name == "event_time":
        head += f" at T = {format_ms(t['threshold_ms'])}"
    return head


def preview_figure(model: ThresholdPreviewModel) -> go.FigureWidget:
    """Stacked bars per file slice (or partition, for large tables): logs compacted vs kept."""
    frame = model.chart_frame()
    fig = go.FigureWidget(
        data=[
            go.Bar(x=frame["label"], y=frame["compacted"], name="compacted", marker={"color": _COMPACTED_COLOR}),
            go.Bar(x=frame["label"], y=frame["kept"], name="kept", marker={"color": _KEPT_COLOR}),
        ]
    )
    fig.update_layout(
        barmode="stack",
        title={"text": _preview_title(model)},
        xaxis={"title": {"text": "file slice"}, "type": "category", "tickangle": -45},
        yaxis={"title": {"text": "log files"}},
        height=420,
        margin={"l": 60, "r": 20, "t": 60, "b": 140},
        legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    )
    return fig


def update_preview_figure(fig: go.FigureWidget, model: ThresholdPreviewModel) -> None:
    """Refresh the bars after a threshold or strategy change, in one batch."""
    frame = model.chart_frame()
    with fig.batch_update():
        compacted, kept = fig.data[0], fig.data[1]
        compacted.x, compacted.y = frame["label"], frame["compacted"]
        kept.x, kept.y = frame["label"], frame["kept"]
        fig.layout.title.text = _preview_title(model)
