"""Markers on a file system reached through pyarrow (HDFS and the like): no temporary file.

A marker folder must never hold a file stock Hudi cannot read as a marker, even after a crash: with no
``MARKERS.type`` stock Hudi's marker-based rollback takes every file there for a DIRECT marker and fails on any other.
An empty marker is therefore created in place (an empty file is there or not), never through a temporary file
beside it. Checked on pyarrow's in-memory file system behind a handler that records every file opened for writing.
"""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs

from evt_toolkit.storage.fs import TableStorage


class _Recording(pafs.FileSystemHandler):
    """Delegates to ``fs``, recording the paths opened for writing."""

    def __init__(self, fs: pafs.FileSystem) -> None:
        self.fs = fs
        self.opened: list[str] = []

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def get_type_name(self) -> str:
        return "recording"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> Any:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> Any:
        return self.fs.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        self.fs.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path: str) -> None:
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        self.opened.append(path)
        return self.fs.open_output_stream(path)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        self.opened.append(path)
        return self.fs.open_append_stream(path)


def test_empty_markers_are_created_in_place_on_a_file_system_through_pyarrow() -> None:
    mock, _ = pafs.FileSystem.from_uri("mock:///")
    handler = _Recording(mock)
    storage = TableStorage(pafs.PyFileSystem(handler), "/t", "hdfs-like:///t")
    assert not storage.is_local and not storage.is_object_store
    markers = [
        ".hoodie/.temp/7/p=a/f_0-0-0_7.parquet.marker.CREATE",
        ".hoodie/.temp/7/p=b/.g_7.log.1_0-0-0.marker.CREATE",
    ]
    storage.create_empty(markers)
    assert handler.opened == [f"/t/{m}" for m in markers], "each marker opened in place, no temporary file"
    assert all(storage.size(m) == 0 for m in markers)
    # A whole-file write still goes through a temporary file beside its target (readers see all of it or nothing).
    storage.write_bytes_atomic("p=a/x", b"data")
    assert len(handler.opened) == 3 and handler.opened[-1] != "/t/p=a/x" and storage.read_bytes("p=a/x") == b"data"
