"""``evt preview|schedule|run|validate|unschedule|repair|metrics|compactions``: compaction from the command line.

Every command takes the table's base path first and prints readable tables, or JSON with ``--json``.
``validate`` exits 1 when it finds problems and ``unschedule`` when it is refused; compaction commands on a
Copy-On-Write table exit 1 and say why (it has no log files: compaction is for Merge-On-Read tables).

Thresholds are ISO-8601 times or epoch milliseconds; durations are milliseconds or a number with a unit —
``500ms``, ``30s``, ``30m``, ``1h``, ``2d``, ``1w`` — or several of them (``1h30m``).

``evt run --spark`` runs the plan's operations as Spark tasks on a local session; ``--master`` (``local[8]``,
``spark://host:7077``, ``yarn``, ...) and ``--conf key=value`` (``spark.executor.memory=8g``, ...) target another
cluster and size it, as ``spark-submit`` would.

Example:
    >>> parser = argparse.ArgumentParser(prog="evt")
    >>> register(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["preview", "/data/t", "--data-latency", "1h"]).data_latency
    3600000
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from evt_toolkit.cli.options import (
    add_json,
    add_limit,
    add_table,
    command,
    limited,
    open_table,
    positive_or_zero,
    usage_error,
)
from evt_toolkit.cli.output import Output, count, duration, size, when
from evt_toolkit.cli.tables import event_time_field
from evt_toolkit.compaction.plan import EXTRA_LINK_MODE, EXTRA_LINK_TIMING, EXTRA_STRATEGY, EXTRA_THRESHOLD_MS
from evt_toolkit.compaction.strategy import (
    STRATEGY_CLASSES,
    STRATEGY_NAMES,
    CompactionStrategy,
    EventTimeBasedCompactionStrategy,
)
from evt_toolkit.errors import UnsupportedTableError
from evt_toolkit.format.records import CompactionPlan

if TYPE_CHECKING:
    from evt_toolkit import HudiTable
    from evt_toolkit.compaction.executor import ProgressEvent
    from evt_toolkit.compaction.preview import PreviewSummary

__all__ = ["build_strategy", "parse_duration", "register", "spark_conf"]

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


def spark_conf(text: str) -> tuple[str, str]:
    """``key=value`` (argparse type of ``--conf``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def build_strategy(args: argparse.Namespace, t: HudiTable) -> CompactionStrategy:
    """The strategy the command-line options describe (usage error when they do not fit together)."""
    given = [n for n in ("threshold", "data_latency", "allowed_lateness") if getattr(args, n, None) is not None]
    if args.strategy == "event_time":
        if not given:
            usage_error(args, "the event_time strategy needs one of --threshold, --data-latency, --allowed-lateness")
        return EventTimeBasedCompactionStrategy(
            threshold=args.threshold,
            data_latency=args.data_latency,
            allowed_lateness=args.allowed_lateness,
            event_time_field=event_time_field(t, args.event_time_field),
        )
    if given:
        usage_error(args, f"--{given[0].replace('_', '-')} only applies to --strategy event_time")
    return STRATEGY_CLASSES[args.strategy]()


def _require_mor(t: HudiTable, what: str) -> None:
    if t.config.table_type != "MERGE_ON_READ":
        raise UnsupportedTableError(
            f"{t.path} is a {t.config.table_type} table: it writes base files only and has no log files, so there "
            f"is nothing to {what} (compaction is for MERGE_ON_READ tables)"
        )


# -- preview -----------------------------------------------------------------------------------------------------------


def summary_lines(s: PreviewSummary) -> list[tuple[str, str]]:
    """A preview's figures in words (the text of ``evt preview``)."""
    t = "-" if s.threshold_ms is None else when(s.threshold_ms)
    if s.threshold_ms is not None and not s.threshold_within_bound:
        t += " (later than compaction time − data latency: a schedule would refuse it)"
    share = (
        f" ({100 * s.logs_compacted / s.full_logs_compacted:.0f}% of a full compaction)"
        if s.full_logs_compacted
        else ""
    )
    written = size(s.bytes_written_estimate)
    if s.bytes_read:
        written += f" (log bytes × {s.compression_ratio} compression ratio, plus base files)"
    rows = [
        ("strategy", s.strategy),
        ("threshold T", t),
        (
            "slices",
            f"{s.slices_selected:,} of {s.slices_candidate:,} with logs compacted ({s.slices_partial:,} "
            f"partially); {s.slices_pending_compaction:,} held by a pending compaction",
        ),
        (
            "logs compacted",
            f"{s.logs_compacted:,} of {s.logs_total:,}{share}, {s.logs_forced:,} of them forced by the prefix rule",
        ),
        ("logs kept", f"{s.logs_total - s.logs_compacted:,}, {s.links:,} of them linked into new slices"),
        ("bytes read", size(s.bytes_read)),
        ("bytes written ≈", written),
        ("bytes copied for links", size(s.link_bytes_copied)),
        (
            "full compaction",
            f"{s.full_logs_compacted:,} log(s) in {s.full_slices:,} slice(s): read "
            f"{size(s.full_bytes_read)}, write ≈ {size(s.full_bytes_written_estimate)}",
        ),
    ]
    written_total = s.bytes_written_estimate + s.link_bytes_copied
    if s.logs_corrupt_compacted:
        rows.append(
            (
                "refused",
                f"{s.logs_corrupt_compacted:,} log(s) to compact hold a corrupt block (a torn append): a schedule "
                "refuses this plan and writes nothing",
            )
        )
    if s.copy_costs_more:
        rows.append(
            (
                "note",
                f"this plan writes ≈ {size(written_total)} (base files ≈ {size(s.bytes_written_estimate)} plus "
                f"{size(s.link_bytes_copied)} of link copies), more than a full compaction would write "
                f"(≈ {size(s.full_bytes_written_estimate)}); --link-mode symlink copies nothing where the storage "
                "has symlinks",
            )
        )
    if s.logs_compacted == 0:
        rows.append(("RO freshness", "unchanged: this plan would compact nothing"))
    elif s.ro_freshness_ms is not None:
        rows.append(("RO freshness after the plan", f"every event ≤ {when(s.ro_freshness_ms)}"))
    else:
        rows.append(("RO freshness", "not promised — " + ("; ".join(s.freshness_blockers) or "no threshold")))
    return rows


def cmd_preview(args: argparse.Namespace, out: Output) -> int:
    """``evt preview``: what a strategy would plan, no writes."""
    t = open_table(args)
    _require_mor(t, "preview")
    kwargs: dict[str, Any] = {"link_mode": args.link_mode}
    if args.now_ms is not None:
        kwargs["now_ms"] = args.now_ms
    p = t.compaction.preview(build_strategy(args, t), **kwargs)
    selected = p.per_slice.filter(p.per_slice.column("selected"))
    n = limited(selected.num_rows, args.limit)
    if args.json:
        out.json(
            {"summary": p.summary, "slices": selected.slice(0, n).to_pylist(), "selected_slices": selected.num_rows}
        )
        return 0
    out.fields(f"Preview of {t.config.name} (nothing written)", summary_lines(p.summary))
    if not selected.num_rows:
        return 0
    out.table(
        f"Selected file slices ({selected.num_rows:,})",
        [
            "partition",
            "file id",
            "logs compacted",
            "forced",
            "kept",
            "bytes read",
            "bytes written ≈",
            "links",
            "min kept event time",
        ],
        [
            [
                r["partition_path"] or "(not partitioned)",
                r["file_id"],
                f"{r['logs_compacted']:,} of {r['num_log_files']:,}",
                count(r["logs_forced"]),
                count(r["logs_remaining"]),
                size(r["bytes_read"]),
                size(r["bytes_written_estimate"]),
                count(r["links"]),
                when(r["min_event_time_remaining"]),
            ]
            for r in selected.slice(0, n).to_pylist()
        ],
        right=("forced", "kept", "bytes read", "bytes written ≈", "links"),
    )
    if n < selected.num_rows:
        out.line(f"… {selected.num_rows - n:,} more slices (--limit 0 shows all)")
    return 0


# -- schedule, run, validate, unschedule -------------------------------------------------------------------------------


def cmd_schedule(args: argparse.Namespace, out: Output) -> int:
    """``evt schedule``: write the compaction plan (and links)."""
    t = open_table(args)
    _require_mor(t, "schedule")
    kwargs: dict[str, Any] = {}
    if args.instant:
        kwargs["instant"] = args.instant
    if args.now_ms is not None:
        kwargs["now_ms"] = args.now_ms
    c = t.compaction.schedule(
        build_strategy(args, t),
        link_mode=args.link_mode,
        link_timing=args.link_timing,
        exact_split=args.exact_split,
        **kwargs,
    )
    if c is None:
        if args.json:
            out.json({"scheduled": False, "reason": "nothing to compact"})
        else:
            out.line("nothing to compact: no plan written")
        return 0
    info = {
        "scheduled": True,
        "instant": c.instant,
        "threshold_ms": c.threshold,
        "threshold_iso": None if c.threshold is None else when(c.threshold),
        "link_mode": c.link_mode,
        "link_timing": c.link_timing,
        "operations": c.operations,
        "links": [{**vars_of(x), "symlink_path": x.symlink_path, "target_path": x.target_path} for x in c.links],
    }
    if args.json:
        out.json(info)
        return 0
    out.fields(
        f"Scheduled compaction {c.instant}",
        [
            ("threshold T", when(c.threshold)),
            ("operations", count(c.operations)),
            ("links", f"{len(c.links):,} ({c.link_mode}, created at {c.link_timing})"),
            ("next", f"evt run {args.table} {c.instant}"),
        ],
    )
    return 0


def _spark_session(args: argparse.Namespace) -> Any:
    sized = args.executor_memory or args.executor_cores or args.num_executors
    if not (args.spark or args.master or args.conf or sized):
        return None
    from evt_toolkit.spark.session import get_or_create_session

    conf = dict(args.conf or [])
    if args.executor_memory:
        conf["spark.executor.memory"] = args.executor_memory
    if args.executor_cores:
        conf["spark.executor.cores"] = str(args.executor_cores)
    if args.num_executors:
        conf["spark.executor.instances"] = str(args.num_executors)
    return get_or_create_session(master=args.master or "local[2]", extra_conf=conf)


def cmd_run(args: argparse.Namespace, out: Output) -> int:
    """``evt run``: execute a scheduled compaction with a progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    t = open_table(args)
    _require_mor(t, "run")
    spark = _spark_session(args)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out.err,
        transient=args.json,
        disable=not out.err.is_terminal,
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
    fresh = t.ro_freshness()
    ran_on = _spark_facts(spark, args)
    if args.json:
        out.json({**vars_of(result), "freshness": fresh.as_dict(), "spark": ran_on})
        return 0
    out.fields(
        f"Compaction {result.instant} completed",
        [
            ("threshold T", when(result.threshold)),
            ("operations", count(result.operations)),
            ("base files written", count(len(result.base_files_written))),
            ("records written", count(result.records_written)),
            ("bytes written", size(result.bytes_written)),
            ("log files compacted", f"{result.log_files_compacted:,} ({size(result.log_bytes_compacted)})"),
            ("links", count(result.links)),
            ("ran on", "this process" if ran_on is None else f"Spark {ran_on['master']} ({ran_on['app_id']})"),
            ("duration", duration(result.duration_s * 1000)),
            ("RO freshness", _freshness_text(fresh)),
        ],
    )
    return 0


def _spark_facts(spark: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    """Where the run went: the session's master, application id and the settings given on the command line."""
    if spark is None:
        return None
    sc = spark.sparkContext
    asked = {k for k, _ in (args.conf or [])} | {
        k
        for k, v in (
            ("spark.executor.memory", args.executor_memory),
            ("spark.executor.cores", args.executor_cores),
            ("spark.executor.instances", args.num_executors),
        )
        if v
    }
    conf = sc.getConf()
    return {"master": sc.master, "app_id": sc.applicationId, "conf": {k: conf.get(k) for k in sorted(asked)}}


def vars_of(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict (JSON output)."""
    import dataclasses

    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _freshness_text(f: Any) -> str:
    if f.threshold_ms is None:
        return f"none ({f.reason})"
    text = f"every event ≤ {when(f.threshold_ms)} (compaction {f.instant}, lag {duration(f.lag_ms)})"
    if f.late_records:
        text += f"; {f.late_records:,} late record(s) in {len(f.late_log_files):,} log file(s)"
    return text


def cmd_validate(args: argparse.Namespace, out: Output) -> int:
    """``evt validate``: check a compaction; exit 1 when problems are found."""
    t = open_table(args)
    report = t.compaction.validate(args.instant)
    if args.json:
        out.json(report)
    elif report.ok:
        out.line(f"OK compaction {args.instant}: {report.checked:,} check(s) passed")
    else:
        out.line(f"PROBLEMS in compaction {args.instant} ({report.checked:,} checks):")
        for problem in report.problems:
            out.line(f"  - {problem}")
    return 0 if report.ok else 1


def cmd_unschedule(args: argparse.Namespace, out: Output) -> int:
    """``evt unschedule``: dry run unless ``--yes``; exit 1 when refused."""
    t = open_table(args)
    report = t.compaction.unschedule(args.instant, dry_run=not args.yes)
    files = list(report.files_to_delete)
    if args.json:
        out.json({**vars_of(report), "dry_run": not args.yes})
    elif report.refused_reason:
        out.line(f"refused: {report.refused_reason}")
    else:
        verb = "deleted" if report.deleted else "would delete (dry run; --yes deletes)"
        n = limited(len(files), args.limit)
        out.table(f"Unschedule {args.instant}: {verb} {len(files):,} file(s)", ["file"], [[f] for f in files[:n]])
        if n < len(files):
            out.line(f"… {len(files) - n:,} more files (--limit 0 shows all, --json prints everything)")
    return 1 if report.refused_reason else 0


def cmd_metrics(args: argparse.Namespace, out: Output) -> int:
    """``evt metrics``: the RFC figures and RO freshness; Prometheus text with ``--prometheus FILE``."""
    t = open_table(args)
    fresh = t.ro_freshness()
    m = t.metrics()
    if args.prometheus:
        m.write_prometheus(args.prometheus)
    if args.json:
        out.json({**m.as_dict(), "freshness": fresh.as_dict()})
        return 0
    unknown = f" ({m.remaining_logs_unknown_min:,} log(s) of unknown min)" if m.remaining_logs_unknown_min else ""
    out.fields(
        f"Compaction metrics of {m.table}",
        [
            ("(a) min event time, remaining logs", when(m.min_remaining_event_time_ms) + unknown),
            ("(b) file slices with remaining logs", f"{m.slices_with_remaining_logs:,} of {m.slices_total:,}"),
            ("(c) remaining log bytes", f"{size(m.remaining_log_bytes)} ({m.remaining_log_bytes:,} B)"),
            ("(d) remaining log files", count(m.remaining_log_files)),
            ("(e) RO freshness T", _freshness_text(fresh)),
            ("late records", f"{fresh.late_records:,} in {len(fresh.late_log_files):,} log file(s)"),
            ("last event-time compaction", fresh.instant),
            ("pending compactions", count(m.pending_compactions)),
        ],
    )
    for path in fresh.late_log_files:
        out.line(f"  late: {path}")
    if args.prometheus:
        out.note(f"wrote {args.prometheus}")
    return 0


def cmd_repair(args: argparse.Namespace, out: Output) -> int:
    """``evt repair``: dry run unless ``--yes``; exit 1 when something cannot be repaired."""
    t = open_table(args)
    r = t.compaction.repair(dry_run=not args.yes)
    if args.json:
        out.json({**vars_of(r), "clean": r.clean})
        return 1 if r.unrepairable else 0
    if r.clean:
        out.line(f"nothing to repair: {t.config.name}'s compaction artifacts are in order")
        return 0
    verb = "would" if r.dry_run else "did"
    out.fields(
        f"Compaction repair of {t.config.name}" + (": dry run (--yes repairs)" if r.dry_run else ""),
        [
            ("abandoned schedules' links", f"{len(r.abandoned_links):,} ({verb} delete)"),
            ("missing links of pending plans", f"{len(r.missing_links):,} ({verb} make again from the plan)"),
            ("stale ownership records", f"{len(r.stale_record_folders):,} folder(s) ({verb} delete)"),
            ("markers of killed unschedules", f"{len(r.stale_unschedule_markers):,} ({verb} delete)"),
            ("temporary files of killed writers", f"{len(r.stale_temporary_files):,} ({verb} delete)"),
            ("rollbacks that can never finish", f"{len(r.retired_rollbacks):,} ({verb} retire)"),
            ("cannot repair", f"{len(r.unrepairable):,}"),
        ],
    )
    files = [
        *r.abandoned_links,
        *r.missing_links,
        *r.stale_record_folders,
        *r.stale_unschedule_markers,
        *r.stale_temporary_files,
    ]
    n = limited(len(files), args.limit)
    if files:
        out.table(None, ["file"], [[f] for f in files[:n]])
    if n < len(files):
        out.line(f"… {len(files) - n:,} more (--limit 0 shows all, --json prints everything)")
    for rollback in r.retired_rollbacks:
        out.line(f"  rollback {rollback} can never finish and changed nothing: its timeline files ({verb} delete)")
    for problem in r.unrepairable:
        out.line(f"  cannot repair: {problem}")
    return 1 if r.unrepairable else 0


# -- compactions: history and pending plans --------------------------------------------------------------------------


def _plan_figures(plan: CompactionPlan) -> dict[str, Any]:
    """Operations, logs, links and event-time settings of a ``HoodieCompactionPlan``."""
    extra = plan.extra
    ops = plan.operations
    t = extra.get(EXTRA_THRESHOLD_MS)
    strategy = extra.get(EXTRA_STRATEGY)
    return {
        "operations": len(ops),
        "log_files_compacted": sum(len(op.delta_files) for op in ops),
        "links": sum(len(op.links) for op in ops),
        "threshold_ms": int(t) if t not in (None, "") else None,
        "strategy": strategy.rsplit(".", 1)[-1] if strategy else None,
        "link_mode": extra.get(EXTRA_LINK_MODE),
        "link_timing": extra.get(EXTRA_LINK_TIMING),
    }


def compaction_rows(t: HudiTable) -> list[dict[str, Any]]:
    """Every compaction on the timeline, newest first: completed ones from ``t.compaction.history()``, pending ones
    (requested, inflight) from their plans."""
    rows: list[dict[str, Any]] = []
    for r in t.compaction.history().to_pylist():
        rows.append(
            {
                "instant": r["instant"],
                "state": "COMPLETED",
                "completed_at": r["completed_at"],
                "strategy": (r["strategy"] or "").rsplit(".", 1)[-1] or None,
                "threshold_ms": r["threshold_ms"],
                "link_mode": r["link_mode"],
                "link_timing": r["link_timing"],
                "operations": r["operations"],
                "log_files_compacted": r["log_files_compacted"],
                "links": r["links"],
                "records_written": r["records_written"],
                "bytes_written": r["bytes_written"],
            }
        )
    for inst in t.compaction.pending():
        figures = _plan_figures(t.timeline.compaction_plan(inst))
        rows.append(
            {
                "instant": inst.time,
                "state": inst.state.value,
                "completed_at": None,
                **figures,
                "records_written": None,
                "bytes_written": None,
            }
        )
    return sorted(rows, key=lambda r: r["instant"], reverse=True)


def cmd_compactions(args: argparse.Namespace, out: Output) -> int:
    """``evt compactions``: every compaction, newest first."""
    t = open_table(args)
    rows = compaction_rows(t)
    n = limited(len(rows), args.limit)
    if args.json:
        out.json(rows[:n])
        return 0
    if not rows:
        out.line(f"no compaction on the timeline of {t.config.name}")
        return 0
    out.table(
        f"Compactions of {t.config.name} ({len(rows):,}, newest first)",
        [
            "instant",
            "state",
            "completed at",
            "strategy",
            "threshold T",
            "operations",
            "logs compacted",
            "links",
            "links made",
            "records written",
            "bytes written",
        ],
        [
            [
                r["instant"],
                r["state"],
                r["completed_at"],
                r["strategy"],
                when(r["threshold_ms"]),
                count(r["operations"]),
                count(r["log_files_compacted"]),
                count(r["links"]),
                "-" if not r["link_mode"] else f"{r['link_mode']} at {r['link_timing']}",
                count(r["records_written"]),
                size(r["bytes_written"]),
            ]
            for r in rows[:n]
        ],
        right=("operations", "logs compacted", "links", "records written", "bytes written"),
    )
    if n < len(rows):
        out.line(f"… {len(rows) - n:,} older compactions (--limit 0 shows all)")
    return 0


# -- parsers -----------------------------------------------------------------------------------------------------------


def _strategy_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", choices=STRATEGY_NAMES, default="event_time", help="compaction strategy (event_time)")
    t = p.add_mutually_exclusive_group()
    t.add_argument("--threshold", metavar="T", help="T as ISO-8601 time or epoch ms")
    t.add_argument("--data-latency", type=parse_duration, metavar="DURATION", help="T = now − latency (e.g. 1h)")
    t.add_argument(
        "--allowed-lateness",
        type=parse_duration,
        metavar="DURATION",
        help="T = max ingested event time − lateness (e.g. 30m)",
    )
    p.add_argument("--event-time-field", help="event-time field (default: the table's, else its ordering field)")
    p.add_argument("--now-ms", type=int, help=argparse.SUPPRESS)


def register(sub: Any) -> None:
    """Add the compaction commands."""
    p = command(sub, "preview", cmd_preview, "what a compaction strategy would plan (no writes)")
    add_table(p)
    _strategy_options(p)
    p.add_argument("--link-mode", choices=["copy", "symlink"], default="copy")
    add_limit(p, 50, "slices")
    add_json(p)

    p = command(sub, "schedule", cmd_schedule, "schedule a compaction (writes the plan and, by default, the links)")
    add_table(p)
    _strategy_options(p)
    p.add_argument("--link-mode", choices=["copy", "symlink"], default="copy")
    p.add_argument("--link-timing", choices=["schedule", "execute"], default="schedule")
    p.add_argument("--exact-split", action="store_true", help="keep events > T out of the new base files")
    p.add_argument("--instant", help="the compaction instant (default: a new one)")
    add_json(p)

    p = command(sub, "run", cmd_run, "execute a scheduled compaction, in this process or on Spark")
    add_table(p)
    p.add_argument("instant", help="the scheduled compaction's instant")
    p.add_argument("--spark", action="store_true", help="run the plan's operations as Spark tasks (local[2])")
    p.add_argument("--master", help="Spark master URL (implies --spark): local[8], spark://host:7077, yarn, ...")
    p.add_argument(
        "--conf",
        type=spark_conf,
        action="append",
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable, implies --spark), e.g. spark.executor.memory=8g",
    )
    p.add_argument("--executor-memory", metavar="SIZE", help="spark.executor.memory, e.g. 8g")
    p.add_argument("--executor-cores", type=positive_or_zero, metavar="N", help="spark.executor.cores")
    p.add_argument("--num-executors", type=positive_or_zero, metavar="N", help="spark.executor.instances")
    add_json(p)

    p = command(sub, "validate", cmd_validate, "check a compaction's plan, links and files (exit 1 on problems)")
    add_table(p)
    p.add_argument("instant")
    add_json(p)

    p = command(sub, "unschedule", cmd_unschedule, "remove a pending compaction (dry run unless --yes)")
    add_table(p)
    p.add_argument("instant")
    p.add_argument("--yes", action="store_true", help="really delete")
    add_limit(p, 20, "files")
    add_json(p)

    p = command(sub, "metrics", cmd_metrics, "compaction metrics and RO freshness")
    add_table(p)
    p.add_argument("--prometheus", metavar="FILE", help="also write Prometheus text exposition to FILE")
    add_json(p)

    p = command(
        sub,
        "repair",
        cmd_repair,
        "delete abandoned schedules' links, make pending plans' missing links again, drop stale ownership records "
        "(dry run unless --yes; hudi-cli: compaction repair)",
    )
    add_table(p)
    p.add_argument("--yes", action="store_true", help="really repair (default: list what would change)")
    add_limit(p, 20, "files")
    add_json(p)

    p = command(
        sub,
        "compactions",
        cmd_compactions,
        "every compaction, newest first: pending and completed (hudi-cli: compactions show all)",
    )
    add_table(p)
    add_limit(p, 20, "compactions")
    add_json(p)
