"""``compaction repair``: put a table's compaction artifacts back in order (dry run by default, as hudi-cli's repairs).

What it looks for, each found from ownership records and plans, never from file names alone:

* **abandoned schedules** — links recorded by a schedule that died before writing its plan: invisible to readers,
  but a symlink among them would dangle once its target goes. They are deleted, with their records;
* **missing links of pending plans** — a link made at schedule time that is gone (deleted by hand, or by a schedule
  racing at the same instant): made again from the plan, as the run itself would. A link whose target is gone too
  is reported, not guessed;
* **markers of unschedules that died before deleting their plan** — the plan is still pending, and the marker
  (written before the unschedule looks for writers in the plan's new slices) makes every version-6 write into those
  slices fail: deleted once it is ``older_than_s`` old (an unschedule still running needs it);
* **records of completed instants** — ownership folders left under ``.hoodie/.temp`` (object stores keep them to save
  a DELETE per commit): deleted;
* **temporary files of killed writers** — a write on a local or HDFS-like file system goes through a temporary file
  beside its target (:mod:`evt_toolkit.storage.temporary`), which a process killed before the rename leaves behind:
  deleted from the partitions once ``older_than_s`` old (a writer still running needs it). Earlier versions named
  them after their target's log, and hudi-rs read those as logs of another file group;
* **pending rollbacks that can never finish** — killed before they un-committed their target, then overtaken by a
  later commit (:func:`~evt_toolkit.write.overtaken.retirable_rollbacks`): they changed nothing, and left
  pending they stop every stock Hudi writer ("Found commits after time"). Their timeline files are deleted.

Example:
    >>> repair_compactions(t).abandoned_links  # doctest: +SKIP
    ('p/.f_20250102000000000.log.1_0-0-0',)
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass

from evt_toolkit.compaction.executor import ensure_plan_links
from evt_toolkit.compaction.schedule import (
    ABANDONED_AFTER_S,
    abandoned_schedules,
    left_by_a_dead_service,
)
from evt_toolkit.errors import EvtError
from evt_toolkit.storage.links import check_link, delete_link_or_file, held_by_another_file
from evt_toolkit.storage.ownership import drop_ownership, record_folders, unscheduling_markers
from evt_toolkit.storage.temporary import is_temporary_name
from evt_toolkit.table.fs_view import list_table_files
from evt_toolkit.table.guards import TABLE_SERVICE_VERSIONS, require_writable
from evt_toolkit.table.table import Table
from evt_toolkit.write.overtaken import retirable_rollbacks, retire_rollbacks

__all__ = ["RepairReport", "repair_compactions"]


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What :func:`repair_compactions` found (and, unless a dry run, fixed).

    Attributes:
        abandoned_links: files of schedules that never wrote their plan (deleted).
        missing_links: links of pending plans that were missing (made again from the plan).
        unrepairable: problems left alone, each naming the file (a link whose target is gone).
        stale_record_folders: ownership folders of completed instants (deleted).
        dry_run: nothing was changed.
        stale_unschedule_markers: markers of unschedules that died with their plan still pending (deleted: while
            one is there, version-6 writes into the plan's new slices fail).
        stale_temporary_files: temporary files killed writers left in the partitions (deleted).
        retired_rollbacks: pending rollbacks that can never finish and changed nothing (their timeline files
            deleted; their targets stay committed).
    """

    abandoned_links: tuple[str, ...]
    missing_links: tuple[str, ...]
    unrepairable: tuple[str, ...]
    stale_record_folders: tuple[str, ...]
    dry_run: bool
    stale_unschedule_markers: tuple[str, ...] = ()
    stale_temporary_files: tuple[str, ...] = ()
    retired_rollbacks: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """Nothing to repair."""
        return not (
            self.abandoned_links
            or self.missing_links
            or self.unrepairable
            or self.stale_record_folders
            or self.stale_unschedule_markers
            or self.stale_temporary_files
            or self.retired_rollbacks
        )


def repair_compactions(table: Table, *, dry_run: bool = True, older_than_s: float = ABANDONED_AFTER_S) -> RepairReport:
    """Find (and unless ``dry_run``, repair) abandoned links, missing plan links and stale ownership records.

    Args:
        table: the table.
        dry_run: only report.
        older_than_s: a schedule's links count as abandoned once its record is this old (a schedule still running
            in another process must keep them), an unschedule's marker as stale once it is this old; 0 takes every
            one — only when no schedule or unschedule is running.

    Raises:
        UnsupportedTableError: a table this toolkit does not write.
    """
    table.refresh()
    require_writable(table, "repair compactions", versions=TABLE_SERVICE_VERSIONS)
    storage = table.storage
    abandoned = abandoned_schedules(table, older_than_s=older_than_s)
    timeline = table.timeline
    missing: list[str] = []
    unrepairable: list[str] = []
    to_make: dict[str, list] = {}
    now = time.time()
    markers: list[str] = []
    for inst in timeline.pending_compactions():
        for marker in unscheduling_markers(inst.time):
            # An unschedule that died before deleting the plan: the plan is whole (its missing links are made
            # below), and nothing depends on the marker once no unschedule can still be running.
            written = storage.mtime(marker) if storage.exists(marker) else None
            if written is not None and left_by_a_dead_service(written.timestamp(), older_than_s, now):
                markers.append(marker)
        try:
            plan = timeline.compaction_plan(inst)
        except EvtError as exc:
            unrepairable.append(str(exc))
            continue
        links = [x for x in plan.links if x.timing == "schedule"]
        for link in links:
            if check_link(storage, link, deep=False).ok:
                continue
            if held_by_another_file(storage, link):
                # A writer's log under the link's name (docs/data-safety.md §1): never replaced, never recorded.
                unrepairable.append(
                    f"link {storage.full_path(link.symlink_path)} of compaction {inst.time} is held by another file "
                    "(a writer's log): roll back the write that wrote it, then repair again"
                )
            elif storage.exists(link.target_path):
                missing.append(link.symlink_path)
                to_make.setdefault(inst.time, []).append(link)
            else:
                unrepairable.append(
                    f"link {storage.full_path(link.symlink_path)} of compaction {inst.time} is missing and its target "
                    f"{storage.full_path(link.target_path)} is gone: unschedule the plan and schedule again"
                )
    completed = {i.time for i in timeline.completed()}
    stale = sorted(f for instant, folders in record_folders(storage).items() if instant in completed for f in folders)
    retirable = retirable_rollbacks(table)
    report = RepairReport(
        tuple(p for paths in abandoned.values() for p in paths),
        tuple(missing),
        tuple(unrepairable),
        tuple(stale),
        dry_run,
        tuple(markers),
        _stale_temporary_files(table, older_than_s, now),
        tuple(i.time for i in retirable),
    )
    if dry_run:
        return report
    for instant, paths in abandoned.items():
        for p in paths:
            delete_link_or_file(storage, p)
        drop_ownership(storage, instant)
    for instant, links in to_make.items():
        ensure_plan_links(table, instant, links, "schedule")
    for folder in stale:
        drop_ownership(storage, posixpath.basename(folder))
    for marker in markers:
        storage.delete_file(marker)
    if report.stale_temporary_files:
        storage.delete_files(list(report.stale_temporary_files))
    retire_rollbacks(table, retirable)  # the ones reported, found once
    table.refresh()
    return report


def _stale_temporary_files(table: Table, older_than_s: float, now: float) -> tuple[str, ...]:
    """Temporary files in the table's partitions that no writer can still be writing (object stores have none: a
    write there is one PUT)."""
    storage = table.storage
    if storage.is_object_store:
        return ()
    found: list[str] = []
    for partition in list_table_files(storage).partitions:
        files, _ = storage.list_dir(partition)
        for f in files:
            if not is_temporary_name(f.name):
                continue
            written = storage.mtime(f.path)
            if left_by_a_dead_service(written.timestamp() if written else None, older_than_s, now):
                found.append(f.path)
    return tuple(sorted(found))
