"""``evt`` — the command line.

``evt inspect <table>`` prints a table's timeline, latest file slices and log-block headers (with min event time and
its source). ``--json`` prints the same as JSON for scripts. Compaction commands (``preview``, ``schedule``, ``run``,
``validate``, ``unschedule``, ``metrics``) live in :mod:`evt_toolkit.cli_compaction`, the demo builders in
:mod:`evt_toolkit.demo.cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from evt_toolkit.api import HudiTable
from evt_toolkit.cli_compaction import add_compaction_parsers
from evt_toolkit.demo.cli import add_demo_parser
from evt_toolkit.errors import EvtError
from evt_toolkit.table.inspect import schema_summary


def _fmt_ms(value: int | None) -> str:
    if value is None:
        return ""
    import datetime as dt

    return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    return [
        {"instant": i.time, "action": i.action, "state": i.state.value, "completion_time": i.completion_time}
        for i in t.timeline.instants
    ]


def _rich_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for c in columns:
        table.add_column(c, overflow="fold")
    for r in rows:
        table.add_row(*["" if v is None else str(v) for v in r])
    return table


def cmd_inspect(args: argparse.Namespace, console: Console) -> int:
    t = HudiTable.open(args.table)
    slices = t.file_slices()
    blocks = t.inspect.log_blocks(event_time_field=args.event_time_field)
    if args.json:
        out = {
            "table": {
                "path": t.path,
                "name": t.config.name,
                "type": t.config.table_type,
                "version": t.config.version,
                "merge_mode": t.config.merge_mode,
                "record_key_fields": list(t.config.record_key_fields),
                "partition_fields": list(t.config.partition_fields),
                "ordering_field": t.config.ordering_field,
                "event_time_field": args.event_time_field or t.config.event_time_field,
            },
            "timeline": _timeline_rows(t),
            "file_slices": slices.to_pylist(),
            "log_blocks": [{**r, "header": dict(r["header"]) if r["header"] else {}} for r in blocks.to_pylist()],
        }
        json.dump(out, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    c = t.config
    console.print(
        f"[bold]{c.name}[/bold]  {c.table_type}  table version {c.version}  layout {c.timeline_layout}  "
        f"merge {c.merge_mode}\n  path {t.path}\n  key {', '.join(c.record_key_fields) or '-'}  "
        f"partitions {', '.join(c.partition_fields) or '-'}  ordering {c.ordering_field or '-'}  "
        f"event time {args.event_time_field or c.event_time_field or '-'}"
    )
    tl = _timeline_rows(t)
    console.print(
        _rich_table(
            f"Timeline ({len(tl)} instants)",
            ["instant", "action", "state", "completed at"],
            [[r["instant"], r["action"], r["state"], r["completion_time"]] for r in tl],
        )
    )
    console.print(
        _rich_table(
            f"Latest file slices ({slices.num_rows})",
            ["partition", "file id", "base instant", "base file", "logs", "log bytes", "pending compaction"],
            [
                [
                    r["partition_path"] or "(root)",
                    r["file_id"],
                    r["base_instant"],
                    r["base_file"],
                    r["num_log_files"],
                    r["total_log_size"],
                    r["pending_compaction"],
                ]
                for r in slices.to_pylist()
            ],
        )
    )
    rows = []
    for r in blocks.to_pylist():
        header = dict(r["header"] or [])
        shown = {k: v for k, v in header.items() if k != "SCHEMA"}
        if "SCHEMA" in header:
            shown["SCHEMA"] = schema_summary(header["SCHEMA"], limit=4)
        rows.append(
            [
                r["log_file"],
                r["offset"],
                r["size"],
                r["block_type"],
                r["instant_time"],
                "" if r["committed"] is None else ("yes" if r["committed"] else "NO"),
                r["record_count"],
                _fmt_ms(r["min_event_time"]),
                r["min_event_time_source"],
                "; ".join(f"{k}={v}" for k, v in shown.items())
                + (f" CORRUPT: {r['corrupt_reason']}" if r["corrupt_reason"] else ""),
            ]
        )
    console.print(
        _rich_table(
            f"Log blocks of the latest slices ({blocks.num_rows})",
            [
                "log file",
                "offset",
                "bytes",
                "type",
                "instant",
                "committed",
                "records",
                "min event time",
                "source",
                "header",
            ],
            rows,
        )
    )
    return 0


def cmd_timeline(args: argparse.Namespace, console: Console) -> int:
    t = HudiTable.open(args.table)
    tl = _timeline_rows(t)
    if args.json:
        json.dump(tl, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    console.print(
        _rich_table(
            f"Timeline of {t.config.name}",
            ["instant", "action", "state", "completed at"],
            [[r["instant"], r["action"], r["state"], r["completion_time"]] for r in tl],
        )
    )
    return 0


def cmd_read(args: argparse.Namespace, console: Console) -> int:
    t = HudiTable.open(args.table)
    columns = args.columns.split(",") if args.columns else None
    data: pa.Table = t.read(args.query_type, as_of=args.as_of, begin=args.begin, end=args.end, columns=columns)
    if args.json:
        json.dump(data.slice(0, args.limit).to_pylist(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    console.print(f"{data.num_rows} rows ({args.query_type})")
    console.print(data.slice(0, args.limit).to_pandas().to_string())
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evt", description="Event-time compaction toolkit for Hudi MOR tables.")
    sub = p.add_subparsers(dest="command", required=True)

    ins = sub.add_parser("inspect", help="timeline, file slices and log-block headers of a table")
    ins.add_argument("table", help="table base path or URI")
    ins.add_argument("--event-time-field", help="field whose min event time is reported (default: table config)")
    ins.add_argument("--json", action="store_true", help="print JSON")
    ins.set_defaults(func=cmd_inspect)

    tl = sub.add_parser("timeline", help="instants with action, state and completion time")
    tl.add_argument("table")
    tl.add_argument("--json", action="store_true")
    tl.set_defaults(func=cmd_timeline)

    rd = sub.add_parser("read", help="read a table (snapshot, read_optimized or incremental)")
    rd.add_argument("table")
    rd.add_argument("--query-type", default="snapshot", choices=["snapshot", "read_optimized", "incremental"])
    rd.add_argument("--as-of")
    rd.add_argument("--begin")
    rd.add_argument("--end")
    rd.add_argument("--columns", help="comma-separated projection")
    rd.add_argument("--limit", type=int, default=20)
    rd.add_argument("--json", action="store_true")
    rd.set_defaults(func=cmd_read)

    add_compaction_parsers(sub)
    add_demo_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(width=200) if not sys.stdout.isatty() else Console()
    try:
        return int(args.func(args, console))
    except EvtError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {type(exc).__name__}: {exc}")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
