"""Storage layer: a table's files on a local disk, HDFS-like systems (pyarrow.fs) or object stores (obstore)."""

from evt_toolkit.storage.fs import FileEntry, TableStorage, coalesce_ranges, register_storage_options
from evt_toolkit.storage.options import StorageOptions, options_from_hadoop_conf
from evt_toolkit.storage.requests import RequestCounts, count_requests, process_counts

__all__ = [
    "FileEntry",
    "RequestCounts",
    "StorageOptions",
    "TableStorage",
    "coalesce_ranges",
    "count_requests",
    "options_from_hadoop_conf",
    "process_counts",
    "register_storage_options",
]
