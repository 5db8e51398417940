"""One error hierarchy for everything evt_toolkit raises.

Every error names the file or instant at fault so a data engineer can go straight to it.
"""

from __future__ import annotations


class EvtError(Exception):
    """Base class of every error raised by evt_toolkit."""


class StorageError(EvtError):
    """A file could not be listed, opened or read."""


class ObjectExistsError(StorageError):
    """A create-only write (put-if-absent, a timeline instant file, a no-overwrite copy) found the file already
    there; names the full URI. The existing file is left as it was and nothing else is written."""


class ObjectNotFoundError(StorageError):
    """A file, object or bucket does not exist; names the full URI (scheme and bucket included)."""


class TableConfigError(EvtError):
    """``hoodie.properties`` is missing, unreadable, inconsistent or has a wrong checksum."""


class UnsupportedTableError(EvtError):
    """The table (type, version, layout) is not one this toolkit reads or writes."""


class UnsupportedFeatureError(EvtError):
    """A real Hudi feature this toolkit does not implement (HFile or CDC blocks, Lance base files, ...)."""


class LogFormatError(EvtError):
    """A log file cannot be decoded (unknown ordinal, unknown block type, bad magic, absurd size, ...).

    Attributes:
        path: the log file at fault.
        offset: byte offset of the block (or field) at fault, when known.
    """

    def __init__(self, message: str, path: str | None = None, offset: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f" [{path}" + (f" @ byte {offset}" if offset is not None else "") + "]"
        super().__init__(message + where)
        self.path = path
        self.offset = offset


class TimelineError(EvtError):
    """The timeline is inconsistent or an instant file cannot be decoded; names the instant."""


class MetadataDecodeError(TimelineError):
    """A commit/plan/clean/rollback metadata file cannot be decoded."""


class MetadataTableError(EvtError):
    """The metadata table (``.hoodie/metadata``) cannot be read or kept consistent: an HFile that does not decode,
    a layout this toolkit does not write, a pending metadata-table instant; names the file or instant."""


class ReadError(EvtError):
    """A read request is invalid (bad query type, time travel outside the timeline, unknown column, ...)."""


class PlanValidationError(EvtError):
    """A compaction plan is invalid (missing files, broken prefix rule, dangling link, ...)."""


class CompactionExecutionError(EvtError):
    """A compaction task failed (on Spark), or the run could not commit; the message carries the task's own error."""


class PendingTableServiceError(EvtError):
    """A table service cannot be scheduled because another one (or an inflight write) is pending."""


class WriteError(EvtError):
    """A write (deltacommit) was refused or failed; names the instant, file or field at fault."""


class SchemaMismatchError(WriteError):
    """The data to write lacks a required field, has a field of the wrong type, or does not match the table schema."""


class EventTimeError(EvtError):
    """The event-time field is missing or of a type that is not a time (names the field)."""


class CompactionStrategyError(EvtError):
    """A compaction strategy is misconfigured or cannot decide (names the setting or partition at fault)."""


class InvalidThresholdError(CompactionStrategyError):
    """The event-time threshold is missing, ambiguous, malformed or later than the RFC allows."""


class SymlinkUnsupportedError(UnsupportedFeatureError):
    """``link_mode="symlink"`` on a storage that cannot make symlinks (object stores; HDFS through pyarrow)."""


class CleanPolicyError(EvtError):
    """An unknown or unsupported cleaner policy, or a retained count below 1."""


class RollbackError(EvtError):
    """An instant cannot be rolled back (completed with later instants, a requested compaction, unknown, ...)."""


class InvalidActionError(EvtError):
    """A widget action that does not fit the current state (e.g. *run* before *schedule*)."""


class InvalidNameError(EvtError):
    """A Hudi file or instant name cannot be built from the given parts (names them)."""


__all__ = [
    "CleanPolicyError",
    "CompactionExecutionError",
    "CompactionStrategyError",
    "EventTimeError",
    "EvtError",
    "InvalidActionError",
    "InvalidNameError",
    "InvalidThresholdError",
    "LogFormatError",
    "MetadataDecodeError",
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
]
