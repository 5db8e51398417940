"""``evt read``: query a table (snapshot, read-optimized, incremental, time travel) and print the first rows.

``--limit N`` streams: every query type is planned as :meth:`HudiTable.read` plans it, then read one file slice at a
time, and reading stops once N rows are in hand, so ``evt read big_table --limit 5`` costs one slice, not the
table.

``--json`` prints a JSON array written row by row, so ``evt read t --json --limit 0 | head`` ends quietly.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from evt_toolkit.cli.options import add_json, add_table, command, open_table, positive_or_zero, usage_error
from evt_toolkit.cli.output import Output

if TYPE_CHECKING:
    from evt_toolkit import HudiTable

__all__ = ["iter_batches", "register"]


def iter_batches(
    t: HudiTable,
    query_type: str = "snapshot",
    *,
    as_of: str | None = None,
    begin: str | None = None,
    end: str | None = None,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.Table]:
    """A query's rows as Arrow tables, one planned file slice at a time.

    The plan is the reader's own (:func:`evt_toolkit.read.plan.plan_query`: the same slices, retention checks and
    incremental window as :meth:`HudiTable.read`); only the reading is spread out, so a caller that stops early
    never reads the rest.
    """
    from evt_toolkit.read.conform import require_columns
    from evt_toolkit.read.plan import plan_query, read_planned

    plan = plan_query(t, query_type, as_of=as_of, begin=begin, end=end)
    wanted = list(columns) if columns else None
    if wanted:
        require_columns(plan.spec.schema, wanted, t.path)
    for r in plan.reads:
        yield read_planned(plan.spec, r, t.storage, wanted)


def _rows(batches: Iterator[pa.Table], limit: int) -> Iterator[dict[str, Any]]:
    n = 0
    for batch in batches:
        for row in batch.to_pylist() if limit == 0 else batch.slice(0, limit - n).to_pylist():
            yield row
            n += 1
        if limit and n >= limit:
            return


def cmd_read(args: argparse.Namespace, out: Output) -> int:
    """``evt read``."""
    if args.query_type == "incremental" and args.as_of:
        usage_error(args, "--as-of does not apply to incremental reads; use --begin/--end")
    if args.query_type != "incremental" and (args.begin or args.end):
        usage_error(args, "--begin/--end apply to --query-type incremental only")
    t = open_table(args)
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    batches = iter_batches(t, args.query_type, as_of=args.as_of, begin=args.begin, end=args.end, columns=columns)
    if args.json:
        out.json_array(_rows(batches, args.limit))
        return 0
    rows = list(_rows(batches, args.limit))
    if not rows:
        out.line(f"no rows ({args.query_type})")
        return 0
    import pandas as pd

    frame = pd.DataFrame(rows)
    with pd.option_context("display.max_columns", None, "display.width", None, "display.max_colwidth", 60):
        out.line(frame.to_string(index=False))
    more = "" if args.limit == 0 or len(rows) < args.limit else f" (the first {len(rows):,}; --limit N for more)"
    out.note(f"{len(rows):,} rows, {args.query_type}{more}")
    return 0


def register(sub: Any) -> None:
    """Add ``read``."""
    p = command(sub, "read", cmd_read, "read a table: snapshot, read_optimized or incremental, with time travel")
    add_table(p)
    p.add_argument("--query-type", default="snapshot", choices=["snapshot", "read_optimized", "incremental"])
    p.add_argument("--as-of", metavar="INSTANT", help="time travel: the table as of this instant")
    p.add_argument(
        "--begin", metavar="INSTANT", help="incremental: after this instant (exclusive; earliest: the start)"
    )
    p.add_argument("--end", metavar="INSTANT", help="incremental: up to this instant (inclusive)")
    p.add_argument("--columns", help="comma-separated projection, e.g. uuid,fare")
    p.add_argument(
        "--limit",
        type=positive_or_zero,
        default=20,
        metavar="N",
        help="stop after N rows (default 20; 0 for all); snapshot and RO reads stop reading there too",
    )
    add_json(p)
