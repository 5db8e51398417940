"""What a clean left readable: the one retention check every query type goes through.

A clean deletes old file slices, so reads of the table *as it was* before some instant can no longer be answered
from storage. Hudi refuses such reads (``TimelineUtils.validateTimestampAsOf`` for time travel;
``MergeOnReadIncrementalRelation`` finds the window's files gone and fails unless
``hoodie.datasource.read.incr.fallback.fulltablescan.enable`` is set). The toolkit refuses the same way, for time
travel, read-optimized time travel and incremental windows alike, rather than answering partially.

Example:
    >>> check_readable_at(t.timeline, t.view, "20250101000000000", "/data/trips", "time travel")  # doctest: +SKIP
"""

from __future__ import annotations

import posixpath

from evt_toolkit.errors import EvtError, ReadError
from evt_toolkit.format.names import BaseFileName, LogFileName
from evt_toolkit.table.fs_view import FileGroup, FileSystemView
from evt_toolkit.table.timeline import CLEAN, COMMIT, DELTA_COMMIT, Timeline

__all__ = ["check_incremental_settled", "check_readable_at", "check_time_travel_settled", "earliest_retained"]


def _slice_of(name: str) -> tuple[str, str] | None:
    """``(file id, base instant)`` of a data file name."""
    log = LogFileName.parse(name)
    if log is not None:
        return log.file_id, log.base_instant
    base = BaseFileName.parse(name)
    return (base.file_id, base.instant) if base is not None else None


def earliest_retained(timeline: Timeline, view: FileSystemView) -> str | None:
    """The earliest instant the table can still be read *as of*, given the cleans on the timeline.

    Like ``TimelineUtils.validateTimestampAsOf``, the last completed clean's ``earliestCommitToRetain`` bounds time
    travel. A KEEP_LATEST_FILE_VERSIONS clean records none (as in Hudi), so for those the bound is derived from
    what they deleted (or planned to): for each file group, the oldest surviving slice after the newest deleted one.
    A clean still pending (requested, or inflight after a crash) may already have deleted some of its files, so its
    plan bounds reads the same way until it completes.

    Returns:
        The bound, or ``None`` when no clean limits reads.
    """
    bound: str | None = None
    groups: dict[tuple[str, str], FileGroup] | None = None
    layout = timeline.layout_version
    for inst in timeline.instants:
        if inst.action != CLEAN:
            continue
        try:
            if inst.is_completed:
                meta = timeline.clean_metadata(inst)
                ectr = meta.earliest_commit_to_retain
                # Every file the plan meant to delete: one already gone when a crashed clean was resumed is recorded
                # as a failed delete, but the state that needed it is just as unreadable.
                planned_by_partition = meta.planned_names()
            else:
                plan = timeline.clean_plan(inst)
                ectr = plan.earliest_instant_to_retain or ""
                planned_by_partition = {p: tuple(posixpath.basename(f) for f in fs) for p, fs in plan.files.items()}
        except EvtError:
            continue
        if not ectr:
            if groups is None:
                groups = {(g.partition_path, g.file_id): g for g in view.file_groups()}
            newest: dict[tuple[str, str], str] = {}
            for partition, planned in planned_by_partition.items():
                for name in planned:
                    parsed = _slice_of(str(name))
                    if parsed is not None:
                        key = (str(partition), parsed[0])
                        newest[key] = max(newest.get(key, ""), parsed[1])
            for key, deleted_instant in newest.items():
                g = groups.get(key)
                # On timeline layout 2 a log without a base file at or before its completion opens a slice of its
                # own. Logs a clean kept of a deleted slice (a symlink's target) therefore look like a log-only
                # slice of their own: only a slice with a base file is a whole state after a deletion.
                later = (
                    [
                        s.base_instant
                        for s in g.slices
                        if s.base_instant > deleted_instant and (s.base_file is not None or layout < 2)
                    ]
                    if g
                    else []
                )
                ectr = max(ectr, min(later) if later else inst.time)
        if ectr and (bound is None or ectr > bound):
            bound = ectr
    return bound


def check_readable_at(timeline: Timeline, view: FileSystemView, instant: str, where: str, what: str) -> None:
    """Refuse a read of the table as of ``instant`` when a clean deleted files that state needs.

    Args:
        timeline: the loaded timeline.
        view: the file-system view.
        instant: a normalized instant (the time-travel instant, or an incremental window's end).
        where: the table's URI, for the message.
        what: ``time travel`` or ``incremental read``, for the message.

    Raises:
        ReadError: ``instant`` is before :func:`earliest_retained`.
    """
    bound = earliest_retained(timeline, view)
    if bound is not None and instant < bound:
        raise ReadError(
            f"cannot answer the {what} at {instant} on {where}: a clean removed the files that state needs; the "
            f"earliest instant still readable is {bound} (earliest commit to retain)"
        )


def check_time_travel_settled(timeline: Timeline, instant: str, where: str) -> None:
    """Refuse time travel at or after the first write that has not completed (``TimelineUtils.validateTimestampAsOf``).

    Time travel is by requested time: once a write requested at ``W`` completes, every state as of ``W`` or later
    holds its records. While it is pending (slow, or failed and not rolled back) an answer as of such an instant
    would leave them out and change when it completes — on a 1.x table a write requested later may well have
    completed before it. Hudi refuses; so does the toolkit, for snapshot and read-optimized time travel alike.
    Pending compactions and clusterings do not count (they change no answer), nor do replacecommits, which the
    toolkit takes for clusterings.

    Args:
        timeline: the loaded timeline.
        instant: the normalized time-travel instant.
        where: the table's URI, for the message.

    Raises:
        ReadError: naming the first pending write; roll it back or let it complete, or read as of an earlier instant.
    """
    pending = [i.time for i in timeline.instants if i.action in (COMMIT, DELTA_COMMIT) and not i.is_completed]
    first = min(pending, default=None)
    if first is not None and instant >= first:
        raise ReadError(
            f"cannot answer the time travel at {instant} on {where}: write {first} was requested at or before it and "
            "has not completed, so the state as of that instant is not settled (its records count once it "
            "completes); roll it back or let it complete, or read as of an instant before it"
        )


def check_incremental_settled(timeline: Timeline, begin: str, end: str | None, where: str) -> None:
    """Refuse an incremental window on timeline layout 1 that a write still pending would change when it completes.

    Layout-1 windows bound *requested* times: a write requested at ``P`` in ``(begin, end]`` that completes after the
    read belongs to this window, yet the window was answered without it, and a consumer that keeps ``end`` as its
    checkpoint pulls ``(end, ...]`` next and never gets its records. Hudi's incremental relations refuse such a
    "hollow commit" by default (``TimelineUtils.handleHollowCommitIfNeeded``, policy ``FAIL``: any commit completed
    after a pending one); the toolkit refuses exactly the windows whose answer would change. Layout-2 windows bound
    completion times, and a pending write completes after every completion time on the timeline: it lands in a later
    window, so nothing is refused there.

    Args:
        timeline: the loaded timeline.
        begin: the window's exclusive start (``"0"`` when open).
        end: the window's inclusive end: the given end, or the newest admitted commit when the end is open
            (``None``: the window admits nothing, and a write pending after ``begin`` lands in a later one).
        where: the table's URI, for the message.

    Raises:
        ReadError: naming the first pending write inside the window; roll it back or let it complete, or end the
            window before it.
    """
    if timeline.layout_version >= 2 or end is None:
        return
    inside = [i.time for i in timeline.inflight_writes() if begin < i.time <= end]
    if inside:
        first = min(inside)
        raise ReadError(
            f"cannot answer the incremental read ({begin}, {end}] on {where}: write {first} was requested inside the "
            "window and has not completed, so the window's answer would change when it completes (a consumer whose "
            "checkpoint passed it would never get its records); roll it back or let it complete, or end the window "
            "before it"
        )
