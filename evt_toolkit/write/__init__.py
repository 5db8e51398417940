"""write layer: create version-6 Merge-On-Read tables and ingest upserts, inserts and deletes as Hudi log files."""

from evt_toolkit.write.create import create_table
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec, next_log_version, plan_file_group_writes
from evt_toolkit.write.task import prepare_batch, write_file_group
from evt_toolkit.write.writer import local_executor, write

__all__ = [
    "FileGroupWrite",
    "WriteJobSpec",
    "create_table",
    "local_executor",
    "next_log_version",
    "plan_file_group_writes",
    "prepare_batch",
    "write",
    "write_file_group",
]
