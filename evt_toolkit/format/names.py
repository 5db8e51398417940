"""File names Hudi gives to base files, log files and timeline instants.

Pure string codecs, no I/O. Each name type is a small frozen record with a ``parse`` class method (returning ``None``
for names that are not of that kind) and a ``name`` property, so that ``parse(x.name) == x`` for every valid record.

Mirrors ``FSUtils``, ``HoodieBaseFile``, ``HoodieLogFile`` and the timeline file-name parsers of Apache Hudi
(``InstantFileNameParserV1`` / ``V2``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from evt_toolkit.errors import InvalidNameError

__all__ = [
    "CARRY_OVER_LOG_VERSION",
    "COMPLETED",
    "DEFAULT_WRITE_TOKEN",
    "INFLIGHT",
    "REQUESTED",
    "UNKNOWN_WRITE_TOKEN",
    "BaseFileName",
    "InstantFileName",
    "LogFileName",
    "new_write_token",
]

#: ``FSUtils`` fixed write tokens: rollback, archival and bootstrap writers use ``UNKNOWN_WRITE_TOKEN``.
UNKNOWN_WRITE_TOKEN = "1-0-1"
DEFAULT_WRITE_TOKEN = "0-0-0"
#: The log version of a compaction's carry-over log (``docs/design.md``): version 0 of the new slice, before every log
#: a writer names (Hudi's versions start at 1, ``HoodieLogFile.LOGFILE_BASE_VERSION``). Its blocks carry the
#: compaction's instant; its data records keep the commit time of the write that made them.
CARRY_OVER_LOG_VERSION = 0

REQUESTED: Literal["REQUESTED"] = "REQUESTED"
INFLIGHT: Literal["INFLIGHT"] = "INFLIGHT"
COMPLETED: Literal["COMPLETED"] = "COMPLETED"

_WRITE_TOKEN = r"\d+-\d+-\d+"
_WRITE_TOKEN_RE = re.compile(rf"^{_WRITE_TOKEN}\Z", re.ASCII)
_DIGITS_RE = re.compile(r"^\d+\Z", re.ASCII)
# The extension of a base file: ".parquet", ".hfile", ".orc", ".lance", ... (possibly multi-part, e.g. ".x.y").
_EXTENSION_RE = re.compile(r"^(\.[A-Za-z0-9]+)+\Z", re.ASCII)


def new_write_token(task_partition_id: int, stage_id: int, attempt_id: int) -> str:
    """Build a write token the way ``FSUtils.makeWriteToken`` does: ``<taskPartitionId>-<stageId>-<attemptId>``.

    Args:
        task_partition_id: the Spark task partition id (any non-negative int for a Python writer).
        stage_id: the Spark stage id.
        attempt_id: the Spark task attempt id.

    Returns:
        The token, e.g. ``"0-13-60"``.

    Example:
        >>> new_write_token(0, 13, 60)
        '0-13-60'
    """
    for value in (task_partition_id, stage_id, attempt_id):
        if value < 0:
            raise InvalidNameError(f"write token components must be non-negative, got {value}")
    return f"{task_partition_id}-{stage_id}-{attempt_id}"


@dataclass(frozen=True, slots=True)
class BaseFileName:
    """A base file name ``<fileId>_<writeToken>_<instant><ext>``.

    Attributes:
        file_id: the file group id, e.g. ``d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0``.
        write_token: ``<taskPartitionId>-<stageId>-<attemptId>``.
        instant: the instant that wrote the file (the file slice's base instant).
        extension: including the dot, e.g. ``.parquet`` or ``.lance``.
    """

    file_id: str
    write_token: str
    instant: str
    extension: str

    @property
    def name(self) -> str:
        """The file name (``FSUtils.makeBaseFileName``)."""
        return f"{self.file_id}_{self.write_token}_{self.instant}{self.extension}"

    @classmethod
    def parse(cls, name: str) -> BaseFileName | None:
        """Parse a base file name, or return ``None`` if ``name`` is not one.

        Follows ``HoodieBaseFile``: the file id is everything before the first ``_``, and the instant runs from the
        last ``_`` to the first ``.`` after it. Unlike Java, the write token and instant must be well formed, so that
        hidden files, Spark's ``part-…`` files, ``_SUCCESS`` or checksum side files are rejected.

        Args:
            name: a bare file name (no directory).
        """
        if not name or name.startswith(".") or "/" in name:
            return None
        first = name.find("_")
        if first <= 0:
            return None
        dot = name.find(".", first)
        if dot < 0:
            return None
        stem = name[:dot]
        last = stem.rfind("_")
        if last <= first:
            return None
        file_id, write_token, instant = name[:first], name[first + 1 : last], name[last + 1 : dot]
        extension = name[dot:]
        if not _WRITE_TOKEN_RE.match(write_token) or not _DIGITS_RE.match(instant):
            return None
        if not _EXTENSION_RE.match(extension):
            return None
        return cls(file_id, write_token, instant, extension)


# FSUtils.LOG_FILE_PATTERN, anchored at both ends: Java uses find(), which would also accept trailing text such as
# Hadoop's ".crc" side files (Hadoop's local file system hides those from Java, but a plain listing shows them).
_LOG_FILE_RE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(?:_(\d+-\d+-\d+)(\.cdc)?)?\Z", re.ASCII)


@dataclass(frozen=True, slots=True)
class LogFileName:
    """A log file name ``.<fileId>_<baseInstant>.<log|archive>.<version>_<writeToken>[.cdc]``.

    Attributes:
        file_id: the file group id.
        base_instant: on table version 6 the base instant of the file slice; on 8+ the requested time of the
            deltacommit that wrote the file; empty for the v6 archived timeline (``.commits_.archive.1_1-0-1``).
        extension: ``log`` or ``archive`` (no dot).
        version: the log version, starting at 1 (``HoodieLogFile.LOGFILE_BASE_VERSION``).
        write_token: the writer's token, ``None`` for legacy names without one.
        suffix: ``""`` or ``".cdc"``.
    """

    file_id: str
    base_instant: str
    extension: str
    version: int
    write_token: str | None
    suffix: str = ""

    @property
    def name(self) -> str:
        """The file name (``FSUtils.makeLogFileName``)."""
        token = "" if self.write_token is None else f"_{self.write_token}{self.suffix}"
        return f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}{token}"

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        """Parse a log file name, or return ``None`` if ``name`` is not one.

        Args:
            name: a bare file name (no directory).
        """
        return _parse_log_file_name(name)

    def sort_key(self) -> tuple[str, int, tuple[int, str], str]:
        """Ascending order of ``HoodieLogFile.LogFileComparator``.

        By base instant, then version, then write token (a missing token first, then string order), then suffix.
        """
        token_key = (0, "") if self.write_token is None else (1, self.write_token)
        return (self.base_instant, self.version, token_key, self.suffix)


# A table's names are parsed again by every listing that meets them (planning, validation, each task, the landed-write
# check); the records are frozen, so one parse per name serves them all.
@functools.lru_cache(maxsize=1 << 16)
def _parse_log_file_name(name: str) -> LogFileName | None:
    m = _LOG_FILE_RE.match(name)
    if m is None:
        return None
    file_id, base_instant, extension, version, token, suffix = m.groups()
    return LogFileName(file_id, base_instant, extension, int(version), token, suffix or "")


# InstantFileNameParserV2.NAME_FORMAT (V1 is the same without the completion part).
_INSTANT_FILE_RE = re.compile(r"^(\d+)(?:_(\d+))?\.(\w+)(\.\D+)?\Z", re.ASCII)
_STATE_EXTENSIONS = {".requested": REQUESTED, ".inflight": INFLIGHT}


@dataclass(frozen=True, slots=True)
class InstantFileName:
    """A timeline file name, in either timeline layout.

    Layout 1 (table version 6): ``<ts>.<action>``, ``<ts>.<action>.requested``, ``<ts>.<action>.inflight``.
    Layout 2 (table versions 8+): completed files are ``<requested>_<completion>.<action>``.
    In both, an inflight plain ``commit`` is the bare ``<ts>.inflight`` (a legacy quirk kept by Hudi).

    Attributes:
        requested_time: the instant's requested time.
        action: the action in the file name (``commit``, ``deltacommit``, ``compaction``, ``clean``, ...).
        state: ``REQUESTED``, ``INFLIGHT`` or ``COMPLETED``.
        completion_time: layout-2 completion time of a completed instant, else ``None``.
    """

    requested_time: str
    action: str
    state: str
    completion_time: str | None = None

    @property
    def name(self) -> str:
        """The file name (``InstantFileNameGeneratorV1/V2.getFileName``)."""
        if self.state == COMPLETED:
            if self.completion_time is None:
                return f"{self.requested_time}.{self.action}"
            return f"{self.requested_time}_{self.completion_time}.{self.action}"
        if self.state == INFLIGHT:
            if self.action == "commit":
                return f"{self.requested_time}.inflight"
            return f"{self.requested_time}.{self.action}.inflight"
        if self.state == REQUESTED:
            return f"{self.requested_time}.{self.action}.requested"
        raise InvalidNameError(f"unknown instant state {self.state!r} of instant {self.requested_time}")

    @classmethod
    def parse(cls, name: str) -> InstantFileName | None:
        """Parse a timeline file name, or return ``None`` for anything else.

        ``hoodie.properties``, folders such as ``archived``/``.aux``/``timeline``, ``.crc`` side files and names with
        an unknown state extension are not instants.

        Args:
            name: a bare file name (no directory).
        """
        m = _INSTANT_FILE_RE.match(name)
        if m is None:
            return None
        requested, completion, action, state_ext = m.groups()
        if action == "inflight" and state_ext is None:
            return cls(requested, "commit", INFLIGHT, None) if completion is None else None
        if action in ("requested", "inflight"):
            return None
        if state_ext is None:
            return cls(requested, action, COMPLETED, completion)
        state = _STATE_EXTENSIONS.get(state_ext)
        if state is None or completion is not None:
            return None
        return cls(requested, action, state, None)
