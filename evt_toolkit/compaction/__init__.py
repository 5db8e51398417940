"""Compaction: strategies, triggers, the prefix rule, previews and plans (design §2.3).

The decision layer is pure — :mod:`~evt_toolkit.compaction.model` records in, decisions out — and unit-tested on
synthetic slices; only :mod:`~evt_toolkit.compaction.event_times` reads a table.

Example:
    >>> from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, preview
    >>> preview([], EventTimeBasedCompactionStrategy(data_latency=0)).summary.slices_selected
    0
"""

from evt_toolkit.compaction.model import (
    LogFileInfo,
    OperationSelection,
    SliceInfo,
    log_files_table,
    slices_table,
)
from evt_toolkit.compaction.plan import (
    allocate_link_names,
    build_plan,
    encode_plan,
    next_write_version_after_links,
)
from evt_toolkit.compaction.prefix import explain_prefix, prefix_lengths, select_prefix
from evt_toolkit.compaction.preview import CompactionPreview, PreviewModel, PreviewSummary, preview
from evt_toolkit.compaction.strategy import (
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
)
from evt_toolkit.compaction.trigger import (
    CompactionTriggerStrategy,
    TimelineFacts,
    TriggerDecision,
    check_can_schedule,
    should_compact,
)

__all__ = [
    "BoundedIOCompactionStrategy",
    "CompactionPreview",
    "CompactionStrategy",
    "CompactionStrategyError",
    "CompactionTriggerStrategy",
    "DayBasedCompactionStrategy",
    "EventTimeBasedCompactionStrategy",
    "InvalidThresholdError",
    "LogFileInfo",
    "LogFileNumBasedCompactionStrategy",
    "LogFileSizeBasedCompactionStrategy",
    "OperationSelection",
    "PreviewModel",
    "PreviewSummary",
    "SliceInfo",
    "TimelineFacts",
    "TriggerDecision",
    "UnBoundedCompactionStrategy",
    "allocate_link_names",
    "build_plan",
    "capture_metrics",
    "check_can_schedule",
    "encode_plan",
    "explain_prefix",
    "log_files_table",
    "next_write_version_after_links",
    "prefix_lengths",
    "preview",
    "select_prefix",
    "should_compact",
    "slices_table",
]
