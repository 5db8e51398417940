"""``evt inspect`` and ``evt timeline``: what a table is made of, newest first (hudi-cli's ``desc``,
``timeline show active`` and ``show logfile metadata``).

``inspect`` prints the table's settings, its latest instants, its file slices and the log blocks of those slices
(headers only, with each block's min event time and where it came from). Lists are cut at ``--limit`` with a line
saying how many more there are; ``--partition``/``--file-id`` narrow the slices and blocks, ``--all-slices`` adds the
older slices of each file group.

The event-time field is the one given, else the table's ``hoodie.payload.event.time.field``, else its ordering
field — the rule notebook 05 follows too, so both report the same min event times for the same table.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from evt_toolkit.cli.options import add_json, add_table, command, limited, open_table, positive_or_zero
from evt_toolkit.cli.output import Output, count, size, when
from evt_toolkit.compaction.event_times import reporting_event_time_field
from evt_toolkit.errors import EventTimeError, EvtError

if TYPE_CHECKING:
    from evt_toolkit import HudiTable

__all__ = ["event_time_field", "register", "timeline_rows"]

#: Header entries shown in a block's row; ``SCHEMA`` is summarised as its field count, the full schema is in --json.
_SHOWN_HEADERS = ("TARGET_INSTANT_TIME", "COMMAND_BLOCK_TYPE", "COMPACTED_BLOCK_TIMES", "IS_PARTIAL", "MIN_EVENT_TIME")


def event_time_field(t: HudiTable, given: str | None) -> str | None:
    """The event-time field a command reports on (``reporting_event_time_field``: the notebooks use it too)."""
    return reporting_event_time_field(t, given)[0]


def timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    """Instants newest first: ``instant``, ``action``, ``state``, ``completion_time``."""
    rows = [
        {"instant": i.time, "action": i.action, "state": i.state.value, "completion_time": i.completion_time}
        for i in t.timeline.instants
    ]
    return rows[::-1]


def _more(out: Output, shown: int, total: int, what: str) -> None:
    if shown < total:
        out.line(f"… {total - shown:,} more {what} (--limit 0 shows all, --json prints everything)")


def _schema_fields(schema_json: str | None) -> str:
    import json

    if not schema_json:
        return ""
    try:
        return f"schema: {len(json.loads(schema_json).get('fields', []))} fields"
    except (ValueError, AttributeError):
        return "schema: not JSON"


def _header_text(header: dict[str, str]) -> str:
    parts = [f"{k}={header[k]}" for k in _SHOWN_HEADERS if k in header]
    schema = _schema_fields(header.get("SCHEMA"))
    return "; ".join([*parts, *([schema] if schema else [])])


def _committed(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def _table_lines(t: HudiTable, field: str | None) -> list[tuple[str, Any]]:
    c = t.config
    return [
        ("table", f"{c.name} ({c.table_type}, table version {c.version}, timeline layout {c.timeline_layout})"),
        ("path", t.path),
        ("record key", ", ".join(c.record_key_fields) or "-"),
        ("partition fields", ", ".join(c.partition_fields) or "- (not partitioned)"),
        ("ordering field", c.ordering_field or "-"),
        ("merge mode", c.merge_mode),
        (
            "event-time field",
            (field or "-")
            + ("" if field == c.event_time_field else " (the table declares none; --event-time-field to change)"),
        ),
    ]


def cmd_inspect(args: argparse.Namespace, out: Output) -> int:
    """``evt inspect``."""
    t = open_table(args)
    field = event_time_field(t, args.event_time_field)
    limit = args.limit if args.limit is not None else (0 if args.json else 20)
    slices = t.file_slices()
    if args.partition is not None:
        slices = slices.filter([p == args.partition for p in slices.column("partition_path").to_pylist()])
    if args.file_id is not None:
        slices = slices.filter([f == args.file_id for f in slices.column("file_id").to_pylist()])
    try:
        blocks = t.inspect.log_blocks(args.partition, args.file_id, event_time_field=field, all_slices=args.all_slices)
    except EvtError as exc:
        if args.event_time_field or field == t.config.event_time_field or not isinstance(exc, EventTimeError):
            raise
        # The ordering field was only a guess at the event time; the blocks are worth showing without it.
        out.note(f"note: {exc}; min event times are not shown (--event-time-field chooses a field)")
        field = t.config.event_time_field
        blocks = t.inspect.log_blocks(args.partition, args.file_id, event_time_field=field, all_slices=args.all_slices)
    timeline = timeline_rows(t)
    if args.json:
        c = t.config
        out.json(
            {
                "table": {
                    "path": t.path,
                    "name": c.name,
                    "type": c.table_type,
                    "version": c.version,
                    "timeline_layout": c.timeline_layout,
                    "merge_mode": c.merge_mode,
                    "record_key_fields": list(c.record_key_fields),
                    "partition_fields": list(c.partition_fields),
                    "ordering_field": c.ordering_field,
                    "event_time_field": field,
                },
                "timeline": timeline[: limited(len(timeline), limit)],
                "file_slices": slices.slice(0, limited(slices.num_rows, limit)).to_pylist(),
                "log_blocks": [
                    {**r, "header": dict(r["header"] or [])}
                    for r in blocks.slice(0, limited(blocks.num_rows, limit)).to_pylist()
                ],
                "totals": {"instants": len(timeline), "file_slices": slices.num_rows, "log_blocks": blocks.num_rows},
            }
        )
        return 0
    out.fields(None, _table_lines(t, field))
    n = limited(len(timeline), limit)
    out.table(
        f"Timeline ({len(timeline):,} instants, newest first)",
        ["instant", "action", "state", "completed at"],
        [[r["instant"], r["action"], r["state"], r["completion_time"]] for r in timeline[:n]],
    )
    _more(out, n, len(timeline), "instants")
    n = limited(slices.num_rows, limit)
    out.table(
        f"Latest file slices ({slices.num_rows:,})",
        ["partition", "file id", "base instant", "base file", "logs", "log bytes", "pending compaction"],
        [
            [
                r["partition_path"] or "(not partitioned)",
                r["file_id"],
                r["base_instant"],
                r["base_file"] or "(log only)",
                count(r["num_log_files"]),
                size(r["total_log_size"]),
                r["pending_compaction"],
            ]
            for r in slices.slice(0, n).to_pylist()
        ],
        right=("logs", "log bytes"),
    )
    _more(out, n, slices.num_rows, "file slices")
    n = limited(blocks.num_rows, limit)
    out.table(
        f"Log blocks of the {'' if args.all_slices else 'latest '}slices ({blocks.num_rows:,}, in replay order)",
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
        [
            [
                r["log_file"],
                count(r["offset"]),
                count(r["size"]),
                r["block_type"] + (f" ({r['corrupt_reason']})" if r["corrupt_reason"] else ""),
                r["instant_time"],
                _committed(r["committed"]),
                count(r["record_count"]),
                when(r["min_event_time"]),
                r["min_event_time_source"],
                _header_text(dict(r["header"] or [])),
            ]
            for r in blocks.slice(0, n).to_pylist()
        ],
        right=("offset", "bytes", "records"),
    )
    _more(out, n, blocks.num_rows, "log blocks")
    return 0


def cmd_timeline(args: argparse.Namespace, out: Output) -> int:
    """``evt timeline``."""
    t = open_table(args)
    rows = timeline_rows(t)
    if args.action:
        rows = [r for r in rows if r["action"] in args.action]
    n = limited(len(rows), args.limit)
    if args.json:
        out.json(rows[:n])
        return 0
    out.table(
        f"Timeline of {t.config.name} ({len(rows):,} instants, newest first)",
        ["instant", "action", "state", "completed at"],
        [[r["instant"], r["action"], r["state"], r["completion_time"]] for r in rows[:n]],
    )
    _more(out, n, len(rows), "instants")
    return 0


def register(sub: Any) -> None:
    """Add ``inspect`` and ``timeline``."""
    p = command(sub, "inspect", cmd_inspect, "timeline, file slices and log-block headers of a table")
    add_table(p)
    p.add_argument(
        "--event-time-field", help="field whose min event time is shown (default: the table's, else its ordering field)"
    )
    p.add_argument("--partition", help="only this partition path")
    p.add_argument("--file-id", help="only this file group")
    p.add_argument("--all-slices", action="store_true", help="also the older slices of each file group")
    p.add_argument(
        "--limit",
        type=positive_or_zero,
        metavar="N",
        help="at most N instants, slices and blocks each (default 20; with --json all; 0 for all)",
    )
    add_json(p)

    p = command(sub, "timeline", cmd_timeline, "instants with action, state and completion time, newest first")
    add_table(p)
    p.add_argument("--action", action="append", help="only this action (repeatable): deltacommit, commit, clean, ...")
    p.add_argument("--limit", type=positive_or_zero, default=50, metavar="N", help="at most N instants (50; 0 for all)")
    add_json(p)
