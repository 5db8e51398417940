"""The write driver: one deltacommit per call, as Hudi's ``BaseHoodieWriteClient.upsert/insert/delete`` on MOR.

Steps (every file written atomically and never rewritten; the table version's conventions — timeline folder and
names, JSON or Avro commit metadata, log names, markers — come from :mod:`evt_toolkit.format.table_version`):

1. validate the table (MOR; version 6 with the bucket index, or 8/9 with the bucket or SIMPLE index and no metadata
   table) and the batch; refuse while a clustering is pending;
2. allocate an instant strictly greater than every instant on the timeline;
3. key, de-duplicate and bucket the batch; plan one task per file group;
4. ``T.deltacommit.requested`` (empty), then ``T.deltacommit.inflight`` (the workload profile);
5. run the tasks (locally, or through an ``executor`` such as a Spark job);
6. ``T.deltacommit`` with the write stats, then drop the instant's marker folder.

If a task fails the instant stays requested/inflight: readers skip blocks of instants that never completed and file
groups created by them, so the table reads exactly as before; Hudi's rollback can find the files through the markers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import posixpath
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import (
    EvtError,
    PendingTableServiceError,
    SchemaMismatchError,
    StorageError,
    UnsupportedFeatureError,
    UnsupportedTableError,
    WriteError,
)
from evt_toolkit.faults import fault_point
from evt_toolkit.format.bloom import bloom_config_from_properties
from evt_toolkit.format.extra_metadata import WRITE_DELETE_EVENT_TIMES, DeleteEventTimes, encode_delete_event_times
from evt_toolkit.format.log_writer import META_FIELDS, arrow_to_avro_schema, avro_schema_json, with_meta_fields
from evt_toolkit.format.metadata import write_stat
from evt_toolkit.format.names import COMPLETED, INFLIGHT, REQUESTED, BaseFileName, LogFileName
from evt_toolkit.format.ownership import WRITE
from evt_toolkit.format.records import CommitMetadata, WriteStat
from evt_toolkit.format.table_version import WRITABLE_TABLE_VERSIONS
from evt_toolkit.read.key_states import log_key_states
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.log_blocks import read_block_instants
from evt_toolkit.storage.ownership import drop_ownership, owned_files, unscheduling_markers
from evt_toolkit.table.fs_view import FileSystemView, list_partition_files
from evt_toolkit.table.guards import has_metadata_table, require_writable
from evt_toolkit.table.schema import latest_avro_schema
from evt_toolkit.table.timeline import COMMIT, COMPACTION, Timeline
from evt_toolkit.write.fence import require_still_pending
from evt_toolkit.write.index import BUCKET, WriteIndex, check_record_layout, check_writable_1x, resolve_write_index
from evt_toolkit.write.instants import new_instant_time
from evt_toolkit.write.key_encoding import single_key_field_prefixed
from evt_toolkit.write.metadata_sync import added_files, sync_files_partition
from evt_toolkit.write.overtaken import retire_overtaken_rollbacks
from evt_toolkit.write.plan import (
    DEFAULT_MAX_DATA_BLOCK_SIZE,
    DEFAULT_MAX_LOG_FILE_SIZE,
    OPERATIONS,
    ExistingSlice,
    FileGroupWrite,
    PendingCompactionReservation,
    WriteJobSpec,
    plan_file_group_writes,
    reserved_versions,
)
from evt_toolkit.write.simple_index import (
    DEFAULT_INSERT_SPLIT_SIZE,
    base_file_keys,
    key_locations,
    plan_simple_index_writes,
)
from evt_toolkit.write.task import (
    BUCKET_COLUMN,
    FileWritten,
    check_required_fields,
    prepare_batch,
    write_file_group,
)

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = ["Executor", "TaskInput", "check_writable", "local_executor", "spark_job_failed", "write"]

TaskInput = tuple[FileGroupWrite, pa.Table, pa.Table]
#: ``executor(spec, tasks) -> stats per task``: runs :func:`write_file_group` for every task (e.g. as a Spark job).
Executor = Callable[[WriteJobSpec, list[TaskInput]], list[list[FileWritten]]]

DELTA_COMMIT = "deltacommit"
#: The key columns of a keyed batch.
_KEYS = ["_hoodie_partition_path", "_hoodie_record_key"]
#: Key generators whose keys and partition paths :mod:`evt_toolkit.write.task` reproduces.
_MAX_LOG_FILE_SIZE_KEY = "hoodie.logfile.max.size"
_MAX_DATA_BLOCK_SIZE_KEY = "hoodie.logfile.data.block.max.size"
_INSERT_SPLIT_SIZE_KEY = "hoodie.copyonwrite.insert.split.size"


def local_executor(spec: WriteJobSpec, tasks: list[TaskInput]) -> list[list[FileWritten]]:
    """Run every task in this process (task partition id = position): one after the other on a local file system;
    side by side on an object store, where a task mostly waits on its requests (:meth:`TableStorage.parallel`: a
    failure or Ctrl-C is raised once every task that started has returned, so none writes after the write failed)."""
    items = list(enumerate(tasks))

    def run(item: tuple[int, TaskInput]) -> list[FileWritten]:
        i, (fg, up, de) = item
        return write_file_group(spec, fg, up, de, task_partition_id=i)

    if len(items) > 1:
        storage = TableStorage.from_uri(spec.table_uri, spec.storage_options)
        if storage.is_object_store:
            return storage.parallel(run, items)
    return [run(item) for item in items]


# -- input ------------------------------------------------------------------------------------------------------------


def _to_arrow(data: Any, where: str) -> pa.Table:
    """The batch as an Arrow table, with one column per name (pandas and Arrow both allow a name twice)."""
    try:
        batch = _as_arrow(data)
    except (ValueError, TypeError, pa.ArrowException) as exc:  # pyarrow's conversion errors derive from these
        raise SchemaMismatchError(f"{where}: the batch cannot be converted to Arrow: {exc}") from exc
    names = batch.column_names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SchemaMismatchError(f"{where}: the batch has more than one column named {', '.join(map(repr, twice))}")
    plain = pa.schema([f.with_type(_plain_type(f.type)) for f in batch.schema])
    if plain != batch.schema:
        try:
            columns = [_plain_column(batch.column(i), f.type) for i, f in enumerate(plain)]
            batch = pa.Table.from_arrays(columns, schema=plain)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaMismatchError(f"{where}: the batch's view columns cannot be read as plain ones: {exc}") from exc
    return batch


def _plain_column(column: pa.ChunkedArray, plain: pa.DataType) -> pa.Array | pa.ChunkedArray:
    if column.type == plain:
        return column
    arr = column.combine_chunks()
    if pa.types.is_list_view(arr.type) or pa.types.is_large_list_view(arr.type):
        # Arrow's own list_view -> list cast builds offsets too short for a null list (pyarrow 26): rebuilt from the
        # lists' lengths and their values in order.
        sizes = pc.fill_null(pc.list_value_length(arr), 0).cast(pa.int32())
        offsets = pa.array(np.concatenate([[0], np.cumsum(sizes.to_numpy())]).astype(np.int32))
        values = _plain_column(pa.chunked_array([pc.list_flatten(arr)]), plain.value_type)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        out = pa.ListArray.from_arrays(offsets, values, type=plain, mask=arr.is_null() if arr.null_count else None)
        out.validate(full=True)
        return out
    return arr.cast(plain)


def _plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with Arrow's view layouts replaced by the plain ones holding the same values (``string_view`` →
    ``string``, ``binary_view`` → ``binary``, ``list_view`` → ``list``), at any depth: the writer's keys, partition
    values and Avro encoding work on the plain layouts (polars hands views over)."""
    if t == pa.string_view():
        return pa.string()
    if t == pa.binary_view():
        return pa.binary()
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_plain_type(t.value_type))
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain_type(t.key_type)), t.item_field.with_type(_plain_type(t.item_type)))
    return t


def _as_arrow(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    module = type(data).__module__
    if module.startswith("pyspark"):
        try:
            to_arrow = getattr(data, "toArrow", None)
            if to_arrow is not None:
                return cast(pa.Table, to_arrow())
            return pa.Table.from_pandas(data.toPandas(), preserve_index=False)
        except (ValueError, TypeError, pa.ArrowException):
            raise
        except Exception as exc:  # Py4JJavaError, PySparkException: the job computing the rows failed or was cancelled
            raise WriteError(spark_job_failed("the Spark job computing the batch", exc)) from exc
    if module.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise WriteError(f"cannot write a {type(data).__name__}; pass a pyarrow Table, a pandas or a Spark DataFrame")


def spark_job_failed(what: str, exc: BaseException) -> str:
    """``<what> failed or was cancelled; nothing was written: <Spark's reason>`` (the line of Spark's error that
    says why, not its stack trace)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    reason = next((ln for ln in lines if "cancel" in ln.lower()), None)
    reason = reason or next((ln for ln in lines if "Exception:" in ln or "Error:" in ln), lines[0] if lines else "")
    return f"{what} failed or was cancelled; nothing was written: {reason[:400]}"


def check_writable(table: Table, options: Mapping[str, str]) -> WriteIndex:
    """Refuse a table :func:`write` cannot keep consistent (the table as last refreshed); else the index to write it
    with. :func:`write` checks it first; a Spark DataFrame write checks it before its first Spark job too.

    Raises:
        UnsupportedTableError: naming the table and the reason.
    """
    # The one guard (type, version, metadata table); versions 8 and 9 are written too (docs/hudi-1x.md).
    require_writable(table, "write", versions=WRITABLE_TABLE_VERSIONS, merges=True)
    cfg = table.config
    where = table.storage.uri
    if cfg.timeline_layout >= 2:
        return check_writable_1x(table, options)
    check_record_layout(table)
    if "hoodie.bucket.index.num.buckets" not in cfg.properties:
        raise UnsupportedTableError(
            f"{where}: not a bucket-index table (hoodie.bucket.index.num.buckets missing); create it with "
            "HudiTable.create"
        )
    return resolve_write_index(
        cfg.properties, options, version=cfg.version, where=where, record_key_fields=cfg.record_key_fields
    )


def _int_option(options: Mapping[str, str], props: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key, props.get(key))
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise WriteError(f"{key}={raw!r} is not an integer") from None
    if value <= 0:
        raise WriteError(f"{key} must be positive, got {value}")
    return value


def _strip_null(avro_type: Any) -> Any:
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        return branches[0] if len(branches) == 1 else branches
    return avro_type


@contextlib.contextmanager
def _naming(uri: str) -> Iterator[None]:
    """Add the table to a refusal of the batch that does not name it yet (every ``EvtError`` names its table)."""
    try:
        yield
    except (SchemaMismatchError, WriteError, UnsupportedFeatureError) as exc:
        if uri in str(exc):
            raise
        raise type(exc)(f"{uri}: {exc}") from exc


def _writer_schema(table: Table, batch: pa.Schema, operation: str) -> dict[str, Any]:
    """The writer schema (no meta fields): the table's latest schema, or the batch's on the first write.

    Schema evolution is not supported: an upsert must carry exactly the table's columns, with the same Avro types
    (nullability aside).
    """
    cfg = table.config
    user = pa.schema([f for f in batch if f.name not in META_FIELDS and f.name != BUCKET_COLUMN])
    derived = arrow_to_avro_schema(user, f"{_avro_name(cfg.name)}_record", f"hoodie.{_avro_name(cfg.name)}")
    existing = latest_avro_schema(cfg, table.timeline)
    if existing is None:
        return derived
    have = {f["name"]: _strip_null(f["type"]) for f in derived["fields"]}
    want = {f["name"]: _strip_null(f["type"]) for f in existing["fields"] if f["name"] not in META_FIELDS}
    if operation == "delete":
        # A delete's ordering value is compared only with one of the same class (Hudi's deltaMergeDeleteRecord,
        # isSameClass); of another type it would win where our reader, casting it, might let the record stay.
        o = cfg.ordering_field
        if o and o in have and o in want and _type_key(have[o]) != _type_key(want[o]):
            raise SchemaMismatchError(
                f"the deletes' ordering field {o!r} has Avro type {json.dumps(have[o])}, the table has "
                f"{json.dumps(want[o])}"
            )
        return existing
    missing = [n for n in want if n not in have]
    if missing:
        raise SchemaMismatchError(f"columns {', '.join(map(repr, missing))} of the table schema are missing")
    extra = [n for n in have if n not in want]
    if extra:
        raise SchemaMismatchError(
            f"columns {', '.join(map(repr, extra))} are not in the table schema (schema evolution is not supported)"
        )
    for name, avro_type in want.items():
        if _type_key(have[name]) != _type_key(avro_type):
            raise SchemaMismatchError(
                f"column {name!r} has Avro type {json.dumps(have[name])}, the table has {json.dumps(avro_type)}"
            )
    return existing


def _type_key(avro_type: Any) -> str:
    """Compare Avro types by structure, ignoring names and namespaces of nested records (Spark derives those)."""

    def strip(t: Any) -> Any:
        if isinstance(t, dict):
            return {k: strip(v) for k, v in t.items() if k not in ("name", "namespace", "doc", "default")}
        if isinstance(t, list):
            return [strip(x) for x in t]
        return t

    return json.dumps(strip(avro_type), sort_keys=True)


def _avro_name(table_name: str) -> str:
    """A valid Avro name for the table (``AvroSchemaUtils`` sanitizes the same way: invalid characters → ``_``)."""
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in table_name)
    return out if out and not out[0].isdigit() else f"_{out}"


# -- planning ---------------------------------------------------------------------------------------------------------


def _existing_slices(table: Table) -> list[ExistingSlice]:
    return [
        ExistingSlice(
            s.partition_path,
            s.file_id,
            s.base_instant,
            s.base_file.name if s.base_file is not None else None,
            tuple(lf.name for lf in s.log_files),
        )
        for s in table.view.latest_file_slices()
    ]


def _check_slices_still_latest(table: Table, instant: str, fgs: list[FileGroupWrite], timeline: Timeline) -> None:
    """Refuse to complete a version-6 write whose logs went to a slice a compaction scheduled meanwhile supersedes.

    A v6 log belongs to the slice named in its file name. A writer picks its slices before its ``requested`` file
    exists, so a compaction scheduled in between (whose check for earlier inflight writes cannot see this one) may
    plan those slices without this write's logs; once it completes they sit in an old slice no reader reads. Looked
    at after the logs are written: a plan written after this look lists the slices after them, so it holds them
    (or its run refuses the slice), and a plan written before it is seen here.

    Raises:
        WriteError: naming the compaction and file group; the write is left inflight (roll it back, write again).
    """
    partitions = [fg.partition_path for fg in fgs if not fg.is_new_file_group]
    if not partitions:
        return
    # The written partitions only: a second listing of the whole table per write would cost a table of many
    # partitions (on an object store, a LIST request each) as much as the write's own view did.
    view = FileSystemView(table.config, timeline, list_partition_files(table.storage, partitions))
    latest = {(s.partition_path, s.file_id): s.base_instant for s in view.latest_file_slices()}
    pending = {inst.time for inst in view.pending_compaction_operations.values()}
    written = {fg.base_instant for fg in fgs if not fg.is_new_file_group}
    unscheduling = {c for c in pending & written if any(map(table.storage.exists, unscheduling_markers(c)))}
    for fg in fgs:
        if fg.is_new_file_group:
            continue
        now = latest.get((fg.partition_path, fg.file_id))
        if now is not None and now == fg.base_instant and now in unscheduling:
            # The plan that opened this slice is being taken back: completing would leave this write's logs in a
            # slice no timeline knows once the plan is gone (compaction/unschedule.py).
            raise WriteError(
                f"deltacommit {instant} of {table.storage.uri}: compaction {now} is being unscheduled, and this "
                f"write's logs went to the slice it opened in file group {fg.file_id} in {fg.partition_path!r}; the "
                "write was left inflight: roll it back and write again"
            )
        if now is not None and now != fg.base_instant:
            raise WriteError(
                f"deltacommit {instant} of {table.storage.uri}: compaction {now} was scheduled on file group "
                f"{fg.file_id} in {fg.partition_path!r} while this write ran, and its logs went to the slice before "
                f"it ({fg.base_instant}), which no reader would read once {now} completes; the write was left "
                "inflight: roll it back and write again"
            )


def _bucket_files(table: Table, partitions: list[str]) -> list[tuple[str, str, str]]:
    """``(partition, file id, name instant)`` of every base and log file of ``partitions``."""
    listing = list_partition_files(table.storage, partitions)
    out = [(bf.path.rsplit("/", 1)[0] if "/" in bf.path else "", bf.file_id, bf.instant) for bf in listing.base_files]
    out += [(partition, lf.file_id, lf.instant) for partition, lf in listing.log_files]
    return sorted(out)


def _join_pending_buckets(table: Table, instant: str, fgs: list[FileGroupWrite]) -> list[FileGroupWrite]:
    """Versions 8 and 9: point a new bucket file group at the one a pending write already created for the bucket.

    The table's view shows committed file groups only, so a bucket whose only file group was created by a write that
    has not completed (still running, or failed and not rolled back) looks empty. A new file group beside it would
    give the bucket two file groups if that write completes (:func:`_check_new_buckets_still_free` refuses that).
    1.x logs are named by their own deltacommit, so this write joins that file group instead: if the other write
    completes, both logs are in the one group; if it is rolled back, its files go and this write's stay. A version-6
    log is named after its slice's base instant — the other write's — and would go with it: there the new file group
    stays, and the check after the logs refuses whichever of the two sees the other's completed.
    """
    new = _new_buckets(fgs)
    if not new or not table.format.logs_named_by_deltacommit:
        return fgs
    pending = {i.time for i in table.timeline.instants if not i.is_completed}
    taken: dict[tuple[str, str], str] = {}  # (partition, bucket) -> file id
    for partition, file_id, other in _bucket_files(table, sorted({fg.partition_path for fg in new})):
        if other in pending and other != instant:
            taken.setdefault((partition, file_id[:8]), file_id)
    out = []
    for fg in fgs:
        joined = taken.get((fg.partition_path, f"{fg.bucket:08d}")) if fg in new else None
        out.append(fg if joined is None else dataclasses.replace(fg, file_id=joined))
    return out


def _reconcile(storage: TableStorage, instant: str, written: set[str]) -> None:
    """Delete the files a task attempt of ``instant`` recorded that no write stat of the commit lists.

    A record names a file its attempt was about to create; an attempt that failed in between never made it, and on
    version 6 a log's name carries its slice, not its writer: another write into the slice can have committed a log
    under that name since. So a recorded log goes only while every block in it is ``instant``'s (as a rollback
    decides); base files carry their writer's instant in their name.
    """
    for path in owned_files(storage, instant, [WRITE]):
        if path not in written and _written_by(storage, path, instant):
            storage.delete_file(path)


def _written_by(storage: TableStorage, rel: str, instant: str) -> bool:
    """Whether ``rel`` exists and, for a log, holds no block but ``instant``'s (torn bytes aside)."""
    if LogFileName.parse(posixpath.basename(rel)) is None:
        return storage.exists(rel)
    why = f"of deltacommit {instant} to tell whether only this write wrote it (it is kept)"
    read = read_block_instants(storage, rel, why)
    return read is not None and all(i == instant for i in read.instants)


def _new_buckets(fgs: list[FileGroupWrite]) -> list[FileGroupWrite]:
    """The file groups a write creates for a bucket without a base file (the ones two writes may both create)."""
    return [fg for fg in fgs if fg.is_new_file_group and not fg.creates_base_file]


def _new_bucket_files(table: Table, fgs: list[FileGroupWrite]) -> list[tuple[str, str, str]]:
    """The files of the partitions where a write creates a bucket's file group (none: nothing is listed)."""
    new = _new_buckets(fgs)
    return _bucket_files(table, sorted({fg.partition_path for fg in new})) if new else []


def _check_new_buckets_still_free(
    table: Table,
    instant: str,
    fgs: list[FileGroupWrite],
    files: list[tuple[str, str, str]],
    timeline: Timeline,
) -> None:
    """Refuse to complete a write that created a bucket's file group when another file group of that bucket exists.

    A write plans a new file group for a bucket that has none when it looks at the table; another write may do the
    same before either completes. Both completing leaves two file groups for one bucket: a key both wrote is read
    twice (the older version beside the newer), and the bucket index, which expects one file group per bucket,
    routes to neither reliably. Looked at after this write's files exist. On versions 8 and 9 another file group
    counts when its files' instant is on the timeline (pending or completed) or predates it: of two such writes the
    one that looks second sees the other's files and fails; both may fail, never both complete (a write that sees a
    pending one's file group when it plans joins it instead, :func:`_join_pending_buckets`). On version 6 only a
    completed (or archived) one counts, so that a failed write left pending does not block the bucket: the write
    that looks after the other completed fails; two that both look while the other is still pending both complete
    (a window of milliseconds the version-6 naming leaves open). Files of rolled-back writes never count.
    ``files`` (:func:`_new_bucket_files`) are listed before ``timeline`` is loaded, so that a write whose files are
    listed and which completed before the load is seen completed.

    Raises:
        WriteError: naming the bucket, both file groups and the other instant; the write is left inflight (roll it
            back and write again: the next attempt writes into the file group that is there).
    """
    new = _new_buckets(fgs)
    joinable = table.format.logs_named_by_deltacommit
    known = {i.time for i in timeline.instants}
    for fg in new:
        bucket = f"{fg.bucket:08d}"
        for partition, file_id, other in files:
            if partition != fg.partition_path or file_id[:8] != bucket or file_id == fg.file_id:
                continue
            if not timeline.is_visible(other) and (not joinable or other not in known):
                # Left by a rolled-back write; on version 6, a write that has not completed (one that failed and
                # is not rolled back must not block the bucket): of two racing writes, the one that looks after the
                # other completed fails.
                continue
            raise WriteError(
                f"deltacommit {instant} of {table.storage.uri}: bucket {fg.bucket} of {fg.partition_path!r} had no "
                f"file group when this write planned, and it created {fg.file_id}; meanwhile instant {other} "
                f"created {file_id} for the same bucket, and two file groups for one bucket would hold a key twice; "
                "the write was left inflight: roll it back and write again"
            )


def _check_no_later_compaction(table: Table, instant: str, fgs: list[FileGroupWrite], timeline: Timeline) -> None:
    """Refuse to complete a 1.x write when a compaction requested after its instant plans one of its file groups.

    A 1.x log joins the slice of the latest base instant at or before its deltacommit's *completion* time and
    replays there by the instant in its *name*. A compaction ``C`` names its links and carry-over log with ``C``
    and completes at ``C`` (docs/hudi-1x.md §4.4), so a log named ``W < C`` that completes after ``C`` joins slice
    ``C`` and replays *before* them: the leftovers' older records win over this write's. A write takes its instant
    before its ``requested`` file exists, so a compaction scheduled in between sees no pending write (fence 1), and
    its run sees no log of this write when it lists before the logs are written (fence 2). Looked at after the logs
    are written: a plan whose run lists after them finds them (fence 2 refuses the run), and a plan on the timeline
    now — pending or completed — is seen here.

    Raises:
        WriteError: naming the compaction and file group; the write is left inflight (roll it back, write again).
    """
    mine = {(fg.partition_path, fg.file_id) for fg in fgs}
    if not mine:
        return
    for inst in timeline.instants:
        if inst.time <= instant or inst.action not in (COMPACTION, COMMIT):
            continue
        try:
            if inst.is_completed:
                planned = timeline.commit_metadata(inst).file_groups()
            else:
                planned = {(op.partition_path, op.file_id) for op in timeline.compaction_plan(inst).operations}
        except EvtError:
            # A plan that cannot be read (taken back while this looked, or damaged): assume the worst.
            planned = mine
        for partition, file_id in sorted(mine & planned):
            raise WriteError(
                f"deltacommit {instant} of {table.storage.uri}: compaction {inst.time}, requested after this write's "
                f"instant, plans file group {file_id} in {partition!r}; this write's logs would join its new slice "
                "and replay before the logs it leaves there, whose older records would win; the write was left "
                "inflight: roll it back and write again"
            )


def _check_no_later_write(table: Table, instant: str, fgs: list[FileGroupWrite], timeline: Timeline) -> None:
    """Refuse to complete a 1.x write when a deltacommit requested after its instant already completed in one of its
    file groups.

    Completed, this write would be the later commit of the two (its completion time is issued after the other's, so
    incremental windows and Hudi's completion-time ordering put its records last) while every reader that replays a
    slice's logs by the instant in their names (Java's ``LogFileComparator``, hudi-rs, this toolkit) puts them
    first: the snapshot would answer with the other write's records where this one, committed last, must win
    (commit-time ordering, and ties in event-time ordering). Hudi's optimistic concurrency control refuses the same
    pair (two writes of one file group, the second to commit fails); refused here, the write is left inflight — roll
    it back and write again, under an instant after the other's. Looked at after the logs are written, before the
    metadata-table sync.

    Raises:
        WriteError: naming the other deltacommit and the file group.
    """
    mine = {(fg.partition_path, fg.file_id) for fg in fgs}
    if not mine:
        return
    for inst in timeline.instants:
        if inst.time <= instant or inst.action != DELTA_COMMIT or not inst.is_completed:
            continue
        try:
            touched = timeline.commit_metadata(inst).file_groups()
        except EvtError:
            touched = mine  # unreadable (rolled back while this looked, or damaged): assume the worst
        for partition, file_id in sorted(mine & touched):
            raise WriteError(
                f"deltacommit {instant} of {table.storage.uri}: deltacommit {inst.time}, requested after this write's "
                f"instant, completed first and wrote file group {file_id} in {partition!r}; completing now would make "
                "this write the later commit while readers replay its logs before the other's; the write was left "
                "inflight: roll it back and write again"
            )


def _check_inserted_keys_still_new(
    table: Table,
    instant: str,
    tasks: list[tuple[FileGroupWrite, pa.Table, pa.Table]],
    timeline: Timeline,
    checked: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """Refuse to complete a SIMPLE-index write that inserted a key which a write completed since this one took its
    instant inserted too.

    The SIMPLE index sends a key no base file holds to a new file group. Two writes planning side by side both find
    no base file holding a new key and both insert it, each into a file group of its own; both completed, the key
    lives in two file groups and every reader returns it twice. Hudi's optimistic concurrency control does not see
    it (the two writes touch different file groups). A write that completed before this one took its instant was
    there when it planned; one that completed since may not have been: the base files it wrote in this write's
    partitions are read (their key column) and a key in both fails this write. Looked at after this write's files
    exist and again on the timeline its completion time is issued from, so of two such writes the one completing
    second fails. *Left open:* two that both look before either completes (milliseconds; no lock is shared).

    ``checked`` holds the deltacommits an earlier look already read (they are not read again); the return value adds
    the ones read now. A base file that cannot be read is skipped only when it is gone (a clean removed it after a
    compaction rewrote its file group: the compaction's files hold its keys, and the compaction's own checks see
    them); any other failure to read it raises rather than let a duplicate through.

    Raises:
        WriteError: naming the other deltacommit, its base file and a key; the write is left inflight (roll it back
            and write again: the next attempt finds the key in the other's base file and updates it).
        StorageError: a base file of such a deltacommit exists but cannot be read (named); the write is left inflight.
    """
    mine: dict[str, set[str]] = {}
    for fg, up, _ in tasks:
        if fg.creates_base_file and up.num_rows:
            mine.setdefault(fg.partition_path, set()).update(up["_hoodie_record_key"].to_pylist())
    if not mine:
        return checked
    now_checked = set(checked)
    for inst in timeline.instants:
        if inst.time == instant or inst.time in checked or inst.action != DELTA_COMMIT or not inst.is_completed:
            continue
        if (inst.completion_time or inst.time) <= instant:
            continue  # completed before this write took its instant: its base files were there when it planned
        now_checked.add(inst.time)
        for st in timeline.commit_metadata(inst).write_stats:
            keys = mine.get(st.partition_path)
            name = st.path.rsplit("/", 1)[-1]
            if not keys or BaseFileName.parse(name) is None:
                continue
            try:
                theirs = base_file_keys(table, st.path)
            except StorageError:
                if table.storage.is_file(st.path):
                    raise  # there but unreadable: a duplicate cannot be ruled out
                continue  # gone since (a clean after a compaction rewrote it): the compaction's files hold its keys
            both = keys & set(theirs.to_pylist())
            if both:
                raise WriteError(
                    f"deltacommit {instant} of {table.storage.uri}: deltacommit {inst.time}, completed since this "
                    f"write took its instant, inserted key {min(both)!r} into {table.storage.full_path(st.path)}, and "
                    "this write inserted it into a file group of its own; completed, the key would be read twice; "
                    "the write was left inflight: roll it back and write again"
                )
    return frozenset(now_checked)


def _pending_reservations(table: Table) -> list[PendingCompactionReservation]:
    out: list[PendingCompactionReservation] = []
    for inst in table.timeline.pending_compactions():
        plan = table.timeline.compaction_plan(inst)
        for op in plan.operations:
            out.append(
                PendingCompactionReservation(
                    op.partition_path, op.file_id, inst.time, reserved_versions(op, inst.time, plan.extra)
                )
            )
    return out


def _group_keys(partitions: pa.Array | pa.ChunkedArray, buckets: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pc.binary_join_element_wise(
        pc.cast(partitions, pa.string()), pc.cast(pc.cast(buckets, pa.int64()), pa.string()), "\x00"
    )


def _split_by_group(rows: pa.Table, group_of_key: pa.Array, n_groups: int) -> list[pa.Table]:
    """Split rows into one table per file group (vectorized: one sort, then contiguous slices)."""
    if rows.num_rows == 0:
        return [rows.slice(0, 0)] * n_groups
    idx = pc.index_in(_group_keys(rows["_hoodie_partition_path"], rows[BUCKET_COLUMN]), value_set=group_of_key)
    group = pc.fill_null(idx, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(group, kind="stable")
    sorted_rows = rows.take(pa.array(order))
    bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
    return [sorted_rows.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i])) for i in range(n_groups)]


def _pairs(rows: pa.Table) -> set[tuple[str, int]]:
    if rows.num_rows == 0:
        return set()
    t = pa.table({"p": rows["_hoodie_partition_path"], "b": rows[BUCKET_COLUMN]}).group_by(["p", "b"]).aggregate([])
    return set(zip(t["p"].to_pylist(), t["b"].to_pylist(), strict=True))


# -- timeline ---------------------------------------------------------------------------------------------------------


def _profile_stat(partition: str, file_id: str, prev_commit: str, updates: int, inserts: int) -> WriteStat:
    """A ``HoodieWriteStat`` of the inflight workload profile (``BaseCommitActionExecutor.saveWorkloadProfile...``)."""
    return WriteStat.from_record(
        partition, write_stat(fileId=file_id, prevCommit=prev_commit, numUpdateWrites=updates, numInserts=inserts)
    )


def _workload_profile(tasks: list[TaskInput], operation_type: str) -> CommitMetadata:
    by_partition: dict[str, list[WriteStat]] = {}
    inserts: dict[str, int] = {}
    for fg, up, de in tasks:
        stats = by_partition.setdefault(fg.partition_path, [])
        if fg.is_new_file_group:
            # Records of new buckets are untagged inserts; Hudi profiles them per partition under fileId "".
            inserts[fg.partition_path] = inserts.get(fg.partition_path, 0) + up.num_rows
        else:
            stats.append(_profile_stat(fg.partition_path, fg.file_id, fg.prev_commit, up.num_rows + de.num_rows, 0))
    for partition, count in inserts.items():
        by_partition[partition].insert(0, _profile_stat(partition, "", "null", 0, count))
    return CommitMetadata.of(
        (st for p in sorted(by_partition) for st in by_partition[p]), operation_type=operation_type
    )


#: How many times a write takes a new instant because a later commit completed while it planned.
_INSTANT_ATTEMPTS = 3


def _completed_after(table: Table, instant: str) -> str | None:
    """A commit (write or compaction) with a requested time after ``instant`` that has completed, on a fresh listing."""
    table.refresh()
    later = [i.time for i in table.timeline.completed_commits() if i.time > instant]
    return min(later) if later else None


def _instant_file(table: Table, instant: str, state: str, completion: str | None = None) -> str:
    return table.instant_file(instant, DELTA_COMMIT, state, completion)


def _timeline_times(table: Table) -> list[str]:
    """Every requested and completion time on the timeline: a new instant (or completion time) exceeds them all,
    as Hudi's ``TimeGenerator`` issues both from one clock."""
    times = [i.time for i in table.timeline]
    times.extend(i.completion_time for i in table.timeline if i.completion_time)
    return times


# -- the driver -------------------------------------------------------------------------------------------------------


def write(
    table: Table,
    data: Any,
    operation: str = "upsert",
    spark: Any = None,
    *,
    executor: Executor | None = None,
    options: Mapping[str, str] | None = None,
) -> str:
    """Write one batch as a deltacommit (table versions 6, 8 and 9; see docs/hudi-1x.md for 8 and 9).

    Args:
        table: the table: MERGE_ON_READ, version 6 with the bucket index, or version 8/9 with the bucket index or,
            declared in ``options``, the SIMPLE index; no metadata table.
        data: a ``pyarrow.Table``, a pandas DataFrame or a Spark DataFrame (collected to Arrow on the driver).
        operation: ``upsert``, ``insert`` (same path: the bucket index routes inserts like upserts) or ``delete``
            (rows need only the record key and partition fields; an ordering field value, if present, is written as
            the delete's ordering value).
        spark: the Spark session; only used to collect a Spark DataFrame. Pass ``executor`` to run the tasks on Spark.
        executor: runs the file-group tasks: ``executor(spec, [(FileGroupWrite, upserts, deletes), ...])`` returns
            each task's write stats. Defaults to a local loop.
        options: write configs by Hudi key: ``hoodie.logfile.max.size``, ``hoodie.logfile.data.block.max.size``,
            ``hoodie.copyonwrite.insert.split.size`` (otherwise read from ``hoodie.properties``, else Hudi's
            defaults); for stock v8/v9 tables the index their writers use: ``hoodie.index.type`` (``SIMPLE`` or
            ``BUCKET`` with ``hoodie.bucket.index.num.buckets``).

    Returns:
        The completed instant; ``""`` when a delete found nothing to delete on a table that never held a record
        (nothing is committed then).

    Raises:
        SchemaMismatchError: a required field is missing or mistyped, or the columns differ from the table schema.
        WriteError: null record keys, bad options, or a task failed (the instant is left inflight, named); or a
            commit with a later instant completed while this write planned, three times running (nothing written).
        UnsupportedTableError: a table or index this writer cannot keep consistent (named, with the reason).
        PendingTableServiceError: a clustering is pending.

    Example:
        >>> import pyarrow as pa
        >>> t = HudiTable.create("/tmp/t", "t", "id", ordering_field="ts")  # doctest: +SKIP
        >>> write(t, pa.table({"id": [1, 2], "ts": [10, 20]}))  # doctest: +SKIP
        '20250101000000000'
    """
    del spark  # Spark DataFrames carry their session; tasks run through `executor`.
    op = operation.strip().lower() if isinstance(operation, str) else ""
    if op not in OPERATIONS:
        raise WriteError(f"unknown write operation {operation!r}; expected one of {', '.join(OPERATIONS)}")
    opts = dict(options or {})
    table.refresh()
    index = check_writable(table, opts)
    cfg = table.config
    fmt = table.format
    props = cfg.properties
    timeline = table.timeline
    clustering = timeline.pending_clustering()
    if clustering:
        raise PendingTableServiceError(
            f"{table.storage.uri}: clustering {', '.join(i.time for i in clustering)} is pending; writes wait for it"
        )

    # Nothing is written before the requested file: a batch the blocks below refuse leaves the table as it was, and
    # the error names the table.
    with _naming(table.storage.uri):
        batch = _to_arrow(data, table.storage.uri)
        check_required_fields(
            batch.schema, op, cfg.record_key_fields, cfg.partition_fields, cfg.ordering_field, cfg.event_time_field
        )
        writer_schema = _writer_schema(table, batch.schema, op)
        # A delete on a table without a schema yet derives one from its key columns only: keep it out of the commit so
        # that it never becomes the table schema.
        first_delete = op == "delete" and latest_avro_schema(cfg, timeline) is None
        schema_text = "" if first_delete else avro_schema_json(writer_schema)
        bloom = bloom_config_from_properties({**props, **opts}, table.storage.uri)
        # The encoding of a single-field complex key is the one the table's records carry (key_encoding).
        field_prefixed = single_key_field_prefixed(table)
    storage = table.storage
    for attempt in range(1, _INSTANT_ATTEMPTS + 1):
        with _naming(table.storage.uri):
            instant = new_instant_time(_timeline_times(table), cfg.timezone, scope=table.storage.uri)
            spec = WriteJobSpec(
                table_uri=table.storage.uri,
                storage_options=table.storage.options,
                instant=instant,
                operation=op,
                avro_schema_json=avro_schema_json(with_meta_fields(writer_schema)),
                record_key_fields=cfg.record_key_fields,
                partition_fields=cfg.partition_fields,
                ordering_field=cfg.ordering_field,
                event_time_field=cfg.event_time_field,
                event_time_unit=table.config.event_time_unit,
                min_event_time_header=cfg.min_event_time_header,
                max_log_file_size=_int_option(opts, props, _MAX_LOG_FILE_SIZE_KEY, DEFAULT_MAX_LOG_FILE_SIZE),
                table_name=cfg.name,
                hive_style_partitioning=cfg.hive_style_partitioning,
                field_prefixed_keys=field_prefixed,
                max_data_block_size=_int_option(opts, props, _MAX_DATA_BLOCK_SIZE_KEY, DEFAULT_MAX_DATA_BLOCK_SIZE),
                table_version=cfg.version,
                bloom=bloom,
            )
            if index.kind == BUCKET:
                upserts, deletes = prepare_batch(spec, batch, index.num_buckets, index.hash_fields)
                fgs = plan_file_group_writes(
                    instant,
                    _pairs(upserts) | _pairs(deletes),
                    _existing_slices(table),
                    # v8+ writers never name logs after a pending compaction: their logs join slices by completion time.
                    [] if fmt.logs_named_by_deltacommit else _pending_reservations(table),
                )
                if fmt.logs_named_by_deltacommit:
                    # Each deltacommit opens new log files named after itself, from version 1 (HoodieWriteHandle, v8+).
                    fgs = [dataclasses.replace(fg, log_version=1, existing_log_files=()) for fg in fgs]
                fgs = _join_pending_buckets(table, instant, fgs)
            else:
                upserts, deletes = prepare_batch(spec, batch, 1, ",".join(cfg.record_key_fields))
                slices = {(s.partition_path, s.file_id): (s.base_instant, s.base_file) for s in _existing_slices(table)}
                partitions = {p for p, _ in _pairs(upserts) | _pairs(deletes)}
                split = _int_option(opts, props, _INSERT_SPLIT_SIZE_KEY, DEFAULT_INSERT_SPLIT_SIZE)
                locations = key_locations(table, partitions)
                fgs, upserts, deletes = plan_simple_index_writes(
                    instant,
                    upserts,
                    deletes,
                    locations,
                    slices,
                    insert_split_size=split,
                    log_states=log_key_states(
                        table, pa.concat_tables([upserts.select(_KEYS), deletes.select(_KEYS)]), locations
                    ),
                    ordering_field=cfg.ordering_field,
                    merge_mode=cfg.merge_mode,
                )
            group_keys = _group_keys(
                pa.array([fg.partition_path for fg in fgs], pa.string()),
                pa.array([fg.bucket for fg in fgs], pa.int64()),
            )
            up_parts = _split_by_group(upserts, group_keys, len(fgs))
            de_parts = _split_by_group(deletes, group_keys, len(fgs))
            tasks: list[TaskInput] = []
            for fg, up, de in zip(fgs, up_parts, de_parts, strict=True):
                if fg.is_new_file_group:
                    # The bucket index finds no location for these keys: deletes of keys that were never written are
                    # dropped (HoodieDeleteHelper keeps only records whose location is known).
                    if up.num_rows == 0:
                        continue
                    de = de.slice(0, 0)
                tasks.append((fg, up, de))

            if not tasks and first_delete:
                # Deletes on a table that never held a record delete nothing; an empty commit without a schema would
                # leave the table unreadable for stock readers that resolve the schema from the latest commit
                # (hudi-rs).
                return ""
        storage.write_bytes_atomic(_instant_file(table, instant, REQUESTED), b"")
        # A reader that listed the timeline before the requested file existed and saw a commit later than this
        # instant answered without this write (time travel, layout-1 incremental windows): completed under this
        # instant, its records would land behind that answer. Such a commit shows in a listing made now; then the
        # requested file goes (this write created it, only if absent, and wrote nothing else) and the write takes a
        # new instant.
        overtaken = _completed_after(table, instant)
        if overtaken is None:
            break
        storage.delete_file(_instant_file(table, instant, REQUESTED))
        if attempt == _INSTANT_ATTEMPTS:
            raise WriteError(
                f"{table.storage.uri}: commit {overtaken} completed after this write took its instant {instant} and "
                f"before its requested file existed, {attempt} times running; nothing was written: write again"
            )
    operation_type = op.upper()
    fault_point("write.after_requested")
    storage.write_bytes_atomic(
        _instant_file(table, instant, INFLIGHT),
        fmt.encode_commit_metadata(_workload_profile(tasks, operation_type).to_record()),
    )
    fault_point("write.after_inflight")
    run = executor or local_executor
    try:
        results = run(spec, tasks)
    except Exception as exc:
        table.refresh()
        raise WriteError(
            f"deltacommit {instant} of {table.storage.uri} failed and was left inflight (readers ignore it; roll it "
            "back or write again): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if len(results) != len(tasks):
        table.refresh()
        raise WriteError(f"deltacommit {instant}: the executor returned {len(results)} results for {len(tasks)} tasks")

    written_stats: list[WriteStat] = []
    deleted: dict[str, DeleteEventTimes] = {}
    for files in results:
        for f in files:
            if f.deleted is not None:
                deleted[f.stat.path] = f.deleted
            written_stats.append(f.stat)
    extra = {"schema": schema_text} if schema_text else {}
    if deleted:
        extra[WRITE_DELETE_EVENT_TIMES] = encode_delete_event_times(deleted)
    metadata = CommitMetadata.of(
        sorted(written_stats, key=lambda st: st.partition_path), extra=extra, operation_type=operation_type
    )
    # HoodieTable.reconcileAgainstMarkers: files a failed task attempt created, which no write stat lists, would be
    # read as part of the committed instant; they go before it completes.
    written = set(metadata.paths())
    _reconcile(storage, instant, written)
    # The checks before completing share one load of the timeline, taken after the logs were written and after the
    # bucket check's listing (the slice check lists its partitions after it).
    groups = [fg for fg, _, _ in tasks]
    bucket_files = _new_bucket_files(table, groups) if index.kind == BUCKET else []
    timeline = table.refresh().timeline
    if index.kind == BUCKET:
        _check_new_buckets_still_free(table, instant, groups, bucket_files, timeline)
    if not fmt.logs_named_by_deltacommit:
        _check_slices_still_latest(table, instant, groups, timeline)
    else:
        _check_no_later_compaction(table, instant, groups, timeline)
        _check_no_later_write(table, instant, groups, timeline)
    keys_checked: frozenset[str] = frozenset()
    if index.kind != BUCKET:
        keys_checked = _check_inserted_keys_still_new(table, instant, tasks, timeline)
    # A rollback elsewhere cannot tell this running write from a failed one: once it took the files, nothing may
    # complete (looked at before the metadata table lists the files, and again right before completing).
    require_still_pending(storage, spec)
    # A metadata table lists the instant's files before the instant completes (HoodieTable.writeTableMetadata).
    if has_metadata_table(table):
        sync_files_partition(table, instant, added=added_files(storage, written))
    fault_point("write.before_complete")
    # Layout 2 names the completed file with the completion time, issued now and after every time on the timeline.
    completion = (
        new_instant_time([*_timeline_times(table.refresh()), instant], cfg.timezone, scope=table.storage.uri)
        if fmt.timeline_layout >= 2
        else None
    )
    if fmt.logs_named_by_deltacommit:
        # Again on the timeline the completion time was issued from: a later write may have completed while this one
        # synced the metadata table.
        _check_no_later_write(table, instant, groups, table.timeline)
        if index.kind != BUCKET:
            _check_inserted_keys_still_new(table, instant, tasks, table.timeline, keys_checked)
    if has_metadata_table(table):
        require_still_pending(storage, spec)
    storage.write_bytes_atomic(
        _instant_file(table, instant, COMPLETED, completion), fmt.encode_commit_metadata(metadata.to_record())
    )
    fault_point("write.after_complete")
    # A late attempt (a speculative copy, or one Spark has not stopped yet) that saw the instant inflight just before
    # it completed: its files are in the ownership records (recorded before they are written); one written after this
    # its task deletes itself (evt_toolkit.write.fence).
    _reconcile(storage, instant, written)
    # Hudi deletes the instant's marker folder once the commit is complete (WriteMarkers.quietDeleteMarkerDir). On
    # object stores that is a LIST and a DELETE per commit for files nothing reads again: they are left there
    # (`compaction repair` removes the folders of completed instants).
    if not storage.is_object_store:
        with contextlib.suppress(EvtError):
            drop_ownership(storage, instant)
    pending_rollback = bool(table.timeline.pending_rollbacks())
    table.refresh()
    if pending_rollback:
        # This write may have overtaken a rollback killed before it changed anything: retired now, before a stock
        # writer resumes it and stops (write/overtaken). The write is committed whatever happens here.
        with contextlib.suppress(EvtError):
            retire_overtaken_rollbacks(table)
    return instant
