"""``evt logfile``: the records of one log file, block by block (hudi-cli's ``show logfile records`` and
``show logfile metadata``).

The log file is named as ``inspect`` prints it (``.{fileId}_{instant}.log.{version}_{token}``), or by its path
relative to the table. Each record row says which block it came from, the block's type and instant, and whether that
instant committed (readers skip blocks of failed or inflight writes and of rolled-back instants). Data blocks give
their records; delete blocks give the deleted keys with their ordering value; command and corrupt blocks have no
records and are listed with ``--blocks``.

Records are decoded block by block and printing stops at ``--limit``.
"""

from __future__ import annotations

import argparse
import posixpath
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evt_toolkit.cli.options import add_json, add_table, command, open_table, positive_or_zero
from evt_toolkit.cli.output import Output, count, when
from evt_toolkit.errors import EvtError, ReadError

if TYPE_CHECKING:
    from evt_toolkit import HudiTable

__all__ = ["find_log_file", "register"]


def find_log_file(t: HudiTable, name: str) -> tuple[str, str, Any]:
    """``(partition, file id, LogFile)`` of the log file called ``name`` (or at relative path ``name``).

    Raises:
        ReadError: no such log file in any file slice.
    """
    wanted = name.strip().lstrip("/")
    base = posixpath.basename(wanted)
    for g in t.view.file_groups():
        for s in g.slices:
            for lf in s.log_files:
                if lf.name == base and (wanted == base or lf.path.endswith(wanted)):
                    return g.partition_path, g.file_id, lf
    raise ReadError(
        f"no log file {name!r} in any file slice of {t.path}; 'evt inspect {t.path} --all-slices' lists them"
    )


def _records(t: HudiTable, lf: Any, block_rows: list[dict[str, Any]], limit: int) -> Iterator[dict[str, Any]]:
    from evt_toolkit.format.log_content import read_block_records
    from evt_toolkit.format.logfile import scan_log_blocks

    status = {r["offset"]: r for r in block_rows}
    n = 0
    with t.storage.open_input(lf.path) as f:
        for index, blk in enumerate(list(scan_log_blocks(f, lf.size, lf.path))):
            if not blk.is_data and blk.block_type.name != "DELETE":
                continue
            facts = status.get(blk.offset, {})
            try:
                records = read_block_records(f, blk)
            except EvtError as exc:
                yield {"block": index, "block_type": blk.block_type.name, "error": str(exc)}
                continue
            head = {
                "block": index,
                "block_type": blk.block_type.name,
                "instant": blk.instant_time,
                "committed": facts.get("committed"),
            }
            for rec in records.to_pylist():
                yield {**head, **rec}
                n += 1
                if limit and n >= limit:
                    return


def cmd_logfile(args: argparse.Namespace, out: Output) -> int:
    """``evt logfile``."""
    t = open_table(args)
    partition, file_id, lf = find_log_file(t, args.log_file)
    blocks = t.inspect.log_blocks(partition, file_id, all_slices=True)
    mine = [r for r in blocks.to_pylist() if r["log_file"] == lf.name]
    if args.blocks:
        rows = [
            {
                "block": i,
                "offset": r["offset"],
                "size": r["size"],
                "block_type": r["block_type"],
                "instant": r["instant_time"],
                "target_instant": r["target_instant_time"],
                "committed": r["committed"],
                "records": r["record_count"],
                "min_event_time": r["min_event_time"],
                "corrupt_reason": r["corrupt_reason"],
                "header": dict(r["header"] or []),
            }
            for i, r in enumerate(mine)
        ]
        if args.json:
            out.json({"log_file": lf.path, "partition": partition, "file_id": file_id, "blocks": rows})
            return 0
        out.table(
            f"Blocks of {lf.path} ({len(rows):,})",
            [
                "#",
                "offset",
                "bytes",
                "type",
                "instant",
                "target instant",
                "committed",
                "records",
                "min event time",
                "header keys",
            ],
            [
                [
                    r["block"],
                    count(r["offset"]),
                    count(r["size"]),
                    r["block_type"] + (f" ({r['corrupt_reason']})" if r["corrupt_reason"] else ""),
                    r["instant"],
                    r["target_instant"],
                    "-" if r["committed"] is None else ("yes" if r["committed"] else "NO"),
                    count(r["records"]),
                    when(r["min_event_time"]),
                    ", ".join(sorted(r["header"])),
                ]
                for r in rows
            ],
            right=("#", "offset", "bytes", "records"),
        )
        return 0
    records = _records(t, lf, mine, args.limit)
    if args.json:
        out.json_array(records)
        return 0
    rows_list = list(records)
    if not rows_list:
        out.line(f"{lf.path}: no records (its blocks: evt logfile {args.table} {lf.name} --blocks)")
        return 0
    import pandas as pd

    frame = pd.DataFrame(rows_list)
    if not args.meta:
        frame = frame.drop(
            columns=[
                c
                for c in frame.columns
                if c.startswith("_hoodie_") and c not in ("_hoodie_record_key", "_hoodie_partition_path")
            ]
        )
    if "committed" in frame:
        frame["committed"] = frame["committed"].map(lambda v: "-" if v is None else ("yes" if v else "NO"))
    with pd.option_context("display.max_columns", None, "display.width", None, "display.max_colwidth", 60):
        out.line(frame.to_string(index=False))
    limit = "" if not args.limit or len(rows_list) < args.limit else f" (the first {len(rows_list):,}; --limit N)"
    out.note(f"{len(rows_list):,} records from {lf.path}{limit}")
    return 0


def register(sub: Any) -> None:
    """Add ``logfile``."""
    p = command(
        sub,
        "logfile",
        cmd_logfile,
        "records (or, with --blocks, block headers) of one log file (hudi-cli: show logfile records)",
    )
    add_table(p)
    p.add_argument("log_file", help="the log file's name as evt inspect prints it, or its path in the table")
    p.add_argument("--blocks", action="store_true", help="list the blocks and their headers instead of records")
    p.add_argument("--meta", action="store_true", help="also show Hudi's _hoodie_* meta columns")
    p.add_argument(
        "--limit", type=positive_or_zero, default=20, metavar="N", help="stop after N records (default 20; 0 for all)"
    )
    add_json(p)
