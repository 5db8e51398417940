"""Storage layer: pyarrow.fs-backed file access rooted at a table base path."""

from evt_toolkit.storage.fs import FileEntry, TableStorage

__all__ = ["FileEntry", "TableStorage"]
