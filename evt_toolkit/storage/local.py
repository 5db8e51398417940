"""File systems through ``pyarrow.fs``: the local disk (with POSIX atomicity and symlinks) and HDFS-like systems.

Writes go to a temporary file in the target folder and are then renamed into place, so readers never see a
half-written file. A create-only write links the temporary file to its final name (``link(2)`` fails when the
name exists: Hadoop's ``rename`` without overwrite, ``renameat2(RENAME_NOREPLACE)``), so of two processes racing to
create one instant file exactly one succeeds and the other leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import shutil
from collections.abc import Sequence
from typing import Any

import pyarrow.fs as pafs

from evt_toolkit.errors import ObjectExistsError, ObjectNotFoundError, StorageError
from evt_toolkit.storage.requests import RequestCounter, record
from evt_toolkit.storage.temporary import temporary_path

#: How local reads open a file: read-only, not inherited by child processes.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


def _read_failure(full: str, exc: OSError) -> StorageError:
    """The error for a local read of ``full`` that failed with ``exc`` (gone: ``ObjectNotFoundError``)."""
    if isinstance(exc, FileNotFoundError):
        return ObjectNotFoundError(f"file not found: {full}")
    if isinstance(exc, IsADirectoryError):
        return StorageError(f"cannot read {full}: it is a directory")
    return StorageError(f"cannot read {full}: {exc}")


def _read_local(full: str) -> bytes:
    """A whole local file with plain system calls: open, fstat, read to the end of the file, close.

    A third of the cost of a buffered ``open().read()`` for the small files header scans read by the thousand (no
    file object, no buffer). A directory fails the read with ``IsADirectoryError``.
    """
    fd = os.open(full, _READ_FLAGS)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)  # one byte more than stated: a file that grew since is read on to its end
        if len(data) == size:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class ArrowBackend:
    """Requests on a ``pyarrow.fs`` file system rooted at ``base_path`` (local paths use ``os`` directly)."""

    def __init__(self, fs: pafs.FileSystem, base_path: str, counter: RequestCounter) -> None:
        self.fs = fs
        self.base_path = base_path.rstrip("/") or "/"
        self._prefix = self.base_path.rstrip("/") + "/"
        self.counter = counter
        self.local = isinstance(fs, pafs.LocalFileSystem)

    def full(self, rel: str) -> str:
        if not rel:
            return self.base_path
        return rel if rel[0] == "/" else self._prefix + rel  # posixpath.join's result, without its generality

    # -- reads --------------------------------------------------------------------------------------------------
    def head(self, rel: str) -> int | None:
        record(self.counter, "head")
        full = self.full(rel)
        if self.local:
            try:
                st = os.stat(full)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise StorageError(f"cannot stat {full}: {exc}") from exc
            return st.st_size if not os.path.isdir(full) else None
        try:
            info = self.fs.get_file_info(full)
        except OSError as exc:
            raise StorageError(f"cannot stat {full}: {exc}") from exc
        return int(info.size or 0) if info.type == pafs.FileType.File else None

    def info_type(self, rel: str) -> pafs.FileType:
        record(self.counter, "head")
        try:
            return self.fs.get_file_info(self.full(rel)).type
        except OSError as exc:
            raise StorageError(f"cannot stat {self.full(rel)}: {exc}") from exc

    def mtime(self, rel: str) -> Any:
        record(self.counter, "head")
        try:
            return self.fs.get_file_info(self.full(rel)).mtime
        except OSError as exc:
            raise StorageError(f"cannot stat {self.full(rel)}: {exc}") from exc

    def get(self, rel: str) -> bytes:
        full = self.full(rel)
        try:
            if self.local:
                data = _read_local(full)
            else:
                with self.fs.open_input_file(full) as f:
                    data = f.read()
        except OSError as exc:
            record(self.counter, "get")
            raise _read_failure(full, exc) from exc
        record(self.counter, "get", read=len(data))
        return bytes(data)

    def get_local_ends(
        self, items: Sequence[tuple[str, int]], head: int, tail: int
    ) -> list[bytes | tuple[bytes, bytes] | StorageError]:
        """Per local file ``(rel, size)``, in order: its first ``size`` bytes when ``size <= head + tail``, else the
        pair of its first ``head`` bytes and the ``tail`` bytes that end its first ``size`` bytes. Per file one
        open, one or two ``pread`` calls and one close, with no file object (a file shorter than ``size`` gives
        what it has).

        A file that cannot be read gets its error in place of its bytes (``ObjectNotFoundError`` when it is gone), for
        the caller to raise when it gets to that file: the files before it are answered as a loop would answer them.
        """
        out: list[bytes | tuple[bytes, bytes] | StorageError] = []
        append = out.append
        read = 0
        pairs = 0  # files read at both ends: two reads each
        whole = head + tail
        for rel, size in items:
            full = self.full(rel)
            try:
                fd = os.open(full, _READ_FLAGS)
                try:
                    if size <= whole:
                        data: bytes | tuple[bytes, bytes] = os.pread(fd, size, 0) if size > 0 else b""
                        read += len(data)
                    else:
                        first = os.pread(fd, head, 0)
                        last = os.pread(fd, tail, size - tail)
                        data = (first, last)
                        read += len(first) + len(last)
                        pairs += 1
                finally:
                    os.close(fd)
            except OSError as exc:
                append(_read_failure(full, exc))
                continue
            append(data)
        record(self.counter, "get", len(items) + pairs, read=read)
        return out

    def get_local_ranges(self, rel: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Bytes of each ``(start, end)`` range of a local file: one open, one ``pread`` per range (no file object).

        A range past the end of the file comes back short, as a read would.
        """
        full = self.full(rel)
        try:
            fd = os.open(full, _READ_FLAGS)
            try:
                out = [os.pread(fd, b - a, a) if b > a else b"" for a, b in ranges]
            finally:
                os.close(fd)
        except OSError as exc:
            record(self.counter, "get")
            raise _read_failure(full, exc) from exc
        record(self.counter, "get", read=sum(map(len, out)))
        return out

    def open(self, rel: str) -> Any:
        full = self.full(rel)
        record(self.counter, "get")
        try:
            return self.fs.open_input_file(full)
        except FileNotFoundError as exc:
            raise ObjectNotFoundError(f"file not found: {full}") from exc
        except OSError as exc:
            raise StorageError(f"cannot open {full}: {exc}") from exc

    def list_folder(self, rel: str) -> tuple[list[tuple[str, int]], list[str]]:
        full = self.full(rel)
        record(self.counter, "list")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(full, allow_not_found=True, recursive=False))
        except OSError as exc:
            raise StorageError(f"cannot list {full}: {exc}") from exc
        files: list[tuple[str, int]] = []
        dirs: list[str] = []
        # ``is_file`` and ``base_name`` are answered in C++; ``type`` builds a Python enum member on every call (the
        # loop over a folder of thousands of logs took longer than the listing itself).
        for info in infos:
            if info.is_file:
                files.append((info.base_name, int(info.size or 0)))
            elif info.type == pafs.FileType.Directory:
                dirs.append(info.base_name)
        return files, dirs

    def list_recursive(self, rel: str) -> list[tuple[str, int]]:
        full = self.full(rel)
        record(self.counter, "list")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(full, allow_not_found=True, recursive=True))
        except OSError as exc:
            raise StorageError(f"cannot list {full}: {exc}") from exc
        base = self.base_path.rstrip("/") + "/"
        return [
            (i.path[len(base) :] if i.path.startswith(base) else i.path, int(i.size or 0)) for i in infos if i.is_file
        ]

    # -- writes -------------------------------------------------------------------------------------------------
    def put(self, rel: str, data: bytes, *, create_only: bool, staging: str | None = None) -> None:
        """Write through a temporary file: renamed over the target, or linked to it when ``create_only``. The
        temporary file is beside the target, or in ``staging`` (a folder on the same file system) when given."""
        full = self.full(rel)
        parent = posixpath.dirname(full)
        record(self.counter, "put", written=len(data))
        tmp = temporary_path(full if staging is None else posixpath.join(self.full(staging), "x"))
        if self.local:
            try:
                os.makedirs(parent, exist_ok=True)
                if staging is not None:
                    os.makedirs(posixpath.dirname(tmp), exist_ok=True)
                with open(tmp, "wb") as fh:
                    fh.write(data)
                self._commit_local(tmp, full, create_only)
            except ObjectExistsError:
                raise
            except OSError as exc:
                raise StorageError(f"cannot write {full}: {exc}") from exc
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            return
        if create_only and self.head(rel) is not None:
            raise ObjectExistsError(f"{full} already exists: not overwriting it")
        try:
            self.fs.create_dir(parent, recursive=True)
            if staging is not None:
                self.fs.create_dir(posixpath.dirname(tmp), recursive=True)
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            self.fs.move(tmp, full)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.fs.delete_file(tmp)
            raise StorageError(f"cannot write {full}: {exc}") from exc

    def _commit_local(self, tmp: str, full: str, create_only: bool) -> None:
        if not create_only:
            os.replace(tmp, full)
            return
        try:
            os.link(tmp, full)
        except FileExistsError:
            raise ObjectExistsError(f"{full} already exists: not overwriting it") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            # A file system without hard links: O_EXCL create of the name, then the content moved over it.
            try:
                fd = os.open(full, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                raise ObjectExistsError(f"{full} already exists: not overwriting it") from None
            os.close(fd)
            os.replace(tmp, full)

    def copy(self, src: str, dst: str, *, overwrite: bool) -> None:
        s, d = self.full(src), self.full(dst)
        record(self.counter, "copy")
        if not self.local:
            if not overwrite and self.head(dst) is not None:
                raise ObjectExistsError(f"{d} already exists: not overwriting it")
            try:
                self.fs.copy_file(s, d)
            except FileNotFoundError as exc:
                raise ObjectNotFoundError(f"file not found: {s}") from exc
            except OSError as exc:
                raise StorageError(f"cannot copy {s} to {d}: {exc}") from exc
            return
        tmp = temporary_path(d)
        try:
            os.makedirs(posixpath.dirname(d), exist_ok=True)
            shutil.copyfile(s, tmp)
            self._commit_local(tmp, d, not overwrite)
        except FileNotFoundError as exc:
            raise ObjectNotFoundError(f"file not found: {s}") from exc
        except ObjectExistsError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot copy {s} to {d}: {exc}") from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def delete(self, rels: Sequence[str]) -> None:
        for rel in rels:
            record(self.counter, "delete")
            full = self.full(rel)
            try:
                if self.local:
                    os.unlink(full)
                else:
                    self.fs.delete_file(full)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StorageError(f"cannot delete {full}: {exc}") from exc

    def delete_dir(self, rel: str) -> None:
        record(self.counter, "delete")
        full = self.full(rel)
        try:
            if self.local:
                if os.path.islink(full):
                    os.unlink(full)
                else:
                    shutil.rmtree(full)
            else:
                self.fs.delete_dir(full)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {full}: {exc}") from exc

    def makedirs(self, rel: str) -> None:
        try:
            self.fs.create_dir(self.full(rel), recursive=True)
        except OSError as exc:
            raise StorageError(f"cannot create {self.full(rel)}: {exc}") from exc
