"""Running a clean: gather the table's facts, plan (:mod:`~evt_toolkit.services.clean_planner`), write the instants.

As Hudi's ``CleanPlanActionExecutor`` / ``CleanActionExecutor`` do on a v6 table (``hudi-format.md`` §2 and §10):

1. the plan is computed; an empty plan writes nothing;
2. ``T.clean.requested`` — ``HoodieCleanerPlan`` version 2, with ``filePathsToBeDeletedPerPartition`` holding full
   paths (Hadoop style, ``file:/…`` on a local file system) and the legacy ``filesToBeDeletedPerPartition`` empty;
3. ``T.clean.inflight`` — the same bytes again;
4. the files are deleted (symlinks first, each before the link it points at along a chain of links, so that no link
   is ever left pointing at a file already gone);
5. ``T.clean`` — ``HoodieCleanMetadata`` version 2.

A clean left pending by a crash is finished first, from its own plan, as ``BaseHoodieTableServiceClient.clean`` runs
pending cleans before scheduling a new one; the call then returns that clean and a new call plans the next one.
The dry run (the default, as delta-rs ``vacuum``) returns exactly what the real run would delete and writes nothing.

Example:
    >>> t.clean(policy="KEEP_LATEST_COMMITS", retained=2).files  # doctest: +SKIP
    ('region=r0/.00000000-…_20250101000000000.log.1_0-0-0', ...)
    >>> t.clean(retained=2, dry_run=False).instant  # doctest: +SKIP
    '20250101000500000'
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evt_toolkit.compaction.schedule import remove_abandoned_schedules
from evt_toolkit.errors import StorageError, UnsupportedFeatureError
from evt_toolkit.faults import fault_point
from evt_toolkit.format import records
from evt_toolkit.format.names import COMPLETED, INFLIGHT, REQUESTED
from evt_toolkit.services.clean_planner import (
    DEFAULT_COMMITS_RETAINED,
    DEFAULT_FILE_VERSIONS_RETAINED,
    KEEP_LATEST_COMMITS,
    CleanInputs,
    CleanPlan,
    InstantRef,
    check_clean_policy,
    plan_clean,
)
from evt_toolkit.storage.fs import hadoop_path, relative_path
from evt_toolkit.storage.links import delete_link_or_file
from evt_toolkit.table.fs_view import list_table_files
from evt_toolkit.table.guards import TABLE_SERVICE_VERSIONS, has_metadata_table, require_writable
from evt_toolkit.table.links import LinkGraph, deletion_order, storage_symlinks, table_links
from evt_toolkit.table.timeline import (
    CLEAN,
    SAVEPOINT,
    WRITE_ACTIONS,
)
from evt_toolkit.write.instants import new_instant_time, timeline_times
from evt_toolkit.write.metadata_sync import sync_files_partition
from evt_toolkit.write.overtaken import retire_overtaken_rollbacks

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.table.table import Table

__all__ = [
    "CleanResult",
    "clean",
    "gather_clean_inputs",
]

#: ``CleanPlanner.LATEST_CLEAN_PLAN_VERSION`` / ``CleanerUtils.CLEAN_METADATA_VERSION_2``.
CLEAN_PLAN_VERSION = 2
CLEAN_METADATA_VERSION = 2


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What a clean did (or, for a dry run, would do).

    Attributes:
        instant: the clean instant; ``None`` for a dry run or when there was nothing to clean.
        policy: the cleaner policy.
        retained: commits or file versions retained.
        earliest_commit_to_retain: the ECTR (KEEP_LATEST_COMMITS), else ``None``.
        files: the files of the plan, relative to the base path, sorted.
        deleted: the files actually deleted (empty for a dry run).
        failed: files of the plan that could not be deleted (already gone, or an error).
        kept_for_links: files the policy would delete but a surviving symlink needs.
        dry_run: whether nothing was touched.
        resumed: the clean finished here was a pending one (left by a crash), not a new plan.
    """

    instant: str | None
    policy: str
    retained: int
    earliest_commit_to_retain: str | None
    files: tuple[str, ...]
    deleted: tuple[str, ...]
    failed: tuple[str, ...]
    kept_for_links: tuple[str, ...]
    dry_run: bool
    resumed: bool = False


# -- gathering -------------------------------------------------------------------------------------------------------


def gather_clean_inputs(table: Table) -> CleanInputs:
    """The facts :func:`~evt_toolkit.services.clean_planner.plan_clean` needs, read from the table."""
    tl = table.timeline
    listing = list_table_files(table.storage)
    existing = [b.path for b in listing.base_files] + [lf.path for _, lf in listing.log_files]
    pending_slices: dict[tuple[str, str], str] = {}
    for inst in tl.pending_compactions() + tl.pending_log_compactions():
        for op in tl.compaction_plan(inst).operations:
            pending_slices[(op.partition_path, op.file_id)] = op.base_instant
    graph = LinkGraph.of(table_links(table)).with_symlinks(storage_symlinks(table.storage, existing))
    return CleanInputs(
        groups=table.view.file_groups(),
        completed_commits=[InstantRef(i.time, i.action) for i in tl.completed_commits()],
        pending_writes=[i.time for i in tl.instants if i.action in WRITE_ACTIONS and not i.is_completed],
        pending_compaction_slices=pending_slices,
        links=graph,
        existing_files=frozenset(existing),
    )


# -- Avro records ----------------------------------------------------------------------------------------------------


def _plan_record(storage: TableStorage, plan: CleanPlan) -> records.CleanPlan:
    ectr = plan.earliest_commit_to_retain
    return records.CleanPlan.of(
        policy=plan.policy,
        earliest_instant_to_retain=(ectr.time, ectr.action) if ectr is not None else None,
        last_completed_commit=plan.last_completed_commit or "",
        files={p: [hadoop_path(storage, f.path) for f in files] for p, files in plan.by_partition().items()},
        version=CLEAN_PLAN_VERSION,
    )


def _metadata_record(
    instant: str,
    policy: str,
    ectr: str,
    last_completed: str,
    by_partition: dict[str, list[str]],
    deleted: set[str],
    elapsed_ms: int,
) -> records.CleanMetadata:
    # CleanerUtils.convertCleanMetadata records file names (Path.getName) in the partition metadata.
    partitions = {
        partition: records.CleanPartition(
            tuple(posixpath.basename(p) for p in paths),
            tuple(posixpath.basename(p) for p in paths if p in deleted),
            tuple(posixpath.basename(p) for p in paths if p not in deleted),
        )
        for partition, paths in by_partition.items()
    }
    return records.CleanMetadata.of(
        start_clean_time=instant,
        elapsed_ms=elapsed_ms,
        policy=policy,
        earliest_commit_to_retain=ectr,
        last_completed_commit=last_completed,
        partitions=partitions,
        version=CLEAN_METADATA_VERSION,
    )


def _clean_file(table: Table, instant: str, state: str) -> str:
    """The clean's timeline file; on layout 2 the completed one carries a completion time issued now."""
    if state == COMPLETED and table.config.timeline_layout >= 2:
        completion = new_instant_time(
            [*timeline_times(table.refresh().timeline.instants), instant],
            table.config.timezone,
            scope=table.storage.uri,
        )
        return table.instant_file(instant, CLEAN, COMPLETED, completion)
    return table.instant_file(instant, CLEAN, state)


# -- execution -------------------------------------------------------------------------------------------------------


def delete_files(storage: TableStorage, paths: list[str]) -> set[str]:
    """Delete ``paths`` (symlinks first) and return those deleted; a missing file counts as not deleted.

    Symlinks go first, each before the files it leads to along a chain of links
    (:func:`~evt_toolkit.table.links.deletion_order`), so that a crash half-way never leaves a link whose target is
    already gone; a symlink is unlinked itself, never followed.
    """
    ordered = deletion_order(paths, storage_symlinks(storage, paths))
    deleted: set[str] = set()
    for rel in ordered:
        try:
            if not delete_link_or_file(storage, rel):
                continue  # FSUtils.deleteFile returns false for a missing file: a failed delete in the stats
        except StorageError:
            continue
        deleted.add(rel)
    return deleted


def _finish(
    table: Table,
    instant: str,
    policy: str,
    ectr: str,
    last_completed: str,
    by_partition: dict[str, list[str]],
    started: float,
) -> tuple[set[str], list[str]]:
    storage = table.storage
    every = [p for paths in by_partition.values() for p in paths]
    deleted = delete_files(storage, every)
    fault_point("clean.after_delete")
    if has_metadata_table(table):
        # Every planned file is gone now (deleted here or before a crash): the metadata table forgets them all
        # before the clean completes (HoodieBackedTableMetadataWriter.update(HoodieCleanMetadata)).
        gone: dict[str, list[str]] = {}
        for rel in every:
            gone.setdefault(posixpath.dirname(rel), []).append(posixpath.basename(rel))
        sync_files_partition(table, instant, deleted=gone)
    meta = _metadata_record(
        instant,
        policy,
        ectr,
        last_completed,
        by_partition,
        deleted,
        int((time.monotonic() - started) * 1000),
    )
    storage.write_bytes_atomic(
        _clean_file(table, instant, COMPLETED),
        meta.encode(),
    )
    table.refresh()
    return deleted, [p for p in every if p not in deleted]


def _resume_pending(table: Table, dry_run: bool) -> CleanResult | None:
    tl = table.timeline
    pending = [i for i in tl.instants if i.action == CLEAN and not i.is_completed]
    if not pending:
        return None
    inst = pending[0]
    plan = tl.clean_plan(inst)
    by_partition = {p: [relative_path(table.storage, x) for x in paths] for p, paths in plan.files.items()}
    ectr = plan.earliest_instant_to_retain or ""
    policy = plan.policy
    files = tuple(sorted(p for ps in by_partition.values() for p in ps))
    if dry_run:
        would = tuple(p for p in files if table.storage.lexists(p))
        return CleanResult(None, policy, 0, ectr or None, would, (), (), (), True, resumed=True)
    started = time.monotonic()
    if not inst.is_inflight:
        data = tl.read_bytes(inst)
        table.storage.write_bytes_atomic(_clean_file(table, inst.time, INFLIGHT), data, overwrite=True)
    deleted, failed = _finish(table, inst.time, policy, ectr, plan.last_completed_commit, by_partition, started)
    return CleanResult(
        inst.time, policy, 0, ectr or None, files, tuple(sorted(deleted)), tuple(sorted(failed)), (), False, True
    )


def clean(
    table: Table,
    policy: str = KEEP_LATEST_COMMITS,
    retained: int | None = None,
    *,
    dry_run: bool = True,
) -> CleanResult:
    """Plan a clean and, unless ``dry_run``, run it as a Hudi clean instant.

    Args:
        table: the table (v6, timeline layout 1).
        policy: ``KEEP_LATEST_COMMITS`` or ``KEEP_LATEST_FILE_VERSIONS``.
        retained: commits (default 10) or file versions (default 3) to retain, as Hudi's
            ``hoodie.cleaner.commits.retained`` / ``hoodie.cleaner.fileversions.retained``.
        dry_run: only report what would be deleted (the default).

    Returns:
        The result; ``files`` of a dry run equals ``deleted`` of the real run on the same table state.

    Raises:
        CleanPolicyError: unknown policy or ``retained`` < 1.
        UnsupportedFeatureError: the table has savepoints (their files would need protecting).
        UnsupportedTableError: not a version-6 table.

    Example:
        >>> clean(t, "KEEP_LATEST_FILE_VERSIONS", 1).files  # doctest: +SKIP
    """
    table.refresh()
    require_writable(table, "clean", merge_on_read=False, versions=TABLE_SERVICE_VERSIONS)
    if any(i.action == SAVEPOINT for i in table.timeline.instants):  # refused before anything is touched
        raise UnsupportedFeatureError(
            f"{table.storage.uri} has savepoints; cleaning around savepointed files is not supported"
        )
    n = (
        retained
        if retained is not None
        else (DEFAULT_COMMITS_RETAINED if policy == KEEP_LATEST_COMMITS else DEFAULT_FILE_VERSIONS_RETAINED)
    )
    check_clean_policy(policy, n)  # before anything is touched, as every refusal
    if not dry_run:
        remove_abandoned_schedules(table)
        retire_overtaken_rollbacks(table)
    resumed = _resume_pending(table, dry_run)
    if resumed is not None:
        return resumed
    plan = plan_clean(gather_clean_inputs(table), policy, n)
    ectr = plan.earliest_commit_to_retain.time if plan.earliest_commit_to_retain is not None else None
    if dry_run or plan.is_empty:
        return CleanResult(None, policy, n, ectr, plan.paths, (), (), plan.kept_for_links, dry_run)
    started = time.monotonic()
    storage = table.storage
    instant = new_instant_time(timeline_times(table.timeline.instants), table.config.timezone, scope=table.storage.uri)
    data = _plan_record(storage, plan).encode()
    storage.write_bytes_atomic(_clean_file(table, instant, REQUESTED), data)
    fault_point("clean.after_requested")
    storage.write_bytes_atomic(_clean_file(table, instant, INFLIGHT), data)
    fault_point("clean.after_inflight")
    by_partition = {p: [f.path for f in files] for p, files in plan.by_partition().items()}
    deleted, failed = _finish(
        table, instant, policy, ectr or "", plan.last_completed_commit or "", by_partition, started
    )
    return CleanResult(
        instant,
        policy,
        n,
        ectr,
        plan.paths,
        tuple(sorted(deleted)),
        tuple(sorted(failed)),
        plan.kept_for_links,
        False,
    )
