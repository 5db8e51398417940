"""``HudiTable``: the public facade over a Hudi table — reads, writes, compaction and table services.

It is a :class:`evt_toolkit.table.table.Table` (storage, config, timeline, file-system view) with entry points on
top; the layers below take a ``Table`` and never import this module (``docs/architecture.md``).

Example:
    >>> import evt_toolkit as evt
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> t.read(query_type="snapshot").num_rows  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, Self

import pyarrow as pa

from evt_toolkit.compaction.freshness import Freshness, ro_freshness
from evt_toolkit.compaction.metrics import TableMetrics, metrics
from evt_toolkit.compaction.namespace import CompactionNamespace
from evt_toolkit.read.query import read_table
from evt_toolkit.services.clean import CleanResult, clean
from evt_toolkit.services.rollback import RollbackResult, rollback
from evt_toolkit.spark.executor import spark_executor, write_dataframe
from evt_toolkit.table.inspect import Inspect
from evt_toolkit.table.table import Table
from evt_toolkit.write.create import create_table
from evt_toolkit.write.writer import write

__all__ = ["HudiTable"]


class HudiTable(Table):
    """A Hudi table (Merge-On-Read or Copy-On-Write, table version 6, 8 or 9).

    Example:
        >>> import evt_toolkit as evt
        >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
        >>> t.read(query_type="snapshot").num_rows  # doctest: +SKIP
    """

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
        **kwargs: Any,
    ) -> Self:
        """Create an empty MERGE_ON_READ table (version 6, bucket index); see
        :func:`evt_toolkit.write.create.create_table` for every argument.

        Example:
            >>> t = HudiTable.create("/tmp/trips", "trips", "uuid", partition_by="city", ordering_field="ts",
            ...                      event_time_field="ts")  # doctest: +SKIP
        """

        create_table(
            path,
            name,
            record_key,
            partition_by,
            ordering_field,
            event_time_field,
            buckets,
            merge_mode,
            min_event_time_header,
            **kwargs,
        )
        return cls.open(path)

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

        if spark is not None and executor is None:

            if type(data).__module__.startswith("pyspark"):
                return write_dataframe(self, data, operation, options=options)
            executor = spark_executor(spark)
        return write(self, data, operation, spark, executor=executor, options=options)

    @cached_property
    def inspect(self) -> Inspect:
        """Metadata views (``log_blocks``) as Arrow tables."""
        return Inspect(self)

    def refresh(self) -> Self:
        """Forget the loaded timeline, listing and inspection caches (after another writer changed the table)."""
        self.__dict__.pop("inspect", None)
        return super().refresh()

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
        return read_table(self, query_type, as_of=as_of, begin=begin, end=end, columns=columns)

    # -- compaction, freshness, metrics ----------------------------------------------------------------------
    @cached_property
    def compaction(self) -> CompactionNamespace:
        """Preview, schedule, run, validate and unschedule compactions (:class:`CompactionNamespace`).

        Example:
            >>> t.compaction.pending()  # doctest: +SKIP
            []
        """

        return CompactionNamespace(self)

    def ro_freshness(self, now_ms: int | None = None) -> Freshness:
        """The RO view's freshness T, with late data; see :func:`evt_toolkit.compaction.freshness.ro_freshness`.

        Example:
            >>> t.ro_freshness().threshold_ms  # doctest: +SKIP
            1735689600000
        """

        return ro_freshness(self, now_ms=now_ms)

    def metrics(self, now_ms: int | None = None) -> TableMetrics:
        """The RFC's compaction metrics; see :func:`evt_toolkit.compaction.metrics.metrics`.

        Example:
            >>> print(t.metrics().to_prometheus())  # doctest: +SKIP
        """

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

        return clean(self, policy, retained, dry_run=dry_run)

    def rollback(self, instant: str) -> RollbackResult:
        """Roll back a failed deltacommit (or the last completed one) or an inflight compaction.

        See :func:`evt_toolkit.services.rollback.rollback`.

        Returns:
            A :class:`evt_toolkit.services.rollback.RollbackResult`.

        Example:
            >>> t.rollback("20250101000000000").deleted  # doctest: +SKIP
        """

        return rollback(self, instant)

