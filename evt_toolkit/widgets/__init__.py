"""JupyterLab widgets for event-time compaction: inspect log headers, plot min event times, preview a threshold,
run a compaction and read the timeline.

Each widget is a thin ipywidgets/plotly view (``.view``) over a plain model (``.model``,
:mod:`evt_toolkit.widgets.models`) that holds the logic and is tested without a browser. Plotly's ``FigureWidget``
needs ``anywidget``.

Example:
    >>> import evt_toolkit as evt
    >>> from evt_toolkit.widgets import ThresholdPreview
    >>> ThresholdPreview(evt.HudiTable.open("/data/flights"))  # doctest: +SKIP
"""

from evt_toolkit.widgets.models import (
    CompactionRunnerModel,
    DistributionModel,
    LogHeaderModel,
    ThresholdPreviewModel,
    TimelineModel,
)
from evt_toolkit.widgets.views import (
    CompactionRunner,
    EventTimeDistribution,
    LogHeaderInspector,
    ThresholdPreview,
    TimelineView,
)

__all__ = [
    "CompactionRunner",
    "CompactionRunnerModel",
    "DistributionModel",
    "EventTimeDistribution",
    "LogHeaderInspector",
    "LogHeaderModel",
    "ThresholdPreview",
    "ThresholdPreviewModel",
    "TimelineModel",
    "TimelineView",
]
