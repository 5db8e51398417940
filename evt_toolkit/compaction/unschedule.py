"""Taking back a pending compaction plan (dry run by default), deleting exactly what the plan created.

A pending compaction ``C`` created, each recorded before it was created (:mod:`evt_toolkit.storage.ownership`): the
links of its plan (schedule time) and, if it started running, new base files, carry-over logs and execute-time
links. Unscheduling deletes exactly those, then ``C.compaction.inflight`` and ``C.compaction.requested`` — the plan
file last, so that a crash half-way leaves a plan that can still be run or unscheduled again — and finally the
records.

It **refuses** when a writer has put a log into one of the plan's new slices (slice ``C``): once the plan is gone,
Hudi's file-system view no longer knows a slice ``C``, and that log's committed data would vanish. Run the
compaction instead. It also refuses once ``C`` completed (that is a rollback's business). Before it looks, it writes
an *unscheduling* marker (:func:`~evt_toolkit.storage.ownership.unscheduling_marker`) that makes a version-6 writer
still on its way into a new slice fail rather than complete: so a kill after the plan is gone cannot leave a
committed log behind in a slice no timeline knows.

Plans scheduled by older versions of the toolkit have no records: their plan still names its links, and Hudi names a
base file after the instant that wrote it, so those are taken; no other log file is ever deleted.

Example:
    >>> unschedule_compaction(t, c.instant).files_to_delete  # doctest: +SKIP
    ('p/.f_20250102000000000.log.1_0-0-0', '.hoodie/20250102000000000.compaction.requested')
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from evt_toolkit.compaction.plan_files import plan_file
from evt_toolkit.errors import EvtError
from evt_toolkit.format.names import INFLIGHT, REQUESTED, BaseFileName, LogFileName
from evt_toolkit.storage.links import delete_link_or_file, held_by_another_file
from evt_toolkit.storage.ownership import drop_ownership, owned_files, record_folder, unscheduling_marker
from evt_toolkit.table.guards import TABLE_SERVICE_VERSIONS, has_metadata_table, require_writable
from evt_toolkit.table.table import Table
from evt_toolkit.table.timeline import COMMIT, COMPACTION
from evt_toolkit.write.metadata_sync import rollback_metadata_instant

__all__ = ["UnscheduleReport", "unschedule_compaction"]


@dataclass(frozen=True, slots=True)
class UnscheduleReport:
    """Result of :func:`unschedule_compaction`.

    Attributes:
        instant: the compaction instant.
        files_to_delete: paths relative to the base path, in deletion order.
        deleted: whether they were deleted (``False`` for a dry run or a refusal).
        refused_reason: why the plan cannot be taken back, else ``None``.
    """

    instant: str
    files_to_delete: tuple[str, ...]
    deleted: bool
    refused_reason: str | None


def unschedule_compaction(table: Table, instant: str, *, dry_run: bool = True) -> UnscheduleReport:
    """Take back a pending compaction that wrote nothing others depend on (dry run by default)."""
    table.refresh()
    require_writable(table, f"unschedule compaction {instant}", versions=TABLE_SERVICE_VERSIONS)
    found = [i for i in table.timeline.instants if i.time == instant and i.action in (COMPACTION, COMMIT)]
    if not found:
        return UnscheduleReport(instant, (), False, f"{table.storage.uri}: no compaction plan at instant {instant}")
    inst = found[0]
    if inst.is_completed:
        return UnscheduleReport(instant, (), False, f"compaction {instant} has completed; it cannot be unscheduled")
    try:
        plan = table.timeline.compaction_plan(inst)
    except EvtError as exc:
        return UnscheduleReport(instant, (), False, f"cannot read the plan: {exc}")
    storage = table.storage
    ours = set(owned_files(storage, instant))
    ours.update(link.symlink_path for link in plan.links)
    # A link name another file holds (a writer's committed log that took it) is not the plan's, recorded or not.
    ours -= {link.symlink_path for link in plan.links if held_by_another_file(storage, link)}

    def writers_log() -> str | None:
        """A log some writer put into the new slice of a planned file group (named after ``instant``), if any."""
        for op in plan.operations:
            entries, _ = storage.list_dir(op.partition_path)
            for e in entries:
                log = LogFileName.parse(e.name)
                mine = log is not None and log.file_id == op.file_id and log.base_instant == instant
                if mine and log is not None and log.extension == "log" and e.path not in ours:
                    return e.path
        return None

    def refused(path: str, fid: str) -> UnscheduleReport:
        return UnscheduleReport(
            instant,
            (),
            False,
            f"a writer put log {storage.full_path(path)} into the new file slice of {fid}: unscheduling {instant} "
            "would orphan its committed data; run the compaction instead",
        )

    marker = unscheduling_marker(instant)
    had_folder = any(storage.list_dir(record_folder(instant)))
    if not dry_run:
        # Before the listing: a v6 writer that has not completed yet now fails instead of completing into a new
        # slice (writer._check_slices_still_latest), so the listing below sees every completed writer's log.
        storage.write_bytes_atomic(marker, b"", overwrite=True)

    def refuse(path: str, fid: str) -> UnscheduleReport:
        if not dry_run:  # a refusal leaves the table as it was
            storage.delete_file(marker)
            if not had_folder:
                storage.delete_dir(record_folder(instant))
        return refused(path, fid)

    outputs: list[str] = []
    for op in plan.operations:
        partition = op.partition_path
        fid = op.file_id
        entries, _ = storage.list_dir(partition)
        for e in entries:
            log = LogFileName.parse(e.name)
            if log is not None and log.file_id == fid and log.base_instant == instant and log.extension == "log":
                if e.path not in ours:
                    return refuse(e.path, fid)
                continue
            base = BaseFileName.parse(e.name) if not e.name.startswith(".") else None
            if base is not None and base.file_id == fid and base.instant == instant:
                outputs.append(e.path)  # Hudi names a base file after the instant that wrote it: C's own
    files = sorted(p for p in ours | set(outputs) if storage.lexists(p))
    plan_files = [rel for state in (INFLIGHT, REQUESTED) if storage.exists(rel := plan_file(table, instant, state))]
    files += plan_files
    if dry_run:
        return UnscheduleReport(instant, tuple(files), False, None)
    if has_metadata_table(table):
        # A run that crashed after mirroring C into the metadata table left an MDT instant C: it goes first.
        rollback_metadata_instant(table, instant)
    saved = {rel: storage.read_bytes(rel) for rel in plan_files}
    for rel in files:  # links and outputs first, the plan last: a failure half-way leaves it to unschedule again
        delete_link_or_file(storage, rel)
    # A writer that saw the plan may have put a log into a new slice after the listing above. With the plan gone,
    # one that looks now finds its slice superseded and fails (the writer's own check); one that looked before had
    # its log written by then, so this listing sees it — and the plan is put back (its run makes the links again).
    late = writers_log()
    if late is not None:
        for rel in reversed(plan_files):  # requested first, then inflight, as the timeline had them
            storage.write_bytes_atomic(rel, saved[rel], overwrite=True)
        table.refresh()
        return refuse(late, LogFileName.parse(late.rsplit("/", 1)[-1]).file_id)  # type: ignore[union-attr]
    with contextlib.suppress(EvtError):
        drop_ownership(storage, instant)
    table.refresh()
    return UnscheduleReport(instant, tuple(files), True, None)
