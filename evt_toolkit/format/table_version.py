"""What changes on disk between table version 6 and the Hudi 1.x versions 8 and 9, in one place. Pure, no I/O.

Every difference a writer must respect is a field or a method of :class:`TableVersionFormat` (docs/hudi-1x.md §2):

* **timeline** — layout 1 keeps instants in ``.hoodie/``; layout 2 (v8/v9) in ``.hoodie/timeline/``, a completed
  instant being ``<requested>_<completion>.<action>`` (``InstantFileNameGeneratorV2``);
* **commit metadata** — Jackson JSON on layout 1, a single-record Avro container on layout 2, for completed commits
  and for the inflight workload profile alike (``CommitMetadataSerDeV2``);
* **log file names** — v6 names a log after the base instant of its file slice, v8+ after the *deltacommit that wrote
  it* (``HoodieWriteHandle.createLogWriter`` with ``getWriteVersion() >= EIGHT``), so each deltacommit writes new
  files starting at version 1 and slicing is by the deltacommit's completion time;
* **markers** — v6 marks an append with a phony base file name and ``APPEND``; v8+ marks the log file itself with
  ``CREATE`` (``WriteMarkers.createLogMarkerIfNotExists``);
* **delta write stats** — v8+ ``HoodieAppendHandle`` records ``prevCommit`` = the deltacommit itself, an empty
  ``baseFile`` and only the new log in ``logFiles`` (every v8/v9 fixture's deltacommit shows exactly that).

Example:
    >>> f = table_version_format(9)
    >>> f.timeline_path, f.completed_instant_name("20250101000000000", "deltacommit", "20250101000000123")
    ('.hoodie/timeline', '20250101000000000_20250101000000123.deltacommit')
    >>> f.log_name_instant(slice_base_instant="20240101000000000", write_instant="20250101000000000")
    '20250101000000000'
"""

from __future__ import annotations

import posixpath
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evt_toolkit.errors import InvalidNameError, UnsupportedTableError
from evt_toolkit.format.metadata import encode_commit_metadata_avro, encode_commit_metadata_json
from evt_toolkit.format.names import COMPLETED, BaseFileName, InstantFileName

__all__ = [
    "MARKER_TYPE_FILE",
    "TEMP_FOLDER",
    "TIMELINE_SERVER_BASED",
    "WRITABLE_TABLE_VERSIONS",
    "TableVersionFormat",
    "create_marker",
    "marker_folder",
    "marker_list",
    "parse_marker_list",
    "table_version_format",
]

#: Table versions this toolkit writes: 6 (Hudi 0.14/0.15, readable by 0.x and 1.x) and 8/9 (Hudi 1.0/1.1).
WRITABLE_TABLE_VERSIONS = (6, 8, 9)
TEMP_FOLDER = ".hoodie/.temp"


def marker_folder(instant: str) -> str:
    """``.hoodie/.temp/<instant>``: the folder of an instant's markers (``HoodieTableMetaClient.getMarkerFolderPath``).

    Example:
        >>> marker_folder("2")
        '.hoodie/.temp/2'
    """
    return posixpath.join(TEMP_FOLDER, instant)


def create_marker(instant: str, rel: str) -> str:
    """Hudi's DIRECT ``CREATE`` marker of the file ``rel`` that ``instant`` creates:
    ``.hoodie/.temp/<instant>/<rel>.marker.CREATE`` (``WriteMarkers.create``).

    Example:
        >>> create_marker("2", "p=a/f-0_0-0-0_2.parquet")
        '.hoodie/.temp/2/p=a/f-0_0-0-0_2.parquet.marker.CREATE'
    """
    return posixpath.join(marker_folder(instant), f"{rel}.marker.CREATE")


#: The file of a marker folder that names the format of its markers (``MarkerUtils.MARKER_TYPE_FILENAME``): when it
#: is there, stock Hudi reads the folder's markers from its ``MARKERS<n>`` files only
#: (``MarkerBasedRollbackUtils.getAllMarkerPaths``).
MARKER_TYPE_FILE = "MARKERS.type"
#: ``MarkerType.TIMELINE_SERVER_BASED``, the content of :data:`MARKER_TYPE_FILE` for markers kept in lists.
TIMELINE_SERVER_BASED = "TIMELINE_SERVER_BASED"


def marker_list(instant: str, names: Iterable[str]) -> tuple[str, bytes]:
    """Hudi's timeline-server markers ``names`` (``<rel>.marker.<IO type>``, relative to the marker folder) of
    ``instant``, as one marker file: ``(path, content)``, one name per line (``MarkerDirState.addMarkerToMap``).

    The file's index is a checksum of its content, so that marking the same files again rewrites the same file and
    marking other files of the instant adds a file beside it (stock Hudi reads every ``MARKERS<n>``; the index fits
    Java's ``int``, as ``MarkerDirState.parseMarkerFileIndex`` parses it).

    Example:
        >>> path, content = marker_list("2", ["p=a/f-0_0-0-0_2.parquet.marker.CREATE"])
        >>> path.startswith(".hoodie/.temp/2/MARKERS"), content
        (True, b'p=a/f-0_0-0-0_2.parquet.marker.CREATE\\n')
        >>> parse_marker_list(content)
        [('p=a', 'f-0_0-0-0_2.parquet', 'CREATE')]
    """
    content = "".join(f"{name}\n" for name in sorted(set(names))).encode()
    return posixpath.join(marker_folder(instant), f"MARKERS{zlib.crc32(content) & 0x7FFFFFFF}"), content


def parse_marker_list(content: bytes) -> list[tuple[str, str, str]]:
    """``(partition, marked file name, IO type)`` of each marker of a timeline-server marker file
    (``MarkerUtils.readMarkersFromFile``: one marker per line; lines that are no marker are skipped)."""
    out = []
    for line in content.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if ".marker." in line:
            marked, kind = line.rsplit(".marker.", 1)
            out.append((posixpath.dirname(marked), posixpath.basename(marked), kind))
    return out


@dataclass(frozen=True, slots=True)
class TableVersionFormat:
    """The on-disk conventions of one table version.

    Attributes:
        version: ``hoodie.table.version``.
        timeline_layout: ``hoodie.timeline.layout.version`` (1 or 2).
        timeline_path: the folder holding the active timeline, relative to the base path.
        logs_named_by_deltacommit: log names carry the writing deltacommit (v8+) rather than the slice's base
            instant (v6).
        avro_commit_metadata: commit and workload-profile files are Avro containers (v8+) rather than JSON.
    """

    version: int
    timeline_layout: int
    timeline_path: str
    logs_named_by_deltacommit: bool
    avro_commit_metadata: bool

    def completed_instant_name(self, requested: str, action: str, completion: str | None) -> str:
        """File name of a completed instant; ``completion`` is required on layout 2 and ignored on layout 1."""
        if self.timeline_layout >= 2 and not completion:
            raise InvalidNameError(f"a completed {action} on timeline layout 2 needs a completion time ({requested})")
        return InstantFileName(requested, action, COMPLETED, completion if self.timeline_layout >= 2 else None).name

    def instant_path(self, requested: str, action: str, state: str, completion: str | None = None) -> str:
        """Path (relative to the base path) of an instant file in ``state``."""
        if state == COMPLETED:
            name = self.completed_instant_name(requested, action, completion)
        else:
            name = InstantFileName(requested, action, state).name
        return posixpath.join(self.timeline_path, name)

    def encode_commit_metadata(self, meta: Mapping[str, Any]) -> bytes:
        """Commit/deltacommit metadata or an inflight workload profile, as this version stores it."""
        return encode_commit_metadata_avro(meta) if self.avro_commit_metadata else encode_commit_metadata_json(meta)

    def log_name_instant(self, *, slice_base_instant: str, write_instant: str) -> str:
        """The instant a new log file is named with (``FSUtils.makeLogFileName``'s second token)."""
        return write_instant if self.logs_named_by_deltacommit else slice_base_instant

    def log_marker_path(
        self,
        write_instant: str,
        partition_path: str,
        log_file_name: str,
        *,
        file_id: str,
        write_token: str,
        slice_base_instant: str,
    ) -> str:
        """The DIRECT marker a writer creates before a new log file (rollback finds failed files through them).

        v6: ``<phony base file>.marker.APPEND`` carrying the slice's base instant (``HoodieAppendHandle``); v8+:
        ``<log file name>.marker.CREATE`` (``WriteMarkers.createLogMarkerIfNotExists``).
        """
        if self.logs_named_by_deltacommit:
            return create_marker(write_instant, posixpath.join(partition_path, log_file_name))
        marker = f"{BaseFileName(file_id, write_token, slice_base_instant, '.parquet').name}.marker.APPEND"
        return posixpath.join(marker_folder(write_instant), partition_path, marker)

    def delta_stat_fields(self, *, write_instant: str, log_file_name: str) -> dict[str, Any]:
        """``HoodieDeltaWriteStat`` fields whose meaning changed in 1.x, to override the v6 values with (or ``{}``).

        On v8+ every deltacommit opens new log files, so ``HoodieAppendHandle`` records the deltacommit itself as
        ``prevCommit``, no base file and only the new log file.
        """
        if not self.logs_named_by_deltacommit:
            return {}
        return {"prevCommit": write_instant, "baseFile": "", "logFiles": [log_file_name]}


_FORMATS = {
    6: TableVersionFormat(6, 1, ".hoodie", logs_named_by_deltacommit=False, avro_commit_metadata=False),
    8: TableVersionFormat(8, 2, ".hoodie/timeline", logs_named_by_deltacommit=True, avro_commit_metadata=True),
    9: TableVersionFormat(9, 2, ".hoodie/timeline", logs_named_by_deltacommit=True, avro_commit_metadata=True),
}


def table_version_format(version: int, timeline_path: str | None = None) -> TableVersionFormat:
    """The conventions of table ``version`` (6, 8 or 9).

    Args:
        version: ``hoodie.table.version``.
        timeline_path: the table's timeline folder when it differs from the default (``hoodie.timeline.path``).

    Raises:
        UnsupportedTableError: another version.
    """
    fmt = _FORMATS.get(version)
    if fmt is None:
        raise UnsupportedTableError(
            f"table version {version} is not written by this toolkit (only {', '.join(map(str, _FORMATS))})"
        )
    if timeline_path and timeline_path != fmt.timeline_path:
        return TableVersionFormat(
            fmt.version, fmt.timeline_layout, timeline_path, fmt.logs_named_by_deltacommit, fmt.avro_commit_metadata
        )
    return fmt
