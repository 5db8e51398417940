"""Query types over a table: snapshot, read-optimized, time travel and incremental (Arrow in, Arrow out).

Planning is :func:`evt_toolkit.read.plan.plan_query` (shared with the Spark data source); each planned slice is read
by the one slice read, :func:`evt_toolkit.read.slice_reader.read_file_slice`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from evt_toolkit.read.conform import require_columns
from evt_toolkit.read.plan import plan_query, read_planned
from evt_toolkit.table.table import Table, listed_files_may_be_gone

__all__ = ["read_table"]


def read_table(
    table: Table,
    query_type: str = "snapshot",
    *,
    as_of: str | None = None,
    begin: str | None = None,
    end: str | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Read ``table`` with Hudi's query semantics (see :func:`evt_toolkit.read.plan.plan_query`).

    Raises:
        ReadError: bad query type, instant, window or column, or a state a clean removed.
        ObjectNotFoundError: a planned file is gone (the table changed since ``table`` was loaded; the message says
            to call ``refresh()``).
    """
    plan = plan_query(table, query_type, as_of=as_of, begin=begin, end=end)
    storage = table.storage
    if columns is not None:
        columns = list(columns)
        require_columns(plan.spec.schema, columns)  # before any read, also when the plan reads nothing
    with listed_files_may_be_gone():
        storage.prefetch(plan.paths())  # object stores: every file in parallel, so the reads below cost no request
        parts = [read_planned(plan.spec, r, storage, columns) for r in plan.reads]
    if parts:
        return pa.concat_tables(parts)
    empty = plan.spec.schema.empty_table()
    return empty if columns is None else empty.select(columns)
