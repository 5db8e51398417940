"""evt_toolkit — event-time compaction for Apache Hudi Merge-On-Read tables.

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> t.file_slices()  # doctest: +SKIP
"""

from evt_toolkit.api import HudiTable
from evt_toolkit.errors import (
    CleanPolicyError,
    CompactionExecutionError,
    CompactionStrategyError,
    EventTimeError,
    EvtError,
    InvalidActionError,
    InvalidNameError,
    InvalidThresholdError,
    LogFormatError,
    MetadataDecodeError,
    MetadataTableError,
    ObjectExistsError,
    ObjectNotFoundError,
    PendingTableServiceError,
    PlanValidationError,
    ReadError,
    RollbackError,
    SchemaMismatchError,
    StorageError,
    SymlinkUnsupportedError,
    TableConfigError,
    TimelineError,
    UnsupportedFeatureError,
    UnsupportedTableError,
    WriteError,
)

__version__ = "0.1.0"

__all__ = [
    "CleanPolicyError",
    "CompactionExecutionError",
    "CompactionStrategyError",
    "EventTimeError",
    "EvtError",
    "HudiTable",
    "InvalidActionError",
    "InvalidNameError",
    "InvalidThresholdError",
    "LogFormatError",
    "MetadataDecodeError",
    "MetadataTableError",
    "ObjectExistsError",
    "ObjectNotFoundError",
    "PendingTableServiceError",
    "PlanValidationError",
    "ReadError",
    "RollbackError",
    "SchemaMismatchError",
    "StorageError",
    "SymlinkUnsupportedError",
    "TableConfigError",
    "TimelineError",
    "UnsupportedFeatureError",
    "UnsupportedTableError",
    "WriteError",
    "__version__",
]
