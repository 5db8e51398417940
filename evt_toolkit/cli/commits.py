"""``evt commits`` and ``evt commit``: what each commit wrote (hudi-cli's ``commits show`` and
``commit showfiles`` / ``commit showpartitions``).

``commits`` lists completed commits, deltacommits, replace commits and compactions newest first with the totals of
their write stats (``HoodieWriteStat``: files added and updated, records written, inserts, updates, deletes, bytes,
errors, and the min/max event time the writer recorded). ``commit`` shows one instant's write stats file by file,
or per partition with ``--partitions``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evt_toolkit.cli.options import add_json, add_limit, add_table, command, limited, open_table
from evt_toolkit.cli.output import Output, count, size, when
from evt_toolkit.errors import TimelineError
from evt_toolkit.format.records import CommitMetadata

if TYPE_CHECKING:
    from evt_toolkit import HudiTable

__all__ = ["CommitSummary", "WriteStatRow", "commit_summary", "register", "write_stats"]


@dataclass(frozen=True, slots=True)
class WriteStatRow:
    """One ``HoodieWriteStat``: what a commit wrote into one file."""

    partition: str
    file_id: str
    path: str
    prev_commit: str | None
    writes: int
    inserts: int
    updates: int
    deletes: int
    bytes_written: int
    file_size: int
    errors: int
    log_blocks: int
    min_event_time: int | None
    max_event_time: int | None

    @property
    def added(self) -> bool:
        """A new file (Hudi writes ``prevCommit = "null"`` for a file the commit created)."""
        return self.prev_commit in (None, "", "null")


@dataclass(frozen=True, slots=True)
class CommitSummary:
    """A commit's write stats summed (one row of ``evt commits``)."""

    instant: str
    action: str
    state: str
    completion_time: str | None
    operation: str
    partitions: int
    files_added: int
    files_updated: int
    records_written: int
    inserts: int
    updates: int
    deletes: int
    bytes_written: int
    errors: int
    min_event_time: int | None
    max_event_time: int | None


def _int(value: Any) -> int:
    try:
        return 0 if value in (None, "") else int(value)
    except (TypeError, ValueError):
        return 0


def _opt_int(value: Any) -> int | None:
    try:
        return None if value in (None, "") else int(value)
    except (TypeError, ValueError):
        return None


def write_stats(meta: CommitMetadata) -> list[WriteStatRow]:
    """The write stats of a commit, partition by partition."""
    return [
        WriteStatRow(
            partition=st.partition_path,
            file_id=st.file_id,
            path=st.path,
            prev_commit=st.prev_commit,
            writes=st.num_writes,
            inserts=st.num_inserts,
            updates=st.num_update_writes,
            deletes=st.num_deletes,
            bytes_written=st.total_write_bytes,
            file_size=st.file_size,
            errors=st.total_write_errors,
            log_blocks=st.total_log_blocks,
            min_event_time=st.min_event_time,
            max_event_time=st.max_event_time,
        )
        for st in sorted(meta.write_stats, key=lambda st: st.partition_path)
    ]


def _min(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _max(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def commit_summary(t: HudiTable, instant: Any) -> CommitSummary:
    """The totals of one instant's write stats."""
    meta = t.timeline.commit_metadata(instant)
    stats = write_stats(meta)
    return CommitSummary(
        instant=instant.time,
        action=instant.action,
        state=instant.state.value,
        completion_time=instant.completion_time,
        operation=meta.operation_type,
        partitions=len({s.partition for s in stats}),
        files_added=sum(1 for s in stats if s.added),
        files_updated=sum(1 for s in stats if not s.added),
        records_written=sum(s.writes for s in stats),
        inserts=sum(s.inserts for s in stats),
        updates=sum(s.updates for s in stats),
        deletes=sum(s.deletes for s in stats),
        bytes_written=sum(s.bytes_written for s in stats),
        errors=sum(s.errors for s in stats),
        min_event_time=_min(s.min_event_time for s in stats),
        max_event_time=_max(s.max_event_time for s in stats),
    )


def cmd_commits(args: argparse.Namespace, out: Output) -> int:
    """``evt commits``."""
    t = open_table(args)
    instants = t.timeline.completed_commits()[::-1]
    n = limited(len(instants), args.limit)
    rows = [commit_summary(t, i) for i in instants[:n]]
    if args.json:
        out.json(rows)
        return 0
    out.table(
        f"Commits of {t.config.name} ({len(instants):,}, newest first)",
        [
            "instant",
            "action",
            "operation",
            "completed at",
            "partitions",
            "files added",
            "files updated",
            "records",
            "inserts",
            "updates",
            "deletes",
            "bytes written",
            "errors",
            "min event time",
            "max event time",
        ],
        [
            [
                r.instant,
                r.action,
                r.operation,
                r.completion_time,
                count(r.partitions),
                count(r.files_added),
                count(r.files_updated),
                count(r.records_written),
                count(r.inserts),
                count(r.updates),
                count(r.deletes),
                size(r.bytes_written),
                count(r.errors),
                when(r.min_event_time),
                when(r.max_event_time),
            ]
            for r in rows
        ],
        right=(
            "partitions",
            "files added",
            "files updated",
            "records",
            "inserts",
            "updates",
            "deletes",
            "errors",
            "bytes written",
        ),
    )
    if n < len(instants):
        out.line(f"… {len(instants) - n:,} older commits (--limit 0 shows all)")
    return 0


def cmd_commit(args: argparse.Namespace, out: Output) -> int:
    """``evt commit``."""
    t = open_table(args)
    try:
        inst = t.timeline.instant(args.instant)
    except TimelineError:
        known = [i.time for i in t.timeline.instants if i.action in ("commit", "deltacommit", "replacecommit")]
        hint = f"; the latest are {', '.join(known[-3:])}" if known else "; the table has no commits"
        raise TimelineError(f"no instant {args.instant} on the timeline of {t.path}{hint}") from None
    summary = commit_summary(t, inst)
    stats = write_stats(t.timeline.commit_metadata(inst))
    if args.partitions:
        by_partition: dict[str, list[WriteStatRow]] = {}
        for s in stats:
            by_partition.setdefault(s.partition, []).append(s)
        parts: list[dict[str, Any]] = [
            {
                "partition": p,
                "files_added": sum(1 for s in ss if s.added),
                "files_updated": sum(1 for s in ss if not s.added),
                "records": sum(s.writes for s in ss),
                "inserts": sum(s.inserts for s in ss),
                "updates": sum(s.updates for s in ss),
                "deletes": sum(s.deletes for s in ss),
                "bytes_written": sum(s.bytes_written for s in ss),
                "errors": sum(s.errors for s in ss),
            }
            for p, ss in sorted(by_partition.items())
        ]
        if args.json:
            out.json({"commit": summary, "partitions": parts})
            return 0
        _summary_fields(out, summary)
        cols = ["files_added", "files_updated", "records", "inserts", "updates", "deletes", "errors"]
        out.table(
            f"Partitions written by {summary.instant} ({len(parts):,})",
            ["partition", *[c.replace("_", " ") for c in cols], "bytes written"],
            [
                [p["partition"] or "(not partitioned)", *[count(p[c]) for c in cols], size(p["bytes_written"])]
                for p in parts
            ],
            right=(*[c.replace("_", " ") for c in cols], "bytes written"),
        )
        return 0
    n = limited(len(stats), args.limit)
    if args.json:
        out.json({"commit": summary, "files": stats[:n], "total_files": len(stats)})
        return 0
    _summary_fields(out, summary)
    out.table(
        f"Files written by {summary.instant} ({len(stats):,})",
        [
            "partition",
            "file id",
            "previous commit",
            "file",
            "records",
            "inserts",
            "updates",
            "deletes",
            "bytes written",
            "file size",
            "min event time",
            "max event time",
        ],
        [
            [
                s.partition or "(not partitioned)",
                s.file_id,
                "- (new file)" if s.added else s.prev_commit,
                s.path.rsplit("/", 1)[-1],
                count(s.writes),
                count(s.inserts),
                count(s.updates),
                count(s.deletes),
                size(s.bytes_written),
                size(s.file_size),
                when(s.min_event_time),
                when(s.max_event_time),
            ]
            for s in stats[:n]
        ],
        right=("records", "inserts", "updates", "deletes", "bytes written", "file size"),
    )
    if n < len(stats):
        out.line(f"… {len(stats) - n:,} more files (--limit 0 shows all)")
    return 0


def _summary_fields(out: Output, s: CommitSummary) -> None:
    out.fields(
        f"{s.action} {s.instant} ({s.state})",
        [
            ("operation", s.operation),
            ("completed at", s.completion_time),
            ("partitions", count(s.partitions)),
            ("files added / updated", f"{s.files_added:,} / {s.files_updated:,}"),
            (
                "records written",
                f"{s.records_written:,} ({s.inserts:,} inserts, {s.updates:,} updates, {s.deletes:,} deletes)",
            ),
            ("bytes written", f"{size(s.bytes_written)} ({s.bytes_written:,} B)"),
            ("write errors", count(s.errors)),
            ("event time", f"{when(s.min_event_time)} .. {when(s.max_event_time)}"),
        ],
    )


def register(sub: Any) -> None:
    """Add ``commits`` and ``commit``."""
    p = command(sub, "commits", cmd_commits, "commits newest first with their write stats (hudi-cli: commits show)")
    add_table(p)
    add_limit(p, 20, "commits")
    add_json(p)

    p = command(
        sub,
        "commit",
        cmd_commit,
        "one commit's write stats, file by file (hudi-cli: commit showfiles / showpartitions)",
    )
    add_table(p)
    p.add_argument("instant", help="the commit's instant time")
    p.add_argument("--partitions", action="store_true", help="sum the write stats per partition")
    add_limit(p, 50, "files")
    add_json(p)
