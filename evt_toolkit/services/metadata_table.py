"""Disabling a table's metadata table, the way Hudi does — the documented way out for tables the toolkit refuses.

Hudi's Spark writer keeps a metadata table (MDT) under ``.hoodie/metadata`` and lists its ready partitions in
``hoodie.table.metadata.partitions``; readers list files through it whenever ``files`` is listed there. The toolkit
does not maintain an MDT, so every writing operation refuses a table that has one
(:func:`evt_toolkit.table.guards.require_writable`). Hudi's own answer for a writer that does not want the MDT is to
disable it (``hoodie.metadata.enable=false`` makes ``HoodieTableMetadataUtil.deleteMetadataTable`` clear the table
config's partitions and delete ``.hoodie/metadata``); a stock writer with ``hoodie.metadata.enable=true`` rebuilds
it from storage later.

Order, so that no reader is ever pointed at a missing MDT:

1. ``hoodie.properties`` is rewritten with the metadata partitions cleared, as ``HoodieTableConfig`` updates it:
   ``hoodie.properties.backup`` first, then the new file (same checksum: it depends only on the table and database
   names), then the backup is removed — a reader that meets a half-written file falls back to the backup;
2. ``.hoodie/metadata`` is deleted.

A dry run (the default, as hudi-cli's repair commands) reports both and changes nothing. Pending instants refuse it:
a writer in the middle of a commit may be updating the MDT.

Example:
    >>> disable_metadata_table(t).files_to_delete  # doctest: +SKIP
    ('.hoodie/metadata/.hoodie/hoodie.properties', ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from evt_toolkit.errors import PendingTableServiceError
from evt_toolkit.format.properties import HOODIE_PROPERTIES, HOODIE_PROPERTIES_BACKUP, dump_properties
from evt_toolkit.table.config import load_table_config
from evt_toolkit.table.guards import (
    METADATA_FOLDER,
    METADATA_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    metadata_partitions,
)
from evt_toolkit.table.table import Table

__all__ = ["MetadataTableReport", "disable_metadata_table"]


@dataclass(frozen=True, slots=True)
class MetadataTableReport:
    """What disabling the metadata table does (or did).

    Attributes:
        table: the table's URI.
        partitions: the metadata partitions ``hoodie.properties`` listed.
        files_to_delete: every file under ``.hoodie/metadata``, relative to the base path.
        properties_cleared: the ``hoodie.properties`` keys set to empty.
        dry_run: nothing was changed.
    """

    table: str
    partitions: tuple[str, ...]
    files_to_delete: tuple[str, ...]
    properties_cleared: tuple[str, ...]
    dry_run: bool

    @property
    def had_metadata_table(self) -> bool:
        """Whether there was anything to disable."""
        return bool(self.partitions or self.files_to_delete)


def _files_under(table: Table, rel: str) -> list[str]:
    out: list[str] = []
    stack = [rel]
    while stack:
        folder = stack.pop()
        files, dirs = table.storage.list_dir(folder)
        out.extend(f.path for f in files)
        stack.extend(dirs)
    return sorted(out)


def disable_metadata_table(table: Table, *, dry_run: bool = True) -> MetadataTableReport:
    """Clear ``hoodie.table.metadata.partitions`` and delete ``.hoodie/metadata`` (a dry run by default).

    Raises:
        PendingTableServiceError: an instant is pending (a writer may be updating the metadata table).
    """
    table.refresh()
    storage = table.storage
    props = dict(table.config.properties)
    cleared = tuple(k for k in (METADATA_PARTITIONS_KEY, METADATA_INFLIGHT_KEY) if props.get(k))
    report = MetadataTableReport(
        storage.uri, metadata_partitions(table), tuple(_files_under(table, METADATA_FOLDER)), cleared, dry_run
    )
    if dry_run or not report.had_metadata_table:
        return report
    pending = [f"{i.action} {i.time}" for i in table.timeline.pending()]
    if pending:
        raise PendingTableServiceError(
            f"cannot disable the metadata table of {storage.uri} while {', '.join(pending)} is pending: a writer may "
            "be updating it (let it finish or roll it back first)"
        )
    if cleared:
        for key in cleared:
            props[key] = ""
        saved = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        text = dump_properties(props, header_comment=f"Updated at {saved}").encode("latin-1")
        storage.write_bytes_atomic(HOODIE_PROPERTIES_BACKUP, storage.read_bytes(HOODIE_PROPERTIES), overwrite=True)
        storage.write_bytes_atomic(HOODIE_PROPERTIES, text, overwrite=True)
        storage.delete_file(HOODIE_PROPERTIES_BACKUP)
    storage.delete_dir(METADATA_FOLDER)
    table.config = load_table_config(storage)
    table.refresh()
    return report
