"""``evt preview|schedule|run|validate|unschedule|metrics`` — compaction from the command line.

Every command takes the table's base path first and prints readable tables, or JSON with ``--json``. Errors of the
toolkit (:class:`~evt_toolkit.errors.EvtError`) print one plain line on stderr and exit with code 2 (``evt``'s
``main``); a validation that finds problems, or an unschedule that is refused, exits with 1.

Thresholds are ISO-8601 times or epoch milliseconds; durations are milliseconds or a number with a unit —
``500ms``, ``30s``, ``30m``, ``1h``, ``2d``, ``1w`` — or several of them (``1h30m``).

Example:
    >>> parser = argparse.ArgumentParser(prog="evt")
    >>> _ = add_compaction_parsers(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["preview", "/data/t", "--data-latency", "1h"]).data_latency
    3600000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from evt_toolkit.api import HudiTable
from evt_toolkit.compaction.freshness import ro_freshness
from evt_toolkit.compaction.metrics import metrics as table_metrics
from evt_toolkit.compaction.strategy import (
    STRATEGY_CLASSES,
    STRATEGY_NAMES,
    CompactionStrategy,
    EventTimeBasedCompactionStrategy,
    InvalidThresholdError,
    iso_ms,
)

if TYPE_CHECKING:
    from evt_toolkit.compaction.executor import ProgressEvent

__all__ = ["STRATEGIES", "add_compaction_parsers", "build_strategy", "parse_duration"]

STRATEGIES = STRATEGY_NAMES
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def parse_duration(text: str) -> int:
    """A duration in milliseconds: ``"1500"`` (ms), ``"30m"``, ``"1h"``, ``"2d"``, ``"1h30m"``.

    Raises:
        argparse.ArgumentTypeError: not a duration.

    Example:
        >>> parse_duration("1h30m"), parse_duration("250")
        (5400000, 250)
    """
    value = text.strip().lower()
    if value.isdigit():
        return int(value)
    parts = _PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 500ms, 30s, 30m, 1h, 2d, 1h30m)")
    return int(sum(float(n) * _UNITS_MS[u] for n, u in parts))


def build_strategy(args: argparse.Namespace) -> CompactionStrategy:
    """The strategy the command-line options describe.

    Raises:
        InvalidThresholdError: an event-time strategy without exactly one of the threshold options, or threshold
            options given to another strategy.
    """
    given = [
        name for name in ("threshold", "data_latency", "allowed_lateness") if getattr(args, name, None) is not None
    ]
    if args.strategy == "event_time":
        if len(given) != 1:
            raise InvalidThresholdError(
                "the event_time strategy needs exactly one of --threshold, --data-latency, --allowed-lateness"
                + (f" (got {', '.join('--' + g.replace('_', '-') for g in given)})" if given else "")
            )
        return EventTimeBasedCompactionStrategy(
            threshold=args.threshold,
            data_latency=args.data_latency,
            allowed_lateness=args.allowed_lateness,
            event_time_field=args.event_time_field,
        )
    if given:
        raise InvalidThresholdError(f"--{given[0].replace('_', '-')} only applies to --strategy event_time")
    return STRATEGY_CLASSES[args.strategy]()


# -- output helpers ----------------------------------------------------------------------------------------------------


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return obj.hex()
    return obj


def _print_json(data: Any) -> None:
    json.dump(_jsonable(data), sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c, overflow="fold")
    for r in rows:
        table.add_row(*["" if v is None else str(v) for v in r])
    return table


def _kv_table(title: str, rows: Sequence[tuple[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("", style="bold")
    table.add_column("", overflow="fold")
    for k, v in rows:
        table.add_row(k, "-" if v is None else str(v))
    return table


def _when(ms: int | None) -> str:
    return "-" if ms is None else f"{iso_ms(ms)} ({ms})"


# -- commands ----------------------------------------------------------------------------------------------------------


def cmd_preview(args: argparse.Namespace, console: Console) -> int:
    """``evt preview``: what a strategy would plan, no writes."""
    t = HudiTable.open(args.table)
    kwargs: dict[str, Any] = {"link_mode": args.link_mode}
    if args.now_ms is not None:
        kwargs["now_ms"] = args.now_ms
    p = t.compaction.preview(build_strategy(args), **kwargs)
    selected = p.per_slice.filter(p.per_slice.column("selected"))
    if args.json:
        _print_json({"summary": p.summary, "slices": selected.to_pylist()})
        return 0
    console.print(p.summary_text())
    rows = [
        [
            r["partition_path"] or "(root)",
            r["file_id"],
            f"{r['logs_compacted']}/{r['num_log_files']}",
            r["logs_remaining"],
            r["bytes_read"],
            r["bytes_written_estimate"],
            r["links"],
            "-" if r["min_event_time_remaining"] is None else iso_ms(r["min_event_time_remaining"]),
        ]
        for r in selected.slice(0, args.limit).to_pylist()
    ]
    console.print(
        _table(
            f"Selected file slices ({selected.num_rows}"
            + (f", first {args.limit}" if selected.num_rows > args.limit else "")
            + ")",
            ["partition", "file id", "logs compacted", "kept", "bytes read", "bytes written ≈", "links", "min kept"],
            rows,
        )
    )
    return 0


def cmd_schedule(args: argparse.Namespace, console: Console) -> int:
    """``evt schedule``: write the compaction plan (and links)."""
    t = HudiTable.open(args.table)
    kwargs: dict[str, Any] = {}
    if args.instant:
        kwargs["instant"] = args.instant
    if args.now_ms is not None:
        kwargs["now_ms"] = args.now_ms
    c = t.compaction.schedule(
        build_strategy(args),
        link_mode=args.link_mode,
        link_timing=args.link_timing,
        exact_split=args.exact_split,
        **kwargs,
    )
    if c is None:
        if args.json:
            _print_json({"scheduled": False, "reason": "nothing to compact"})
        else:
            console.print("nothing to compact: no plan written")
        return 0
    info = {
        "scheduled": True,
        "instant": c.instant,
        "threshold_ms": c.threshold,
        "threshold_iso": None if c.threshold is None else iso_ms(c.threshold),
        "link_mode": c.link_mode,
        "link_timing": c.link_timing,
        "operations": c.operations,
        "links": list(c.links),
    }
    if args.json:
        _print_json(info)
        return 0
    console.print(
        _kv_table(
            f"Scheduled compaction {c.instant}",
            [
                ("threshold T", _when(c.threshold)),
                ("operations", c.operations),
                ("links", f"{len(c.links)} ({c.link_mode}, created at {c.link_timing})"),
                ("next", f"evt run {args.table} {c.instant}"),
            ],
        )
    )
    return 0


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """``evt run``: execute a scheduled compaction with a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    t = HudiTable.open(args.table)
    spark = None
    if args.spark:
        from evt_toolkit.spark.session import get_or_create_session

        spark = get_or_create_session()
    # The bar goes to stderr so that --json output on stdout stays machine-readable.
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=args.json,
    )
    tasks: dict[str, Any] = {}

    def on_progress(event: ProgressEvent) -> None:
        task = tasks.get(event.stage)
        total = event.total if event.total is not None and event.total > 0 else None
        if task is None:
            task = tasks[event.stage] = progress.add_task(event.stage, total=total)
        progress.update(task, completed=event.done, total=total, description=f"{event.stage} {event.message or ''}")

    with progress:
        result = t.compaction.run(args.instant, spark=spark, progress=on_progress)
    if args.json:
        _print_json(result)
        return 0
    console.print(
        _kv_table(
            f"Compaction {result.instant} completed",
            [
                ("threshold T", _when(result.threshold)),
                ("operations", result.operations),
                ("base files written", len(result.base_files_written)),
                ("records written", result.records_written),
                ("bytes written", result.bytes_written),
                ("log files compacted", f"{result.log_files_compacted} ({result.log_bytes_compacted} bytes)"),
                ("links", result.links),
                ("duration", f"{result.duration_s:.1f} s"),
            ],
        )
    )
    console.print(ro_freshness(t).text())
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    """``evt validate``: check a compaction; exit 1 when problems are found."""
    t = HudiTable.open(args.table)
    report = t.compaction.validate(args.instant)
    if args.json:
        _print_json(report)
    elif report.ok:
        console.print(f"[green]OK[/green] compaction {args.instant}: {_checked(report.checked)}")
    else:
        console.print(f"[red]PROBLEMS[/red] in compaction {args.instant} ({_checked(report.checked)}):")
        for problem in report.problems:
            console.print(f"  - {problem}", markup=False)
    return 0 if report.ok else 1


def _checked(checked: Any) -> str:
    if isinstance(checked, int):
        return f"{checked} check(s) passed"
    if isinstance(checked, Sequence) and not isinstance(checked, str):
        return f"checked {len(checked)}: " + ", ".join(str(c) for c in checked)
    return f"checked {checked}"


def cmd_unschedule(args: argparse.Namespace, console: Console) -> int:
    """``evt unschedule``: dry run unless ``--yes``; exit 1 when refused."""
    t = HudiTable.open(args.table)
    report = t.compaction.unschedule(args.instant, dry_run=not args.yes)
    if args.json:
        _print_json({**_jsonable(report), "dry_run": not args.yes})
    elif report.refused_reason:
        console.print(f"[red]refused[/red]: {report.refused_reason}", markup=True)
    else:
        verb = "deleted" if report.deleted else "would delete (dry run; --yes to delete)"
        console.print(_table(f"Unschedule {args.instant}: {verb}", ["file"], [[f] for f in report.files_to_delete]))
    return 1 if report.refused_reason else 0


def cmd_metrics(args: argparse.Namespace, console: Console) -> int:
    """``evt metrics``: the RFC figures, RO freshness; Prometheus text with ``--prometheus FILE``."""
    t = HudiTable.open(args.table)
    fresh = ro_freshness(t)
    m = table_metrics(t, freshness=fresh)
    if args.prometheus:
        m.write_prometheus(args.prometheus)
    if args.json:
        _print_json({**m.as_dict(), "freshness": fresh.as_dict()})
        return 0
    console.print(
        _kv_table(
            f"Compaction metrics of {m.table}",
            [
                ("(a) min event time, remaining logs", _when(m.min_remaining_event_time_ms)),
                ("(b) file slices with remaining logs", f"{m.slices_with_remaining_logs} of {m.slices_total}"),
                ("(c) remaining log bytes", m.remaining_log_bytes),
                ("(d) remaining log files", m.remaining_log_files),
                (
                    "(e) RO freshness T",
                    _when(m.ro_freshness_ms) if m.ro_freshness_ms is not None else f"none — {fresh.reason}",
                ),
                ("freshness lag", "-" if m.freshness_lag_ms is None else f"{m.freshness_lag_ms / 1000:.0f} s"),
                ("late records", f"{fresh.late_records} in {len(fresh.late_log_files)} log file(s)"),
                ("last event-time compaction", fresh.instant),
                ("pending compactions", m.pending_compactions),
            ],
        )
    )
    for path in fresh.late_log_files:
        console.print(f"  late: {path}", markup=False)
    if args.prometheus:
        console.print(f"wrote {args.prometheus}")
    return 0


# -- parsers -----------------------------------------------------------------------------------------------------------


def _strategy_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", choices=STRATEGIES, default="event_time", help="compaction strategy (event_time)")
    t = p.add_mutually_exclusive_group()
    t.add_argument("--threshold", help="T as ISO-8601 time or epoch ms")
    t.add_argument("--data-latency", type=parse_duration, help="T = now − latency (e.g. 1h)")
    t.add_argument("--allowed-lateness", type=parse_duration, help="T = max ingested event time − lateness (e.g. 30m)")
    p.add_argument("--event-time-field", help="event-time field (default: the table's)")
    p.add_argument("--now-ms", type=int, help=argparse.SUPPRESS)


def add_compaction_parsers(sub: Any) -> None:
    """Add the compaction commands to ``evt``'s sub-parsers; each sets ``func(args, console) -> int``.

    Args:
        sub: the result of ``ArgumentParser.add_subparsers()``.
    """
    pv = sub.add_parser("preview", help="what a compaction strategy would plan (no writes)")
    pv.add_argument("table", help="table base path or URI")
    _strategy_options(pv)
    pv.add_argument("--link-mode", choices=["copy", "symlink"], default="copy")
    pv.add_argument("--limit", type=int, default=50, help="slices shown in text mode (50)")
    pv.add_argument("--json", action="store_true", help="print JSON")
    pv.set_defaults(func=cmd_preview)

    sc = sub.add_parser("schedule", help="schedule a compaction (writes the plan and, by default, the links)")
    sc.add_argument("table")
    _strategy_options(sc)
    sc.add_argument("--link-mode", choices=["copy", "symlink"], default="copy")
    sc.add_argument("--link-timing", choices=["schedule", "execute"], default="schedule")
    sc.add_argument("--exact-split", action="store_true", help="keep events > T out of the new base files")
    sc.add_argument("--instant", help="the compaction instant (default: a new one)")
    sc.add_argument("--json", action="store_true")
    sc.set_defaults(func=cmd_schedule)

    rn = sub.add_parser("run", help="execute a scheduled compaction")
    rn.add_argument("table")
    rn.add_argument("instant")
    rn.add_argument("--spark", action="store_true", help="run the operations as Spark tasks")
    rn.add_argument("--json", action="store_true")
    rn.set_defaults(func=cmd_run)

    va = sub.add_parser("validate", help="check a compaction's plan, links and files")
    va.add_argument("table")
    va.add_argument("instant")
    va.add_argument("--json", action="store_true")
    va.set_defaults(func=cmd_validate)

    un = sub.add_parser("unschedule", help="remove a pending compaction (dry run unless --yes)")
    un.add_argument("table")
    un.add_argument("instant")
    un.add_argument("--yes", action="store_true", help="really delete")
    un.add_argument("--json", action="store_true")
    un.set_defaults(func=cmd_unschedule)

    me = sub.add_parser("metrics", help="compaction metrics and RO freshness")
    me.add_argument("table")
    me.add_argument("--prometheus", metavar="FILE", help="also write Prometheus text exposition to FILE")
    me.add_argument("--json", action="store_true")
    me.set_defaults(func=cmd_metrics)
