"""Run a deltacommit's file-group tasks on Spark: one Spark task per file group, the driver alone commits.

Two entry points:

* :func:`spark_executor` plugs into :func:`evt_toolkit.write.writer.write` (``executor=``): the writer plans the
  file groups on the driver and hands over ``(FileGroupWrite, upserts, deletes)`` per group; each group becomes one
  Spark task (``parallelize`` with one slice per group, the rows as Arrow IPC bytes) that runs
  :func:`~evt_toolkit.write.task.write_file_group` and returns its write stats. The write token is
  ``<partitionId>-<stageId>-<taskAttemptId>``, Hudi's ``SparkTaskContextSupplier`` values, so a retried attempt
  never collides with the files of a failed one.
* :func:`write_dataframe` writes a Spark DataFrame without collecting it: record key, partition path and bucket
  are computed on Spark (:func:`prepare_on_spark`), duplicates are resolved there, the driver collects one
  representative row per file group to let the writer plan and commit, and each file group's rows are shuffled to
  the one Spark task that writes it.

Example:
    >>> from evt_toolkit.spark.session import get_or_create_session  # doctest: +SKIP
    >>> spark = get_or_create_session()  # doctest: +SKIP
    >>> t = evt.HudiTable.open("/data/trips")  # doctest: +SKIP
    >>> t.write(spark_df, spark=spark, executor=spark_executor(spark))  # doctest: +SKIP
    >>> write_dataframe(t, spark_df, "upsert")  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from evt_toolkit.errors import SchemaMismatchError, WriteError
from evt_toolkit.format.log_writer import arrow_to_avro_schema, check_ordering_values, check_values_fit
from evt_toolkit.storage.calls import run_spark_job
from evt_toolkit.table.schema import latest_avro_schema
from evt_toolkit.write.bucket import bucket_ids
from evt_toolkit.write.index import BUCKET
from evt_toolkit.write.key_encoding import single_key_field_prefixed
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import (
    FileWritten,
    partition_paths,
    prepare_batch,
    record_keys,
    require_ordering_values,
    write_file_group,
)
from evt_toolkit.write.writer import Executor, check_writable, spark_job_failed, write

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from evt_toolkit.table.table import Table

#: ``task(spec, fg, upserts, deletes, task_partition_id, stage_id, attempt_id) -> write stats``.
FileGroupTask = Callable[..., list[FileWritten]]

KEY_COLUMN = "_evt_record_key"
PARTITION_COLUMN = "_evt_partition_path"
BUCKET_COLUMN = "_evt_bucket_id"
_SEQ_COLUMN = "_evt_arrival"
_HELPER_COLUMNS = (KEY_COLUMN, PARTITION_COLUMN, BUCKET_COLUMN)


# -- Arrow IPC: how row groups travel between the driver and Spark tasks ----------------------------------------------
def to_ipc(table: pa.Table) -> bytes:
    """Serialize ``table`` as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def from_ipc(data: bytes) -> pa.Table:
    """Read an Arrow IPC stream written by :func:`to_ipc`."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def _task_ids() -> tuple[int, int, int]:
    """``(partitionId, stageId, taskAttemptId)`` of the running Spark task (zeros outside Spark)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, 0, 0
    return ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId()


# -- executor for writer.write --------------------------------------------------------------------------------------
def _run_file_group_tasks(
    spec: WriteJobSpec, task: FileGroupTask, items: Iterable[tuple[int, FileGroupWrite, bytes, bytes]]
) -> Iterator[tuple[int, list[FileWritten]]]:
    partition_id, stage_id, attempt_id = _task_ids()
    for index, fg, upserts, deletes in items:
        stats = task(spec, fg, from_ipc(upserts), from_ipc(deletes), partition_id, stage_id, attempt_id)
        yield index, stats


def spark_executor(spark: SparkSession, task: FileGroupTask = write_file_group) -> Executor:
    """An executor for :func:`evt_toolkit.write.writer.write` that runs one Spark task per file group.

    Args:
        spark: the session whose cluster runs the tasks.
        task: the per-file-group function (:func:`write_file_group`; tests wrap it to inject failures).

    Returns:
        ``executor(spec, [(FileGroupWrite, upserts, deletes), ...]) -> stats per task``, in task order. A failing
        task fails the job; the writer then leaves the instant inflight, which readers ignore.
    """

    def run(spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> list[list[FileWritten]]:
        if not items:
            return []
        payload = [(i, fg, to_ipc(up), to_ipc(de)) for i, (fg, up, de) in enumerate(items)]
        sc = spark.sparkContext
        # numSlices == len(payload): ParallelCollectionRDD puts exactly one element in each slice.
        rdd = sc.parallelize(payload, numSlices=len(payload))
        job = rdd.mapPartitions(functools.partial(_run_file_group_tasks, spec, task))
        # A failed or cancelled job raises only once its tasks stopped: none writes a log after the write failed.
        results = run_spark_job(sc, f"hudi_evt deltacommit {spec.instant}: {len(items)} file groups", job.collect)
        by_index = dict(results)
        return [by_index[i] for i in range(len(items))]

    return run


# -- writing a DataFrame without collecting it -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _RowChecks:
    """What every row of a DataFrame write is checked for on Spark, before the deltacommit is requested (the
    writer's own checks, :func:`prepare_batch`'s, which the write tasks would otherwise meet only after it)."""

    table_uri: str
    operation: str
    ordering_field: str | None
    #: The table's writer schema (Avro JSON) every value of an upsert must fit; ``None`` on a table's first write,
    #: whose schema the batch's own columns make.
    avro_schema_json: str | None = None

    def check_values(self, t: pa.Table) -> None:
        """The writer's value checks over one batch of rows: :func:`check_values_fit` for upserts and inserts,
        :func:`check_ordering_values` for deletes."""
        if self.operation.strip().lower() == "delete":
            if self.ordering_field and self.ordering_field in t.column_names:
                check_ordering_values(t[self.ordering_field], self.ordering_field)
            return
        if self.avro_schema_json is not None:
            schema = json.loads(self.avro_schema_json)
        else:
            schema = arrow_to_avro_schema(t.schema, "rows", "")
        check_values_fit(t, schema)


def _key_columns_fn(
    record_key_fields: tuple[str, ...],
    partition_fields: tuple[str, ...],
    hive_style: bool,
    hash_fields: str,
    num_buckets: int,
    key_extraction: str = "0.x",
    checks: _RowChecks | None = None,
    field_prefixed: bool = False,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def add(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            t = pa.Table.from_batches([batch])
            if checks is not None and checks.ordering_field and checks.ordering_field in t.column_names:
                column = t[checks.ordering_field]
                require_ordering_values(column, checks.ordering_field, checks.operation, checks.table_uri)
            if checks is not None:
                checks.check_values(t)
            keys = record_keys(t, record_key_fields, field_prefixed)
            parts = partition_paths(t, partition_fields, hive_style)
            buckets = pa.array(bucket_ids(keys, hash_fields, num_buckets, key_extraction=key_extraction), pa.int32())
            out = t.append_column(KEY_COLUMN, keys).append_column(PARTITION_COLUMN, parts)
            yield from out.append_column(BUCKET_COLUMN, buckets).to_batches()

    return add


def prepare_on_spark(
    table: Table, df: DataFrame, options: Mapping[str, str] | None = None, operation: str = "upsert"
) -> DataFrame:
    """Add record key, partition path and bucket columns on Spark and keep one row per record (key and partition).

    The columns come from the writer's own functions (:func:`record_keys`, :func:`partition_paths`,
    :func:`bucket_ids`), run inside Spark tasks, and every row is checked as the writer's ``prepare_batch`` checks
    it (keys, partition values, and for an upsert or insert a non-null ordering value) before any de-duplication,
    so a bad row fails the first action on the result — before the writer requests the deltacommit. Duplicates are
    resolved as ``prepare_batch`` does (``OverwriteWithLatestAvroPayload.preCombine``): the greatest ordering value
    wins, and ties go to the row that arrived later (Spark's input order, as ``monotonically_increasing_id`` numbers
    it).

    Args:
        table: the target table (for its key, partition, ordering and bucket settings).
        df: the rows to write.
        options: write options (bucket settings).
        operation: ``upsert``, ``insert`` or ``delete`` (a delete may leave its ordering values null).

    Returns:
        ``df``'s columns plus ``_evt_record_key``, ``_evt_partition_path`` and ``_evt_bucket_id``, one row per key
        and partition path.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType, IntegerType, StringType, StructField, StructType

    cfg = table.config
    num_buckets, hash_fields = _bucket_settings(table, options)
    fn = _key_columns_fn(
        cfg.record_key_fields,
        cfg.partition_fields,
        cfg.hive_style_partitioning,
        hash_fields,
        num_buckets,
        "1.x" if cfg.version >= 8 else "0.x",
        _RowChecks(table.path, operation, cfg.ordering_field, _table_schema_json(table)),
        single_key_field_prefixed(table),
    )
    keyed = df.withColumn(_SEQ_COLUMN, F.monotonically_increasing_id())
    schema = StructType(
        [
            *keyed.schema.fields,
            StructField(KEY_COLUMN, StringType(), False),
            StructField(PARTITION_COLUMN, StringType(), False),
            StructField(BUCKET_COLUMN, IntegerType(), False),
        ]
    )
    keyed = keyed.mapInArrow(fn, schema)
    order = [F.col(_SEQ_COLUMN).desc()]
    if cfg.ordering_field and cfg.ordering_field in df.columns:
        o = F.col(cfg.ordering_field)
        order.insert(0, o.desc_nulls_last())
        if isinstance(df.schema[cfg.ordering_field].dataType, (DoubleType, FloatType)):
            # Spark's sort takes -0.0 for 0.0; Hudi's Double.compareTo puts it below (format/ordering.py).
            order.insert(1, F.when(o == F.lit(0.0), ~o.cast("string").startswith("-")).desc_nulls_last())
    # One record per HoodieKey (record key and partition path), as Hudi de-duplicates under a non-global index.
    rank = F.row_number().over(Window.partitionBy(KEY_COLUMN, PARTITION_COLUMN).orderBy(*order))
    return keyed.withColumn("_evt_rank", rank).filter("_evt_rank = 1").drop("_evt_rank", _SEQ_COLUMN)


def _table_schema_json(table: Table) -> str | None:
    schema = latest_avro_schema(table.config, table.timeline)
    return None if schema is None else json.dumps(schema)


def _bucket_settings(table: Table, options: Mapping[str, str] | None) -> tuple[int, str]:
    """``hoodie.bucket.index.num.buckets`` and the hash fields, from the write options or ``hoodie.properties``."""
    cfg = table.config
    opts = dict(options or {})
    num_buckets = int(
        opts.get("hoodie.bucket.index.num.buckets") or cfg.properties.get("hoodie.bucket.index.num.buckets") or 0
    )
    if num_buckets <= 0:
        raise WriteError(
            f"{table.path}: hoodie.bucket.index.num.buckets is not set; only bucket-index tables are written"
        )
    hash_fields = str(
        opts.get("hoodie.bucket.index.hash.field") or cfg.properties.get("hoodie.bucket.index.hash.field") or ""
    ).strip() or ",".join(cfg.record_key_fields)
    return num_buckets, hash_fields


def _write_groups_from_shuffle(
    spec: WriteJobSpec,
    task: FileGroupTask,
    groups: Mapping[int, FileGroupWrite],
    num_buckets: int,
    hash_fields: str,
    items: Iterable[tuple[int, bytes]],
) -> Iterator[tuple[int, list[FileWritten]]]:
    pieces: dict[int, list[pa.Table]] = {}
    for index, data in items:
        pieces.setdefault(index, []).append(from_ipc(data))
    partition_id, stage_id, attempt_id = _task_ids()
    for index, tables in pieces.items():
        rows = pa.concat_tables(tables).drop_columns(list(_HELPER_COLUMNS))
        upserts, deletes = prepare_batch(spec, rows, num_buckets, hash_fields)
        fg = groups[index]
        if fg.is_new_file_group:
            deletes = deletes.slice(0, 0)  # as the writer does: no location, nothing to delete
        yield index, task(spec, fg, upserts, deletes, partition_id, stage_id, attempt_id)


def write_dataframe(
    table: Table,
    df: DataFrame,
    operation: str = "upsert",
    *,
    task: FileGroupTask = write_file_group,
    options: Mapping[str, str] | None = None,
) -> str:
    """Write a Spark DataFrame as one deltacommit, one Spark task per file group, without collecting it.

    Steps: :func:`prepare_on_spark` keys and de-duplicates the rows on Spark; the driver collects one row per
    ``(partition path, bucket)`` and lets :func:`evt_toolkit.write.writer.write` validate, allocate the instant,
    plan the file groups and drive the timeline; the executor it is given ignores the representative rows, ships
    each group's real rows (Arrow IPC, keyed by the group's task index) to exactly one Spark task, and that task
    runs ``prepare_batch`` + ``write_file_group``. The write stats in the commit come from those tasks; only the
    inflight workload profile counts the representative rows.

    Args:
        table: the table (see :func:`evt_toolkit.write.writer.write` for what it accepts).
        df: the rows.
        operation: ``upsert``, ``insert`` or ``delete``.
        task: the per-file-group function (tests wrap it to inject failures).
        options: write options passed to the writer.

    Returns:
        The completed instant.

    Raises:
        WriteError: a task failed (the instant is left inflight and readers ignore it) or the data is invalid.
        UnsupportedTableError: a table the writer cannot keep consistent (``writer.check_writable``), before any
            Spark job runs.
    """
    spark = df.sparkSession
    # Refused before the first Spark job (write() checks again, on the table as it is then).
    index = check_writable(table.refresh(), dict(options or {}))
    if index.kind != BUCKET:
        # A SIMPLE-index write joins the batch's keys with the base files' keys on the driver, so the rows are
        # collected there; the file-group tasks still run on Spark (docs/hudi-1x.md §3).
        return write(table, df, operation, executor=spark_executor(spark), options=options)
    prepared = prepare_on_spark(table, df, options, operation).cache()
    try:
        representatives = prepared.dropDuplicates([PARTITION_COLUMN, BUCKET_COLUMN])
        try:
            # Every row is keyed and checked here (_RowChecks), before the writer requests the deltacommit: a bad row
            # refuses the write while the table is untouched.
            sample = representatives.toArrow()
        except Exception as exc:  # the rows are keyed inside Spark tasks: their refusal comes back as Spark's error
            refusal = _batch_refusal(str(exc), table.storage.uri)
            if refusal is None:  # the job failed otherwise, or was cancelled: the table is untouched
                job = f"{table.storage.uri}: the Spark job keying and checking the batch"
                raise WriteError(spark_job_failed(job, exc)) from exc
            raise refusal from exc
        if sample.num_rows == 0:
            return write(table, sample.drop_columns(list(_HELPER_COLUMNS)), operation, executor=spark_executor(spark))
        num_buckets, hash_fields = _bucket_settings(table, options)

        def executor(
            spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]
        ) -> list[list[FileWritten]]:
            if not items:
                return []
            groups = {i: fg for i, (fg, _, _) in enumerate(items)}
            index_of = {(fg.partition_path, fg.bucket): i for i, fg in groups.items()}
            tagged = prepared.mapInArrow(
                _tag_fn(index_of, drop_unplanned=operation.strip().lower() == "delete", instant=spec.instant),
                "task int, rows binary",
            )
            shuffled = tagged.rdd.map(lambda r: (r[0], r[1])).partitionBy(len(items), lambda k: k)
            run = functools.partial(_write_groups_from_shuffle, spec, task, groups, num_buckets, hash_fields)
            job = shuffled.mapPartitions(run)
            what = f"hudi_evt deltacommit {spec.instant}: {len(items)} file groups"
            results = dict(run_spark_job(spark.sparkContext, what, job.collect))
            return [results.get(i, []) for i in range(len(items))]

        return write(table, sample.drop_columns(list(_HELPER_COLUMNS)), operation, executor=executor, options=options)
    finally:
        prepared.unpersist()


_REFUSAL = re.compile(r"evt_toolkit\.errors\.(SchemaMismatchError|WriteError): (.+)")


def _batch_refusal(text: str, uri: str) -> WriteError | None:
    """The writer's own refusal of a batch (a null key, a bad partition value, ...) raised inside a Spark task, as
    the error the local writer raises, naming the table; ``None`` when ``text`` holds no such refusal."""
    m = _REFUSAL.search(text)
    if m is None:
        return None
    cls = SchemaMismatchError if m.group(1) == "SchemaMismatchError" else WriteError
    return cls(f"{uri}: {m.group(2).strip()}")


def _tag_fn(
    index_of: Mapping[tuple[str, int], int], *, drop_unplanned: bool, instant: str = ""
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Split each input batch by file group: one ``(task index, Arrow IPC rows)`` row per group present.

    Rows of a file group the plan does not have are dropped only where the writer's plan drops them (``drop_unplanned``:
    deletes aimed at buckets with no file group). Any other such row means the rows changed after the driver planned
    the groups (the cached rows recomputed from a source that does not give the same rows twice): the task fails,
    and with it the write, left inflight, instead of committing without those rows.
    """

    def tag(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        for batch in batches:
            t = pa.Table.from_batches([batch])
            if t.num_rows == 0:
                continue
            groups = pa.table({"p": t[PARTITION_COLUMN], "b": t[BUCKET_COLUMN]}).group_by(["p", "b"]).aggregate([])
            tasks: list[int] = []
            blobs: list[bytes] = []
            for p, b in zip(groups["p"].to_pylist(), groups["b"].to_pylist(), strict=True):
                index = index_of.get((p, b))
                if index is None:
                    if drop_unplanned:  # deletes aimed at buckets with no file group: the writer's plan drops them
                        continue
                    raise WriteError(
                        f"deltacommit {instant}: rows for partition {p!r}, bucket {b} reached the write tasks but no "
                        "file group was planned for them: the DataFrame gave other rows than when the write was "
                        "planned (a source that is not deterministic, recomputed); nothing of them is committed"
                    )
                mask = pc.and_(pc.equal(t[PARTITION_COLUMN], p), pc.equal(t[BUCKET_COLUMN], b))
                tasks.append(index)
                blobs.append(to_ipc(t.filter(mask)))
            if tasks:
                yield pa.RecordBatch.from_pydict(
                    {"task": pa.array(tasks, pa.int32()), "rows": pa.array(blobs, pa.binary())}
                )

    return tag
