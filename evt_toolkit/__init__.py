"""evt_toolkit — event-time compaction for Apache Hudi Merge-On-Read tables.

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> t.file_slices()  # doctest: +SKIP
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from evt_toolkit.api import HudiTable

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # HudiTable brings in every layer (compaction, services, Spark's helpers): imported on first use, so that
    # ``import evt_toolkit.<layer>`` (a Spark worker, the CLI) loads only what it uses.
    if name == "HudiTable":
        from evt_toolkit.api import HudiTable

        return HudiTable
    raise AttributeError(f"module 'evt_toolkit' has no attribute {name!r}")


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
