"""Bring Arrow tables decoded from different files (older writer schemas, other physical types) to one schema."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.errors import ReadError


def require_columns(schema: pa.Schema, columns: Sequence[str], source: str = "the table") -> None:
    """Refuse columns ``schema`` lacks, before anything is read.

    Raises:
        ReadError: names the unknown columns and every column ``source`` has.
    """
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise ReadError(f"unknown column(s) {missing}; {source} has {schema.names}")


def conform(table: pa.Table, schema: pa.Schema, source: str) -> pa.Table:
    """Return ``table`` with exactly ``schema``'s fields: missing columns become nulls, types are cast.

    Schema evolution Hudi supports on read (added columns, int→long→double, float→double, string↔bytes) is covered
    by Arrow casts. Columns the schema does not know are dropped.

    Raises:
        ReadError: a column cannot be cast to the table schema's type (names the file).
    """
    columns: list[pa.Array | pa.ChunkedArray] = []
    n = table.num_rows
    names = set(table.column_names)
    for field in schema:
        if field.name in names:
            col = table[field.name]
            if col.type != field.type:
                try:
                    col = _cast(col, field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                    raise ReadError(
                        f"column {field.name!r} of {source} has type {col.type}, cannot read it as {field.type}: {exc}"
                    ) from exc
            columns.append(col)
        else:
            columns.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


def conform_runs(tables: Sequence[tuple[pa.Table, str]], schema: pa.Schema) -> list[pa.Table]:
    """``[conform(t, schema, source) for t, source in tables]`` concatenated per run of tables decoded alike.

    Consecutive tables with the same schema (blocks of one writer schema) are concatenated and conformed in one call:
    the same rows in the same order, one cast per run instead of one per block. A run whose cast fails is conformed
    table by table, so that the error names the file at fault.

    Raises:
        ReadError: as :func:`conform`.
    """
    out: list[pa.Table] = []
    i = 0
    while i < len(tables):
        j = i + 1
        while j < len(tables) and tables[j][0].schema.equals(tables[i][0].schema):
            j += 1
        run = tables[i:j]
        try:
            out.append(conform(pa.concat_tables([t for t, _ in run]) if len(run) > 1 else run[0][0], schema, run[0][1]))
        except ReadError:
            if len(run) == 1:
                raise
            out += [conform(t, schema, src) for t, src in run]
        i = j
    return out


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    src = col.type
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(target) and (src.tz is None) != (target.tz is None):
        # Same instant, different annotation: reinterpret rather than shift by a time zone.
        col = (
            pc.cast(col, pa.int64())
            if src.unit == target.unit
            else pc.cast(pc.cast(col.cast(pa.timestamp(src.unit)), pa.timestamp(target.unit)), pa.int64())
        )
        return col.cast(target)
    if pa.types.is_map(target) and pa.types.is_map(src):
        return col.cast(target)
    return col.cast(target, safe=False) if pa.types.is_floating(target) else col.cast(target)
