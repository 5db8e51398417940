"""Ownership records: which instant created which file, written *before* the file (design: ``docs/data-safety.md``).

Hudi writes a marker per data file under ``.hoodie/.temp/<instant>/`` before the file itself, so that a rollback
knows what a failed instant created (``WriteMarkers``). Its APPEND markers name a *phony base file* per file group,
which does not say which log files the instant wrote; judging log files by their names instead is how a rollback
ends up deleting a log another writer (or a compaction's link) created under a name of the same shape. The toolkit
therefore records every file it is about to create — exactly, by path — and its table services delete exactly the
recorded files of an instant, plus nothing.

A record is one small JSON document per task attempt. This module is the pure encoding; the I/O is
:mod:`evt_toolkit.storage.ownership`.

Example:
    >>> r = OwnershipRecord("20250101000000000", WRITE, "0-0-0", (OwnedFile("p/.f_1.log.1_0-0-0", LOG),))
    >>> OwnershipRecord.decode(r.encode(), "x").files[0].path
    'p/.f_1.log.1_0-0-0'
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from evt_toolkit.errors import MetadataDecodeError

__all__ = [
    "BASE",
    "CARRY_OVER",
    "LINK",
    "LOG",
    "PHASES",
    "RUN",
    "SCHEDULE",
    "WRITE",
    "OwnedFile",
    "OwnershipRecord",
]

#: A deltacommit's writer tasks.
WRITE = "write"
#: A compaction's schedule step (links made before ``C.compaction.requested``; they belong to the plan).
SCHEDULE = "schedule"
#: A compaction's run (new base files, carry-over logs, execute-time links; a rollback of the run removes them).
RUN = "run"
PHASES = (WRITE, SCHEDULE, RUN)

LOG = "log"
BASE = "base"
LINK = "link"
CARRY_OVER = "carry_over"
_ROLES = (LOG, BASE, LINK, CARRY_OVER)
_VERSION = 1


@dataclass(frozen=True, slots=True)
class OwnedFile:
    """A file an instant created (or is about to), relative to the table's base path, and what it is."""

    path: str
    role: str


@dataclass(frozen=True, slots=True)
class OwnershipRecord:
    """The files one task attempt of ``instant`` creates in ``phase``."""

    instant: str
    phase: str
    task: str
    files: tuple[OwnedFile, ...]

    def encode(self) -> bytes:
        """The record as UTF-8 JSON."""
        doc = {
            "version": _VERSION,
            "instant": self.instant,
            "phase": self.phase,
            "task": self.task,
            "files": [{"path": f.path, "role": f.role} for f in self.files],
        }
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, source: str) -> OwnershipRecord:
        """Parse a record.

        Raises:
            MetadataDecodeError: not a record of this format (names ``source``).
        """
        try:
            doc = json.loads(data.decode("utf-8"))
            files = tuple(OwnedFile(str(f["path"]), str(f["role"])) for f in doc["files"])
            record = cls(str(doc["instant"]), str(doc["phase"]), str(doc["task"]), files)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise MetadataDecodeError(f"{source}: not an ownership record: {exc}") from exc
        if record.phase not in PHASES or any(f.role not in _ROLES for f in files):
            raise MetadataDecodeError(f"{source}: unknown phase or role in ownership record")
        return record
