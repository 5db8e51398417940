"""Reading and writing ownership records (:mod:`evt_toolkit.format.ownership`) in a table's marker folder.

Records live beside Hudi's own markers in ``.hoodie/.temp/<instant>/`` as ``evt-owned.<phase>.<task>.<n>.json``.
Stock Hudi's marker readers only look at names containing ``.marker.``, so they ignore these files; like Hudi, the
folder of an instant is dropped once the instant completes or is rolled back.

Every writer calls :func:`record_ownership` *before* it creates the files: a crash between the two leaves a record
of a file that does not exist, which deletes nothing; the opposite order could leave a file nobody owns.

Example:
    >>> files = [OwnedFile("p/.f.log.1_0-0-0", LOG)]
    >>> record_ownership(storage, "20250101000000000", WRITE, "0-0-0", files)  # doctest: +SKIP
    >>> sorted(owned_files(storage, "20250101000000000"))  # doctest: +SKIP
    ['p/.f.log.1_0-0-0']
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterable

from evt_toolkit.format.ownership import OwnedFile, OwnershipRecord
from evt_toolkit.storage.fs import TableStorage

__all__ = [
    "MARKER_ROOT",
    "abandon_attempt",
    "abandoned_marker",
    "attempt_state",
    "drop_ownership",
    "marker_folder",
    "new_attempt",
    "owned_files",
    "ownership_records",
    "record_ownership",
    "unscheduling_marker",
]

MARKER_ROOT = ".hoodie/.temp"
_PREFIX = "evt-owned."


def marker_folder(instant: str) -> str:
    """``.hoodie/.temp/<instant>``: where Hudi's markers and the toolkit's ownership records of an instant live."""
    return posixpath.join(MARKER_ROOT, instant)


def unscheduling_marker(instant: str) -> str:
    """The file an unschedule of compaction ``instant`` writes before it lists the plan's new slices.

    A version-6 writer that put logs into a new slice of a pending plan checks for it before completing, and fails
    when it is there: from then on no such write completes, so the unschedule's listing sees every log a completed
    writer put into a new slice, and a crash half-way cannot leave a committed log in a slice whose plan is gone.
    Dropped with the instant's records.
    """
    return posixpath.join(marker_folder(instant), "evt-unscheduling")


def new_attempt() -> str:
    """A run attempt's id: the driver names its tasks' ownership record with it (``<task>-<attempt>``) and gives it
    to the tasks, which put their outputs under the plan's names only while :func:`attempt_state` says ``live``."""
    return uuid.uuid4().hex[:16]


def abandoned_marker(instant: str, attempt: str) -> str:
    """The file a driver writes when it gives up run ``attempt`` of ``instant`` (its job failed or was cancelled)."""
    return posixpath.join(marker_folder(instant), f"evt-abandoned.{attempt}")


def abandon_attempt(storage: TableStorage, instant: str, attempt: str) -> None:
    """Record, before the driver reports a failed run, that the tasks of ``attempt`` must write nothing more.

    A task of a cancelled Spark job runs on in its Python worker until Spark kills it (or, on an executor the driver
    lost, for as long as that machine lives): it re-checks right before it puts outputs under the plan's names.
    """
    storage.write_bytes_atomic(abandoned_marker(instant, attempt), attempt.encode(), overwrite=True)


def attempt_state(names: Iterable[str], attempt: str) -> str:
    """``live``, ``abandoned`` or ``gone`` (its record dropped: the run was rolled back, or completed): run
    ``attempt``'s state among the file ``names`` of its instant's marker folder."""
    recorded = abandoned = False
    for name in names:
        if name == f"evt-abandoned.{attempt}":
            abandoned = True
        elif name.startswith(_PREFIX) and name.endswith(".json") and f"-{attempt}." in name:
            recorded = True
    if abandoned:
        return "abandoned"
    return "live" if recorded else "gone"


def record_ownership(
    storage: TableStorage, instant: str, phase: str, task: str, files: Iterable[OwnedFile]
) -> OwnershipRecord:
    """Record, before creating them, the files one task attempt of ``instant`` creates in ``phase``.

    Each call writes a new record (a retried task adds one); readers take the union.
    """
    record = OwnershipRecord(instant, phase, task, tuple(files))
    name = f"{_PREFIX}{phase}.{task}.{uuid.uuid4().hex[:12]}.json"
    storage.write_bytes_atomic(posixpath.join(marker_folder(instant), name), record.encode())
    return record


def ownership_records(storage: TableStorage, instant: str) -> list[OwnershipRecord]:
    """Every ownership record of ``instant`` (empty when none was written or the folder was dropped)."""
    files, _ = storage.list_dir(marker_folder(instant))
    out = []
    for entry in files:
        if entry.name.startswith(_PREFIX) and entry.name.endswith(".json"):
            out.append(OwnershipRecord.decode(storage.read_bytes(entry.path), storage.full_path(entry.path)))
    return out


def owned_files(storage: TableStorage, instant: str, phases: Iterable[str] | None = None) -> dict[str, OwnedFile]:
    """``path -> OwnedFile`` of every file recorded for ``instant`` (in ``phases``, when given)."""
    wanted = set(phases) if phases is not None else None
    out: dict[str, OwnedFile] = {}
    for record in ownership_records(storage, instant):
        if wanted is None or record.phase in wanted:
            for f in record.files:
                out.setdefault(f.path, f)
    return out


def drop_ownership(storage: TableStorage, instant: str, phases: Iterable[str] | None = None) -> None:
    """Delete the records of ``instant`` (of ``phases`` only, when given; otherwise its whole marker folder)."""
    if phases is None:
        storage.delete_dir(marker_folder(instant))
        return
    wanted = set(phases)
    files, _ = storage.list_dir(marker_folder(instant))
    for entry in files:
        if entry.name.startswith(_PREFIX) and entry.name.split(".")[1] in wanted:
            storage.delete_file(entry.path)
