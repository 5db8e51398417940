"""``Table``: a Hudi table's parts — storage, config, timeline and file-system view — as every layer takes them.

The public facade :class:`evt_toolkit.api.HudiTable` subclasses it and adds reads, writes and table services; lower
layers take a ``Table`` so that they never import the facade.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Self

import pyarrow as pa

from evt_toolkit.errors import ObjectNotFoundError, TimelineError, UnsupportedTableError
from evt_toolkit.format.table_version import TableVersionFormat, table_version_format
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import TableConfig, load_table_config
from evt_toolkit.table.fs_view import FileSystemView, list_table_files
from evt_toolkit.table.timeline import Timeline

FILE_SLICES_SCHEMA = pa.schema(
    [
        pa.field("partition_path", pa.string()),
        pa.field("file_id", pa.string()),
        pa.field("base_instant", pa.string()),
        pa.field("base_file", pa.string()),
        pa.field("base_file_size", pa.int64()),
        pa.field("log_files", pa.list_(pa.string())),
        pa.field("log_file_sizes", pa.list_(pa.int64())),
        pa.field("num_log_files", pa.int32()),
        pa.field("total_log_size", pa.int64()),
        pa.field("total_size", pa.int64()),
        pa.field("pending_compaction", pa.string()),
    ]
)
"""Columns of :meth:`Table.file_slices`; log files are in replay order (oldest first)."""

#: Appended to an :class:`ObjectNotFoundError` raised while reading files a loaded view listed.
CHANGED_SINCE_LOADED = (
    "the table changed since this object loaded it (a clean, rollback or compaction elsewhere): call refresh() on it "
    "and try again"
)


@contextmanager
def listed_files_may_be_gone() -> Iterator[None]:
    """Around reads of files a loaded view listed: a file that is gone means the table moved on since the view was
    loaded (another process cleaned, compacted or rolled back), so the error says to refresh, as Spark's
    "REFRESH TABLE" hint does. Never turned into a partial answer.

    Raises:
        ObjectNotFoundError: the original one, its message followed by :data:`CHANGED_SINCE_LOADED`.
    """
    try:
        yield
    except ObjectNotFoundError as exc:
        if CHANGED_SINCE_LOADED in str(exc):
            raise
        raise ObjectNotFoundError(f"{exc}; {CHANGED_SINCE_LOADED}") from None


#: How often building the view lists the table again because a clean or rollback moved on while it listed.
VIEW_LISTING_ATTEMPTS = 5


class Table:
    """A Hudi table's state (Merge-On-Read or Copy-On-Write, table version 6, 8 or 9): storage, ``hoodie.properties``,
    the active timeline and the file-system view, loaded lazily and dropped by :meth:`refresh`.

    Example:
        >>> t = Table.open("/data/trips")  # doctest: +SKIP
        >>> len(t.view.latest_file_slices())  # doctest: +SKIP
    """

    def __init__(self, storage: TableStorage, config: TableConfig) -> None:
        self.storage = storage
        self._config: TableConfig | None = config
        self._timeline: Timeline | None = None
        self._view: FileSystemView | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> Self:
        """Open the table at a local path or URI (``s3://``, ``s3a://``, ``gs://``, ``abfs://``, ``hdfs://``, ...).

        Args:
            path: the table's base path.
            storage_options: object-store settings (``aws_endpoint_url``, ``aws_access_key_id``,
                ``aws_secret_access_key``, ``aws_region``, ``aws_allow_http``, ...; see ``docs/storage.md``).

        Raises:
            StorageError: the store cannot be reached or configured (names the full URI, never a credential).
            TableConfigError: ``.hoodie/hoodie.properties`` is missing or invalid.
            UnsupportedTableError: table version other than 6, 8 or 9.
        """
        storage = TableStorage.from_uri(path, storage_options)
        config = load_table_config(storage)
        if config.version not in (6, 8, 9):
            raise UnsupportedTableError(f"table version {config.version} of {storage.uri} is not supported")
        return cls(storage, config)

    # -- state ----------------------------------------------------------------------------------------
    def refresh(self) -> Self:
        """Forget the loaded ``hoodie.properties``, timeline and listing (after another writer changed the table)."""
        self._config = None
        self._timeline = None
        self._view = None
        self.storage.clear_cache()
        return self

    @property
    def config(self) -> TableConfig:
        """``hoodie.properties``, typed; read again after :meth:`refresh`.

        Other writers change it too: disabling the metadata table clears its partitions, a write drops the index
        partitions the toolkit does not maintain. A handle that kept the properties it read when it was opened
        judged the table by a metadata table that was gone (and refused every write), even once refreshed.

        Raises:
            TableConfigError: the file is missing or invalid.
        """
        if self._config is None:
            self._config = load_table_config(self.storage)
        return self._config

    @config.setter
    def config(self, value: TableConfig) -> None:
        self._config = value

    @property
    def path(self) -> str:
        return self.storage.uri

    @property
    def properties(self) -> dict[str, str]:
        """``hoodie.properties`` as a dict (unescaped)."""
        return dict(self.config.properties)

    @property
    def format(self) -> TableVersionFormat:
        """The on-disk conventions of this table's version (timeline file names, commit metadata encoding, log names).

        Raises:
            UnsupportedTableError: a table version this toolkit does not write.
        """
        return table_version_format(self.config.version, self.config.timeline_path)

    def instant_file(self, instant: str, action: str, state: str, completion: str | None = None) -> str:
        """Path (relative to the base path) of an instant's timeline file in ``state``, as this table's version
        lays it out (``completion``: the completion time a completed instant carries on timeline layout 2)."""
        return self.format.instant_path(instant, action, state, completion)

    @property
    def timeline(self) -> Timeline:
        """The active timeline (instants with action, state and completion time)."""
        if self._timeline is None:
            self._timeline = Timeline.load(self.storage, self.config)
        return self._timeline

    @property
    def view(self) -> FileSystemView:
        """The file-system view: file groups and file slices."""
        if self._view is None:
            for _ in range(VIEW_LISTING_ATTEMPTS):
                timeline = self.timeline
                listing = list_table_files(self.storage)
                # The timeline may be older than the listing (loaded a while ago, or overtaken while many partitions
                # were listed): a clean or rollback since may have deleted files its latest slices need, and a view of
                # the pair would read those slices without them — a partial answer, no error. The timeline is loaded
                # again after the listing; when such a service moved on in between, the table is listed again with it.
                later = Timeline.load(self.storage, self.config)
                if not later.may_have_deleted_files_since(timeline):
                    self._view = FileSystemView(self.config, timeline, listing)
                    return self._view
                self._timeline = later
            raise TimelineError(
                f"{self.storage.uri}: cleans or rollbacks kept deleting files while the table was listed "
                f"({VIEW_LISTING_ATTEMPTS} times); nothing was read — try again"
            )
        return self._view

    # -- file slices --------------------------------------------------------------------------------------
    def file_slices(self, as_of: str | None = None) -> pa.Table:
        """The latest file slice of every file group (pending-compaction slices shown as Hudi lists them)."""
        pending = self.view.pending_compaction_operations
        rows: dict[str, list[Any]] = {f.name: [] for f in FILE_SLICES_SCHEMA}
        for s in self.view.latest_file_slices(as_of):
            p = pending.get((s.partition_path, s.file_id))
            values: dict[str, Any] = {
                "partition_path": s.partition_path,
                "file_id": s.file_id,
                "base_instant": s.base_instant,
                "base_file": s.base_file.name if s.base_file else None,
                "base_file_size": s.base_file.size if s.base_file else None,
                "log_files": [lf.name for lf in s.log_files],
                "log_file_sizes": [lf.size for lf in s.log_files],
                "num_log_files": len(s.log_files),
                "total_log_size": s.total_log_size,
                "total_size": s.total_size,
                "pending_compaction": p.time if p is not None else None,
            }
            for k, v in values.items():
                rows[k].append(v)
        return pa.table(rows, schema=FILE_SLICES_SCHEMA)

    def __repr__(self) -> str:
        cfg = self.config
        return f"{type(self).__name__}({cfg.name!r}, {cfg.table_type}, v{cfg.version}, path={self.path!r})"
