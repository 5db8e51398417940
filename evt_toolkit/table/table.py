"""``HudiTable``: the public entry point over a Hudi table's storage, config, timeline and file-system view."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from evt_toolkit.errors import ReadError, UnsupportedTableError
from evt_toolkit.read.query import QUERY_TYPES, TableReader
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import TableConfig, load_table_config
from evt_toolkit.table.fs_view import FileSystemView, list_table_files
from evt_toolkit.table.inspect import Inspect
from evt_toolkit.table.timeline import Timeline

if TYPE_CHECKING:
    from evt_toolkit.compaction.freshness import Freshness
    from evt_toolkit.compaction.metrics import TableMetrics
    from evt_toolkit.compaction.namespace import CompactionNamespace

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
"""Columns of :meth:`HudiTable.file_slices`; log files are in replay order (oldest first)."""


class HudiTable:
    """A Hudi table (Merge-On-Read or Copy-On-Write, table version 6, 8 or 9).

    Example:
        >>> import evt_toolkit as evt
        >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
        >>> t.read(query_type="snapshot").num_rows  # doctest: +SKIP
    """

    def __init__(self, storage: TableStorage, config: TableConfig) -> None:
        self.storage = storage
        self.config = config
        self._timeline: Timeline | None = None
        self._view: FileSystemView | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> HudiTable:
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

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        name: str,
        record_key: str | Sequence[str],
        partition_by: str | Sequence[str] | None = None,
        ordering_field: str | None = None,
        event_time_field: str | None = None,
        buckets: int = 4,
        merge_mode: str = "commit_time",
        min_event_time_header: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> HudiTable:
        """Create an empty MERGE_ON_READ table (version 6, bucket index); see
        :func:`evt_toolkit.write.create.create_table` for every argument.

        Example:
            >>> t = HudiTable.create("/tmp/trips", "trips", "uuid", partition_by="city", ordering_field="ts",
            ...                      event_time_field="ts")  # doctest: +SKIP
        """
        from evt_toolkit.write.create import create_table

        return create_table(
            path,
            name,
            record_key,
            partition_by,
            ordering_field,
            event_time_field,
            buckets,
            merge_mode,
            min_event_time_header,
            storage_options=storage_options,
            **kwargs,
        )

    def write(
        self,
        data: Any,
        operation: str = "upsert",
        spark: Any = None,
        *,
        executor: Any = None,
        options: Mapping[str, str] | None = None,
    ) -> str:
        """Write a batch (Arrow, pandas or Spark) as one deltacommit and return its instant.

        With ``spark``, the file-group tasks run as one Spark task per file group: a Spark DataFrame is keyed,
        de-duplicated and shuffled on Spark and never collected to the driver
        (:func:`evt_toolkit.spark.executor.write_dataframe`); Arrow or pandas data is planned on the driver and
        its tasks shipped to Spark (:func:`evt_toolkit.spark.executor.spark_executor`). Without ``spark`` the
        tasks run in this process. See :func:`evt_toolkit.write.writer.write`.

        Example:
            >>> t.write(pa.table({"uuid": ["a"], "ts": [1], "city": ["x"]}))  # doctest: +SKIP
            '20250101000000000'
        """
        from evt_toolkit.write.writer import write

        if spark is not None and executor is None:
            from evt_toolkit.spark.executor import spark_executor, write_dataframe

            if type(data).__module__.startswith("pyspark"):
                return write_dataframe(self, data, operation, options=options)
            executor = spark_executor(spark)
        return write(self, data, operation, spark, executor=executor, options=options)

    # -- state ----------------------------------------------------------------------------------------
    def refresh(self) -> HudiTable:
        """Forget the loaded timeline and listing (after another writer changed the table)."""
        self._timeline = None
        self._view = None
        self.storage.clear_cache()
        self.__dict__.pop("inspect", None)
        return self

    @property
    def path(self) -> str:
        return self.storage.uri

    @property
    def properties(self) -> dict[str, str]:
        """``hoodie.properties`` as a dict (unescaped)."""
        return dict(self.config.properties)

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
            self._view = FileSystemView(self.config, self.timeline, list_table_files(self.storage))
        return self._view

    @cached_property
    def inspect(self) -> Inspect:
        """Metadata views (``log_blocks``) as Arrow tables."""
        return Inspect(self)

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

    # -- reads ----------------------------------------------------------------------------------------------
    def read(
        self,
        query_type: str = "snapshot",
        as_of: str | None = None,
        begin: str | None = None,
        end: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Read the table with Hudi's query semantics.

        Args:
            query_type: ``snapshot`` (base merged with logs), ``read_optimized`` (base files only) or
                ``incremental`` (records committed in ``(begin, end]``).
            as_of: time travel instant for snapshot and read-optimized reads.
            begin: exclusive start of an incremental window (default: the beginning).
            end: inclusive end of an incremental window (default: the latest commit).
            columns: projection, in the order wanted.

        Raises:
            ReadError: unknown query type, bad instant or unknown column.
        """
        reader = TableReader(self.storage, self.config, self.timeline, self.view)
        if query_type == "snapshot":
            return reader.snapshot(as_of=as_of, columns=columns)
        if query_type == "read_optimized":
            return reader.read_optimized(as_of=as_of, columns=columns)
        if query_type == "incremental":
            if as_of is not None:
                raise ReadError("as_of does not apply to incremental reads; use begin/end")
            return reader.incremental(begin, end, columns=columns)
        raise ReadError(f"unknown query type {query_type!r}; expected one of {', '.join(QUERY_TYPES)}")

    def __repr__(self) -> str:
        return f"HudiTable({self.config.name!r}, {self.config.table_type}, v{self.config.version}, path={self.path!r})"

    # -- compaction, freshness, metrics ----------------------------------------------------------------------
    @cached_property
    def compaction(self) -> CompactionNamespace:
        """Preview, schedule, run, validate and unschedule compactions (:class:`CompactionNamespace`).

        Example:
            >>> t.compaction.pending()  # doctest: +SKIP
            []
        """
        from evt_toolkit.compaction.namespace import CompactionNamespace

        return CompactionNamespace(self)

    def ro_freshness(self, now_ms: int | None = None) -> Freshness:
        """The RO view's freshness T, with late data; see :func:`evt_toolkit.compaction.freshness.ro_freshness`.

        Example:
            >>> t.ro_freshness().threshold_ms  # doctest: +SKIP
            1735689600000
        """
        from evt_toolkit.compaction.freshness import ro_freshness

        return ro_freshness(self, now_ms=now_ms)

    def metrics(self, now_ms: int | None = None) -> TableMetrics:
        """The RFC's compaction metrics; see :func:`evt_toolkit.compaction.metrics.metrics`.

        Example:
            >>> print(t.metrics().to_prometheus())  # doctest: +SKIP
        """
        from evt_toolkit.compaction.metrics import metrics

        return metrics(self, now_ms)

    # -- table services: clean and rollback ------------------------------------------------------------------------
    def clean(
        self, policy: str = "KEEP_LATEST_COMMITS", retained: int | None = None, dry_run: bool = True
    ) -> CleanResult:
        """Delete old file slices with Hudi's cleaner policies, never a file a live link or pending plan needs.

        A dry run (the default) returns exactly the files the real run deletes; a real run writes a Hudi clean
        instant (``clean.requested``/``.inflight``/``clean``). See :func:`evt_toolkit.services.clean.clean`.

        Args:
            policy: ``KEEP_LATEST_COMMITS`` or ``KEEP_LATEST_FILE_VERSIONS``.
            retained: commits (default 10) or file versions (default 3) to retain.
            dry_run: only report.

        Returns:
            A :class:`evt_toolkit.services.clean.CleanResult`.

        Example:
            >>> t.clean(retained=2).files  # doctest: +SKIP
        """
        from evt_toolkit.services.clean import clean

        return clean(self, policy, retained, dry_run=dry_run)

    def rollback(self, instant: str) -> RollbackResult:
        """Roll back a failed deltacommit (or the last completed one) or an inflight compaction.

        See :func:`evt_toolkit.services.rollback.rollback`.

        Returns:
            A :class:`evt_toolkit.services.rollback.RollbackResult`.

        Example:
            >>> t.rollback("20250101000000000").deleted  # doctest: +SKIP
        """
        from evt_toolkit.services.rollback import rollback

        return rollback(self, instant)


if TYPE_CHECKING:  # the result types of clean() and rollback() above
    from evt_toolkit.services.clean import CleanResult
    from evt_toolkit.services.rollback import RollbackResult
