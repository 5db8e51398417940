"""Table storage on top of ``pyarrow.fs``: local paths and URIs (file://, s3://, hdfs://, ...).

All paths handed to and returned by :class:`TableStorage` are *relative to the table's base path*
with ``/`` separators, which is how Hudi records them in commit metadata and plans.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import BinaryIO, cast

import pyarrow.fs as pafs

from evt_toolkit.errors import StorageError


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One listed file: path relative to the base path, its name and size in bytes."""

    path: str
    name: str
    size: int


class TableStorage:
    """File access rooted at a Hudi table's base path."""

    def __init__(self, fs: pafs.FileSystem, base_path: str, uri: str) -> None:
        self.fs = fs
        self.base_path = base_path.rstrip("/") or "/"
        self.uri = uri

    @classmethod
    def from_uri(cls, uri: str | os.PathLike[str]) -> TableStorage:
        """Open storage for a local path or a URI understood by ``pyarrow.fs.FileSystem.from_uri``."""
        text = os.fspath(uri)
        if "://" not in text:
            local = os.path.abspath(text)
            return cls(pafs.LocalFileSystem(), local, local)
        try:
            fs, path = pafs.FileSystem.from_uri(text)
        except (ValueError, OSError) as exc:  # pyarrow.ArrowInvalid derives from ValueError
            raise StorageError(f"cannot open file system for {text}: {exc}") from exc
        return cls(fs, path, text)

    # -- paths -------------------------------------------------------------------------------
    def full_path(self, rel: str) -> str:
        return posixpath.join(self.base_path, rel) if rel else self.base_path

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    @property
    def supports_symlink(self) -> bool:
        """Only local file systems offer symlinks through this layer (HDFS symlinks are not exposed by pyarrow)."""
        return self.is_local and hasattr(os, "symlink")

    # -- reading -------------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        try:
            return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound
        except OSError as exc:
            raise StorageError(f"cannot stat {self.full_path(rel)}: {exc}") from exc

    def is_dir(self, rel: str) -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    def list_dir(self, rel: str = "") -> tuple[list[FileEntry], list[str]]:
        """List one directory: (files, sub-directory relative paths). Missing directory → empty."""
        full = self.full_path(rel)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(full, allow_not_found=True, recursive=False))
        except OSError as exc:
            raise StorageError(f"cannot list {full}: {exc}") from exc
        files: list[FileEntry] = []
        dirs: list[str] = []
        for info in infos:
            name = posixpath.basename(info.path)
            child = posixpath.join(rel, name) if rel else name
            if info.type == pafs.FileType.Directory:
                dirs.append(child)
            elif info.type == pafs.FileType.File:
                files.append(FileEntry(child, name, int(info.size or 0)))
        files.sort(key=lambda e: e.path)
        dirs.sort()
        return files, dirs

    def size(self, rel: str) -> int:
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type != pafs.FileType.File:
            raise StorageError(f"not a file: {self.full_path(rel)}")
        return int(info.size or 0)

    def read_bytes(self, rel: str) -> bytes:
        full = self.full_path(rel)
        try:
            with self.fs.open_input_file(full) as f:
                return cast(bytes, f.read())
        except FileNotFoundError as exc:
            raise StorageError(f"file not found: {full}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {full}: {exc}") from exc

    def open_input(self, rel: str) -> BinaryIO:
        """A seekable binary reader (``read``, ``seek``, ``tell``, ``size()``); close it after use."""
        full = self.full_path(rel)
        try:
            return cast(BinaryIO, self.fs.open_input_file(full))
        except FileNotFoundError as exc:
            raise StorageError(f"file not found: {full}") from exc
        except OSError as exc:
            raise StorageError(f"cannot open {full}: {exc}") from exc

    # -- writing (atomic: temp file + rename, so readers never see a half-written file) ---------
    def write_bytes_atomic(self, rel: str, data: bytes, *, overwrite: bool = False) -> None:
        full = self.full_path(rel)
        parent = posixpath.dirname(full)
        if not overwrite and self.exists(rel):
            raise StorageError(f"refusing to overwrite existing file {full}")
        self.fs.create_dir(parent, recursive=True)
        tmp = posixpath.join(parent, f".{posixpath.basename(full)}.{uuid.uuid4().hex}.tmp")
        try:
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            self.fs.move(tmp, full)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.fs.delete_file(tmp)
            raise StorageError(f"cannot write {full}: {exc}") from exc

    def delete_file(self, rel: str) -> None:
        try:
            self.fs.delete_file(self.full_path(rel))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {self.full_path(rel)}: {exc}") from exc

    def makedirs(self, rel: str) -> None:
        self.fs.create_dir(self.full_path(rel), recursive=True)

    def delete_dir(self, rel: str) -> None:
        """Delete a folder and everything under it; a missing folder is fine."""
        full = self.full_path(rel)
        try:
            if self.fs.get_file_info(full).type == pafs.FileType.Directory:
                self.fs.delete_dir(full)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {full}: {exc}") from exc
