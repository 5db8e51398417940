"""A compaction task's merge in bounded memory: logs decoded and reduced batch by batch, spilled by hash partition.

Mirrors how Hudi's compactor reads a file slice: ``HoodieMergedLogRecordScanner`` folds the log records into an
``ExternalSpillableMap`` that keeps at most ``hoodie.memory.compaction.max.size`` bytes in memory and spills the
rest to ``hoodie.memory.spillable.map.path``; ``HoodieMergeHandle`` then merges the base file's rows with it. Here,
column-wise:

1. The slice's delete blocks are decoded first (small: keys and ordering values) so that their ordering values are
   made comparable across blocks exactly as :func:`~evt_toolkit.read.slice_reader.decode_blocks` does.
2. Data blocks are read and decoded in batches of about :attr:`MemoryBudget.batch_bytes` of content
   (:func:`~evt_toolkit.format.log_content.decode_avro_data_blocks`: one object container and one cast per chunk,
   chunks decoded on threads since polars releases the GIL). The decoded batches form the *key state*, reduced to
   the latest record per key with :func:`~evt_toolkit.read.merge.latest_per_key` (hashing, no string sort) only
   when it reaches :attr:`MemoryBudget.state_bytes` and once at the end: each record is reduced about once, not
   once per batch and again with the state (B3 large: 5.7 million records reduced for 4.5 million log records,
   instead of 8.9 million).
3. When the reduced key state still outgrows :attr:`MemoryBudget.state_bytes`, it is written to an Arrow IPC file
   under a temporary directory, split by hash partition of the record key (``P`` partitions sized so that one fits
   the budget; one file per spill holding every partition in turn, so that a task holds one file open at most); so
   is every later batch (reduced first) once its buffer fills, and the base file's rows.
4. Each partition is then merged on its own with the base rows of the same partition
   (:meth:`BoundedSliceMerge.parts`): a key lives in exactly one partition, so every per-key decision the task
   takes (:mod:`~evt_toolkit.compaction.carry_over`) is the same as over the whole slice.

Without spilling there is one partition, and the task's output is the unbounded merge's, row for row.

Why Arrow IPC files for the spill: they are written and memory-mapped back without any encoding (a spilled
partition costs one sequential write and one read), keep every Arrow type the table has, and pyarrow is already
there; Parquet would compress but costs an encode and a decode per row.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evt_toolkit.errors import (
    CompactionExecutionError,
    ReadError,
    TableConfigError,
    UnsupportedFeatureError,
)
from evt_toolkit.format.log_content import (
    DECODE_CHUNK_BYTES,
    decode_avro_data_blocks,
    decode_data_block,
    decode_delete_block,
)
from evt_toolkit.format.logfile import BlockType, read_block_content
from evt_toolkit.read.conform import conform, conform_runs
from evt_toolkit.read.merge import (
    COMMIT_TIME,
    EVENT_TIME,
    IS_DELETED,
    KEY,
    build_candidates,
    latest_per_key,
    merge_with_base,
    soft_commit_time_deletes,
)
from evt_toolkit.read.slice_reader import (
    DELETE_SCHEMA,
    QueuedBlock,
    SliceMerge,
    SliceReadContext,
    _concat_deletes,
    _normalize_deletes,
)
from evt_toolkit.table.fs_view import BaseFile

__all__ = [
    "DEFAULT_MEMORY_FRACTION",
    "MEMORY_MAX_SIZE_KEY",
    "SMALL_SLICE_BUDGET",
    "SPILL_PATH_KEY",
    "BoundedSliceMerge",
    "MemoryBudget",
    "configured_memory_budget",
    "configured_spill_dir",
    "worker_memory_bytes",
]

#: Hudi's ``HoodieMemoryConfig.MAX_MEMORY_FOR_COMPACTION``: bytes a compaction task may hold before it spills.
MEMORY_MAX_SIZE_KEY = "hoodie.memory.compaction.max.size"
#: Hudi's ``HoodieMemoryConfig.SPILLABLE_MAP_BASE_PATH``: where spilled partitions go (default: the temp dir).
SPILL_PATH_KEY = "hoodie.memory.spillable.map.path"
#: Without :data:`MEMORY_MAX_SIZE_KEY`, a task may use this fraction of its worker's memory (Hudi: 0.6 of the
#: executor's memory left to user code, ``hoodie.memory.compaction.fraction``; lower here because a Python worker
#: per core shares the executor's memory with the others and with the JVM).
DEFAULT_MEMORY_FRACTION = 0.25
#: A task's budget is capped at its slice's bytes, but never below this: a 109 MiB slice peaks at 0.95x its bytes
#: with 128 MiB (1.95x with 256 MiB), and B3 large's 37 MiB slices take the time they take uncapped (with 64 MiB
#: they spilled and decoded in 4 MiB batches, 1.9x slower).
SMALL_SLICE_BUDGET = 128 << 20
#: Upper bound of hash partitions (open files while spilling).
MAX_PARTITIONS = 256

_SEQ, _DEL, _CT, _ORD, _SRC = "__evt_seq", "__evt_is_delete", "__evt_ct_delete", "__evt_ord", "__evt_src"
_PARTITION = "_hoodie_partition_path"


def worker_memory_bytes() -> int:
    """The memory this process may use: the least of its address-space limit, its cgroup's limit and the RAM."""
    limits = list(_host_memory_limits())
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            limits.append(int(soft))
    except (ImportError, OSError, ValueError):  # not POSIX
        pass
    return min(limits) if limits else 4 << 30


@functools.lru_cache(maxsize=1)
def _host_memory_limits() -> tuple[int, ...]:
    """The cgroup's memory limit and the RAM, read once per process (every task asks; the address-space limit,
    which a process may lower, is read each time)."""
    limits: list[int] = []
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            limits.append(int(text))
    with contextlib.suppress(AttributeError, ValueError, OSError):
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return tuple(limits)


def configured_memory_budget(properties: Mapping[str, str] | None, source: str = "hoodie.properties") -> int | None:
    """``hoodie.memory.compaction.max.size`` in bytes when set (``None``: the worker picks its default).

    Raises:
        TableConfigError: the value is not a positive integer (names the source).
    """
    raw = (properties or {}).get(MEMORY_MAX_SIZE_KEY)
    if raw is None or not str(raw).strip():
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise TableConfigError(f"{source}: {MEMORY_MAX_SIZE_KEY} must be a positive number of bytes, not {raw!r}")
    return value


def configured_spill_dir(
    properties: Mapping[str, str] | None, source: str = "hoodie.properties", table_dir: str | None = None
) -> str | None:
    """``hoodie.memory.spillable.map.path`` when set (``None``: the system's temporary directory).

    Spill files go to the local disk of the worker running the task, into a folder of their own under this one, so
    the setting must be an absolute local path: a URI is no local folder (taken as one, ``s3a://b/tmp`` became a
    folder ``s3a:`` under the working directory), and a relative path would depend on each worker's working
    directory. ``table_dir`` is the table's folder when it is on local disk: the spill must not go inside it, where
    its files would sit among the table's.

    Raises:
        TableConfigError: a URI, a relative path, an existing file, or a folder inside the table (names the source).
    """
    raw = (properties or {}).get(SPILL_PATH_KEY)
    if raw is None or not str(raw).strip():
        return None
    path = str(raw).strip()
    scheme, sep, _ = path.partition(":")
    if sep and scheme and (scheme.isalnum() and len(scheme) > 1):
        raise TableConfigError(
            f"{source}: {SPILL_PATH_KEY} must be a folder on the workers' local disk, not the URI {path!r}"
        )
    if not os.path.isabs(path):
        raise TableConfigError(
            f"{source}: {SPILL_PATH_KEY} must be an absolute path (a relative one, {path!r}, would depend on the "
            "working directory of each worker)"
        )
    if os.path.exists(path) and not os.path.isdir(path):
        raise TableConfigError(f"{source}: {SPILL_PATH_KEY}={path!r} is a file, not a folder")
    if table_dir is not None:
        spill, table = os.path.realpath(path), os.path.realpath(table_dir)
        if spill == table or spill.startswith(table.rstrip(os.sep) + os.sep):
            raise TableConfigError(
                f"{source}: {SPILL_PATH_KEY}={path!r} is inside the table's folder {table_dir}; spill files must "
                "not be written among the table's files (use a folder outside the table)"
            )
    return path


class TaskCancelled(Exception):
    """A task stopped early because its run was interrupted (Ctrl-C): it wrote nothing visible and the run commits
    nothing. Internal to a run in this process; never reaches a caller."""


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """How a compaction task splits its memory budget.

    Attributes:
        total: the budget in bytes (``hoodie.memory.compaction.max.size``, else a fraction of the worker's memory).
        spill_dir: where spilled partitions go (``hoodie.memory.spillable.map.path``; ``None``: the temp dir).
    """

    total: int
    spill_dir: str | None = None

    @classmethod
    def resolve(cls, configured: int | None, spill_dir: str | None = None) -> MemoryBudget:
        """The configured budget, else :data:`DEFAULT_MEMORY_FRACTION` of :func:`worker_memory_bytes`."""
        total = configured if configured is not None else int(worker_memory_bytes() * DEFAULT_MEMORY_FRACTION)
        return cls(max(1, total), spill_dir)

    def for_slice(self, slice_bytes: int) -> MemoryBudget:
        """The budget one task uses for a slice of ``slice_bytes`` (its logs' and base file's bytes on storage).

        Never more than the slice's bytes (at least :data:`SMALL_SLICE_BUDGET`): a task that could hold its whole
        slice decoded needs up to about 2.3x the slice's bytes at once (measured, docs/compaction-memory.md), more
        than spilling the key state by hash partition needs, and spilling measured no slower. A budget
        configured below that is kept.
        """
        cap = max(int(slice_bytes), SMALL_SLICE_BUDGET)
        return self if self.total <= cap else MemoryBudget(cap, self.spill_dir)

    @property
    def batch_bytes(self) -> int:
        """Log content decoded at once: decoding holds ~6x a batch's bytes for a moment (content, container,
        polars' frame, the cast), so a batch is a sixteenth of the budget (at least one block is read, whatever
        its size: a block is decoded whole, as in Hudi)."""
        return int(min(max(self.total // 16, 1 << 20), 2 * DECODE_CHUNK_BYTES))

    @property
    def state_bytes(self) -> int:
        """The key state (and the base rows merged with it) kept in memory before spilling: a fifth of the
        budget, since reducing or partitioning it copies it once more while a batch is being decoded, and the
        allocators keep some freed memory (a quarter measured up to 2 % over the budget)."""
        return max(1, self.total // 5)


@dataclass(slots=True)
class LogTotals:
    """What the task counts while streaming its logs."""

    data_rows: int = 0
    delete_rows: int = 0
    batches: int = 0
    partitions: int = 1
    spilled_bytes: int = 0


class _Allocators:
    """Keep freed memory from piling up in the allocators while a task runs.

    A task's batches are allocated and freed by three allocators: Arrow's pool, glibc's malloc (Python's ``bytes``
    of block contents and containers) and polars' jemalloc. Each keeps freed pages for reuse, so the resident set
    grows to the sum of their peaks, several times the live data. While a task runs, Arrow allocates from the
    system allocator (Arrow's default pools keep freed segments) and glibc keeps large blocks in their own mappings
    (``M_MMAP_THRESHOLD``, which glibc otherwise raises after the first large free); after each batch, glibc gives
    freed heap pages back (``malloc_trim``). Used only for slices of more than 64 MiB or more than the whole budget: on
    smaller slices the fresh mappings and the slower allocator cost more time than they save (B3 large's 37 MiB
    slices took 1.35x as long with them under a 128 MiB budget).
    Polars' jemalloc is configured by the worker's environment
    (``_RJEM_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0``, see bench/README.md).
    """

    _libc: Any = None
    _mmap_set = False
    # The memory pool is the process's: tasks running side by side share one switch, the last one out restores it.
    _lock = threading.Lock()
    _users = 0
    _previous: pa.MemoryPool | None = None

    def __enter__(self) -> _Allocators:
        cls = type(self)
        with cls._lock:
            if cls._users == 0:
                cls._previous = pa.default_memory_pool()
                pa.set_memory_pool(pa.system_memory_pool())
            cls._users += 1
        if cls._libc is None:
            try:
                import ctypes
                import ctypes.util

                cls._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                cls._libc.malloc_trim  # noqa: B018 - glibc only
            except (OSError, AttributeError):
                cls._libc = False
        if cls._libc and not cls._mmap_set:
            cls._libc.mallopt(_M_MMAP_THRESHOLD, 1 << 20)
            cls._mmap_set = True
        return self

    def __exit__(self, *exc: object) -> None:
        cls = type(self)
        with cls._lock:
            cls._users -= 1
            if cls._users == 0 and cls._previous is not None:
                pa.set_memory_pool(cls._previous)
                cls._previous = None
        self.trim()

    def trim(self) -> None:
        if type(self)._libc:
            type(self)._libc.malloc_trim(0)


_M_MMAP_THRESHOLD = -3
#: Slices smaller than this (log + base bytes) and than the budget run with the usual allocators (see
#: :class:`_Allocators`).
_TAME_ABOVE = 64 << 20


def _state_schema(ctx: SliceReadContext, ord_type: pa.DataType) -> pa.Schema:
    return pa.schema(
        [f.with_nullable(True) for f in ctx.schema]
        + [
            pa.field(_SEQ, pa.int64()),
            pa.field(_DEL, pa.bool_()),
            pa.field(_CT, pa.bool_()),
            pa.field(_ORD, ord_type),
            pa.field(_SRC, pa.int8()),
        ]
    )


def _reduce_checked(state: pa.Table, mode: str, *, final: bool = False) -> tuple[pa.Table, bool]:
    """``(state reduced to the latest record per key, whether it now holds one row per key)``.

    Short of the final reduction, event-time ordering keeps beside each key's winner what records of the key in
    earlier batches still need to meet (:func:`~evt_toolkit.read.merge.latest_per_key` with ``run``): spilled
    batches are reduced one by one, and a batch's winner alone does not say how the batch folds onto them.
    """
    if state.num_rows == 0:
        return state, True
    run = not final and mode == EVENT_TIME
    keep = latest_per_key(state[KEY], state[_SEQ], state[_CT], state[_ORD], mode, pc.equal(state[_SRC], 1), run=run)
    if len(keep) == state.num_rows:
        return state, not run
    if not final and len(keep) > 0.85 * state.num_rows:
        # Hardly any duplicates: copying the batch to drop them costs more memory than keeping them until later.
        return state, False
    return state.take(pa.array(keep)), not run


def _winner_rows(state: pa.Table, mode: str) -> np.ndarray | None:
    """Positions of each key's winner in ``state`` (the final reduction, not gathered); ``None``: every row."""
    if state.num_rows == 0:
        return None
    keep = latest_per_key(state[KEY], state[_SEQ], state[_CT], state[_ORD], mode, pc.equal(state[_SRC], 1))
    return None if len(keep) == state.num_rows else keep


def _partition_ids(keys: pa.ChunkedArray | pa.Array, partitions: int) -> np.ndarray:
    import polars as pl

    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    hashed = pl.Series(values=arr.cast(pa.large_string())).hash(seed=0x5EED).to_numpy()
    return np.asarray(hashed % np.uint64(partitions), dtype=np.int64)


class _Spill:
    """Hash-partitioned spill files under a temporary directory: log state rows and base rows.

    Each write is one Arrow IPC file holding the rows of every partition in turn (partition ``p``'s record batches
    are a span of the file's batches, kept in :attr:`spans`), written and closed at once: a task holds at most one
    spill file open, however many partitions it spills into (a stream per partition held two files open per
    partition and task, and tasks side by side ran out of file descriptors). A partition is read back by memory-
    mapping each file in turn and taking its span (the file's footer locates the batches; no other batch is read).
    """

    def __init__(
        self,
        root: str | None,
        partitions: int,
        state_schema: pa.Schema,
        base_schema: pa.Schema,
        where: str = "a compaction task",
    ) -> None:
        self.where = where
        self.dir = root or tempfile.gettempdir()
        with self._io("create a spill folder"):
            if root is not None:
                os.makedirs(root, exist_ok=True)
            self.dir = tempfile.mkdtemp(prefix="evt-compaction-spill-", dir=root)
        self.partitions = partitions
        self.schemas = {"log": state_schema, "base": base_schema}
        #: per kind: the spill files in write order, and per file the ``(first batch, batches)`` of each partition.
        self.files: dict[str, list[str]] = {"log": [], "base": []}
        self.spans: dict[str, list[list[tuple[int, int]]]] = {"log": [], "base": []}
        self.bytes = 0

    @contextlib.contextmanager
    def _io(self, what: str) -> Iterator[None]:
        """Local disk errors of the spill (a full disk, no permission) as a CompactionExecutionError naming the
        spill folder and the task, not a bare OSError."""
        try:
            yield
        except OSError as exc:
            raise CompactionExecutionError(
                f"{self.where}: cannot {what} in {self.dir} ({SPILL_PATH_KEY}): {exc}. The task's key state outgrew "
                f"its memory budget ({MEMORY_MAX_SIZE_KEY}) and is spilled to local disk: free space there, point "
                f"{SPILL_PATH_KEY} at a folder with room, or give the task more memory"
            ) from exc

    def _path(self, kind: str, i: int) -> str:
        return os.path.join(self.dir, f"{kind}-{i:06d}.arrow")

    def write(self, kind: str, rows: pa.Table) -> None:
        """Spill ``rows`` into one new file, partition after partition."""
        if rows.num_rows == 0:
            return
        part = _partition_ids(rows[KEY], self.partitions)
        order = np.argsort(part, kind="stable")
        counts = np.bincount(part, minlength=self.partitions)
        ordered = rows.take(pa.array(order))
        path = self._path(kind, len(self.files[kind]))
        spans: list[tuple[int, int]] = []
        start = written = 0
        self.files[kind].append(path)  # listed before it exists: removed with the folder whatever happens next
        with (
            self._io("write spilled rows"),
            pa.OSFile(path, "wb") as sink,
            pa.ipc.new_file(sink, self.schemas[kind]) as writer,
        ):
            for n in counts.tolist():
                batches = ordered.slice(start, n).to_batches() if n else []
                for batch in batches:
                    writer.write_batch(batch)
                spans.append((written, len(batches)))
                written += len(batches)
                start += n
        self.spans[kind].append(spans)
        self.bytes += ordered.nbytes

    def read(self, kind: str, p: int) -> pa.Table:
        """Partition ``p``'s rows of every file of ``kind``, in write order."""
        batches: list[pa.RecordBatch] = []
        with self._io("read spilled rows"):
            for path, spans in zip(self.files[kind], self.spans[kind], strict=False):
                first, count = spans[p]
                if not count:
                    continue
                with pa.memory_map(path) as source:  # the batches keep the mapping; the file is closed here
                    reader = pa.ipc.open_file(source)
                    batches += [reader.get_batch(i) for i in range(first, first + count)]
        if not batches:
            return self.schemas[kind].empty_table()
        return pa.Table.from_batches(batches, schema=self.schemas[kind])

    def close(self) -> None:
        """Remove the spill folder, whatever happened."""
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class BoundedSliceMerge:
    """A file slice's base file merged with its chosen log blocks, partition by partition, in bounded memory.

    Use :meth:`load_logs` once, then iterate :meth:`parts`; :meth:`close` (or the context manager) removes spilled
    files. Each part is a :class:`~evt_toolkit.read.slice_reader.SliceMerge` over one hash partition of the keys,
    whose ``data`` and ``deletes`` hold only the log *winners* of that partition (the rows a compaction can write)
    and whose ``winners`` index them.

    Attributes:
        ctx: the read context (schema, merge mode, reader schema).
        base_file: the slice's base file, if any.
        queued: the log blocks to merge, in replay order (from ``select_log_blocks``).
        budget: the memory budget.
        decode_threads: threads decoding a batch (``None``: the CPUs this process may use).
        stop: asked before each batch; ``True`` raises :class:`TaskCancelled` (the run was interrupted).
        where: the task, for messages (the compaction, table, file group and partition).
        totals: counts, filled by :meth:`load_logs`.
    """

    ctx: SliceReadContext
    base_file: BaseFile | None
    queued: list[QueuedBlock]
    budget: MemoryBudget
    decode_threads: int | None = None
    stop: Callable[[], bool] | None = None
    where: str = "a compaction task"
    totals: LogTotals = field(default_factory=LogTotals)
    _state: list[pa.Table] = field(default_factory=list)
    _state_bytes: int = 0
    _reduced_bytes: int = 0
    _spill: _Spill | None = None
    _schema: pa.Schema | None = None
    _base_bytes: int = 0
    _log_bytes: int = 0
    _next_delete: int = 0
    _alloc: _Allocators | None = None
    _state_exact: bool = False

    def __enter__(self) -> BoundedSliceMerge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove spilled files (and restore the allocator settings), whatever happened."""
        try:
            if self._spill is not None:
                self._spill.close()
        finally:
            if self._alloc is not None:
                self._alloc.__exit__()
                self._alloc = None

    def check_stop(self) -> None:
        """Raise :class:`TaskCancelled` when the run that started this task was interrupted."""
        if self.stop is not None and self.stop():
            raise TaskCancelled("the compaction run was interrupted")

    def _trim(self) -> None:
        # malloc_trim walks the heap (~2 ms): worth it only where a batch is large next to the budget.
        if self._alloc is not None:
            self._alloc.trim()

    @property
    def spilled(self) -> bool:
        """Whether the key state went to disk."""
        return self._spill is not None

    # -- logs -----------------------------------------------------------------------------------------------------
    def load_logs(self) -> None:
        """Decode the queued blocks batch by batch into the key state (spilling past the budget)."""
        ctx = self.ctx
        if any(q.block.is_partial for q in self.queued):
            raise UnsupportedFeatureError("partial-update log blocks are merged block by block, not by a compaction")
        self._base_bytes = self._base_estimate()
        self._log_bytes = sum(q.block.content_length for q in self.queued) or 1
        base_file_bytes = self.base_file.size if self.base_file is not None else 0
        self.budget = self.budget.for_slice(self._log_bytes + base_file_bytes)
        if self._log_bytes + self._base_bytes > min(_TAME_ABOVE, self.budget.total):
            # Only where memory is at stake: the system allocator and fresh mappings cost CPU on every batch.
            self._alloc = _Allocators().__enter__()
        unified, del_cands, del_offsets = self._decode_deletes()
        ord_type = del_cands.schema.field("ord").type
        self._schema = _state_schema(ctx, ord_type)
        batch: list[tuple[QueuedBlock, bytes | None]] = []
        batch_bytes = 0
        seq = 0
        read_bytes = 0
        handle_path: str | None = None
        handle = None
        try:
            for q in self.queued:
                if q.block.block_type == BlockType.DELETE:
                    batch.append((q, None))
                    continue
                if q.log_file.path != handle_path:
                    if handle is not None:
                        handle.close()
                    handle = ctx.storage.open_input(q.log_file.path)
                    handle_path = q.log_file.path
                assert handle is not None
                content = read_block_content(handle, q.block)
                batch.append((q, content))
                batch_bytes += len(content)
                if batch_bytes >= self.budget.batch_bytes:
                    read_bytes += batch_bytes
                    self.check_stop()
                    seq = self._flush(batch, seq, unified, del_cands, del_offsets, read_bytes)
                    batch, batch_bytes = [], 0
        finally:
            if handle is not None:
                handle.close()
        if batch:
            read_bytes += batch_bytes
            self.check_stop()
            self._flush(batch, seq, unified, del_cands, del_offsets, read_bytes)
        if self._spill is None and self._state_bytes + self._base_bytes > self.budget.state_bytes:
            self._reduce_state()
            if self._state_bytes + self._base_bytes > self.budget.state_bytes:
                self._start_spill(1.0)
        if self._spill is not None:
            self._spill_state()
            self._spill_base()
            self.totals.spilled_bytes = self._spill.bytes

    def _base_estimate(self) -> int:
        if self.base_file is None:
            return 0
        with self.ctx.storage.open_input(self.base_file.path) as f:
            try:
                meta = pq.ParquetFile(f).metadata
            except (pa.ArrowInvalid, OSError) as exc:
                raise ReadError(f"cannot read base file {self.base_file.path}: {exc}") from exc
            return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))

    def _decode_deletes(self) -> tuple[pa.Table, pa.Table, list[int]]:
        """Every delete block of the queue (in order), made comparable together, and their merge candidates."""
        ctx = self.ctx
        by_file: dict[str, list[QueuedBlock]] = {}
        for q in self.queued:
            if q.block.block_type == BlockType.DELETE:
                by_file.setdefault(q.log_file.path, []).append(q)
        decoded: dict[int, pa.Table] = {}
        for path, items in by_file.items():
            with ctx.storage.open_input(path) as f:
                for q in items:
                    decoded[id(q)] = _normalize_deletes(decode_delete_block(q.block, read_block_content(f, q.block)))
        tables = [decoded[id(q)] for q in self.queued if q.block.block_type == BlockType.DELETE]
        if not tables:  # most slices: only the candidates' schema is needed
            return (
                DELETE_SCHEMA.empty_table(),
                _no_delete_candidates(ctx.schema, ctx.ordering_field, ctx.merge_mode),
                [0],
            )
        unified = _concat_deletes(tables)
        n = unified.num_rows
        cands = build_candidates(
            ctx.schema.empty_table(),
            pa.array([], pa.int64()),
            unified,
            pa.array(np.zeros(n, dtype=np.int64)),
            ctx.ordering_field,
            ctx.merge_mode,
        ).table
        offsets = np.concatenate([[0], np.cumsum([t.num_rows for t in tables])]).astype(np.int64).tolist()
        return unified, cands, offsets

    def _flush(
        self,
        batch: list[tuple[QueuedBlock, bytes | None]],
        seq: int,
        unified: pa.Table,
        del_cands: pa.Table,
        del_offsets: list[int],
        read_bytes: int,
    ) -> int:
        """Decode one batch, reduce it, add it to the key state; returns the next replay position."""
        ctx = self.ctx
        assert self._schema is not None
        avro = [(q.block, c) for q, c in batch if c is not None and q.block.block_type is BlockType.AVRO_DATA]
        avro_tables = (
            iter(decode_avro_data_blocks(avro, ctx.reader_avro_schema, max_workers=self.decode_threads))
            if avro
            else iter(())
        )
        raws: list[tuple[pa.Table, str]] = []
        data_seq: list[np.ndarray] = []
        del_parts: list[pa.Table] = []
        for q, content in batch:
            if content is None:
                k = self._next_delete
                self._next_delete += 1
                lo, hi = del_offsets[k], del_offsets[k + 1]
                n = hi - lo
                c = del_cands.slice(lo, n)
                entries = unified.slice(lo, n)
                cols: list[pa.Array | pa.ChunkedArray] = []
                for f in ctx.schema:
                    if f.name == KEY:
                        cols.append(entries["_hoodie_record_key"].cast(f.type))
                    elif f.name == _PARTITION:
                        cols.append(entries[_PARTITION].cast(f.type))
                    else:
                        cols.append(pa.nulls(n, f.type))
                cols += [
                    pa.array(np.arange(seq, seq + n, dtype=np.int64)),
                    pa.array(np.ones(n, dtype=bool)),
                    c["ct_delete"],
                    c["ord"].cast(self._schema.field(_ORD).type),
                    pa.array(np.ones(n, dtype=np.int8)),
                ]
                del_parts.append(pa.Table.from_arrays(cols, schema=self._schema))
                self.totals.delete_rows += n
                seq += n
                continue
            if q.block.block_type is BlockType.AVRO_DATA:
                raw = next(avro_tables)
            else:
                raw = decode_data_block(q.block, content, ctx.reader_avro_schema)
            n = raw.num_rows
            raws.append((raw, q.log_file.path))
            data_seq.append(np.arange(seq, seq + n, dtype=np.int64))
            self.totals.data_rows += n
            seq += n
        data_parts = conform_runs(raws, ctx.schema)
        parts: list[pa.Table] = []
        if data_parts:
            data = pa.concat_tables(data_parts)
            n = data.num_rows
            if IS_DELETED in data.column_names:
                soft = pc.fill_null(data[IS_DELETED].cast(pa.bool_()), False)
            else:
                soft = pa.chunked_array([np.zeros(n, dtype=bool)])
            ord_type = self._schema.field(_ORD).type
            of = ctx.ordering_field
            if ord_type != pa.null() and of and of in data.column_names:
                ordering = data[of].cast(ord_type)
            else:
                ordering = pa.nulls(n, ord_type)
            parts.append(
                pa.Table.from_arrays(
                    [
                        *data.columns,
                        pa.array(np.concatenate(data_seq)),
                        soft,
                        soft_commit_time_deletes(data, of, ctx.merge_mode),
                        ordering,
                        pa.array(np.zeros(n, dtype=np.int8)),
                    ],
                    schema=self._schema,
                )
            )
        parts += del_parts
        self.totals.batches += 1
        if parts:
            batch = pa.concat_tables(parts)
            if self._spill is not None:
                reduced, exact = _reduce_checked(batch, ctx.merge_mode)
                self._add(reduced, read_bytes, exact)
            else:
                self._add(batch, read_bytes, False)
        self._trim()
        return seq

    def _add(self, reduced: pa.Table, read_bytes: int, exact: bool = False) -> None:
        # The state is known to hold one row per key only while it is one batch that was reduced exactly.
        self._state_exact = exact and not self._state
        self._state.append(reduced)
        self._state_bytes += reduced.nbytes
        limit = self.budget.state_bytes
        if self._spill is not None:
            if self._state_bytes >= limit:
                self._spill_state()
            return
        if self._state_bytes + self._base_bytes > limit:
            self._reduce_state()
            if self._state_bytes + self._base_bytes > limit:
                self._start_spill(read_bytes / self._log_bytes)

    def _reduce_state(self) -> None:
        if len(self._state) > 1 or (self._state and self._reduced_bytes != self._state_bytes):
            merged, self._state_exact = _reduce_checked(pa.concat_tables(self._state), self.ctx.merge_mode)
            self._state = [merged]
            self._state_bytes = self._reduced_bytes = merged.nbytes

    def _start_spill(self, fraction_read: float) -> None:
        """Pick the partition count from the state's growth so far, then move the state to disk."""
        assert self._schema is not None
        expected = self._state_bytes / max(fraction_read, 1e-6) + self._base_bytes
        partitions = int(min(MAX_PARTITIONS, max(2, np.ceil(2 * expected / self.budget.state_bytes))))
        self._spill = _Spill(self.budget.spill_dir, partitions, self._schema, _nullable(self.ctx.schema), self.where)
        self.totals.partitions = partitions
        self._spill_state()

    def _spill_state(self) -> None:
        assert self._spill is not None
        for t in self._state:
            self._spill.write("log", t)
        self._state, self._state_bytes, self._state_exact = [], 0, False

    def _spill_base(self) -> None:
        assert self._spill is not None
        if self.base_file is None:
            return
        ctx = self.ctx
        with ctx.storage.open_input(self.base_file.path) as f:
            try:
                pf = pq.ParquetFile(f)
                rows_per_batch = max(1024, min(1 << 20, self.budget.batch_bytes // 256))
                # A spill file per key state's worth of base rows (each file is opened once per partition read).
                pending: list[pa.RecordBatch] = []
                pending_bytes = 0
                for rb in pf.iter_batches(batch_size=rows_per_batch):
                    pending.append(rb)
                    pending_bytes += rb.nbytes
                    if pending_bytes >= self.budget.state_bytes:
                        self._spill.write(
                            "base", conform(pa.Table.from_batches(pending), ctx.schema, self.base_file.path)
                        )
                        pending, pending_bytes = [], 0
                if pending:
                    self._spill.write("base", conform(pa.Table.from_batches(pending), ctx.schema, self.base_file.path))
            except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
                raise ReadError(f"cannot read base file {self.base_file.path}: {exc}") from exc

    # -- parts ----------------------------------------------------------------------------------------------------
    def parts(self) -> Iterator[SliceMerge]:
        """The merge, one hash partition at a time (one part when nothing spilled)."""
        ctx = self.ctx
        if self._spill is None:
            pending, self._state, self._state_bytes = self._state, [], 0
            rows: np.ndarray | None = None
            if not pending:
                state = self._empty_state()
            elif self._state_exact and len(pending) == 1:
                state = pending[0]  # one batch, already one row per key
            else:
                # The winners are not gathered here: the part points at them in the whole state, and the rows the
                # task writes are gathered once, by the writer.
                state = pa.concat_tables(pending)
                rows = _winner_rows(state, ctx.merge_mode)
            del pending
            base = (
                _read_base(ctx, self.base_file) if self.base_file is not None else _nullable(ctx.schema).empty_table()
            )
            yield _merge_part(ctx, base, state, rows)
            return
        for p in range(self._spill.partitions):
            state = self._spill.read("log", p)
            base = self._spill.read("base", p)
            yield _merge_part(ctx, base, state, _winner_rows(state, ctx.merge_mode))
            del state, base
            self._trim()

    def _empty_state(self) -> pa.Table:
        assert self._schema is not None
        return self._schema.empty_table()


@functools.lru_cache(maxsize=16)
def _no_delete_candidates(schema: pa.Schema, ordering_field: str | None, mode: str) -> pa.Table:
    """The (empty) merge candidates of a slice without delete blocks; the same for every task of a table."""
    empty = pa.array([], pa.int64())
    return build_candidates(schema.empty_table(), empty, DELETE_SCHEMA.empty_table(), empty, ordering_field, mode).table


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


def _read_base(ctx: SliceReadContext, base: BaseFile) -> pa.Table:
    from evt_toolkit.read.slice_reader import read_base_file

    return read_base_file(ctx, base)


def _merge_part(ctx: SliceReadContext, base: pa.Table, state: pa.Table, rows: np.ndarray | None = None) -> SliceMerge:
    """One partition's :class:`SliceMerge`: the log winners are ``state``'s rows ``rows`` (``None``: every row, one
    per key); ``deletes`` holds the winning deletes, and ``data`` is ``state`` itself, which the winners index."""
    names = ctx.schema.names
    # ``data`` is the state itself (no copy): delete rows and the records that lost stay in it, but no index points
    # at them. Of the winners only the merge's own columns are gathered.
    data = state.select(names)
    merge_cols = [KEY, _SEQ, _DEL, _CT, _ORD, _SRC] + ([_PARTITION] if _PARTITION in state.column_names else [])
    winning = state.select(merge_cols)
    if rows is not None:
        winning = winning.take(pa.array(rows))
    state = winning
    src = np.asarray(state[_SRC].to_numpy(zero_copy_only=False), dtype=np.int8)
    is_data = src == 0
    dels = state.filter(pa.array(~is_data)) if not is_data.all() else state.slice(0, 0)
    deletes = pa.table(
        {
            "_hoodie_record_key": dels[KEY].cast(pa.string()),
            _PARTITION: dels[_PARTITION].cast(pa.string())
            if _PARTITION in dels.column_names
            else pa.nulls(dels.num_rows, pa.string()),
            "ordering_value": dels[_ORD],
            "ordering_wrapper": pa.nulls(dels.num_rows, pa.string()),
        }
    )
    positions = np.arange(len(src), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    idx = np.where(is_data, positions, np.cumsum(~is_data) - 1).astype(np.int64)
    winners = pa.table(
        {
            "key": state[KEY].cast(pa.string()),
            "seq": state[_SEQ],
            "is_delete": state[_DEL],
            "ct_delete": state[_CT],
            "ord": state[_ORD],
            "src": state[_SRC],
            "idx": pa.array(idx),
        }
    )
    base_ord = None
    if ctx.merge_mode != COMMIT_TIME and ctx.ordering_field and ctx.ordering_field in base.column_names:
        base_ord = base[ctx.ordering_field].combine_chunks()
    keep_base, emitted = merge_with_base(base[KEY].combine_chunks(), base_ord, winners, ctx.merge_mode)
    return SliceMerge(base, keep_base, data, deletes, winners, emitted)
