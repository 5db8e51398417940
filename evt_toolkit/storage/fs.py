"""Table storage: the one place that touches a table's files, on a local disk, HDFS-like systems or object stores.

All paths handed to and returned by :class:`TableStorage` are *relative to the table's base path* with ``/``
separators, which is how Hudi records them in commit metadata and plans. Local paths and ``file://`` go through
``os``/``pyarrow.fs``; ``s3://``, ``s3a://``, ``gs://``, ``az://``/``abfs[s]://`` through obstore (Rust's
``object_store``, the library hudi-rs and delta-rs use; see ``docs/storage.md`` for the choice); any other URI that
``pyarrow.fs`` understands (``hdfs://``, ...) through ``pyarrow.fs``.

On an object store a write is one PUT (atomic on S3, GCS and Azure: readers see the old state or the whole object),
a create-only write is a conditional PUT (``If-None-Match: *``), a copy is server-side, small files are read with
one GET, large ones in coalesced ranges, and many files in parallel with bounded concurrency. Every request is
counted (:attr:`TableStorage.requests`, :func:`evt_toolkit.storage.requests.count_requests`).

This mirrors the role of Hudi's ``HoodieStorage`` (``HoodieHadoopStorage``) and hudi-rs's ``Storage``.
"""

from __future__ import annotations

import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, BinaryIO, TypeVar, cast

import pyarrow.fs as pafs

from evt_toolkit.errors import (
    ObjectExistsError,
    ObjectNotFoundError,
    StorageError,
    TimelineError,
    UnsupportedFeatureError,
)
from evt_toolkit.storage.calls import StartedCalls
from evt_toolkit.storage.local import ArrowBackend
from evt_toolkit.storage.options import StorageOptions, split_legacy_query, split_uri
from evt_toolkit.storage.ranged import RANGE_BLOCK, Buffer, RangedReader
from evt_toolkit.storage.requests import RequestCounter, RequestCounts, record
from evt_toolkit.storage.temporary import temporary_path

T = TypeVar("T")
R = TypeVar("R")

#: Data files read whole are kept (LRU) up to this many bytes per table, so a slice read that scans a log's headers
#: and then decodes its blocks fetches it once.
CACHE_BYTES = 256 * 1024 * 1024
#: Ranges closer than this are fetched in one request (object_store's ``OBJECT_STORE_COALESCE_DEFAULT``).
COALESCE_GAP = 1024 * 1024

#: Options registered per bucket by ``from_uri(..., storage_options)``: a later ``from_uri`` of the same bucket in
#: this process (a task reopening storage from the table URI) finds them without the caller passing them again.
_REGISTRY: dict[str, StorageOptions] = {}
_REGISTRY_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One listed file: path relative to the base path, its name and size in bytes."""

    path: str
    name: str
    size: int


def _root_key(family: str, bucket: str) -> str:
    return f"{family}://{bucket}"


def register_storage_options(uri: str, options: Mapping[str, Any] | StorageOptions) -> None:
    """Remember ``options`` for the bucket of ``uri`` in this process (``TableStorage.from_uri`` does it)."""
    from evt_toolkit.storage.objects import SCHEMES

    parts = split_uri(split_legacy_query(uri)[0])
    if parts is None or parts[0] not in SCHEMES:
        return
    with _REGISTRY_LOCK:
        _REGISTRY[_root_key(SCHEMES[parts[0]], parts[1])] = StorageOptions.of(options)


def coalesce_ranges(ranges: Sequence[tuple[int, int]], gap: int = COALESCE_GAP) -> list[tuple[int, int]]:
    """Merge ``(start, end)`` ranges whose gap is at most ``gap`` bytes (sorted, end exclusive).

    Example:
        >>> coalesce_ranges([(0, 10), (12, 20), (5000, 5010)], gap=100)
        [(0, 20), (5000, 5010)]
    """
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def hadoop_path(storage: TableStorage, rel: str) -> str:
    """The full path Hudi records for ``rel`` (``Path.toString()``): ``file:/abs/…`` locally, else the URI."""
    if storage.is_local:
        return "file:" + storage.full_path(rel)
    return storage.uri.rstrip("/") + "/" + rel


def relative_path(storage: TableStorage, full: str) -> str:
    """Inverse of :func:`hadoop_path` (also accepts bare absolute paths and ``file://`` URIs).

    Raises:
        TimelineError: the path is not under the table's base path.
    """
    candidates = [storage.uri.rstrip("/") + "/", storage.base_path.rstrip("/") + "/"]
    text = full
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif text.startswith("file:"):
        text = text[len("file:") :]
    for prefix in candidates:
        if text.startswith(prefix):
            return text[len(prefix) :]
        if full.startswith(prefix):
            return full[len(prefix) :]
    raise TimelineError(f"{full} is not under the table base path {storage.uri}")


class _CompatFileSystem:
    """The few ``pyarrow.fs.FileSystem`` calls older callers make on ``storage.fs``, for object stores."""

    def __init__(self, storage: TableStorage) -> None:
        self._s = storage

    def _rel(self, full: str) -> str:
        for base in (self._s.uri.rstrip("/"), self._s.base_path.rstrip("/")):
            if full == base:
                return ""
            if full.startswith(base + "/"):
                return full[len(base) + 1 :]
        raise StorageError(f"{full} is not under the table base path {self._s.uri}")

    def delete_dir(self, full: str) -> None:
        self._s.delete_dir(self._rel(full))

    def delete_dir_contents(self, full: str, missing_dir_ok: bool = False) -> None:
        self._s.delete_dir(self._rel(full))

    def create_dir(self, full: str, recursive: bool = True) -> None:
        return None

    def delete_file(self, full: str) -> None:
        self._s.delete_file(self._rel(full))

    def get_file_info(self, full: str) -> Any:
        rel = self._rel(full)
        size = self._s._backend.head(rel)
        mtime = self._s.mtime(rel) if size is not None else None
        kind = pafs.FileType.File if size is not None else pafs.FileType.NotFound
        return pafs.FileInfo(full, kind, size=size, mtime=mtime)


class TableStorage:
    """File access rooted at a Hudi table's base path.

    Args:
        fs: a ``pyarrow.fs`` file system (``None`` for an object store, which :meth:`from_uri` builds).
        base_path: the table's path inside ``fs`` (for object stores: ``bucket/prefix``).
        uri: the table URI as shown in messages (for object stores: ``scheme://bucket/prefix``, no credentials).
        options: storage options (credentials, endpoint, tuning).
        backend: the object-store backend (internal; :meth:`from_uri` passes it).
    """

    def __init__(
        self,
        fs: pafs.FileSystem | None,
        base_path: str,
        uri: str,
        *,
        options: StorageOptions | None = None,
        backend: Any = None,
    ) -> None:
        self.base_path = base_path.rstrip("/") or "/"
        self.uri = uri
        self.options = options or StorageOptions()
        self.requests = RequestCounter()
        self._fs = fs
        if backend is None:
            if fs is None:
                raise StorageError(f"{uri}: a file system or an object-store backend is required")
            backend = ArrowBackend(fs, self.base_path, self.requests)
        else:
            backend.counter = self.requests
        self._backend = backend
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes = 0
        self._once: dict[str, bytes] = {}
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_uri(
        cls, uri: str | os.PathLike[str], storage_options: Mapping[str, Any] | StorageOptions | None = None
    ) -> TableStorage:
        """Open storage for a local path or a URI.

        Args:
            uri: a local path, ``file://``, ``s3://``/``s3a://bucket/prefix``, ``gs://``, ``az://``/``abfs[s]://``,
                or anything ``pyarrow.fs.FileSystem.from_uri`` understands (``hdfs://``).
            storage_options: credentials, endpoint and client settings (``aws_endpoint_url``,
                ``aws_access_key_id``, ``aws_secret_access_key``, ``aws_region``, ``aws_allow_http``, ...); see
                :mod:`evt_toolkit.storage.options`. Without them, options registered earlier in this process for
                the same bucket are used, else the environment (``AWS_*``).

        Raises:
            StorageError: an unknown scheme or option, or a store that cannot be configured.
        """
        from evt_toolkit.storage.objects import SCHEMES, ObjectBackend

        text = os.fspath(uri)
        if "://" not in text:
            local = os.path.abspath(text)
            return cls(pafs.LocalFileSystem(), local, local, options=StorageOptions.of(storage_options))
        parts = split_uri(text)
        if parts is not None and parts[0] in SCHEMES:
            base, legacy = split_legacy_query(text)
            scheme, bucket, prefix = cast(tuple[str, str, str], split_uri(base))
            if not bucket:
                raise StorageError(f"{text}: no bucket in the URI (expected {scheme}://bucket/path)")
            family = SCHEMES[scheme]
            if not storage_options and not legacy:
                with _REGISTRY_LOCK:
                    options = _REGISTRY.get(_root_key(family, bucket), StorageOptions())
            else:
                options = StorageOptions.of(legacy).merged(storage_options)
                with _REGISTRY_LOCK:
                    _REGISTRY[_root_key(family, bucket)] = options
            norm = f"{scheme}://{bucket}/{prefix}" if prefix else f"{scheme}://{bucket}"
            counter = RequestCounter()
            backend = ObjectBackend(norm, scheme, bucket, prefix, options, counter)
            return cls(None, f"{bucket}/{prefix}".rstrip("/"), norm, options=options, backend=backend)
        try:
            fs, path = pafs.FileSystem.from_uri(text)
        except (ValueError, OSError) as exc:  # pyarrow.ArrowInvalid derives from ValueError
            raise StorageError(f"cannot open file system for {text}: {exc}") from exc
        if isinstance(fs, pafs.LocalFileSystem):
            return cls(fs, path, path, options=StorageOptions.of(storage_options))
        return cls(fs, path, text, options=StorageOptions.of(storage_options))

    def __repr__(self) -> str:
        return f"TableStorage({self.uri!r})"

    # -- what this storage is ------------------------------------------------------------------------------------
    def full_path(self, rel: str) -> str:
        """The file's full path (local) or URI (object stores: ``scheme://bucket/prefix/rel``)."""
        if self.is_object_store:
            return f"{self.uri.rstrip('/')}/{rel}" if rel else self.uri
        return posixpath.join(self.base_path, rel) if rel else self.base_path

    @property
    def fs(self) -> Any:
        """The ``pyarrow.fs`` file system (object stores: a small compatible shim; prefer this class's methods)."""
        return self._fs if self._fs is not None else _CompatFileSystem(self)

    @property
    def is_local(self) -> bool:
        return isinstance(self._fs, pafs.LocalFileSystem)

    @property
    def is_object_store(self) -> bool:
        return self._fs is None

    @property
    def supports_symlink(self) -> bool:
        """Only local file systems offer symlinks through this layer (HDFS symlinks are not exposed by pyarrow)."""
        return self.is_local and hasattr(os, "symlink")

    def request_counts(self) -> RequestCounts:
        """Requests this storage made so far, by type."""
        return self.requests.counts()

    # -- pool ------------------------------------------------------------------------------------------------------
    @property
    def max_concurrency(self) -> int:
        """Parallel requests per table (``evt_max_concurrency``; local: 8)."""
        return self.options.max_concurrency if self.is_object_store else min(8, self.options.max_concurrency)

    def parallel(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(x) for x in items]`` with at most :attr:`max_concurrency` running at once, in input order.

        The first exception is raised after every started call finished; so is a Ctrl-C that lands meanwhile
        (:class:`~evt_toolkit.storage.calls.StartedCalls`: no call still writes once this raised).
        """
        work = list(items)
        if len(work) <= 1:
            return [fn(x) for x in work]
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="evt-storage")
            pool = self._pool
        # Ctrl-C while submitting or waiting must not leave calls running (writing, deleting) after this raised.
        calls = StartedCalls()
        run = calls.wrap(fn)
        futures: list[Future[R]] = []
        results: list[R] = []
        first: BaseException | None = None
        try:
            for x in work:
                futures.append(pool.submit(run, x))
            for fut in futures:
                try:
                    results.append(fut.result())
                except Exception as exc:
                    if first is None:
                        first = exc
        except BaseException:
            calls.settle()
            raise
        if first is not None:
            raise first
        return results

    # -- cache -----------------------------------------------------------------------------------------------------
    def _cacheable(self, rel: str) -> bool:
        # Timeline and properties files can be replaced by other writers; data files are immutable once written.
        return self.is_object_store and not rel.startswith(".hoodie")

    def _cache_get(self, rel: str) -> bytes | None:
        with self._lock:
            once = self._once.pop(rel, None)
            if once is not None:
                return once
            data = self._cache.get(rel)
            if data is None:
                return None
            known = self._sizes.get(rel)
            if known is not None and known != len(data):
                self._drop(rel)
                return None
            self._cache.move_to_end(rel)
            return data

    def _cache_put(self, rel: str, data: bytes) -> None:
        if len(data) > CACHE_BYTES // 4:
            return
        with self._lock:
            if not self._cacheable(rel):
                self._once[rel] = data
                return
            self._drop(rel)
            self._cache[rel] = data
            self._cache_bytes += len(data)
            while self._cache_bytes > CACHE_BYTES and self._cache:
                _, old = self._cache.popitem(last=False)
                self._cache_bytes -= len(old)

    def _drop(self, rel: str) -> None:
        old = self._cache.pop(rel, None)
        if old is not None:
            self._cache_bytes -= len(old)
        self._once.pop(rel, None)

    def _forget(self, rel: str) -> None:
        with self._lock:
            self._drop(rel)
            self._sizes.pop(rel, None)

    def clear_cache(self) -> None:
        """Forget fetched bytes and listed sizes (after other writers changed the table)."""
        with self._lock:
            self._cache.clear()
            self._cache_bytes = 0
            self._once.clear()
            self._sizes.clear()

    # -- reading ---------------------------------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        """Whether a file (or, on object stores, any object under ``rel/``) exists.

        A data file this storage listed (and did not delete since) exists without a request.
        """
        if self._cacheable(rel):
            with self._lock:
                if rel in self._sizes:
                    return True
        if self._backend.head(rel) is not None:
            return True
        if self.is_object_store:
            return bool(rel) and self._backend.has_prefix(rel)
        return self._backend.info_type(rel) != pafs.FileType.NotFound

    def is_file(self, rel: str) -> bool:
        """Whether ``rel`` is a file (one HEAD)."""
        return self._backend.head(rel) is not None

    def is_dir(self, rel: str) -> bool:
        if self.is_object_store:
            return self._backend.has_prefix(rel)
        return bool(self._backend.info_type(rel) == pafs.FileType.Directory)

    def list_dir(self, rel: str = "") -> tuple[list[FileEntry], list[str]]:
        """List one directory: (files, sub-directory relative paths). Missing directory → empty.

        One LIST request per 1,000 entries on object stores; folder-marker objects are not files.
        """
        names, subdirs = self._backend.list_folder(rel)
        files = [FileEntry(posixpath.join(rel, n) if rel else n, n, size) for n, size in names]
        files.sort(key=lambda e: e.path)
        self.remember_sizes(files)
        dirs = sorted(posixpath.join(rel, d) if rel else d for d in subdirs)
        return files, dirs

    def remember_sizes(self, files: Iterable[FileEntry]) -> None:
        """Record the sizes of listed files, this storage object's listings or another's of the same table: object
        stores then read them without a HEAD and fetch only the small ones whole (local reads never use them)."""
        if not self.is_object_store:
            return
        with self._lock:
            for e in files:
                self._sizes[e.path] = e.size

    def list_files(self, rel: str = "") -> list[FileEntry]:
        """Every file under ``rel``, recursively (object stores: flat LIST pages, no per-folder requests)."""
        out = [FileEntry(p, posixpath.basename(p), s) for p, s in self._backend.list_recursive(rel)]
        return sorted(out, key=lambda e: e.path)

    def size(self, rel: str) -> int:
        if self._cacheable(rel):
            with self._lock:
                known = self._sizes.get(rel)
            if known is not None:
                return known
        size = self._backend.head(rel)
        if size is None:
            raise ObjectNotFoundError(f"not a file: {self.full_path(rel)}")
        return size

    def mtime(self, rel: str) -> datetime | None:
        """Last modification time of a file (UTC where the store says so)."""
        return cast("datetime | None", self._backend.mtime(rel))

    def read_bytes(self, rel: str) -> bytes:
        """The whole file (object stores: one GET, or none when prefetched)."""
        if not self.is_object_store:  # file systems fetch nothing ahead and cache nothing: straight to the disk
            return cast(bytes, self._backend.get(rel))
        hit = self._cache_get(rel)
        if hit is not None:
            return hit
        data = self._backend.get(rel)
        if self._cacheable(rel):
            self._cache_put(rel, data)
        return data

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of a file (one ranged GET)."""
        return self.read_ranges(rel, [(start, end)])[0]

    def read_ranges(self, rel: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of each ``(start, end)`` range; ranges closer than 1 MiB share one request."""
        hit = self._cache_get(rel)
        if hit is not None:
            if not self._cacheable(rel):
                self._cache_put(rel, hit)
            return [hit[a:b] for a, b in ranges]
        if self.is_local:
            return cast("list[bytes]", self._backend.get_local_ranges(rel, ranges))
        if not self.is_object_store:
            with self.open_input(rel) as f:
                out = []
                for a, b in ranges:
                    f.seek(a)
                    out.append(f.read(b - a))
                return out
        merged = coalesce_ranges(ranges)
        parts = self._backend.get_ranges(rel, merged)
        out = []
        for a, b in ranges:
            for (ma, mb), data in zip(merged, parts, strict=True):
                if ma <= a and b <= mb:
                    out.append(data[a - ma : b - ma])
                    break
            else:
                out.append(b"")
        return out

    def read_ends(
        self, items: Sequence[tuple[str, int]], head: int, tail: int
    ) -> list[bytes | tuple[bytes, bytes] | StorageError]:
        """Per file ``(rel, size)``, in order: its first ``size`` bytes when ``size <= head + tail``, else the pair
        of its first ``head`` bytes and the ``tail`` bytes that end its first ``size`` (fewer when a file is shorter).

        What a log scan reads of many small logs (``storage.log_blocks``): a log of one block is known by its two
        ends, the framing and headers at its start and the footer and reverse pointer at its end. On a local disk one
        open and one or two positional reads per file, all in one call (no file object: for thousands of small logs
        the per-file overhead is the cost); elsewhere ranged reads (the two ends of a file in one request when they
        are close). A file that cannot be read gets its error (``ObjectNotFoundError`` when it is gone, else
        ``StorageError``) in place of its bytes, for the caller to raise when it gets to it.
        """
        if self.is_local:
            ends = self._backend.get_local_ends(items, head, tail)
            return cast("list[bytes | tuple[bytes, bytes] | StorageError]", ends)
        out: list[bytes | tuple[bytes, bytes] | StorageError] = []
        for rel, size in items:
            try:
                if size <= head + tail:
                    out.append(self.read_range(rel, 0, size))
                else:
                    first, last = self.read_ranges(rel, [(0, head), (size - tail, size)])
                    out.append((first, last))
            except StorageError as exc:
                out.append(exc)
        return out

    def open_input(self, rel: str) -> BinaryIO:
        """A seekable binary reader (``read``, ``seek``, ``tell``, ``size()``); close it after use.

        On object stores a file up to ``evt_whole_object_limit`` (8 MiB) is fetched with one GET (none when it was
        prefetched) and served from memory; a larger one is read in aligned 1 MiB blocks on demand.
        """
        if not self.is_object_store:
            return cast(BinaryIO, self._backend.open(rel))
        hit = self._cache_get(rel)
        if hit is not None:
            return cast(BinaryIO, Buffer(hit))
        limit = self.options.whole_object_limit
        with self._lock:
            known = self._sizes.get(rel) if self._cacheable(rel) else None
        full = self.full_path(rel)
        if known is not None and known <= limit:
            return cast(BinaryIO, Buffer(self.read_bytes(rel)))
        if known is not None:
            return cast(BinaryIO, RangedReader(known, self._range_fetcher(rel), full))
        prefix, size = self._backend.get_prefix(rel, limit)
        if len(prefix) >= size:
            if self._cacheable(rel):
                self._cache_put(rel, prefix)
            return cast(BinaryIO, Buffer(prefix))
        kept = prefix[: limit - limit % RANGE_BLOCK]
        return cast(BinaryIO, RangedReader(size, self._range_fetcher(rel), full, prefix=kept))

    def _range_fetcher(self, rel: str) -> Callable[[list[tuple[int, int]]], list[bytes]]:
        return lambda ranges: self._backend.get_ranges(rel, ranges)

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes]:
        """Whole files, fetched in parallel (bounded); ``rel -> bytes``."""
        wanted = list(dict.fromkeys(rels))
        return dict(zip(wanted, self.parallel(self.read_bytes, wanted), strict=True))

    def prefetch(self, rels: Iterable[str]) -> None:
        """Fetch files that are about to be read, in parallel, so the reads that follow cost no request.

        A no-op on local file systems. Files over ``evt_whole_object_limit`` (by their listed size) are left to
        ranged reads; missing files are skipped (the read that follows reports them).
        """
        if not self.is_object_store:
            return
        limit = self.options.whole_object_limit
        todo = []
        with self._lock:
            for rel in dict.fromkeys(rels):
                if rel in self._cache or rel in self._once:
                    continue
                known = self._sizes.get(rel)
                if known is not None and known > limit:
                    continue
                todo.append(rel)

        def fetch(rel: str) -> None:
            try:
                data = self._backend.get(rel)
            except ObjectNotFoundError:
                return
            self._cache_put(rel, data)

        self.parallel(fetch, todo)

    # -- writing ---------------------------------------------------------------------------------------------------
    def write_bytes_atomic(self, rel: str, data: bytes, *, overwrite: bool = False, staging: str | None = None) -> None:
        """Write a whole file atomically: readers see the old state or all of ``data``.

        Object stores: one PUT (with ``If-None-Match: *`` unless ``overwrite``); local: a temporary file renamed
        (``overwrite``) or linked (create-only) into place. The temporary file is beside ``rel``, or in the folder
        ``staging`` where ``rel``'s folder must never hold another file, even after a crash (Hudi's marker folders,
        whose every file stock Hudi reads as a marker).

        Raises:
            ObjectExistsError: ``overwrite`` is false and the file exists (nothing is written).
            StorageError: the write failed.
        """
        self._forget(rel)
        self._backend.put(rel, bytes(data), create_only=not overwrite, staging=staging)

    def put_if_absent(self, rel: str, data: bytes) -> None:
        """Create ``rel`` only if it does not exist (S3/GCS/Azure conditional PUT; local ``link(2)``).

        Of two processes racing to create one file exactly one succeeds; the other gets
        :class:`~evt_toolkit.errors.ObjectExistsError` naming the full URI and leaves nothing behind.
        """
        self.write_bytes_atomic(rel, data, overwrite=False)

    def write_many(self, items: Mapping[str, bytes], *, overwrite: bool = False) -> None:
        """Write several files in parallel (bounded), each as :meth:`write_bytes_atomic`."""
        self.parallel(lambda kv: self.write_bytes_atomic(kv[0], kv[1], overwrite=overwrite), list(items.items()))

    def create_empty(self, rels: Iterable[str]) -> None:
        """Create empty files whose names alone matter (Hudi's markers), overwriting any: on file systems one
        ``open`` each, no temporary file (an empty file is there or not, and a crash must not leave a temporary file
        in a marker folder, whose every file stock Hudi reads as a marker); on object stores as :meth:`write_many`.

        Raises:
            StorageError: a file could not be created (names it).
        """
        rels = list(rels)
        if self.is_object_store:
            self.write_many(dict.fromkeys(rels, b""), overwrite=True)
            return
        if not self.is_local:  # a file system through pyarrow (HDFS)
            fs = cast(pafs.FileSystem, self._fs)
            for rel in rels:
                self._forget(rel)
                full = self._backend.full(rel)
                try:
                    fs.create_dir(posixpath.dirname(full), recursive=True)
                    with fs.open_output_stream(full):
                        pass
                except OSError as exc:
                    raise StorageError(f"cannot write {self.full_path(rel)}: {exc}") from exc
            return
        made: set[str] = set()
        for rel in rels:
            self._forget(rel)
            full = self.full_path(rel)
            parent = posixpath.dirname(full)
            try:
                if parent not in made:
                    os.makedirs(parent, exist_ok=True)
                    made.add(parent)
                with open(full, "wb"):
                    pass
            except OSError as exc:
                raise StorageError(f"cannot write {full}: {exc}") from exc

    def copy_file(self, src: str, dst: str, overwrite: bool = False) -> None:
        """Copy a file; server-side on object stores (S3 CopyObject: no byte passes through this process).

        Raises:
            ObjectExistsError: ``dst`` exists and ``overwrite`` is false.
            ObjectNotFoundError: ``src`` is missing.
        """
        self._forget(dst)
        self._backend.copy(src, dst, overwrite=overwrite)

    def delete_file(self, rel: str) -> None:
        """Delete one file (missing is fine)."""
        self._forget(rel)
        self._backend.delete([rel])

    def delete_files(self, rels: Sequence[str]) -> None:
        """Delete several files (object stores: bulk deletes of up to 1,000 keys per request)."""
        for rel in rels:
            self._forget(rel)
        self._backend.delete(list(rels))

    def delete_dir(self, rel: str) -> None:
        """Delete a folder and everything under it (missing is fine)."""
        if not self.is_object_store:
            self._backend.delete_dir(rel)
            return
        if not rel:
            raise StorageError(f"refusing to delete the whole table {self.uri} through delete_dir('')")
        self.delete_files([p for p, _ in self._backend.list_recursive(rel)])

    def delete_contents(self) -> None:
        """Delete every file of the table (its base path stays, empty)."""
        if not self.is_object_store:
            files, dirs = self.list_dir("")
            for d in dirs:
                self._backend.delete_dir(d)
            self._backend.delete([f.path for f in files])
            return
        self.delete_files([p for p, _ in self._backend.list_recursive("")])

    def makedirs(self, rel: str) -> None:
        """Create a folder (object stores have none: nothing is written, no folder-marker object)."""
        if not self.is_object_store:
            self._backend.makedirs(rel)

    # -- symlinks (local file systems only) ----------------------------------------------------------------------
    def _require_symlinks(self, what: str) -> None:
        if not self.supports_symlink:
            raise UnsupportedFeatureError(
                f"{what}: {self.uri} has no symlinks (only local file systems do); use link_mode='copy'"
            )

    def symlink(self, target: str, rel: str, *, overwrite: bool = False) -> None:
        """Make ``rel`` a symlink to ``target`` (a path relative to ``rel``'s folder, kept as given).

        Raises:
            UnsupportedFeatureError: not a local file system.
            ObjectExistsError: ``rel`` exists and ``overwrite`` is false.
        """
        self._require_symlinks(f"cannot create symlink {self.full_path(rel)}")
        full = self.full_path(rel)
        record(self.requests, "put")
        try:
            os.makedirs(posixpath.dirname(full), exist_ok=True)
            if not overwrite:
                os.symlink(target, full)
                return
            tmp = temporary_path(full)
            os.symlink(target, tmp)
            os.replace(tmp, full)
        except FileExistsError:
            raise ObjectExistsError(f"{full} already exists: not replacing it with a symlink") from None
        except OSError as exc:
            raise StorageError(f"cannot create symlink {full}: {exc}") from exc

    def is_symlink(self, rel: str) -> bool:
        """Whether ``rel`` is a symlink (always false where there are none)."""
        return self.supports_symlink and os.path.islink(self.full_path(rel))

    def read_link(self, rel: str) -> str | None:
        """The target ``rel`` points to as written in the link, ``None`` when it is not a symlink.

        Raises:
            UnsupportedFeatureError: not a local file system.
        """
        self._require_symlinks(f"cannot read symlink {self.full_path(rel)}")
        full = self.full_path(rel)
        return os.readlink(full) if os.path.islink(full) else None

    def lexists(self, rel: str) -> bool:
        """Whether ``rel`` exists, a dangling symlink included."""
        if self.supports_symlink:
            return os.path.lexists(self.full_path(rel))
        return self.exists(rel)
