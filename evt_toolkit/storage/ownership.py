"""Reading and writing ownership records (:mod:`evt_toolkit.format.ownership`) of a table's instants.

Records live in ``.hoodie/.temp/evt/<instant>/`` as ``evt-owned.<phase>.<task>.<n>.json``, beside Hudi's marker
folders (``.hoodie/.temp/<instant>/``) and never inside one: stock Hudi rolls a pending instant back by its markers,
and its marker-based rollback takes *every* file of the instant's marker folder for a marker
(``DirectWriteMarkers.allMarkerFilePaths``, then ``IOType.valueOf`` of the name's last extension in
``MarkerBasedRollbackStrategy``), so one record there made every stock rollback of the instant fail — and with it
every stock write, which rolls failed writes back first. The other files the toolkit keeps per instant (an
unschedule's marker, a run's abandoned attempts) live in the same folder. Records an earlier version of the toolkit
wrote into the marker folder are still read and dropped. Like Hudi's markers, an instant's records are dropped once
the instant completes or is rolled back.

Every writer calls :func:`record_ownership` *before* it creates the files: a crash between the two leaves a record
of a file that does not exist, which deletes nothing; the opposite order could leave a file nobody owns.

Example:
    >>> from evt_toolkit.format.ownership import LOG, WRITE
    >>> files = [OwnedFile("p/.f.log.1_0-0-0", LOG)]
    >>> record_ownership(storage, "20250101000000000", WRITE, "0-0-0", files)  # doctest: +SKIP
    >>> sorted(owned_files(storage, "20250101000000000"))  # doctest: +SKIP
    ['p/.f.log.1_0-0-0']
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterable

from evt_toolkit.errors import ObjectExistsError
from evt_toolkit.format.ownership import OwnedFile, OwnershipRecord
from evt_toolkit.format.table_version import (
    MARKER_TYPE_FILE,
    TEMP_FOLDER,
    TIMELINE_SERVER_BASED,
    marker_folder,
    marker_list,
    parse_marker_list,
)
from evt_toolkit.storage.fs import FileEntry, TableStorage

__all__ = [
    "RECORD_ROOT",
    "abandon_attempt",
    "abandoned_marker",
    "attempt_state",
    "drop_markers",
    "drop_ownership",
    "mark_created",
    "marker_folder",
    "markers",
    "new_attempt",
    "owned_files",
    "ownership_records",
    "record_folder",
    "record_folders",
    "record_ownership",
    "unscheduling_marker",
    "unscheduling_markers",
]

#: The toolkit's own files of each instant, one folder per instant (not an instant's marker folder: no instant is
#: named ``evt``).
RECORD_ROOT = posixpath.join(TEMP_FOLDER, "evt")
_PREFIX = "evt-owned."


def record_folder(instant: str) -> str:
    """``.hoodie/.temp/evt/<instant>``: the toolkit's ownership records, unschedule marker and abandoned attempts of
    an instant."""
    return posixpath.join(RECORD_ROOT, instant)


def record_folders(storage: TableStorage) -> dict[str, list[str]]:
    """``instant -> folders`` that may hold records of the instant: its record folder, and its marker folder where an
    earlier version wrote them (every instant-named folder of either root)."""
    out: dict[str, list[str]] = {}
    for root in (RECORD_ROOT, TEMP_FOLDER):
        _, folders = storage.list_dir(root)
        for folder in folders:
            instant = posixpath.basename(folder)
            if instant.isdigit():
                out.setdefault(instant, []).append(folder)
    return out


def mark_created(storage: TableStorage, instant: str, rels: Iterable[str]) -> None:
    """Write Hudi's ``CREATE`` markers of the files ``instant`` is about to create (after its ownership record): a
    stock rollback of the instant, which goes by markers, then deletes them too.

    They are written as the timeline server writes them (:func:`~evt_toolkit.format.table_version.marker_list`):
    ``MARKERS.type`` first, then one ``MARKERS<n>`` listing them all — two files (two PUTs on an object store) for a
    whole compaction run instead of one per base file, and stock Hudi reads them the same way. A list already there
    under the same index with other markers (marked by another call whose list has the same checksum) is merged, not
    replaced. Once ``MARKERS.type`` is there, stock Hudi reads the folder's lists only: DIRECT markers found in a
    folder without it (an earlier version's run of the instant) are put into the first list too.
    """
    names = [f"{rel}.marker.CREATE" for rel in rels]
    if not names:
        return
    folder = marker_folder(instant)
    present = storage.list_files(folder)
    type_file = posixpath.join(folder, MARKER_TYPE_FILE)
    if all(e.path != type_file for e in present):
        names += [posixpath.relpath(e.path, folder) for e in present if ".marker." in e.name]
    path, content = marker_list(instant, names)
    # The type first: a crash after it leaves a folder of no markers (nothing is created yet), never a list that
    # stock Hudi, seeing no type, would take for a DIRECT marker with an unparsable name. On file systems the
    # temporary files are made in the instant's record folder, so that a crash cannot leave one in the marker folder
    # (stock Hudi would read it as a marker there and fail).
    staging = record_folder(instant)
    storage.write_bytes_atomic(type_file, TIMELINE_SERVER_BASED.encode(), overwrite=True, staging=staging)
    try:
        storage.write_bytes_atomic(path, content, overwrite=False, staging=staging)
    except ObjectExistsError:
        existing = storage.read_bytes(path)
        if existing != content:
            lines = set(existing.decode("utf-8", "replace").splitlines()) | set(content.decode().splitlines())
            merged = "".join(f"{x}\n" for x in sorted(lines) if x).encode()
            storage.write_bytes_atomic(path, merged, overwrite=True, staging=staging)


def _is_marker(name: str) -> bool:
    """A file of Hudi's in a marker folder: a DIRECT marker, a timeline-server marker list or its type file."""
    return ".marker." in name or name.startswith("MARKERS")


def markers(storage: TableStorage, instant: str) -> list[tuple[str, str, str]]:
    """``(partition, marked file name, IO type)`` of every marker of ``instant``: DIRECT markers (one file each,
    ``<rel>.marker.<type>``) and timeline-server marker lists (``MARKERS<n>``), as ``MarkerBasedRollbackUtils``
    accepts both."""
    root = marker_folder(instant)
    out: list[tuple[str, str, str]] = []
    stack = [root]
    while stack:
        rel = stack.pop()
        files, dirs = storage.list_dir(rel)
        stack.extend(dirs)
        for e in files:
            if e.name.startswith("MARKERS"):
                if e.name != MARKER_TYPE_FILE:
                    out.extend(parse_marker_list(storage.read_bytes(e.path)))
            elif ".marker." in e.name:
                marked, kind = e.name.rsplit(".marker.", 1)
                out.append((posixpath.relpath(rel, root) if rel != root else "", marked, kind))
    return out


def drop_markers(storage: TableStorage, instant: str) -> None:
    """Delete Hudi's markers of ``instant`` (not the records an earlier version kept beside them)."""
    storage.delete_files([e.path for e in storage.list_files(marker_folder(instant)) if _is_marker(e.name)])


def unscheduling_marker(instant: str) -> str:
    """The file an unschedule of compaction ``instant`` writes before it lists the plan's new slices.

    A version-6 writer that put logs into a new slice of a pending plan checks for it before completing, and fails
    when it is there: from then on no such write completes, so the unschedule's listing sees every log a completed
    writer put into a new slice, and a crash half-way cannot leave a committed log in a slice whose plan is gone.
    Dropped with the instant's records.
    """
    return posixpath.join(record_folder(instant), "evt-unscheduling")


def unscheduling_markers(instant: str) -> tuple[str, str]:
    """Where an unschedule's marker of ``instant`` may be: :func:`unscheduling_marker`, and the marker folder, where
    an earlier version wrote it."""
    return unscheduling_marker(instant), posixpath.join(marker_folder(instant), "evt-unscheduling")


def new_attempt() -> str:
    """A run attempt's id: the driver names its tasks' ownership record with it (``<task>-<attempt>``) and gives it
    to the tasks, which put their outputs under the plan's names only while :func:`attempt_state` says ``live``."""
    return uuid.uuid4().hex[:16]


def abandoned_marker(instant: str, attempt: str) -> str:
    """The file a driver writes when it gives up run ``attempt`` of ``instant`` (its job failed or was cancelled)."""
    return posixpath.join(record_folder(instant), f"evt-abandoned.{attempt}")


def abandon_attempt(storage: TableStorage, instant: str, attempt: str) -> None:
    """Record, before the driver reports a failed run, that the tasks of ``attempt`` must write nothing more.

    A task of a cancelled Spark job runs on in its Python worker until Spark kills it (or, on an executor the driver
    lost, for as long as that machine lives): it re-checks right before it puts outputs under the plan's names.
    """
    storage.write_bytes_atomic(abandoned_marker(instant, attempt), attempt.encode(), overwrite=True)


def attempt_state(names: Iterable[str], attempt: str) -> str:
    """``live``, ``abandoned`` or ``gone`` (its record dropped: the run was rolled back, or completed): run
    ``attempt``'s state among the file ``names`` of its instant's record folder."""
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
    storage.write_bytes_atomic(posixpath.join(record_folder(instant), name), record.encode())
    return record


def _record_files(storage: TableStorage, instant: str) -> list[FileEntry]:
    """The record files of ``instant``, in its record folder and (written by an earlier version) its marker folder."""
    out: list[FileEntry] = []
    for folder in (record_folder(instant), marker_folder(instant)):
        files, _ = storage.list_dir(folder)
        out.extend(e for e in files if e.name.startswith(_PREFIX) and e.name.endswith(".json"))
    return out


def ownership_records(storage: TableStorage, instant: str) -> list[OwnershipRecord]:
    """Every ownership record of ``instant`` (empty when none was written or the folder was dropped)."""
    return [
        OwnershipRecord.decode(storage.read_bytes(e.path), storage.full_path(e.path))
        for e in _record_files(storage, instant)
    ]


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
    """Delete the records of ``instant`` (of ``phases`` only, when given; otherwise its record folder and, as Hudi
    drops it once an instant completes or is rolled back, its marker folder)."""
    if phases is None:
        storage.delete_dir(record_folder(instant))
        storage.delete_dir(marker_folder(instant))
        return
    wanted = set(phases)
    for entry in _record_files(storage, instant):
        if entry.name.split(".")[1] in wanted:
            storage.delete_file(entry.path)
