"""``evt clean run|show``, ``evt rollback`` and ``evt metadata show|disable``: table services from the command line
(hudi-cli's ``cleans run``, ``cleans show``, ``commit rollback`` and ``metadata delete``; Spark SQL's
``call run_clean`` and ``call rollback_to_instant``).

All three change the table, so all are dry runs unless ``--yes``: ``clean run`` lists the exact files the real run
would delete (the cleaner never deletes a file a live link or a pending plan needs), ``rollback`` names the instant,
its action and state. Cleans and rollbacks write Hudi's own instants (``clean.requested`` → ``.inflight`` →
``clean``; ``rollback``), so stock tools see them.
"""

from __future__ import annotations

import argparse
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
from evt_toolkit.cli.output import Output, count, duration
from evt_toolkit.errors import RollbackError, TimelineError
from evt_toolkit.format.records import CleanMetadata
from evt_toolkit.services.rollback import check_rollbackable

if TYPE_CHECKING:
    from evt_toolkit.table.timeline import Instant

__all__ = ["register"]

POLICIES = ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS")


def _files_table(out: Output, title: str, files: list[str], limit: int) -> None:
    n = limited(len(files), limit)
    out.table(title, ["file"], [[f] for f in files[:n]])
    if n < len(files):
        out.line(f"… {len(files) - n:,} more files (--limit 0 shows all, --json prints everything)")


def cmd_clean_run(args: argparse.Namespace, out: Output) -> int:
    """``evt clean run``: dry run unless ``--yes``."""
    t = open_table(args)
    r = t.clean(args.policy, args.retained, dry_run=not args.yes)
    if args.json:
        out.json(r)
        return 0
    kept = f"; {len(r.kept_for_links):,} kept because a live link needs them" if r.kept_for_links else ""
    head = [
        ("policy", f"{r.policy}, retained {r.retained:,}"),
        ("earliest commit retained", r.earliest_commit_to_retain),
        ("files", f"{len(r.files):,}{kept}"),
    ]
    if r.dry_run and not r.files:
        out.fields(f"Clean of {t.config.name}: nothing to clean", head)
    elif r.dry_run:
        out.fields(f"Clean of {t.config.name}: dry run (--yes deletes)", head)
        _files_table(out, f"Would delete {len(r.files):,} file(s)", list(r.files), args.limit)
    elif r.instant is None:
        out.fields(f"Clean of {t.config.name}: nothing to clean", head)
    else:
        out.fields(
            f"Clean {r.instant} of {t.config.name} completed" + (" (a pending clean, resumed)" if r.resumed else ""),
            [*head, ("deleted", count(len(r.deleted))), ("failed", count(len(r.failed)))],
        )
        _files_table(out, f"Deleted {len(r.deleted):,} file(s)", list(r.deleted), args.limit)
    return 0


def _clean_row(inst: Any, meta: CleanMetadata) -> dict[str, Any]:
    """One completed clean from its ``HoodieCleanMetadata``."""
    parts = meta.partitions
    policies = sorted({p.policy for p in parts.values() if p.policy})
    return {
        "instant": inst.time,
        "state": inst.state.value,
        "policy": ", ".join(policies) or None,
        "earliest_commit_retained": meta.earliest_commit_to_retain or None,
        "partitions": len(parts),
        "files_deleted": meta.total_files_deleted,
        "failed_deletes": sum(len(p.failed) for p in parts.values()),
        "time_taken_ms": meta.time_taken_ms,
    }


def cmd_clean_show(args: argparse.Namespace, out: Output) -> int:
    """``evt clean show``: cleans newest first."""
    t = open_table(args)
    cleans = [i for i in t.timeline.instants if i.action == "clean"][::-1]
    rows: list[dict[str, Any]] = []
    for inst in cleans[: limited(len(cleans), args.limit)]:
        if inst.is_completed:
            rows.append(_clean_row(inst, t.timeline.clean_metadata(inst)))
        else:
            rows.append(
                {
                    "instant": inst.time,
                    "state": inst.state.value,
                    "policy": None,
                    "earliest_commit_retained": None,
                    "partitions": None,
                    "files_deleted": None,
                    "failed_deletes": None,
                    "time_taken_ms": None,
                }
            )
    if args.json:
        out.json(rows)
        return 0
    if not rows:
        out.line(f"no clean on the timeline of {t.config.name}")
        return 0
    out.table(
        f"Cleans of {t.config.name} ({len(cleans):,}, newest first)",
        [
            "instant",
            "state",
            "policy",
            "earliest commit retained",
            "partitions",
            "files deleted",
            "failed",
            "time taken",
        ],
        [
            [
                r["instant"],
                r["state"],
                r["policy"],
                r["earliest_commit_retained"],
                count(r["partitions"]),
                count(r["files_deleted"]),
                count(r["failed_deletes"]),
                duration(r["time_taken_ms"]),
            ]
            for r in rows
        ],
        right=("partitions", "files deleted", "failed"),
    )
    if len(rows) < len(cleans):
        out.line(f"… {len(cleans) - len(rows):,} older cleans (--limit 0 shows all)")
    return 0


def _rollback_effect(action: str, state: str) -> tuple[str, bool]:
    """What rolling back an instant of ``action`` in ``state`` does, and whether the toolkit can do it."""
    if action == "deltacommit" and state != "COMPLETED":
        return "a failed or inflight write: its files are deleted and its timeline files removed", True
    if action == "deltacommit":
        return (
            "the last completed write is undone: its files are deleted (or, in log files other writers share, a "
            "rollback command block is appended) and its timeline files removed",
            True,
        )
    if action == "compaction" and state == "INFLIGHT":
        return "its new base files and execute-time links are deleted and its plan is requested again", True
    if action == "compaction":
        return "the compaction has not started; evt unschedule removes a requested plan", False
    if action == "commit":
        return "a completed commit or compaction cannot be rolled back (no savepoint/restore)", False
    return f"only deltacommits and inflight compactions can be rolled back, not a {action}", False


def cmd_rollback(args: argparse.Namespace, out: Output) -> int:
    """``evt rollback``: describe the target unless ``--yes``, then roll it back."""
    t = open_table(args)
    try:
        inst: Instant | None = t.timeline.instant(args.instant)
    except TimelineError:
        inst = None
    pending_rollback = t.timeline.pending_rollback_of(args.instant)
    if pending_rollback is not None:
        # A rollback stopped half-way is finished whatever its target's state now (its timeline files may be gone,
        # a compaction's plan requested again): rolling the target back again resumes it.
        rb, plan = pending_rollback
        overtaken = t.timeline.rollback_overtaken_by(plan)
        if overtaken:
            by = ", ".join(f"{i.action} {i.time}" for i in overtaken[:5]) + (", ..." if len(overtaken) > 5 else "")
            after = (
                f"evt repair {args.table} --yes, the next write, schedule or clean retires it ({args.instant} stays "
                "committed)"
                if any(i.is_completed for i in overtaken)
                else "it can finish once the pending instants after it are rolled back"
            )
            raise RollbackError(
                f"the pending rollback {rb.time} of {args.instant} on {t.path} can no longer finish ({by} came after "
                f"it was stopped, before it changed anything); {after}"
            )
        action = inst.action if inst is not None else (plan.action or "deltacommit")
        state = inst.state.value if inst is not None else "no longer on the timeline"
        what = f"the pending rollback {rb.time} of it, stopped half-way, is resumed and finished"
    else:
        if inst is None:
            pending = [f"{i.time} ({i.action}, {i.state.value})" for i in t.timeline.instants if not i.is_completed]
            hint = f"; pending instants: {', '.join(pending)}" if pending else ""
            raise TimelineError(f"no instant {args.instant} on the timeline of {t.path}{hint}")
        action, state = inst.action, inst.state.value
        what, possible = _rollback_effect(action, state)
        if not possible:
            raise RollbackError(f"cannot roll back {action} {args.instant} ({state}) of {t.path}: {what}")
        check_rollbackable(t, args.instant)  # the refusals the rollback itself would raise, dry run or not
    if not args.yes:
        if args.json:
            out.json({"dry_run": True, "instant": args.instant, "action": action, "state": state, "effect": what})
        else:
            out.line(f"would roll back {action} {args.instant} ({state}): {what}. --yes rolls it back.")
        return 0
    r = t.rollback(args.instant)
    if args.json:
        out.json(r)
        return 0
    out.fields(
        f"Rolled back {r.target_action} {r.target} (rollback instant {r.instant})"
        + (", a pending rollback resumed" if r.resumed else ""),
        [
            ("data files deleted", count(len(r.deleted))),
            ("files already gone", count(len(r.failed))),
            ("rollback command blocks", count(len(r.command_block_logs))),
            ("timeline files removed", ", ".join(r.timeline_files_removed) or "-"),
            ("plan requested again", "yes: run it again with evt run" if r.plan_requested_again else "no"),
        ],
    )
    return 0


def cmd_metadata_show(args: argparse.Namespace, out: Output) -> int:
    """``evt metadata show``: whether the table has a metadata table."""
    t = open_table(args)
    mt = t.metadata_table
    exists, partitions = mt.exists(), list(mt.partitions())
    if args.json:
        out.json({"table": t.path, "metadata_table": exists, "partitions": partitions})
        return 0
    if not exists:
        out.line(f"{t.config.name} has no metadata table: the toolkit can write it")
        return 0
    out.fields(
        f"Metadata table of {t.config.name}",
        [
            ("partitions", ", ".join(partitions) or "- (none ready; .hoodie/metadata exists)"),
            ("writes by this toolkit", "refused: it does not maintain a metadata table"),
            ("way out", f"evt metadata disable {args.table} --yes (as hoodie.metadata.enable=false does)"),
        ],
    )
    return 0


def cmd_metadata_disable(args: argparse.Namespace, out: Output) -> int:
    """``evt metadata disable``: dry run unless ``--yes``."""
    t = open_table(args)
    r = t.metadata_table.disable(dry_run=not args.yes)
    if args.json:
        out.json(r)
        return 0
    if not r.had_metadata_table:
        out.line(f"{t.config.name} has no metadata table: nothing to disable")
        return 0
    verb = "would delete (dry run; --yes disables it)" if r.dry_run else "deleted"
    out.fields(
        f"Metadata table of {t.config.name}: " + ("dry run" if r.dry_run else "disabled"),
        [
            ("partitions", ", ".join(r.partitions) or "-"),
            ("hoodie.properties keys cleared", ", ".join(r.properties_cleared) or "-"),
            ("files", f"{len(r.files_to_delete):,} under .hoodie/metadata, {verb}"),
        ],
    )
    return 0


def _metadata_group(args: argparse.Namespace, out: Output) -> int:
    """``evt metadata`` without ``show`` or ``disable``: a usage error."""
    usage_error(args, "choose 'metadata show' or 'metadata disable'")


def _clean_group(args: argparse.Namespace, out: Output) -> int:
    """``evt clean`` without ``run`` or ``show``: a usage error."""
    usage_error(args, "choose 'clean run' or 'clean show'")


def register(sub: Any) -> None:
    """Add ``clean run``, ``clean show`` and ``rollback``."""
    p = command(sub, "clean", _clean_group, "delete old file slices (clean run), or list cleans (clean show)")
    clean_sub = p.add_subparsers(dest="clean_command", metavar="{run,show}")

    r = command(
        clean_sub,
        "run",
        cmd_clean_run,
        "plan and (with --yes) run a clean with Hudi's cleaner policies (hudi-cli: cleans run)",
    )
    add_table(r)
    r.add_argument("--policy", choices=POLICIES, default="KEEP_LATEST_COMMITS")
    r.add_argument(
        "--retained",
        type=positive_or_zero,
        metavar="N",
        help="commits (default 10) or file versions (default 3) to retain",
    )
    r.add_argument("--yes", action="store_true", help="really delete (default: a dry run that lists the files)")
    add_limit(r, 20, "files")
    add_json(r)

    s = command(clean_sub, "show", cmd_clean_show, "cleans newest first (hudi-cli: cleans show)")
    add_table(s)
    add_limit(s, 20, "cleans")
    add_json(s)

    p = command(sub, "metadata", _metadata_group, "the table's metadata table: show it, or disable it as Hudi does")
    md_sub = p.add_subparsers(dest="metadata_command", metavar="{show,disable}")
    m = command(md_sub, "show", cmd_metadata_show, "whether the table has a metadata table, and its partitions")
    add_table(m)
    add_json(m)
    m = command(
        md_sub,
        "disable",
        cmd_metadata_disable,
        "clear hoodie.table.metadata.partitions and delete .hoodie/metadata, as hoodie.metadata.enable=false does "
        "(dry run unless --yes; hudi-cli: metadata delete)",
    )
    add_table(m)
    m.add_argument("--yes", action="store_true", help="really disable it (default: list what would change)")
    add_json(m)

    p = command(
        sub,
        "rollback",
        cmd_rollback,
        "roll back a failed or the last deltacommit, or an inflight compaction (hudi-cli: commit rollback)",
    )
    add_table(p)
    p.add_argument("instant", help="the instant to roll back")
    p.add_argument("--yes", action="store_true", help="really roll back (default: say what would happen)")
    add_json(p)
